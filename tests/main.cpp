// The one main of gmi's test binaries. A binary built with GMI_TEST_MIN_GPUS > 0 first checks that many CUDA
// devices are visible; if not, it prints why and exits 77, which CTest reports as skipped (not passed).
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <gmi/cuda/device.hpp>

#ifndef GMI_TEST_MIN_GPUS
#define GMI_TEST_MIN_GPUS 0
#endif

int main(int argc, char** argv) {
  setenv("NCCL_NVLS_ENABLE", "0", 1);  // every gmi process keeps NVLink multicast off
  bool only_listing = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg.find("list") != std::string_view::npos || arg == "-ltc" || arg == "-lts" || arg == "-h" ||
        arg == "--help" || arg == "-v" || arg == "--version") {
      only_listing = true;
    }
  }
  if (GMI_TEST_MIN_GPUS > 0 && !only_listing) {
    const gmi::status st = gmi::cuda::require_devices(GMI_TEST_MIN_GPUS);
    if (!st) {
      std::printf("[gmi] SKIPPED: this test needs %d GPU(s): %s\n", GMI_TEST_MIN_GPUS, st.message().c_str());
      return 77;
    }
  }
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  const int rc = context.run();
  // The driver removes its file for this process's interprocess events (cuda.shm.*) only when the contexts go.
  if (GMI_TEST_MIN_GPUS > 0) gmi::cuda::release_primary_contexts();
  return rc;
}
