// The synced PPO iteration's statistics gather inside one kernel (rl::detail::ppo_stats_gather_kernel): 8 members
// on one GPU, every member's row holding garbage before the call (as its gradient buffer does), 60-dimensional
// observation records (ant_proxy's), many rounds. Every member must end with the host's merge in rank order,
// bit for bit: a record word lost on the way (a member's row word left as garbage, or zeroed after the member
// wrote it) changes some member's merged record.
#include <doctest/doctest.h>

#include "stats_gather_runs.hpp"

#include <gmi/nn/normalizer.hpp>
#include <gmi/rl/detail/stats_words.hpp>

#include <cstring>
#include <vector>

namespace {
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("rl_gpu.stats_gather.every_member_gets_the_host_merge" * doctest::timeout(300)) {
    stats_gather_rounds o;
    const auto rounds = run_stats_gather(o);
    REQUIRE(rounds.size() == static_cast<std::size_t>(o.rounds));
    const int part_at[3] = {0, 3, 3 + 1 + 2 * o.obs_dim}, part_dim[3] = {1, o.obs_dim, 1};
    int wrong_rounds = 0, messages = 0;
    for (std::size_t k = 0; k < rounds.size(); ++k) {
      const auto& r = rounds[k];
      std::vector<double> want(static_cast<std::size_t>(stats_gather_values(o.obs_dim)));
      for (int p = 0; p < 3; ++p) {
        const std::size_t size = 1 + 2 * static_cast<std::size_t>(part_dim[p]);
        std::vector<double> part;
        for (const auto& mine : r.local) part.insert(part.end(), mine.begin() + part_at[p], mine.begin() + part_at[p] + static_cast<std::ptrdiff_t>(size));
        const auto m = gmi::nn::merge_in_order({part.data(), part.size()}, part_dim[p]);
        std::copy(m.begin(), m.end(), want.begin() + part_at[p]);
      }
      float scale[2];
      gmi::rl::detail::advantage_scale_rn(want.data(), scale);
      bool round_ok = true;
      for (std::size_t member = 0; member < r.merged.size(); ++member)
        for (std::size_t i = 0; i < want.size(); ++i)
          if (!same_bits(r.merged[member][i], want[i])) {
            if (round_ok && messages < 5) {
              ++messages;
              MESSAGE("round " << k << ": member " << member << "'s value " << i << " is " << r.merged[member][i]
                               << ", the host merge " << want[i]);
            }
            round_ok = false;
          }
      for (const auto& s : r.advantage_stats)
        if (s[0] != scale[0] || s[1] != scale[1]) round_ok = false;
      wrong_rounds += round_ok ? 0 : 1;
    }
    CHECK(wrong_rounds == 0);
  }
}
