// MuJoCo environments in checkpoints: PPO on CPU actors stepping MuJoCo's Ant trained N iterations straight equals
// N/2, a save to a file, a fresh engine resumed from it and N/2 more (weights and every environment's mjData state,
// RNG counter, length and return, bit for bit); resuming the trainer alone does not (so the test can fail). The
// section is untrusted input: 400 seeded mutations of it (version, sizes, missing tensors, dtypes, non-finite
// values, negative lengths), each written to and read back from a .gmi file, are each refused in one line before
// the environments change.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include <gmi/actors/mujoco.hpp>
#include <gmi/actors/ppo_actors.hpp>
#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/io/gmi_file.hpp>

namespace {
namespace ac = gmi::actors;
namespace mj = gmi::actors::mujoco;
namespace io = gmi::io;
using ant_v4_sim = mj::sim<mj::ant_v4>;
using ant_net = gmi::agents::gaussian_mlp<>::network<27, 8>;
using engine = ac::ppo_sim_on_actors<ant_v4_sim, ant_net>;

std::string model_path(const char* name) { return std::string(GMI_ACTORS_MODELS) + "/" + name; }

gmi::rl::ppo_config small_config() {
  gmi::rl::ppo_config c;
  c.horizon = 16;
  c.minibatch = 128;
  c.epochs = 2;
  return c;
}
mj::ant_v4::params short_episodes() {
  mj::ant_v4::params p;
  p.max_steps = 20;  // time limits (and so resets drawing from the env streams) inside every run
  return p;
}
constexpr int envs = 16;
constexpr std::uint64_t seed = 5;

engine make_engine() {
  const int cores = std::min<int>(2, int(ac::available_cores().size()));
  return engine(ac::actor_config{ac::choose_cores(cores), 2}, envs, seed, small_config(), {},
                gmi::exec::host{.threads = 1}, model_path("ant_floor.xml"), envs, seed, short_episodes());
}

std::vector<float> params_of(engine& e) { return {e.params().begin(), e.params().end()}; }

// The actors' part of a checkpoint (every "actors." tensor), for comparing environment states exactly.
std::vector<io::tensor> actor_tensors(const io::checkpoint& ck) {
  std::vector<io::tensor> out;
  for (const io::tensor& t : ck.tensors()) {
    if (t.name.rfind("actors.", 0) == 0) out.push_back(t);
  }
  return out;
}

std::filesystem::path temp_file(const char* name) {
  return std::filesystem::temp_directory_path() / ("gmi_actors_mj_" + std::to_string(::getpid()) + "_" + name);
}

bool one_line(const std::string& s) { return !s.empty() && s.find('\n') == std::string::npos; }
}  // namespace

TEST_CASE("actors.mujoco.resume_continues_the_same_trajectories") {
  constexpr int iterations = 6;
  engine straight = make_engine();
  for (int k = 0; k < iterations; ++k) straight.iterate();
  const io::checkpoint end_straight = straight.save_state();
  const auto episodes_straight = straight.episodes();
  REQUIRE(episodes_straight.episodes > 0);  // the time limit ended episodes, so resets drew from the env streams

  const auto path = temp_file("half.gmi");
  {
    engine first_half = make_engine();
    for (int k = 0; k < iterations / 2; ++k) first_half.iterate();
    const io::checkpoint half = first_half.save_state();
    CHECK(half.meta["actors_env_state"] == "saved");
    CHECK(half.contains("actors.mujoco.qpos"));
    CHECK(half.contains("actors.mujoco.qacc_warmstart"));
    io::save(half, path);
  }
  const io::checkpoint loaded = io::load(path);
  engine resumed = make_engine();
  resumed.load_state(loaded);
  for (int k = 0; k < iterations / 2; ++k) resumed.iterate();
  CHECK(params_of(resumed) == params_of(straight));
  const io::checkpoint end_resumed = resumed.save_state();
  const auto a = actor_tensors(end_straight), b = actor_tensors(end_resumed);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(a[i].name);
    CHECK(a[i] == b[i]);
  }
  CHECK(end_resumed.get_f64("actors.mujoco.time") == end_straight.get_f64("actors.mujoco.time"));

  // The trainer's state alone (fresh episodes on the actors): the weights part ways, so the check above can fail.
  engine trainer_only = make_engine();
  trainer_only.trainer().load_state(loaded);
  for (int k = 0; k < iterations / 2; ++k) trainer_only.iterate();
  CHECK(params_of(trainer_only) != params_of(straight));
  std::filesystem::remove(path);
}

TEST_CASE("actors.mujoco.state_section_refuses_mutations_in_one_line") {
  const auto model = mj::load(model_path("ant_floor.xml"));
  constexpr int n = 4;
  ant_v4_sim saved(model, n, 3u, short_episodes());
  std::vector<float> obs(n * 27), act(8, 0.4f);
  for (std::size_t i = 0; i < n; ++i) saved.reset_one(i, obs.data() + i * 27);
  for (int k = 0; k < 7; ++k) {
    for (std::size_t i = 0; i < n; ++i) (void)saved.step_one(i, act.data(), obs.data() + i * 27, nullptr);
  }
  io::checkpoint good;
  saved.save_state(good, "actors.");

  // The target is in another state; a refused load must leave it so.
  ant_v4_sim target(model, n, 4u, short_episodes());
  for (std::size_t i = 0; i < n; ++i) target.reset_one(i, obs.data() + i * 27);
  io::checkpoint before;
  target.save_state(before, "actors.");

  const auto path = temp_file("fuzz.gmi");
  io::save(good, path);
  {
    ant_v4_sim check(model, n, 9u, short_episodes());
    check.load_state(io::load(path), "actors.");  // the unmutated section loads
    io::checkpoint again;
    check.save_state(again, "actors.");
    REQUIRE(again.tensors().size() == good.tensors().size());
    for (std::size_t i = 0; i < good.tensors().size(); ++i) {
      CAPTURE(good.tensors()[i].name);
      CHECK(again.tensors()[i] == good.tensors()[i]);
    }
  }

  std::mt19937_64 gen(20261128);
  const std::vector<io::tensor>& ts = good.tensors();
  int refused = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const std::size_t victim = gen() % ts.size();
    const int kind = int(gen() % 6);
    std::string expect;  // a word the refusal must hold
    io::checkpoint bad;
    for (std::size_t j = 0; j < ts.size(); ++j) {
      io::tensor t = ts[j];
      if (j == victim) {
        const std::size_t width = io::size_of(t.type);
        const std::uint64_t count = t.count();
        if (kind == 0) {  // dropped
          expect = "need one of the tensors";
          continue;
        } else if (kind == 1 || count == 0) {  // another element count
          std::uint64_t other = gen() % (2 * count + 3);
          if (other == count) other += 1;
          t.bytes.resize(other * width);
          t.shape = {other};
          expect = "got " + std::to_string(other) + " ";
        } else if (kind == 2) {  // another dtype over the same bytes
          t.type = width == 8 ? io::dtype::u32 : io::dtype::u8;
          t.shape = {t.bytes.size() / io::size_of(t.type)};
          expect = "dtype";
        } else {  // one element changed: a layout count, a non-finite value, a negative length
          const std::uint64_t at = gen() % count;
          std::byte* p = t.bytes.data() + at * width;
          if (t.name == "actors.mujoco.layout") {
            std::int64_t v = 0;
            std::memcpy(&v, p, 8);
            v += std::int64_t(1 + gen() % 5) * (gen() % 2 ? 1 : -1);
            std::memcpy(p, &v, 8);
            expect = at == 0 ? "version" : "mujoco.layout " + std::string(mj::layout_names[at]);
          } else if (t.type == io::dtype::f64) {
            const double v = kind == 3 ? std::numeric_limits<double>::quiet_NaN()
                                       : (kind == 4 ? 1 : -1) * std::numeric_limits<double>::infinity();
            std::memcpy(p, &v, 8);
            expect = "a finite value";
          } else if (t.type == io::dtype::f32) {
            const float v = std::numeric_limits<float>::quiet_NaN();
            std::memcpy(p, &v, 4);
            expect = "a finite return";
          } else if (t.type == io::dtype::i32) {
            const std::int32_t v = -1 - std::int32_t(gen() % 1000);
            std::memcpy(p, &v, 4);
            expect = ">= 0";
          } else {  // RNG counters: any value is a valid stream position; shorten the tensor instead
            t.bytes.resize(t.bytes.size() - width);
            t.shape = {count - 1};
            expect = "got " + std::to_string(count - 1) + " ";
          }
        }
      }
      bad.add(std::move(t));
    }
    CAPTURE(trial);
    CAPTURE(ts[victim].name);
    CAPTURE(kind);
    io::save(bad, path);
    std::string message;
    try {
      target.load_state(io::load(path), "actors.");
    } catch (const gmi::config_error& e) {
      message = e.what();
    }
    CAPTURE(message);
    REQUIRE_MESSAGE(!message.empty(), "a mutated MuJoCo state section was accepted");
    CHECK(one_line(message));
    CHECK(message.find(expect) != std::string::npos);
    io::checkpoint after;
    target.save_state(after, "actors.");
    REQUIRE(after == before);  // refused before any environment changed
    ++refused;
  }
  CHECK(refused == 400);
  std::filesystem::remove(path);
}
