#pragma once
// The worker side of the runtime tests: the test binary re-execs itself as GMIs (the launcher's default), and
// a static initializer in worker_scenarios.cpp turns such a process into the worker named by GMI_TEST_SCENARIO
// before doctest's main runs. The same scenario bodies serve thread GMIs.

#include <gmi/runtime/context.hpp>

#include <string>

namespace gmi_test {

// Runs `scenario` ("beat", "crash", "hang", "throw", "exit3", "comm", "ignore_term", "quit_early", ...) as the
// GMI of `ctx`; `victim` is the rank that misbehaves.
void run_scenario(gmi::runtime::context& ctx, const std::string& scenario, int victim);

}  // namespace gmi_test
