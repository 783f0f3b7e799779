#pragma once
// Split roles' device transport on the GPU (pipeline/split_channels.hpp), for the doctest file: the same split run
// over the messages and over the device channels, and the spec shared by the lost-actor test and its worker.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <gmi/pipeline/split_channels.hpp>

namespace sac_gpu {

// 1 learner and `actors` actors as thread GMIs on GPU 0 (device trainers, Pendulum, 8 environments each, hidden 64),
// `env_steps` received by the learner; its weights (actor, both critics) and counters.
struct split_transport_run {
  std::vector<float> weights, initial;
  std::size_t env_steps = 0, updates = 0, table = 0;
  std::uint64_t episodes = 0;
  double seconds = 0;
};
split_transport_run split_run_on_gpu(int actors, std::size_t env_steps, bool device_transport, std::uint64_t seed = 100);

// The lost-actor test's transport: 1 actor, 4 environments x 8 steps of 9 floats, 100 weights, a 10 s timeout
// (the worker's CUDA start-up comes before its first round).
inline gmi::detail::split_channel_spec lost_actor_spec(const std::string& tag) {
  gmi::detail::split_channel_spec s;
  s.tag = tag;
  s.actors = 1;
  s.envs = 4;
  s.steps = 8;
  s.row_floats = 9;
  s.weight_floats = 100;
  s.placement = gmi::comm::payload_placement::device;
  s.across_processes = true;
  s.timeout = std::chrono::seconds(10);
  return s;
}
// The value of float i of round r's transitions, and of weight i of version v.
inline float lost_actor_row(std::uint64_t r, std::size_t i) { return float(r * 1000 + i); }
inline float lost_actor_weight(std::uint64_t v, std::size_t i) { return float(v * 10 + i); }

}  // namespace sac_gpu
