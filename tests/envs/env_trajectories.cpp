// Writes one trajectory of every registered task to JSON, for the Python port's check (bench/learning/tasks.py,
// bench/learning/check_port.py): the state after gmi's reset as raw 32-bit words (so the port starts from the same
// state without gmi's random streams), a fixed action sequence that also leaves [-1, 1] (a discrete task: indices
// as floats, every one of them used), and per step the
// observation before the action, the reward and the termination flag; proxies add their model table.
// Usage: gmi.tool.env_trajectories <out.json> [steps=60]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gmi/envs/registry.hpp>

namespace {
void floats(std::FILE* f, const float* x, int n) {
  std::fputc('[', f);
  for (int i = 0; i < n; ++i) std::fprintf(f, "%s%.9g", i ? "," : "", x[i]);
  std::fputc(']', f);
}

template <class T>
void write_task(std::FILE* f, int steps, bool first) {
  typename T::params p{};
  std::vector<float> table;
  if constexpr (requires { T::make_table(p); }) {
    table = T::make_table(p);
    T::bind_table(p, table.data());
  }
  static_assert(sizeof(typename T::state) % 4 == 0, "state of 32-bit fields");
  gmi::rng r(20261127, 3);
  typename T::state s;
  T::reset(s, r, p);
  std::uint32_t words[sizeof(s) / 4];
  std::memcpy(words, &s, sizeof s);
  std::fprintf(f, "%s\n\"%s\": {\"state_words\": [", first ? "" : ",", T::name);
  for (std::size_t i = 0; i < sizeof(s) / 4; ++i) std::fprintf(f, "%s%u", i ? "," : "", words[i]);
  std::fprintf(f, "], \"actions\": [");
  std::vector<float> obs(T::obs_dim);
  std::string obs_text, rewards, terms;
  int t = 0;
  for (; t < steps; ++t) {
    float a[T::act_dim];
    for (int j = 0; j < T::act_dim; ++j) a[j] = 1.2f * std::sin(0.37f * float(t) + 1.3f * float(j) + 0.5f);
    if constexpr (gmi::has_discrete_actions<T>) a[0] = float((t * 5 + t / 3) % gmi::policy_outputs<T>());
    T::observe(s, obs.data(), p);
    const gmi::transition tr = T::step(s, a, r, p);
    std::fprintf(f, "%s", t ? "," : "");
    floats(f, a, T::act_dim);
    char buf[64];
    obs_text += t ? "," : "";
    obs_text += "[";
    for (int k = 0; k < T::obs_dim; ++k) {
      std::snprintf(buf, sizeof buf, "%s%.9g", k ? "," : "", obs[k]);
      obs_text += buf;
    }
    obs_text += "]";
    std::snprintf(buf, sizeof buf, "%s%.9g", t ? "," : "", tr.reward);
    rewards += buf;
    terms += (t ? "," : "") + std::string(tr.terminated ? "true" : "false");
    if (tr.terminated) {
      ++t;
      break;
    }
  }
  std::fprintf(f, "], \"obs\": [%s], \"rewards\": [%s], \"terminated\": [%s]", obs_text.c_str(), rewards.c_str(),
               terms.c_str());
  if (!table.empty()) {
    std::fprintf(f, ", \"table\": ");
    floats(f, table.data(), static_cast<int>(table.size()));
  }
  if constexpr (requires { T::optimal_mean_return(p); }) std::fprintf(f, ", \"optimum\": %.17g", T::optimal_mean_return(p));
  std::fprintf(f, "}");
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s <out.json> [steps=60]\n", argv[0]);
    return 2;
  }
  const int steps = argc == 3 ? std::atoi(argv[2]) : 60;
  if (steps < 1 || steps > 100000) {
    std::fprintf(stderr, "gmi.tool.env_trajectories: steps: got %s, need 1..100000\n", argv[2]);
    return 2;
  }
  std::FILE* f = std::fopen(argv[1], "w");
  if (!f) {
    std::fprintf(stderr, "gmi.tool.env_trajectories: cannot write %s\n", argv[1]);
    return 2;
  }
  std::fprintf(f, "{");
  bool first = true;
  gmi::envs::for_each_task([&]<class T>() {
    // The physics tasks have no Python port (bench/learning/tasks.py ports the hand-written dynamics only).
    if constexpr (!gmi::envs::is_physics_task<T>) {
      write_task<T>(f, steps, first);
      first = false;
    }
  });
  std::fprintf(f, "\n}\n");
  return std::fclose(f) == 0 ? 0 : 1;
}
