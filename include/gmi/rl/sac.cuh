#pragma once
// SAC on one GPU (exec::cuda): the actor's batched forward on the environments' observations, the actions drawn,
// the environments stepped by env_batch::step (a physics task's on its fast path), transitions inserted into a
// replay::device_table, uniform batches drawn and gathered there, and the update of sac.hpp on the device: every
// network pass batched (sac_device_gradients, sac_batched.cuh: GEMMs for wide layers), small per-sample kernels
// between them, adam<exec::cuda>. The temperature and the loss sums live on the device, so an update enqueues no
// copy and no wait; the losses are summed in a fixed order, so launched and graph-replayed updates give the same
// bits. As one of data-parallel learners (set_sync) each update averages two buffers over the group: on the device
// when the sync has sum_device (comm::hierarchical_allreduce, stream-ordered: no stream wait), else through the
// host (two waits); with global sampling (sac_sync::share, sac_global.hpp) it draws its share of the group's batch
// and weights its gradients by that share. Alone, with sac_config::cuda_graph, each update after the first replays
// one captured CUDA graph.

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <array>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/graph.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/nn/adam.cuh>
#include <gmi/nn/mlp.cuh>
#include <gmi/replay/device_table.cuh>
#include <gmi/rl/env_batch.cuh>
#include <gmi/rl/sac_batched.cuh>
#include <gmi/rl/sac.hpp>
#include <gmi/rl/sac_config.hpp>
#include <gmi/rl/sac_eval.hpp>
#include <gmi/rl/sac_kernels.cuh>
#include <gmi/rl/sac_loss.hpp>
#include <gmi/rl/sac_nstep.hpp>
#include <gmi/rl/sac_shards.cuh>
#include <gmi/rl/sac_sync.hpp>

namespace gmi::rl {

namespace detail {
// GMI_TRACE (docs/runtime.md; any value but empty or 0) also makes sac_device_trainer's launched updates wait for
// the stream after every stage. Read once per process.
inline bool sac_trace_sync() {
  static const bool on = [] {
    const char* v = std::getenv("GMI_TRACE");
    return v != nullptr && *v != '\0' && std::string_view(v) != "0";
  }();
  return on;
}
}  // namespace detail

// The device trainer: the same algorithm and settings as sac_trainer (sac.hpp), on the table's stream.
template <gmi::env E, class Nets = sac_networks<E::obs_dim, E::act_dim, 256>>
class sac_device_trainer {
 public:
  static_assert(Nets::obs_dim == E::obs_dim && Nets::act_dim == E::act_dim,
                "gmi::rl::sac_device_trainer: the networks' obs_dim/act_dim must equal the environment's");
  using actor_net = typename Nets::actor;
  using critic_net = typename Nets::critic;
  static constexpr int O = E::obs_dim, A = E::act_dim, X = O + A;
  template <class T>
  using buf = cuda::device_buffer<T>;

  sac_device_trainer(sac_config config, int num_envs, std::uint64_t seed, typename E::params params = {})
      : cfg_((config.validate(), config)),
        seed_(seed),
        n_(std::size_t(checked_envs(num_envs))),
        layout_(sac_shard_layout::make(cfg_, n_, 2 * O + A + 2)),
        table_(sac_replay_shards::shard_spec(table_spec_of(cfg_), layout_),
               replay::rate_limiter::min_size(cfg_.replay_shards > 1 ? 1 : std::size_t(cfg_.batch))),
        pol_{table_.stream()},
        envs_(num_envs, seed, params, pol_),
        writer_(table_.make_writer(n_)),
        grads_(std::in_place, pol_, std::size_t(cfg_.batch)),
        env_actor_bm_(pol_, n_),
        actor_(upload(sac_initial_params<actor_net>(seed, 0))),
        critic1_(upload(sac_initial_params<critic_net>(seed, 1))),
        critic2_(upload(sac_initial_params<critic_net>(seed, 2))),
        target1_(upload(sac_initial_params<critic_net>(seed, 1))),
        target2_(upload(sac_initial_params<critic_net>(seed, 2))),
        actor_opt_(adam_of(cfg_.actor_lr), actor_.size(), pol_),
        critic1_opt_(adam_of(cfg_.critic_lr), critic1_.size(), pol_),
        critic2_opt_(adam_of(cfg_.critic_lr), critic2_.size(), pol_),
        log_alpha_(upload(std::vector<float>{std::log(cfg_.initial_alpha)})),
        alpha_state_(upload(std::vector<float>{0.0f, 0.0f, 0.0f})),
        sums_(sac_sum_count),
        update_count_(1) {
    update_count_.fill_bytes(0, pol_.stream);
    sums_.fill_bytes(0, pol_.stream);  // last_update() before the first update reads zeros
    const auto B = std::size_t(cfg_.batch);
    current_ = buf<float>(n_ * O);
    ro_obs_ = buf<float>(n_ * O);
    ro_next_ = buf<float>(n_ * O);
    ro_act_ = buf<float>(n_ * A);
    ro_rew_ = buf<float>(n_);
    ro_term_ = buf<float>(n_);
    final_obs_ = buf<float>(n_ * O);
    ro_ended_ = buf<float>(n_);
    if (cfg_.n_step > 1) {
      ring_ = buf<float>(sac_nstep::ring_layout<O, A>::floats_for(std::size_t(cfg_.n_step) * n_));
      folded_ = buf<float>(n_ * (sac_nstep::ring_layout<O, A>::width - 1));
    }
    terminated_ = buf<std::uint8_t>(n_);
    truncated_ = buf<std::uint8_t>(n_);
    eps_ = buf<float>(B * A);
    eps_next_ = buf<float>(B * A);
    y_ = buf<float>(B);
    x_ = buf<float>(B * X);
    env_heads_ = buf<float>(n_ * 2 * A);
    // Critic 1's gradient, then critic 2's at sac_second_critic_offset (256-byte aligned; the gap stays zero).
    g_critic_ = buf<float>(sac_second_critic_offset(critic1_.size()) + critic1_.size());
    g_critic_.fill_bytes(0, pol_.stream);
    g_actor_ = buf<float>(actor_.size() + 1);  // the actor's gradient, then the mean log-prob (summed with it)
    envs_.reset(current_.span(), pol_.stream);
    if (layout_.shards > 1) {
      shards_.emplace(layout_, table_, sac_replay_shards::shard_spec(table_spec_of(cfg_), layout_));
      shards_->set_placement_every(cfg_.placement_every);
    }
  }

  // As sac_trainer::step: with n_step > 1 the transitions pass through the n-step ring (sac_nstep.hpp) on the device.
  void step() {
    const bool warm = env_steps_ < cfg_.warmup_steps;
    collect(warm);
    replay::rollout r;
    r.horizon = 1;
    r.envs = n_;
    r.columns = {ro_obs_.data(), ro_act_.data(), ro_rew_.data(), ro_next_.data(), ro_term_.data()};
    if (cfg_.n_step == 1 || fold_nstep(r)) {
      static constexpr std::size_t widths[5] = {std::size_t(O), std::size_t(A), 1, std::size_t(O), 1};
      if (shards_)
        shards_->insert(r, widths);
      else
        table_.insert(writer_, r);
      inserted_ += n_;
    }
    env_steps_ += n_;
    ++batch_steps_;
    if (shards_) shards_->after_vector_step();
    if (inserted_ < cfg_.warmup_steps) return;
    owed_updates_ += cfg_.updates_for(n_, n_);
    while (owed_updates_ >= 1.0) {
      update();
      owed_updates_ -= 1.0;
    }
  }
  void train(std::size_t env_steps) {
    while (env_steps_ < env_steps) step();
  }

  // --- split roles on GPU GMIs (pipeline/offpolicy_split.hpp), the host trainer's message format
  static constexpr std::size_t packed_width = sac_packed::width(O, A);  // obs, action, reward, next obs, terminated

  // An actor's step: every environment one step on the device (uniform random actions when `random`), the
  // transitions copied back and appended to `rows` (packed_width floats each, environment after environment).
  void collect_packed(bool random, std::vector<float>& rows) {
    const std::array<const float*, 5> cols = collect_on_device(random);
    staged_.resize(n_ * packed_width);
    const auto off = sac_packed::column_offsets(n_, O, A);
    for (int k = 0; k < 5; ++k) {
      const std::size_t w = n_ * sac_packed::column_width(k, O, A);
      cuda::copy(host_span<float>(staged_.data() + off[std::size_t(k)], w), device_span<const float>(cols[std::size_t(k)], w),
                 pol_.stream);
    }
    GMI_CUDA_TRY(cudaStreamSynchronize(pol_.stream));
    const float* c = staged_.data();
    sac_packed::append_rows(n_, O, A, c + off[0], c + off[1], c + off[2], c + off[3], c + off[4], rows);
  }

  // A learner's insert of an actor's packed rows ([horizon][envs]) into its device table through that actor's own
  // writer (one upload, one insert kernel); then the gradient steps now due, sampled on the device.
  void insert_packed(int actor, std::span<const float> rows, std::size_t envs, std::size_t horizon) {
    const std::size_t n = envs * horizon;
    gmi::require(rows.size() == n * packed_width, "sac_device_trainer::insert_packed rows", rows.size(),
                 std::to_string(n * packed_width) + " (" + std::to_string(n) + " transitions)");
    staged_.resize(n * packed_width);
    sac_packed::rows_to_columns(n, O, A, rows.data(), staged_.data());
    if (uploaded_.size() < staged_.size()) uploaded_ = buf<float>(staged_.size());
    cuda::copy(device_span<float>(uploaded_.data(), staged_.size()), host_span<const float>(staged_.data(), staged_.size()),
               pol_.stream);
    insert_columns(actor, uploaded_.data(), envs, horizon, true);  // staged_ and uploaded_ are reused next call
  }
  // The same from columns already in device memory (sac_packed::column_offsets; split roles' device transport,
  // pipeline/split_channels.hpp: the actor wrote them there). `wait`: the host waits for the insert.
  void insert_columns(int actor, const float* d, std::size_t envs, std::size_t horizon, bool wait = false) {
    require_one_step("sac_device_trainer::insert_columns");
    gmi::require(actor >= 0 && !shards_, "sac_device_trainer::insert_columns actor (with sac.replay_shards)",
                 std::to_string(actor) + " (" + std::to_string(cfg_.replay_shards) + ")", ">= 0 (1: split roles feed one table)");
    while (writers_.size() <= std::size_t(actor)) writers_.emplace_back();
    auto& w = writers_[std::size_t(actor)];
    if (!w) w.emplace(table_.make_writer(envs));
    const std::size_t n = envs * horizon;
    const auto off = sac_packed::column_offsets(n, O, A);
    replay::rollout ro;
    ro.horizon = horizon;
    ro.envs = envs;
    ro.columns = {d + off[0], d + off[1], d + off[2], d + off[3], d + off[4]};
    table_.insert(*w, ro);
    if (wait) GMI_CUDA_TRY(cudaStreamSynchronize(pol_.stream));
    env_steps_ += n;
    inserted_ += n;
    if (inserted_ < cfg_.warmup_steps) return;
    owed_updates_ += cfg_.updates_for(n, n_);  // per the learner's vector step
    while (owed_updates_ >= 1.0) {
      update();
      owed_updates_ -= 1.0;
    }
  }
  // An actor's step for the device transport: collect_packed's step, the columns (obs, act, rew, next, term) left
  // in device memory, valid until the next step on stream().
  std::array<const float*, 5> collect_on_device(bool random) {
    require_one_step("sac_device_trainer::collect_on_device");
    collect(random);
    env_steps_ += n_;
    ++batch_steps_;
    return {ro_obs_.data(), ro_act_.data(), ro_rew_.data(), ro_next_.data(), ro_term_.data()};
  }
  // The actor's weights in device memory (the device transport publishes and reads them there, on stream()).
  [[nodiscard]] device_span<float> actor_weights() noexcept { return actor_.span(); }

  // An actor's copy of the learner's actor weights.
  void set_actor_params(std::span<const float> p) {
    gmi::require(p.size() == actor_.size(), "sac_device_trainer::set_actor_params size", p.size(),
                 std::to_string(actor_.size()));
    cuda::copy(actor_.span(), host_span<const float>(p.data(), p.size()), pol_.stream);
    GMI_CUDA_TRY(cudaStreamSynchronize(pol_.stream));
  }
  [[nodiscard]] const sac_config& config() const noexcept { return cfg_; }
  [[nodiscard]] replay::device_table& table() noexcept { return table_; }
  // With sac.replay_shards > 1: where each shard lives and its draws (waits for the shards' sampling stream).
  [[nodiscard]] std::optional<sac_shard_report> replay_shards() {
    return shards_ ? std::optional<sac_shard_report>(shards_->report()) : std::nullopt;
  }

  // One gradient step. With config().cuda_graph and no group sums, the first step runs as launches and the
  // second captures its kernels in a CUDA graph that every later step replays (one launch); the random streams
  // and the replay draw are keyed by the device's update count, so both ways compute the same bits.
  // A capture that fails (a call inside that cannot be captured) is dropped with one line on stderr, and the
  // updates launch from then on: graph_updates() stays 0.
  void update() {
    if (cfg_.cuda_graph && !sync_.active() && !shards_ && updates_ >= 1 && !graph_failed_) {
      if (!graph_) {
        try {
          graph_ = cuda::instantiate(cuda::capture(pol_.stream, [&](cudaStream_t) { enqueue_update(); }));
        } catch (const gmi::error& e) {
          graph_failed_ = true;
          std::fprintf(stderr, "gmi: sac_device_trainer: the update could not be captured as a CUDA graph (%s); its "
                               "kernels launch one by one\n", e.what());
        }
      }
      if (graph_) {
        graph_.launch(pol_.stream);
        ++graph_updates_;
        ++updates_;
        return;
      }
    }
    enqueue_update();
    ++updates_;
  }
  // Global draws of this learner so far (sync().global()).
  [[nodiscard]] const sac_global_counts& global_draws() const noexcept { return global_; }
  // Updates that ran as a replay of the captured graph.
  [[nodiscard]] std::uint64_t graph_updates() const noexcept { return graph_updates_; }

  // The deterministic policy's mean return over one episode in each of `envs` fresh environments, stepped on the
  // host (tasks whose params bind device tables are not supported here).
  double evaluate(int envs, std::uint64_t seed) {
    return sac_deterministic_return<E, actor_net>(download(actor_), envs, seed, envs_.params(), cfg_.log_std_min,
                                                  cfg_.log_std_max);
  }

  // Means of the last update (waits for the stream).
  sac_update_stats last_update() {
    const std::vector<float> s = download(sums_), la = download(log_alpha_);
    return {s[sac_sum_critic] / 2.0, s[sac_sum_actor], s[sac_sum_log_prob], std::exp(double(la[0]))};
  }
  // Episodes finished in training since the previous read (waits for the stream; device sums first, bounded).
  episode_stats read_stats() {
    if (sync_.on_device()) sync_.wait_device(pol_.stream);
    return envs_.read_stats(pol_.stream);
  }
  [[nodiscard]] std::size_t env_steps() const noexcept { return env_steps_; }
  [[nodiscard]] std::uint64_t updates() const noexcept { return updates_; }
  [[nodiscard]] std::vector<float> actor_params() const { return download(actor_); }
  [[nodiscard]] std::vector<float> critic_params(int k) const { return download(k == 0 ? critic1_ : critic2_); }

  // The device buffer the group sums as `part` (sac_sync::sum_device): 0, both critics' gradients (critic 2's at
  // sac_second_critic_offset); 1, the actor's gradient and the mean log-prob. Build the transport on these before
  // set_sync.
  [[nodiscard]] device_span<float> sum_buffer(int part) {
    gmi::require(part == 0 || part == 1, "sac_device_trainer::sum_buffer part", part, "0 (critics) or 1 (actor)");
    return part == 0 ? g_critic_.span() : g_actor_.span();
  }
  // Sums this learner enqueued on the device (sac_sync::sum_device), and those that went through the host.
  [[nodiscard]] std::uint64_t device_sums() const noexcept { return device_sums_; }
  [[nodiscard]] std::uint64_t host_sums() const noexcept { return host_sums_; }
  // The path of the environments' step ("warp_per_env" or "thread_per_env"; env_step_path_name), for result lines.
  [[nodiscard]] const char* env_step_path() const { return env_step_path_name(envs_); }
  // The stream every kernel and copy of this trainer goes on (the table's).
  [[nodiscard]] cudaStream_t stream() const noexcept { return pol_.stream; }

  // Joins a group of data-parallel learners before the first update (as sac_trainer::set_sync): rank 0's weights
  // everywhere (through the host sum, once), then every update's gradients averaged over the group, on the device
  // when the sync has sum_device.
  void set_sync(sac_sync s) {
    s.validate();
    gmi::require(updates_ == 0, "sac_device_trainer::set_sync after updates", updates_, "0 (join the group first)");
    sync_ = std::move(s);
    if (sync_.global()) {  // a share may be up to the group's whole batch
      gmi::require(!shards_, "sac global sampling with sac.replay_shards", cfg_.replay_shards, "1 (one table a learner)");
      const std::size_t most = std::size_t(cfg_.batch) * std::size_t(sync_.world);
      grads_.reset();
      grads_.emplace(pol_, most);
      for (buf<float>* b : {&eps_, &eps_next_}) *b = buf<float>(most * A);
      y_ = buf<float>(most);
      x_ = buf<float>(most * X);
    }
    for (buf<float>* b : {&actor_, &critic1_, &critic2_}) {
      std::vector<float> v = download(*b);
      sync_.broadcast_from_first(v);
      cuda::copy(b->span(), host_span<const float>(v.data(), v.size()), table_.stream());
    }
    GMI_CUDA_TRY(cudaMemcpyAsync(target1_.data(), critic1_.data(), critic1_.size() * sizeof(float),
                                 cudaMemcpyDeviceToDevice, table_.stream()));
    GMI_CUDA_TRY(cudaMemcpyAsync(target2_.data(), critic2_.data(), critic2_.size() * sizeof(float),
                                 cudaMemcpyDeviceToDevice, table_.stream()));
    GMI_CUDA_TRY(cudaStreamSynchronize(table_.stream()));
  }
  [[nodiscard]] const sac_sync& sync() const noexcept { return sync_; }

 private:
  static int checked_envs(int n) {
    gmi::require(n >= 1, "num_envs", n, ">= 1");
    return n;
  }
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
  // Every environment one step: the actor's heads by one batched forward of the current observations (not while
  // the actions are uniform), the actions drawn (the observations kept as the transitions'), the environments
  // stepped by env_batch::step (a physics task's on the path physics_step_choice picks: a tile of lanes per
  // environment where few environments would leave most SMs idle with a thread each), then the stored next
  // observations and terminations; the transitions in the ro_ columns.
  void collect(bool uniform_actions) {
    const unsigned b = sac_kernels::blocks(n_);
    if (!uniform_actions)
      env_actor_bm_.forward(actor_.span(), current_.span(), env_heads_.span());
    sac_kernels::draw_env_actions<O, A><<<b, 256, 0, pol_.stream>>>(
        n_, current_.data(), env_heads_.data(), ro_obs_.data(), ro_act_.data(), uniform_actions, seed_ ^ 0xAC7104ull,
        batch_steps_, cfg_.log_std_min, cfg_.log_std_max);
    GMI_CUDA_TRY(cudaGetLastError());
    envs_.step(ro_act_.span(), current_.span(), ro_rew_.span(), terminated_.span(), truncated_.span(), pol_.stream,
               final_obs_.span());
    sac_kernels::store_next<O><<<b, 256, 0, pol_.stream>>>(n_, current_.data(), final_obs_.data(),
                                                           terminated_.data(), truncated_.data(), ro_next_.data(),
                                                           ro_term_.data(), ro_ended_.data());
    GMI_CUDA_TRY(cudaGetLastError());
  }
  void require_one_step(const char* what) const {
    gmi::require(cfg_.n_step == 1, std::string(what) + " with sac.n_step", cfg_.n_step,
                 "1 (split roles send one-step transitions)");
  }
  // n-step (before batch_steps_ counts this step): the collected columns into their ring slot; once the ring is
  // full, r's columns become each environment's folded transition of n_step - 1 steps earlier (true), else false.
  bool fold_nstep(replay::rollout& r) {
    using layout = sac_nstep::ring_layout<O, A>;
    const int N = cfg_.n_step;
    const std::size_t slots = std::size_t(N) * n_, slot = std::size_t(sac_nstep::slot_of(batch_steps_, N)) * n_;
    const float* cols[6] = {ro_obs_.data(), ro_act_.data(), ro_rew_.data(), ro_next_.data(), ro_term_.data(),
                            ro_ended_.data()};
    for (int c = 0; c < 6; ++c) {
      const std::size_t w = layout::column_width(c);
      GMI_CUDA_TRY(cudaMemcpyAsync(ring_.data() + layout::offset(c, slots) + slot * w, cols[c],
                                   n_ * w * sizeof(float), cudaMemcpyDeviceToDevice, pol_.stream));
    }
    const std::uint64_t collected = batch_steps_ + 1;
    if (collected < std::uint64_t(N)) return false;
    float *fo = folded_.data(), *fa = fo + n_ * O, *fr = fa + n_ * A, *fn = fr + n_, *ft = fn + n_ * O;
    sac_kernels::nstep_fold<O, A><<<sac_kernels::blocks(n_), 256, 0, pol_.stream>>>(
        layout::view(ring_.data(), n_, N), sac_nstep::oldest_slot(collected, N), cfg_.gamma, fo, fa, fr, fn, ft);
    GMI_CUDA_TRY(cudaGetLastError());
    r.columns = {fo, fa, fr, fn, ft};
    return true;
  }
  nn::adam_config adam_of(float lr) const { return {lr, 0.9f, 0.999f, 1e-8f, cfg_.max_grad_norm}; }
  buf<float> upload(const std::vector<float>& v) const {
    buf<float> b(v.size());
    cuda::copy(b.span(), host_span<const float>(v.data(), v.size()), table_.stream());
    GMI_CUDA_TRY(cudaStreamSynchronize(table_.stream()));
    return b;
  }
  std::vector<float> download(const buf<float>& b) const {
    std::vector<float> v(b.size());
    cuda::copy(host_span<float>(v.data(), v.size()), device_span<const float>(b.data(), b.size()), table_.stream());
    GMI_CUDA_TRY(cudaStreamSynchronize(table_.stream()));
    return v;
  }
  // The kernels of one update, on the stream (captured or launched).
  // With global sampling (sync_.global()) this learner's share of the group's batch, its gradients weighted by it.
  void enqueue_update() {
    auto B = std::size_t(cfg_.batch);
    const cudaStream_t s = pol_.stream;
    settle("the work queued before it (collection, inserts)");
    const std::uint64_t draw_seed = seed_ * 0x9E3779B97F4A7C15ull;
    float weight = 1.0f;
    if (sync_.global()) {
      const auto d = sync_.draw_globally(table_.size(), cfg_.batch, global_);
      weight = d.weight;
      B = d.draws;
      if (B == 0) return update_without_draws();
      table_.sample(replay::sampler::uniform(), B, 1, d.seed, batch_);
    } else if (!shards_) {
      table_.sample(replay::sampler::uniform(), B, 1, draw_seed, batch_, update_count_.data());
    }
    const replay::device_batch& b = shards_ ? shards_->sample(B, draw_seed, update_count_.data()) : batch_;
    settle("replay sample (draw, gather)");
    const float* obs = b.template column<float>(0);
    const float* act = b.template column<float>(1);
    const float* rew = b.template column<float>(2);
    const float* nxt = b.template column<float>(3);
    const float* term = b.template column<float>(4);
    const unsigned nb = sac_kernels::blocks(B), eb = sac_kernels::blocks(B * A);
    sac_kernels::normals<<<eb, 256, 0, s>>>(seed_ ^ 0xE95ull, update_count_.data(), 0, B * A, eps_.data());
    sac_kernels::normals<<<eb, 256, 0, s>>>(seed_ ^ 0xE95ull, update_count_.data(), 1, B * A, eps_next_.data());
    settle("normals");
    grads_->critic_targets(actor_.data(), target1_.data(), target2_.data(), nxt, rew, term, eps_next_.data(), B,
                          log_alpha_.data(), cfg_.gamma, cfg_.log_std_min, cfg_.log_std_max, y_.data());
    settle("critic targets (actor and target critics' forwards)");
    sac_kernels::concat<<<nb, 256, 0, s>>>(obs, O, act, A, B, x_.data());
    settle("concat");
    const std::size_t C = critic1_.size(), C2 = sac_second_critic_offset(C);
    float* terms = grads_->terms();
    grads_->critic_gradient(critic1_.data(), x_.data(), y_.data(), B, g_critic_.data(), terms);
    settle("critic 1 gradient");
    grads_->critic_gradient(critic2_.data(), x_.data(), y_.data(), B, g_critic_.data() + C2, terms + B);
    settle("critic 2 gradient");
    grads_->sum(terms, 2 * B, 1.0f / float(B), sums_.data() + sac_sum_critic);
    if (weight != 1.0f) scale(g_critic_.data(), g_critic_.size(), weight);
    if (sync_.active()) average(0);
    critic_steps();
    settle("critic sums and Adam steps");
    const std::size_t P = actor_.size();
    grads_->actor_gradient(actor_.data(), critic1_.data(), critic2_.data(), obs, eps_.data(), B, log_alpha_.data(),
                          cfg_.log_std_min, cfg_.log_std_max, g_actor_.data(), terms, grads_->terms2());
    settle("actor gradient");
    grads_->sum(terms, B, 1.0f / float(B), sums_.data() + sac_sum_actor);
    grads_->sum(grads_->terms2(), B, 1.0f / float(B), sums_.data() + sac_sum_log_prob);
    // The temperature's gradient is a function of the mean log-prob: averaging that averages the gradient.
    if (sync_.active()) {
      GMI_CUDA_TRY(cudaMemcpyAsync(g_actor_.data() + P, sums_.data() + sac_sum_log_prob, sizeof(float),
                                   cudaMemcpyDeviceToDevice, s));
      if (weight != 1.0f) scale(g_actor_.data(), g_actor_.size(), weight);
      average(1);
      GMI_CUDA_TRY(cudaMemcpyAsync(sums_.data() + sac_sum_log_prob, g_actor_.data() + P, sizeof(float),
                                   cudaMemcpyDeviceToDevice, s));
    }
    finish_update();
  }
  // A global sample gave this learner no draws: its gradients (and mean log-prob) count 0 in the group's means; it
  // still joins both sums and steps with the group's mean.
  void update_without_draws() {
    g_critic_.fill_bytes(0, pol_.stream);
    average(0);
    critic_steps();
    g_actor_.fill_bytes(0, pol_.stream);
    average(1);
    GMI_CUDA_TRY(cudaMemcpyAsync(sums_.data() + sac_sum_log_prob, g_actor_.data() + actor_.size(), sizeof(float),
                                 cudaMemcpyDeviceToDevice, pol_.stream));
    finish_update();
  }
  void critic_steps() {
    const std::size_t C = critic1_.size();
    critic1_opt_.step(critic1_.span(), device_span<const float>(g_critic_.data(), C));
    critic2_opt_.step(critic2_.span(), device_span<const float>(g_critic_.data() + sac_second_critic_offset(C), C));
  }
  void scale(float* v, std::size_t n, float by) {
    sac_kernels::scale<<<sac_kernels::blocks(n), 256, 0, pol_.stream>>>(v, n, by);
    GMI_CUDA_TRY(cudaGetLastError());
  }
  // The actor's Adam step, the temperature's, the targets' Polyak averages, the device's update count.
  void finish_update() {
    const cudaStream_t s = pol_.stream;
    const std::size_t P = actor_.size();
    actor_opt_.step(actor_.span(), device_span<const float>(g_actor_.data(), P));
    if (cfg_.tune_alpha)
      sac_kernels::alpha_step<<<1, 1, 0, s>>>(log_alpha_.data(), alpha_state_.data(), sums_.data(),
                                              cfg_.entropy_target(A), cfg_.alpha_lr);
    sac_kernels::polyak<<<sac_kernels::blocks(target1_.size()), 256, 0, s>>>(target1_.data(), critic1_.data(),
                                                                             target1_.size(), cfg_.tau);
    sac_kernels::polyak<<<sac_kernels::blocks(target2_.size()), 256, 0, s>>>(target2_.data(), critic2_.data(),
                                                                             target2_.size(), cfg_.tau);
    GMI_CUDA_TRY(cudaGetLastError());
    sac_kernels::count_update<<<1, 1, 0, s>>>(update_count_.data());
    settle("actor Adam step, temperature, Polyak");
  }
  // After a stage of the update: a launch error names the stage at once; with GMI_TRACE set (docs/runtime.md) a
  // launched update also waits for the stream, so a kernel's fault is named by its stage, not by a later call.
  void settle(const char* stage) const {
    const auto fail = [&](cudaError_t e) {
      throw gmi::cuda_error(static_cast<int>(e), std::string("sac_device_trainer update, stage ") + stage + ": " +
                                                     cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
    };
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) fail(e);
    if (!detail::sac_trace_sync()) return;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    GMI_CUDA_TRY(cudaStreamIsCapturing(pol_.stream, &capture));
    if (capture != cudaStreamCaptureStatusNone) return;
    if (const cudaError_t e = cudaStreamSynchronize(pol_.stream); e != cudaSuccess) fail(e);
  }
  // Sum buffer `part` replaced by the group's mean: summed on the device and scaled, stream-ordered; or through
  // the host.
  void average(int part) {
    const device_span<float> v = sum_buffer(part);
    if (!sync_.on_device()) {
      average_on_host({{v.data(), v.size()}});
      ++host_sums_;
      return;
    }
    sync_.sum_device(part, pol_.stream);
    scale(v.data(), v.size(), 1.0f / float(sync_.world));
    ++device_sums_;
  }
  // Device arrays replaced by the group's mean: copied to the host (a wait on the stream), summed, copied back.
  void average_on_host(std::initializer_list<std::pair<float*, std::size_t>> parts) {
    std::size_t total = 0;
    for (const auto& p : parts) total += p.second;
    staged_.resize(total);
    std::size_t at = 0;
    for (const auto& [ptr, n] : parts) {
      cuda::copy(host_span<float>(staged_.data() + at, n), device_span<const float>(ptr, n), pol_.stream);
      at += n;
    }
    GMI_CUDA_TRY(cudaStreamSynchronize(pol_.stream));
    sync_.average(staged_);
    at = 0;
    for (const auto& [ptr, n] : parts) {
      cuda::copy(device_span<float>(ptr, n), host_span<const float>(staged_.data() + at, n), pol_.stream);
      at += n;
    }
    GMI_CUDA_TRY(cudaStreamSynchronize(pol_.stream));  // staged_ is reused by the next call
  }
  sac_config cfg_;
  std::uint64_t seed_;
  std::size_t n_;
  sac_shard_layout layout_;  // sac.replay_shards' environment groups, shard capacity and budget
  replay::device_table table_;  // shard 0 with sac.replay_shards > 1
  exec::cuda pol_;
  env_batch<E, exec::cuda> envs_;
  replay::device_table::writer writer_;
  std::optional<sac_device_gradients<Nets>> grads_;  // the update's batched network passes and their scratch
  nn::batch_mlp<actor_net, exec::cuda> env_actor_bm_;  // the actor's forward over the environments (collect)
  buf<float> actor_, critic1_, critic2_, target1_, target2_;
  nn::adam<exec::cuda> actor_opt_, critic1_opt_, critic2_opt_;
  buf<float> log_alpha_, alpha_state_, sums_;
  buf<std::uint64_t> update_count_;  // updates enqueued, on the device: keys the update's random streams
  buf<float> current_, ro_obs_, ro_next_, ro_act_, ro_rew_, ro_term_, ro_ended_, final_obs_;
  buf<std::uint8_t> terminated_, truncated_;  // env_batch::step's flags, read by store_next
  buf<float> eps_, eps_next_, y_, x_, env_heads_, g_critic_, g_actor_;
  replay::device_batch batch_;
  std::size_t env_steps_ = 0;
  std::uint64_t batch_steps_ = 0, updates_ = 0, device_sums_ = 0, host_sums_ = 0, graph_updates_ = 0;
  cuda::graph_exec graph_;  // one update, captured at the second (config().cuda_graph)
  bool graph_failed_ = false;
  double owed_updates_ = 0;
  sac_sync sync_;
  sac_global_counts global_;  // this learner's global draws (sync_.global())
  std::vector<float> staged_;
  buf<float> uploaded_;                                             // a learner's upload of an actor's rows
  buf<float> ring_, folded_;  // n-step: the ring (sac_nstep::ring_layout) and the folded transitions' columns
  std::size_t inserted_ = 0;  // transitions put into the table
  std::vector<std::optional<replay::device_table::writer>> writers_;  // a learner's, one per actor
  std::optional<sac_replay_shards> shards_;  // sac.replay_shards > 1: all shards, sampled globally, placed
};

}  // namespace gmi::rl
