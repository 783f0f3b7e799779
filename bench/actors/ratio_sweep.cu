// gmi.bench.actors_ratio: the CPU/GPU ratio sweep. GMIs on one GPU, each fed by its own CPU actors (MuJoCo Ant,
// double-buffered: two env groups alternate) through pinned staging memory; the GPU side of each GMI runs the
// policy's forward pass (a 27-64-64-8 tanh MLP) on its own stream and hands actions back by a host callback.
// For every (GMIs per GPU, actor cores per GMI, envs per core): env steps/s, and steps per joule where NVML
// (GPU) and RAPL (CPU) counters are readable; where one is absent the line says so.
// Each GMI's actor cores and its driver's core are its own (actors::gmi_core_sets: disjoint, NUMA-aware).
//   gmi.bench.actors_ratio MODEL_XML OUT.jsonl [seconds per point] [max cores] [GMIs list] [cores list] [envs list]
// (lists comma-separated; defaults 1,2 / 1,2,4,7,14 / 16,64,256)
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/actors/cores.hpp>
#include <gmi/actors/cpu_actors.hpp>
#include <gmi/actors/mujoco.hpp>
#include <gmi/actors/power.hpp>
#include <gmi/core/cuda_try.hpp>
#include <gmi/core/error.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/metrics/summary.hpp>

namespace ac = gmi::actors;
namespace mj = gmi::actors::mujoco;

namespace {
constexpr int obs_n = 27, hid = 64, act_n = 8;
constexpr int weight_count = obs_n * hid + hid + hid * hid + hid + hid * act_n + act_n;

__global__ void mlp_forward(const float* __restrict__ w, const float* __restrict__ obs, float* __restrict__ act, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x[obs_n], h1[hid], h2[hid];
  for (int k = 0; k < obs_n; ++k) x[k] = obs[i * obs_n + k];
  const float* w1 = w;
  const float* b1 = w1 + obs_n * hid;
  const float* w2 = b1 + hid;
  const float* b2 = w2 + hid * hid;
  const float* w3 = b2 + hid;
  const float* b3 = w3 + hid * act_n;
  for (int j = 0; j < hid; ++j) {
    float s = b1[j];
    for (int k = 0; k < obs_n; ++k) s += w1[k * hid + j] * x[k];
    h1[j] = tanhf(s);
  }
  for (int j = 0; j < hid; ++j) {
    float s = b2[j];
    for (int k = 0; k < hid; ++k) s += w2[k * hid + j] * h1[k];
    h2[j] = tanhf(s);
  }
  for (int j = 0; j < act_n; ++j) {
    float s = b3[j];
    for (int k = 0; k < hid; ++k) s += w3[k * act_n + j] * h2[k];
    act[i * act_n + j] = tanhf(s);
  }
}

// One GMI's GPU side: its stream, weights and per-group device arrays.
struct gpu_policy {
  cudaStream_t stream{};
  float* weights = nullptr;
  std::vector<float*> obs, act;

  gpu_policy(int groups, std::size_t envs_per_group) {
    GMI_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::vector<float> w(weight_count);
    for (int i = 0; i < weight_count; ++i) w[std::size_t(i)] = 0.15f * std::sin(0.7f * float(i));
    GMI_CUDA_TRY(cudaMalloc(&weights, sizeof(float) * weight_count));
    GMI_CUDA_TRY(cudaMemcpy(weights, w.data(), sizeof(float) * weight_count, cudaMemcpyHostToDevice));
    for (int g = 0; g < groups; ++g) {
      float *o = nullptr, *a = nullptr;
      GMI_CUDA_TRY(cudaMalloc(&o, sizeof(float) * obs_n * envs_per_group));
      GMI_CUDA_TRY(cudaMalloc(&a, sizeof(float) * act_n * envs_per_group));
      obs.push_back(o);
      act.push_back(a);
    }
  }
  ~gpu_policy() {
    cudaStreamSynchronize(stream);
    for (auto* p : obs) cudaFree(p);
    for (auto* p : act) cudaFree(p);
    cudaFree(weights);
    cudaStreamDestroy(stream);
  }
  void submit(const ac::group_batch& b, ac::handoff& ready) {
    const auto g = std::size_t(b.group);
    GMI_CUDA_TRY(cudaMemcpyAsync(obs[g], b.obs.data(), b.obs.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
    if (!b.needs_actions) return;
    const int n = int(b.num_envs);
    mlp_forward<<<(n + 127) / 128, 128, 0, stream>>>(weights, obs[g], act[g], n);
    GMI_CUDA_TRY(cudaMemcpyAsync(b.actions.data(), act[g], b.actions.size() * sizeof(float), cudaMemcpyDeviceToHost, stream));
    GMI_CUDA_TRY(cudaLaunchHostFunc(stream, &ac::handoff::signal_callback, &ready));
  }
};

struct point {
  int gmis, cores_per_gmi, envs_per_core;
};

// "1,2,4" -> {1, 2, 4}; refuses anything but positive integers in one line.
std::vector<int> int_list(const std::string& text, const char* what) {
  std::vector<int> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string word = text.substr(at, end - at);
    std::size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    gmi::require(used == word.size() && !word.empty() && v >= 1, what, text, "a comma list of integers >= 1");
    out.push_back(v);
    at = end + 1;
  }
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL_XML OUT.jsonl [seconds per point] [max cores]\n", argv[0]);
    return 2;
  }
  if (!ac::cuda_device_present()) {
    std::printf("[gmi] SKIPPED: gmi.bench.actors_ratio needs a GPU\n");
    return 77;
  }
  const std::string model_file = argv[1], out_file = argv[2];
  const double seconds = argc > 3 ? std::stod(argv[3]) : 3.0;
  const int available = int(ac::available_cores().size());
  // One core per GMI is left for its driver thread (the one that submits inference).
  const int max_cores = argc > 4 ? std::stoi(argv[4]) : available;
  const auto run = gmi::metrics::describe_run();
  const std::string cpu = ac::cpu_model();
  const auto model = mj::load(model_file);
  ac::nvml_energy gpu_energy(0);
  ac::rapl_counter cpu_energy;
  std::ofstream out(out_file, std::ios::app);

  const std::vector<int> gmi_counts = int_list(argc > 5 ? argv[5] : "1,2", "GMIs list");
  const std::vector<int> core_counts = int_list(argc > 6 ? argv[6] : "1,2,4,7,14", "cores list");
  const std::vector<int> env_counts = int_list(argc > 7 ? argv[7] : "16,64,256", "envs list");
  std::vector<point> points;
  for (int gmis : gmi_counts) {
    for (int c : core_counts) {
      if (gmis * (c + 1) > std::min(available, max_cores)) continue;
      for (int e : env_counts) points.push_back({gmis, c, e});
    }
  }
  for (const point& p : points) {
    const int n = p.cores_per_gmi * p.envs_per_core * 2;  // two groups, each envs_per_core per core
    std::vector<std::unique_ptr<ac::cpu_actors<mj::sim<mj::ant_v4>>>> actors;
    std::vector<std::unique_ptr<gpu_policy>> policies;
    std::vector<int> driver_cores;
    const auto sets = ac::gmi_core_sets(p.gmis, p.cores_per_gmi + 1);  // the GMI's actor cores, then its driver's
    for (int g = 0; g < p.gmis; ++g) {
      std::vector<int> cores = sets[std::size_t(g)];
      driver_cores.push_back(cores.back());
      cores.pop_back();
      actors.push_back(std::make_unique<ac::cpu_actors<mj::sim<mj::ant_v4>>>(ac::actor_config{cores, 2}, model, n, 1u + unsigned(g)));
      policies.push_back(std::make_unique<gpu_policy>(2, std::size_t(n / 2)));
      actors.back()->run(*policies.back(), 10);  // warm-up
    }
    const auto g0 = gpu_energy.read();
    const auto c0 = cpu_energy.read();
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<long> steps(std::size_t(p.gmis), 0);
    std::vector<std::thread> drivers;
    for (int g = 0; g < p.gmis; ++g) {
      drivers.emplace_back([&, g] {
        ac::pin_this_thread(driver_cores[std::size_t(g)]);
        while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
          actors[std::size_t(g)]->run(*policies[std::size_t(g)], 50);
          steps[std::size_t(g)] += 50L * n;
        }
        GMI_CUDA_TRY(cudaStreamSynchronize(policies[std::size_t(g)]->stream));
      });
    }
    for (auto& d : drivers) d.join();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto g1 = gpu_energy.read();
    const auto c1 = cpu_energy.read();
    long total = 0;
    for (long s : steps) total += s;
    const double rate = double(total) / elapsed;
    auto base = [&](const std::string& metric, double v) {
      auto line = gmi::metrics::result_line(run, "cpu_gpu_ratio", "gmi.actors.mujoco+gpu_mlp", metric,
                                            gmi::metrics::summarize({v}));
      line["task"] = "ant_v4";
      line["gmis_per_gpu"] = p.gmis;
      line["cores_per_gmi"] = p.cores_per_gmi;
      line["envs_per_core"] = p.envs_per_core;
      line["envs_per_gmi"] = n;
      line["cpu_gpu_ratio"] = double(p.gmis * p.cores_per_gmi);  // actor cores per GPU
      line["host_cpu"] = cpu;
      line["seconds"] = elapsed;
      return line;
    };
    auto rate_line = base("steps_per_s", rate);
    rate_line["steps_per_s_per_core"] = rate / (p.gmis * p.cores_per_gmi);
    out << rate_line.dump() << "\n";
    std::printf("%s\n", rate_line.dump().c_str());
    nlohmann::json joules = nlohmann::json::object();
    double sum = 0;
    bool any = false;
    if (g0.joules && g1.joules) joules["gpu"] = *g1.joules - *g0.joules, sum += *g1.joules - *g0.joules, any = true;
    else joules["gpu_absent"] = g0.absent_because;
    if (c0.joules && c1.joules && *c1.joules >= *c0.joules) joules["cpu"] = *c1.joules - *c0.joules, sum += *c1.joules - *c0.joules, any = true;
    else joules["cpu_absent"] = c0.joules ? std::string("RAPL counter wrapped") : c0.absent_because;
    if (any && sum > 0) {
      auto energy_line = base("steps_per_joule", double(total) / sum);
      energy_line["joules"] = joules;
      energy_line["counted"] = joules.contains("cpu") && joules.contains("gpu") ? "cpu+gpu" : joules.contains("gpu") ? "gpu only" : "cpu only";
      out << energy_line.dump() << "\n";
      std::printf("%s\n", energy_line.dump().c_str());
    } else {
      std::printf("{\"bench\":\"cpu_gpu_ratio\",\"metric\":\"steps_per_joule\",\"absent\":%s}\n", joules.dump().c_str());
    }
  }
  return 0;
}
