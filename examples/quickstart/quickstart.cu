// The smallest gmi program: the same Monte-Carlo kernel body runs on host threads (exec::host) and, when a
// GPU is present, as a CUDA kernel (exec::cuda); Philox streams make both draw the same numbers.
#include <gmi/gmi.hpp>

#include <gmi/runtime/flags.hpp>

#include <chrono>
#include <cstdio>
#include <numeric>
#include <vector>

namespace {
// Sample i lands inside the unit quarter circle? Same function on host and device.
struct inside_circle {
  unsigned long long seed;
  unsigned char* out;
  GMI_HD void operator()(std::size_t i) const {
    gmi::rng r(seed, i);
    const float x = r.uniform(), y = r.uniform();
    out[i] = x * x + y * y < 1.0f;
  }
};

double estimate(std::size_t hits, std::size_t n) { return 4.0 * static_cast<double>(hits) / static_cast<double>(n); }
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gmi quickstart: one kernel body on host threads and on the GPU", "quickstart"};
  std::size_t samples = 10'000'000;
  unsigned long long seed = 1;
  app.add_option("--samples", samples, "number of random points")->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32));
  app.add_option("--seed", seed, "Philox seed");
  if (const auto exit_code = gmi::runtime::parse_flags(app, argc, argv)) return *exit_code;

  try {
    std::vector<unsigned char> host_hits(samples);
    const auto t0 = std::chrono::steady_clock::now();
    gmi::exec::for_each(gmi::exec::host{}, samples, inside_circle{seed, host_hits.data()});
    const double host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::size_t host_count = std::accumulate(host_hits.begin(), host_hits.end(), std::size_t{0});
    std::printf("host  (%u threads): pi ~ %.5f  (%.1f M samples/s)\n", gmi::exec::detail::shared_pool()->concurrency(),
                estimate(host_count, samples), samples / host_s / 1e6);

    const auto gpus = gmi::cuda::device_count();
    if (!gpus) {
      std::printf("gpu: not run: %s\n", gpus.error().message().c_str());
      return 0;
    }
    const auto info = gmi::cuda::describe_device(0);
    gmi::cuda::stream stream;
    gmi::cuda::device_buffer<unsigned char> device_hits(samples);
    gmi::cuda::event start(gmi::cuda::event::timing::enabled), stop(gmi::cuda::event::timing::enabled);
    const gmi::exec::cuda on_gpu{.stream = stream.get()};
    gmi::exec::for_each(on_gpu, samples, inside_circle{seed, device_hits.data()});  // warm-up
    start.record(stream);
    gmi::exec::for_each(on_gpu, samples, inside_circle{seed, device_hits.data()});
    stop.record(stream);
    std::vector<unsigned char> copied(samples);
    gmi::cuda::copy(gmi::host_span<unsigned char>(copied.data(), samples), device_hits.span(), stream);
    stream.synchronize();
    const std::size_t gpu_count = std::accumulate(copied.begin(), copied.end(), std::size_t{0});
    std::printf("gpu   (%s, %d SMs): pi ~ %.5f  (%.1f M samples/s); same points as host: %s\n", info.name.c_str(),
                info.sm_count, estimate(gpu_count, samples), samples / (elapsed_ms(start, stop) * 1e-3) / 1e6,
                copied == host_hits ? "yes" : "NO");
    return copied == host_hits ? 0 : 1;
  } catch (const gmi::error& e) {
    std::fprintf(stderr, "gmi quickstart: %s\n", e.what());
    return 1;
  }
}
