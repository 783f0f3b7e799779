#pragma once
// V-trace (Espeholt et al. 2018, IMPALA): value targets and policy-gradient advantages for experience collected by
// a behaviour policy mu that lags the learner's policy pi, for one environment's rollout column, the same
// function on host and device. Rollouts are [horizon][num_envs] row-major, as for gae.hpp: an episode end
// (terminated or truncated) cuts the trace, and truncated episodes carry their bootstrap in the reward.
//
//   rho_t = min(rho_bar, pi/mu),  c_t = lambda * min(c_bar, pi/mu)
//   delta_t = rho_t * (r_t + gamma * V(x_{t+1}) - V(x_t))
//   v_t = V(x_t) + delta_t + gamma * c_t * (v_{t+1} - V(x_{t+1}))
//   A_t = rho_t * (r_t + gamma * v_{t+1} - V(x_t))          (v_horizon = V(x_horizon), the bootstrap)
// On-policy (pi = mu, rho_bar, c_bar >= 1) v_t is GAE(lambda)'s return and A_t with lambda = 1 its advantage.

#include <cmath>
#include <cstdint>
#include <string>

#include <gmi/core/error.hpp>
#include <gmi/core/hd.hpp>

namespace gmi::rl {

struct vtrace_config {
  float gamma = 0.99f;
  float lambda = 1.0f;   // IMPALA's trace-cutting lambda (Remark 3): c_t = lambda * min(c_bar, ratio)
  float rho_bar = 1.0f;  // truncates the importance weight of the TD error: the fixed point the targets aim at
  float c_bar = 1.0f;    // truncates the trace: how far back a TD error propagates (c_bar <= rho_bar)

  void validate() const {
    gmi::require(gamma > 0 && gamma <= 1, "vtrace.gamma", gamma, "in (0, 1]");
    gmi::require(lambda >= 0 && lambda <= 1, "vtrace.lambda", lambda, "in [0, 1]");
    gmi::require(std::isfinite(rho_bar) && rho_bar > 0, "vtrace.rho_bar", rho_bar, "> 0");
    gmi::require(std::isfinite(c_bar) && c_bar > 0 && c_bar <= rho_bar, "vtrace.c_bar", c_bar,
                 "> 0 and <= rho_bar (" + std::to_string(rho_bar) + ")");
  }
};

// values has horizon + 1 rows (row horizon: V(observation after the last step)); log_ratios = log pi - log mu per
// step. Writes the targets v_t (value targets) and A_t (advantages for the policy gradient). With `pg_weights`,
// rho_t goes there and `advantages` gets A_t / rho_t = r_t + gamma * v_{t+1} - V(x_t), unweighted, so a caller can
// normalize the advantages before it weights them: centring rho_t * (...) would give the steps pi finds unlikely
// (rho_t near 0, which should barely count) the whole shift of the mean (rl/appo.hpp).
GMI_HD inline void vtrace_column(int env, int num_envs, int horizon, const vtrace_config& c, const float* rewards,
                                 const std::uint8_t* episode_ends, const float* values, const float* log_ratios,
                                 float* targets, float* advantages, float* pg_weights = nullptr) {
  float next_target = values[horizon * num_envs + env];  // v_{t+1}; at the end of the rollout, the bootstrap
  float next_excess = 0.0f;                               // v_{t+1} - V(x_{t+1})
  for (int t = horizon - 1; t >= 0; --t) {
    const int at = t * num_envs + env;
    const float next_weight = episode_ends[at] ? 0.0f : 1.0f;
    const float ratio = expf(log_ratios[at]);
    const float rho = fminf(c.rho_bar, ratio);
    const float trace = c.lambda * fminf(c.c_bar, ratio);
    const float value = values[at];
    const float delta = rho * (rewards[at] + c.gamma * next_weight * values[at + num_envs] - value);
    const float excess = delta + c.gamma * trace * next_weight * next_excess;
    const float advantage = rewards[at] + c.gamma * next_weight * next_target - value;
    if (pg_weights) {
      pg_weights[at] = rho;
      advantages[at] = advantage;
    } else {
      advantages[at] = rho * advantage;
    }
    targets[at] = value + excess;
    next_excess = excess;
    next_target = targets[at];
  }
}

}  // namespace gmi::rl
