#pragma once
// Replay snapshots: a table's items, trajectory links and index copied out under its lock (one in-memory copy;
// the file write happens after the lock is released, so inserts and samples go on meanwhile), saved as a .gmi
// checkpoint (io/gmi_file.hpp: CRC-32C, atomic rename) and restored only after every field was checked.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/io/checkpoint.hpp>
#include <gmi/io/gmi_file.hpp>
#include <gmi/replay/detail/index.hpp>
#include <gmi/replay/spec.hpp>

namespace gmi::replay {

inline constexpr std::string_view snapshot_format = "gmi replay snapshot";
inline constexpr int snapshot_version = 1;

struct snapshot {
  table_spec spec;
  std::vector<std::vector<std::uint32_t>> columns;  // [capacity, width_c] words each
  std::vector<std::int64_t> traj;
  std::vector<std::int32_t> step, next;
  detail::item_index::state index;
  std::string origin = "replay snapshot";  // the file it came from, for messages
};

namespace detail {

inline nlohmann::json spec_json(const table_spec& s) {
  nlohmann::json cols = nlohmann::json::array();
  for (const column& c : s.columns) cols.push_back({{"name", c.name}, {"width", c.width}, {"type", name_of(c.type)}});
  return {{"columns", cols},
          {"capacity", s.capacity},
          {"done_column", s.done_column},
          {"remover", name_of(s.remove)},
          {"max_times_sampled", s.max_times_sampled},
          {"priority_exponent", s.priority_exponent}};
}

// The parts of a spec that decide the stored layout and index rules must match; device_capacity may differ.
inline void check_same_layout(const table_spec& want, const table_spec& got, const std::string& origin) {
  const std::string a = spec_json(want).dump(), b = spec_json(got).dump();
  if (a != b) throw config_error(origin + ": table spec: got " + b.substr(0, 300) + ", need " + a.substr(0, 300));
}

// Checks the data arrays against the index state: sizes, links in range, present items exactly where seq != 0.
inline void check_data(const snapshot& s) {
  const std::size_t cap = s.spec.capacity;
  const auto bad = [&](const std::string& what, const std::string& got, const std::string& need) {
    return config_error(s.origin + ": " + what + ": got " + got + ", need " + need);
  };
  if (s.columns.size() != s.spec.columns.size())
    throw bad("columns", std::to_string(s.columns.size()), std::to_string(s.spec.columns.size()));
  for (std::size_t c = 0; c < s.columns.size(); ++c)
    if (s.columns[c].size() != cap * s.spec.columns[c].width)
      throw bad("column \"" + s.spec.columns[c].name + "\" words", std::to_string(s.columns[c].size()),
                std::to_string(cap * s.spec.columns[c].width));
  if (s.traj.size() != cap || s.step.size() != cap || s.next.size() != cap || s.index.seq.size() != cap)
    throw bad("per-item arrays", std::to_string(s.traj.size()), std::to_string(cap) + " entries (capacity)");
  for (std::size_t i = 0; i < cap; ++i) {
    const bool present = s.index.seq[i] != 0;
    if (present != (s.traj[i] >= 0))
      throw bad("item " + std::to_string(i) + " trajectory", std::to_string(s.traj[i]),
                present ? "an id >= 0 (the item is present)" : "-1 (the slot is empty)");
    if (s.step[i] < 0) throw bad("item " + std::to_string(i) + " step", std::to_string(s.step[i]), ">= 0");
    if (s.next[i] < -1 || s.next[i] >= static_cast<std::int64_t>(cap))
      throw bad("item " + std::to_string(i) + " next", std::to_string(s.next[i]), "-1 .. capacity - 1");
  }
}

}  // namespace detail

// Writes s to path as a .gmi checkpoint (atomic; CRC-32C over the file).
inline void save(const snapshot& s, const std::filesystem::path& path) {
  io::checkpoint ck;
  ck.meta = {{"format", snapshot_format},
             {"version", snapshot_version},
             {"spec", detail::spec_json(s.spec)},
             {"next_seq", s.index.next_seq},
             {"inserts", s.index.count.inserts},
             {"samples", s.index.count.samples},
             {"deletes", s.index.count.deletes}};
  for (std::size_t c = 0; c < s.columns.size(); ++c)
    ck.add_u32("column/" + s.spec.columns[c].name, s.columns[c], {s.spec.capacity, s.spec.columns[c].width});
  ck.add_i64("traj", s.traj);
  ck.add_i32("step", s.step);
  ck.add_i32("next", s.next);
  ck.add_u64("seq", s.index.seq);
  ck.add_u32("times_sampled", s.index.times);
  ck.add_f64("priority_leaf", s.index.leaf);
  ck.add_i32("free_slots", s.index.free);
  io::save(ck, path);
}

// Reads a snapshot for a table of spec `want`; config_error with one line for a damaged file (checksum,
// truncation), another format or table layout, or contents that do not hang together.
inline snapshot load(const std::filesystem::path& path, const table_spec& want) {
  validate(want);
  const io::checkpoint ck = io::load(path);
  snapshot s;
  s.origin = io::file_label("replay snapshot", path);
  try {
    const nlohmann::json& m = ck.meta;
    if (!m.is_object() || m.value("format", std::string()) != snapshot_format)
      throw config_error(s.origin + ": meta.format: got " + m.dump().substr(0, 80) + ", need \"" +
                         std::string(snapshot_format) + "\"");
    if (m.at("version").get<int>() != snapshot_version)
      throw config_error(got_need(s.origin + ": version", m.at("version").get<int>(), std::to_string(snapshot_version)));
    s.spec = want;
    table_spec got = want;
    const nlohmann::json& js = m.at("spec");
    got.capacity = js.at("capacity").get<std::size_t>();
    got.columns.clear();
    for (const auto& c : js.at("columns"))
      got.columns.push_back({c.at("name").get<std::string>(), c.at("width").get<std::size_t>(),
                             c.at("type").get<std::string>() == "i32" ? dtype::i32 : dtype::f32});
    got.done_column = js.at("done_column").get<std::string>();
    const std::string rem = js.at("remover").get<std::string>();
    got.remove = rem == "lifo" ? remover::lifo : rem == "min_heap" ? remover::min_heap
                                   : rem == "max_heap" ? remover::max_heap : remover::fifo;
    got.max_times_sampled = js.at("max_times_sampled").get<std::uint32_t>();
    got.priority_exponent = js.at("priority_exponent").get<double>();
    detail::check_same_layout(want, got, s.origin);
    const std::size_t cap = want.capacity;
    for (const column& c : want.columns) s.columns.push_back(ck.get_u32("column/" + c.name, cap * c.width));
    s.traj = ck.get_i64("traj", cap);
    s.step = ck.get_i32("step", cap);
    s.next = ck.get_i32("next", cap);
    s.index.seq = ck.get_u64("seq", cap);
    s.index.times = ck.get_u32("times_sampled", cap);
    s.index.leaf = ck.get_f64("priority_leaf", cap);
    s.index.free = ck.get_i32("free_slots");
    s.index.next_seq = m.at("next_seq").get<std::uint64_t>();
    s.index.count.inserts = m.at("inserts").get<std::uint64_t>();
    s.index.count.samples = m.at("samples").get<std::uint64_t>();
    s.index.count.deletes = m.at("deletes").get<std::uint64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw config_error(s.origin + ": meta: " + e.what());
  }
  detail::check_data(s);
  return s;
}

}  // namespace gmi::replay
