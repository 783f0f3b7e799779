#pragma once
// Running mean and variance per feature (observations, values), normalising with clipping as rl_games does.
// Statistics are one flat record of doubles [count | mean[dim] | M2[dim]] so instances (GMIs) can exchange and
// merge them (Chan et al.'s parallel update). By default the statistics weigh every sample ever seen (rl_games'
// RunningMeanStd); with a window W they forget: before a batch of n samples is merged, the held statistics are
// scaled down to at most W - n samples (mean and variance kept), so old data fades geometrically and a task whose
// scale shrinks as the policy improves (the LQ proxies' states and returns) is normalized by its recent scale.
// Host path here; CUDA path in normalizer.cuh.

#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/span.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/nn/detail/math.hpp>

namespace gmi::nn {

struct normalizer_config {
  float clip = 5.0f;       // normalised values are clamped to [-clip, clip] (rl_games default)
  double epsilon = 1e-5;   // added to the variance before the square root
  double window = 0;       // samples the statistics weigh at most after a merge; 0: every sample ever seen
  // true: the view maps through symlog instead (normalize(x) = sign(x) ln(1 + |x|), denormalize its inverse), the
  // statistics left unused: one scale for small and large returns alike (the PPO value head's value_symlog).
  bool symlog = false;
  // false: the view scales by the std only, normalize(x) = x / std and denormalize(y) = y * std, the mean kept in
  // the values (rl_games' norm_only; the PPO value head's value_scale_only).
  bool center = true;

  void validate() const {
    gmi::require(std::isfinite(clip) && clip > 0, "normalizer clip", clip, "> 0");
    gmi::require(std::isfinite(epsilon) && epsilon > 0, "normalizer epsilon", epsilon, "> 0");
    gmi::require(std::isfinite(window) && window >= 0, "normalizer window", window,
                 ">= 0 samples and finite (0: every sample)");
  }
};

// What a kernel or host loop needs to normalise one sample: float mean and std (sqrt(var + epsilon)).
struct normalizer_view {
  const float* mean = nullptr;
  const float* std = nullptr;
  int dim = 0;
  float clip = 5.0f;
  bool symlog = false;  // normalizer_config::symlog
  bool center = true;   // normalizer_config::center

  GMI_HD float normalize(int i, float x) const {
    if (symlog) return copysignf(log1pf(fabsf(x)), x);
    return detail::clamp_((center ? x - mean[i] : x) / std[i], -clip, clip);
  }
  GMI_HD void normalize(const float* x, float* y) const {
    for (int i = 0; i < dim; ++i) y[i] = normalize(i, x[i]);
  }
  // The inverse (without the clipping), e.g. to turn a normalised value prediction into a return.
  GMI_HD float denormalize(int i, float y) const {
    if (symlog) return copysignf(expm1f(fminf(fabsf(y), 80.0f)), y);
    return center ? y * std[i] + mean[i] : y * std[i];
  }
  GMI_HD void denormalize(const float* y, float* x) const {
    for (int i = 0; i < dim; ++i) x[i] = denormalize(i, y[i]);
  }
};

namespace detail {
// Merges moments (count_b, mean_b, m2_b) into (count_a, mean_a, m2_a) for one feature (Chan et al. 1979).
GMI_HD inline void merge_moments(double count_a, double& mean_a, double& m2_a, double count_b, double mean_b,
                                 double m2_b) {
  const double total = count_a + count_b;
  if (total <= 0) return;
  const double delta = mean_b - mean_a;
  mean_a += delta * (count_b / total);
  m2_a += m2_b + delta * delta * (count_a * count_b / total);
}
// The count the held statistics keep before a batch of count_b samples is merged under `window` (0: all of
// count_a); their M2 is scaled by kept / count_a so the variance stays.
GMI_HD inline double kept_count(double count_a, double count_b, double window) {
  if (window <= 0 || count_a + count_b <= window) return count_a;
  const double room = window - count_b;
  return room > 0 ? room : 0.0;
}
// Float mean and std of one feature; before any data: mean 0, std 1.
GMI_HD inline void float_stats(double count, double mean, double m2, double epsilon, float& mean_f, float& std_f) {
  if (count <= 0) {
    mean_f = 0.0f;
    std_f = 1.0f;
    return;
  }
  mean_f = static_cast<float>(mean);
  std_f = static_cast<float>(sqrt_(m2 / count + epsilon));
}
}  // namespace detail

// Merges k records [count | mean[dim] | M2[dim]] laid end to end, in their order: the first as it is, then each
// next one into it (Chan et al.). Every instance that runs this on the same records gets the same bits, and one
// record comes back unchanged.
inline std::vector<double> merge_in_order(host_span<const double> records, int dim) {
  const std::size_t size = 1 + 2 * static_cast<std::size_t>(dim);
  gmi::require(dim >= 1 && !records.empty() && records.size() % size == 0, "merge_in_order: record values",
               records.size(), "a positive multiple of 1 + 2 * dim = " + std::to_string(size));
  std::vector<double> out(records.begin(), records.begin() + size);
  for (std::size_t r = size; r < records.size(); r += size) {
    const double* b = records.data() + r;
    for (int f = 0; f < dim; ++f) detail::merge_moments(out[0], out[1 + f], out[1 + dim + f], b[0], b[1 + f], b[1 + dim + f]);
    out[0] += b[0];
  }
  return out;
}

template <class Policy>
class running_mean_std {
  static_assert(!std::is_same_v<Policy, Policy>,
                "gmi::nn::running_mean_std: use exec::host (normalizer.hpp) or exec::cuda (include "
                "<gmi/nn/normalizer.cuh>, nvcc)");
};

template <>
class running_mean_std<exec::host> {
 public:
  explicit running_mean_std(int dim, normalizer_config config = {}, exec::host policy = {})
      : dim_(dim), config_(config), policy_(std::move(policy)) {
    gmi::require(dim >= 1, "normalizer dim", dim, ">= 1");
    config_.validate();
    stats_.assign(1 + 2 * static_cast<std::size_t>(dim), 0.0);
    mean_f_.assign(dim, 0.0f);
    std_f_.assign(dim, 1.0f);
  }

  [[nodiscard]] int dim() const noexcept { return dim_; }
  [[nodiscard]] double count() const noexcept { return stats_[0]; }
  [[nodiscard]] host_span<const double> mean() const noexcept { return {stats_.data() + 1, std::size_t(dim_)}; }
  [[nodiscard]] host_span<const double> m2() const noexcept { return {stats_.data() + 1 + dim_, std::size_t(dim_)}; }
  // Population variance M2 / count (0 before any data).
  [[nodiscard]] std::vector<double> variance() const {
    std::vector<double> var(dim_, 0.0);
    if (count() > 0)
      for (int i = 0; i < dim_; ++i) var[i] = stats_[1 + dim_ + i] / count();
    return var;
  }
  // The flat record [count | mean | M2], what another instance merges.
  [[nodiscard]] host_span<const double> stats() const noexcept { return {stats_.data(), stats_.size()}; }

  // Folds a batch x[n][dim] in: two-pass batch mean and M2 (in double), then the parallel merge.
  void update(host_span<const float> x) {
    gmi::require(x.size() % std::size_t(dim_) == 0, "normalizer update: batch size", x.size(),
                 "a multiple of dim " + std::to_string(dim_));
    const std::vector<double> batch = moments(x);
    if (batch[0] > 0) merge(host_span<const double>(batch.data(), batch.size()));
  }

  // The record [n | mean | M2] of a batch x[n][dim], what update() merges; instances that each take in part of
  // one batch exchange these and merge them all (merge_in_order), so they end with the same statistics.
  [[nodiscard]] std::vector<double> moments(host_span<const float> x) const {
    gmi::require(x.size() % std::size_t(dim_) == 0, "normalizer moments: batch size", x.size(),
                 "a multiple of dim " + std::to_string(dim_));
    const std::size_t n = x.size() / dim_;
    std::vector<double> batch(stats_.size(), 0.0);
    if (n == 0) return batch;
    batch[0] = static_cast<double>(n);
    const float* xs = x.data();
    double* b = batch.data();
    const int d = dim_;
    exec::for_each(policy_, std::size_t(dim_), [=](std::size_t f) {
      double sum = 0;
      for (std::size_t s = 0; s < n; ++s) sum += xs[s * d + f];
      const double mean = sum / static_cast<double>(n);
      double m2 = 0;
      for (std::size_t s = 0; s < n; ++s) {
        const double e = xs[s * d + f] - mean;
        m2 += e * e;
      }
      b[1 + f] = mean;
      b[1 + d + f] = m2;
    });
    return batch;
  }

  // Merges another record [count | mean | M2] of the same dim (another instance's statistics, or a batch's),
  // forgetting under the window first.
  void merge(host_span<const double> other) {
    gmi::require(other.size() == stats_.size(), "normalizer merge: record size", other.size(),
                 "== 1 + 2 * dim = " + std::to_string(stats_.size()));
    const double held = stats_[0], cb = other[0], ca = detail::kept_count(held, cb, config_.window);
    for (int f = 0; f < dim_; ++f) {
      if (ca < held) stats_[1 + dim_ + f] *= ca / held;
      detail::merge_moments(ca, stats_[1 + f], stats_[1 + dim_ + f], cb, other[1 + f], other[1 + dim_ + f]);
    }
    stats_[0] = ca + cb;
    refresh();
  }

  // Replaces the statistics with a record (a checkpoint, or the merged result of all instances).
  void assign(host_span<const double> record) {
    gmi::require(record.size() == stats_.size(), "normalizer assign: record size", record.size(),
                 "== 1 + 2 * dim = " + std::to_string(stats_.size()));
    stats_.assign(record.begin(), record.end());
    refresh();
  }

  [[nodiscard]] normalizer_view view() const noexcept {
    return {mean_f_.data(), std_f_.data(), dim_, config_.clip, config_.symlog, config_.center};
  }

  // y[n][dim] = clamp((x - mean) / std, -clip, clip).
  void normalize(host_span<const float> x, host_span<float> y) const {
    gmi::require(y.size() == x.size(), "normalizer normalize: output size", y.size(), "== input size " + std::to_string(x.size()));
    gmi::require(x.size() % std::size_t(dim_) == 0, "normalizer normalize: input size", x.size(),
                 "a multiple of dim " + std::to_string(dim_));
    const normalizer_view v = view();
    const float* xs = x.data();
    float* ys = y.data();
    exec::for_each(policy_, x.size(), [=](std::size_t i) { ys[i] = v.normalize(int(i % v.dim), xs[i]); });
  }

 private:
  void refresh() {
    for (int f = 0; f < dim_; ++f)
      detail::float_stats(stats_[0], stats_[1 + f], stats_[1 + dim_ + f], config_.epsilon, mean_f_[f], std_f_[f]);
  }

  int dim_;
  normalizer_config config_;
  exec::host policy_;
  std::vector<double> stats_;
  std::vector<float> mean_f_, std_f_;
};

}  // namespace gmi::nn
