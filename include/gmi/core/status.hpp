#pragma once
// Results of queries that may fail without being errors (no GPU, no driver, feature absent):
// gmi::status says why, gmi::result<T> holds a value or a status (std::expected is C++23).

#include <string>
#include <utility>
#include <variant>

#include <gmi/core/error.hpp>

namespace gmi {

class status {
 public:
  enum class code { ok, unavailable, unsupported, invalid, failed };

  status() = default;
  status(code c, std::string message) : code_(c), message_(std::move(message)) {}

  static status ok() { return {}; }
  static status unavailable(std::string why) { return {code::unavailable, std::move(why)}; }
  static status unsupported(std::string why) { return {code::unsupported, std::move(why)}; }
  static status invalid(std::string why) { return {code::invalid, std::move(why)}; }
  static status failed(std::string why) { return {code::failed, std::move(why)}; }

  [[nodiscard]] bool is_ok() const noexcept { return code_ == code::ok; }
  explicit operator bool() const noexcept { return is_ok(); }
  [[nodiscard]] code value() const noexcept { return code_; }
  [[nodiscard]] const std::string& message() const noexcept { return message_; }

 private:
  code code_ = code::ok;
  std::string message_;
};

// Turns a failed status into the error a setup step throws: invalid -> config_error (the user's value is wrong),
// anything else -> gmi::error. Does nothing for ok.
inline void throw_unless_ok(const status& st, std::source_location where = std::source_location::current()) {
  if (st.is_ok()) return;
  if (st.value() == status::code::invalid) throw config_error(st.message(), where);
  throw error(st.message(), where);
}

template <class T>
class result {
 public:
  result(T value) : data_(std::in_place_index<0>, std::move(value)) {}         // NOLINT: implicit by design
  result(status why) : data_(std::in_place_index<1>, std::move(why)) {}        // NOLINT: implicit by design

  [[nodiscard]] bool has_value() const noexcept { return data_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  // The value, or gmi::error carrying the status message when there is none.
  [[nodiscard]] T& value(std::source_location where = std::source_location::current()) & {
    if (!has_value()) throw gmi::error(std::get<1>(data_).message(), where);
    return std::get<0>(data_);
  }
  [[nodiscard]] const T& value(std::source_location where = std::source_location::current()) const& {
    if (!has_value()) throw gmi::error(std::get<1>(data_).message(), where);
    return std::get<0>(data_);
  }
  [[nodiscard]] T&& value(std::source_location where = std::source_location::current()) && {
    if (!has_value()) throw gmi::error(std::get<1>(data_).message(), where);
    return std::get<0>(std::move(data_));
  }
  [[nodiscard]] T value_or(T fallback) const { return has_value() ? std::get<0>(data_) : std::move(fallback); }
  T& operator*() & { return std::get<0>(data_); }
  const T& operator*() const& { return std::get<0>(data_); }
  T* operator->() { return &std::get<0>(data_); }
  const T* operator->() const { return &std::get<0>(data_); }

  // The status; ok() when a value is held.
  [[nodiscard]] status error() const { return has_value() ? status::ok() : std::get<1>(data_); }

 private:
  std::variant<T, status> data_;
};

}  // namespace gmi
