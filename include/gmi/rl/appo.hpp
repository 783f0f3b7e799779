#pragma once
// The learning half of asynchronous PPO (APPO): a learner takes `rollouts` rollouts of appo_records (T steps x N
// environments each, from actors whose weights may lag), evaluates them with its current weights (values,
// log-probabilities), computes V-trace targets and advantages (vtrace.hpp) from the importance ratios
// pi_learner / mu_behaviour, and runs the clipped PPO update over them: epochs x shuffled minibatches, Adam,
// the adaptive-KL step size. The PPO ratio is taken against the policy that acted (appo_config::
// clip_against_behaviour, the default) or the learner's at the start of the update; V-trace's truncated ratios
// correct the targets for the lag. Several learners (one per GPU) may train as one data-parallel group
// (appo_sync.hpp, exec::cuda). On exec::host here; on exec::cuda include <gmi/rl/appo.cuh>.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/span.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/nn/adam.hpp>
#include <gmi/nn/normalizer.hpp>
#include <gmi/rl/appo_record.hpp>
#include <gmi/rl/appo_sync.hpp>
#include <gmi/rl/ppo.hpp>
#include <gmi/rl/ppo_config.hpp>
#include <gmi/rl/ppo_steps.hpp>
#include <gmi/rl/vtrace.hpp>

namespace gmi::rl {

struct appo_config {
  ppo_config ppo;        // horizon = T of each rollout; gamma, lambda (V-trace's trace lambda), clip, epochs, ...
  float rho_bar = 1.0f;  // V-trace truncation of the TD-error weights
  float c_bar = 1.0f;    // V-trace truncation of the traces
  int rollouts = 4;      // rollouts of T x N per update
  // PPO's ratio: pi over the policy that acted (true, the default: Sample Factory's APPO: a step stops pulling once
  // pi is the clip away from its serving GMI's policy, however many updates that takes), or over the learner's
  // policy at the start of the update (false: decoupled PPO: each update may move pi by the clip from where it
  // starts, so with a lag of k updates pi drifts up to k clips from the data, and the split layout solved and then
  // lost Cartpole again, docs/training.md).
  bool clip_against_behaviour = true;
  // With ppo.normalize_advantage: normalize V-trace's advantages before rho weights them (true, the default:
  // rho_t (A_t / rho_t - mean) / std, the steps pi finds unlikely keep an advantage near 0), or after (false, Sample
  // Factory's way: (A_t - mean) / std, every step shifted by the whole mean). Behaviour + before kept the tasks
  // solved where the other pairs fell back (docs/training.md, from bench/results/split-learning/).
  bool normalize_before_weights = true;
  // exec::cuda: the first update runs kernel by kernel, the second is captured as a CUDA graph and every later one
  // replays it (one launch instead of about 4 x epochs x minibatches); false: every update kernel by kernel.
  bool replay_updates = true;

  [[nodiscard]] vtrace_config vtrace() const { return {ppo.gamma, ppo.lambda, rho_bar, c_bar}; }
  void validate() const {
    ppo.validate();
    vtrace().validate();
    // The entropy schedule and the log-std bounds live in the PPO trainer only (rl/ppo.hpp).
    gmi::require(ppo.entropy_decay == entropy_schedule::constant, "appo: --entropy-schedule",
                 std::string(entropy_schedule_name(ppo.entropy_decay)), "constant (the split layout has no schedule)");
    gmi::require(!bounds_log_std(ppo), "appo: --log-std-min/--log-std-max", ppo.log_std_min,
                 "-inf and inf (the split layout bounds no log-std)");
    gmi::require(!ppo.value_symlog, "appo: --value-symlog", ppo.value_symlog, "false (the PPO trainer's only)");
    gmi::require(!ppo.value_scale_only, "appo: --value-scale-only", ppo.value_scale_only, "false (the PPO trainer's only)");
    gmi::require(!ppo.reward_scaling, "appo: --reward-scaling", ppo.reward_scaling, "false (the PPO trainer's only)");
    gmi::require(ppo.advantage_window == 1, "appo: --advantage-window", ppo.advantage_window, "1 (the PPO trainer's only)");
    gmi::require(rollouts >= 1 && rollouts <= 4096, "appo.rollouts", rollouts, "1..4096");
  }
};

// How far the behaviour policies were from the learner in the last update.
struct appo_lag_stats {
  double mean_ratio = 0;          // mean pi / mu over the batch
  double mean_abs_log_ratio = 0;  // 0 exactly when every actor acted with the learner's weights
  double rho_clipped = 0;         // fraction of steps with pi / mu > rho_bar
};

// One column (one environment of one rollout) of the update batch, for a host loop or a device thread: unpacks
// the records into the update arrays ([T][C], values [T + 1][C]), evaluates them with the learner's weights and
// runs V-trace down the column.
template <class Net>
struct appo_evaluate_view {
  static constexpr int obs_dim = Net::obs_dim, act_dim = Net::act_dim;
  using record = appo_record<obs_dim, act_dim>;

  const record* staging;  // rollouts x [T + 1][N] records
  nn::normalizer_view obs_norm;
  nn::normalizer_view value_norm;
  bool normalize_value;
  float* obs;             // [T][C][obs_dim], raw
  float* actions;         // [T][C][act_dim]
  float* log_probs;       // [T][C]: PPO's old log-probs: the learner's log pi at the start of the update, or mu's
  bool clip_against_behaviour;
  float* log_ratios;      // [T][C]: log pi - log mu
  float* values;          // [T + 1][C], return units
  float* rewards;         // [T][C]
  std::uint8_t* ends;     // [T][C]
  float* advantages;      // [T][C]: V-trace policy-gradient advantages (unweighted, A_t / rho_t, with pg_weights)
  float* pg_weights;      // [T][C]: rho_t, applied after the advantages are normalized; null: A_t weighted at once
  float* returns;         // [T][C]: V-trace targets
  int envs_per_rollout;   // N
  int columns;            // C = rollouts x N
  int horizon;            // T
  vtrace_config vtrace;

  GMI_HD float value_of(float head) const { return normalize_value ? value_norm.denormalize(0, head) : head; }

  GMI_HD void evaluate(std::size_t c, const float* params) const {
    const std::size_t n = static_cast<std::size_t>(envs_per_rollout), cols = static_cast<std::size_t>(columns);
    const record* rollout = staging + (c / n) * (static_cast<std::size_t>(horizon) + 1) * n;
    const std::size_t i = c % n;
    float on[obs_dim], mu[Net::dist_dim], v;
    for (int t = 0; t <= horizon; ++t) {
      const record& rec = rollout[static_cast<std::size_t>(t) * n + i];
      const std::size_t at = static_cast<std::size_t>(t) * cols + c;
      obs_norm.normalize(rec.obs, on);
      Net::forward(params, on, mu, &v);
      values[at] = value_of(v);
      if (t == horizon) break;
      for (int k = 0; k < obs_dim; ++k) obs[at * obs_dim + k] = rec.obs[k];
      for (int k = 0; k < act_dim; ++k) actions[at * act_dim + k] = rec.action[k];
      const float lp = Net::log_prob(params, mu, rec.action);  // as the loss does
      log_probs[at] = clip_against_behaviour ? rec.log_prob : lp;
      log_ratios[at] = lp - rec.log_prob;
      rewards[at] = rec.reward;
      ends[at] = rec.end ? 1 : 0;
    }
    vtrace_column(static_cast<int>(c), columns, horizon, vtrace, rewards, ends, values, log_ratios, returns, advantages,
                  pg_weights);
  }

  // With pg_weights (appo_config::normalize_before_weights), after the advantages' statistics ([mean, 1 / (std +
  // eps)], or [0, 1] without normalization): the final advantage of step i, rho_i * (A_i / rho_i - mean) / std.
  GMI_HD void weight_advantage(std::size_t i, const float* stats) const {
    advantages[i] = pg_weights[i] * (advantages[i] - stats[0]) * stats[1];
  }
};

namespace detail {
template <class Net>
struct appo_device_ops;  // defined in appo.cuh
}  // namespace detail

template <class Net, gmi::exec::policy P = exec::host>
class appo_learner {
 public:
  using net_type = Net;
  using policy_type = P;
  using record = appo_record<Net::obs_dim, Net::act_dim>;
  using layout = appo_snapshot_layout<Net>;
  template <class T>
  using array = std::conditional_t<P::on_device, cuda::device_buffer<T>, std::vector<T>>;
  using memory_space = std::conditional_t<P::on_device, gmi::device_memory, gmi::host_memory>;
  using normalizer_type = nn::running_mean_std<P>;
  using adam_type = nn::adam<P>;
  static constexpr int obs_dim = Net::obs_dim, act_dim = Net::act_dim, param_count = Net::param_count;
  static constexpr int row = Net::param_count + term_count;

  // envs_per_rollout: N of each actor's rollout (every actor of this learner uses the same N and config.ppo.horizon).
  appo_learner(int envs_per_rollout, std::uint64_t seed, appo_config config, P policy = {})
      : config_((config.validate(), config)),
        policy_(policy),
        seed_(seed),
        n_(checked_envs(envs_per_rollout)),
        columns_(n_ * static_cast<std::size_t>(config.rollouts)),
        horizon_(static_cast<std::size_t>(config.ppo.horizon)),
        total_(horizon_ * columns_),
        minibatch_(std::min<std::size_t>(static_cast<std::size_t>(config.ppo.minibatch), total_)),
        minibatches_((total_ + minibatch_ - 1) / minibatch_),
        obs_norm_(obs_dim, nn::normalizer_config{.window = config.ppo.obs_normalizer_window}, policy),
        value_norm_(1, nn::normalizer_config{layout::value_clip, 1e-5f, config.ppo.value_normalizer_window}, policy),
        adam_(nn::adam_config{config.ppo.learning_rate, 0.9f, 0.999f, 1e-8f,
                              config.ppo.max_grad_norm > 0 ? std::optional<float>(config.ppo.max_grad_norm)
                                                           : std::nullopt},
              Net::param_count, policy) {
    gmi::require(total_ <= 0x7fffffffu, "appo: horizon x num_envs x rollouts", total_, "< 2^31 samples per update");
    params_ = array<float>(Net::param_count);
    staging_ = array<record>(static_cast<std::size_t>(config_.rollouts) * rollout_records());
    obs_ = array<float>(total_ * obs_dim);
    actions_ = array<float>(total_ * act_dim);
    log_probs_ = array<float>(total_);
    log_ratios_ = array<float>(total_);
    values_ = array<float>(total_ + columns_);
    rewards_ = array<float>(total_);
    ends_ = array<std::uint8_t>(total_);
    advantages_ = array<float>(total_);
    pg_weights_ = array<float>(total_);
    returns_ = array<float>(total_);
    advantage_stats_ = array<float>(2);
    if constexpr (!P::on_device) advantage_stats_ = {0.0f, 1.0f};  // without normalization
    grads_ = array<float>(row);
    term_log_ = array<float>(static_cast<std::size_t>(config_.ppo.epochs) * minibatches_ * term_count);
    snapshot_ = array<float>(layout::size);
    const std::vector<float> init = detail::initial_params<Net>(seed);
    if constexpr (P::on_device) {
      device_ = std::make_unique<detail::appo_device_ops<Net>>(*this);
      cuda::copy(params_.span(), host_span<const float>(init.data(), init.size()), policy_.stream);
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
    } else {
      params_ = init;
      chunk_rows_.assign(((minibatch_ + host_chunk - 1) / host_chunk) * row, 0.0f);
    }
  }
  appo_learner(const appo_learner&) = delete;
  appo_learner& operator=(const appo_learner&) = delete;
  ~appo_learner() = default;

  // Makes this learner one of a data-parallel group (appo_sync.hpp): from the first update on, its gradient rows
  // and normalizer moments are summed with the group's. exec::cuda only; before the first update; every member
  // starts from the same seed (the same initial weights).
  void set_sync(appo_sync sync) {
    gmi::require(P::on_device, "appo set_sync on", "exec::host", "exec::cuda (the group sums on the device)");
    gmi::require(version_ == 0, "appo set_sync after updates", version_, "0 (set the group before the first update)");
    sync.validate();
    if constexpr (P::on_device) {
      const std::size_t records = static_cast<std::size_t>(sync.world) * (obs_record() + value_record());
      moment_slots_ = array<double>(records);
    }
    sync_ = std::move(sync);
  }
  [[nodiscard]] const std::optional<appo_sync>& sync() const noexcept { return sync_; }

  // Copies one rollout ([T + 1][N] records: host memory on exec::host; host or device memory on exec::cuda, copied
  // on the learner's stream) into the next free place of the update batch.
  void take(const record* rollout) {
    gmi::require(taken_ < static_cast<std::size_t>(config_.rollouts), "appo take: rollouts already taken", taken_,
                 "< appo.rollouts (" + std::to_string(config_.rollouts) + "); call update() first");
    record* dst = staging_.data() + taken_ * rollout_records();
    if constexpr (P::on_device) {
      GMI_CUDA_TRY(cudaMemcpyAsync(dst, rollout, rollout_records() * sizeof(record), cudaMemcpyDefault, policy_.stream));
    } else {
      std::memcpy(dst, rollout, rollout_records() * sizeof(record));
    }
    ++taken_;
  }
  [[nodiscard]] bool ready() const noexcept { return taken_ == static_cast<std::size_t>(config_.rollouts); }
  [[nodiscard]] std::size_t taken() const noexcept { return taken_; }

  // One update over the taken rollouts (all appo.rollouts of them): V-trace, epochs x minibatches, statistics.
  // The version goes up by one. Asynchronous on exec::cuda.
  void update() {
    gmi::require(ready(), "appo update: rollouts taken", taken_, std::to_string(config_.rollouts) + " (appo.rollouts)");
    if constexpr (P::on_device) {
      device_->update(*this);
    } else {
      host_update();
    }
    taken_ = 0;
    ++version_;
  }

  // The current weights in appo_snapshot_layout<Net> (what actors act with), assembled in the learner's memory
  // (after the queued work on exec::cuda); valid until the next update or snapshot.
  [[nodiscard]] memory_span<const float, memory_space> snapshot() {
    float* s = snapshot_.data();
    const nn::normalizer_view on = obs_norm_.view(), vn = value_norm_.view();
    if constexpr (P::on_device) {
      const cudaStream_t st = policy_.stream;
      auto d2d = [&](float* dst, const float* src, std::size_t n) {
        GMI_CUDA_TRY(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, st));
      };
      d2d(s + layout::params, params_.data(), param_count);
      d2d(s + layout::obs_mean, on.mean, obs_dim);
      d2d(s + layout::obs_std, on.std, obs_dim);
      d2d(s + layout::value_mean, vn.mean, 1);
      d2d(s + layout::value_std, vn.std, 1);
    } else {
      std::copy_n(params_.data(), param_count, s + layout::params);
      std::copy_n(on.mean, obs_dim, s + layout::obs_mean);
      std::copy_n(on.std, obs_dim, s + layout::obs_std);
      s[layout::value_mean] = vn.mean[0];
      s[layout::value_std] = vn.std[0];
    }
    return {s, snapshot_.size()};
  }

  // Loss terms of the last update (waits on exec::cuda).
  [[nodiscard]] ppo_losses losses() {
    const std::vector<float> log = to_host<float>(term_log_);
    ppo_losses out;
    const double groups = static_cast<double>(log.size() / term_count);
    for (std::size_t g = 0; g < log.size() / term_count; ++g) {
      out.policy_loss += log[g * term_count + term_policy] / groups;
      out.value_loss += log[g * term_count + term_value] / groups;
      out.entropy += log[g * term_count + term_entropy] / groups;
      out.approx_kl += log[g * term_count + term_kl] / groups;
      out.clip_fraction += log[g * term_count + term_clipped] / groups;
      out.bounds_loss += log[g * term_count + term_bounds] / groups;
    }
    if constexpr (P::on_device) {
      float lr = 0;
      GMI_CUDA_TRY(cudaMemcpyAsync(&lr, adam_.lr_device(), sizeof lr, cudaMemcpyDeviceToHost, policy_.stream));
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
      out.learning_rate = lr;
    } else {
      out.learning_rate = adam_.config().lr;
    }
    return out;
  }

  // The importance ratios of the last update (waits and copies T x C floats on exec::cuda).
  [[nodiscard]] appo_lag_stats lag_stats() {
    const std::vector<float> lr = to_host<float>(log_ratios_);
    appo_lag_stats s;
    for (float x : lr) {
      const double ratio = std::exp(static_cast<double>(x));
      s.mean_ratio += ratio;
      s.mean_abs_log_ratio += std::fabs(static_cast<double>(x));
      if (ratio > config_.rho_bar) s.rho_clipped += 1;
    }
    const double n = static_cast<double>(lr.size());
    s.mean_ratio /= n;
    s.mean_abs_log_ratio /= n;
    s.rho_clipped /= n;
    return s;
  }

  // The last update's policy-gradient advantages as the loss reads them and, with normalize_before_weights, their
  // weights rho_t (copies T x C floats each; waits on exec::cuda).
  struct advantages_and_weights {
    std::vector<float> advantages, weights;
  };
  [[nodiscard]] advantages_and_weights last_advantages() {
    advantages_and_weights out{to_host<float>(advantages_), to_host<float>(pg_weights_)};
    if (!config_.normalize_before_weights && config_.ppo.normalize_advantage) {  // the loss normalizes as it reads
      const std::vector<float> st = to_host<float>(advantage_stats_);
      for (float& a : out.advantages) a = (a - st[0]) * st[1];
    }
    return out;
  }

  void synchronize() {
    if constexpr (P::on_device) GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
  }

  [[nodiscard]] const appo_config& config() const noexcept { return config_; }
  [[nodiscard]] std::uint64_t version() const noexcept { return version_; }
  // Updates that ran as one graph launch (appo_config::replay_updates; 0 on the host). Needs appo.cuh.
  [[nodiscard]] std::uint64_t replayed_updates() const noexcept {
    if constexpr (P::on_device) {
      return device_->replays;
    } else {
      return 0;
    }
  }
  [[nodiscard]] int envs_per_rollout() const noexcept { return static_cast<int>(n_); }
  [[nodiscard]] std::size_t rollout_records() const noexcept { return (horizon_ + 1) * n_; }
  [[nodiscard]] std::uint64_t samples_per_update() const noexcept { return total_; }
  [[nodiscard]] const P& policy() const noexcept { return policy_; }
  [[nodiscard]] memory_span<float, memory_space> params() noexcept { return {params_.data(), params_.size()}; }
  [[nodiscard]] normalizer_type& obs_normalizer() noexcept { return obs_norm_; }
  [[nodiscard]] normalizer_type& value_normalizer() noexcept { return value_norm_; }

  [[nodiscard]] appo_evaluate_view<Net> evaluate_view() const {
    auto* self = const_cast<appo_learner*>(this);
    return {staging_.data(),          obs_norm_.view(),        value_norm_.view(),
            config_.ppo.normalize_value, self->obs_.data(),    self->actions_.data(),
            self->log_probs_.data(),  config_.clip_against_behaviour, self->log_ratios_.data(), self->values_.data(),
            self->rewards_.data(),    self->ends_.data(),      self->advantages_.data(),
            config_.normalize_before_weights ? self->pg_weights_.data() : nullptr, self->returns_.data(),   static_cast<int>(n_),    static_cast<int>(columns_),
            static_cast<int>(horizon_), config_.vtrace()};
  }

  // Minibatch b of epoch e in update `u`: the PPO minibatch over the evaluated arrays (old log-probs: the
  // learner's at the start of the update; advantages and targets: V-trace's, the advantages already normalized and
  // weighted by appo_evaluate_view::weight_advantage when normalize_before_weights).
  [[nodiscard]] ppo_minibatch_view<Net> minibatch_view(std::uint64_t u, int epoch, std::size_t b) const {
    ppo_config c = config_.ppo;
    if (config_.normalize_before_weights) c.normalize_advantage = false;
    return make_minibatch_view<Net>({obs_.data(), actions_.data(), log_probs_.data(), values_.data(), advantages_.data(),
                                     returns_.data(), advantage_stats_.data(), obs_norm_.view(), value_norm_.view(),
                                     static_cast<std::uint32_t>(total_), detail::shuffle_stream_seed(seed_)},
                                    c, u, epoch, minibatch_, b);
  }

 private:
  friend struct detail::appo_device_ops<Net>;
  static constexpr std::size_t host_chunk = 64;  // samples per host gradient row, as ppo_trainer

  // The normalizers' moment records [n | mean | M2] (a synced update gathers one of each per member).
  static constexpr std::size_t obs_record() noexcept { return 1 + 2 * static_cast<std::size_t>(obs_dim); }
  static constexpr std::size_t value_record() noexcept { return 3; }

  static std::size_t checked_envs(int n) {
    gmi::require(n >= 1, "appo envs per rollout", n, ">= 1");
    return static_cast<std::size_t>(n);
  }

  template <class T>
  std::vector<T> to_host(const array<T>& a) {
    if constexpr (P::on_device) {
      std::vector<T> out(a.size());
      GMI_CUDA_TRY(cudaMemcpyAsync(out.data(), a.data(), a.size() * sizeof(T), cudaMemcpyDeviceToHost, policy_.stream));
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
      return out;
    } else {
      return a;
    }
  }

  // lr_schedule::linear: the updates the decay spans (its samples over the samples of one update).
  [[nodiscard]] double lr_decay_span() const noexcept {
    return config_.ppo.lr_decay_env_steps / static_cast<double>(total_);
  }

  void host_update() {
    const ppo_config& c = config_.ppo;
    const auto ev = evaluate_view();
    const float* p = params_.data();
    exec::for_each(policy_, columns_, [&](std::size_t col) { ev.evaluate(col, p); });
    if (c.normalize_advantage) {
      double sum = 0, sumsq = 0;
      for (float a : advantages_) sum += a;
      const double mean = sum / static_cast<double>(total_);
      for (float a : advantages_) sumsq += (a - mean) * (a - mean);
      const double std = total_ > 1 ? std::sqrt(sumsq / static_cast<double>(total_ - 1)) : 0.0;
      advantage_stats_[0] = static_cast<float>(mean);
      advantage_stats_[1] = static_cast<float>(1.0 / (std + 1e-8));
    }
    if (config_.normalize_before_weights)
      exec::for_each(policy_, total_, [&](std::size_t i) { ev.weight_advantage(i, advantage_stats_.data()); });
    if (c.schedule == lr_schedule::linear) {
      adam_.set_lr(linear_learning_rate(c.learning_rate, c.min_learning_rate, static_cast<double>(version_), lr_decay_span()));
    }
    for (int e = 0; e < c.epochs; ++e) {
      for (std::size_t b = 0; b < minibatches_; ++b) {
        const auto mb = minibatch_view(version_, e, b);
        const std::size_t chunks = (mb.count + host_chunk - 1) / host_chunk;
        std::fill(chunk_rows_.begin(), chunk_rows_.begin() + static_cast<std::ptrdiff_t>(chunks * row), 0.0f);
        float* rows = chunk_rows_.data();
        float* params = params_.data();
        exec::for_each(policy_, chunks, [&](std::size_t k) {
          float* r = rows + k * row;
          const std::uint32_t end = static_cast<std::uint32_t>(std::min<std::size_t>((k + 1) * host_chunk, mb.count));
          for (std::uint32_t s = static_cast<std::uint32_t>(k * host_chunk); s < end; ++s)
            mb.accumulate(s, true, params, r, r + Net::param_count, nn::accumulate_plain{});
        });
        std::fill(grads_.begin(), grads_.end(), 0.0f);
        for (std::size_t k = 0; k < chunks; ++k)
          for (int q = 0; q < row; ++q) grads_[q] += rows[k * row + q];
        adam_.step(host_span<float>(params_.data(), Net::param_count),
                   host_span<const float>(grads_.data(), Net::param_count));
        const float* terms = grads_.data() + Net::param_count;
        std::copy(terms, terms + term_count, term_log_.begin() + static_cast<std::ptrdiff_t>((e * minibatches_ + b) * term_count));
        if (lr_follows_kl(c)) adam_.set_lr(next_learning_rate(c, adam_.config().lr, terms[term_kl]));
      }
    }
    using cspan = host_span<const float>;
    if (c.normalize_obs) obs_norm_.update(cspan(obs_.data(), obs_.size()));
    if (c.normalize_value) value_norm_.update(cspan(returns_.data(), returns_.size()));
  }

  appo_config config_;
  P policy_;
  std::uint64_t seed_;
  std::size_t n_, columns_, horizon_, total_, minibatch_, minibatches_;
  normalizer_type obs_norm_;
  normalizer_type value_norm_;
  adam_type adam_;
  array<float> params_;
  array<record> staging_;
  array<float> obs_, actions_, log_probs_, log_ratios_, values_, rewards_, advantages_, pg_weights_, returns_;
  array<std::uint8_t> ends_;
  array<float> advantage_stats_, grads_, term_log_, snapshot_;
  std::vector<float> chunk_rows_;
  std::optional<appo_sync> sync_;
  // synced: [world][obs record] then [world][value record]; each member fills its own slots, the group sums them
  array<double> moment_slots_;
  std::conditional_t<P::on_device, std::unique_ptr<detail::appo_device_ops<Net>>, char> device_{};
  std::size_t taken_ = 0;
  std::uint64_t version_ = 0;
};

}  // namespace gmi::rl
