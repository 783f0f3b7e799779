#pragma once
// PPO for one task over N environments of one GMI, on host threads (exec::host) or CUDA kernels (exec::cuda:
// include <gmi/rl/ppo.cuh> under nvcc). An iteration is: collect horizon steps of every environment (one fused
// pass per environment, GAE included), normalize advantages over the rollout, then epochs of shuffled
// minibatches, each a per-sample gradient, a fixed-order reduction (the same sums whatever the thread count)
// and an Adam step with gradient-norm clipping; finally the observation statistics take in the rollout.
// With set_sync (ppo_sync.hpp), W trainers step as replicas of one data-parallel trainer.

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <type_traits>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/core/span.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/nn/adam.hpp>
#include <gmi/nn/mlp.hpp>
#include <gmi/nn/normalizer.hpp>
#include <gmi/io/gmi_file.hpp>
#include <gmi/io/safetensors.hpp>
#include <gmi/rl/detail/stats_words.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/popart.hpp>
#include <gmi/rl/reward_scaling.hpp>
#include <gmi/rl/ppo_config.hpp>
#include <gmi/rl/ppo_losses.hpp>
#include <gmi/rl/ppo_steps.hpp>
#include <gmi/rl/ppo_sync.hpp>

namespace gmi::rl {

namespace detail {
// The CUDA half of the trainer, defined in ppo.cuh (a trainer on exec::cuda without that header fails to compile
// with ppo_device_ops incomplete: include <gmi/rl/ppo.cuh> in a .cu file).
template <class E, class Net>
struct ppo_device_ops;

// A seed for the policy's sampling streams that never equals the environments' (seed, i) streams.
inline std::uint64_t policy_stream_seed(std::uint64_t seed) { return seed * 0x9E3779B97F4A7C15ull + 0x5851F42D4C957F2Dull; }
inline std::uint64_t shuffle_stream_seed(std::uint64_t seed) { return seed * 0xD1342543DE82EF95ull + 0x2545F4914F6CDD1Dull; }

// Orthogonal-free initialisation in the spirit of torch.nn.Linear: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for
// every weight and bias; the policy rows of the head scaled by 0.01 so the first actions stay near 0; log_std 0.
template <class Net>
std::vector<float> initial_params(std::uint64_t seed) {
  using layers = typename Net::net::layers;
  std::vector<float> p(Net::param_count, 0.0f);
  gmi::rng r(seed, 0xA11CE);
  for (int l = 0; l < layers::count; ++l) {
    const int in = layers::width(l), out = layers::width(l + 1);
    const float bound = 1.0f / std::sqrt(static_cast<float>(in));
    const bool head = l == layers::count - 1;
    for (int o = 0; o < out; ++o) {
      const float s = head && o < Net::dist_dim ? 0.01f : 1.0f;
      for (int i = 0; i < in; ++i) p[layers::weight_offset(l) + o * in + i] = s * r.uniform(-bound, bound);
      p[layers::bias_offset(l) + o] = s * r.uniform(-bound, bound);
    }
  }
  return p;
}
}  // namespace detail

template <gmi::env E, class Net, gmi::exec::policy P = exec::host>
class ppo_trainer {
 public:
  using env_type = E;
  using net_type = Net;
  using policy_type = P;
  template <class T>
  using array = std::conditional_t<P::on_device, cuda::device_buffer<T>, std::vector<T>>;
  using memory_space = std::conditional_t<P::on_device, gmi::device_memory, gmi::host_memory>;
  using normalizer_type = nn::running_mean_std<P>;
  using adam_type = nn::adam<P>;
  static constexpr int obs_dim = E::obs_dim, act_dim = E::act_dim, param_count = Net::param_count;
  static constexpr int row = Net::param_count + term_count;  // one gradient row: parameters, then loss terms
  // What a synced trainer contributes to the statistics all-gather each iteration: records [count | mean | M2]
  // of its advantages, observations and returns, end to end.
  static constexpr std::size_t stats_advantages = 0, stats_obs = 3, stats_returns = 3 + 1 + 2 * std::size_t(obs_dim),
                               stats_size = stats_returns + 3;
  // Where the value head's row and bias sit in the flat parameters (the head's last row, after the action rows).
  static constexpr int value_weight_at = Net::head_weight_offset + Net::dist_dim * Net::hidden;
  static constexpr int value_bias_at = Net::head_bias_offset + Net::dist_dim;

  ppo_trainer(int num_envs, std::uint64_t seed, ppo_config config, typename E::params env_params = {}, P policy = {})
      : config_((config.validate(), config)),
        policy_(policy),
        seed_(seed),
        envs_(num_envs, seed, env_params, policy),
        n_(static_cast<std::size_t>(num_envs)),
        total_(static_cast<std::size_t>(config.horizon) * n_),
        minibatch_(std::min<std::size_t>(static_cast<std::size_t>(config.minibatch), total_)),
        minibatches_((total_ + minibatch_ - 1) / minibatch_),
        obs_norm_(obs_dim, nn::normalizer_config{.clip = config.obs_clip, .window = config.obs_normalizer_window}, policy),
        value_norm_(1, value_normalizer_config(config), policy),
        reward_norm_(1, nn::normalizer_config{config.reward_clip, 1e-8, config.reward_scaling_window}, policy),
        adam_(nn::adam_config{config.learning_rate, 0.9f, 0.999f, 1e-8f,
                              config.max_grad_norm > 0 ? std::optional<float>(config.max_grad_norm) : std::nullopt},
              Net::param_count, policy) {
    gmi::require(total_ <= 0x7fffffffu, "horizon x num_envs", total_, "< 2^31 samples per iteration");
    gmi::require(Net::dist_param_count > 0 || !bounds_log_std(config_), "ppo.log_std_min/max with a categorical agent",
                 std::to_string(config_.log_std_min) + ", " + std::to_string(config_.log_std_max), "-inf, inf (no log-std)");
    params_ = array<float>(Net::param_count);
    current_obs_ = array<float>(n_ * obs_dim);
    obs_ = array<float>(total_ * obs_dim);
    actions_ = array<float>(total_ * act_dim);
    log_probs_ = array<float>(total_);
    values_ = array<float>(total_ + n_);
    rewards_ = array<float>(total_);
    ends_ = array<std::uint8_t>(total_);
    advantages_ = array<float>(total_);
    returns_ = array<float>(total_);
    if (config_.reward_scaling) {  // every environment's R starts at 0
      reward_running_ = array<float>(n_);
      reward_seen_ = array<float>(total_);
      if constexpr (P::on_device) reward_running_.fill_bytes(0, policy_.stream);
    }
    policy_rng_ = array<std::uint64_t>(n_);
    advantage_stats_ = array<float>(2);
    grads_ = array<float>(row);
    term_log_ = array<float>(static_cast<std::size_t>(config_.epochs) * minibatches_ * term_count);
    entropy_coef_ = array<float>(1);
    std::vector<float> init = detail::initial_params<Net>(seed);
    clamp_log_std(init.data());
    if constexpr (P::on_device) cuda::copy(entropy_coef_.span(), host_span<const float>(&config_.entropy_coef, 1), policy_.stream);
    else entropy_coef_[0] = config_.entropy_coef;
    if constexpr (P::on_device) {
      device_ = std::make_unique<detail::ppo_device_ops<E, Net>>(*this);
      cuda::copy(params_.span(), host_span<const float>(init.data(), init.size()), policy_.stream);
      policy_rng_.fill_bytes(0, policy_.stream);
      envs_.reset(current_obs_.span(), policy_.stream, first_start());
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
    } else {
      params_ = init;
      chunk_rows_.assign(((minibatch_ + host_chunk - 1) / host_chunk) * row, 0.0f);
      envs_.reset(host_span<float>(current_obs_.data(), current_obs_.size()), nullptr, first_start());
    }
  }
  ppo_trainer(const ppo_trainer&) = delete;
  ppo_trainer& operator=(const ppo_trainer&) = delete;
  ~ppo_trainer() = default;

  // One iteration: collection, GAE, advantage normalization, epochs x minibatches of Adam steps, observation
  // statistics. Asynchronous on exec::cuda (replays a captured graph after the first iteration; with a sync the
  // kernels are enqueued one by one, the sync's calls between them).
  void iterate() {
    if constexpr (P::on_device) {
      device_->iterate(*this);
    } else {
      host_iterate();
    }
    ++iteration_;
  }

  // An iteration whose rollout the caller already wrote through rollout_view() (CPU actors step the environments:
  // actors/ppo_actors.hpp on the host, actors/ppo_actors_gpu.cuh on the GPU, whose kernels wrote it on this
  // trainer's stream); the same update as iterate() without its collection. Asynchronous on exec::cuda.
  void iterate_collected() {
    if constexpr (P::on_device) {
      device_->iterate(*this, true);
    } else {
      host_update();
    }
    ++iteration_;
  }

  // Serving tier: `steps` steps of policy inference + sampling + env step for every environment, nothing stored.
  void serve(int steps) {
    gmi::require(steps >= 1, "serve steps", steps, ">= 1");
    if constexpr (P::on_device) {
      device_->serve(*this, steps);
    } else {
      const auto v = rollout_view();
      const float* p = params_.data();
      exec::for_each(policy_, n_, [&](std::size_t i) { v.serve(i, p, steps); });
    }
  }

  // Waits for the queued work; then losses() and episode statistics are current.
  void synchronize() {
    if constexpr (P::on_device) GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
  }

  // exec::cuda: once the queued work is done, drops the captured graph (the next iteration captures again). A
  // synced trainer calls it before its sync's transport goes away: a graph holding NCCL work keeps the
  // communicator's resources, and destroying the communicator first waits for them forever. When the stream is
  // still busy after `timeout` (a broken group) the graph is kept and false returned. Never throws.
  bool release_graph(std::chrono::milliseconds timeout) noexcept {
    if constexpr (P::on_device) {
      const auto deadline = std::chrono::steady_clock::now() + timeout;
      while (cudaStreamQuery(policy_.stream) == cudaErrorNotReady) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      cudaGetLastError();
      if (device_) device_->release_graph();
    }
    return true;
  }

  // Loss terms of the last iteration (waits for it on exec::cuda).
  [[nodiscard]] ppo_losses losses() {
    std::vector<float> log(term_log_.size());
    if constexpr (P::on_device) {
      cuda::copy(host_span<float>(log.data(), log.size()), term_log_.span(), policy_.stream);
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
    } else {
      log = term_log_;
    }
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
    out.learning_rate = current_learning_rate();
    return out;
  }

  // Asynchronous episode statistics: request_episodes() queues a reduction and a copy on the stream (one request
  // in flight at a time; a second request while one is pending does nothing); poll_episodes() returns it once the
  // stream got there, never waiting.
  void request_episodes() {
    if (episodes_pending_) return;
    if constexpr (P::on_device) envs_.request_stats(policy_.stream);
    else envs_.request_stats();
    episodes_pending_ = true;
  }
  std::optional<episode_stats> poll_episodes() {
    if (!episodes_pending_) return std::nullopt;
    auto s = envs_.poll_stats();
    if (s) episodes_pending_ = false;
    return s;
  }
  // Waits for the pending request. Called a few iterations after request_episodes(), it also bounds how far the
  // host runs ahead of the device while the device stays busy with the iterations queued since.
  std::optional<episode_stats> wait_episodes() {
    if (!episodes_pending_) return std::nullopt;
    episodes_pending_ = false;
    return envs_.wait_stats();
  }

  // Finished-episode statistics since the last call (waits on exec::cuda).
  episode_stats episodes() {
    if constexpr (P::on_device) return envs_.read_stats(policy_.stream);
    else return envs_.read_stats();
  }

  [[nodiscard]] const ppo_config& config() const noexcept { return config_; }
  [[nodiscard]] int num_envs() const noexcept { return static_cast<int>(n_); }
  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  [[nodiscard]] std::uint64_t iteration() const noexcept { return iteration_; }
  [[nodiscard]] std::uint64_t samples_per_iteration() const noexcept { return total_; }
  [[nodiscard]] std::size_t minibatches() const noexcept { return minibatches_; }
  [[nodiscard]] const P& policy() const noexcept { return policy_; }
  [[nodiscard]] memory_span<float, memory_space> params() noexcept { return {params_.data(), params_.size()}; }
  [[nodiscard]] normalizer_type& obs_normalizer() noexcept { return obs_norm_; }
  [[nodiscard]] normalizer_type& value_normalizer() noexcept { return value_norm_; }
  [[nodiscard]] normalizer_type& reward_normalizer() noexcept { return reward_norm_; }  // reward_scaling's std of R
  [[nodiscard]] adam_type& optimizer() noexcept { return adam_; }
  [[nodiscard]] env_batch<E, P>& envs() noexcept { return envs_; }

  // Joins a group of sync.world trainers that step as one data-parallel trainer (see ppo_sync.hpp): every
  // minibatch's gradient row is summed over the group and divided by world before Adam (so the adaptive-KL
  // decision reads the group's KL), and advantage, observation and return statistics cover every trainer's
  // rollout. Collective: each trainer of the group calls it once, before iterating. It checks that all share one
  // schedule and copies rank 0's weights to every trainer, so replicas may be built from different seeds (their
  // environments should differ). Adam moments and normalizer statistics must already agree: fresh trainers, or
  // load_state from the checkpoints of one synced run. Even a sync of world 1 runs the synced path (the same
  // numbers as no sync).
  void set_sync(ppo_sync sync) {
    sync.validate(P::on_device);
    gmi::require(!config_.reward_scaling, "ppo.reward_scaling with a synced group", "true",
                 "false (each replica's std of R would differ: not merged yet)");
    gmi::require(!sync_, "ppo_trainer::set_sync calls", 2, "1 per trainer");
    synchronize();
    check_group_schedule(sync);
    sync_ = std::move(sync);
    local_stats_ = array<double>(stats_size);
    merged_stats_ = array<double>(stats_size);
    if constexpr (P::on_device) local_stats_.fill_bytes(0, policy_.stream);  // parts a disabled statistic leaves
    broadcast_params();
  }
  [[nodiscard]] bool synced() const noexcept { return sync_.has_value(); }
  // A synced trainer on the GPU whose group's row exchange carries every member's rollout statistics: gathered in
  // a kernel each iteration, not through the host (the sync's sum_stats).
  [[nodiscard]] bool statistics_in_kernel() const {
    if constexpr (P::on_device) return detail::ppo_device_ops<E, Net>::statistics_in_kernel(*this);
    else return false;
  }
  // How the rollout is collected: "batched" (rl/batched_rollout.cuh: wide networks, warp-stepped physics tasks,
  // --collection batched) or "threads" (a thread per environment; host trainers too).
  [[nodiscard]] const char* collection_name() const {
    if constexpr (P::on_device) return device_->batched ? "batched" : "threads";
    else return "threads";
  }

  // The gradient row [param_count gradients | term_count loss terms] a sync sums (zeros may follow it): the same
  // memory from set_sync on, so a transport may bind to it.
  [[nodiscard]] memory_span<float, memory_space> gradient_buffer() noexcept { return {grads_.data(), grads_.size()}; }

  // Floats a synced group of `world` trainers wants in each gradient buffer: the row, or more where the group's
  // row exchange is to carry every member's rollout statistics too (detail::gather_words), so that the gather
  // stays inside the kernels instead of going through the host every iteration.
  [[nodiscard]] static constexpr std::size_t gradient_words_for(int world) noexcept {
    return std::max<std::size_t>(row, detail::gather_words(world, stats_size));
  }
  // Makes gradient_buffer() at least `floats` long, zeros after the row. Before set_sync and the first iteration
  // only (a transport binds to the buffer, and a captured update holds its address).
  void widen_gradient_buffer(std::size_t floats) {
    gmi::require(!sync_ && iteration_ == 0, "ppo_trainer::widen_gradient_buffer", "after set_sync or an iteration",
                 "before both");
    if (floats <= grads_.size()) return;
    grads_ = array<float>(floats);
    if constexpr (P::on_device) {
      device_->widen(floats);
      grads_.fill_bytes(0, policy_.stream);
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
    }
  }

  // The whole training state: weights, Adam, normalizers, every environment's state and RNG counter, the policy's
  // sampling counters and the iteration count. Loading it into a trainer built with the same task, network and
  // num_envs continues the same curve (bit for bit on one backend). Waits for queued work.
  [[nodiscard]] io::checkpoint save_state();

  void load_state(const io::checkpoint& ck);

  // The policy's weights as PyTorch-style named tensors (body.<l>.weight [out, in], body.<l>.bias, heads.weight
  // [outputs + 1, hidden] (mean or logit rows, then the value row), heads.bias, log_std if Gaussian), for
  // export_safetensors.
  [[nodiscard]] io::checkpoint policy_tensors();

  // The view a fused kernel or host loop collects through (valid while *this lives).
  [[nodiscard]] ppo_rollout_view<E, Net> rollout_view() const {
    auto* self = const_cast<ppo_trainer*>(this);
    return {envs_.view(),        obs_norm_.view(),          value_norm_.view(),       config_.normalize_value,
            self->current_obs_.data(), self->obs_.data(),
            self->actions_.data(), self->log_probs_.data(), self->values_.data(),    self->rewards_.data(),
            self->ends_.data(),  self->advantages_.data(),  self->returns_.data(),   self->policy_rng_.data(),
            detail::policy_stream_seed(seed_), static_cast<int>(n_), config_.horizon, config_.gamma, config_.lambda,
            config_.bootstrap_truncation,
            {config_.reward_scaling ? self->reward_running_.data() : nullptr, self->reward_seen_.data(),
             reward_norm_.view(), config_.gamma}};
  }

  // Minibatch b of epoch e in the update of iteration `it`.
  [[nodiscard]] ppo_minibatch_view<Net> minibatch_view(std::uint64_t it, int epoch, std::size_t b) const {
    const float* entropy = config_.entropy_decay == entropy_schedule::linear ? entropy_coef_.data() : nullptr;
    return make_minibatch_view<Net>({obs_.data(), actions_.data(), log_probs_.data(), values_.data(), advantages_.data(),
                                     returns_.data(), advantage_stats_.data(), obs_norm_.view(), value_norm_.view(),
                                     static_cast<std::uint32_t>(total_), detail::shuffle_stream_seed(seed_), entropy},
                                    config_, it, epoch, minibatch_, b);
  }

  // The entropy weight the next update uses (the last one set by the schedule; waits on exec::cuda).
  [[nodiscard]] float current_entropy_coef() { return to_host(entropy_coef_.data(), 1)[0]; }

 private:
  friend struct detail::ppo_device_ops<E, Net>;
  static constexpr std::size_t host_chunk = 64;  // samples per host gradient row: fixed, so sums do not depend on threads

  static std::string task_name() {
    if constexpr (requires { E::name; }) return E::name;
    else return "custom";
  }

  template <class T>
  std::vector<T> to_host(const T* p, std::size_t n) {
    std::vector<T> out(n);
    if constexpr (P::on_device) {
      GMI_CUDA_TRY(cudaMemcpyAsync(out.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost, policy_.stream));
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
    } else {
      std::copy(p, p + n, out.begin());
    }
    return out;
  }
  template <class T>
  void from_host(T* p, const std::vector<T>& values) {
    if constexpr (P::on_device) {
      GMI_CUDA_TRY(cudaMemcpyAsync(p, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice, policy_.stream));
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
    } else {
      std::copy(values.begin(), values.end(), p);
    }
  }
  void assign_stats(normalizer_type& norm, const std::vector<double>& record) {
    if constexpr (P::on_device) {
      cuda::device_buffer<double> d(record.size());
      from_host(d.data(), record);
      norm.assign(device_span<const double>(d.data(), d.size()));
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
    } else {
      norm.assign(host_span<const double>(record.data(), record.size()));
    }
  }

  // A linear schedule's span in updates (lr, entropy): its env steps over the group's env steps per iteration.
  [[nodiscard]] double decay_span(double env_steps) const noexcept {
    return env_steps / (static_cast<double>(total_) * (sync_ ? static_cast<double>(sync_->world) : 1.0));
  }
  [[nodiscard]] double lr_decay_span() const noexcept { return decay_span(config_.lr_decay_env_steps); }

  // The Gaussian's log-std parameters into their bounds (host memory; the GPU's in detail/ppo_schedules.cuh).
  episode_start first_start() const {
    return config_.random_episode_start ? episode_start::random_step : episode_start::first_step;
  }
  void clamp_log_std(float* params) const {
    if (bounds_log_std(config_)) bound_log_std(params + Net::param_count - Net::dist_param_count, Net::dist_param_count, config_);
  }

  float current_learning_rate() {
    if constexpr (P::on_device) {
      float lr = 0;
      GMI_CUDA_TRY(cudaMemcpyAsync(&lr, adam_.lr_device(), sizeof lr, cudaMemcpyDeviceToHost, policy_.stream));
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
      return lr;
    } else {
      return adam_.config().lr;
    }
  }

  void host_iterate() {
    const auto rv = rollout_view();
    const float* p = params_.data();
    exec::for_each(policy_, n_, [&](std::size_t i) { rv.collect(i, p); });
    host_update();
  }

  // Everything of a host iteration after the collection: advantage and return statistics, the epochs, and the
  // observation statistics.
  void host_update() {
    if (sync_) {
      gather_statistics();
    } else if (config_.normalize_advantage) {
      double record[3];
      advantage_moments(record);
      advantage_window_scale(advantage_held_.data() + 3, record, config_.advantage_window, double(total_), advantage_stats_.data());
    }
    update_value_statistics();
    if (config_.schedule == lr_schedule::linear) {
      adam_.set_lr(linear_learning_rate(config_.learning_rate, config_.min_learning_rate,
                                        static_cast<double>(iteration_), lr_decay_span()));
    }
    if (config_.entropy_decay == entropy_schedule::linear) {
      entropy_coef_[0] = linear_entropy_coef(config_.entropy_coef, config_.min_entropy_coef,
                                             static_cast<double>(iteration_), decay_span(config_.entropy_decay_env_steps));
    }
    for (int e = 0; e < update_epochs(); ++e) {
      for (std::size_t b = 0; b < minibatches_; ++b) {
        const auto mb = minibatch_view(iteration_, e, b);
        const std::size_t chunks = (mb.count + host_chunk - 1) / host_chunk;
        std::fill(chunk_rows_.begin(), chunk_rows_.begin() + chunks * row, 0.0f);
        float* rows = chunk_rows_.data();
        float* params = params_.data();
        exec::for_each(policy_, chunks, [&](std::size_t c) {
          float* r = rows + c * row;
          const std::uint32_t end = static_cast<std::uint32_t>(std::min<std::size_t>((c + 1) * host_chunk, mb.count));
          for (std::uint32_t k = static_cast<std::uint32_t>(c * host_chunk); k < end; ++k) {
            mb.accumulate(k, true, params, r, r + Net::param_count, nn::accumulate_plain{});
          }
        });
        std::fill(grads_.begin(), grads_.end(), 0.0f);
        for (std::size_t c = 0; c < chunks; ++c)
          for (int q = 0; q < row; ++q) grads_[q] += rows[c * row + q];
        if (sync_) {  // the group's mean gradient and loss terms
          sync_->sum_host(grads_.data(), grads_.size());
          const float world = static_cast<float>(sync_->world);
          for (float& g : grads_) g /= world;
        }
        adam_.step(host_span<float>(params_.data(), Net::param_count),
                   host_span<const float>(grads_.data(), Net::param_count));
        clamp_log_std(params_.data());
        const float* terms = grads_.data() + Net::param_count;
        std::copy(terms, terms + term_count, term_log_.begin() + (e * minibatches_ + b) * term_count);
        if (lr_follows_kl(config_)) {
          adam_.set_lr(next_learning_rate(config_, adam_.config().lr, terms[term_kl]));
        }
      }
    }
    update_statistics();
  }

  // Epochs of this iteration's update. reward_scaling: none in a fresh trainer's first iteration, whose rollout only
  // fills the statistics of R (its rewards met std 1, unscaled: training on them would fit the critic to the raw
  // scale and fill Adam's moments with its gradients).
  [[nodiscard]] int update_epochs() const noexcept { return config_.reward_scaling && iteration_ == 0 ? 0 : config_.epochs; }

  // record = [count | mean | M2] of this rollout's advantages (host), summed in order in double.
  void advantage_moments(double* record) const {
    double sum = 0, sumsq = 0;
    for (float a : advantages_) sum += a;
    const double mean = sum / static_cast<double>(total_);
    for (float a : advantages_) sumsq += (a - mean) * (a - mean);
    record[0] = static_cast<double>(total_);
    record[1] = mean;
    record[2] = sumsq;
  }
  // stats = mean, 1 / (std + 1e-8) (unbiased std, as torch's) from a record [count | mean | M2].
  static void advantage_scale(const double* record, float* stats) { detail::advantage_scale_rn(record, stats); }

  // Synced: every trainer's advantage, observation and return moments, all-gathered through sum_stats and merged
  // in rank order, so every trainer normalizes with the same numbers. Advantage statistics take effect now;
  // observation and return statistics wait in merged_stats_ for update_statistics().
  void gather_statistics();

  // set_sync's check that every rank is taken once and the group runs one schedule (the same number of sums, of
  // the same sizes, and the same statistics): every trainer gathers every trainer's numbers and compares them
  // with rank 0's, so all throw alike.
  void check_group_schedule(const ppo_sync& sync) const;

  // set_sync: rank 0's weights to every trainer, summed through the gradient buffer with zeros elsewhere.
  void broadcast_params();

  // After the update: the observation statistics (and reward_scaling's of R) take in this rollout (frozen during
  // it, so collection and update saw the same normalization); synced, the whole group's rollouts.
  void update_statistics() {
    if (config_.reward_scaling) reward_norm_.update(memory_span<const float, memory_space>(reward_seen_.data(), total_));
    if (!config_.normalize_obs) return;
    if (sync_) {
      using record = memory_span<const double, memory_space>;
      obs_norm_.merge(record(merged_stats_.data() + stats_obs, 1 + 2 * std::size_t(obs_dim)));
      return;
    }
    obs_norm_.update(memory_span<const float, memory_space>(obs_.data(), obs_.size()));
  }

  // Before the update: the return statistics take in this rollout's returns (synced, the group's), so every value
  // target is normalized by statistics that include it (rl_games' order) and the first iteration's targets are in
  // normalized units too; with popart the value head is rescaled so its denormalized predictions stay as they
  // were (popart.hpp). The rollout's values were denormalized when collected, so GAE is unaffected.
  void update_value_statistics() {
    if (!config_.normalize_value) return;
    const auto take_in = [&] {
      if (sync_) value_norm_.merge(memory_span<const double, memory_space>(merged_stats_.data() + stats_returns, 3));
      else value_norm_.update(memory_span<const float, memory_space>(returns_.data(), returns_.size()));
    };
    if constexpr (P::on_device) {
      if (config_.popart) device_->popart_snapshot(*this);
      take_in();
      if (config_.popart) device_->popart_rescale(*this);
    } else {
      const float old_mean = value_norm_.view().mean[0], old_std = value_norm_.view().std[0];
      take_in();
      if (!config_.popart) return;
      const nn::normalizer_view v = value_norm_.view();
      popart_rescale(params_.data(), value_weight_at, value_bias_at, Net::hidden, old_mean, old_std, v.mean[0], v.std[0]);
    }
  }

  ppo_config config_;
  P policy_;
  std::uint64_t seed_;
  env_batch<E, P> envs_;
  std::size_t n_, total_, minibatch_, minibatches_;
  normalizer_type obs_norm_, value_norm_;
  normalizer_type reward_norm_;  // reward_scaling: the statistics of every environment's R (rl/reward_scaling.hpp)
  adam_type adam_;
  array<float> params_, current_obs_, obs_, actions_, log_probs_, values_, rewards_, advantages_, returns_;
  array<std::uint8_t> ends_;
  array<std::uint64_t> policy_rng_;
  array<float> advantage_stats_, grads_, term_log_;
  array<double> advantage_held_ = advantage_window_storage<array<double>>(policy_);  // rl/advantage_window.hpp
  array<float> reward_running_, reward_seen_;  // reward_scaling: R of each environment, R after each step
  array<float> entropy_coef_;  // the entropy weight of the current update (one float; a schedule moves it)
  std::vector<float> chunk_rows_;  // host path: one gradient row per chunk of a minibatch
  std::optional<ppo_sync> sync_;   // set: one replica of a data-parallel group
  array<double> local_stats_;      // synced, exec::cuda: this rollout's moments (stats_size), before the gather
  array<double> merged_stats_;     // synced: the group's moments (stats_size), merged in rank order
  // Only the CUDA instantiation holds device state (its type is complete only with ppo.cuh).
  std::conditional_t<P::on_device, std::unique_ptr<detail::ppo_device_ops<E, Net>>, char> device_{};
  std::uint64_t iteration_ = 0;
  bool episodes_pending_ = false;
};

}  // namespace gmi::rl

#include <gmi/rl/ppo_state.hpp>
#include <gmi/rl/ppo_group.hpp>
