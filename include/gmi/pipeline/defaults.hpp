#pragma once
// gmi::default_config<Pipeline>(): the config a run starts from before flags or a program change it: the paper's
// env count for its tasks (512 otherwise), the task's "solved" return as the target where it has one, the
// pipeline's partition backend, and 4 GMIs a GPU for the split layout (1 trainer + 3 serving).

#include <limits>
#include <type_traits>

#include <gmi/concepts/agent.hpp>
#include <gmi/envs/registry.hpp>
#include <gmi/layout/layouts.hpp>
#include <gmi/pipeline/train_config.hpp>

namespace gmi {

template <class Pipeline>
[[nodiscard]] train_config<Pipeline> default_config() {
  using Env = typename Pipeline::env;
  train_config<Pipeline> c;
  if constexpr (requires { Env::name; }) c.num_envs = envs::paper_num_envs<Env>();
  else c.num_envs = 512;
  // An off-policy learner on host threads: a few environments (gmi::run on a GPU takes rl::sac_gpu_scale's).
  if constexpr (gmi::trainer_is_off_policy<typename Pipeline::trainer>()) c.num_envs = 16;
  if constexpr (requires { Env::solved_return; }) c.target_return = Env::solved_return;
  else c.target_return = std::numeric_limits<double>::quiet_NaN();
  c.partition = Pipeline::partition_type::name;
  if constexpr (std::is_same_v<typename Pipeline::layout_type, layout::split>) c.gmis_per_gpu = 4;
  return c;
}

}  // namespace gmi
