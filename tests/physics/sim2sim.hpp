#pragma once
// Sim-to-sim (issue 35 item 6), shared by gmi.tool.sim2sim (sim2sim_tool.cpp) and its test (sim2sim_test.cpp): a
// PPO policy saved by a task's example (gmi.example.<task>_ppo --checkpoint FILE: the trainer's .gmi file, its
// weights and observation statistics) acts deterministically (the Gaussian's mean on observations normalized by the
// training's statistics, rl/ppo_eval.hpp) for N episodes of the task on gmi::physics on the host (rl::env_batch,
// float, the task's own solver settings) and on MuJoCo (actors::mujoco::sim, double, the same MJCF file), from the
// same start states (environment i draws its reset from gmi::rng(seed, i) in both), with the task's own
// observation, reward and termination code on each simulator's state (actors/mujoco_*.hpp). Each episode runs to
// its end (termination or the time limit) in each simulator; the means and their ratio are the result.

#include <mujoco/mujoco.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gmi/actors/mujoco.hpp>
#include <gmi/actors/mujoco_isaac.hpp>
#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/span.hpp>
#include <gmi/envs/ant.hpp>
#include <gmi/envs/ant_v4.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/envs/humanoid.hpp>
#include <gmi/envs/humanoid_v4.hpp>
#include <gmi/envs/renamed_tasks.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/io/gmi_file.hpp>
#include <gmi/nn/normalizer.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/ppo_eval.hpp>

namespace gmi::sim2sim {

// The network of examples/task_ppo (gmi.example.<task>_ppo without GMI_ISAAC_NET): 64-64, elu.
template <class E>
using example_net = typename agents::gaussian_mlp<nn::layers<64, 64>>::template network<E::obs_dim, E::act_dim>;

inline const char* const task_names = "ant_v4, humanoid_v4, anymal, ant, humanoid";

struct options {
  std::string checkpoint;        // a .gmi file saved by --checkpoint
  std::string task;              // empty: the checkpoint's
  std::string mjcf;              // MuJoCo's model; empty: the task's built-in file (builtin_dir/<task>.xml)
  std::string builtin_dir;       // include/gmi/physics/builtin
  int episodes = 16;
  std::uint64_t seed = 1;
  int max_steps = 0;             // > 0: the episodes' time limit instead of the task's
  int compare_steps = 10;        // the first env steps whose observations are compared
  unsigned threads = 0;          // host threads (0: all)
  float obs_clip = 5.0f;         // ppo_config's default, which the examples train with
  double torso_mass_scale = 1.0;  // MuJoCo's root body (torso, base): mass and inertia times this (a check)
};

struct result {
  std::string task;
  int episodes = 0;
  double return_gmi = 0, return_mujoco = 0, len_gmi = 0, len_mujoco = 0;
  // The largest |observation difference| over the first compare_steps env steps of every episode (while both
  // run), and the episodes that ended at the same step in both.
  double early_obs_diff = 0;
  int same_end = 0;
  std::vector<double> returns_gmi, returns_mujoco;  // per episode
  [[nodiscard]] double ratio() const { return return_mujoco / return_gmi; }
};

// The checkpoint's task name ("format": "gmi ppo trainer"), refused in one line when it is no PPO trainer's.
[[nodiscard]] inline std::string task_of(const io::checkpoint& ck, const std::string& file) {
  const auto text = [&](const char* key) {
    return ck.meta.contains(key) && ck.meta[key].is_string() ? ck.meta[key].get<std::string>() : std::string();
  };
  require(text("format") == "gmi ppo trainer", "checkpoint " + file + " format", text("format"),
          "\"gmi ppo trainer\" (a .gmi file saved by an example's --checkpoint)");
  return text("task");
}

// The policy's weights and observation statistics, refused in one line when the checkpoint is of another task or
// network.
struct policy {
  std::vector<float> params;
  std::vector<double> obs_stats;
};
template <class E, class Net>
policy read_policy(const io::checkpoint& ck, const std::string& file) {
  const std::string task = task_of(ck, file);
  require(task == E::name, "checkpoint " + file + " task", task, std::string(E::name) + " (the task evaluated)");
  const auto need = [&](const char* key, long long want, const std::string& why) {
    const bool integer = ck.meta.contains(key) && ck.meta[key].is_number_integer();
    require(integer, "checkpoint " + file + " " + key, "none", std::to_string(want) + " (" + why + ")");
    const long long got = ck.meta[key].get<long long>();
    require(got == want, "checkpoint " + file + " " + key, got, std::to_string(want) + " (" + why + ")");
  };
  need("obs_dim", E::obs_dim, std::string(E::name) + "'s observation size");
  need("act_dim", E::act_dim, std::string(E::name) + "'s action size");
  need("param_count", Net::param_count, "the 64-64 network of examples/task_ppo");
  policy p{ck.get<float>("policy.params", std::size_t(Net::param_count)),
           ck.get<double>("obs_norm.stats", 1 + 2 * std::size_t(E::obs_dim))};
  for (std::size_t k = 0; k < p.params.size(); ++k) {
    require(std::isfinite(p.params[k]), "checkpoint " + file + " policy.params[" + std::to_string(k) + "]",
            p.params[k], "a finite weight");
  }
  for (std::size_t k = 0; k < p.obs_stats.size(); ++k) {
    require(std::isfinite(p.obs_stats[k]), "checkpoint " + file + " obs_norm.stats[" + std::to_string(k) + "]",
            p.obs_stats[k], "a finite value");
  }
  return p;
}

// MuJoCo's model of the file, the root body's mass and inertia scaled (scale 1: as loaded).
[[nodiscard]] inline actors::mujoco::model_ptr mujoco_model(const std::string& file, double torso_mass_scale) {
  require(std::isfinite(torso_mass_scale) && torso_mass_scale > 0, "--torso-mass-scale", torso_mass_scale, "> 0");
  actors::mujoco::model_ptr base = actors::mujoco::load(file);
  if (torso_mass_scale == 1.0) return base;
  mjModel* m = mj_copyModel(nullptr, base.get());
  require(m != nullptr && m->nbody > 1, "MJCF file " + file, "no body below the world", "a model with a root body");
  m->body_mass[1] *= torso_mass_scale;
  for (int k = 0; k < 3; ++k) m->body_inertia[3 + k] *= torso_mass_scale;
  return actors::mujoco::model_ptr(m, actors::mujoco::model_deleter{});
}

// One deterministic episode of environment i of `sims` (step_one as rl::env_batch_view and mujoco::sim have it)
// from its first observation `first` (its reset's): its return, length and first `keep` observations.
struct episode {
  double ret = 0;
  int length = 0;
  std::vector<float> first_obs;
};
template <class Net, int ObsDim, class Sim>
episode run_episode(Sim& sims, std::size_t i, const float* first, const policy& pol, const nn::normalizer_view& norm,
                    int keep) {
  float o[ObsDim], on[ObsDim], out[Net::dist_dim], a[Net::act_dim], v;
  std::copy_n(first, ObsDim, o);
  episode e;
  for (;;) {
    if (e.length < keep) e.first_obs.insert(e.first_obs.end(), o, o + ObsDim);
    norm.normalize(o, on);
    Net::forward(pol.params.data(), on, out, &v);
    rl::mode_action<Net>(out, a);
    const rl::step_result s = sims.step_one(i, a, o, nullptr);
    e.ret += s.reward;
    e.length += 1;
    if (s.terminated || s.truncated) return e;  // every task has a time limit
  }
}

// E on gmi::physics against MjTask on MuJoCo (mujoco::<task>): o.episodes episodes each, in parallel over host
// threads, summed in episode order (the result does not depend on the thread count).
template <class E, class MjTask>
result compare(const io::checkpoint& ck, const options& o) {
  using Net = example_net<E>;
  require(o.episodes >= 1, "--episodes", o.episodes, ">= 1");
  require(o.compare_steps >= 0, "--compare-steps", o.compare_steps, ">= 0");
  require(std::isfinite(o.obs_clip) && o.obs_clip > 0, "--obs-clip", o.obs_clip, "> 0");
  const policy pol = read_policy<E, Net>(ck, o.checkpoint);
  typename E::params params{};
  if (o.max_steps > 0) params.max_steps = o.max_steps;
  const std::string file = o.mjcf.empty() ? o.builtin_dir + "/" + E::name + ".xml" : o.mjcf;
  const exec::host threads{.threads = o.threads};
  const std::size_t n = std::size_t(o.episodes);

  rl::env_batch<E, exec::host> envs(o.episodes, o.seed, params, threads);
  std::vector<float> first(n * E::obs_dim);
  envs.reset(host_span<float>(first.data(), first.size()));
  const rl::env_batch_view<E> view = envs.view();
  actors::mujoco::sim<MjTask> mj(mujoco_model(file, o.torso_mass_scale), o.episodes, o.seed, params);

  nn::running_mean_std<exec::host> norm(E::obs_dim, nn::normalizer_config{.clip = o.obs_clip});
  norm.assign(host_span<const double>(pol.obs_stats.data(), pol.obs_stats.size()));
  const nn::normalizer_view nv = norm.view();
  std::vector<episode> on_gmi(n), on_mujoco(n);
  exec::for_each(threads, n, [&](std::size_t i) {
    // Both from their environment's first reset (env_batch::reset drew gmi's above).
    float mj_first[E::obs_dim];
    mj.reset_one(i, mj_first);
    on_gmi[i] = run_episode<Net, E::obs_dim>(view, i, first.data() + i * E::obs_dim, pol, nv, o.compare_steps);
    on_mujoco[i] = run_episode<Net, E::obs_dim>(mj, i, mj_first, pol, nv, o.compare_steps);
  });

  result r;
  r.task = E::name;
  r.episodes = o.episodes;
  for (std::size_t i = 0; i < n; ++i) {
    const episode &g = on_gmi[i], &m = on_mujoco[i];
    r.returns_gmi.push_back(g.ret);
    r.returns_mujoco.push_back(m.ret);
    r.return_gmi += g.ret / double(n);
    r.return_mujoco += m.ret / double(n);
    r.len_gmi += double(g.length) / double(n);
    r.len_mujoco += double(m.length) / double(n);
    r.same_end += g.length == m.length ? 1 : 0;
    const std::size_t both = std::min(g.first_obs.size(), m.first_obs.size());
    for (std::size_t k = 0; k < both; ++k) {
      r.early_obs_diff = std::max(r.early_obs_diff, double(std::fabs(g.first_obs[k] - m.first_obs[k])));
    }
  }
  return r;
}

// The task named o.task, or the checkpoint's when o.task is empty; an unknown name refused in one line (an old
// name: what it is called now).
[[nodiscard]] inline result compare_task(const io::checkpoint& ck, options o) {
  const std::string saved = task_of(ck, o.checkpoint);
  if (o.task.empty()) o.task = saved;
  if (o.task == "ant_v4") return compare<envs::ant_v4, actors::mujoco::ant_v4>(ck, o);
  if (o.task == "humanoid_v4") return compare<envs::humanoid_v4, actors::mujoco::humanoid_v4>(ck, o);
  if (o.task == "anymal") return compare<envs::anymal, actors::mujoco::anymal>(ck, o);
  if (o.task == "ant") return compare<envs::ant, actors::mujoco::ant>(ck, o);
  if (o.task == "humanoid") return compare<envs::humanoid, actors::mujoco::humanoid>(ck, o);
  if (const std::string renamed = envs::renamed_task(o.task); !renamed.empty()) throw config_error(renamed);
  throw config_error(got_need("task", o.task, std::string("one of ") + task_names));
}

}  // namespace gmi::sim2sim
