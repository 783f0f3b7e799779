#pragma once
// gmi::run's SAC defaults by where the learners run: rl::sac_config's own (the paper's, a few environments) on host
// threads; rl::sac_gpu_scale's on a GPU for every setting no flag gave (run_offpolicy.cuh applies them after the
// flags are parsed, so a flag always wins).

#include <algorithm>
#include <cstddef>

#include <gmi/pipeline/run_options.hpp>
#include <gmi/rl/sac_config.hpp>

namespace gmi::detail {

// `given(flag)`: whether the command line named the flag ("--num-envs", "--sac-batch", ...). The warm-up and the
// replay capacity stay at least one batch, so a larger --sac-batch alone is not refused; n-step returns stay off with
// --split-roles.
template <class Given>
void apply_sac_gpu_scale(run_options& o, const Given& given) {
  using g = rl::sac_gpu_scale;
  auto& s = o.sac;
  if (!given("--num-envs")) o.num_envs = g::num_envs;
  if (!given("--sac-batch")) s.batch = g::batch;
  if (!given("--sac-updates-per-step") && !given("--sac-updates-per-vector-step"))
    s.updates_per_vector_step = g::updates_per_vector_step;
  const auto batch = std::size_t(std::max(s.batch, 1));
  if (!given("--sac-warmup-steps")) s.warmup_steps = std::max(g::warmup_steps, batch);
  if (!given("--sac-replay-capacity")) s.replay_capacity = std::max({g::replay_capacity, s.warmup_steps, batch});
  if (!given("--sac-n-step") && !o.split_roles) s.n_step = g::n_step;  // split roles' actors send one-step rows
}

}  // namespace gmi::detail
