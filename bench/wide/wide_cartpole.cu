// gmi.bench.wide: Cartpole serving at 512 envs, the one-thread-per-env kernel (its own translation unit: see
// wide_bench.hpp).
#include "wide_cases.cuh"

void gmi_wide::cartpole_serving(const options& o) {
  gmi::cuda::stream s;
  gmi::rl::ppo_trainer<envs::cartpole, cartpole_ac, gmi::exec::cuda> t(512, 1, gmi::rl::ppo_config{}, {},
                                                                        gmi::exec::cuda{.stream = s.get()});
  constexpr int steps = 200;
  const auto st = measure(o, 512.0 * steps, [&](int k) {
    t.serve(k * steps);
    t.synchronize();
  });
  emit(o, {{"case", "serving"}, {"net", "cartpole_mlp"}, {"task", "cartpole"}, {"precision", "fp32"}, {"num_envs", 512},
           {"metric", "steps_per_s"}, {"path", "fused_thread_per_env"}}, st);
}
