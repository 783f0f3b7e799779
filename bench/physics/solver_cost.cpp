// gmi.tool.physics_solver_cost: what the constraint solve costs the physics tasks on the host. For each task and
// each Gauss-Seidel sweep cap asked for, environments from their resets under uniform random actions in [-1, 1]
// (episodes reset as the task ends them) are stepped physics step by physics step through the five stages
// (physics::step_stage, as step runs them); per physics step the sweeps the solve took (data::solver_sweeps) and
// the time of each stage are recorded. Prints a line per task and cap: mean and largest sweeps, the share of
// solves stopped by the cap, and the share of the step's time in the solve (stage 3; wall clock on one host
// thread, timer overhead included).
// Usage: gmi.tool.physics_solver_cost [tasks, default ant,ant_v4] [caps, default 100,30,20]
//        [environments, default 16] [env steps each, default 300]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gmi/core/rng.hpp>
#include <gmi/envs/ant.hpp>
#include <gmi/envs/ant_v4.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/envs/humanoid_v4.hpp>
#include <gmi/envs/renamed_tasks.hpp>
#include <gmi/physics/step.hpp>

namespace {
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at <= s.size();) {
    const std::size_t comma = std::min(s.find(',', at), s.size());
    out.push_back(s.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

template <class E>
void measure(int cap, int envs, int steps) {
  using sim = typename E::sim;
  using clock = std::chrono::steady_clock;
  typename E::params p{};
  p.solver_iterations = cap;
  const std::vector<float> table = E::make_table(p);
  E::bind_table(p, table.data());
  std::vector<float> scratch(sim::scratch_reals);
  double sweeps = 0, stage_s[gmi::physics::step_stages] = {};
  long solves = 0, capped = 0;
  int most = 0;
  for (int e = 0; e < envs; ++e) {
    gmi::rng r(7, static_cast<std::uint64_t>(e));
    typename E::state s;
    E::reset(s, r, p);
    for (int t = 0; t < steps; ++t) {
      float a[E::act_dim], ctrl[sim::nu > 0 ? sim::nu : 1], carry[E::carry_dim > 0 ? E::carry_dim : 1];
      for (float& x : a) x = r.uniform(-1.0f, 1.0f);
      E::control(s, a, p, ctrl, carry, scratch.data());
      const gmi::physics::data<float> d = sim::bind(scratch.data());
      sim::start(d, s.qpos, s.qvel, ctrl);
      for (int k = 0; k < E::physics_substeps(p); ++k) {
        for (int st = 0; st < gmi::physics::step_stages; ++st) {
          const auto t0 = clock::now();
          gmi::physics::step_stage<sim::colliders>(st, p.model, d);
          stage_s[st] += std::chrono::duration<double>(clock::now() - t0).count();
        }
        const int sw = static_cast<int>(d.solver_sweeps[0]);
        sweeps += sw;
        ++solves;
        capped += sw >= cap ? 1 : 0;
        most = sw > most ? sw : most;
      }
      for (int k = 0; k < sim::nq; ++k) s.qpos[k] = d.qpos[k];
      for (int k = 0; k < sim::nv; ++k) s.qvel[k] = d.qvel[k];
      if (E::finish(s, a, carry, d, p, scratch.data()).terminated) E::reset(s, r, p);
    }
  }
  double total = 0;
  for (double x : stage_s) total += x;
  std::printf("%-9s cap %3d, tolerance %g: sweeps per solve mean %.2f, largest %d, %.2f%% of solves at the cap; "
              "solve %.1f%% of the physics step (%.2f us a physics step; %ld physics steps)\n",
              E::name, cap, static_cast<double>(p.solver_tolerance), sweeps / double(solves), most,
              100.0 * double(capped) / double(solves), 100.0 * stage_s[3] / total, 1e6 * total / double(solves),
              solves);
}
}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> tasks = split(argc > 1 ? argv[1] : "ant,ant_v4");
  const std::vector<std::string> caps = split(argc > 2 ? argv[2] : "100,30,20");
  const int envs = argc > 3 ? std::atoi(argv[3]) : 16, steps = argc > 4 ? std::atoi(argv[4]) : 300;
  if (envs < 1 || steps < 1) {
    std::fprintf(stderr, "gmi.tool.physics_solver_cost: environments and steps: got %d and %d, need >= 1\n", envs, steps);
    return 2;
  }
  for (const std::string& c : caps) {
    const int cap = std::atoi(c.c_str());
    if (cap < 1) {
      std::fprintf(stderr, "gmi.tool.physics_solver_cost: cap: got '%s', need an integer >= 1\n", c.c_str());
      return 2;
    }
    for (const std::string& t : tasks) {
      if (t == "ant") measure<gmi::envs::ant>(cap, envs, steps);
      else if (t == "ant_v4") measure<gmi::envs::ant_v4>(cap, envs, steps);
      else if (t == "humanoid_v4") measure<gmi::envs::humanoid_v4>(cap, envs, steps);
      else if (t == "anymal") measure<gmi::envs::anymal>(cap, envs, steps);
      else if (const std::string renamed = gmi::envs::renamed_task(t); !renamed.empty()) {
        std::fprintf(stderr, "gmi.tool.physics_solver_cost: %s\n", renamed.c_str());
        return 2;
      } else {
        std::fprintf(stderr, "gmi.tool.physics_solver_cost: task: got '%s', need ant, ant_v4, humanoid_v4 or anymal\n",
                     t.c_str());
        return 2;
      }
    }
  }
  return 0;
}
