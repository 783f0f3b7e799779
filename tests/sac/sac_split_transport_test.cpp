// Split roles' transports (pipeline/split_channels.hpp): the choice and its refusals, the round note, the column
// layout, the host twin of the device transport (the same endpoints and protocol over host-memory channels) against
// the messages bit for bit, and a lost actor process named by the learner within the timeout.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/envs/pendulum.hpp>
#include <gmi/pipeline/offpolicy_split.hpp>
#include <gmi/pipeline/split_channels.hpp>
#include <gmi/pipeline/split_paths.hpp>
#include <gmi/rl/sac.hpp>
#include <gmi/runtime/launcher.hpp>
#include <gmi/runtime/supervisor.hpp>

#include "comm/fork_util.hpp"

namespace {
using namespace gmi;
using nets = rl::sac_networks<3, 1, 16>;
using trainer = rl::sac_trainer<envs::pendulum, nets>;
using detail::split_transport_on_device;

std::string refusal(split_transport_choice c, bool gpu_gmis, int gpus) {
  try {
    (void)split_transport_on_device(c, gpu_gmis, gpus);
  } catch (const gmi::config_error& e) {
    return e.what();
  }
  return "";
}

// The learner's weights (actor, critics, targets) and counters after a split run of 1 learner and `actors` actors
// as host GMIs (threads), over the messages or over host-memory channels.
struct split_run {
  std::vector<float> weights;
  std::size_t env_steps = 0;
  std::uint64_t updates = 0, episodes = 0;
};
split_run run_split(int actors, std::size_t env_steps, bool channels) {
  rl::sac_config c;
  c.batch = 32;
  c.warmup_steps = 128;
  c.replay_capacity = 4000;
  constexpr int envs = 3;
  detail::split_channel_spec spec;
  spec.tag = comm::unique_tag("sac-split-test");
  spec.actors = actors;
  spec.envs = envs;
  spec.steps = detail::offpolicy_split_steps;
  spec.row_floats = std::uint32_t(trainer::packed_width);
  spec.weight_floats = trainer::actor_net::param_count;
  spec.placement = comm::payload_placement::host;
  spec.across_processes = false;
  spec.timeout = std::chrono::seconds(20);
  split_run out;
  runtime::thread_group g(runtime::launch_spec::uniform(0, actors + 1), [&](runtime::context& ctx) {
    if (ctx.rank() == 0) {
      trainer eng(c, envs, 100);
      std::optional<detail::split_channels_learner> ch;
      if (channels) ch.emplace(spec, nullptr);
      detail::split_learner<trainer> l(eng, ctx, ch ? &*ch : nullptr);
      while (eng.env_steps() < env_steps) l.step();
      out.episodes = l.read_stats().episodes;
      l.finish();
      out.env_steps = eng.env_steps();
      out.updates = eng.updates();
      const auto add = [&](auto s) { out.weights.insert(out.weights.end(), s.data(), s.data() + s.size()); };
      add(eng.actor_params());
      for (int k = 0; k < 2; ++k) add(eng.critic_params(k));
      for (int k = 0; k < 2; ++k) add(eng.target_params(k));
    } else {
      trainer eng(detail::split_actor_config(c), envs, 100 + std::uint64_t(ctx.rank()));
      std::optional<detail::split_channels_actor> ch;
      if (channels) ch.emplace(spec, ctx.rank(), nullptr);
      detail::split_actor_run(eng, ctx, ch ? &*ch : nullptr, envs);
    }
  });
  (void)g.wait_or_throw();
  return out;
}
}  // namespace

TEST_SUITE("sac") {
  // auto: device for GPU GMIs of one GPU, host otherwise; device asked where it cannot run: one line each.
  TEST_CASE("sac.split_transport.choice_and_refusals") {
    CHECK(split_transport_on_device(split_transport_choice::automatic, true, 1));
    CHECK_FALSE(split_transport_on_device(split_transport_choice::automatic, true, 2));
    CHECK_FALSE(split_transport_on_device(split_transport_choice::automatic, false, 1));
    CHECK_FALSE(split_transport_on_device(split_transport_choice::host, true, 1));
    CHECK(split_transport_on_device(split_transport_choice::device, true, 1));
    CHECK(refusal(split_transport_choice::device, false, 1) ==
          "--split-transport device on: got \"host GMIs (--partition cpu_cores)\", need GPU GMIs (--partition none or mps); "
          "host GMIs use --split-transport host");
    CHECK(refusal(split_transport_choice::device, true, 2) ==
          "--split-transport device with GMIs on GPUs: got 2, need 1, or GMIs that see every GPU (--partition none: "
          "peer copies into the learner's GPU); --split-transport host across GPUs under other partitions");
    CHECK(refusal(split_transport_choice::host, false, 1).empty());
    // Over several GPUs with every GPU visible to each GMI (--partition none): possible, the paths decided at start.
    CHECK(split_transport_on_device(split_transport_choice::automatic, true, 2, true));
    CHECK(split_transport_on_device(split_transport_choice::device, true, 4, true));
    CHECK_FALSE(split_transport_on_device(split_transport_choice::host, true, 2, true));
    CHECK(parse_choice("--split-transport", "device", split_transport_names) == split_transport_choice::device);
    CHECK_THROWS_WITH_AS((void)parse_choice("--split-transport", "peer", split_transport_names),
                         doctest::Contains("--split-transport"), gmi::config_error);
  }

  // Each actor's path over several GPUs (split_paths.hpp) from a peer table: the learner's GPU, peer copies where the
  // GPUs have peer access, host messages for all as soon as one actor has no device path; the lines name each actor.
  TEST_CASE("sac.split_transport.paths_over_gpus") {
    using detail::split_gmi_place;
    using detail::split_path;
    // GPUs 0..3: 0 <-> 1 and 2 <-> 3 reach each other, nothing else (two PCIe switches).
    const detail::peer_query pairs = [](int from, int to) { return from / 2 == to / 2 && from != to; };
    const split_gmi_place learner{0, 0, 4};
    const std::vector<split_gmi_place> near{{0, 0, 4}, {1, 1, 4}, {1, 1, 4}};
    const auto p = detail::plan_split_paths(split_transport_choice::automatic, learner, near, pairs);
    CHECK(p.device);
    CHECK(p.peer);
    CHECK(p.paths == std::vector<split_path>{split_path::same_gpu, split_path::peer, split_path::peer});
    REQUIRE(p.lines.size() == 3);
    CHECK(p.lines[0] == "actor GMI 1 on GPU 0: device transport (the learner's GPU)");
    CHECK(p.lines[1] == "actor GMI 2 on GPU 1: device transport, peer copies into GPU 0's memory");
    // The same actors with the host path asked for (the measurement's twin): host messages, no peer.
    const auto h = detail::plan_split_paths(split_transport_choice::host, learner, near, pairs);
    CHECK_FALSE(h.device);
    CHECK_FALSE(h.peer);
    CHECK(h.lines[1] == "actor GMI 2 on GPU 1: host messages (--split-transport host)");
    // An actor on GPU 2 (no peer access to GPU 0): every actor falls back to host messages, each line says why.
    const std::vector<split_gmi_place> far{{1, 1, 4}, {2, 2, 4}};
    const auto f = detail::plan_split_paths(split_transport_choice::automatic, learner, far, pairs);
    CHECK_FALSE(f.device);
    CHECK_FALSE(f.peer);
    CHECK(f.paths == std::vector<split_path>{split_path::peer, split_path::host});
    CHECK(f.lines[0] == "actor GMI 1 on GPU 1: host messages (actor GMI 2 has no device path; a run's actors share one "
                        "transport)");
    CHECK(f.lines[1] == "actor GMI 2 on GPU 2: host messages (no peer access from GPU 2 to GPU 0)");
    // Device asked where an actor has no device path: one line naming the actor, its GPU and why.
    CHECK_THROWS_WITH_AS((void)detail::plan_split_paths(split_transport_choice::device, learner, far, pairs),
                         "--split-transport device with actor GMI 2 on GPU 2: got \"host messages (no peer access from "
                         "GPU 2 to GPU 0)\", need peer access to the learner's GPU 0 (or --split-transport auto or host)",
                         gmi::config_error);
    // Processes that see one GPU each (MPS, MIG): host messages across GPUs even where the GPUs have peer access;
    // an actor on the learner's GPU keeps the device path only when every actor does.
    const std::vector<split_gmi_place> mps{{0, 0, 1}, {1, 0, 1}};
    const auto m = detail::plan_split_paths(split_transport_choice::automatic, {0, 0, 1}, mps, pairs);
    CHECK_FALSE(m.device);
    CHECK(m.paths == std::vector<split_path>{split_path::same_gpu, split_path::host});
    CHECK(m.lines[1] == "actor GMI 2 on GPU 1: host messages (its process or the learner's sees one GPU: MPS or MIG)");
    const std::vector<split_gmi_place> one_gpu{{0, 0, 1}, {0, 0, 1}};
    CHECK(detail::plan_split_paths(split_transport_choice::automatic, {0, 0, 1}, one_gpu, pairs).device);
    CHECK(detail::plan_split_paths(split_transport_choice::device, {0, 0, 1}, one_gpu, pairs).device);
    // The peer query is asked about (actor's ordinal, learner's ordinal), not the launcher's numbering.
    std::vector<std::pair<int, int>> asked;
    const detail::peer_query record = [&](int from, int to) {
      asked.emplace_back(from, to);
      return true;
    };
    (void)detail::plan_split_paths(split_transport_choice::automatic, {3, 7, 8}, std::vector<split_gmi_place>{{5, 2, 8}},
                                   record);
    CHECK(asked == std::vector<std::pair<int, int>>{{2, 7}});
    // No actors, or more than 255: refused.
    CHECK_THROWS_AS((void)detail::plan_split_paths(split_transport_choice::automatic, learner, {}, pairs),
                    gmi::config_error);
  }

  // The note a round carries: the episode sums bit for bit (a NaN's bits too) and the round.
  TEST_CASE("sac.split_transport.round_note_round_trips") {
    const detail::split_round_note n{3.0, -1234.5678901234, 600.25, 0xfedcba9876ull};
    const auto back = detail::split_round_note::unpack(n.pack());
    CHECK(std::memcmp(&back.return_sum, &n.return_sum, sizeof(double)) == 0);
    CHECK(back.episodes == 3.0);
    CHECK(back.length_sum == 600.25);
    CHECK(back.round == 0xfedcba9876ull);
    const detail::split_round_note q{std::numeric_limits<double>::quiet_NaN(), 0, 0, 0};
    CHECK(std::isnan(detail::split_round_note::unpack(q.pack()).episodes));
  }

  // The columns' layout (the learner's table and the device transport's): offsets, widths, the total, and
  // rows_to_columns placing each row's fields there.
  TEST_CASE("sac.split_transport.column_layout") {
    const std::size_t n = 24, O = 3, A = 1, W = rl::sac_packed::width(O, A);
    const auto off = rl::sac_packed::column_offsets(n, O, A);
    CHECK(off == std::array<std::size_t, 5>{0, 72, 96, 120, 192});
    std::size_t total = 0;
    for (int k = 0; k < 5; ++k) {
      CHECK(off[std::size_t(k)] == total);
      total += n * rl::sac_packed::column_width(k, O, A);
    }
    CHECK(total == n * W);
    std::vector<float> rows(n * W), cols(n * W, -1.0f);
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = float(i);
    rl::sac_packed::rows_to_columns(n, O, A, rows.data(), cols.data());
    const std::size_t k = 17;  // row 17: obs, act, rew, next, term
    CHECK(cols[off[0] + k * O + 2] == rows[k * W + 2]);
    CHECK(cols[off[1] + k] == rows[k * W + 3]);
    CHECK(cols[off[2] + k] == rows[k * W + 4]);
    CHECK(cols[off[3] + k * O] == rows[k * W + 5]);
    CHECK(cols[off[4] + k] == rows[k * W + 8]);
    CHECK(cols.back() == rows[(n - 1) * W + 8]);
  }

  // The host twin of the device transport: 1 learner and 3 actors as host GMIs, the rounds through host-memory
  // channels and the weights through a board, against the messages: the same learner, bit for bit.
  TEST_CASE("sac.split_transport.host_channels_match_messages") {
    const split_run m = run_split(3, 1500, false);
    const split_run ch = run_split(3, 1500, true);
    CHECK(m.env_steps == ch.env_steps);
    CHECK(m.updates == ch.updates);
    CHECK(m.updates > 100);
    CHECK(m.episodes == ch.episodes);
    REQUIRE(m.weights.size() == ch.weights.size());
    CHECK(std::memcmp(m.weights.data(), ch.weights.data(), m.weights.size() * sizeof(float)) == 0);
    // The check can fail: a different actor seed gives other weights.
    const split_run one = run_split(2, 1500, true);
    CHECK(one.weights != ch.weights);
  }

  // A lost actor: its process SIGKILLed after 2 rounds, while the learner waits for the third; the learner's
  // error names the actor GMI and its round within the timeout (plus slack), instead of hanging.
  TEST_CASE("sac.split_transport.lost_actor_named") {
    detail::split_channel_spec s;
    s.tag = comm::unique_tag("sac-split-lost");
    s.actors = 1;
    s.envs = 4;
    s.steps = 8;
    s.row_floats = 9;
    s.weight_floats = 100;
    s.placement = comm::payload_placement::host;
    s.across_processes = true;
    s.timeout = std::chrono::seconds(3);
    detail::split_channels_learner learner(s, nullptr);
    const pid_t child = gmi_test::fork_child([&] {
      detail::split_channels_actor actor(s, 1, nullptr);
      std::vector<float> rows(std::size_t(s.envs) * s.steps * s.row_floats), w(s.weight_floats);
      for (std::uint64_t r = 0; r < 2; ++r) {
        for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = float(r * 1000 + i);
        actor.send(rows.data(), {}, r);
        actor.read_weights(w.data(), r + 1);
        if (w[7] != float(r + 7)) return 2;
      }
      ::raise(SIGKILL);  // lost while it collects round 2
      return 0;
    });
    std::vector<float> w(s.weight_floats);
    for (std::uint64_t r = 0; r < 2; ++r) {
      (void)learner.take(1, r);
      CHECK(learner.payload(1)[5] == float(r * 1000 + 5));
      for (std::size_t i = 0; i < w.size(); ++i) w[i] = float(r + i);
      CHECK(learner.publish(w.data()) == r + 1);
      learner.release(1);
    }
    int code = 0;  // reaped meanwhile, as a launcher reaps its GMIs (a zombie's pid still answers)
    std::thread reaper([&] { code = gmi_test::reap(child); });
    const auto t0 = std::chrono::steady_clock::now();
    std::string what;
    try {
      (void)learner.take(1, 2);
    } catch (const gmi::error& e) {
      what = e.what();
    }
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    reaper.join();
    CHECK(code == -SIGKILL);
    INFO(what);
    CHECK(what.find("split roles (host channels transport): actor GMI 1 (waiting for its round 2)") != std::string::npos);
    CHECK(what.find("died") != std::string::npos);
    CHECK(waited < 3.0 + 2.0);
  }
}
