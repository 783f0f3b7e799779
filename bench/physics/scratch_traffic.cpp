// gmi.tool.physics_traffic: how many reads and writes of one environment's pipeline arrays (the thread path's
// scratch, builtin_task.hpp) an env step of ant, humanoid and anymal makes, in total and per array, on the host
// under random actions (the bench's action distribution), with episode resets as the tasks end them. On the device
// these arrays are per-thread local memory, so the counts are the thread path's local-memory traffic in words.
// Built with GMI_PHYSICS_ACCESS_HOOK (math.hpp's strided calls the hook below on every element access).
// Usage: gmi.tool.physics_traffic [env steps per task, default 300] [arrays listed per task, default 12]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <gmi/core/rng.hpp>
#include <gmi/envs/ant.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/envs/humanoid.hpp>

namespace {
const char* lo = nullptr;
const char* hi = nullptr;
std::vector<long long> counts;  // per real of the scratch
}  // namespace

void gmi::physics::gmi_physics_access(const void* address) {
  const char* c = static_cast<const char*>(address);
  if (c >= lo && c < hi) ++counts[static_cast<std::size_t>(c - lo) / sizeof(float)];
}

namespace {
template <class E>
void count(const char* name, int steps, int listed) {
  using sim = typename E::sim;
  typename E::params p{};
  const std::vector<float> table = E::make_table(p);
  E::bind_table(p, table.data());
  std::vector<float> scratch(sim::scratch_reals);
  lo = reinterpret_cast<const char*>(scratch.data());
  hi = reinterpret_cast<const char*>(scratch.data() + scratch.size());
  counts.assign(scratch.size(), 0);
  gmi::rng r(1, 0);
  typename E::state s;
  E::reset(s, r, p);
  long long sweeps = 0, rows = 0;
  int resets = 0;
  for (int k = 0; k < steps; ++k) {
    float ctrl[sim::nu > 0 ? sim::nu : 1];
    for (int j = 0; j < sim::nu; ++j) ctrl[j] = r.uniform(-1.0f, 1.0f);
    const gmi::physics::data<float> d =
        sim::simulate(p.model, scratch.data(), s.qpos, s.qvel, ctrl, E::physics_substeps(p));
    sweeps += static_cast<long long>(d.solver_sweeps[0]);
    rows += static_cast<long long>(d.nefc[0]);
    bool ended = !sim::finite(s.qpos, sim::nq) || !sim::finite(s.qvel, sim::nv);
    if constexpr (requires { E::healthy(s, p); }) ended = ended || !E::healthy(s, p);
    if (ended || (k + 1) % 100 == 0) {  // anymal ends on base contact in finish(): a reset every 100 steps instead
      E::reset(s, r, p);
      ++resets;
    }
  }
  const gmi::physics::data_layout l = gmi::physics::make_layout(sim::sizes_v);
  std::vector<std::pair<long long, std::string>> fields;
  long long total = 0;
  const gmi::physics::model_sizes sz = sim::sizes_v;
  {
    const gmi::physics::model_sizes& s = sz;  // the name GMI_PHYSICS_DATA_FIELDS's lengths use
#define GMI_TRAFFIC_FIELD(field, len)                                                                  \
  {                                                                                                    \
    long long c = 0;                                                                                   \
    for (std::size_t i = l.field; i < l.field + static_cast<std::size_t>(len); ++i) c += counts[i];    \
    fields.emplace_back(c, #field);                                                                    \
    total += c;                                                                                        \
  }
    GMI_PHYSICS_DATA_FIELDS(GMI_TRAFFIC_FIELD)
#undef GMI_TRAFFIC_FIELD
  }
  std::sort(fields.rbegin(), fields.rend());
  std::printf("%s: %d env steps (%d physics steps each, %d resets): %.0f array accesses per env step (%.0f KB); "
              "last physics step of each env step: %.1f rows, %.1f sweeps on average\n",
              name, steps, E::physics_substeps(p), resets, double(total) / steps, double(total) / steps * 4 / 1024,
              double(rows) / steps, double(sweeps) / steps);
  for (int i = 0; i < listed && i < static_cast<int>(fields.size()); ++i)
    std::printf("  %-16s %9.0f  %5.1f%%\n", fields[i].second.c_str(), double(fields[i].first) / steps,
                100.0 * double(fields[i].first) / double(total));
}
}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 300;
  const int listed = argc > 2 ? std::atoi(argv[2]) : 12;
  if (steps < 1 || listed < 0) {
    std::fprintf(stderr, "gmi.tool.physics_traffic: got steps %d, listed %d; need steps >= 1, listed >= 0\n", steps,
                 listed);
    return 2;
  }
  count<gmi::envs::ant>("ant", steps, listed);
  count<gmi::envs::humanoid>("humanoid", steps, listed);
  count<gmi::envs::anymal>("anymal", steps, listed);
  return 0;
}
