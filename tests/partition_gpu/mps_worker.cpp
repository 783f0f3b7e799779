// A GMI process of the MPS tests: checks its MPS client state, writes "<mps_enabled> <sm_count>" to
// $GMI_TEST_OUT/rank<r>.txt, and with GMI_TEST_SCENARIO=beat keeps beating until the supervisor stops it.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <gmi/partition/mps.hpp>
#include <gmi/runtime/launcher.hpp>

int main() {
  const auto id = gmi::runtime::this_gmi();
  if (!id) {
    std::fprintf(stderr, "gmi.test.partition_gpu_worker: start me through the gmi launcher\n");
    return 2;
  }
  return gmi::runtime::run_worker(*id, [](gmi::runtime::context& ctx) {
    ctx.set_gpu();
    const auto state = gmi::partition::mps::verify_client(0, ctx.id().device_sms);
    const char* out = std::getenv("GMI_TEST_OUT");
    if (out) {
      std::ofstream(std::string(out) + "/rank" + std::to_string(ctx.rank()) + ".txt")
          << (state.mps_enabled ? 1 : 0) << ' ' << state.sm_count << ' ' << state.device_sms << '\n';
    }
    const char* scenario = std::getenv("GMI_TEST_SCENARIO");
    if (scenario && std::string(scenario) == "beat") {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!ctx.stop_requested() && std::chrono::steady_clock::now() < until) {
        ctx.heartbeat();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    ctx.barrier(ctx.all());
  });
}
