// A policy that opts in but does not say whether it runs on the device is refused, naming the missing member.
#include <gmi/exec/policy.hpp>

struct my_policy {
  using exec_concept = gmi::exec::policy_tag;
#ifndef GMI_EXPECT_COMPILE_FAIL
  static constexpr bool on_device = true;
#endif
};

static_assert(gmi::exec::check_policy<my_policy>());

int main() { return 0; }
