#pragma once
// Enums spelled as words in flags, files and messages: a table of (name, value) pairs per enum gives both ways,
// and a word outside the table is one config_error listing the choices ("--layout: got \"x\", need a, b or c").

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gmi/core/error.hpp>

namespace gmi {

template <class E, std::size_t N>
using choice_table = std::array<std::pair<const char*, E>, N>;

// "a, b or c": the names of a table, for messages and --help.
template <class E, std::size_t N>
[[nodiscard]] std::string choice_list(const choice_table<E, N>& table) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? " or " : ", ";
    out += table[i].first;
  }
  return out;
}

// The names alone (for CLI11's IsMember).
template <class E, std::size_t N>
[[nodiscard]] std::vector<std::string> choice_names(const choice_table<E, N>& table) {
  std::vector<std::string> out;
  for (const auto& [name, value] : table) out.emplace_back(name);
  return out;
}

// The value named `text`; config_error "<what>: got \"text\", need a, b or c" otherwise.
template <class E, std::size_t N>
[[nodiscard]] E parse_choice(std::string_view what, std::string_view text, const choice_table<E, N>& table) {
  for (const auto& [name, value] : table) {
    if (text == name) return value;
  }
  throw config_error(got_need(what, std::string(text), choice_list(table)));
}

// The name of `v` ("?" for a value outside the table, which a complete table never has).
template <class E, std::size_t N>
[[nodiscard]] const char* choice_name(E v, const choice_table<E, N>& table) noexcept {
  for (const auto& [name, value] : table) {
    if (value == v) return name;
  }
  return "?";
}

}  // namespace gmi
