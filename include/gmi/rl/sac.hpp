#pragma once
// Soft actor-critic on host threads (exec::host): environments stepped by rl::env_batch, transitions kept in a
// replay::host_table (columns obs, action, reward, next_obs, terminated; drawn uniformly), twin critics with
// Polyak-averaged targets, a tanh-squashed Gaussian actor and automatic entropy tuning (sac_loss.hpp has the
// gradients). sac.cuh has the device path. set_sync makes it one of data-parallel learners (sac_sync.hpp).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gmi/concepts/env.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/core/span.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/nn/adam.hpp>
#include <gmi/replay/host_table.hpp>
#include <gmi/replay/rate_limiter.hpp>
#include <gmi/replay/spec.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/sac_config.hpp>
#include <gmi/rl/sac_loss.hpp>
#include <gmi/rl/sac_nstep.hpp>
#include <gmi/rl/sac_packed.hpp>
#include <gmi/rl/sac_sync.hpp>

namespace gmi::rl {

// What the last gradient step measured (means over its batch).
struct sac_update_stats {
  double critic_loss = 0;  // 0.5 (Q - y)^2, averaged over both critics
  double actor_loss = 0;
  double log_prob = 0;
  double alpha = 0;
};

template <gmi::env E, class Nets = sac_networks<E::obs_dim, E::act_dim, 256>>
class sac_trainer {
 public:
  static_assert(Nets::obs_dim == E::obs_dim && Nets::act_dim == E::act_dim,
                "gmi::rl::sac_trainer: the networks' obs_dim/act_dim must equal the environment's");
  static_assert(std::is_same_v<typename Nets::scalar, float>, "gmi::rl::sac_trainer: the networks must use float");
  using env_type = E;
  using networks = Nets;
  using actor_net = typename Nets::actor;
  using critic_net = typename Nets::critic;
  static constexpr int O = E::obs_dim, A = E::act_dim, X = O + A;

  // Throws config_error (one line) for a bad config, num_envs < 1 or a table that does not fit the spec rules.
  sac_trainer(sac_config config, int num_envs, std::uint64_t seed, typename E::params params = {},
              exec::host policy = {})
      : cfg_((config.validate(), config)),
        seed_(seed),
        envs_(num_envs, seed, params, policy),
        table_(table_spec_of(cfg_), replay::rate_limiter::min_size(std::size_t(cfg_.batch))),
        writer_(table_.make_writer(std::size_t(num_envs))),
        grads_(policy),
        actor_(sac_initial_params<actor_net>(seed, 0)),
        critic1_(sac_initial_params<critic_net>(seed, 1)),
        critic2_(sac_initial_params<critic_net>(seed, 2)),
        target1_(critic1_),
        target2_(critic2_),
        actor_opt_(adam_of(cfg_.actor_lr), actor_.size(), policy),
        critic1_opt_(adam_of(cfg_.critic_lr), critic1_.size(), policy),
        critic2_opt_(adam_of(cfg_.critic_lr), critic2_.size(), policy),
        alpha_opt_(nn::adam_config{cfg_.alpha_lr, 0.9f, 0.999f, 1e-8f, std::nullopt}, 1, policy),
        log_alpha_{std::log(cfg_.initial_alpha)} {
    gmi::require(cfg_.replay_shards == 1, "sac.replay_shards", cfg_.replay_shards,
                 "1 on the host trainer (sharded replay and its placement are the GPU trainer's)");
    const auto n = std::size_t(num_envs);
    obs_.resize(n * O);
    next_obs_.resize(n * O);
    final_obs_.resize(n * O);
    actions_.resize(n * A);
    rewards_.resize(n);
    terminated_.resize(n);
    truncated_.resize(n);
    terminated_f_.resize(n);
    envs_.reset({obs_.data(), obs_.size()});
  }

  // Collects one step of every environment (uniform random actions until warmup_steps transitions are stored,
  // the actor's draws after), inserts the transitions, then runs the gradient steps that are due.
  // With n_step > 1 the step's transitions go into the n-step ring and each environment's transition of n - 1 steps
  // earlier, folded (sac_nstep.hpp), into the table; the warm-up counts transitions in the table.
  void step() {
    const std::size_t n = std::size_t(envs_.num_envs());
    collect_once(env_steps_ < cfg_.warmup_steps);
    replay::rollout r;
    r.horizon = 1;
    r.envs = n;
    r.columns = {obs_.data(), actions_.data(), rewards_.data(), stored_next_.data(), terminated_f_.data()};
    if (cfg_.n_step == 1 || fold_nstep(n, r)) {
      table_.insert(writer_, r);
      inserted_ += n;
    }
    obs_.swap(next_obs_);
    env_steps_ += n;
    run_owed_updates(n);
  }

  // --- split roles: actors collect, a learner learns (pipeline/offpolicy_split.hpp)
  // The width of one packed transition: obs, action, reward, next obs, terminated.
  static constexpr std::size_t packed_width = sac_packed::width(O, A);

  // An actor's step: every environment one step (uniform random actions when `random`, else the actor's draws),
  // the transitions appended to `rows` (packed_width floats each, environment after environment), no replay.
  void collect_packed(bool random, std::vector<float>& rows) {
    require_one_step("sac_trainer::collect_packed");
    const std::size_t n = std::size_t(envs_.num_envs());
    collect_once(random);
    sac_packed::append_rows(n, O, A, obs_.data(), actions_.data(), rewards_.data(), stored_next_.data(),
                            terminated_f_.data(), rows);
    obs_.swap(next_obs_);
    env_steps_ += n;
  }

  // A learner's insert of an actor's packed rows ([horizon][envs], as collect_packed appends them over `horizon`
  // steps of `envs` environments), through that actor's own writer; then the gradient steps now due
  // (sac_config::updates_for, counted against this learner's vector step, once warmup_steps transitions arrived).
  void insert_packed(int actor, std::span<const float> rows, std::size_t envs, std::size_t horizon) {
    require_one_step("sac_trainer::insert_packed");
    const std::size_t n = envs * horizon;
    gmi::require(rows.size() == n * packed_width, "sac_trainer::insert_packed rows", rows.size(),
                 std::to_string(n * packed_width) + " (" + std::to_string(n) + " transitions)");
    while (writers_.size() <= std::size_t(actor)) writers_.emplace_back();
    auto& w = writers_[std::size_t(actor)];
    if (!w) w.emplace(table_.make_writer(envs));
    cols_.resize(n * packed_width);
    float* obs = cols_.data();
    float* act = obs + n * O;
    float* rew = act + n * A;
    float* nxt = rew + n;
    float* term = nxt + n * O;
    sac_packed::rows_to_columns(n, O, A, rows.data(), obs);
    replay::rollout ro;
    ro.horizon = horizon;
    ro.envs = envs;
    ro.columns = {obs, act, rew, nxt, term};
    table_.insert(*w, ro);
    env_steps_ += n;
    inserted_ += n;
    run_owed_updates(n);
  }

  // An actor's copy of the learner's actor weights.
  void set_actor_params(std::span<const float> p) {
    gmi::require(p.size() == actor_.size(), "sac_trainer::set_actor_params size", p.size(), std::to_string(actor_.size()));
    std::memcpy(actor_.data(), p.data(), p.size() * sizeof(float));
  }

  // Steps until at least env_steps transitions were collected in total.
  void train(std::size_t env_steps) {
    while (env_steps_ < env_steps) step();
  }

  // Actions for n observations [n][O]: tanh(mean) when deterministic, else a draw (noise stream `round`).
  void act(const float* obs, std::size_t n, bool deterministic, float* actions, std::uint64_t round = 0) const {
    const float* p = actor_.data();
    const float lo = cfg_.log_std_min, hi = cfg_.log_std_max;
    const std::uint64_t s = seed_ ^ 0xAC7104ull;
    exec::for_each(envs_.policy(), n, [=](std::size_t i) {
      float head[2 * A], eps[A];
      actor_net::forward(p, obs + i * O, head);
      gmi::rng r(s, round * 0x100000000ull + i);
      for (int k = 0; k < A; ++k) eps[k] = deterministic ? 0.0f : r.normal();
      squashed_draw<float, A> d;
      d.compute(head, eps, lo, hi);
      for (int k = 0; k < A; ++k) actions[i * A + k] = d.action[k];
    });
  }

  // The mean undiscounted return of the deterministic policy over one episode in each of `envs` fresh
  // environments (seeded apart from training), each capped at the task's max_steps.
  double evaluate(int envs, std::uint64_t seed) const {
    env_batch<E> eval(envs, seed, envs_.params(), envs_.policy());
    const auto n = std::size_t(envs);
    std::vector<float> o(n * O), a(n * A), rew(n);
    std::vector<std::uint8_t> term(n), trunc(n), done(n, 0);
    std::vector<double> ret(n, 0.0);
    eval.reset({o.data(), o.size()});
    for (int t = 0; t < envs_.params().max_steps; ++t) {
      act(o.data(), n, true, a.data());
      eval.step({a.data(), a.size()}, {o.data(), o.size()}, {rew.data(), n}, {term.data(), n}, {trunc.data(), n});
      for (std::size_t i = 0; i < n; ++i) {
        if (done[i]) continue;
        ret[i] += rew[i];
        done[i] = term[i] || trunc[i];
      }
    }
    double sum = 0;
    for (double r : ret) sum += r;
    return sum / double(n);
  }

  // Episodes finished in training since the previous read.
  episode_stats read_stats() { return envs_.read_stats(); }

  // Joins a group of data-parallel learners before the first update: the weights become rank 0's, and every
  // gradient (both critics', the actor's with the temperature's) is averaged over the group before its step.
  // Every learner of the group must make the same number of updates (same envs, warmup and updates_per_step).
  void set_sync(sac_sync s) {
    s.validate();
    gmi::require(updates_ == 0, "sac_trainer::set_sync after updates", updates_, "0 (join the group first)");
    sync_ = std::move(s);
    const std::size_t P = actor_.size(), C = critic1_.size();
    std::vector<float> all(P + 2 * C);
    std::memcpy(all.data(), actor_.data(), P * sizeof(float));
    std::memcpy(all.data() + P, critic1_.data(), C * sizeof(float));
    std::memcpy(all.data() + P + C, critic2_.data(), C * sizeof(float));
    sync_.broadcast_from_first(all);
    std::memcpy(actor_.data(), all.data(), P * sizeof(float));
    std::memcpy(critic1_.data(), all.data() + P, C * sizeof(float));
    std::memcpy(critic2_.data(), all.data() + P + C, C * sizeof(float));
    target1_ = critic1_;
    target2_ = critic2_;
  }
  [[nodiscard]] const sac_sync& sync() const noexcept { return sync_; }

  [[nodiscard]] const sac_config& config() const noexcept { return cfg_; }
  [[nodiscard]] std::size_t env_steps() const noexcept { return env_steps_; }
  // Transitions put into the table (env_steps() less the n_step - 1 vector steps the n-step ring holds back).
  [[nodiscard]] std::size_t inserted() const noexcept { return inserted_; }
  [[nodiscard]] std::uint64_t updates() const noexcept { return updates_; }
  [[nodiscard]] float alpha() const noexcept { return std::exp(log_alpha_[0]); }
  [[nodiscard]] const sac_update_stats& last_update() const noexcept { return last_; }
  [[nodiscard]] replay::host_table& table() noexcept { return table_; }
  [[nodiscard]] host_span<const float> actor_params() const noexcept { return {actor_.data(), actor_.size()}; }
  [[nodiscard]] host_span<const float> critic_params(int k) const noexcept {
    const auto& c = k == 0 ? critic1_ : critic2_;
    return {c.data(), c.size()};
  }
  [[nodiscard]] host_span<const float> target_params(int k) const noexcept {
    const auto& c = k == 0 ? target1_ : target2_;
    return {c.data(), c.size()};
  }

  // One gradient step: both critics on soft TD targets, the actor on the updated critics, the temperature,
  // then the Polyak update of the targets.
  // With global sampling (sync().global()) this learner's share of the group's batch, its gradients weighted by it.
  void update() {
    auto B = std::size_t(cfg_.batch);
    std::uint64_t draw_seed = seed_ * 0x9E3779B97F4A7C15ull + updates_;
    float weight = 1.0f;
    if (sync_.global()) {
      const auto d = sync_.draw_globally(table_.size(), cfg_.batch, global_);
      weight = d.weight;
      B = d.draws;
      draw_seed = d.seed;
      if (B == 0) return update_without_draws();
    }
    table_.sample(replay::sampler::uniform(), B, 1, draw_seed, batch_);
    const float* obs = batch_.template column<float>(0);
    const float* act = batch_.template column<float>(1);
    const float* rew = batch_.template column<float>(2);
    const float* nxt = batch_.template column<float>(3);
    const float* term = batch_.template column<float>(4);
    eps_.resize(B * A);
    eps_next_.resize(B * A);
    gmi::rng r(seed_ ^ 0xE95ull, 0x5AC1000000ull + updates_);
    for (float& e : eps_) e = r.normal();
    for (float& e : eps_next_) e = r.normal();
    const float alpha = this->alpha();
    y_.resize(B);
    grads_.critic_targets(actor_.data(), target1_.data(), target2_.data(), nxt, rew, term, eps_next_.data(), B, alpha,
                          cfg_.gamma, cfg_.log_std_min, cfg_.log_std_max, y_.data());
    x_.resize(B * X);
    for (std::size_t i = 0; i < B; ++i) {
      std::memcpy(&x_[i * X], obs + i * O, O * sizeof(float));
      std::memcpy(&x_[i * X + O], act + i * A, A * sizeof(float));
    }
    // Both critics' gradients (critic 2's loss does not depend on critic 1), averaged over the group, then the steps.
    const std::size_t C = critic1_.size(), P = actor_.size();
    g_critic_.resize(2 * C);
    last_.critic_loss = 0.5 * grads_.critic_loss(critic1_.data(), x_.data(), y_.data(), B, g_critic_.data());
    last_.critic_loss += 0.5 * grads_.critic_loss(critic2_.data(), x_.data(), y_.data(), B, g_critic_.data() + C);
    if (weight != 1.0f)
      for (float& g : g_critic_) g *= weight;
    sync_.average(g_critic_);
    critic1_opt_.step({critic1_.data(), C}, {g_critic_.data(), C});
    critic2_opt_.step({critic2_.data(), C}, {g_critic_.data() + C, C});
    // The actor's gradient on the updated critics, the temperature's last (loss -log_alpha (log_prob + target)).
    g_actor_.resize(P + 1);
    const auto a = grads_.actor_loss(actor_.data(), critic1_.data(), critic2_.data(), obs, eps_.data(), B, alpha,
                                     cfg_.log_std_min, cfg_.log_std_max, g_actor_.data());
    g_actor_[P] = -float(a.log_prob + double(cfg_.entropy_target(A)));
    if (weight != 1.0f)
      for (float& g : g_actor_) g *= weight;
    sync_.average(g_actor_);
    last_.actor_loss = a.loss;
    last_.log_prob = a.log_prob;
    last_.alpha = alpha;
    finish_update();
  }
  // Global draws of this learner so far (sync().global()).
  [[nodiscard]] const sac_global_counts& global_draws() const noexcept { return global_; }

 private:
  static replay::table_spec table_spec_of(const sac_config& c) {
    replay::table_spec s;
    s.columns = {{"obs", std::size_t(O), replay::dtype::f32},
                 {"action", std::size_t(A), replay::dtype::f32},
                 {"reward", 1, replay::dtype::f32},
                 {"next_obs", std::size_t(O), replay::dtype::f32},
                 {"terminated", 1, replay::dtype::f32}};
    s.capacity = c.replay_capacity;
    return s;
  }
  nn::adam_config adam_of(float lr) const { return {lr, 0.9f, 0.999f, 1e-8f, cfg_.max_grad_norm}; }

  sac_config cfg_;
  std::uint64_t seed_;
  env_batch<E> envs_;
  replay::host_table table_;
  replay::host_table::writer writer_;
  sac_gradients<Nets> grads_;
  std::vector<float> actor_, critic1_, critic2_, target1_, target2_;
  nn::adam<exec::host> actor_opt_, critic1_opt_, critic2_opt_, alpha_opt_;
  float log_alpha_[1];
  std::vector<float> obs_, next_obs_, final_obs_, actions_, rewards_, terminated_f_;
  std::vector<std::uint8_t> terminated_, truncated_;
  std::vector<float> eps_, eps_next_, y_, x_, g_critic_, g_actor_;
  replay::host_batch batch_;
  std::size_t env_steps_ = 0;
  std::uint64_t batch_steps_ = 0, updates_ = 0;
  double owed_updates_ = 0;
  sac_update_stats last_;
  sac_sync sync_;
  sac_global_counts global_;
  std::vector<float> stored_next_, cols_;
  std::vector<float> ended_f_, ring_, folded_;  // n-step: the ring (sac_nstep::ring_layout), the folded columns
  std::size_t inserted_ = 0;
  std::vector<std::optional<replay::host_table::writer>> writers_;  // a learner's, one per actor

  // One step of every environment; the transitions' columns in obs_, actions_, rewards_, stored_next_ and
  // terminated_f_ (the caller swaps obs_ and next_obs_ after using them).
  void collect_once(bool random) {
    const std::size_t n = std::size_t(envs_.num_envs());
    if (random) {
      gmi::rng r(seed_ ^ 0x3A7D0F1Bull, 0xC0113C7ull + batch_steps_);
      for (float& a : actions_) a = r.uniform(-1.0f, 1.0f);
    } else {
      act(obs_.data(), n, false, actions_.data(), batch_steps_);
    }
    envs_.step({actions_.data(), actions_.size()}, {next_obs_.data(), next_obs_.size()}, {rewards_.data(), n},
               {terminated_.data(), n}, {truncated_.data(), n}, nullptr, {final_obs_.data(), final_obs_.size()});
    // The stored next observation is the episode's last one where it ended (next_obs_ already holds the reset).
    stored_next_ = next_obs_;
    for (std::size_t i = 0; i < n; ++i) {
      if (terminated_[i] || truncated_[i]) std::memcpy(&stored_next_[i * O], &final_obs_[i * O], O * sizeof(float));
      terminated_f_[i] = terminated_[i] ? 1.0f : 0.0f;  // a time limit is not a terminal state: bootstrap
    }
    ++batch_steps_;
  }

  void require_one_step(const char* what) const {
    gmi::require(cfg_.n_step == 1, std::string(what) + " with sac.n_step", cfg_.n_step,
                 "1 (split roles send one-step transitions)");
  }

  // n-step: the step just collected (r's columns) into its ring slot; once the ring is full, r's columns become
  // each environment's folded transition of n_step - 1 steps earlier (true), else nothing is due yet (false).
  bool fold_nstep(std::size_t n, replay::rollout& r) {
    using layout = sac_nstep::ring_layout<O, A>;
    const int N = cfg_.n_step;
    const std::size_t slots = std::size_t(N) * n, slot = std::size_t(sac_nstep::slot_of(batch_steps_ - 1, N)) * n;
    ended_f_.resize(n);
    for (std::size_t i = 0; i < n; ++i) ended_f_[i] = terminated_[i] || truncated_[i] ? 1.0f : 0.0f;
    ring_.resize(layout::floats_for(slots));
    const float* cols[6] = {obs_.data(), actions_.data(), rewards_.data(), stored_next_.data(), terminated_f_.data(),
                            ended_f_.data()};
    for (int c = 0; c < 6; ++c) {
      const std::size_t w = layout::column_width(c);
      std::memcpy(ring_.data() + layout::offset(c, slots) + slot * w, cols[c], n * w * sizeof(float));
    }
    if (batch_steps_ < std::uint64_t(N)) return false;
    folded_.resize(n * (layout::width - 1));
    float *fo = folded_.data(), *fa = fo + n * O, *fr = fa + n * A, *fn = fr + n, *ft = fn + n * O;
    const sac_nstep::ring v = layout::view(ring_.data(), n, N);
    const int oldest = sac_nstep::oldest_slot(batch_steps_, N);
    for (std::size_t i = 0; i < n; ++i) sac_nstep::fold<O, A>(v, i, oldest, cfg_.gamma, fo, fa, fr, fn, ft);
    r.columns = {fo, fa, fr, fn, ft};
    return true;
  }

  // The steps after the actor's gradient: the actor's and the temperature's, the targets' Polyak averages.
  void finish_update() {
    const std::size_t P = actor_.size();
    actor_opt_.step({actor_.data(), P}, {g_actor_.data(), P});
    if (cfg_.tune_alpha) alpha_opt_.step({log_alpha_, 1}, {g_actor_.data() + P, 1});
    polyak_update<float>({target1_.data(), target1_.size()}, {critic1_.data(), critic1_.size()}, cfg_.tau);
    polyak_update<float>({target2_.data(), target2_.size()}, {critic2_.data(), critic2_.size()}, cfg_.tau);
    ++updates_;
  }
  // A global sample gave this learner no draws: its gradients count 0 in the group's means (it still joins both,
  // and steps with the group's mean like every learner).
  void update_without_draws() {
    const std::size_t C = critic1_.size(), P = actor_.size();
    g_critic_.assign(2 * C, 0.0f);
    sync_.average(g_critic_);
    critic1_opt_.step({critic1_.data(), C}, {g_critic_.data(), C});
    critic2_opt_.step({critic2_.data(), C}, {g_critic_.data() + C, C});
    g_actor_.assign(P + 1, 0.0f);
    sync_.average(g_actor_);
    finish_update();
  }

  // The gradient steps owed for `n` new transitions (none while warming up).
  void run_owed_updates(std::size_t n) {
    if (inserted_ < cfg_.warmup_steps) return;
    owed_updates_ += cfg_.updates_for(n, std::size_t(envs_.num_envs()));
    while (owed_updates_ >= 1.0) {
      update();
      owed_updates_ -= 1.0;
    }
  }
};

}  // namespace gmi::rl
