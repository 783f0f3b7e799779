// Consumer test program: includes the umbrella header, uses the host execution policy and the RNG, and runs
// the CUDA part when a GPU is present.
#include <gmi/gmi.hpp>

#include <atomic>
#include <cstdio>

double device_mean_uniform(unsigned long long seed, int n);  // kernels.cu

int main() {
  std::atomic<int> count{0};
  gmi::exec::for_each(gmi::exec::host{}, 1000, [&](std::size_t) { count += 1; });
  gmi::rng r(1, 2);
  const float u = r.uniform();
  if (count != 1000 || !(u >= 0.f && u < 1.f)) {
    std::printf("gmi consumer: FAILED host part\n");
    return 1;
  }
  if (const auto gpus = gmi::cuda::device_count(); gpus) {
    const double mean = device_mean_uniform(3, 1 << 16);
    if (mean < 0.49 || mean > 0.51) {
      std::printf("gmi consumer: FAILED device mean %f\n", mean);
      return 1;
    }
    std::printf("device part ran on %d GPU(s)\n", *gpus);
  } else {
    std::printf("device part not run: %s\n", gpus.error().message().c_str());
  }
  std::printf("gmi consumer: ok (gmi %s)\n", gmi::version_string);
  return 0;
}
