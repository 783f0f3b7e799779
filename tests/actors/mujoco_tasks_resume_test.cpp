// Checkpoints of the Humanoid and Anymal MuJoCo tasks: 40 env steps straight equal 20, a save to a .gmi file, a
// fresh sim loaded from it and 20 more (observations, rewards, ends and the saved state at the end, bit for bit),
// with time limits and terminations resetting environments inside both halves. Anymal's command and last action
// are saved beside mjData (env.task_state): loaded without them (zeros) the steps part ways, and a missing or
// non-finite task_state is refused in one line before the environments change.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <unistd.h>
#include <vector>

#include <gmi/actors/mujoco.hpp>
#include <gmi/io/gmi_file.hpp>

namespace {
namespace mj = gmi::actors::mujoco;
namespace io = gmi::io;

std::string builtin(const char* name) { return std::string(GMI_BUILTIN_MODELS) + "/" + name; }
constexpr std::size_t envs = 4;

struct record {
  std::vector<float> obs, rewards;
  std::vector<int> ends;
  bool operator==(const record&) const = default;
};

template <class Task>
typename Task::params short_episodes() {
  typename Task::params p;
  p.max_steps = 13;
  return p;
}

// Steps [from, to) of a fixed action sequence (large enough to topple some episodes) on every environment.
template <class Task>
record steps(mj::sim<Task>& sim, int from, int to) {
  record r;
  std::vector<float> obs(Task::obs_size), act(Task::act_size);
  for (int t = from; t < to; ++t) {
    for (std::size_t i = 0; i < envs; ++i) {
      for (int u = 0; u < Task::act_size; ++u) act[std::size_t(u)] = float(std::sin(0.7 * t + 1.3 * u + 0.4 * double(i)));
      const auto s = sim.step_one(i, act.data(), obs.data(), nullptr);
      r.obs.insert(r.obs.end(), obs.begin(), obs.end());
      r.rewards.push_back(s.reward);
      r.ends.push_back(int(s.terminated) + 2 * int(s.truncated));
    }
  }
  return r;
}

template <class Task>
mj::sim<Task> fresh(const char* file) {
  return mj::sim<Task>(builtin(file), envs, 9u, short_episodes<Task>());
}

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("gmi_mj_tasks_" + std::to_string(::getpid()) + "_" + name);
}

// A copy of ck with the tensor `name` left out, or its float values replaced by f(index).
template <class F>
io::checkpoint with_task_state(const io::checkpoint& ck, const std::string& name, bool drop, F f) {
  io::checkpoint out;
  for (const io::tensor& t : ck.tensors()) {
    if (t.name != name) {
      out.add(t);
    } else if (!drop) {
      std::vector<float> v = ck.get_f32(name);
      for (std::size_t k = 0; k < v.size(); ++k) v[k] = f(k, v[k]);
      out.add(name, v, t.shape);
    }
  }
  return out;
}

template <class Task>
void resume_case(const char* file) {
  mj::sim<Task> straight = fresh<Task>(file);
  std::vector<float> obs(Task::obs_size);
  for (std::size_t i = 0; i < envs; ++i) straight.reset_one(i, obs.data());
  (void)steps(straight, 0, 20);
  const record second_half = steps(straight, 20, 40);
  int ends = 0;
  for (int e : second_half.ends) ends += e != 0;
  REQUIRE(ends > 0);  // resets inside the resumed half

  const auto path = temp_file(std::string(file) + ".gmi");
  {
    mj::sim<Task> first = fresh<Task>(file);
    for (std::size_t i = 0; i < envs; ++i) first.reset_one(i, obs.data());
    (void)steps(first, 0, 20);
    io::checkpoint ck;
    first.save_state(ck, "actors.");
    io::save(ck, path);
  }
  const io::checkpoint loaded = io::load(path);
  mj::sim<Task> resumed = fresh<Task>(file);
  resumed.load_state(loaded, "actors.");
  CHECK(steps(resumed, 20, 40) == second_half);
  io::checkpoint a, b;
  straight.save_state(a, "actors.");
  resumed.save_state(b, "actors.");
  REQUIRE(a.tensors().size() == b.tensors().size());
  for (std::size_t k = 0; k < a.tensors().size(); ++k) {
    CAPTURE(a.tensors()[k].name);
    CHECK(a.tensors()[k] == b.tensors()[k]);
  }
  std::filesystem::remove(path);

  if constexpr (requires { Task::task_state_size; }) {
    CHECK(loaded.contains("actors.env.task_state"));
    mj::sim<Task> zeroed = fresh<Task>(file);
    zeroed.load_state(with_task_state(loaded, "actors.env.task_state", false, [](std::size_t, float) { return 0.0f; }),
                      "actors.");
    CHECK(steps(zeroed, 20, 40) != second_half);
    for (bool drop : {true, false}) {
      mj::sim<Task> refused = fresh<Task>(file);
      const auto bad = with_task_state(loaded, "actors.env.task_state", drop, [](std::size_t k, float v) {
        return k == 5 ? std::numeric_limits<float>::quiet_NaN() : v;
      });
      try {
        refused.load_state(bad, "actors.");
        FAIL("loaded a bad task_state");
      } catch (const gmi::config_error& e) {
        const std::string what = e.what();
        CHECK(what.find('\n') == std::string::npos);
        CHECK(what.find("actors.env.task_state") != std::string::npos);
      }
      CHECK(refused.data(0)->time == 0.0);  // refused before the environments changed
    }
  }
}
}  // namespace

TEST_CASE("actors.mujoco.humanoid_v4_resume_continues_the_same_trajectories") { resume_case<mj::humanoid_v4>("humanoid_v4.xml"); }
TEST_CASE("actors.mujoco.anymal_resume_continues_the_same_trajectories") { resume_case<mj::anymal>("anymal.xml"); }
