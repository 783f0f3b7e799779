#pragma once
// Where a two-level sum's NCCL ids travel (comm/two_level_sum.cuh): one array of doubles summed over every GMI of
// every host, one slot of id bytes for each host's communicator (slots 0 .. hosts - 1) and one for each rail, GPU k
// of every host (slots hosts .. hosts + gpus - 1). The GMI that made an id writes its bytes there as doubles 0..255,
// every other GMI zeros, so the sum carries each id exactly (whole numbers below 2^53 add without rounding, in any
// order). Host code: tests check it without NCCL or a GPU.

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <gmi/core/error.hpp>

namespace gmi::comm {

struct two_level_shape {
  int hosts = 1;
  int gpus = 1;  // GPUs a host
};

[[nodiscard]] inline std::size_t two_level_slots(const two_level_shape& s) {
  require(s.hosts >= 1 && s.gpus >= 1, "two-level shape (hosts x GPUs)",
          std::to_string(s.hosts) + " x " + std::to_string(s.gpus), "both >= 1");
  return static_cast<std::size_t>(s.hosts + s.gpus);
}
[[nodiscard]] inline std::size_t two_level_host_slot(const two_level_shape& s, int host) {
  require(host >= 0 && host < s.hosts, "two-level host", host, "0.." + std::to_string(s.hosts - 1));
  return static_cast<std::size_t>(host);
}
[[nodiscard]] inline std::size_t two_level_rail_slot(const two_level_shape& s, int gpu) {
  require(gpu >= 0 && gpu < s.gpus, "two-level rail (GPU of a host)", gpu, "0.." + std::to_string(s.gpus - 1));
  return static_cast<std::size_t>(s.hosts + gpu);
}

// Writes `bytes` bytes of `id` as doubles into slot `slot` (slots of `bytes` doubles each).
inline void pack_id_bytes(std::vector<double>& slots, std::size_t slot, const char* id, std::size_t bytes) {
  require((slot + 1) * bytes <= slots.size(), "id slot", slot, "< " + std::to_string(slots.size() / bytes));
  for (std::size_t i = 0; i < bytes; ++i) slots[slot * bytes + i] = static_cast<unsigned char>(id[i]);
}
// Reads slot `slot` back into `id`; a value that is not a byte (two GMIs wrote the slot, or none of the sum's
// values survived) is refused in one line.
inline void unpack_id_bytes(const std::vector<double>& slots, std::size_t slot, char* id, std::size_t bytes) {
  require((slot + 1) * bytes <= slots.size(), "id slot", slot, "< " + std::to_string(slots.size() / bytes));
  for (std::size_t i = 0; i < bytes; ++i) {
    const double v = slots[slot * bytes + i];
    require(v >= 0 && v <= 255 && std::floor(v) == v, "summed id byte " + std::to_string(i) + " of slot " +
            std::to_string(slot), v, "a whole number 0..255 (one GMI writes each slot)");
    id[i] = static_cast<char>(static_cast<unsigned char>(v));
  }
}

// The exchange itself, for GMI (`host`, GPU `gpu` of it, `leader`: slice 0 of that GPU): GPU 0's leader of each host
// makes its host's id (with several GPUs a host), host 0's leader of GPU k makes rail k's; `make(char*)` writes a
// fresh id of `bytes` bytes, `sum(double*, n)` is the sum over every GMI of every host (each calls it once, with
// the same n). Returns {this host's id, this GPU's rail id}; a non-leader gets them too and does not use them.
template <class Make, class Sum>
[[nodiscard]] std::pair<std::vector<char>, std::vector<char>> exchange_two_level_id_bytes(
    const two_level_shape& shape, int host, int gpu, bool leader, std::size_t bytes, Make&& make, Sum&& sum) {
  std::vector<double> slots(two_level_slots(shape) * bytes, 0.0);
  std::vector<char> id(bytes);
  const auto put = [&](std::size_t slot) {
    make(id.data());
    pack_id_bytes(slots, slot, id.data(), bytes);
  };
  if (leader && gpu == 0 && shape.gpus > 1) put(two_level_host_slot(shape, host));
  if (leader && host == 0) put(two_level_rail_slot(shape, gpu));
  sum(slots.data(), slots.size());
  std::pair<std::vector<char>, std::vector<char>> out{std::vector<char>(bytes), std::vector<char>(bytes)};
  unpack_id_bytes(slots, two_level_host_slot(shape, host), out.first.data(), bytes);
  unpack_id_bytes(slots, two_level_rail_slot(shape, gpu), out.second.data(), bytes);
  return out;
}

}  // namespace gmi::comm
