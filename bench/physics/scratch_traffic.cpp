// gmi.tool.physics_traffic: how many reads and writes of one environment's pipeline arrays (the thread path's
// scratch, builtin_task.hpp) an env step of ant_v4, humanoid_v4 and anymal makes, in total and per array, on the host
// under random actions (the bench's action distribution), with episode resets as the tasks end them. On the device
// these arrays are per-thread local memory, so the counts are the thread path's local-memory traffic in words.
// Built with GMI_PHYSICS_ACCESS_HOOK (math.hpp's strided calls the hook below on every element access).
// With a third argument 1, the same counts split by the staged step's stages (physics::step_stage 0-4, run one by
// one as simulate's step does; "start" is the control step's inputs and the state read back), each stage's total and
// its arrays (rl/physics_staged_step.cuh runs a kernel per stage; physics/stage_shared.hpp puts each stage's hottest
// arrays in shared memory).
// Usage: gmi.tool.physics_traffic [env steps per task, default 300] [arrays listed per task, default 12]
//        [by stage: 0 or 1, default 0]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <gmi/core/rng.hpp>
#include <gmi/envs/ant_v4.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/envs/humanoid_v4.hpp>

namespace {
const char* lo = nullptr;
const char* hi = nullptr;
std::vector<long long> counts;  // per real of the scratch
int stage = 5;                   // the stage running (0-4), 5: start and the state read back
std::vector<long long> stage_counts[6];
}  // namespace

void gmi::physics::gmi_physics_access(const void* address) {
  const char* c = static_cast<const char*>(address);
  if (c >= lo && c < hi) {
    ++counts[static_cast<std::size_t>(c - lo) / sizeof(float)];
    ++stage_counts[stage][static_cast<std::size_t>(c - lo) / sizeof(float)];
  }
}

namespace {
template <class E>
void count(const char* name, int steps, int listed, bool by_stage) {
  using sim = typename E::sim;
  typename E::params p{};
  const std::vector<float> table = E::make_table(p);
  E::bind_table(p, table.data());
  std::vector<float> scratch(sim::scratch_reals);
  lo = reinterpret_cast<const char*>(scratch.data());
  hi = reinterpret_cast<const char*>(scratch.data() + scratch.size());
  counts.assign(scratch.size(), 0);
  for (auto& c : stage_counts) c.assign(scratch.size(), 0);
  gmi::rng r(1, 0);
  typename E::state s;
  E::reset(s, r, p);
  long long sweeps = 0, rows = 0;
  int resets = 0;
  for (int k = 0; k < steps; ++k) {
    float ctrl[sim::nu > 0 ? sim::nu : 1];
    for (int j = 0; j < sim::nu; ++j) ctrl[j] = r.uniform(-1.0f, 1.0f);
    gmi::physics::data<float> d = sim::bind(scratch.data());
    if (by_stage) {  // simulate's passes (start, each substep's stages, the state read back), a stage at a time
      stage = 5;
      sim::start(d, s.qpos, s.qvel, ctrl);
      for (int sub = 0; sub < E::physics_substeps(p); ++sub)
        for (int st = 0; st < gmi::physics::step_stages; ++st) {
          stage = st;
          gmi::physics::step_stage<sim::colliders>(st, p.model, d);
        }
      stage = 5;
      for (int j = 0; j < sim::nq; ++j) s.qpos[j] = d.qpos[j];
      for (int j = 0; j < sim::nv; ++j) s.qvel[j] = d.qvel[j];
    } else {
      d = sim::simulate(p.model, scratch.data(), s.qpos, s.qvel, ctrl, E::physics_substeps(p));
    }
    sweeps += static_cast<long long>(d.solver_sweeps[0]);
    rows += static_cast<long long>(d.nefc[0]);
    bool ended = !sim::finite(s.qpos, sim::nq) || !sim::finite(s.qvel, sim::nv);
    if constexpr (requires { E::healthy(s, p); }) ended = ended || !E::healthy(s, p);
    if (ended || (k + 1) % 100 == 0) {  // anymal ends on base contact in finish(): a reset every 100 steps instead
      E::reset(s, r, p);
      ++resets;
    }
  }
  // The arrays' accesses in c (per real of the scratch), most first, and their sum.
  const auto by_field = [](const std::vector<long long>& c, long long& total) {
    const gmi::physics::data_layout l = gmi::physics::make_layout(sim::sizes_v);
    const gmi::physics::model_sizes& s = sim::sizes_v;  // the name GMI_PHYSICS_DATA_FIELDS's lengths use
    std::vector<std::pair<long long, std::string>> fields;
    total = 0;
#define GMI_TRAFFIC_FIELD(field, len)                                                                        \
  {                                                                                                          \
    long long n = 0;                                                                                         \
    for (std::size_t i = l.field; i < l.field + static_cast<std::size_t>(len); ++i) n += c[i];               \
    fields.emplace_back(n, std::string(#field) + "[" + std::to_string(static_cast<long long>(len)) + "]"); \
    total += n;                                                                                              \
  }
    GMI_PHYSICS_DATA_FIELDS(GMI_TRAFFIC_FIELD)
#undef GMI_TRAFFIC_FIELD
    std::sort(fields.rbegin(), fields.rend());
    return fields;
  };
  long long total = 0;
  const auto fields = by_field(counts, total);
  std::printf("%s: %d env steps (%d physics steps each, %d resets): %.0f array accesses per env step (%.0f KB); "
              "last physics step of each env step: %.1f rows, %.1f sweeps on average\n",
              name, steps, E::physics_substeps(p), resets, double(total) / steps, double(total) / steps * 4 / 1024,
              double(rows) / steps, double(sweeps) / steps);
  for (int i = 0; i < listed && i < static_cast<int>(fields.size()); ++i)
    std::printf("  %-20s %9.0f  %5.1f%%\n", fields[i].second.c_str(), double(fields[i].first) / steps,
                100.0 * double(fields[i].first) / double(total));
  for (int st = 0; by_stage && st < 6; ++st) {
    long long in_stage = 0;
    const auto f = by_field(stage_counts[st], in_stage);
    const std::string what = st < 5 ? "stage " + std::to_string(st) : std::string("start and read-back");
    std::printf(" %s: %.0f accesses per env step (%.1f%%)\n", what.c_str(), double(in_stage) / steps,
                100.0 * double(in_stage) / double(total));
    for (int i = 0; i < listed && i < static_cast<int>(f.size()) && f[i].first > 0; ++i)
      std::printf("    %-20s %9.0f  %5.1f%% of these\n", f[i].second.c_str(), double(f[i].first) / steps,
                  100.0 * double(f[i].first) / double(in_stage));
  }
}
}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 300;
  const int listed = argc > 2 ? std::atoi(argv[2]) : 12;
  const int by_stage = argc > 3 ? std::atoi(argv[3]) : 0;
  if (steps < 1 || listed < 0 || (by_stage != 0 && by_stage != 1)) {
    std::fprintf(stderr,
                 "gmi.tool.physics_traffic: got steps %d, listed %d, by stage %d; need steps >= 1, listed >= 0, "
                 "by stage 0 or 1\n",
                 steps, listed, by_stage);
    return 2;
  }
  count<gmi::envs::ant_v4>("ant_v4", steps, listed, by_stage == 1);
  count<gmi::envs::humanoid_v4>("humanoid_v4", steps, listed, by_stage == 1);
  count<gmi::envs::anymal>("anymal", steps, listed, by_stage == 1);
  return 0;
}
