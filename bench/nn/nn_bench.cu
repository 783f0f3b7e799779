// Batched MLP throughput: forward for inference (bench "nn_forward") and forward with the activation record
// plus backward (bench "nn_backward"), for the serving networks of bench-spec.md. One JSON line per metric on
// stdout; with a file argument the lines are appended there too. Timing: CUDA events around `iters` calls on
// one stream, repeated `reps` times after a warm-up; min/median/max over the repetitions.
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/nn/nn.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

using cartpole_net = gmi::nn::mlp<gmi::nn::layers<4, 32, 32, 2>, gmi::nn::elu>;       // mu + value heads
using ant_net = gmi::nn::mlp<gmi::nn::layers<60, 256, 128, 64, 9>, gmi::nn::elu>;
using shadowhand_net = gmi::nn::mlp<gmi::nn::layers<211, 512, 512, 512, 256, 21>, gmi::nn::elu>;

std::string g_run_id, g_device;
std::ofstream g_file;

struct stats {
  double min, median, max;
};

stats time_reps(cudaStream_t s, int reps, int iters, const std::function<void()>& body) {
  for (int i = 0; i < 3; ++i) body();  // warm-up (cuBLAS heuristics, caches)
  GMI_CUDA_TRY(cudaStreamSynchronize(s));
  std::vector<double> seconds;
  cudaEvent_t a, b;
  GMI_CUDA_TRY(cudaEventCreate(&a));
  GMI_CUDA_TRY(cudaEventCreate(&b));
  for (int r = 0; r < reps; ++r) {
    GMI_CUDA_TRY(cudaEventRecord(a, s));
    for (int i = 0; i < iters; ++i) body();
    GMI_CUDA_TRY(cudaEventRecord(b, s));
    GMI_CUDA_TRY(cudaEventSynchronize(b));
    float ms = 0;
    GMI_CUDA_TRY(cudaEventElapsedTime(&ms, a, b));
    seconds.push_back(ms * 1e-3 / iters);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(seconds.begin(), seconds.end());
  return {seconds.front(), seconds[seconds.size() / 2], seconds.back()};
}

void emit(const char* bench, const char* task, const char* path, std::size_t n, const char* metric, double lo,
          double med, double hi, int reps) {
  char line[1024];
  std::snprintf(line, sizeof line,
                "{\"run_id\": \"%s\", \"bench\": \"%s\", \"task\": \"%s\", \"impl\": \"gmi\", \"path\": \"%s\", "
                "\"num_envs\": %zu, \"gmis_per_gpu\": 1, \"partition\": \"none\", \"gpus\": 1, \"device\": \"%s\", "
                "\"metric\": \"%s\", \"median\": %.6g, \"min\": %.6g, \"max\": %.6g, \"reps\": %d, \"git\": \"%s\"}",
                g_run_id.c_str(), bench, task, path, n, g_device.c_str(), metric, med, lo, hi, reps, GMI_GIT_REVISION);
  std::puts(line);
  std::fflush(stdout);
  if (g_file) g_file << line << '\n' << std::flush;
}

template <class Net>
void bench_net(const char* task, std::size_t n) {
  gmi::cuda::stream s;
  // TF32 for the wide networks, as the gemm path this bench measured before the cuBLASLt path.
  gmi::nn::batch_mlp<Net, gmi::exec::cuda> b(gmi::exec::cuda{.stream = s}, n,
                                             gmi::nn::network_config{.precision = gmi::nn::precision::tf32});
  std::vector<float> hp(Net::param_count), hx(n * Net::in);
  gmi::rng g(1, 2);
  for (auto& v : hp) v = g.uniform(-0.05f, 0.05f);
  for (auto& v : hx) v = g.uniform(-1.0f, 1.0f);
  gmi::cuda::device_buffer<float> p(hp.size()), x(hx.size()), out(n * Net::out), acts(b.acts_size(n)),
      d_out(n * Net::out), d_params(Net::param_count);
  GMI_CUDA_TRY(cudaMemcpyAsync(p.data(), hp.data(), p.size_bytes(), cudaMemcpyHostToDevice, s));
  GMI_CUDA_TRY(cudaMemcpyAsync(x.data(), hx.data(), x.size_bytes(), cudaMemcpyHostToDevice, s));
  d_out.fill_bytes(0, s);
  const int reps = 7, iters = 200;
  const double flops = 2.0 * static_cast<double>(Net::layers::forward_macs) * n;
  const auto f = time_reps(s, reps, iters, [&] { b.forward(p, x, out); });
  emit("nn_forward", task, b.path(), n, "samples_per_s", n / f.max, n / f.median, n / f.min, reps);
  emit("nn_forward", task, b.path(), n, "flops_per_s", flops / f.max, flops / f.median, flops / f.min, reps);
  const auto t = time_reps(s, reps, iters / 4, [&] {
    b.forward(p, x, out, acts);
    b.backward(p, x, acts, d_out, d_params);
  });
  // forward + backward: about 3x the forward's multiply-adds (d_x of the first layer skipped).
  const double train_flops = 3.0 * flops;
  emit("nn_backward", task, b.path(), n, "samples_per_s", n / t.max, n / t.median, n / t.min, reps);
  emit("nn_backward", task, b.path(), n, "flops_per_s", train_flops / t.max, train_flops / t.median,
       train_flops / t.min, reps);
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::puts("[gmi] SKIPPED: gmi.bench.nn needs a GPU");
    return 77;
  }
  cudaDeviceProp prop{};
  GMI_CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
  g_device = prop.name;
  char stamp[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  g_run_id = std::string(stamp) + "-nn-" + GMI_GIT_REVISION;
  if (argc > 1) g_file.open(argv[1], std::ios::app);
  for (std::size_t n : {512u, 4096u, 16384u}) bench_net<cartpole_net>("cartpole", n);
  for (std::size_t n : {4096u, 16384u}) bench_net<ant_net>("ant", n);
  for (std::size_t n : {4096u, 16384u}) bench_net<shadowhand_net>("shadowhand", n);
  return 0;
}
