#pragma once
// The batched rollout's per-env sampling and the ends of the whole-network forward (nn/wholenet.cuh) that
// batched_rollout feeds it with: observations normalized on the way in (and the raw ones stored where a rollout
// keeps them), and on the way out either the outputs stored or, in serving, every action sampled straight from the
// tile's outputs in shared memory (the same Philox stream and draws as batch_sample_kernel). So a serving step's
// normalize, forward and sampling are one kernel.

#include <cstddef>
#include <cstdint>

#include <gmi/core/rng.hpp>
#include <gmi/nn/normalizer.hpp>

namespace gmi::rl::detail {

// What the sampling reads and writes; pointers that may be null are marked.
struct batch_sample_args {
  const float* outputs;           // [n][dist_dim + 1]: policy outputs, then the value head (the sampling kernel's)
  const float* params;            // the actor-critic's parameters (log_std after the MLP's)
  float* actions;                 // [n][act_dim]
  float* log_probs;               // [n] or null
  float* values;                  // [n] or null: the value in return units
  std::uint64_t* policy_blocks;   // [n]: the policy stream's Philox block counters
  std::uint64_t* policy_words;    // [n] or null: the stream's word positions within a rollout (rng::word)
  int rollout_step;               // with policy_words: 0 starts from policy_blocks
  bool last_step;                 // with policy_words: the rollout's last sample writes policy_blocks
  std::uint64_t policy_seed;
  nn::normalizer_view value_norm;
  bool normalize_value;
  std::size_t n;
};

// Env i's sample from its outputs row (dist_dim policy outputs, then the value), as ppo_rollout_view::collect
// draws it: within a rollout the stream resumes at its word.
template <class Net>
__device__ inline void batch_sample_row(const batch_sample_args& a, std::size_t i, const float* row) {
  constexpr int D = Net::dist_dim, A = Net::act_dim;
  float mu[D], act[A], logp;
  for (int j = 0; j < D; ++j) mu[j] = row[j];
  const std::uint64_t word = !a.policy_words || a.rollout_step == 0 ? a.policy_blocks[i] * 4 : a.policy_words[i];
  gmi::rng r = gmi::rng::from_word(a.policy_seed, i, word);
  Net::sample(a.params, mu, r, act, &logp);
  if (a.policy_words) a.policy_words[i] = r.word();
  if (!a.policy_words || a.last_step) a.policy_blocks[i] = r.block();
  for (int j = 0; j < A; ++j) a.actions[i * A + j] = act[j];
  if (a.log_probs) a.log_probs[i] = logp;
  if (a.values) {
    const float v = row[D];
    a.values[i] = a.normalize_value ? a.value_norm.denormalize(0, v) : v;
  }
}

// The whole-network forward's input: rows [0, n_first) from obs_a, rows from n_first on from obs_b (both raw,
// [rows][dim]), normalized; raw_store (or null) receives obs_a's rows as read.
struct whole_obs_in {
  const float* obs_a;
  const float* obs_b;
  int n_first;
  int dim;
  nn::normalizer_view norm;
  float* raw_store;
  __device__ int row(int r) const { return r; }
  __device__ float operator()(int r, int c) const {
    const bool second = r >= n_first;
    const float x = second ? obs_b[static_cast<std::size_t>(r - n_first) * dim + c] : obs_a[static_cast<std::size_t>(r) * dim + c];
    if (!second && raw_store) raw_store[static_cast<std::size_t>(r) * dim + c] = x;
    return norm.normalize(c, x);
  }
};

// The whole-network forward's end in serving: a thread per row of the tile samples its env's action.
template <class Net>
struct whole_sample_tail {
  batch_sample_args a;
  __device__ void operator()(const float* o, int ld, int row0, int rows) const {
    const int r = static_cast<int>(threadIdx.x);
    if (r < rows) batch_sample_row<Net>(a, static_cast<std::size_t>(row0 + r), o + r * ld);
  }
};

}  // namespace gmi::rl::detail
