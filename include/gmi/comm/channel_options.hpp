#pragma once
// The description every endpoint of an experience channel is built from (channel_options, routing), checked
// in one place, and the names of its links' segments.

#include <cstdint>
#include <string>

#include <gmi/comm/detail/channel_link.hpp>
#include <gmi/comm/wait.hpp>
#include <gmi/core/error.hpp>

namespace gmi::comm {

// How the migrator picks a consumer for the next slot.
enum class routing : std::uint32_t {
  least_queued = 0,  // the consumer with the fewest bytes queued from this producer; ties in round-robin order
  round_robin = 1,   // the next consumer in order that has a free slot
};

// The one description every endpoint of a channel is built from (the same values on every GMI of the run).
struct channel_options {
  std::string tag;                      // names the channel's segments; unique per run (gmi::comm::unique_tag)
  int producers = 1;                    // serving GMIs
  int consumers = 1;                    // trainer GMIs
  std::uint32_t record_bytes = 0;       // one env-step record (observation, action, reward, ...), fixed
  std::uint64_t shape_tag = 0;          // what a record holds (e.g. a hash of its layout); both sides must agree
  std::uint32_t package_steps = 1;      // dispense: a package is package_steps x package_envs records
  std::uint32_t package_envs = 1;
  std::uint32_t packages_per_slot = 1;  // pack: packages per migrated slot
  std::uint32_t slots = 4;              // slots per producer->consumer link, a power of two <= 64: the back-pressure bound
  payload_placement placement = payload_placement::host;
  routing route = routing::least_queued;
  milliseconds timeout = default_timeout();  // bound on every wait for a peer
  // false: every producer and consumer is a thread of this process, so device payloads are ordered by plain CUDA
  // events (interprocess ones each leave a driver file in /dev/shm until the process's contexts go).
  bool across_processes = true;
  // Device placement: producers on another GPU than the consumer's copy straight into its slots (NVLink or PCIe peer
  // copies) where cudaDeviceCanAccessPeer says yes; off, a producer on another GPU is refused.
  bool peer = false;

  [[nodiscard]] std::uint64_t package_bytes() const noexcept {
    return std::uint64_t{record_bytes} * package_steps * package_envs;
  }
  [[nodiscard]] std::uint64_t slot_bytes() const noexcept { return package_bytes() * packages_per_slot; }

  // Throws config_error naming the first value out of range.
  void validate() const {
    detail::check_tag(tag);
    require(producers >= 1 && producers <= 256, "channel producers", producers, "1..256");
    require(consumers >= 1 && consumers <= 256, "channel consumers", consumers, "1..256");
    require(record_bytes >= 1, "channel record_bytes", record_bytes, ">= 1");
    require(package_steps >= 1, "channel package_steps", package_steps, ">= 1");
    require(package_envs >= 1, "channel package_envs", package_envs, ">= 1");
    require(packages_per_slot >= 1, "channel packages_per_slot", packages_per_slot, ">= 1");
    require(slots >= 1 && slots <= detail::max_link_slots && (slots & (slots - 1)) == 0, "channel slots", slots,
            "a power of two in 1.." + std::to_string(detail::max_link_slots));
    require(slot_bytes() <= (std::uint64_t{1} << 40), "channel slot bytes (record_bytes x package records x packages_per_slot)",
            slot_bytes(), "<= 2^40");
    require(timeout.count() >= 1, "channel timeout (ms)", timeout.count(), ">= 1");
  }
};

namespace detail {
// The link from producer p to consumer c as both of its ends describe it.
inline link_config link_config_for(const channel_options& o, int producer, int consumer) {
  link_config c;
  c.placement = o.placement;
  c.slots = o.slots;
  c.shape_tag = o.shape_tag;
  c.record_bytes = o.record_bytes;
  c.package_steps = o.package_steps;
  c.package_envs = o.package_envs;
  c.packages_per_slot = o.packages_per_slot;
  c.producer = static_cast<std::uint32_t>(producer);
  c.consumer = static_cast<std::uint32_t>(consumer);
  c.across_processes = o.across_processes;
  c.peer = o.peer;
  return c;
}
}  // namespace detail

// The segment tag of the link from producer p to consumer c.
inline std::string channel_link_tag(const std::string& tag, int producer, int consumer) {
  return tag + "-p" + std::to_string(producer) + "-c" + std::to_string(consumer);
}

}  // namespace gmi::comm
