#pragma once
// The "solved" decision of gmi::run and gmi.bench.ppo: finished-episode statistics are folded in as they arrive
// (read asynchronously every few iterations); once a window covers min_episodes episodes, its mean return is the
// current score and the window starts again.

#include <cstdint>
#include <optional>

#include <gmi/rl/env_batch.hpp>

namespace gmi::rl {

class episode_window {
 public:
  explicit episode_window(std::uint64_t min_episodes = 32) : min_episodes_(min_episodes) {}

  // Folds in statistics; returns the window's mean return when it closes.
  std::optional<double> add(const episode_stats& s) {
    episodes_ += s.episodes;
    return_sum_ += s.return_sum;
    length_sum_ += s.length_sum;
    if (episodes_ < min_episodes_ || episodes_ == 0) return std::nullopt;
    last_mean_ = return_sum_ / static_cast<double>(episodes_);
    last_length_ = length_sum_ / static_cast<double>(episodes_);
    episodes_ = 0;
    return_sum_ = length_sum_ = 0;
    return last_mean_;
  }
  [[nodiscard]] std::optional<double> last_mean() const { return last_mean_; }
  [[nodiscard]] std::optional<double> last_length() const { return last_length_; }

 private:
  std::uint64_t min_episodes_;
  std::uint64_t episodes_ = 0;
  double return_sum_ = 0, length_sum_ = 0;
  std::optional<double> last_mean_, last_length_;
};

}  // namespace gmi::rl
