#pragma once
// PPO hyperparameters (rl_games names where they exist), validated in one place with "got X, need Y" messages.

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include <gmi/core/error.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/nn/network_config.hpp>
#include <gmi/nn/normalizer.hpp>
#include <gmi/rl/advantage_window.hpp>  // ppo_config::advantage_window

namespace gmi::rl {

// kl_capped: the constant lr as a ceiling, lowered by the adaptive rule's steps when an update's KL passes
// 2 x kl_target and raised back (never above learning_rate) when it falls below kl_target / 2: a soft trust region
// that leaves a run whose KL stays below 2 x kl_target bit for bit the constant lr's.
enum class lr_schedule { constant, adaptive_kl, linear, kl_capped };

// The names flags, sweep files and result lines use.
inline const char* lr_schedule_name(lr_schedule s) {
  switch (s) {
    case lr_schedule::adaptive_kl: return "adaptive";
    case lr_schedule::linear: return "linear";
    case lr_schedule::kl_capped: return "kl_capped";
    case lr_schedule::constant: break;
  }
  return "constant";
}
inline std::optional<lr_schedule> parse_lr_schedule(std::string_view name) {
  for (const lr_schedule s : {lr_schedule::constant, lr_schedule::adaptive_kl, lr_schedule::linear, lr_schedule::kl_capped})
    if (name == lr_schedule_name(s)) return s;
  return std::nullopt;
}

// How the entropy bonus's weight moves over a run: constant (entropy_coef throughout) or linear (from
// entropy_coef down to min_entropy_coef over entropy_decay_env_steps, then flat).
enum class entropy_schedule { constant, linear };
inline const char* entropy_schedule_name(entropy_schedule s) {
  return s == entropy_schedule::linear ? "linear" : "constant";
}
inline std::optional<entropy_schedule> parse_entropy_schedule(std::string_view name) {
  for (const entropy_schedule s : {entropy_schedule::constant, entropy_schedule::linear})
    if (name == entropy_schedule_name(s)) return s;
  return std::nullopt;
}

struct ppo_config {
  int horizon = 16;                 // steps per environment per iteration
  int minibatch = 8192;             // samples per gradient step (capped at horizon * num_envs)
  int epochs = 8;                   // passes over the rollout per iteration
  float clip = 0.2f;                // surrogate ratio clip (epsilon)
  float dual_clip = 0.0f;           // dual-clip PPO's c (ppo_loss.hpp): 0 off, else > 1 + clip
  float gamma = 0.99f;
  float lambda = 0.95f;             // GAE
  float learning_rate = 3e-4f;
  float max_grad_norm = 1.0f;       // <= 0 disables clipping
  // Weight of the value loss, and the PPO2-style clipped value loss (clip_value: the new normalized value kept
  // within value_clip of the rollout's). 2, on and 0.5 (rl_games' clipped loss with 2.5x its range): on the
  // learning suite this met or beat 0.5 / off on every task measured (docs/learning.md "The default value loss").
  float value_coef = 2.0f;
  float entropy_coef = 0.0f;
  // entropy_schedule::linear: the weight falls in a straight line from entropy_coef to min_entropy_coef over this
  // many env steps of the whole training (counted as the linear lr's), then stays at min_entropy_coef.
  entropy_schedule entropy_decay = entropy_schedule::constant;
  float min_entropy_coef = 0.0f;
  double entropy_decay_env_steps = 0;
  // Bounds of the Gaussian policy's log-std parameter, applied after every Adam step (and to the initial 0): a
  // floor keeps exploration from collapsing, a ceiling keeps it from blowing up. Infinite: no bound.
  float log_std_min = -std::numeric_limits<float>::infinity();
  float log_std_max = std::numeric_limits<float>::infinity();
  float bounds_loss_coef = 1e-4f;   // rl_games': pulls action means back inside [-1.1, 1.1] (ppo_loss.hpp)
  bool clip_value = true;           // PPO2-style clipped value loss (above)
  float value_clip = 0.5f;
  bool normalize_advantage = true;  // over the whole rollout
  // With normalize_advantage: the mean and std come from the last advantage_window rollouts (the older samples
  // forgotten as nn::normalizer's window does), not this rollout's alone; 1: this rollout's (rl/advantage_window.hpp).
  int advantage_window = 1;
  bool normalize_obs = true;        // running mean/std of observations
  float obs_clip = 5.0f;            // normalized observations are clamped to [-obs_clip, obs_clip] (rl_games: 5)
  bool normalize_value = true;      // the value head predicts returns normalized by their running mean/std
  // With normalize_value: each change of the return statistics rescales the value head's row and bias so its
  // denormalized predictions stay as they were (PopArt, rl/popart.hpp). Off by default: on the learning suite it
  // learned worse than the plain rl_games normalizer on every task it was tried on (docs/learning.md).
  bool popart = false;
  // With normalize_value: the value head predicts symlog(return) = sign(R) ln(1 + |R|) instead of the standardized
  // return (nn::normalizer_config::symlog): one relative precision for returns of every size, e.g. the LQ proxies'
  // costs that span orders of magnitude along an episode, where a standardized head fits the large early returns
  // and leaves the small late ones inside its error. Off by default (a candidate of issue 34, docs/learning.md).
  bool value_symlog = false;
  // With normalize_value: the value head predicts R / std of the returns (rl_games' norm_only): the return
  // statistics' std scales the targets, their mean is not subtracted, so a dense reward's offset stays in the
  // targets instead of being re-centred at every change of the window's mean. Off by default (a candidate of
  // issue 34, docs/learning.md "The value loss's weight under value normalization").
  bool value_scale_only = false;
  // Samples each normalizer weighs at most (nn::normalizer_config::window): 0 keeps every sample ever seen
  // (rl_games). Returns shrink (or grow) as a policy learns, often 10-100x, and a return normalizer that remembers
  // the early scale leaves the critic fitting late targets squeezed into a sliver of normalized space: the return
  // normalizer forgets beyond 2^20 samples (16 iterations of 4096 envs x 16 steps), the observations' keep every
  // sample. On the learning suite this beat keeping every return on 8 tasks, tied on 4 and lost on spring_chain
  // (docs/learning.md has the table).
  double obs_normalizer_window = 0;
  double value_normalizer_window = 1048576;
  // Reward scaling (rl/reward_scaling.hpp): rewards divided by the running std of each environment's discounted
  // return (no mean subtracted), clamped to [-reward_clip, reward_clip] (SB3's and CleanRL's 10); the value head
  // then predicts returns of the scaled rewards, so it needs normalize_value false. reward_scaling_window: the
  // samples of R the std weighs at most (0: every sample, as SB3 and CleanRL). A fresh trainer's first rollout only
  // fills the statistics (no update). Off by default (a candidate of issue 34, docs/learning.md "Reward scaling").
  bool reward_scaling = false;
  float reward_clip = 10.0f;
  double reward_scaling_window = 0;
  bool bootstrap_truncation = true; // reward += gamma * V(final state) when the time limit cuts an episode
  // true: the first reset starts each environment's step counter at a uniform draw in [0, max_steps) (env_batch's
  // episode_start::random_step), so time limits fall out of phase. Off by default: on tasks whose per-step costs
  // span orders of magnitude along an episode (the LQ proxies) the mixed phases left the policy drifting late,
  // under a return normalizer window of few rollouts (value_normalizer_window at the suite's env counts; docs/
  // learning.md, "Out-of-phase episode starts" and "Out-of-phase starts and the return normalizer's window").
  bool random_episode_start = false;
  // Constant by default. lr_schedule::adaptive_kl is rl_games' rule for Isaac Gym tasks: the step size follows
  // the policy's KL (/1.5 above 2x kl_target, *1.5 below kl_target/2, within [min, max]_learning_rate). On
  // Cartpole it sat at the 1e-2 ceiling and left runs of every group shape unsolved that the constant 3e-4 solves
  // (bench/learning, docs/training.md "Learning over seeds").
  // lr_schedule::linear: the lr falls in a straight line from learning_rate to min_learning_rate over this many
  // env steps of the whole training (every GMI of a synced group together; for APPO, trained samples), then
  // stays at min_learning_rate. Each update takes the lr of the env steps done before it.
  lr_schedule schedule = lr_schedule::constant;
  double lr_decay_env_steps = 0;
  float kl_target = 0.016f;
  float min_learning_rate = 1e-6f;
  float max_learning_rate = 1e-2f;
  // The GPU trainer's cuBLASLt paths (batched collection, gemm gradients): their precision, and lt_min_width, the
  // width from which a network is wide (rl/wide_rule.hpp) and takes those paths by default.
  nn::network_config network{};

  // Throws config_error naming the first bad field.
  void validate() const {
    auto finite_positive = [](float v) { return std::isfinite(v) && v > 0; };
    gmi::require(horizon >= 1 && horizon <= 4096, "ppo.horizon", horizon, "1..4096");
    gmi::require(minibatch >= 1, "ppo.minibatch", minibatch, ">= 1");
    gmi::require(epochs >= 1 && epochs <= 1000, "ppo.epochs", epochs, "1..1000");
    gmi::require(finite_positive(clip) && clip < 1, "ppo.clip", clip, "in (0, 1)");
    gmi::require(dual_clip == 0 || (std::isfinite(dual_clip) && dual_clip > 1 + clip), "ppo.dual_clip", dual_clip,
                 "0 (off) or finite and > 1 + clip");
    gmi::require(gamma > 0 && gamma <= 1, "ppo.gamma", gamma, "in (0, 1]");
    gmi::require(lambda >= 0 && lambda <= 1, "ppo.lambda", lambda, "in [0, 1]");
    gmi::require(finite_positive(learning_rate) && learning_rate < 1, "ppo.learning_rate", learning_rate, "in (0, 1)");
    gmi::require(std::isfinite(max_grad_norm), "ppo.max_grad_norm", max_grad_norm, "finite (<= 0 disables clipping)");
    gmi::require(std::isfinite(value_coef) && value_coef >= 0, "ppo.value_coef", value_coef, ">= 0");
    gmi::require(std::isfinite(entropy_coef) && entropy_coef >= 0, "ppo.entropy_coef", entropy_coef, ">= 0");
    gmi::require(std::isfinite(bounds_loss_coef) && bounds_loss_coef >= 0, "ppo.bounds_loss_coef", bounds_loss_coef, ">= 0");
    gmi::require(std::isfinite(min_entropy_coef) && min_entropy_coef >= 0, "ppo.min_entropy_coef", min_entropy_coef,
                 ">= 0 and finite");
    gmi::require(std::isfinite(entropy_decay_env_steps) && entropy_decay_env_steps >= 0, "ppo.entropy_decay_env_steps",
                 entropy_decay_env_steps, ">= 0 env steps and finite (the linear entropy schedule's span)");
    if (entropy_decay == entropy_schedule::linear) {
      gmi::require(min_entropy_coef <= entropy_coef, "ppo.min_entropy_coef", min_entropy_coef,
                   "<= entropy_coef (" + std::to_string(entropy_coef) + ") with the linear entropy schedule");
      gmi::require(entropy_decay_env_steps >= 1, "ppo.entropy_decay_env_steps", entropy_decay_env_steps,
                   ">= 1 env steps and finite with the linear entropy schedule");
    }
    gmi::require(!value_symlog || (normalize_value && !popart), "ppo.value_symlog", value_symlog,
                 "false, or true with normalize_value true and popart false (symlog replaces the statistics)");
    gmi::require(!value_scale_only || (normalize_value && !popart && !value_symlog), "ppo.value_scale_only",
                 value_scale_only, "false, or true with normalize_value true, popart false and value_symlog false");
    gmi::require(!std::isnan(log_std_min) && log_std_min < std::numeric_limits<float>::infinity(), "ppo.log_std_min",
                 log_std_min, "a number below +inf (-inf: no floor)");
    gmi::require(!std::isnan(log_std_max) && log_std_max > -std::numeric_limits<float>::infinity(), "ppo.log_std_max",
                 log_std_max, "a number above -inf (inf: no ceiling)");
    gmi::require(log_std_min <= log_std_max, "ppo.log_std_min", log_std_min,
                 "<= log_std_max (" + std::to_string(log_std_max) + ")");
    gmi::require(!reward_scaling || !normalize_value, "ppo.reward_scaling", reward_scaling,
                 "false, or true with normalize_value false (the value head predicts returns of the scaled rewards)");
    gmi::require(finite_positive(reward_clip), "ppo.reward_clip", reward_clip, "> 0 and finite");
    gmi::require(std::isfinite(reward_scaling_window) && reward_scaling_window >= 0, "ppo.reward_scaling_window",
                 reward_scaling_window, ">= 0 samples and finite (0: every sample)");
    gmi::require(finite_positive(value_clip), "ppo.value_clip", value_clip, "> 0");
    gmi::require(advantage_window >= 1 && advantage_window <= 1000000, "ppo.advantage_window", advantage_window,
                 "1..1000000 rollouts (1: each rollout by its own statistics)");
    gmi::require(finite_positive(obs_clip), "ppo.obs_clip", obs_clip, "> 0 and finite");
    gmi::require(std::isfinite(obs_normalizer_window) && obs_normalizer_window >= 0, "ppo.obs_normalizer_window",
                 obs_normalizer_window, ">= 0 samples and finite (0: every sample)");
    gmi::require(std::isfinite(value_normalizer_window) && value_normalizer_window >= 0,
                 "ppo.value_normalizer_window", value_normalizer_window, ">= 0 samples and finite (0: every sample)");
    gmi::require(std::isfinite(lr_decay_env_steps) && lr_decay_env_steps >= 0, "ppo.lr_decay_env_steps",
                 lr_decay_env_steps, ">= 0 env steps and finite (the linear lr schedule's span)");
    if (schedule == lr_schedule::linear) {
      gmi::require(lr_decay_env_steps >= 1, "ppo.lr_decay_env_steps", lr_decay_env_steps,
                   ">= 1 env steps and finite with the linear lr schedule");
    }
    gmi::require(finite_positive(kl_target), "ppo.kl_target", kl_target, "> 0");
    gmi::require(finite_positive(min_learning_rate) && min_learning_rate <= max_learning_rate, "ppo.min_learning_rate",
                 min_learning_rate, "> 0 and <= max_learning_rate (" + std::to_string(max_learning_rate) + ")");
    gmi::require(learning_rate >= min_learning_rate && learning_rate <= max_learning_rate, "ppo.learning_rate",
                 learning_rate, "within [min_learning_rate, max_learning_rate]");
    nn::validate(network);
  }
};

// The return normalizer's settings: no clip (targets of any size), epsilon 1e-5f (a float, as it always was), its
// window, and the value head's mode (standardized, symlog, or scaled by the std only).
inline nn::normalizer_config value_normalizer_config(const ppo_config& c) {
  return {.clip = 1e6f, .epsilon = 1e-5f, .window = c.value_normalizer_window, .symlog = c.value_symlog,
          .center = !c.value_scale_only};
}

// lr_schedule::linear: the lr of the update that follows `done` updates when the decay spans `span` updates
// (lr_decay_env_steps / env steps per update): from lr0 down to lr_min in a straight line, then flat. Host and
// device compute the same bits.
GMI_HD inline float linear_learning_rate(float lr0, float lr_min, double done, double span) {
  const double left = done >= span ? 0.0 : 1.0 - done / span;
  const double range = static_cast<double>(lr0) - lr_min;
#if GMI_IN_DEVICE_CODE
  const double drop = __dmul_rn(range, left);  // never fused into an add: the host's rounding
#else
  const double drop = range * left;
#endif
  return static_cast<float>(static_cast<double>(lr_min) + drop);
}

// entropy_schedule::linear: the entropy weight of the update that follows `done` updates (the linear lr's line).
GMI_HD inline float linear_entropy_coef(float c0, float c_min, double done, double span) {
  return linear_learning_rate(c0, c_min, done, span);
}

// Whether the log-std bounds do anything (either is finite).
inline bool bounds_log_std(const ppo_config& c) {
  return std::isfinite(c.log_std_min) || std::isfinite(c.log_std_max);
}

// The n log-std parameters at log_std into [lo, hi]; host and device alike.
GMI_HD inline void bound_log_std(float* log_std, int n, float lo, float hi) {
  for (int j = 0; j < n; ++j) log_std[j] = fminf(fmaxf(log_std[j], lo), hi);
}
inline void bound_log_std(float* log_std, int n, const ppo_config& c) { bound_log_std(log_std, n, c.log_std_min, c.log_std_max); }

// Whether the lr follows each step's KL (adaptive_kl, kl_capped), and the most it may rise to.
inline bool lr_follows_kl(const ppo_config& c) {
  return c.schedule == lr_schedule::adaptive_kl || c.schedule == lr_schedule::kl_capped;
}
inline float kl_lr_ceiling(const ppo_config& c) {
  return c.schedule == lr_schedule::kl_capped ? c.learning_rate : c.max_learning_rate;
}

// The adaptive-KL rule of rl_games: shrink the step when the policy moved too far, grow it when it barely moved.
inline float next_learning_rate(const ppo_config& c, float current, float kl) {
  if (!lr_follows_kl(c)) return current;
  if (kl > 2.0f * c.kl_target) return std::fmax(current / 1.5f, c.min_learning_rate);
  if (kl < 0.5f * c.kl_target) return std::fmin(current * 1.5f, kl_lr_ceiling(c));
  return current;
}

}  // namespace gmi::rl
