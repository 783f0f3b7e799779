// gmi.bench.ppo: one GMI's serving and training tiers and seconds to solve Cartpole (issue: agent and trainer).
//   serving:  Cartpole 4-32-32 at 512/4096/16384 envs (fused: one thread per env, weights in shared memory);
//   wide:     ShadowHand-size (211-512-512-512-256-20) and Ant-size (60-256-128-64-8) MLPs on the anchor's proxy env
//             (batched: cuBLAS TF32 forward + one sample-and-step kernel), with achieved FLOP/s;
//   training: Cartpole PPO (horizon 16, minibatch 8192, 8 epochs) at 512/4096 envs;
//   solve:    wall-clock seconds until the mean return reaches 450, with gmi's default (adaptive-KL) and with the
//             anchor's settings (constant lr 3e-4).
// Every figure is the median of --reps repetitions after a warm-up; one JSON result line each (bench-spec).
#include <gmi/gmi.hpp>
#include <gmi/envs/anchor_proxy.hpp>
#include <gmi/rl/batched_serving.cuh>
#include <gmi/rl/episode_window.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>

namespace {
using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

struct bench_context {
  gmi::metrics::run_info run;
  gmi::metrics::jsonl_log out;
  int reps;
  void emit(nlohmann::json line) {
    std::cout << line.dump() << std::endl;
    out.write(line);
  }
  nlohmann::json line(const std::string& bench, const std::string& task, int num_envs, const std::string& metric,
                      const gmi::metrics::summary& s) {
    auto l = gmi::metrics::result_line(run, bench, "gmi", metric, s);
    l["task"] = task;
    l["num_envs"] = num_envs;
    l["gmis_per_gpu"] = 1;
    l["partition"] = "none";
    return l;
  }
};

using cartpole_net = gmi::agents::gaussian_mlp<>::network<4, 1>;
template <class Policy>
using cartpole_trainer = gmi::rl::ppo_trainer<gmi::envs::cartpole, cartpole_net, Policy>;

void serving(bench_context& b, gmi::exec::cuda on) {
  for (int n : {512, 4096, 16384}) {
    cartpole_trainer<gmi::exec::cuda> t(n, 1, gmi::rl::ppo_config{}, {}, on);
    const int steps_per_launch = 200;
    t.serve(steps_per_launch);
    t.synchronize();
    std::vector<double> rates;
    for (int r = 0; r < b.reps; ++r) {
      const auto t0 = clock_type::now();
      std::uint64_t steps = 0;
      while (seconds_since(t0) < 0.5) {
        for (int k = 0; k < 10; ++k) t.serve(steps_per_launch);
        t.synchronize();
        steps += 10ull * steps_per_launch;
      }
      rates.push_back(static_cast<double>(steps) * n / seconds_since(t0));
    }
    auto l = b.line("serving", "cartpole", n, "steps_per_s", gmi::metrics::summarize(rates));
    l["path"] = "fused_thread_per_env";
    l["steps_per_launch"] = steps_per_launch;
    b.emit(l);
  }
}

template <int Obs, int Act, class Hidden>
void wide_serving(bench_context& b, gmi::exec::cuda on, const char* task, double matrix_rate) {
  using env = gmi::envs::anchor_proxy<Obs, Act>;
  using net = gmi::nn::gaussian_actor_critic<Obs, Act, Hidden>;
  constexpr double flops_per_sample = 2.0 * net::net::layers::forward_macs;
  for (int n : {4096, 16384}) {
    gmi::rl::batched_server<env, net> s(n, 1, on);
    s.serve(s.graph_steps());
    s.synchronize();
    std::vector<double> rates;
    for (int r = 0; r < b.reps; ++r) {
      const auto t0 = clock_type::now();
      std::uint64_t steps = 0;
      while (seconds_since(t0) < 0.5) {
        s.serve(10 * s.graph_steps());
        s.synchronize();
        steps += 10ull * s.graph_steps();
      }
      rates.push_back(static_cast<double>(steps) * n / seconds_since(t0));
    }
    const auto sum = gmi::metrics::summarize(rates);
    auto l = b.line("serving", task, n, "steps_per_s", sum);
    l["path"] = std::string("batched_") + s.path();
    l["flops_per_s"] = sum.median * flops_per_sample;
    l["matrix_rate_flops_per_s"] = matrix_rate;
    l["fraction_of_matrix_rate"] = sum.median * flops_per_sample / matrix_rate;
    b.emit(l);
  }
}

// The device's measured TF32 matrix rate: a large cuBLAS TF32 GEMM, the ceiling the wide MLPs are compared with.
double measure_tf32_rate(gmi::exec::cuda on) {
  const int m = 8192;
  gmi::cuda::device_buffer<float> a(std::size_t(m) * m), c(std::size_t(m) * m);
  gmi::exec::for_each(on, a.size(), [p = a.data()] __device__(std::size_t i) { p[i] = gmi::rng(3, i).uniform(-1.f, 1.f); });
  cublasHandle_t h;
  cublasCreate(&h);
  cublasSetStream(h, on.stream);
  const float alpha = 1, beta = 0;
  auto gemm = [&] {
    cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &alpha, a.data(), CUDA_R_32F, m, a.data(), CUDA_R_32F, m, &beta,
                 c.data(), CUDA_R_32F, m, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
  };
  gemm();
  gmi::exec::synchronize(on);
  std::vector<double> rates;
  for (int r = 0; r < 5; ++r) {
    gmi::cuda::event e0(gmi::cuda::event::timing::enabled), e1(gmi::cuda::event::timing::enabled);
    e0.record(on.stream);
    for (int k = 0; k < 5; ++k) gemm();
    e1.record(on.stream);
    e1.synchronize();
    rates.push_back(5.0 * 2.0 * double(m) * m * m / (elapsed_ms(e0, e1) * 1e-3));
  }
  cublasDestroy(h);
  return gmi::metrics::summarize(rates).median;
}

void training(bench_context& b, gmi::exec::cuda on) {
  for (int n : {512, 4096}) {
    cartpole_trainer<gmi::exec::cuda> t(n, 1, gmi::rl::ppo_config{}, {}, on);
    for (int k = 0; k < 3; ++k) t.iterate();  // eager, capture, replay
    t.synchronize();
    std::vector<double> rates;
    for (int r = 0; r < b.reps; ++r) {
      const auto t0 = clock_type::now();
      const int iterations = n <= 512 ? 100 : 20;
      for (int k = 0; k < iterations; ++k) t.iterate();
      t.synchronize();
      rates.push_back(static_cast<double>(iterations) * t.samples_per_iteration() / seconds_since(t0));
    }
    auto l = b.line("training", "cartpole", n, "samples_per_s", gmi::metrics::summarize(rates));
    l["horizon"] = t.config().horizon;
    l["minibatch"] = t.config().minibatch;
    l["epochs"] = t.config().epochs;
    b.emit(l);
  }
}

template <class Policy>
void solve(bench_context& b, Policy on, const std::string& device_name, int max_seconds) {
  for (const bool anchor_settings : {false, true}) {
    std::vector<double> seconds, iterations;
    int solved = 0;
    for (int seed = 1; seed <= b.reps; ++seed) {
      gmi::rl::ppo_config c;
      if (anchor_settings) {  // the anchor: constant lr, no observation or value normalization
        c.schedule = gmi::rl::lr_schedule::constant;
        c.normalize_obs = false;
        c.normalize_value = false;
      }
      const auto t0 = clock_type::now();
      cartpole_trainer<Policy> t(512, seed, c, {}, on);
      gmi::rl::episode_window window(32);  // the same decision as gmi::run
      bool done = false;
      while (!done && seconds_since(t0) < max_seconds) {
        for (int k = 0; k < 5; ++k) t.iterate();
        if (const auto e = t.wait_episodes()) {
          if (const auto mean = window.add(*e)) done = *mean >= 450;
        }
        t.request_episodes();
      }
      t.synchronize();
      if (done) ++solved;
      seconds.push_back(done ? seconds_since(t0) : std::numeric_limits<double>::infinity());
      iterations.push_back(static_cast<double>(t.iteration()));
    }
    auto l = b.line("solve", "cartpole", 512, "seconds_to_solve", gmi::metrics::summarize(seconds));
    l["settings"] = anchor_settings ? "anchor (constant lr 3e-4, no normalizers)" : "gmi default (constant lr 3e-4, obs+value normalization)";
    l["solved_runs"] = solved;
    l["iterations_median"] = gmi::metrics::summarize(iterations).median;
    l["target_return"] = 450;
    l["backend"] = device_name;
    l["includes_setup"] = true;
    b.emit(l);
  }
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gmi.bench.ppo: serving, training and solve benchmarks of one GMI", "gmi.bench.ppo"};
  std::string what = "all", out, run_id;
  int reps = 5, solve_seconds = 120;
  app.add_option("--what", what, "which part")->check(CLI::IsMember({"all", "serving", "wide", "training", "solve"}));
  app.add_option("--reps", reps, "repetitions per figure")->check(CLI::Range(1, 100));
  app.add_option("--solve-seconds", solve_seconds, "give up a solve run after this")->check(CLI::Range(1, 3600));
  app.add_option("--out", out, "append result lines to this file");
  app.add_option("--run-id", run_id, "run id shared with the anchor run beside this one");
  if (const auto code = gmi::runtime::parse_flags(app, argc, argv)) return *code;
  try {
    bench_context b{gmi::metrics::describe_run(), out.empty() ? gmi::metrics::jsonl_log{} : gmi::metrics::jsonl_log(out), reps};
    if (!run_id.empty()) b.run.run_id = run_id;
    if (const auto gpus = gmi::cuda::device_count(); !gpus) {
      std::fprintf(stderr, "gmi.bench.ppo: needs a GPU: %s\n", gpus.error().message().c_str());
      return 1;
    }
    gmi::cuda::stream stream;
    const gmi::exec::cuda on{.stream = stream.get()};
    if (what == "all" || what == "serving") serving(b, on);
    if (what == "all" || what == "wide") {
      const double rate = measure_tf32_rate(on);
      wide_serving<211, 20, gmi::nn::layers<512, 512, 512, 256>>(b, on, "shadow_hand_mlp_on_anchor_proxy", rate);
      wide_serving<60, 8, gmi::nn::layers<256, 128, 64>>(b, on, "ant_mlp_on_anchor_proxy", rate);
    }
    if (what == "all" || what == "training") training(b, on);
    if (what == "all" || what == "solve") solve(b, on, b.run.device, solve_seconds);
    return 0;
  } catch (const gmi::error& e) {
    std::fprintf(stderr, "gmi.bench.ppo: %s\n", e.describe().c_str());
    return 1;
  }
}
