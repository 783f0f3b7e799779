// gmi.bench.wide: the wide-network benchmark of issue 37. Serving (normalize, MLP, sample, env step on the
// linear proxy envs, one CUDA graph per window) with the ShadowHand-, Humanoid- and Ant-size policies at 4096 and
// 16384 envs in each precision asked for; Cartpole serving at 512 envs (the one-thread-per-env kernel); PPO
// training iterations (collection + update, the update's gradients by the default path, recorded as gradient_path); the
// peak dense GEMM rate (cuBLASLt, 8192^3, TF32 and bf16). Medians of --reps windows; one JSON line per case.
#include <gmi/gmi.hpp>
#include <gmi/nn/lt_linear.cuh>
#include <gmi/rl/batched_serving.cuh>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

namespace envs = gmi::envs;
namespace nn = gmi::nn;

template <class Task, class Hidden>
using policy_of = nn::gaussian_actor_critic<Task::obs_dim, Task::act_dim, Hidden>;
using shadow_hand_ac = policy_of<envs::shadow_hand_proxy, nn::layers<512, 512, 512, 256>>;
using humanoid_ac = policy_of<envs::humanoid_proxy, nn::layers<200, 400, 100>>;
using ant_ac = policy_of<envs::ant_proxy, nn::layers<256, 128, 64>>;
using cartpole_ac = policy_of<envs::cartpole, nn::layers<32, 32>>;

struct options {
  int reps = 5;
  double seconds = 0.3;
  std::string out, run_id, git = "unknown", device;
  std::vector<std::string> precisions{"tf32", "bf16"};
  std::vector<int> serving_envs{4096, 16384};
  int training_envs = 4096;
};

struct stats {
  double median, min, max;
};
stats summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Rates of `reps` windows of about `seconds` each: work(k) does k units and waits for them.
template <class Work>
stats measure(const options& o, double units_per_call, Work&& work) {
  work(1);  // warm-up: plans, graph capture, module loading
  double t0 = now_s();
  int calls = 1;
  work(calls);
  while (now_s() - t0 < 0.05 && calls < (1 << 20)) {
    calls *= 2;
    t0 = now_s();
    work(calls);
  }
  const double per_call = std::max(1e-9, (now_s() - t0) / calls);
  const int k = std::max(1, static_cast<int>(o.seconds / per_call));
  std::vector<double> rates;
  for (int r = 0; r < o.reps; ++r) {
    const double a = now_s();
    work(k);
    rates.push_back(units_per_call * k / (now_s() - a));
  }
  return summarize(rates);
}

void emit(const options& o, nlohmann::json l, const stats& s) {
  l["bench"] = "wide";
  l["impl"] = "gmi";
  l["median"] = s.median;
  l["min"] = s.min;
  l["max"] = s.max;
  l["reps"] = o.reps;
  l["run_id"] = o.run_id;
  l["git"] = o.git;
  l["device"] = o.device;
  l["gmis_per_gpu"] = 1;
  std::cout << l.dump() << std::endl;
  if (!o.out.empty()) std::ofstream(o.out, std::ios::app) << l.dump() << '\n';
}

template <class Task, class Net>
void serving(const options& o, const char* net_name) {
  for (const int n : o.serving_envs)
    for (const auto& pname : o.precisions) {
      gmi::cuda::stream s;
      const nn::network_config cfg{.precision = nn::parse_precision(pname, "--precisions")};
      gmi::rl::batched_server<Task, Net> server(n, 1, gmi::exec::cuda{.stream = s.get()}, 20, cfg);
      const int window = server.graph_steps();
      const auto st = measure(o, static_cast<double>(n) * window, [&](int k) {
        server.serve(k * window);
        server.synchronize();
      });
      const double macs = static_cast<double>(Net::net::layers::forward_macs);
      constexpr double env_macs = double(Task::substeps) * Task::obs_dim * (Task::obs_dim + Task::act_dim);
      emit(o,
           {{"case", "serving"}, {"net", net_name}, {"task", Task::name}, {"precision", pname}, {"num_envs", n},
            {"metric", "steps_per_s"}, {"path", server.path()}, {"tflops", 2.0 * macs * st.median / 1e12},
            {"env_tflops", 2.0 * env_macs * st.median / 1e12}},
           st);
    }
}

template <class Task, class Net>
void training(const options& o, const char* net_name) {
  gmi::cuda::stream s;
  gmi::rl::ppo_config c;  // defaults: horizon 16, minibatch 8192, 8 epochs
  gmi::rl::ppo_trainer<Task, Net, gmi::exec::cuda> t(o.training_envs, 1, c, {}, gmi::exec::cuda{.stream = s.get()});
  const double samples = static_cast<double>(c.horizon) * o.training_envs;
  t.iterate();  // eager first iteration
  const auto st = measure(o, samples, [&](int k) {
    for (int i = 0; i < k; ++i) t.iterate();
    t.synchronize();
  });
  const double macs = static_cast<double>(Net::net::layers::forward_macs);
  const double minibatches = std::max(1.0, samples / std::min<double>(c.minibatch, samples));
  // collection forward + epochs x (forward + backward, about 3x the forward) per sample
  const double flops_per_sample = 2.0 * macs * (1.0 + 3.0 * c.epochs);
  emit(o,
       {{"case", "training"}, {"net", net_name}, {"task", Task::name}, {"precision", "fp32"},
        {"num_envs", o.training_envs}, {"metric", "steps_per_s"}, {"horizon", c.horizon}, {"epochs", c.epochs},
        {"minibatch", c.minibatch}, {"minibatches", minibatches},
        {"gradient_path", gmi::rl::minibatch_gradient_name<Net>()},
        {"tflops", flops_per_sample * st.median / 1e12}},
       st);
}

void cartpole_serving(const options& o) {
  gmi::cuda::stream s;
  gmi::rl::ppo_trainer<envs::cartpole, cartpole_ac, gmi::exec::cuda> t(512, 1, gmi::rl::ppo_config{}, {},
                                                                        gmi::exec::cuda{.stream = s.get()});
  constexpr int steps = 200;
  const auto st = measure(o, 512.0 * steps, [&](int k) {
    t.serve(k * steps);
    t.synchronize();
  });
  emit(o, {{"case", "serving"}, {"net", "cartpole_mlp"}, {"task", "cartpole"}, {"precision", "fp32"}, {"num_envs", 512},
           {"metric", "steps_per_s"}, {"path", "fused_thread_per_env"}}, st);
}

// The peak dense rate: D (fp32) = A B for square 8192 matrices through cuBLASLt.
void peak_gemm(const options& o) {
  constexpr int n = 8192;
  gmi::cuda::stream s;
  gmi::cuda::device_buffer<float> a(std::size_t(n) * n), b(std::size_t(n) * n), d(std::size_t(n) * n);
  a.fill_bytes(0x3c, s);
  b.fill_bytes(0x3c, s);
  nn::lt_gemm g;
  for (const auto p : {nn::precision::tf32, nn::precision::bf16}) {
    const nn::lt_shape shape{.m = n, .n = n, .k = n, .lda = n, .ldb = n, .ldd = n, .prec = p};
    const double flops = 2.0 * n * n * static_cast<double>(n);
    const auto st = measure(o, flops / 1e12, [&](int k) {
      for (int i = 0; i < k; ++i) g.run(shape, a.data(), b.data(), d.data(), nullptr, s.get());
      GMI_CUDA_TRY(cudaStreamSynchronize(s.get()));
    });
    emit(o, {{"case", "peak_gemm"}, {"net", "square_8192"}, {"precision", nn::precision_name(p)},
             {"metric", "tflops"}, {"tflops", st.median}}, st);
  }
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gmi.bench.wide: serving and PPO training with the paper's wide networks", "gmi.bench.wide"};
  options o;
  std::string precisions = "tf32,bf16", cases = "peak,serving,cartpole,training", envs_list = "4096,16384";
  app.add_option("--reps", o.reps, "windows per case")->check(CLI::Range(1, 50))->capture_default_str();
  app.add_option("--seconds", o.seconds, "seconds per window")->check(CLI::Range(0.01, 60.0))->capture_default_str();
  app.add_option("--precisions", precisions, "serving precisions: fp32, tf32, bf16")->capture_default_str();
  app.add_option("--envs", envs_list, "serving env counts")->capture_default_str();
  app.add_option("--training-envs", o.training_envs, "envs of the training runs")->capture_default_str();
  app.add_option("--cases", cases, "peak, serving, cartpole, training")->capture_default_str();
  app.add_option("--out", o.out, "append result lines here");
  app.add_option("--run-id", o.run_id, "run id shared with the JAX reference");
  app.add_option("--git", o.git, "revision for the result lines");
  CLI11_PARSE(app, argc, argv);
  o.precisions = split(precisions);
  for (const auto& p : o.precisions) (void)nn::parse_precision(p, "--precisions");
  o.serving_envs.clear();
  for (const auto& e : split(envs_list)) o.serving_envs.push_back(std::stoi(e));
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::puts("[gmi] SKIPPED: gmi.bench.wide needs a GPU");
    return 77;
  }
  cudaDeviceProp prop{};
  GMI_CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
  o.device = prop.name;
  const auto want = split(cases);
  auto has = [&](const char* c) { return std::find(want.begin(), want.end(), c) != want.end(); };
  if (has("peak")) peak_gemm(o);
  if (has("serving")) {
    serving<envs::shadow_hand_proxy, shadow_hand_ac>(o, "shadow_hand_mlp");
    serving<envs::humanoid_proxy, humanoid_ac>(o, "humanoid_mlp");
    serving<envs::ant_proxy, ant_ac>(o, "ant_mlp");
  }
  if (has("cartpole")) cartpole_serving(o);
  if (has("training")) {
    training<envs::shadow_hand_proxy, shadow_hand_ac>(o, "shadow_hand_mlp");
    training<envs::humanoid_proxy, humanoid_ac>(o, "humanoid_mlp");
    training<envs::ant_proxy, ant_ac>(o, "ant_mlp");
  }
  return 0;
}
