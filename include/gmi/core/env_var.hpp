#pragma once
// Settings read from environment variables: unset or empty is no setting; a value that is not one is one
// config_error naming the variable, its value and what is allowed.

#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include <gmi/core/error.hpp>

namespace gmi::env_var {

// An int.
inline std::optional<int> integer(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || errno == ERANGE || x < INT_MIN || x > INT_MAX) throw config_error(got_need(name, v, "an integer"));
  return static_cast<int>(x);
}

// One of a few named choices; the error lists them ("a, b or c").
template <class T>
std::optional<T> choice(const char* name, std::initializer_list<std::pair<const char*, T>> choices) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  std::string allowed;
  std::size_t i = 0;
  for (const auto& [text, value] : choices) {
    if (std::strcmp(v, text) == 0) return value;
    if (i > 0) allowed += i + 1 == choices.size() ? " or " : ", ";
    allowed += text;
    ++i;
  }
  throw config_error(got_need(name, v, allowed));
}

// The text, "" when unset.
inline std::string text(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace gmi::env_var
