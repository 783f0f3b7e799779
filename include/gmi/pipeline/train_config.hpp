#pragma once
// gmi::train_config<Pipeline>: everything one training or serving run needs, as a value a program fills in
// (gmi::run fills it from flags): the run's options and the task's own parameters, which every GMI's
// environments use. gmi::train_result: what the run gives back.

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include <gmi/io/checkpoint.hpp>
#include <gmi/pipeline/run_options.hpp>
#include <gmi/pipeline/stop_reason.hpp>

namespace gmi {

template <class Pipeline>
struct train_config : run_options {
  using pipeline = Pipeline;
  typename Pipeline::env::params env{};  // the task's parameters (gravity, limits, ...), the same on every GMI
};

// The three tiers rl_games and Isaac Lab report: environments alone, + policy inference and sampling, + training.
struct throughput_tiers {
  static constexpr double none = std::numeric_limits<double>::quiet_NaN();
  double env_steps_per_s = none;
  double serve_steps_per_s = none;
  double train_samples_per_s = none;
};

struct train_result {
  stop_reason reason = stop_reason::stopped;
  int signal_number = 0;  // with stop_reason::signal
  // What gmi::run returns: 0; 1 when training diverged or synchronous GMIs ended with different weights; 128 +
  // the signal after SIGINT/SIGTERM; in a GMI process, that process's code.
  int exit_code = 0;
  bool launcher = true;  // false in a GMI process: the launcher holds the run's result
  int gmis = 1;
  std::uint64_t iterations = 0;
  double env_steps = 0;
  double wall_seconds = 0;
  double mean_return = std::numeric_limits<double>::quiet_NaN();  // over the last --min-episodes episodes
  // The final policy's deterministic return (PPO: rl/ppo_eval.hpp, mean actions over rl::default_eval_episodes
  // fresh episodes, filled by one-GMI and colocated runs, where GMI 0 evaluates the group's weights; SAC:
  // --sac-eval-episodes), NaN where not measured.
  double eval_return = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::array<double, 2>> curve;                       // (env steps, mean return), at most 128 points
  throughput_tiers rates;
  // The policy's final weights and normalizers (the tensors --checkpoint exports as safetensors). Runs on one
  // GMI fill it; runs over several GMIs leave it empty (every GMI's state is in --checkpoint's files).
  io::checkpoint weights;
  // Runs of data-parallel SAC learners: each GMI's FNV-1a of its final actor and critic weights, by rank.
  std::vector<std::uint64_t> gmi_weights_hashes;

  [[nodiscard]] std::string reason_text() const { return stop_reason_text(reason, signal_number); }
  // The reason from its text as GMIs report it ("signal 15", "solved", ...).
  void set_reason(const std::string& text) {
    reason = parse_stop_reason(text, &signal_number).value_or(stop_reason::stopped);
  }
};

// A run whose result another process holds: a GMI process (its launcher reports) or a restart loop (each attempt
// reports): only the exit code is known here.
[[nodiscard]] inline train_result ended_elsewhere(int exit_code, bool launcher) {
  train_result r;
  r.exit_code = exit_code;
  r.launcher = launcher;
  return r;
}

}  // namespace gmi
