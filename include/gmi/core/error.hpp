#pragma once
// The gmi error family: setup and configuration failures throw these, with where they happened and a
// message of the form "<what>: got <value>, need <allowed>".

#include <source_location>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace gmi {

class error : public std::runtime_error {
 public:
  explicit error(const std::string& message, std::source_location where = std::source_location::current())
      : std::runtime_error(message), where_(where) {}

  [[nodiscard]] const std::source_location& where() const noexcept { return where_; }

  // "message (at file:line in function)", for logs; what() stays the bare sentence users read.
  [[nodiscard]] std::string describe() const {
    std::ostringstream out;
    out << what() << " (at " << where_.file_name() << ':' << where_.line() << " in " << where_.function_name() << ')';
    return out.str();
  }

 private:
  std::source_location where_;
};

// A value given by the user (flag, config field, file) is out of range or inconsistent.
class config_error : public error {
 public:
  // Spelled out: nvcc 13.0 crashes on inherited constructors with a source_location default argument.
  explicit config_error(const std::string& message, std::source_location where = std::source_location::current())
      : error(message, where) {}
};

// A CUDA runtime or driver call failed; code() is the cudaError_t / CUresult value.
class cuda_error : public error {
 public:
  cuda_error(int code, const std::string& message, std::source_location where = std::source_location::current())
      : error(message, where), code_(code) {}
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  int code_;
};

// An NCCL call failed; code() is the ncclResult_t value.
class nccl_error : public error {
 public:
  nccl_error(int code, const std::string& message, std::source_location where = std::source_location::current())
      : error(message, where), code_(code) {}
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  int code_;
};

// A peer, ring, channel or shared-memory segment failed (dead peer, timeout, size mismatch).
class comm_error : public error {
 public:
  // Spelled out: nvcc 13.0 crashes on inherited constructors with a source_location default argument.
  explicit comm_error(const std::string& message, std::source_location where = std::source_location::current())
      : error(message, where) {}
};

namespace detail {
template <class T>
void write_value(std::ostringstream& out, const T& value) {
  if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    out << '"' << std::string_view(value) << '"';
  } else if constexpr (std::is_same_v<T, bool>) {
    out << (value ? "true" : "false");
  } else {
    out << value;
  }
}
}  // namespace detail

// The one message shape of gmi: "num_envs: got 0, need >= 1".
template <class T>
[[nodiscard]] std::string got_need(std::string_view what, const T& got, std::string_view need) {
  std::ostringstream out;
  out << what << ": got ";
  detail::write_value(out, got);
  out << ", need " << need;
  return out.str();
}

// Throws config_error("<what>: got <value>, need <need>") unless ok.
template <class T>
void require(bool ok, std::string_view what, const T& got, std::string_view need,
             std::source_location where = std::source_location::current()) {
  if (!ok) throw config_error(got_need(what, got, need), where);
}

}  // namespace gmi
