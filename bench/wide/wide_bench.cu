// gmi.bench.wide: the wide-network benchmark of issue 37. Serving (rl::batched_server: normalize, the MLP as
// cuBLASLt products, sampling, the env step of all envs as products for the linear proxies, one CUDA graph per
// window) with the ShadowHand-, Humanoid- and Ant-size policies at 4096 and 16384 envs in each precision asked
// for; Cartpole serving at 512 envs (the one-thread-per-env kernel); PPO training iterations (collection +
// update; collection and gradient paths by the wide-network rule, recorded) in each training precision; the
// rule's threshold (Ant proxy, policies 64, 128 and 256 wide, both sides of the rule forced); the peak dense GEMM
// rate (cuBLASLt, 8192^3, TF32 and bf16); one 8192 x 512 x 512 layer product alone, cuBLASLt against the own
// tensor-core kernel with the ELU epilogue (layer_gemm); Adam's step at ShadowHand's parameter count in one
// kernel and in three (adam). --kernels picks the layer kernels of the serving and training cases (cublaslt,
// mma, wholenet, auto: rl/wide_rule.hpp's rule, recorded as kernels_chosen; tf32 and bf16 only: fp32 always runs
// cuBLASLt). Medians of --reps windows; one JSON line per case.
#include <gmi/gmi.hpp>
#include <gmi/nn/adam.cuh>
#include <gmi/nn/fused_gemm.cuh>
#include <gmi/nn/lt_linear.cuh>
#include <gmi/nn/lt_mlp.cuh>
#include <gmi/rl/batched_serving.cuh>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
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
using ant_64_ac = policy_of<envs::ant_proxy, nn::layers<64, 64>>;
using ant_128_ac = policy_of<envs::ant_proxy, nn::layers<128, 128>>;

struct options {
  int reps = 5;
  double seconds = 0.3;
  std::string out, run_id, git = "unknown", device;
  std::vector<std::string> precisions{"tf32", "bf16"}, training_precisions{"fp32", "tf32"};
  std::vector<int> serving_envs{4096, 16384};
  std::vector<std::string> kernels{"cublaslt"};
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
    for (const auto& pname : o.precisions)
    for (const auto& kname : o.kernels) {
      const nn::network_config cfg{.precision = nn::parse_precision(pname, "--precisions"),
                                   .kernels = nn::parse_layer_kernels(kname, "--kernels")};
      if (cfg.precision == nn::precision::fp32 && cfg.kernels != nn::layer_kernels::cublaslt) continue;
      gmi::cuda::stream s;
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
            {"kernels", kname},
            {"kernels_chosen", nn::layer_kernels_name(
                                   gmi::rl::with_rule_kernels<Net>(cfg, gmi::rl::kernels_use::serving, n).kernels)},
            {"metric", "steps_per_s"}, {"path", server.path()}, {"tflops", 2.0 * macs * st.median / 1e12},
            {"env_tflops", 2.0 * env_macs * st.median / 1e12},
            {"total_tflops", 2.0 * (macs + env_macs) * st.median / 1e12}},
           st);
    }
}

// rule: "auto" (the wide-network rule with the default threshold), "wide" or "narrow" (the rule's threshold moved
// so that Net is taken as wide or as narrow: both sides of the rule on one network).
template <class Task, class Net>
void training(const options& o, const char* net_name, const std::string& pname, const char* rule = "auto",
              const std::string& kname = "cublaslt") {
  gmi::cuda::stream s;
  gmi::rl::ppo_config c;  // defaults: horizon 16, minibatch 8192, 8 epochs
  c.network.precision = nn::parse_precision(pname, "--training-precisions");
  c.network.kernels = nn::parse_layer_kernels(kname, "--kernels");
  if (c.network.precision == nn::precision::fp32 && c.network.kernels != nn::layer_kernels::cublaslt) return;
  if (std::string(rule) == "wide") c.network.lt_min_width = 1;
  if (std::string(rule) == "narrow") c.network.lt_min_width = 1 << 20;
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
  constexpr double env_macs = double(Task::substeps) * Task::obs_dim * (Task::obs_dim + Task::act_dim);
  emit(o,
       {{"case", std::string(rule) == "auto" ? "training" : "threshold"}, {"net", net_name}, {"task", Task::name},
        {"precision", pname}, {"kernels", kname},
        {"kernels_chosen", nn::layer_kernels_name(gmi::rl::with_rule_kernels<Net>(
                               c.network, gmi::rl::kernels_use::training, o.training_envs).kernels)},
        {"num_envs", o.training_envs}, {"metric", "steps_per_s"},
        {"horizon", c.horizon},
        {"epochs", c.epochs}, {"minibatch", c.minibatch}, {"minibatches", minibatches}, {"rule", rule},
        {"max_width", Net::net::max_width},
        {"gradient_path", gmi::rl::minibatch_gradient_name<Net>(c.network)},
        {"collection", gmi::rl::collection_path_name<Net>(c.network)},
        {"tflops", flops_per_sample * st.median / 1e12},
        {"total_tflops", (flops_per_sample + 2.0 * env_macs) * st.median / 1e12}},
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

// One wide layer alone, M = 8192 rows, N = K = 512: the cuBLASLt product (BIAS epilogue) and the own kernel with
// bias + ELU in its epilogue (TF/s of the product), then the whole layer through lt_mlp (cuBLASLt: product +
// ELU pass; mma: one kernel; both with the weight copy the path makes per call).
void layer_gemm(const options& o) {
  constexpr int M = 8192, N = 512, K = 512;
  const double tflop = 2.0 * M * N * static_cast<double>(K) / 1e12;
  gmi::cuda::stream s;
  gmi::cuda::device_buffer<float> x(std::size_t(M) * K), w(std::size_t(N) * K), bias(N), d(std::size_t(M) * N);
  gmi::cuda::device_buffer<__nv_bfloat16> x16(std::size_t(M) * K), w16(std::size_t(N) * K);
  x.fill_bytes(0x3c, s);
  w.fill_bytes(0x3c, s);
  bias.fill_bytes(0, s);
  x16.fill_bytes(0x3c, s);
  w16.fill_bytes(0x3c, s);
  nn::lt_gemm g;
  auto sync = [&] { GMI_CUDA_TRY(cudaStreamSynchronize(s.get())); };
  for (const auto p : {nn::precision::tf32, nn::precision::bf16}) {
    const bool bf = p == nn::precision::bf16;
    const void* A = bf ? static_cast<const void*>(w16.data()) : w.data();
    const void* B = bf ? static_cast<const void*>(x16.data()) : x.data();
    const nn::lt_shape shape{.trans_a = true, .m = N, .n = M, .k = K, .lda = K, .ldb = K, .ldd = N, .prec = p,
                             .epilogue = nn::lt_epilogue::bias};
    const auto lt = measure(o, tflop, [&](int k) {
      for (int i = 0; i < k; ++i) g.run(shape, A, B, d.data(), bias.data(), s.get());
      sync();
    });
    emit(o, {{"case", "layer_gemm"}, {"net", "8192x512x512"}, {"precision", nn::precision_name(p)},
             {"kernel", "cublaslt_bias"}, {"metric", "tflops"}, {"tflops", lt.median}}, lt);
    const nn::mma_bias_act<nn::elu> epi{bias.data()};
    const auto mma = measure(o, tflop, [&](int k) {
      for (int i = 0; i < k; ++i) {
        if (bf)
          nn::mma_gemm(nn::mma_gemm_args<__nv_bfloat16>{.a = x16.data(), .b = w16.data(), .M = M, .N = N, .K = K,
                                                        .lda = K, .ldb = K, .d = d.data(), .ldd = N},
                       epi, s.get());
        else
          nn::mma_gemm(nn::mma_gemm_args<float>{.a = x.data(), .b = w.data(), .M = M, .N = N, .K = K, .lda = K,
                                                .ldb = K, .d = d.data(), .ldd = N},
                       epi, s.get());
      }
      sync();
    });
    emit(o, {{"case", "layer_gemm"}, {"net", "8192x512x512"}, {"precision", nn::precision_name(p)},
             {"kernel", "mma_bias_elu"}, {"metric", "tflops"}, {"tflops", mma.median}}, mma);
    using layer = nn::mlp<nn::layers<K, N>, nn::elu, nn::elu>;
    gmi::cuda::device_buffer<float> params(layer::param_count);
    params.fill_bytes(0, s);
    for (const auto kern : {nn::layer_kernels::cublaslt, nn::layer_kernels::mma}) {
      nn::lt_mlp<layer> net(gmi::exec::cuda{.stream = s.get()}, M, nn::network_config{.precision = p, .kernels = kern});
      const auto st = measure(o, tflop, [&](int k) {
        for (int i = 0; i < k; ++i) net.forward_raw(params.data(), x.data(), d.data(), nullptr, M);
        sync();
      });
      emit(o, {{"case", "layer_gemm"}, {"net", "8192x512x512"}, {"precision", nn::precision_name(p)},
               {"kernel", std::string(net.path()) + "_elu_layer"}, {"metric", "tflops"}, {"tflops", st.median}}, st);
    }
  }
}

// Adam's step at ShadowHand's parameter count: steps per second in one cooperative kernel and in three.
void adam_steps(const options& o) {
  constexpr std::size_t n = shadow_hand_ac::net::param_count;
  gmi::cuda::stream s;
  gmi::cuda::device_buffer<float> p(n), g(n);
  p.fill_bytes(0, s);
  g.fill_bytes(0x3c, s);
  for (const bool one : {true, false}) {
    nn::adam<gmi::exec::cuda> opt(nn::adam_config{}, n, gmi::exec::cuda{.stream = s.get()});
    if (one && !opt.one_kernel_available()) continue;
    opt.set_one_kernel(one);
    const auto st = measure(o, 1.0, [&](int k) {
      for (int i = 0; i < k; ++i) opt.step({p.data(), n}, {g.data(), n});
      GMI_CUDA_TRY(cudaStreamSynchronize(s.get()));
    });
    emit(o, {{"case", "adam"}, {"net", "shadow_hand_mlp"}, {"params", n}, {"kernel", one ? "one_kernel" : "three_kernels"},
             {"metric", "steps_per_s"}}, st);
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
  std::string precisions = "tf32,bf16", training_precisions = "fp32,tf32",
              cases = "peak,serving,cartpole,training,threshold", envs_list = "4096,16384", kernels = "cublaslt";
  app.add_option("--reps", o.reps, "windows per case")->check(CLI::Range(1, 50))->capture_default_str();
  app.add_option("--seconds", o.seconds, "seconds per window")->check(CLI::Range(0.01, 60.0))->capture_default_str();
  app.add_option("--precisions", precisions, "serving precisions: fp32, tf32, bf16")->capture_default_str();
  app.add_option("--training-precisions", training_precisions, "training precisions: fp32, tf32, bf16")
      ->capture_default_str();
  app.add_option("--envs", envs_list, "serving env counts")->capture_default_str();
  app.add_option("--training-envs", o.training_envs, "envs of the training runs")->capture_default_str();
  app.add_option("--cases", cases, "peak, serving, cartpole, training, threshold, layer_gemm, adam")
      ->capture_default_str();
  app.add_option("--kernels", kernels,
                 "layer kernels of serving and training: cublaslt, mma, wholenet, auto (rl/wide_rule.hpp's rule)")
      ->capture_default_str();
  app.add_option("--out", o.out, "append result lines here");
  app.add_option("--run-id", o.run_id, "run id shared with the JAX reference");
  app.add_option("--git", o.git, "revision for the result lines");
  CLI11_PARSE(app, argc, argv);
  try {
    o.precisions = split(precisions);
    for (const auto& p : o.precisions) (void)nn::parse_precision(p, "--precisions");
    o.training_precisions = split(training_precisions);
    for (const auto& p : o.training_precisions) (void)nn::parse_precision(p, "--training-precisions");
    o.kernels = split(kernels);
    for (const auto& k : o.kernels) (void)nn::parse_layer_kernels(k, "--kernels");
    o.serving_envs.clear();
    for (const auto& e : split(envs_list)) {
      const int n = std::atoi(e.c_str());
      gmi::require(n >= 1, "--envs", e, "positive env counts");
      o.serving_envs.push_back(n);
    }
  } catch (const gmi::config_error& e) {
    std::fprintf(stderr, "gmi.bench.wide: %s\n", e.what());
    return 2;
  }
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
  if (has("layer_gemm")) layer_gemm(o);
  if (has("adam")) adam_steps(o);
  if (has("training"))
    for (const auto& p : o.training_precisions)
      for (const auto& k : o.kernels) {
        training<envs::shadow_hand_proxy, shadow_hand_ac>(o, "shadow_hand_mlp", p, "auto", k);
        training<envs::humanoid_proxy, humanoid_ac>(o, "humanoid_mlp", p, "auto", k);
        training<envs::ant_proxy, ant_ac>(o, "ant_mlp", p, "auto", k);
      }
  if (has("threshold"))  // the wide-network rule's crossover: each width with both paths, fp32
    for (const char* rule : {"narrow", "wide"}) {
      training<envs::ant_proxy, ant_64_ac>(o, "ant_64x64", "fp32", rule);
      training<envs::ant_proxy, ant_128_ac>(o, "ant_128x128", "fp32", rule);
      training<envs::ant_proxy, ant_ac>(o, "ant_mlp", "fp32", rule);
    }
  return 0;
}
