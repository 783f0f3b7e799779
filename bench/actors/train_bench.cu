// gmi.bench.actors_train: PPO with the environments on CPU actors and the policy and update on the GPU
// (actors/ppo_actors_gpu.cuh). For each task and actor core count, three rates of env steps/s:
//   stepping: the actors alone (a host policy that hands back zero actions at once: what the cores can step),
//   collect:  the double-buffered loop with the GPU's inference per group (serve: no update),
//   collect_static: the same with actor_config::steal off (each thread steps only its own slice of a group),
//   train:    whole PPO iterations (collection, then the update on the GPU).
// Beside them (Cartpole): the same PPO with the simulation on the GPU (impl gmi.gpu_simulation), and the
// placement metric's choice at that batch (bench placement), so the threshold can be checked against both.
// collect / stepping is the issue's ">= 90% of the cores' stepping rate" (the GPU is never what waits); every line
// also has busy_fraction, the actor threads' stepping time over their wall time in that phase (cpu_actors::busy_seconds:
// near 1 in "collect" when the double buffering hides the GPU's inference; "train" adds the update, when they idle).
// The Ant's model is loaded with predefined pairs (actors/mujoco_pairs.hpp: the broadphase off, njmax bounded; the
// same contacts and steps bit for bit), as plan::mujoco_model_of<envs::ant_v4>() and the placement do, and stepped in
// mujoco::sim's default layout (one mjData per actor thread, data_layout::per_thread, mujoco_thread_data.hpp; the
// same steps bit for bit). "dynamic:" before the file loads it with MuJoCo's dynamic collision (as before);
// "per_env:" or "per_thread:" next picks the layout (per_env: one mjData an environment, the layout before).
// Lines say "collision": "predefined_pairs"|"dynamic" and "data_layout": "per_thread"|"per_env".
//   gmi.bench.actors_train OUT.jsonl [[dynamic:][per_env:|per_thread:]MODEL_XML (MuJoCo Ant; "-" for none)]
//                          [seconds per rep] [cores...]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/actors/power.hpp>
#include <gmi/actors/ppo_actors_gpu.cuh>
#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/cartpole.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/pipeline/actor_placement.cuh>
#include <gmi/plan/placement.hpp>
#include <gmi/metrics/summary.hpp>
#ifdef GMI_BENCH_MUJOCO
#include <gmi/actors/mujoco.hpp>
#include <gmi/actors/mujoco_pairs.hpp>
#endif

namespace ac = gmi::actors;

namespace {
using clock_type = std::chrono::steady_clock;

// Zero actions, handed back at once: the actors' own stepping rate through the same hand-off.
struct zero_policy {
  void submit(const ac::group_batch& b, ac::handoff& ready) {
    if (!b.needs_actions) return;
    std::fill(b.actions.begin(), b.actions.end(), 0.0f);
    ready.signal();
  }
};

// Env steps/s of `work` (which returns the env steps it made), repeated for `seconds`, `reps` times; `busy` gets
// the actors' stepping seconds over the timed wall seconds and their core count (1: the cores never waited).
struct no_actors {  // for rates of runs without CPU actors (GPU simulation)
  [[nodiscard]] double busy_seconds() const { return 0; }
  [[nodiscard]] int threads() const { return 1; }
};

template <class Work, class Wait, class Actors = no_actors>
std::vector<double> rates(Work&& work, Wait&& wait, double seconds, int reps, const Actors* actors = nullptr,
                          double* busy = nullptr) {
  std::vector<double> out;
  double stepping = 0, wall = 0;
  for (int r = 0; r < reps; ++r) {
    const double busy0 = actors ? actors->busy_seconds() : 0.0;
    const auto t0 = clock_type::now();
    double steps = 0, elapsed = 0;
    while (elapsed < seconds) {
      steps += work();
      wait();
      elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
    }
    out.push_back(steps / elapsed);
    if (actors) stepping += actors->busy_seconds() - busy0;
    wall += elapsed;
  }
  if (busy && actors) *busy = stepping / (wall * actors->threads());
  return out;
}

template <class Trainer>
void measure(Trainer& t, const char* task, int cores, double seconds, std::ofstream& out,
             const gmi::metrics::run_info& run, const std::string& cpu, const nlohmann::json& extra = nlohmann::json::object()) {
  const int n = t.num_envs(), horizon = t.config().horizon;
  const double per_rollout = double(n) * horizon;
  zero_policy zero;
  t.iterate();  // warm-up: kernels loaded, the update's graph captured
  t.synchronize();
  const auto* a = &t.actors();
  double busy[4] = {0, 0, 0, 0};
  const auto stepping = rates([&] { t.actors().run(zero, horizon); return per_rollout; }, [] {}, seconds, 3, a, &busy[0]);
  const auto collect =
      rates([&] { t.serve(horizon); return per_rollout; }, [&] { t.synchronize(); }, seconds, 3, a, &busy[1]);
  t.actors().set_steal(false);  // the loop before stealing, for comparison in the same run
  const auto collect_static =
      rates([&] { t.serve(horizon); return per_rollout; }, [&] { t.synchronize(); }, seconds, 3, a, &busy[2]);
  t.actors().set_steal(true);
  const auto train = rates([&] { t.iterate(); return per_rollout; }, [&] { t.synchronize(); }, seconds, 3, a, &busy[3]);
  const double step_median = gmi::metrics::summarize(stepping).median;
  int at = 0;
  for (const auto& [phase, v] : {std::pair<const char*, const std::vector<double>*>{"stepping", &stepping},
                                 {"collect", &collect}, {"collect_static", &collect_static}, {"train", &train}}) {
    const auto s = gmi::metrics::summarize(*v);
    auto line = gmi::metrics::result_line(run, "cpu_actors_ppo", "gmi", "steps_per_s", s);
    line["task"] = task;
    line["phase"] = phase;
    line["actor_cores"] = cores;
    line["num_envs"] = n;
    line["horizon"] = horizon;
    line["fraction_of_stepping"] = s.median / step_median;
    line["steal"] = std::string(phase) != "collect_static";
    line["busy_fraction"] = busy[at++];  // the actor threads' time stepping over theirs on the wall clock
    line["host_cpu"] = cpu;
    line.update(extra);  // the MuJoCo Ant's library, collision and data layout
    out << line.dump() << "\n";
    std::printf("%s\n", line.dump().c_str());
  }
  out.flush();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT.jsonl [[dynamic:]MODEL_XML|-] [seconds per rep] [cores...]\n", argv[0]);
    return 2;
  }
  if (!ac::cuda_device_present()) {
    std::fprintf(stderr, "gmi.bench.actors_train: got no CUDA device, need one (the trainer runs on the GPU)\n");
    return 77;
  }
  const std::string out_file = argv[1], model = argc > 2 ? argv[2] : "-";
  const double seconds = argc > 3 ? std::stod(argv[3]) : 1.0;
  std::vector<int> core_counts;
  for (int i = 4; i < argc; ++i) core_counts.push_back(std::stoi(argv[i]));
  const int available = int(ac::available_cores().size());
  if (core_counts.empty()) core_counts = {1, 4, std::max(1, available - 1)};
  const auto run = gmi::metrics::describe_run();
  const std::string cpu = ac::cpu_model();
  // GMI_ACTORS_TRAIN_ANT_ONLY=1 leaves Cartpole out (a second run of the Ant on another MuJoCo build).
  const char* only = std::getenv("GMI_ACTORS_TRAIN_ANT_ONLY");
  const bool ant_v4_only = only && std::string(only) == "1" && model != "-";
  std::ofstream out(out_file, std::ios::app);
  gmi::cuda::stream s;
  const gmi::exec::cuda gpu{.stream = s.get()};
  for (int cores : core_counts) {
    if (cores + 1 > available) continue;  // one core is left to the driver
    const std::vector<int> actor_cores = ac::choose_cores(cores);  // the driver (this thread) stays unpinned
    gmi::rl::ppo_config c;  // the defaults: horizon 16
    if (!ant_v4_only) {
      using net = gmi::agents::gaussian_mlp<>::network<4, 1>;
      ac::ppo_gpu_on_actors<gmi::envs::cartpole, net> t(ac::actor_config{actor_cores, 2}, cores * 512, 1, c, {}, gpu);
      measure(t, "cartpole", cores, seconds, out, run, cpu);
      // The same training with the simulation on the GPU, and the placement metric's choice at this batch: the
      // threshold is right when the side it picks is the side that trains faster.
      gmi::rl::ppo_trainer<gmi::envs::cartpole, net, gmi::exec::cuda> g(cores * 512, 1, c, {}, gpu);
      g.iterate();
      g.synchronize();
      const double per = double(g.samples_per_iteration());
      const auto on_gpu = rates([&] { g.iterate(); return per; }, [&] { g.synchronize(); }, seconds, 3);
      auto line = gmi::metrics::result_line(run, "cpu_actors_ppo", "gmi.gpu_simulation", "steps_per_s",
                                            gmi::metrics::summarize(on_gpu));
      line.update({{"task", "cartpole"}, {"phase", "train"}, {"actor_cores", 0}, {"for_actor_cores", cores},
                   {"num_envs", cores * 512}, {"horizon", c.horizon}, {"host_cpu", cpu}});
      out << line.dump() << "\n";
      std::printf("%s\n", line.dump().c_str());
      gmi::plan::placement_profile prof = gmi::profile_placement<gmi::envs::cartpole>({}, cores * 512, 0, 1);
      prof.cpu_cores = cores;  // the actors this point runs with
      auto placed = gmi::metrics::result_line(run, "placement", "gmi", "steps_per_s", gmi::metrics::summarize({0.0}));
      placed.update(gmi::plan::choose_placement(prof).line());
      placed.erase("median");
      placed.erase("min");
      placed.erase("max");
      placed.erase("reps");
      placed["actor_cores"] = cores;
      out << placed.dump() << "\n";
      std::printf("%s\n", placed.dump().c_str());
    }
#ifdef GMI_BENCH_MUJOCO
    if (model != "-") {
      using ant_v4_sim = ac::mujoco::sim<ac::mujoco::ant_v4>;
      using net = gmi::agents::gaussian_mlp<>::network<27, 8>;
      const int n = cores * 128;  // 64 envs per core and group
      const bool dynamic = model.rfind("dynamic:", 0) == 0;
      std::string file = dynamic ? model.substr(8) : model;
      ac::mujoco::data_layout layout = ac::mujoco::default_layout;
      for (const auto l : {ac::mujoco::data_layout::per_env, ac::mujoco::data_layout::per_thread}) {
        const std::string prefix = std::string(ac::mujoco::layout_name(l)) + ":";
        if (file.rfind(prefix, 0) == 0) {
          layout = l;
          file = file.substr(prefix.size());
        }
      }
      const ac::mujoco::model_ptr m = dynamic ? ac::mujoco::load(file) : ac::mujoco::load_with_predefined_pairs(file);
      ac::ppo_gpu_actors<ant_v4_sim, net> t(ac::actor_config{actor_cores, 2}, n, 1, c, gpu, m, n, std::uint64_t(1),
                                         ac::mujoco::ant_v4::params{}, layout);
      measure(t, "ant_v4", cores, seconds, out, run, cpu,
              {{"mujoco_library", ac::mujoco::library_path()},
               {"collision", dynamic ? "dynamic" : "predefined_pairs"},
               {"data_layout", ac::mujoco::layout_name(layout)}});
    }
#endif
  }
  return 0;
}
