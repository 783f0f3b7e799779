#pragma once
// comm::row_exchange: what one block of a kernel needs to sum a row of floats over a group of GMIs of one GPU
// from inside that kernel, with no extra launch: every member's row mapped into this GMI, the group's flag words
// in device memory and this member's call counter; optionally a second level across the GPUs of one host, where
// each GPU's sum of its members' rows meets the other GPUs' in inboxes (peer device memory or pinned host
// memory). Plain data, so host code carries it (rl::ppo_sync); the device side is row_exchange.cuh;
// comm::hierarchical_allreduce::row_exchange() builds one, with comm::row_exchange_across_gpus for the second level.

#include <cstddef>
#include <cstdint>

#include <gmi/core/hd.hpp>

namespace gmi::comm {

struct row_exchange {
  static constexpr int max_members = 16;
  const float* rows[max_members] = {};  // member r's row of `count` floats (this member's own at [rank])
  std::size_t count = 0;
  int rank = 0;
  int size = 0;                         // members on this GPU; 0: no exchange
  std::uint32_t* posted = nullptr;      // member r's word at posted[r * apart]: the last call whose row is written
  std::uint32_t* released = nullptr;    // member r's word at released[r * apart]: the last call whose rows it read
  int apart = 1;                        // (posted and released: only with size > 1)
  std::uint32_t* counter = nullptr;     // this member's calls so far (its own device memory): graphs replay calls
  const volatile std::uint32_t* abort = nullptr;  // non-zero: stop waiting (the host's abort word, mapped)
  std::uint32_t* stalled = nullptr;     // set to 1 when a wait gave up (one word for the group; the host checks it)
  unsigned long long timeout_ns = 0;
  // Optional (comm::comm_clock::total()): thread 0 adds the nanoseconds of each wait on the peers here.
  unsigned long long* wait_ns = nullptr;
  // Optional (comm::comm_clock::across_total()): thread 0 also adds the waits for the other GPUs' sums here.
  unsigned long long* across_ns = nullptr;

  // The level across GPUs (gpus > 1). GPU t's inbox, as mapped here, at inbox_entries[t]: per GPU j two slots of
  // tagged entries (slot (p, j) at + (p * gpus + j) * gpu_stride, for GPU j's sum of call g with p = g % 2); an
  // entry is one 64-bit word, the call's generation in its high half and the float's bits in its low half, written
  // at once, so a reader that sees the generation sees the value (no flag, no fence). GPU j's members push its
  // GPU's sum into every other GPU's inbox (peer device memory over NVLink or PCIe), taking turns by 32 entries;
  // each member polls its own GPU's inbox. inbox_shared: one inbox in mapped host memory for every GPU (written
  // once, by member 0). relay (host inboxes
  // with several members a GPU, on member 0 only): the GPU's device-memory copy of its inbox, where member 0 writes
  // each entry it saw arrive (as it came, tagged); the GPU's other members' inbox_entries[gpu] point there, so
  // only one block a GPU polls host memory.
  static constexpr int max_gpus = 16;
  int gpu = 0;                          // this GPU's place among the host's GPUs
  int gpus = 1;
  int world = 0;                        // members over every GPU (the mean's divisor); 0: size
  std::uint64_t* inbox_entries[max_gpus] = {};
  bool inbox_shared = false;
  std::uint64_t* relay = nullptr;
  std::size_t gpu_stride = 0;           // entries, >= count

  [[nodiscard]] GMI_HD int members() const noexcept { return world > 0 ? world : size; }

  [[nodiscard]] bool valid() const noexcept {
    if (size < 1 || size > max_members || rank < 0 || rank >= size || count == 0) return false;
    if (!counter || !abort || !stalled || apart < 1 || timeout_ns == 0) return false;
    if (size > 1 && (!posted || !released)) return false;
    for (int r = 0; r < size; ++r)
      if (!rows[r]) return false;
    if (gpus < 1 || gpus > max_gpus || gpu < 0 || gpu >= gpus) return false;
    if (gpus > 1 && (gpu_stride < count || world < gpus)) return false;
    for (int t = 0; gpus > 1 && t < gpus; ++t)
      if (!inbox_entries[t]) return false;
    if (gpus == 1 && world != 0 && world != size) return false;
    return gpus > 1 || size > 1;  // one member on one GPU has nothing to exchange
  }
};

}  // namespace gmi::comm
