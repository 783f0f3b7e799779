#pragma once
// The rollout statistics all-gather carried by a float sum (comm::row_exchange): each double travels as three
// floats holding 22-, 22- and 20-bit integers, so a sum in which every other member adds exact zeros gives the
// same bits back (a double's bits reinterpreted as floats would not survive: -0 and NaN patterns change); and the
// records' merge in rank order with the rounding of nn::merge_in_order on the host (no fused multiply-adds), so
// a group that gathers on the device ends with the host gather's bits. Host and device.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <gmi/core/hd.hpp>

namespace gmi::rl::detail {

inline constexpr int words_per_double = 3;

// The floats a group of `world` members exchanges to gather `values` doubles from each.
constexpr std::size_t gather_words(int world, std::size_t values) {
  return static_cast<std::size_t>(world) * values * words_per_double;
}

GMI_HD inline std::uint64_t double_bits(double v) {
#if GMI_IN_DEVICE_CODE
  return static_cast<std::uint64_t>(__double_as_longlong(v));
#else
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
#endif
}
GMI_HD inline double bits_double(std::uint64_t b) {
#if GMI_IN_DEVICE_CODE
  return __longlong_as_double(static_cast<long long>(b));
#else
  double v;
  std::memcpy(&v, &b, sizeof v);
  return v;
#endif
}

GMI_HD inline void double_to_words(double v, float* w) {
  const std::uint64_t b = double_bits(v);
  w[0] = static_cast<float>(static_cast<std::uint32_t>(b & 0x3FFFFFu));
  w[1] = static_cast<float>(static_cast<std::uint32_t>((b >> 22) & 0x3FFFFFu));
  w[2] = static_cast<float>(static_cast<std::uint32_t>(b >> 44));
}
GMI_HD inline double words_to_double(const float* w) {
  const std::uint64_t b = static_cast<std::uint64_t>(static_cast<std::uint32_t>(w[0])) |
                          static_cast<std::uint64_t>(static_cast<std::uint32_t>(w[1])) << 22 |
                          static_cast<std::uint64_t>(static_cast<std::uint32_t>(w[2])) << 44;
  return bits_double(b);
}

// Double arithmetic rounded after each operation (nvcc would otherwise fuse a multiply and an add).
GMI_HD inline double add_rn(double a, double b) {
#if GMI_IN_DEVICE_CODE
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
GMI_HD inline double mul_rn(double a, double b) {
#if GMI_IN_DEVICE_CODE
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
GMI_HD inline double div_rn(double a, double b) {
#if GMI_IN_DEVICE_CODE
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

// What merging a record of count_b into one of count_a does to every feature, from the two counts alone: the
// mean's weight count_b / total and the M2 term's count_a * count_b / total (none when total <= 0). Every
// feature of a record shares them, so they can be worked out once (merge_weights_rn) and in parallel.
struct merge_weights {
  double ratio = 0, weight = 0;
  bool skip = true;
};
GMI_HD inline merge_weights merge_weights_rn(double count_a, double count_b) {
  merge_weights w;
  const double total = add_rn(count_a, count_b);
  w.skip = total <= 0;
  if (!w.skip) {
    w.ratio = div_rn(count_b, total);
    w.weight = div_rn(mul_rn(count_a, count_b), total);
  }
  return w;
}
// One feature's mean and M2 after the merge whose weights are w.
GMI_HD inline void merge_feature_rn(double& mean_a, double& m2_a, double mean_b, double m2_b, const merge_weights& w) {
  if (w.skip) return;
  const double delta = add_rn(mean_b, -mean_a);
  mean_a = add_rn(mean_a, mul_rn(delta, w.ratio));
  m2_a = add_rn(m2_a, add_rn(m2_b, mul_rn(mul_rn(delta, delta), w.weight)));
}

// nn::detail::merge_moments, rounded as the host rounds it.
GMI_HD inline void merge_moments_rn(double count_a, double& mean_a, double& m2_a, double count_b, double mean_b,
                                    double m2_b) {
  merge_feature_rn(mean_a, m2_a, mean_b, m2_b, merge_weights_rn(count_a, count_b));
}

// nn::merge_in_order over `world` records [count | mean[dim] | M2[dim]], record r's value i at value(r, i): the
// merged record into out (1 + 2 * dim doubles).
template <class Value>
GMI_HD void merge_in_order_rn(int world, int dim, Value value, double* out) {
  const int size = 1 + 2 * dim;
  for (int i = 0; i < size; ++i) out[i] = value(0, i);
  for (int r = 1; r < world; ++r) {
    const double count_b = value(r, 0);
    for (int f = 0; f < dim; ++f)
      merge_moments_rn(out[0], out[1 + f], out[1 + dim + f], count_b, value(r, 1 + f), value(r, 1 + dim + f));
    out[0] = add_rn(out[0], count_b);
  }
}

// merge_in_order_rn taken apart so that threads share it, with the same bits: the counts added in rank order
// (merge_counts_rn: running[r] the count of records 0 .. r - 1, running[world] the total), every record's weights
// (merge_weights_rn(running[r], count of record r), r = 1 .. world - 1, each on its own), then each feature on its
// own over the records in rank order with those weights (merge_feature_in_order_rn).
template <class Value>
GMI_HD void merge_counts_rn(int world, Value value, double* running) {
  running[0] = 0;
  if (world < 1) return;
  running[1] = value(0, 0);
  for (int r = 1; r < world; ++r) running[r + 1] = add_rn(running[r], value(r, 0));
}
// Feature f of a record [count | mean[dim] | M2[dim]]: its merged mean and M2 over the world's records.
template <class Value, class Weights>
GMI_HD void merge_feature_in_order_rn(int world, int dim, int f, Value value, Weights weights, double& mean, double& m2) {
  mean = value(0, 1 + f);
  m2 = value(0, 1 + dim + f);
  for (int r = 1; r < world; ++r) merge_feature_rn(mean, m2, value(r, 1 + f), value(r, 1 + dim + f), weights(r));
}

// mean and 1 / (std + 1e-8) (unbiased std) from a record [count | mean | M2]: ppo_trainer::advantage_scale.
GMI_HD inline void advantage_scale_rn(const double* record, float* stats) {
  double std = 0.0;
#if GMI_IN_DEVICE_CODE
  if (record[0] > 1) std = __dsqrt_rn(div_rn(record[2], add_rn(record[0], -1.0)));
#else
  if (record[0] > 1) std = __builtin_sqrt(div_rn(record[2], add_rn(record[0], -1.0)));
#endif
  stats[0] = static_cast<float>(record[1]);
  stats[1] = static_cast<float>(div_rn(1.0, add_rn(std, 1e-8)));
}

}  // namespace gmi::rl::detail
