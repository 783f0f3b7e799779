#pragma once
// The SAC losses' gradients on the device with every network pass batched (nn::batch_mlp<.., exec::cuda>: GEMMs
// for 256-wide layers), the device twin of sac_gradients (sac_loss.hpp): the small per-sample pieces (squashed
// draws, soft targets, min of the critics, the heads' gradient) are the kernels of sac_kernels.cuh, and the loss
// means are summed in a fixed order (no float atomics), so an update gives the same bits every time it runs.
// Everything is asynchronous on the policy's stream and capturable in a CUDA graph (no allocation, no wait).

#include <cstddef>
#include <string>

#include <gmi/core/error.hpp>
#include <gmi/core/span.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/nn/mlp.cuh>
#include <gmi/rl/sac_kernels.cuh>
#include <gmi/rl/sac_loss.hpp>

namespace gmi::rl {

template <class Nets>
class sac_device_gradients {
 public:
  using actor_net = typename Nets::actor;
  using critic_net = typename Nets::critic;
  static constexpr int O = Nets::obs_dim, A = Nets::act_dim, X = O + A;
  static constexpr std::size_t actor_size = actor_net::param_count, critic_size = critic_net::param_count;

  // max_batch: the largest n of any call (sizes every scratch buffer once).
  sac_device_gradients(exec::cuda policy, std::size_t max_batch)
      : pol_(policy), max_(checked(max_batch)), actor_bm_(policy, max_), critic_bm_(policy, max_),
        heads_(max_ * 2 * A), d_heads_(max_ * 2 * A), x_(max_ * X), dx1_(max_ * X), dx2_(max_ * X),
        q1_(max_), q2_(max_), d1_(max_), d2_(max_), log_prob_(max_), terms_(2 * max_), terms2_(max_),
        actor_acts_(actor_bm_.acts_size(max_)), acts1_(critic_bm_.acts_size(max_)),
        acts2_(critic_bm_.acts_size(max_)), scratch_grad_(critic_size) {}

  [[nodiscard]] std::size_t max_batch() const noexcept { return max_; }
  // The layers' path of the networks ("fused_fp32", "lt_fp32", ...).
  [[nodiscard]] const char* actor_path() const { return actor_bm_.path(); }
  [[nodiscard]] const char* critic_path() const { return critic_bm_.path(); }

  // Soft TD targets y[n] = r + gamma (1 - terminated) (min_k Qtarget_k(s', a') - alpha log pi(a'|s')), a' drawn
  // from the actor at s' with eps_next [n][A]; alpha = exp(*log_alpha) read on the device.
  void critic_targets(const float* actor_p, const float* target1_p, const float* target2_p, const float* next_obs,
                      const float* reward, const float* terminated, const float* eps_next, std::size_t n,
                      const float* log_alpha, float gamma, float lo, float hi, float* y) {
    check(n);
    const unsigned b = sac_kernels::blocks(n);
    actor_bm_.forward({actor_p, actor_size}, {next_obs, n * O}, {heads_.data(), n * 2 * A});
    sac_kernels::draw_actions<O, A><<<b, 256, 0, pol_.stream>>>(heads_.data(), next_obs, eps_next, n, lo, hi,
                                                                 x_.data(), log_prob_.data());
    GMI_CUDA_TRY(cudaGetLastError());
    critic_bm_.forward({target1_p, critic_size}, {x_.data(), n * X}, {q1_.data(), n});
    critic_bm_.forward({target2_p, critic_size}, {x_.data(), n * X}, {q2_.data(), n});
    sac_kernels::soft_targets<<<b, 256, 0, pol_.stream>>>(q1_.data(), q2_.data(), log_prob_.data(), reward,
                                                          terminated, n, log_alpha, gamma, y);
    GMI_CUDA_TRY(cudaGetLastError());
  }

  // One critic's gradient of 0.5 mean_i (Q(x_i) - y_i)^2 into grad (critic_size, overwritten), x = [obs, action]
  // rows [n][X]; its per-sample 0.5 (Q - y)^2 into loss_terms[n] (sum them with sum()).
  void critic_gradient(const float* params, const float* x, const float* y, std::size_t n, float* grad,
                       float* loss_terms) {
    check(n);
    critic_bm_.forward({params, critic_size}, {x, n * X}, {q1_.data(), n}, {acts1_.data(), critic_bm_.acts_size(n)});
    sac_kernels::critic_dq<<<sac_kernels::blocks(n), 256, 0, pol_.stream>>>(q1_.data(), y, n, d1_.data(), loss_terms);
    GMI_CUDA_TRY(cudaGetLastError());
    critic_bm_.backward({params, critic_size}, {x, n * X}, {acts1_.data(), critic_bm_.acts_size(n)}, {d1_.data(), n},
                        {grad, critic_size});
  }

  // The actor's gradient of mean_i alpha log pi(a_i|s_i) - min(Q1, Q2)(s_i, a_i), a_i = tanh(mean + sigma eps_i),
  // into grad (actor_size, overwritten); the critics held fixed (their parameter gradients go to scratch). The
  // per-sample loss terms and log-probs into actor_terms[n] and log_prob_terms[n].
  void actor_gradient(const float* actor_p, const float* critic1_p, const float* critic2_p, const float* obs,
                      const float* eps, std::size_t n, const float* log_alpha, float lo, float hi, float* grad,
                      float* actor_terms, float* log_prob_terms) {
    check(n);
    const unsigned b = sac_kernels::blocks(n);
    const std::size_t ca = critic_bm_.acts_size(n);
    actor_bm_.forward({actor_p, actor_size}, {obs, n * O}, {heads_.data(), n * 2 * A},
                      {actor_acts_.data(), actor_bm_.acts_size(n)});
    sac_kernels::draw_actions<O, A><<<b, 256, 0, pol_.stream>>>(heads_.data(), obs, eps, n, lo, hi, x_.data(),
                                                                 log_prob_.data());
    GMI_CUDA_TRY(cudaGetLastError());
    critic_bm_.forward({critic1_p, critic_size}, {x_.data(), n * X}, {q1_.data(), n}, {acts1_.data(), ca});
    critic_bm_.forward({critic2_p, critic_size}, {x_.data(), n * X}, {q2_.data(), n}, {acts2_.data(), ca});
    sac_kernels::min_critic<<<b, 256, 0, pol_.stream>>>(q1_.data(), q2_.data(), n, d1_.data(), d2_.data());
    GMI_CUDA_TRY(cudaGetLastError());
    // dQ/dx through each critic with d_out -1 where it is the smaller, 0 elsewhere: the sum is d(-min Q)/dx.
    critic_bm_.backward({critic1_p, critic_size}, {x_.data(), n * X}, {acts1_.data(), ca}, {d1_.data(), n},
                        scratch_grad_.span(), {dx1_.data(), n * X});
    critic_bm_.backward({critic2_p, critic_size}, {x_.data(), n * X}, {acts2_.data(), ca}, {d2_.data(), n},
                        scratch_grad_.span(), {dx2_.data(), n * X});
    sac_kernels::actor_heads<O, A><<<b, 256, 0, pol_.stream>>>(heads_.data(), eps, dx1_.data(), dx2_.data(),
                                                               q1_.data(), q2_.data(), n, log_alpha, lo, hi,
                                                               d_heads_.data(), actor_terms, log_prob_terms);
    GMI_CUDA_TRY(cudaGetLastError());
    actor_bm_.backward({actor_p, actor_size}, {obs, n * O}, {actor_acts_.data(), actor_bm_.acts_size(n)},
                       {d_heads_.data(), n * 2 * A}, {grad, actor_size});
  }

  // *out = scale * sum of terms[0..n), in a fixed order (the same bits on every run).
  void sum(const float* terms, std::size_t n, float scale, float* out) {
    sac_kernels::sum_terms<<<1, sac_kernels::sum_threads, 0, pol_.stream>>>(terms, n, scale, out);
    GMI_CUDA_TRY(cudaGetLastError());
  }

  // Scratch for callers' per-sample terms: 2 * max_batch() floats (e.g. both critics' loss terms), and max_batch().
  [[nodiscard]] float* terms() noexcept { return terms_.data(); }
  [[nodiscard]] float* terms2() noexcept { return terms2_.data(); }

 private:
  static std::size_t checked(std::size_t n) {
    gmi::require(n >= 1, "sac_device_gradients max_batch", n, ">= 1");
    return n;
  }
  void check(std::size_t n) const {
    gmi::require(n >= 1 && n <= max_, "sac_device_gradients batch", n, "1.." + std::to_string(max_));
  }
  exec::cuda pol_;
  std::size_t max_;
  nn::batch_mlp<actor_net, exec::cuda> actor_bm_;
  nn::batch_mlp<critic_net, exec::cuda> critic_bm_;
  cuda::device_buffer<float> heads_, d_heads_, x_, dx1_, dx2_, q1_, q2_, d1_, d2_, log_prob_, terms_, terms2_;
  cuda::device_buffer<float> actor_acts_, acts1_, acts2_, scratch_grad_;
};

}  // namespace gmi::rl
