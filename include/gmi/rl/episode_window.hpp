#pragma once
// The "solved" decision of gmi::run and gmi.bench.ppo: finished-episode statistics are folded in as they arrive
// (read asynchronously every few iterations); once a window covers min_episodes episodes, its mean return is the
// current score and the window starts again.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

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

// Mean return over env steps, at most `cap` points however long the run: when full, every other point goes and
// only every second later mean is kept (and so on), so the points stay evenly spread; the latest mean is always
// the last point.
class learning_curve {
 public:
  explicit learning_curve(std::size_t cap = 128) : cap_(cap < 2 ? 2 : cap) {}

  void add(double env_steps, double mean_return) {
    if (seen_++ % stride_ == 0) {
      kept_.push_back({env_steps, mean_return});
      if (kept_.size() > cap_) {
        std::size_t w = 0;
        for (std::size_t r = 0; r < kept_.size(); r += 2) kept_[w++] = kept_[r];
        kept_.resize(w);
        stride_ *= 2;
      }
    }
    last_ = {env_steps, mean_return};
  }

  // (env steps, mean return) pairs in order, the latest included.
  [[nodiscard]] std::vector<std::array<double, 2>> points() const {
    std::vector<std::array<double, 2>> p = kept_;
    if (last_ && (p.empty() || p.back() != *last_)) p.push_back(*last_);
    return p;
  }

 private:
  std::size_t cap_;
  std::size_t stride_ = 1;
  std::uint64_t seen_ = 0;
  std::vector<std::array<double, 2>> kept_;
  std::optional<std::array<double, 2>> last_;
};

}  // namespace gmi::rl
