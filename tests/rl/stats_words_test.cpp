// The statistics all-gather's encoding (rl/detail/stats_words.hpp): a double survives as three float words
// through a float sum in which the other members add zeros, bit for bit, even where its raw bits would not as
// floats; the merge in rank order gives nn::merge_in_order's bits.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <gmi/core/rng.hpp>
#include <gmi/nn/normalizer.hpp>
#include <gmi/rl/detail/stats_words.hpp>

namespace {
namespace d = gmi::rl::detail;

// What row_exchange does with one slot: members' rows summed in rank order, only `owner`'s non-zero.
double through_sum(double v, int owner, int members) {
  float w[d::words_per_double];
  d::double_to_words(v, w);
  float sums[d::words_per_double];
  for (int k = 0; k < d::words_per_double; ++k) {
    float s = owner == 0 ? w[k] : 0.0f;
    for (int r = 1; r < members; ++r) s += r == owner ? w[k] : 0.0f;
    sums[k] = s;
  }
  return d::words_to_double(sums);
}
}  // namespace

TEST_CASE("rl.stats_words.doubles_survive_a_sum_with_zeros") {
  std::vector<double> values = {0.0, -0.0, 1.0, -1.0, 1e-310, -1e-310, 1e300, 4096.0, 0.1, -123.456789,
                                std::numeric_limits<double>::infinity(), std::numeric_limits<double>::max()};
  gmi::rng r(3, 4);
  for (int i = 0; i < 1000; ++i) values.push_back(d::bits_double((static_cast<std::uint64_t>(r.next_u32()) << 32) | r.next_u32()));
  int raw_changed = 0;
  for (double v : values) {
    const std::uint64_t want = d::double_bits(v);
    for (int owner : {0, 1, 3}) CHECK(d::double_bits(through_sum(v, owner, 4)) == want);
    // the control: the double's two halves as floats through the same sum (zeros added) lose bits for some values
    float halves[2];
    std::memcpy(halves, &v, sizeof v);
    for (float& h : halves) h = 0.0f + h + 0.0f;
    double back;
    std::memcpy(&back, halves, sizeof back);
    raw_changed += d::double_bits(back) != want;
  }
  CHECK(raw_changed > 0);
  float w[d::words_per_double];
  d::double_to_words(-0.0, w);
  for (float x : w) CHECK(x >= 0.0f);  // every word a non-negative integer below 2^22
  CHECK(d::gather_words(4, 15) == 180u);
}

TEST_CASE("rl.stats_words.merge_in_order_has_the_host_bits") {
  gmi::rng r(5, 6);
  for (int dim : {1, 4, 11}) {
    for (int world : {1, 2, 5, 16}) {
      const int size = 1 + 2 * dim;
      std::vector<double> records(static_cast<std::size_t>(world * size));
      for (int k = 0; k < world; ++k) {
        double* rec = records.data() + k * size;
        rec[0] = k == 2 ? 0.0 : 100.0 + 37.0 * k;  // an empty record too
        for (int f = 0; f < dim; ++f) {
          rec[1 + f] = r.uniform(-3.0f, 3.0f) * 1.37;
          rec[1 + dim + f] = rec[0] * r.uniform(0.1f, 2.0f) * 0.91;
        }
      }
      const std::vector<double> want =
          gmi::nn::merge_in_order(gmi::host_span<const double>(records.data(), records.size()), dim);
      std::vector<double> got(static_cast<std::size_t>(size));
      d::merge_in_order_rn(world, dim, [&](int k, int i) { return records[static_cast<std::size_t>(k * size + i)]; },
                           got.data());
      CAPTURE(dim);
      CAPTURE(world);
      CHECK(got == want);
    }
  }
  // the advantage scale: 1 / (unbiased std + 1e-8)
  const double rec[3] = {5.0, 0.5, 8.0};
  float s[2];
  d::advantage_scale_rn(rec, s);
  CHECK(s[0] == 0.5f);
  CHECK(s[1] == static_cast<float>(1.0 / (std::sqrt(2.0) + 1e-8)));
}

// The merge as the stats gather kernel spreads it over threads (counts in rank order, every record's weights on
// their own, each feature on its own) gives merge_in_order_rn's bits, empty and negative-count records included.
TEST_CASE("rl.stats_words.merge_taken_apart_has_the_same_bits") {
  gmi::rng r(7, 8);
  for (int dim : {1, 4, 11}) {
    for (int world : {1, 2, 5, 16, 32, 64}) {
      const int size = 1 + 2 * dim;
      std::vector<double> records(static_cast<std::size_t>(world * size));
      for (int k = 0; k < world; ++k) {
        double* rec = records.data() + k * size;
        rec[0] = k == 1 ? 0.0 : k == 3 ? -5.0 : 1.0 + static_cast<double>(r.next_u32() % 100000);
        for (int f = 0; f < dim; ++f) {
          rec[1 + f] = r.uniform(-3.0f, 3.0f) * 1.37 + 1e-3 * k;
          rec[1 + dim + f] = std::abs(rec[0]) * r.uniform(0.1f, 2.0f) * 0.91;
        }
      }
      const auto value = [&](int k, int i) { return records[static_cast<std::size_t>(k * size + i)]; };
      std::vector<double> want(static_cast<std::size_t>(size));
      d::merge_in_order_rn(world, dim, value, want.data());
      std::vector<double> running(static_cast<std::size_t>(world + 1));
      d::merge_counts_rn(world, value, running.data());
      std::vector<d::merge_weights> weights(static_cast<std::size_t>(world));
      for (int k = world - 1; k >= 1; --k) weights[static_cast<std::size_t>(k)] = d::merge_weights_rn(running[k], value(k, 0));  // any order
      std::vector<double> got(static_cast<std::size_t>(size));
      got[0] = running[static_cast<std::size_t>(world)];
      for (int f = dim - 1; f >= 0; --f)
        d::merge_feature_in_order_rn(world, dim, f, value, [&](int k) { return weights[static_cast<std::size_t>(k)]; },
                                     got[1 + f], got[1 + dim + f]);
      CAPTURE(dim);
      CAPTURE(world);
      for (std::size_t i = 0; i < want.size(); ++i) {
        CAPTURE(i);
        CHECK(d::double_bits(got[i]) == d::double_bits(want[i]));
      }
    }
  }
  // The weights alone: a merge with a zero total leaves the feature; a wrong weight would change it.
  double mean = 1.5, m2 = 2.0;
  d::merge_feature_rn(mean, m2, 9.0, 9.0, d::merge_weights_rn(0.0, 0.0));
  CHECK(mean == 1.5);
  CHECK(m2 == 2.0);
  d::merge_feature_rn(mean, m2, 3.5, 1.0, d::merge_weights_rn(1.0, 1.0));
  CHECK(mean == 2.5);
  CHECK(m2 == 2.0 + 1.0 + 4.0 * 0.5);
}
