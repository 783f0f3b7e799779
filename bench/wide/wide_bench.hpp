#pragma once
// gmi.bench.wide's shared host part: the options, the timing loop and the result line, and the registry of its
// cases. Each case family is its own translation unit (wide_*.cu), so the build compiles them in parallel; main
// (wide_bench.cu) parses the flags and calls them in the order of the single-file bench. Host-only.

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace gmi_wide {

struct options {
  int reps = 5;
  double seconds = 0.3;
  std::string out, run_id, git = "unknown", device;
  std::vector<std::string> precisions{"tf32", "bf16"}, training_precisions{"fp32", "tf32"};
  std::vector<int> serving_envs{4096, 16384};
  std::vector<std::string> kernels{"cublaslt"};
  // network_config::weight_grad_chunks of the training and backward cases (0: auto).
  std::vector<int> wgrad_chunks{0};
  // network_config::keep_bf16_inputs of the training and backward cases (1 kept, 0 converted per layer).
  std::vector<int> keep_inputs16{1};
  // network_config::fuse_dz_sums of the training and backward cases (1 the dz pass forms the bias gradient's
  // first stage, 0 separate passes).
  std::vector<int> fuse_dz{0};
  // network_config::backward of the training and backward cases (cublaslt, wholenet, auto); fp32 skips wholenet.
  std::vector<std::string> backward{"auto"};
  int training_envs = 4096;
};

// keep_inputs16 0 at a precision other than bf16 is the kept run again (only bf16 keeps inputs): skipped where
// the list also runs 1.
inline bool repeats_kept_run(const options& o, int keep16, const std::string& precision) {
  return keep16 == 0 && precision != "bf16" &&
         std::find(o.keep_inputs16.begin(), o.keep_inputs16.end(), 1) != o.keep_inputs16.end();
}

struct stats {
  double median, min, max;
};

inline stats summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

inline double now_s() {
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

// Prints line l with the bench's common fields and s, and appends it to o.out (wide_bench.cu).
void emit(const options& o, nlohmann::json l, const stats& s);

// The cases, one translation unit each (the file named after each). serving_*: each env count x precision x
// kernels of o; training_*: one training precision p and kernels k (rule "auto"); threshold_*: both sides of the
// wide-network rule ("narrow", "wide") at fp32.
void serving_shadow_hand(const options& o);                                                // wide_serving_shadow_hand.cu
void serving_humanoid(const options& o);                                                   // wide_serving_humanoid.cu
void serving_ant(const options& o);                                                        // wide_serving_ant.cu
void training_shadow_hand(const options& o, const std::string& p, const std::string& k);   // wide_training_shadow_hand.cu
void training_humanoid(const options& o, const std::string& p, const std::string& k);      // wide_training_humanoid.cu
void training_ant(const options& o, const std::string& p, const std::string& k);           // wide_training_ant.cu
void threshold_ant(const options& o, const char* rule);                                    // wide_training_ant.cu
void threshold_ant_64(const options& o, const char* rule);                                 // wide_threshold_ant_64.cu
void threshold_ant_128(const options& o, const char* rule);                                // wide_threshold_ant_128.cu
void cartpole_serving(const options& o);                                                   // wide_cartpole.cu
void peak_gemm(const options& o);                                                          // wide_products.cu
void layer_gemm(const options& o);                                                         // wide_products.cu
void adam_steps(const options& o);                                                         // wide_products.cu
void backward_passes(const options& o);                                                    // wide_backward.cu

}  // namespace gmi_wide
