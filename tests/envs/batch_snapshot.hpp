#pragma once
// The state arrays of an env_batch (what visit_state exposes: state words, RNG counters, episode lengths and
// returns) copied out on the host, so that another batch, on the host or the device, can be stepped from
// exactly the same states. Used to compare one env step at a time (teacher forcing) where free-running
// trajectories of contact-rich tasks part through rounding alone (docs/physics.md).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/rl/env_batch.hpp>

struct batch_snapshot {
  std::vector<std::uint32_t> state_words;
  std::vector<std::uint64_t> rng_blocks;
  std::vector<std::int32_t> lengths;
  std::vector<float> returns;

  // The host array behind one visit_state name (nullptr for an unknown name) and its size in bytes.
  void* array(std::string_view name, std::size_t& bytes) {
    auto pick = [&](auto& v) -> void* {
      bytes = v.size() * sizeof(v[0]);
      return v.data();
    };
    if (name == "env.state_words") return pick(state_words);
    if (name == "env.rng_blocks") return pick(rng_blocks);
    if (name == "env.lengths") return pick(lengths);
    if (name == "env.returns") return pick(returns);
    bytes = 0;
    return nullptr;
  }
};

// The snapshot of a host batch.
template <class E>
batch_snapshot take_snapshot(gmi::rl::env_batch<E>& b) {
  batch_snapshot s;
  b.visit_state([&](const char* name, auto span) {
    const std::string_view n(name);
    if (n == "env.state_words") s.state_words.assign(span.begin(), span.end());
    if (n == "env.rng_blocks") s.rng_blocks.assign(span.begin(), span.end());
    if (n == "env.lengths") s.lengths.assign(span.begin(), span.end());
    if (n == "env.returns") s.returns.assign(span.begin(), span.end());
  });
  return s;
}

// Puts a snapshot of a batch of the same task and size into a host batch.
template <class E>
void load_snapshot(gmi::rl::env_batch<E>& b, batch_snapshot s) {
  b.visit_state([&](const char* name, auto span) {
    std::size_t bytes = 0;
    const void* from = s.array(name, bytes);
    gmi::require(from != nullptr && bytes == span.size_bytes(), "load_snapshot array bytes", bytes,
                 "== " + std::to_string(span.size_bytes()));
    std::memcpy(span.data(), from, bytes);
  });
}
