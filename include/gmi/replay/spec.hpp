#pragma once
// A replay table's description (Reverb's vocabulary): typed columns of fixed width, capacity in items (one item
// = one trajectory step), where the items live, the remover, max_times_sampled, and the samplers that draw.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <gmi/core/error.hpp>

namespace gmi::replay {

// Element types of a column: 4-byte words, so every column is copied as whole words by host loops and kernels.
enum class dtype : std::uint8_t { f32, i32 };

[[nodiscard]] constexpr std::string_view name_of(dtype t) noexcept { return t == dtype::f32 ? "f32" : "i32"; }

struct column {
  std::string name;
  std::size_t width = 1;  // elements per step
  dtype type = dtype::f32;
};

// Which item an insert evicts when the table is full (Reverb's removers).
enum class remover : std::uint8_t { fifo, lifo, min_heap, max_heap };

[[nodiscard]] constexpr std::string_view name_of(remover r) noexcept {
  constexpr std::string_view names[] = {"fifo", "lifo", "min_heap", "max_heap"};
  return names[static_cast<int>(r)];
}

// The largest capacity: slots are int32 keys, and the sum-tree needs 2 * next_pow2(capacity) nodes.
inline constexpr std::size_t max_capacity = std::size_t{1} << 30;
inline constexpr std::size_t max_columns = 16;  // kernels take the column pointers by value

struct table_spec {
  std::vector<column> columns;
  std::size_t capacity = 0;
  // Slots [0, device_capacity) live in device memory, the rest in mapped pinned host memory (device tables).
  std::size_t device_capacity = std::numeric_limits<std::size_t>::max();
  // A width-1 column whose non-zero value ends the trajectory at that step; empty: trajectories never end.
  std::string done_column;
  remover remove = remover::fifo;
  std::uint32_t max_times_sampled = 0;  // 0: items are sampled any number of times
  double priority_exponent = 1.0;        // prioritized sampling draws item i with p_i^exponent / sum
};

// Throws config_error with one line naming the first problem.
inline void validate(const table_spec& s) {
  require(!s.columns.empty() && s.columns.size() <= max_columns, "table_spec.columns", s.columns.size(),
          "1 .. " + std::to_string(max_columns) + " columns");
  require(s.capacity >= 1 && s.capacity <= max_capacity, "table_spec.capacity", s.capacity,
          "1 .. " + std::to_string(max_capacity));
  std::set<std::string> names;
  for (const column& c : s.columns) {
    require(!c.name.empty(), "table_spec column name", c.name, "a non-empty name");
    require(names.insert(c.name).second, "table_spec column name", c.name, "a name used once");
    require(c.width >= 1 && c.width <= (std::size_t{1} << 20), "table_spec column \"" + c.name + "\" width", c.width,
            "1 .. 1048576");
  }
  if (!s.done_column.empty()) {
    bool found = false;
    for (const column& c : s.columns) {
      if (c.name != s.done_column) continue;
      found = true;
      require(c.width == 1, "table_spec done column \"" + c.name + "\" width", c.width, "1");
    }
    require(found, "table_spec.done_column", s.done_column, "the name of one of the columns");
  }
  require(s.priority_exponent >= 0.0 && s.priority_exponent <= 16.0, "table_spec.priority_exponent",
          s.priority_exponent, "0 .. 16");
}

[[nodiscard]] inline std::size_t column_index(const table_spec& s, std::string_view name) {
  for (std::size_t i = 0; i < s.columns.size(); ++i)
    if (s.columns[i].name == name) return i;
  std::string all;
  for (const column& c : s.columns) all += (all.empty() ? "" : ", ") + c.name;
  throw config_error(got_need("replay column", name, "one of " + all));
}

// How a sample picks its items (Reverb's selectors plus GEAR's top-k).
enum class sampler_kind : std::uint8_t { uniform, prioritized, fifo, lifo, top_k };

struct sampler {
  sampler_kind kind = sampler_kind::uniform;
  std::string score_column;  // top_k: the width-1 column ranked, highest first (e.g. "return")

  static sampler uniform() { return {sampler_kind::uniform, {}}; }
  static sampler prioritized() { return {sampler_kind::prioritized, {}}; }
  static sampler fifo() { return {sampler_kind::fifo, {}}; }  // the oldest items, oldest first
  static sampler lifo() { return {sampler_kind::lifo, {}}; }  // the newest items, newest first
  static sampler top_k(std::string column) { return {sampler_kind::top_k, std::move(column)}; }

  [[nodiscard]] bool ordered() const noexcept { return kind >= sampler_kind::fifo; }
};

[[nodiscard]] constexpr std::string_view name_of(sampler_kind k) noexcept {
  constexpr std::string_view names[] = {"uniform", "prioritized", "fifo", "lifo", "top_k"};
  return names[static_cast<int>(k)];
}

// A rate limiter's wait ran out: the message says what was waited for and the table's counters.
class rate_limit_error : public error {
 public:
  explicit rate_limit_error(const std::string& message, std::source_location where = std::source_location::current())
      : error(message, where) {}
};

}  // namespace gmi::replay
