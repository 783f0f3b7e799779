#pragma once
// The off-policy layout with split roles (--split-roles, host GMIs or GPU GMIs): GMI 0 learns, GMIs 1.. only act.
// An actor steps its environments with its copy of the actor network for offpolicy_split_steps steps and sends the
// packed transitions (collect_packed of rl::sac_trainer, or of rl::sac_device_trainer: stepped on the device and
// copied back) and its finished episodes to the learner through the runtime context's point-to-point messages; the
// learner inserts each actor's transitions into its replay table (one writer per actor; on a GPU one upload and the
// device table's insert kernel, then batches sampled on the device) and runs the gradient steps due. Each round the learner answers every actor with its
// current actor weights (or stop) before it inserts and updates, so the actors collect the next round while it
// learns (the transitions are one round behind the weights). The learner runs offpolicy_loop.hpp's loop over a
// round-per-step adapter; its stop decision reaches the actors in the reply after the round in flight.
// With the device transport (split_channels.hpp, --split-transport device) the transitions and the weights go through
// channels into the learner's device memory instead, in the same order: the messages carry only the answer's header.

#include <signal.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/pipeline/offpolicy_loop.hpp>
#include <gmi/pipeline/restart.hpp>
#include <gmi/pipeline/split_channels.hpp>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/pipeline/train_loop.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/sac_config.hpp>
#include <gmi/runtime/context.hpp>

namespace gmi::detail {

// Steps an actor collects between messages.
inline constexpr int offpolicy_split_steps = 8;

// What a GMI of an off-policy run does: every GMI learns (data-parallel learners) unless roles are split; then
// GMI 0 learns and GMIs 1.. act. Split roles need a learner and at least one actor.
enum class offpolicy_role { learner, actor };
[[nodiscard]] inline offpolicy_role offpolicy_role_of(int rank, int world, bool split) {
  gmi::require(world >= 1 && rank >= 0 && rank < world, "off-policy GMI rank", rank,
               "0 .. " + std::to_string(world - 1) + " of " + std::to_string(world) + " GMIs");
  gmi::require(!split || world >= 2, "--split-roles with GMIs", world, ">= 2 (GMI 0 learns, the others act)");
  return split && rank != 0 ? offpolicy_role::actor : offpolicy_role::learner;
}
[[nodiscard]] inline const char* name_of(offpolicy_role r) noexcept {
  return r == offpolicy_role::learner ? "learner" : "actor";
}
// An actor's SAC settings: it keeps no replay worth the name (a table of warmup_steps items, never sampled).
[[nodiscard]] inline rl::sac_config split_actor_config(rl::sac_config c) {
  c.replay_capacity = c.warmup_steps;
  return c;
}

struct split_actor_note {  // an actor's message header, then its packed transitions
  double episodes = 0, return_sum = 0, length_sum = 0;
  std::uint32_t envs = 0, horizon = 0;
};
struct split_learner_note {  // the learner's answer header, then the actor weights unless stop
  std::uint32_t stop = 0, random = 0;
};

// The learner as an engine of offpolicy_loop: step() is one round over every actor.
template <class Engine>
class split_learner {
 public:
  // `ch`: the device transport's learner end (split_channels.hpp), or null for the messages.
  split_learner(Engine& eng, runtime::context& ctx, split_channels_learner* ch = nullptr) : eng_(eng), ctx_(ctx), ch_(ch) {}

  void step() {
    ctx_.heartbeat();
    if (ch_) return step_over_channels();
    inbox_.clear();
    std::size_t arriving = 0;
    for (int a = 1; a < ctx_.world(); ++a) {
      inbox_.push_back(ctx_.recv(a));
      const auto& m = inbox_.back();
      gmi::require(m.size() >= sizeof(split_actor_note), "split-roles message from GMI " + std::to_string(a) + " bytes",
                   m.size(), ">= " + std::to_string(sizeof(split_actor_note)));
      split_actor_note n;
      std::memcpy(&n, m.data(), sizeof n);
      arriving += std::size_t(n.envs) * n.horizon;
      add_episodes(n.episodes, n.return_sum, n.length_sum);
    }
    // The answer before the updates: the actors collect the next round meanwhile.
    answer(false, eng_.env_steps() + arriving < eng_.config().warmup_steps);
    for (int a = 1; a < ctx_.world(); ++a) {
      const auto& m = inbox_[std::size_t(a - 1)];
      split_actor_note n;
      std::memcpy(&n, m.data(), sizeof n);
      const std::size_t floats = (m.size() - sizeof n) / sizeof(float);
      rows_.resize(floats);
      std::memcpy(rows_.data(), m.data() + sizeof n, floats * sizeof(float));
      eng_.insert_packed(a, rows_, n.envs, n.horizon);
    }
  }

  // After the loop: the round in flight is read and every actor told to stop.
  void finish() {
    for (int a = 1; a < ctx_.world(); ++a) {
      if (!ch_) {
        (void)ctx_.recv(a);
        continue;
      }
      (void)ch_->take(a, round_);
      ch_->release(a);
    }
    answer(true, false);
    if (ch_) ch_->drain();
  }

  rl::episode_stats read_stats() {
    const rl::episode_stats s = stats_;
    stats_ = {};
    return s;
  }
  [[nodiscard]] std::size_t env_steps() const noexcept { return eng_.env_steps(); }
  [[nodiscard]] std::uint64_t updates() const noexcept { return eng_.updates(); }
  auto last_update() { return eng_.last_update(); }
  double evaluate(int envs, std::uint64_t seed) { return eng_.evaluate(envs, seed); }

 private:
  // The device transport's round: every actor's slot taken (its note read on the host), the answer, then each slot
  // inserted where the actor wrote it and given back after the insert.
  void step_over_channels() {
    const split_channel_spec& s = ch_->spec();
    std::size_t arriving = 0;
    for (int a = 1; a < ctx_.world(); ++a) {
      const split_round_note n = ch_->take(a, round_);
      arriving += std::size_t(s.envs) * s.steps;
      add_episodes(n.episodes, n.return_sum, n.length_sum);
    }
    answer(false, eng_.env_steps() + arriving < eng_.config().warmup_steps);
    for (int a = 1; a < ctx_.world(); ++a) {
      split_insert_round(eng_, a, ch_->payload(a), s.envs, s.steps);
      ch_->release(a);
    }
    ++round_;
  }

  void add_episodes(double episodes, double return_sum, double length_sum) {
    stats_.episodes += static_cast<std::uint64_t>(episodes);
    stats_.return_sum += return_sum;
    stats_.length_sum += length_sum;
  }

  void answer(bool stop, bool random) {
    if (ch_) {  // the weights on the board, the header alone through the host
      if (!stop) (void)ch_->publish(split_weights_source(eng_));
      const split_learner_note note{stop ? 1u : 0u, random ? 1u : 0u};
      for (int a = 1; a < ctx_.world(); ++a)
        ctx_.send(std::span<const std::byte>(reinterpret_cast<const std::byte*>(&note), sizeof note), a);
      return;
    }
    const auto p = eng_.actor_params();
    const split_learner_note note{stop ? 1u : 0u, random ? 1u : 0u};
    out_.assign(sizeof note + (stop ? 0 : p.size() * sizeof(float)), std::byte{0});
    std::memcpy(out_.data(), &note, sizeof note);
    if (!stop) std::memcpy(out_.data() + sizeof note, p.data(), p.size() * sizeof(float));
    for (int a = 1; a < ctx_.world(); ++a) ctx_.send(std::span<const std::byte>(out_), a);
  }

  Engine& eng_;
  runtime::context& ctx_;
  split_channels_learner* ch_;
  std::uint64_t round_ = 0;
  std::vector<std::vector<std::byte>> inbox_;
  std::vector<float> rows_;
  std::vector<std::byte> out_;
  rl::episode_stats stats_;
};

// GMI 0's part: the loop over the learner adapter, then the actors stopped.
template <class Pipeline, class Engine>
train_result split_learner_run(Engine& eng, runtime::context& ctx, const train_config<Pipeline>& o,
                               const std::string& where, const char* impl, split_channels_learner* ch = nullptr) {
  split_learner<Engine> learner(eng, ctx, ch);
  const std::string who = "split roles: GMI 0 learns, " + std::to_string(ctx.world() - 1) + " actor GMI" +
                          (ctx.world() > 2 ? "s" : "") + " (the envs below each, " +
                          std::to_string(offpolicy_split_steps) + " steps a message; transport " +
                          (ch ? (ch->spec().peer ? "device, peer copies from other GPUs" : ch->spec().name())
                              : "host messages") + ") on " + where;
  const train_result r = offpolicy_loop<Pipeline>(learner, o, where, impl, solo_group{&ctx}, who, "off_policy_split");
  learner.finish();
  return r;
}

// The learner's answer to an actor: the header (stop, random actions), then the weights unless stop (messages).
inline split_learner_note split_read_answer(const std::vector<std::byte>& reply) {
  gmi::require(reply.size() >= sizeof(split_learner_note), "split-roles answer bytes", reply.size(),
               ">= " + std::to_string(sizeof(split_learner_note)));
  split_learner_note n;
  std::memcpy(&n, reply.data(), sizeof n);
  return n;
}

// GMIs 1..'s part: collect, send, take the learner's weights, until it says stop. `ch`: the device transport's
// actor end (split_channels.hpp), or null for the messages. The test hook GMI_TEST_KILL_AT=rank:round (restart.hpp):
// that actor collects half of that round, then SIGKILLs itself (lost mid-write; GMIs as processes).
template <class Engine>
void split_actor_run(Engine& eng, runtime::context& ctx, split_channels_actor* ch = nullptr,
                     std::size_t envs = 0) {
  bool random = true;
  std::vector<float> rows, p;
  std::vector<std::byte> msg;
  split_round_buffer<Engine> round_rows;
  const std::optional<kill_at> kill = test_kill_from_env();
  for (std::uint64_t round = 0;; ++round) {
    if (kill && kill->rank == ctx.rank() && kill->iteration == round) {
      (void)round_rows.collect(eng, random, envs, offpolicy_split_steps / 2, [&] { ctx.heartbeat(); });
      std::fprintf(stderr, "gmi: %s killed by the test hook %s=%s halfway through round %llu\n",
                   ctx.id().describe().c_str(), test_kill_var, std::getenv(test_kill_var),
                   static_cast<unsigned long long>(round));
      std::fflush(stderr);
      ::raise(SIGKILL);
    }
    if (ch) {
      const float* payload = round_rows.collect(eng, random, envs, offpolicy_split_steps, [&] { ctx.heartbeat(); });
      ch->send(payload, eng.read_stats(), round);
    } else {
      rows.clear();
      for (int t = 0; t < offpolicy_split_steps; ++t) {
        eng.collect_packed(random, rows);
        ctx.heartbeat();
      }
      const rl::episode_stats s = eng.read_stats();
      split_actor_note note{double(s.episodes), s.return_sum, s.length_sum,
                            std::uint32_t(rows.size() / Engine::packed_width / offpolicy_split_steps),
                            std::uint32_t(offpolicy_split_steps)};
      msg.assign(sizeof note + rows.size() * sizeof(float), std::byte{0});
      std::memcpy(msg.data(), &note, sizeof note);
      std::memcpy(msg.data() + sizeof note, rows.data(), rows.size() * sizeof(float));
      ctx.send(std::span<const std::byte>(msg), 0);
    }
    const std::vector<std::byte> reply = ctx.recv(0);
    const split_learner_note n = split_read_answer(reply);
    if (n.stop) break;
    random = n.random != 0;
    if (ch) {
      split_read_weights(eng, *ch, round + 1, p);
      continue;
    }
    const std::size_t floats = (reply.size() - sizeof n) / sizeof(float);
    p.resize(floats);
    std::memcpy(p.data(), reply.data() + sizeof n, floats * sizeof(float));
    eng.set_actor_params(p);
  }
  if (ch) ch->close();
  ctx.flush(ctx.timeout());
}

}  // namespace gmi::detail
