#pragma once
// io::checkpoint: a training state as named host tensors (weights, optimizer moments, normalizers, RNG
// counters) plus a JSON `meta` object, with checked getters. Files: gmi_file.hpp (.gmi, CRC-32C, atomic) and
// safetensors.hpp (weights PyTorch reads).

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <gmi/core/error.hpp>
#include <gmi/core/span.hpp>
#include <gmi/io/file_io.hpp>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace gmi::io {

// Element types a checkpoint tensor may hold: what RL training state is made of (parameters and moments,
// counters, RNG block counters, flags).
enum class dtype : std::uint8_t { f32, f64, i32, i64, u32, u64, u8 };

inline constexpr std::array<dtype, 7> all_dtypes = {dtype::f32, dtype::f64, dtype::i32, dtype::i64,
                                                    dtype::u32, dtype::u64, dtype::u8};

[[nodiscard]] constexpr std::size_t size_of(dtype t) noexcept {
  switch (t) {
    case dtype::f64:
    case dtype::i64:
    case dtype::u64:
      return 8;
    case dtype::f32:
    case dtype::i32:
    case dtype::u32:
      return 4;
    case dtype::u8:
      return 1;
  }
  return 0;
}

// The name in a .gmi header: "f32".
[[nodiscard]] constexpr std::string_view name_of(dtype t) noexcept {
  constexpr std::array<std::string_view, 7> names = {"f32", "f64", "i32", "i64", "u32", "u64", "u8"};
  return names[static_cast<std::size_t>(t)];
}

// The name in a safetensors header: "F32".
[[nodiscard]] constexpr std::string_view safetensors_name_of(dtype t) noexcept {
  constexpr std::array<std::string_view, 7> names = {"F32", "F64", "I32", "I64", "U32", "U64", "U8"};
  return names[static_cast<std::size_t>(t)];
}

[[nodiscard]] constexpr std::optional<dtype> parse_dtype(std::string_view name) noexcept {
  for (dtype t : all_dtypes) {
    if (name == name_of(t)) return t;
  }
  return std::nullopt;
}

[[nodiscard]] constexpr std::optional<dtype> parse_safetensors_dtype(std::string_view name) noexcept {
  for (dtype t : all_dtypes) {
    if (name == safetensors_name_of(t)) return t;
  }
  return std::nullopt;
}

template <class T>
concept tensor_element = std::same_as<T, float> || std::same_as<T, double> || std::same_as<T, std::int32_t> ||
    std::same_as<T, std::int64_t> || std::same_as<T, std::uint32_t> || std::same_as<T, std::uint64_t> ||
    std::same_as<T, std::uint8_t>;

template <tensor_element T>
inline constexpr dtype dtype_of = std::same_as<T, float>           ? dtype::f32
                                  : std::same_as<T, double>        ? dtype::f64
                                  : std::same_as<T, std::int32_t>  ? dtype::i32
                                  : std::same_as<T, std::int64_t>  ? dtype::i64
                                  : std::same_as<T, std::uint32_t> ? dtype::u32
                                  : std::same_as<T, std::uint64_t> ? dtype::u64
                                                                   : dtype::u8;

// Dimensions, outermost first (row-major, as PyTorch and NumPy store them). Empty: a scalar.
using tensor_shape = std::vector<std::uint64_t>;

struct tensor {
  std::string name;
  dtype type = dtype::f32;
  tensor_shape shape;
  std::vector<std::byte> bytes;  // little-endian elements, row-major

  [[nodiscard]] std::uint64_t count() const noexcept { return bytes.size() / size_of(type); }
  friend bool operator==(const tensor&, const tensor&) = default;
};

namespace detail {

template <class T>
inline constexpr bool dependent_false = false;

// Elements of a shape, or nullopt when the product does not fit in 64 bits (only a damaged file gets there).
[[nodiscard]] inline std::optional<std::uint64_t> element_count(const tensor_shape& shape) noexcept {
  std::uint64_t n = 1;
  for (std::uint64_t d : shape) {
    if (d != 0 && n > std::numeric_limits<std::uint64_t>::max() / d) return std::nullopt;
    n *= d;
  }
  return n;
}

[[nodiscard]] inline std::string shape_text(const tensor_shape& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

// "got 1234 floats": the element word of a dtype, for messages.
[[nodiscard]] constexpr std::string_view elements_word(dtype t) noexcept {
  constexpr std::array<std::string_view, 7> words = {"floats",  "doubles", "int32s", "int64s",
                                                     "uint32s", "uint64s", "bytes"};
  return words[static_cast<std::size_t>(t)];
}

[[nodiscard]] inline std::string tensor_label(std::string_view name, const std::string& origin) {
  std::string out = "checkpoint tensor \"" + std::string(name) + '"';
  if (!origin.empty()) out += " (in \"" + origin + "\")";
  return out;
}

// "<what>: got <got>, need <need>" with got written as is: gmi::got_need quotes strings, and "got 1234 floats"
// must not read as a quoted name.
[[nodiscard]] inline std::string got_need_text(std::string_view what, std::string_view got, std::string_view need) {
  return std::string(what) + ": got " + std::string(got) + ", need " + std::string(need);
}

[[nodiscard]] constexpr std::uint64_t align8(std::uint64_t n) noexcept { return (n + 7) & ~std::uint64_t{7}; }

inline void put_u32(std::byte* out, std::uint32_t v) noexcept { std::memcpy(out, &v, 4); }
inline void put_u64(std::byte* out, std::uint64_t v) noexcept { std::memcpy(out, &v, 8); }
[[nodiscard]] inline std::uint32_t get_u32(const std::byte* in) noexcept {
  std::uint32_t v;
  std::memcpy(&v, in, 4);
  return v;
}
[[nodiscard]] inline std::uint64_t get_u64(const std::byte* in) noexcept {
  std::uint64_t v;
  std::memcpy(&v, in, 8);
  return v;
}

[[nodiscard]] inline std::string hex32(std::uint32_t v) {
  constexpr char digits[] = "0123456789abcdef";
  std::string out = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) out += digits[(v >> shift) & 0xFu];
  return out;
}

// Bytes as a C string literal body, for "not a gmi checkpoint" messages: "PK\x03\x04".
[[nodiscard]] inline std::string printable(const std::byte* data, std::size_t size) {
  constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < size; ++i) {
    const auto c = static_cast<unsigned char>(data[i]);
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += digits[c >> 4];
      out += digits[c & 0xFu];
    }
  }
  return out;
}

}  // namespace detail

// The training state to save or the one loaded: named tensors in insertion order, plus meta (iteration, env
// steps, config echo, task, git revision: whatever the trainer records). Getters check name, dtype and size,
// so a checkpoint from a different network is refused with the numbers instead of being read wrongly.
class checkpoint {
 public:
  nlohmann::json meta = nlohmann::json::object();

  // Adds a tensor whose bytes match its shape and dtype; names are unique and not "__metadata__".
  void add(tensor t) {
    require(!t.name.empty(), "checkpoint tensor name", t.name, "a non-empty name");
    require(t.name != "__metadata__", "checkpoint tensor name", t.name,
            "a name other than __metadata__ (safetensors reserves it)");
    require(!index_.contains(t.name), "checkpoint tensor name", t.name, "a name not added before");
    const std::optional<std::uint64_t> elements = detail::element_count(t.shape);
    const std::uint64_t need = elements ? *elements * size_of(t.type) : 0;
    if (!elements || need / size_of(t.type) != *elements || t.bytes.size() != need) {
      throw config_error(
          got_need(detail::tensor_label(t.name, origin_) + " bytes", t.bytes.size(),
                   (elements ? std::to_string(need) : std::string("a shape whose size fits in 64 bits")) + " (shape " +
                       detail::shape_text(t.shape) + " of " + std::string(name_of(t.type)) + ")"));
    }
    index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }

  // Copies host values in; an empty shape means one dimension of values.size().
  template <class T>
  void add(std::string name, host_span<T> values, tensor_shape shape = {}) {
    using element = std::remove_const_t<T>;
    static_assert(tensor_element<element>,
                  "gmi::io::checkpoint holds float, double, int32_t, int64_t, uint32_t, uint64_t or uint8_t tensors");
    if (shape.empty()) shape = {values.size()};
    const std::optional<std::uint64_t> elements = detail::element_count(shape);
    if (!elements || *elements != values.size()) {
      throw config_error(detail::got_need_text(
          detail::tensor_label(name, origin_) + " shape " + detail::shape_text(shape),
          std::to_string(values.size()) + " values", "a shape whose dimensions multiply to the number of values"));
    }
    tensor t{std::move(name), dtype_of<element>, std::move(shape), std::vector<std::byte>(values.size_bytes())};
    if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), values.size_bytes());
    add(std::move(t));
  }
  template <class T>
  void add(std::string name, const std::vector<T>& values, tensor_shape shape = {}) {
    add(std::move(name), host_span<const T>(values.data(), values.size()), std::move(shape));
  }
  template <class T>
  void add(std::string, device_span<T>, tensor_shape = {}) {
    static_assert(detail::dependent_false<T>,
                  "gmi::io::checkpoint::add takes host memory: copy device tensors to the host first "
                  "(gmi::cuda::copy into a pinned_buffer), then add the host span");
  }
  // A rank-0 tensor (shape []).
  template <tensor_element T>
  void add_scalar(std::string name, T value) {
    add(std::move(name), host_span<const T>(&value, 1), tensor_shape{1});
    tensors_.back().shape.clear();
  }

  // Typed spellings: the dtype is in the name, so a vector of the wrong element type does not compile.
  void add_f32(std::string name, host_span<const float> v, tensor_shape shape = {}) {
    add(std::move(name), v, std::move(shape));
  }
  void add_f32(std::string name, const std::vector<float>& v, tensor_shape shape = {}) {
    add(std::move(name), v, std::move(shape));
  }
  void add_f64(std::string name, host_span<const double> v, tensor_shape shape = {}) {
    add(std::move(name), v, std::move(shape));
  }
  void add_f64(std::string name, const std::vector<double>& v, tensor_shape shape = {}) {
    add(std::move(name), v, std::move(shape));
  }
  void add_i32(std::string name, host_span<const std::int32_t> v, tensor_shape shape = {}) {
    add(std::move(name), v, std::move(shape));
  }
  void add_i32(std::string name, const std::vector<std::int32_t>& v, tensor_shape shape = {}) {
    add(std::move(name), v, std::move(shape));
  }
  void add_i64(std::string name, host_span<const std::int64_t> v, tensor_shape shape = {}) {
    add(std::move(name), v, std::move(shape));
  }
  void add_i64(std::string name, const std::vector<std::int64_t>& v, tensor_shape shape = {}) {
    add(std::move(name), v, std::move(shape));
  }
  void add_u32(std::string name, host_span<const std::uint32_t> v, tensor_shape shape = {}) {
    add(std::move(name), v, std::move(shape));
  }
  void add_u32(std::string name, const std::vector<std::uint32_t>& v, tensor_shape shape = {}) {
    add(std::move(name), v, std::move(shape));
  }
  void add_u64(std::string name, host_span<const std::uint64_t> v, tensor_shape shape = {}) {
    add(std::move(name), v, std::move(shape));
  }
  void add_u64(std::string name, const std::vector<std::uint64_t>& v, tensor_shape shape = {}) {
    add(std::move(name), v, std::move(shape));
  }
  void add_u8(std::string name, host_span<const std::uint8_t> v, tensor_shape shape = {}) {
    add(std::move(name), v, std::move(shape));
  }
  void add_u8(std::string name, const std::vector<std::uint8_t>& v, tensor_shape shape = {}) {
    add(std::move(name), v, std::move(shape));
  }

  [[nodiscard]] bool contains(std::string_view name) const { return index_.contains(name); }
  [[nodiscard]] const std::vector<tensor>& tensors() const noexcept { return tensors_; }
  // The file this checkpoint was loaded from (empty when built in memory); getter errors name it.
  [[nodiscard]] const std::string& origin() const noexcept { return origin_; }

  // The tensor called name; config_error listing what the checkpoint holds when there is none.
  [[nodiscard]] const tensor& at(std::string_view name) const {
    if (const auto it = index_.find(name); it != index_.end()) return tensors_[it->second];
    std::string held;
    for (std::size_t i = 0; i < tensors_.size() && i < 16; ++i) held += (i ? ", " : "") + tensors_[i].name;
    if (tensors_.size() > 16) held += ", ... (" + std::to_string(tensors_.size()) + " in all)";
    throw config_error(got_need(
        std::string("checkpoint tensor") + (origin_.empty() ? "" : " (in \"" + origin_ + "\")"), name,
        tensors_.empty() ? std::string("one it holds (it holds none)") : "one of the tensors it holds: " + held));
  }

  // The values of a tensor of element type T.
  template <tensor_element T>
  [[nodiscard]] std::vector<T> get(std::string_view name) const {
    const tensor& t = typed<T>(name);
    std::vector<T> out(t.count());
    if (!out.empty()) std::memcpy(out.data(), t.bytes.data(), t.bytes.size());
    return out;
  }
  // The same, refused unless it holds exactly `need` values; `why` says where that number comes from.
  template <tensor_element T>
  [[nodiscard]] std::vector<T> get(std::string_view name, std::size_t need, std::string_view why = {}) const {
    check_count(typed<T>(name), need, why);
    return get<T>(name);
  }
  // Copies a tensor into existing host memory of exactly its size (restoring into live buffers).
  template <tensor_element T>
  void get_into(std::string_view name, host_span<T> out, std::string_view why = {}) const {
    const tensor& t = typed<T>(name);
    check_count(t, out.size(), why);
    if (!out.empty()) std::memcpy(out.data(), t.bytes.data(), t.bytes.size());
  }
  template <tensor_element T>
  [[nodiscard]] T get_scalar(std::string_view name) const {
    return get<T>(name, 1, "a scalar")[0];
  }

  [[nodiscard]] std::vector<float> get_f32(std::string_view name) const { return get<float>(name); }
  [[nodiscard]] std::vector<double> get_f64(std::string_view name) const { return get<double>(name); }
  [[nodiscard]] std::vector<std::int32_t> get_i32(std::string_view name) const { return get<std::int32_t>(name); }
  [[nodiscard]] std::vector<std::int64_t> get_i64(std::string_view name) const { return get<std::int64_t>(name); }
  [[nodiscard]] std::vector<std::uint32_t> get_u32(std::string_view name) const { return get<std::uint32_t>(name); }
  [[nodiscard]] std::vector<std::uint64_t> get_u64(std::string_view name) const { return get<std::uint64_t>(name); }
  [[nodiscard]] std::vector<std::uint8_t> get_u8(std::string_view name) const { return get<std::uint8_t>(name); }
  [[nodiscard]] std::vector<float> get_f32(std::string_view name, std::size_t need, std::string_view why = {}) const {
    return get<float>(name, need, why);
  }
  [[nodiscard]] std::vector<double> get_f64(std::string_view name, std::size_t need, std::string_view why = {}) const {
    return get<double>(name, need, why);
  }
  [[nodiscard]] std::vector<std::int32_t> get_i32(std::string_view name, std::size_t need,
                                                  std::string_view why = {}) const {
    return get<std::int32_t>(name, need, why);
  }
  [[nodiscard]] std::vector<std::int64_t> get_i64(std::string_view name, std::size_t need,
                                                  std::string_view why = {}) const {
    return get<std::int64_t>(name, need, why);
  }
  [[nodiscard]] std::vector<std::uint32_t> get_u32(std::string_view name, std::size_t need,
                                                   std::string_view why = {}) const {
    return get<std::uint32_t>(name, need, why);
  }
  [[nodiscard]] std::vector<std::uint64_t> get_u64(std::string_view name, std::size_t need,
                                                   std::string_view why = {}) const {
    return get<std::uint64_t>(name, need, why);
  }
  [[nodiscard]] std::vector<std::uint8_t> get_u8(std::string_view name, std::size_t need,
                                                 std::string_view why = {}) const {
    return get<std::uint8_t>(name, need, why);
  }

  // Same tensors in the same order and the same meta; where it came from does not count.
  friend bool operator==(const checkpoint& a, const checkpoint& b) {
    return a.tensors_ == b.tensors_ && a.meta == b.meta;
  }

 private:
  template <tensor_element T>
  [[nodiscard]] const tensor& typed(std::string_view name) const {
    const tensor& t = at(name);
    if (t.type != dtype_of<T>) {
      throw config_error(
          detail::got_need_text(detail::tensor_label(name, origin_) + " dtype", name_of(t.type), name_of(dtype_of<T>)));
    }
    return t;
  }

  void check_count(const tensor& t, std::size_t need, std::string_view why) const {
    if (t.count() == need) return;
    std::string need_text = std::to_string(need);
    if (!why.empty()) need_text += " (" + std::string(why) + ")";
    throw config_error(
        detail::got_need_text(detail::tensor_label(t.name, origin_),
                              std::to_string(t.count()) + " " + std::string(detail::elements_word(t.type)), need_text));
  }

  std::vector<tensor> tensors_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::string origin_;

  friend checkpoint load(const std::filesystem::path& path);
  friend checkpoint load_safetensors(const std::filesystem::path& path);
};

namespace detail {

// JSON text for a file header; a meta holding strings that are not UTF-8 is refused here, before any write.
[[nodiscard]] inline std::string dump_header(const nlohmann::json& header, std::string_view what,
                                             const std::filesystem::path& path) {
  try {
    return header.dump();
  } catch (const nlohmann::json::exception& e) {
    throw config_error(file_label(what, path) + ": meta can not be written as JSON (" + e.what() + ")");
  }
}

[[nodiscard]] inline std::string dump_header(const nlohmann::ordered_json& header, std::string_view what,
                                             const std::filesystem::path& path) {
  try {
    return header.dump();
  } catch (const nlohmann::json::exception& e) {
    throw config_error(file_label(what, path) + ": meta can not be written as JSON (" + e.what() + ")");
  }
}

// Spaces after the JSON: valid JSON still, and the data after the header starts 8-byte aligned.
inline void pad_to_8(std::string& text, std::size_t offset_before) {
  text.append(align8(offset_before + text.size()) - offset_before - text.size(), ' ');
}

}  // namespace detail

}  // namespace gmi::io
