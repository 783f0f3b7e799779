// gmi.bench.actors_rate: MuJoCo Ant env steps/s per core, a bare loop of mj_step against gmi's CPU actors on the
// same model, options, frame_skip, envs per core and actions (host only). Three impls a thread count:
//   bare_mj_step:   per env: controls set, frame_skip x mj_step, the height test, and on termination mj_resetData,
//                   the reset noise and mj_forward; nothing else (no observation, reward, flags or hand-off);
//   gmi.sim:        mujoco::sim<ant_v4>::step_one over the same envs in turn (observation, reward, resets, statistics);
//   gmi.cpu_actors: cpu_actors::run (two groups, double buffered) with a policy that hands back the same actions
//                   at once: everything the actors do for PPO but the network (threads done with their own slice
//                   of a group step the rest of the others': actor_config::steal);
//   gmi.cpu_actors_static: the same with steal off (each slice on its owner only: the loop before stealing).
// Every thread count runs its threads at once (one env slice per pinned core); ratio = impl / bare at that count.
// Then one reset alone, both ways (us_per_reset lines: mj_resetData and gmi.reset_data, each with mj_forward; with
// trajectory_fnv, a hash of a 2000-step trajectory, to tell whether two MuJoCo builds step alike bit for bit).
// Then one thread's env step taken apart (us_per_env_step_profile): mujoco::sim<ant_v4>::step_one's time against the
// time MuJoCo's own timers (mjcb_time) give mj_step and its stages; the rest is gmi's task code (controls,
// observation, reward, flags, resets with their mj_forward).
//   gmi.bench.actors_rate OUT.jsonl [[pairs:][per_thread:|per_env:]MODEL_XML|builtin] [seconds per rep] [envs per core]
//                         [threads...]
// ("pairs:" first: the model's contacts as predefined pairs with MuJoCo's broadphase off, mujoco_pairs.hpp; lines
// say "collision": "predefined_pairs", else "dynamic". Then "per_thread:" (one mjData per thread and each
// environment's state rows apart, mujoco_thread_data.hpp) or "per_env:" (one mjData per environment) for gmi's sim
// and actors; neither: mujoco::default_layout (per_thread). Lines say "data_layout"; bare_mj_step always has one
// mjData per environment, and the profile reads each environment's own mjData, so it is per_env.)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "load_average.hpp"

#include <gmi/actors/cpu_actors.hpp>
#include <gmi/actors/mujoco.hpp>
#include <gmi/actors/power.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/envs/ant_v4.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/metrics/summary.hpp>
#include <gmi/plan/mujoco_placement.hpp>

namespace ac = gmi::actors;
namespace mj = gmi::actors::mujoco;

namespace {
using clock_type = std::chrono::steady_clock;
constexpr int act = 8, table_rows = 4096;

// Actions in [-1, 1], the same for every impl: env i at its step k takes row (i * 7 + k) mod table_rows.
std::vector<float> action_table() {
  std::vector<float> t(std::size_t(table_rows) * act);
  gmi::rng r(11, 0);
  for (float& a : t) a = r.uniform(-1.0f, 1.0f);
  return t;
}
const float* action_of(const std::vector<float>& t, std::size_t env, long step) {
  return t.data() + std::size_t((long(env) * 7 + step) % table_rows) * act;
}

// GMI_ACTORS_RATE_ONLY=<impl> runs that impl alone (to profile one; ratio_to_bare is then 0 for the others).
bool wanted(const char* impl) {
  const char* only = std::getenv("GMI_ACTORS_RATE_ONLY");
  return !only || !*only || std::string(only) == impl;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// CPU seconds of every thread of this process but the calling one (the process's less this thread's), so a rate
// per CPU second of the stepping threads can be had on a machine that other work shares.
double other_threads_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec) - thread_cpu_seconds();
}

double seconds_since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

struct rate {
  std::vector<double> per_core;  // one a rep
  double per_cpu_second = 0;     // env steps per CPU second of the stepping threads, over the timed reps
  double episode_length = 0;     // mean over the episodes that ended in the timed reps
};

// The bare loop on `cores` threads at once (each pinned, its own envs made on it), `reps` reps of `seconds`.
rate bare(const mj::model_ptr& model, const std::vector<int>& cores, int envs, double seconds, int reps,
          const std::vector<float>& table) {
  const mjModel* m = model.get();
  const mj::ant_v4 task(m, {});
  const auto& p = task.config();
  const int T = int(cores.size());
  rate out;
  std::vector<long> steps(static_cast<std::size_t>(T)), ends(static_cast<std::size_t>(T));
  std::atomic<int> ready{0};
  std::atomic<int> phase{-1};  // rep r running: 2r; rep r stopped: 2r + 1
  std::vector<std::thread> threads;
  for (int t = 0; t < T; ++t) {
    threads.emplace_back([&, t] {
      ac::pin_this_thread(cores[std::size_t(t)]);
      std::vector<mjData*> d(static_cast<std::size_t>(envs));
      std::vector<long> k(static_cast<std::size_t>(envs), 0);
      gmi::rng r(3, std::uint64_t(t));
      auto reset = [&](mjData* x) {
        mj_resetData(m, x);
        for (int i = 0; i < m->nq; ++i) x->qpos[i] = m->qpos0[i] + double(r.uniform(-p.reset_noise, p.reset_noise));
        for (int i = 0; i < m->nv; ++i) x->qvel[i] = double(p.reset_noise * r.normal());
        mj_forward(m, x);
      };
      for (auto& x : d) {
        x = mj_makeData(m);
        reset(x);
      }
      ready.fetch_add(1);
      for (int rep = 0; rep < reps + 1; ++rep) {  // rep 0 warms up
        while (phase.load(std::memory_order_acquire) < 2 * rep) std::this_thread::yield();
        long n = 0, e = 0;
        while (phase.load(std::memory_order_relaxed) == 2 * rep) {
          for (int i = 0; i < envs; ++i) {
            mjData* x = d[std::size_t(i)];
            const float* a = action_of(table, std::size_t(t * envs + i), k[std::size_t(i)]++);
            for (int u = 0; u < act; ++u) x->ctrl[u] = double(a[u]);
            for (int s = 0; s < p.frame_skip; ++s) mj_step(m, x);
            if (!task.is_healthy(x)) {
              reset(x);
              ++e;
            }
          }
          n += envs;
        }
        steps[std::size_t(t)] = n;
        ends[std::size_t(t)] = e;
        ready.fetch_add(1);  // the driver reads the counts once every thread has stored them
      }
      for (auto* x : d) mj_deleteData(x);
    });
  }
  auto wait_ready = [&](int target) {
    while (ready.load() < target) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  wait_ready(T);
  long all_steps = 0, all_ends = 0;
  double cpu = 0;
  for (int rep = 0; rep < reps + 1; ++rep) {
    const double cpu0 = other_threads_cpu_seconds();
    const auto t0 = clock_type::now();
    phase.store(2 * rep, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::duration<double>(rep == 0 ? 0.3 : seconds));
    phase.store(2 * rep + 1, std::memory_order_release);
    wait_ready(T * (rep + 2));
    const double elapsed = seconds_since(t0);
    long n = 0, e = 0;
    for (int t = 0; t < T; ++t) n += steps[std::size_t(t)], e += ends[std::size_t(t)];
    if (rep > 0) {
      out.per_core.push_back(double(n) / elapsed / T);
      all_steps += n;
      all_ends += e;
      cpu += other_threads_cpu_seconds() - cpu0;
    }
  }
  for (auto& th : threads) th.join();
  out.per_cpu_second = double(all_steps) / cpu;
  out.episode_length = all_ends > 0 ? double(all_steps) / double(all_ends) : 0.0;
  return out;
}

// gmi's sim alone: step_one over the envs in turn, on `cores` threads at once (each its own sim).
rate sim_only(const mj::model_ptr& model, const std::vector<int>& cores, int envs, double seconds, int reps,
              const std::vector<float>& table, mj::data_layout layout) {
  const int T = int(cores.size());
  rate out;
  std::vector<std::vector<double>> per_thread(static_cast<std::size_t>(T));
  std::vector<double> lengths(static_cast<std::size_t>(T)), cpu(static_cast<std::size_t>(T)),
      done(static_cast<std::size_t>(T));
  std::vector<std::thread> threads;
  for (int t = 0; t < T; ++t) {
    threads.emplace_back([&, t] {
      ac::pin_this_thread(cores[std::size_t(t)]);
      mj::sim<mj::ant_v4> s(model, envs, std::uint64_t(1 + t), {}, layout);
      std::vector<float> obs(std::size_t(envs) * 27), fin(27);
      for (int i = 0; i < envs; ++i) s.reset_one(std::size_t(i), obs.data() + i * 27);
      long k = 0;
      double steps_all = 0;
      for (int rep = 0; rep < reps + 1; ++rep) {
        if (rep == 1) {
          (void)s.read_stats();
          cpu[std::size_t(t)] = -thread_cpu_seconds();
        }
        const auto t0 = clock_type::now();
        long n = 0;
        while (seconds_since(t0) < (rep == 0 ? 0.3 : seconds)) {
          for (int i = 0; i < envs; ++i) {
            (void)s.step_one(std::size_t(i), action_of(table, std::size_t(t * envs + i), k), obs.data() + i * 27, fin.data());
          }
          ++k;
          n += envs;
        }
        if (rep > 0) {
          per_thread[std::size_t(t)].push_back(double(n) / seconds_since(t0));
          steps_all += double(n);
        }
      }
      cpu[std::size_t(t)] += thread_cpu_seconds();
      done[std::size_t(t)] = steps_all;
      const auto st = s.read_stats();
      lengths[std::size_t(t)] = st.episodes > 0 ? steps_all / double(st.episodes) : 0.0;
    });
  }
  for (auto& th : threads) th.join();
  for (int rep = 0; rep < reps; ++rep) {
    double sum = 0;
    for (int t = 0; t < T; ++t) sum += per_thread[std::size_t(t)][std::size_t(rep)];
    out.per_core.push_back(sum / T);
  }
  for (double l : lengths) out.episode_length += l / T;
  double all = 0, seconds_all = 0;
  for (int t = 0; t < T; ++t) all += done[std::size_t(t)], seconds_all += cpu[std::size_t(t)];
  out.per_cpu_second = all / seconds_all;
  return out;
}

// Microseconds of one Ant reset on `core` (mj_resetData and mj_forward, or the Ant task's reset: parts::reset_data,
// the noise, mj_forward) on an mjData that has stepped, `reps` repetitions of at least `seconds` each.
std::vector<double> reset_micros(const mj::model_ptr& model, int core, bool gmi_reset, double seconds, int reps) {
  std::vector<double> out;
  std::thread([&] {
    ac::pin_this_thread(core);
    const mjModel* m = model.get();
    const mj::ant_v4 task(m, {});
    mjData* d = mj_makeData(m);
    gmi::rng r(9, 0);
    for (int rep = 0; rep < reps + 1; ++rep) {
      const auto t0 = clock_type::now();
      long n = 0;
      double in_reset = 0;
      while (seconds_since(t0) < (rep == 0 ? 0.1 : seconds)) {
        for (int s = 0; s < 5; ++s) mj_step(m, d);  // a state to reset from (not timed)
        const auto t1 = clock_type::now();
        if (gmi_reset) {
          task.reset(d, r);
        } else {
          mj_resetData(m, d);
          mj_forward(m, d);
        }
        in_reset += seconds_since(t1);
        ++n;
      }
      if (rep > 0) out.push_back(1e6 * in_reset / double(n));
    }
    mj_deleteData(d);
  }).join();
  return out;
}

// FNV-1a of qpos and qvel's bits after 2000 mj_step from qpos0 under fixed controls: equal in the lines of two
// MuJoCo builds when they step the same trajectory bit for bit.
std::string trajectory_hash(const mjModel* m) {
  mjData* d = mj_makeData(m);
  mj_forward(m, d);
  for (int k = 0; k < 2000; ++k) {
    for (int u = 0; u < m->nu; ++u) d->ctrl[u] = std::sin(0.37 * k + 1.3 * u);
    mj_step(m, d);
  }
  std::uint64_t h = 1469598103934665603ull;
  auto add = [&](const mjtNum* v, int n) {
    const auto* b = reinterpret_cast<const unsigned char*>(v);
    for (std::size_t i = 0; i < sizeof(mjtNum) * std::size_t(n); ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  add(d->qpos, m->nq);
  add(d->qvel, m->nv);
  mj_deleteData(d);
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

// The table's actions handed back at once (on the driver thread).
struct table_policy {
  const std::vector<float>* table;
  std::vector<long> k;
  void submit(const ac::group_batch& b, ac::handoff& ready) {
    if (!b.needs_actions) return;
    for (std::size_t i = 0; i < b.num_envs; ++i) {
      const std::size_t env = b.first_env + i;
      std::copy_n(action_of(*table, env, k[env]++), act, b.actions.data() + i * act);
    }
    ready.signal();
  }
};

rate actors(const mj::model_ptr& model, const std::vector<int>& cores, int envs, double seconds, int reps,
            const std::vector<float>& table, bool steal, double& busy_fraction, double& stolen_fraction,
            mj::data_layout layout) {
  const int T = int(cores.size());
  const int n = envs * T;
  ac::actor_config config{cores, 2};
  config.steal = steal;
  ac::cpu_actors<mj::sim<mj::ant_v4>> a(config, model, n, std::uint64_t(1), mj::ant_v4::params{}, layout);
  table_policy pol{&table, std::vector<long>(std::size_t(n), 0)};
  constexpr int steps = 16;  // the PPO horizon
  rate out;
  double steps_all = 0, busy = 0, wall = 0, cpu = 0, stolen0 = 0;
  for (int rep = 0; rep < reps + 1; ++rep) {
    if (rep == 1) (void)a.read_stats(), stolen0 = double(a.stolen_steps());
    const double busy0 = a.busy_seconds(), cpu0 = other_threads_cpu_seconds();
    const auto t0 = clock_type::now();
    double done = 0;
    while (seconds_since(t0) < (rep == 0 ? 0.3 : seconds)) {
      a.run(pol, steps);
      done += double(n) * steps;
    }
    const double elapsed = seconds_since(t0);
    if (rep > 0) {
      out.per_core.push_back(done / elapsed / T);
      steps_all += done;
      busy += a.busy_seconds() - busy0;
      wall += elapsed;
      cpu += other_threads_cpu_seconds() - cpu0;
    }
  }
  const auto st = a.read_stats();
  out.episode_length = st.episodes > 0 ? steps_all / double(st.episodes) : 0.0;
  busy_fraction = busy / (wall * T);
  stolen_fraction = (double(a.stolen_steps()) - stolen0) / steps_all;
  out.per_cpu_second = steps_all / cpu;
  return out;
}

// One thread's env step taken apart: step_one over `envs` environments on `core` for `seconds`, with MuJoCo's timers
// on (mjcb_time: steady clock in us, only while this runs). Returns {total, mj_step, its stages...} in us per env step
// and the mean contacts, constraint rows and solver iterations of a substep (each env step's last one, as sampled).
struct step_profile {
  double per_step_us = 0;
  std::vector<std::pair<std::string, double>> parts;  // us per env step
  double ncon = 0, nefc = 0, solver_iter = 0;
};
mjtNum steady_us() {
  return std::chrono::duration<double, std::micro>(clock_type::now().time_since_epoch()).count();
}
step_profile profile(const mj::model_ptr& model, int core, int envs, double seconds, const std::vector<float>& table) {
  step_profile out;
  std::thread([&] {
    ac::pin_this_thread(core);
    mj::sim<mj::ant_v4> s(model, envs, 7, {}, mj::data_layout::per_env);  // data(i): env i's own timers and contacts
    std::vector<float> obs(std::size_t(envs) * 27), fin(27);
    for (int i = 0; i < envs; ++i) s.reset_one(std::size_t(i), obs.data() + i * 27);
    mjcb_time = steady_us;
    long k = 0, n = 0;
    double ncon = 0, nefc = 0, iters = 0, in_step = 0;
    for (int rep = 0; rep < 2; ++rep) {  // rep 0 warms up; the timers restart for rep 1
      for (int i = 0; i < envs; ++i) {
        for (mjTimerStat& t : s.data(std::size_t(i))->timer) t = {};
      }
      const auto t0 = clock_type::now();
      while (seconds_since(t0) < (rep == 0 ? 0.2 : seconds)) {
        for (int i = 0; i < envs; ++i) {
          const auto t1 = clock_type::now();
          (void)s.step_one(std::size_t(i), action_of(table, std::size_t(i), k), obs.data() + i * 27, fin.data());
          if (rep == 1) {
            in_step += seconds_since(t1);
            const mjData* d = s.data(std::size_t(i));
            ncon += d->ncon, nefc += d->nefc, iters += d->solver_iter, ++n;
          }
        }
        ++k;
      }
    }
    mjcb_time = nullptr;
    double timer[mjNTIMER] = {};
    for (int i = 0; i < envs; ++i) {
      for (int t = 0; t < mjNTIMER; ++t) timer[t] += s.data(std::size_t(i))->timer[t].duration;
    }
    const double per = double(n);
    out.per_step_us = 1e6 * in_step / per;
    const double step = timer[mjTIMER_STEP] / per;
    const double position = timer[mjTIMER_POSITION] / per, velocity = timer[mjTIMER_VELOCITY] / per,
                 actuation = timer[mjTIMER_ACTUATION] / per, acceleration = timer[mjTIMER_ACCELERATION] / per,
                 constraint = timer[mjTIMER_CONSTRAINT] / per;
    out.parts = {{"mj_step", step},
                 {"task_code", out.per_step_us - step},  // controls, observation, reward, flags, resets (mj_forward)
                 {"mj_position", position},
                 {"mj_position.kinematics", timer[mjTIMER_POS_KINEMATICS] / per},
                 {"mj_position.inertia", timer[mjTIMER_POS_INERTIA] / per},
                 {"mj_position.collision", timer[mjTIMER_POS_COLLISION] / per},
                 {"mj_position.make_constraint", timer[mjTIMER_POS_MAKE] / per},
                 {"mj_position.project_constraint", timer[mjTIMER_POS_PROJECT] / per},
                 {"mj_velocity", velocity},
                 {"mj_actuation", actuation},
                 {"mj_acceleration", acceleration},
                 {"mj_constraint_solver", constraint},
                 // mj_step less its forward stages (in substeps): the checks and the Euler integration
                 {"mj_step_rest", step - (position + velocity + actuation + acceleration + constraint)}};
    // Resets run mj_forward outside mj_step: their stages count above too, so the stages can add up past mj_step.
    out.ncon = ncon / per;
    out.nefc = nefc / per;
    out.solver_iter = iters / per;
  }).join();
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT.jsonl [[pairs:][per_thread:|per_env:]MODEL_XML|builtin] [seconds per rep] [envs per core] [threads...]\n", argv[0]);
    return 2;
  }
  const std::string out_file = argv[1], model_arg = argc > 2 ? argv[2] : "builtin";
  const double seconds = argc > 3 ? std::stod(argv[3]) : 1.0;
  const int envs = argc > 4 ? std::stoi(argv[4]) : 128;  // the PPO benches' 64 per core and group
  gmi::require(envs >= 2 && envs % 2 == 0, "envs per core", envs, "an even count >= 2 (two groups)");
  std::vector<int> thread_counts;
  for (int i = 5; i < argc; ++i) thread_counts.push_back(std::stoi(argv[i]));
  if (thread_counts.empty()) thread_counts = {1};
  // "pairs:" before the model: its contacts as predefined pairs, the broadphase off (mujoco_pairs.hpp).
  const bool pairs = model_arg.rfind("pairs:", 0) == 0;
  std::string model_file = pairs ? model_arg.substr(6) : model_arg;
  // "per_thread:" or "per_env:" next: the sim's data layout; neither: mujoco::default_layout.
  mj::data_layout layout = mj::default_layout;
  for (const mj::data_layout l : {mj::data_layout::per_thread, mj::data_layout::per_env}) {
    const std::string prefix = std::string(mj::layout_name(l)) + ":";
    if (model_file.rfind(prefix, 0) == 0) {
      layout = l;
      model_file = model_file.substr(prefix.size());
    }
  }
  const mj::model_ptr model = model_file == "builtin"
                                  ? gmi::plan::mujoco_model_of<gmi::envs::ant_v4>(pairs)
                                  : (pairs ? mj::load_with_predefined_pairs(model_file) : mj::load(model_file));
  const std::string model_name =
      model_file == "builtin" ? "gmi::physics builtin ant_v4.xml" : std::filesystem::path(model_file).filename().string();
  const std::string collision = pairs ? "predefined_pairs" : "dynamic";
  const auto table = action_table();
  const auto run = gmi::metrics::describe_run();
  const std::string cpu = ac::cpu_model();
  constexpr int reps = 3;
  std::ofstream out(out_file, std::ios::app);
  for (int T : thread_counts) {
    const auto cores = ac::choose_cores(T);
    double busy = 0;
    const rate b = wanted("bare_mj_step") ? bare(model, cores, envs, seconds, reps, table) : rate{};
    const rate s = wanted("gmi.sim") ? sim_only(model, cores, envs, seconds, reps, table, layout) : rate{};
    double busy_static = 0, stolen = 0, stolen_static = 0;
    const rate a =
        wanted("gmi.cpu_actors") ? actors(model, cores, envs, seconds, reps, table, true, busy, stolen, layout)
                                 : rate{};
    const rate f = wanted("gmi.cpu_actors_static")
                       ? actors(model, cores, envs, seconds, reps, table, false, busy_static, stolen_static, layout)
                       : rate{};
    const double bare_median = b.per_core.empty() ? 0.0 : gmi::metrics::summarize(b.per_core).median;
    for (const auto& [impl, r] : {std::pair<const char*, const rate*>{"bare_mj_step", &b}, {"gmi.sim", &s},
                                  {"gmi.cpu_actors", &a}, {"gmi.cpu_actors_static", &f}}) {
      if (r->per_core.empty()) continue;
      const auto sm = gmi::metrics::summarize(r->per_core);
      auto line = gmi::metrics::result_line(run, "actors_rate", impl, "steps_per_s_per_core", sm);
      line.update({{"task", "ant_v4"}, {"model", model_name}, {"threads", T}, {"envs_per_core", envs},
                   {"frame_skip", mj::ant_v4::params{}.frame_skip}, {"timestep", model->opt.timestep},
                   {"solver_iterations", model->opt.iterations}, {"collision", collision},
                   {"data_layout", r == &b ? "per_env" : mj::layout_name(layout)},
                   {"ratio_to_bare", bare_median > 0 ? sm.median / bare_median : 0.0},
                   {"mean_episode_length", r->episode_length},
                   {"steps_per_cpu_s", r->per_cpu_second}, {"host_cpu", cpu}, {"mujoco", mj_versionString()},
                   {"mujoco_library", mj::library_path()}, {"target", 20000}});
      if (r == &a) line.update({{"busy_fraction", busy}, {"steal", true}, {"stolen_fraction", stolen}});
      if (r == &f) line.update({{"busy_fraction", busy_static}, {"steal", false}, {"stolen_fraction", stolen_static}});
      line["load_average_1min"] = gmi::bench::load_average_1min();  // other work on the machine while this ran
      out << line.dump() << "\n";
      std::printf("%s\n", line.dump().c_str());
    }
    out.flush();
  }
  // One env step taken apart (one core; MuJoCo's timers add about two clock reads a stage, so the total is a little
  // above the untimed gmi.sim rate's).
  if (wanted("profile")) {
    const step_profile pr = profile(model, ac::choose_cores(1).front(), envs, std::max(1.0, seconds), table);
    auto line = gmi::metrics::result_line(run, "actors_rate", "gmi.sim", "us_per_env_step_profile",
                                          gmi::metrics::summarize({pr.per_step_us}));
    nlohmann::json parts = nlohmann::json::object();
    for (const auto& [part, us] : pr.parts) parts[part] = us;
    line.update({{"task", "ant_v4"}, {"model", model_name}, {"collision", collision}, {"data_layout", "per_env"},
                 {"threads", 1}, {"envs_per_core", envs},
                 {"us_parts", parts}, {"share_mj_step", pr.parts.front().second / pr.per_step_us},
                 {"share_task_code", pr.parts[1].second / pr.per_step_us}, {"contacts_per_substep", pr.ncon},
                 {"constraint_rows_per_substep", pr.nefc}, {"solver_iterations_per_substep", pr.solver_iter},
                 {"nsensor", model->nsensor}, {"host_cpu", cpu}, {"mujoco", mj_versionString()},
                 {"mujoco_library", mj::library_path()}, {"load_average_1min", gmi::bench::load_average_1min()}});
    out << line.dump() << "\n";
    std::printf("%s\n", line.dump().c_str());
  }
  // The reset alone (one core): mj_resetData clears the whole mjData buffer, gmi's reset only the state.
  for (const bool gmi_reset : {false, true}) {
    const auto us = reset_micros(model, ac::choose_cores(1).front(), gmi_reset, seconds, reps);
    auto line = gmi::metrics::result_line(run, "actors_rate", gmi_reset ? "gmi.reset_data" : "mj_resetData",
                                          "us_per_reset", gmi::metrics::summarize(us));
    line.update({{"task", "ant_v4"}, {"model", model_name}, {"collision", collision}, {"what", "mj_resetData + mj_forward, or the Ant task's reset (reset_data, noise, mj_forward); timed alone, after 5 mj_step"},
                 {"host_cpu", cpu}, {"mujoco", mj_versionString()}, {"mujoco_library", mj::library_path()},
                 {"trajectory_fnv", trajectory_hash(model.get())}});
    out << line.dump() << "\n";
    std::printf("%s\n", line.dump().c_str());
  }
  return 0;
}
