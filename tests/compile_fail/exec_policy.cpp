// A type that does not opt in to gmi::exec::policy is refused with a sentence that says how to opt in.
#include <gmi/exec/policy.hpp>

struct my_policy {
#ifndef GMI_EXPECT_COMPILE_FAIL
  using exec_concept = gmi::exec::policy_tag;
#endif
  static constexpr bool on_device = false;
};

static_assert(gmi::exec::check_policy<my_policy>());

int main() { return 0; }
