#include "gpu_runs.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <thread>

#include <gmi/actors/ppo_actors.hpp>
#include <gmi/actors/ppo_actors_gpu.cuh>
#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/cartpole.hpp>
#include <gmi/gmi.hpp>
#include <gmi/pipeline/actor_placement.cuh>
#include <gmi/pipeline/cpu_actors.hpp>
#ifdef GMI_ACTORS_MODELS
#include <filesystem>
#include <unistd.h>

#include <gmi/actors/mujoco.hpp>
#include <gmi/io/gmi_file.hpp>
#endif

namespace {
namespace ac = gmi::actors;
using cart = gmi::envs::cartpole;
using cart_net = gmi::agents::gaussian_mlp<>::network<4, 1>;
using clock_type = std::chrono::steady_clock;

int usable(int cores) { return std::max(1, std::min(cores, int(ac::available_cores().size()))); }

template <class T>
std::vector<float> device_to_host(const T* p, std::size_t n) {
  std::vector<float> out(n);
  GMI_CUDA_TRY(cudaMemcpy(out.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
  return out;
}

// Holds a stream shut until `open` (or 30 s, so a failing test cannot hang the stream for good).
struct stream_gate {
  std::atomic<bool> open{false};
  static void hold(void* p) {
    auto* g = static_cast<stream_gate*>(p);
    const auto deadline = clock_type::now() + std::chrono::seconds(30);
    while (!g->open.load() && clock_type::now() < deadline) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
};
}  // namespace

gpu_actor_iterations cartpole_on_actors_both_ways(int cores, int iterations) {
  gmi::rl::ppo_config c;
  c.minibatch = 1024;
  c.epochs = 2;
  gpu_actor_iterations r;
  const ac::actor_config actors{ac::choose_cores(usable(cores)), 2};
  {
    gmi::cuda::stream s;
    ac::ppo_gpu_on_actors<cart, cart_net> t(actors, 256, 5, c, {}, gmi::exec::cuda{.stream = s.get()});
    for (int i = 0; i < iterations; ++i) {
      t.iterate();
      r.gpu_episodes += t.episodes().episodes;
    }
    t.synchronize();
    r.gpu_params = device_to_host(t.trainer().params().data(), t.trainer().params().size());
    const auto v = t.trainer().rollout_view();
    r.gpu_returns = device_to_host(v.returns, std::size_t(256) * c.horizon);
    r.gpu_value_loss = t.losses().value_loss;
  }
  ac::ppo_on_actors<cart, cart_net> h(actors, 256, 5, c);
  for (int i = 0; i < iterations; ++i) {
    h.iterate();
    r.host_episodes += h.episodes().episodes;
  }
  r.host_params.assign(h.trainer().params().begin(), h.trainer().params().end());
  const auto v = h.trainer().rollout_view();
  r.host_returns.assign(v.returns, v.returns + std::size_t(256) * c.horizon);
  r.host_value_loss = h.losses().value_loss;
  return r;
}

gpu_actor_mujoco_resume mujoco_ant_v4_resume_on_gpu(int cores, int iterations) {
  gpu_actor_mujoco_resume r;
#ifdef GMI_ACTORS_MODELS
  using ant_v4_sim = ac::mujoco::sim<ac::mujoco::ant_v4>;
  using ant_net = gmi::agents::gaussian_mlp<>::network<27, 8>;
  using engine = ac::ppo_gpu_actors<ant_v4_sim, ant_net>;
  r.available = true;
  try {
    gmi::rl::ppo_config c;
    c.minibatch = 512;
    c.epochs = 2;
    ac::mujoco::ant_v4::params p;
    p.max_steps = 40;  // time limits inside the run
    gmi::cuda::stream s;
    const std::string model = std::string(GMI_ACTORS_MODELS) + "/ant_floor.xml";
    auto make = [&] {
      return std::make_unique<engine>(ac::actor_config{ac::choose_cores(usable(cores)), 2}, 64, 3, c,
                                      gmi::exec::cuda{.stream = s.get()}, model, 64, std::uint64_t(3), p);
    };
    auto weights = [](engine& t) {
      t.synchronize();
      return device_to_host(t.trainer().params().data(), t.trainer().params().size());
    };
    auto actor_tensors = [](const gmi::io::checkpoint& ck) {
      std::vector<gmi::io::tensor> out;
      for (const auto& t : ck.tensors())
        if (t.name.rfind("actors.", 0) == 0) out.push_back(t);
      return out;
    };
    auto straight = make();
    for (int i = 0; i < iterations; ++i) straight->iterate();
    r.episodes = straight->episodes().episodes;
    const std::vector<float> w_straight = weights(*straight);
    const auto env_straight = actor_tensors(straight->save_state());
    straight.reset();
    const auto path =
        std::filesystem::temp_directory_path() / ("gmi_actors_gpu_mj_" + std::to_string(::getpid()) + ".gmi");
    {
      auto half = make();
      for (int i = 0; i < iterations / 2; ++i) half->iterate();
      gmi::io::save(half->save_state(), path);
    }
    const gmi::io::checkpoint saved = gmi::io::load(path);
    std::filesystem::remove(path);
    {
      auto resumed = make();
      resumed->load_state(saved);
      for (int i = 0; i < iterations / 2; ++i) resumed->iterate();
      r.weights_equal = weights(*resumed) == w_straight;
      r.env_states_equal = actor_tensors(resumed->save_state()) == env_straight;
    }
    auto trainer_only = make();
    trainer_only->trainer().load_state(saved);
    for (int i = 0; i < iterations / 2; ++i) trainer_only->iterate();
    r.trainer_only_differs = weights(*trainer_only) != w_straight;
  } catch (const std::exception& e) {
    r.error = e.what();
  }
#else
  (void)cores;
  (void)iterations;
#endif
  return r;
}

gpu_actor_learning cartpole_learns_on_actors(int cores, int max_iterations, double target) {
  gmi::rl::ppo_config c;
  c.minibatch = 8192;
  c.epochs = 8;
  gmi::cuda::stream s;
  ac::ppo_gpu_on_actors<cart, cart_net> t(ac::actor_config{ac::choose_cores(usable(cores)), 2}, 512, 1, c, {},
                                          gmi::exec::cuda{.stream = s.get()});
  gpu_actor_learning r;
  gmi::rl::episode_stats window;
  const auto start = clock_type::now();
  for (int i = 0; i < max_iterations; ++i) {
    t.iterate();
    const auto e = t.episodes();
    window.episodes += e.episodes;
    window.return_sum += e.return_sum;
    r.iterations = i + 1;
    if (i % 5 == 4) {  // the mean over the last 5 iterations' finished episodes
      if (window.episodes >= 32) r.best_return = std::max(r.best_return, window.mean_return());
      window = {};
      if (r.best_return >= target) break;
    }
  }
  t.synchronize();
  r.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  r.env_steps = std::uint64_t(r.iterations) * 512u * std::uint64_t(c.horizon);
  return r;
}

gpu_actor_gate submit_without_waiting(int cores) {
  gpu_actor_gate r;
  gmi::rl::ppo_config c;
  c.minibatch = 1024;
  c.epochs = 2;
  gmi::cuda::stream s;
  ac::ppo_gpu_on_actors<cart, cart_net> t(ac::actor_config{ac::choose_cores(usable(cores)), 2}, 256, 5, c, {},
                                          gmi::exec::cuda{.stream = s.get()});
  r.pinned = t.actors().staging_pinned();
  t.iterate();  // the first iteration loads the kernels (lazy loading may synchronize; not what is tested here)
  t.synchronize();
  ac::event_log log(1 << 16);
  t.trace(&log);
  stream_gate gate;
  GMI_CUDA_TRY(cudaLaunchHostFunc(s.get(), &stream_gate::hold, &gate));
  std::exception_ptr failed;
  std::thread driver([&] {
    try {
      t.iterate();
    } catch (...) {
      failed = std::current_exception();
    }
  });
  // submit(1, 0) is recorded only after submit(0, 0) returned: group 0's first step was handed over unfinished.
  const auto deadline = clock_type::now() + std::chrono::seconds(20);
  while (log.find(ac::event_kind::submit, 1, 0) < 0 && clock_type::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  r.both_groups_submitted = log.find(ac::event_kind::submit, 0, 0) >= 0 && log.find(ac::event_kind::submit, 1, 0) >= 0;
  r.actions_before_open = log.find(ac::event_kind::actions_ready, 0, 0) >= 0 || log.find(ac::event_kind::actions_ready, 1, 0) >= 0;
  r.stream_busy_while_held = cudaStreamQuery(s.get()) == cudaErrorNotReady;
  gate.open = true;
  driver.join();
  t.trace(nullptr);
  if (failed) {
    try {
      std::rethrow_exception(failed);
    } catch (const std::exception& e) {
      r.error = e.what();
    }
  }
  t.synchronize();
  r.finished = !failed;
  r.iterations = t.iteration();
  return r;
}

gpu_actor_mujoco mujoco_ant_v4_on_actors(int cores, int iterations) {
  gpu_actor_mujoco r;
#ifdef GMI_ACTORS_MODELS
  using ant_v4_sim = ac::mujoco::sim<ac::mujoco::ant_v4>;
  using ant_net = gmi::agents::gaussian_mlp<>::network<27, 8>;
  r.available = true;
  try {
    gmi::rl::ppo_config c;
    c.minibatch = 512;
    c.epochs = 2;
    gmi::cuda::stream s;
    ac::ppo_gpu_actors<ant_v4_sim, ant_net> t(ac::actor_config{ac::choose_cores(usable(cores)), 2}, 64, 3, c,
                                           gmi::exec::cuda{.stream = s.get()},
                                           std::string(GMI_ACTORS_MODELS) + "/ant_floor.xml", 64, std::uint64_t(3));
    for (int i = 0; i < iterations; ++i) {
      t.iterate();
      r.episodes += t.episodes().episodes;
    }
    r.value_loss = t.losses().value_loss;
    r.iterations = t.iteration();
  } catch (const std::exception& e) {
    r.error = e.what();
  }
#else
  (void)cores;
  (void)iterations;
#endif
  return r;
}

gpu_actor_placement cartpole_placement(int batch) {
  gpu_actor_placement r;
  try {
    const gmi::plan::placement_profile p = gmi::profile_placement<cart>({}, batch, 0, 1, 0.1);
    r.cpu_seconds_per_step = p.cpu_seconds_per_step;
    r.gpu_seconds_per_batch_step = p.gpu_seconds_per_batch_step;
    r.cpu_cores = p.cpu_cores;
    r.chosen = gmi::plan::to_string(gmi::plan::choose_placement(p).chosen);
    r.chosen_with_high_threshold = gmi::plan::to_string(gmi::plan::choose_placement(p, gmi::plan::placement_rule{1e9}).chosen);
    r.chosen_with_low_threshold = gmi::plan::to_string(gmi::plan::choose_placement(p, gmi::plan::placement_rule{1e-9}).chosen);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

gpu_actor_gmis cartpole_gmis_on_actors(int gmis, int cores, int iterations) {
  using pipe = gmi::pipeline<ac::on_cpu<cart, 0>, gmi::agents::gaussian_mlp<>, gmi::trainers::ppo<>, gmi::layout::colocated,
                             gmi::partition::none, gmi::comm::hierarchical<gmi::comm::nccl>>;
  gpu_actor_gmis r;
  auto c = gmi::default_config<pipe>();
  c.device = gmi::device_choice::gpu;
  c.quiet = true;
  c.gmis_per_gpu = gmis;
  c.launch = gmi::runtime::launch_mode::threads;
  c.actor_cores_per_gmi = cores;
  c.num_envs = 256;
  c.ppo.minibatch = 1024;
  c.ppo.epochs = 2;
  c.max_env_steps = double(iterations) * c.num_envs * c.ppo.horizon * gmis;
  c.target_return = std::numeric_limits<double>::quiet_NaN();
  try {
    const gmi::train_result t = gmi::train<pipe>(c);
    r.exit_code = t.exit_code;
    r.gmis = t.gmis;
    r.iterations = long(t.iterations);
    r.reason = t.reason_text();
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}
