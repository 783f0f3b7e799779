// gmi.bench.gmi_serving: the paper's serving experiment on one GPU. k GMIs (k = 1, 2, 4, 8) each serve Cartpole
// (4-32-32 policy + sampling + env step) with --num-envs environments, as threads of one process, either
//   none:          each GMI on its own stream, the hardware scheduler shares the SMs;
//   green_context: each GMI on a green-context slice of the SMs (hard partition, leftover SMs unused);
// beside one instance holding the same total number of environments. Total steps/s counts every GMI's steps over
// the wall time from the common start to the last GMI's end; GPU utilization is NVML's, sampled during the run.
#include <gmi/gmi.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <thread>
#include <vector>

namespace {
using clock_type = std::chrono::steady_clock;
using net = gmi::agents::gaussian_mlp<>::network<4, 1>;
using trainer = gmi::rl::ppo_trainer<gmi::envs::cartpole, net, gmi::exec::cuda>;

struct outcome {
  double total = 0;                // steps/s of all GMIs together
  std::vector<double> per_gmi;     // steps/s of each
  double utilization = -1;         // mean NVML GPU utilization (%), -1 when unavailable
  int slice_sms = 0;
};

outcome run_gmis(int k, int num_envs, const std::string& mode, double seconds) {
  std::optional<gmi::partition::green_context::session> session;
  if (mode == "green_context") session.emplace(gmi::partition::green_context::create({{0}, k, 0}));
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> rates(k, 0), ends(k, 0);
  std::vector<std::uint64_t> steps(k, 0);
  std::vector<std::string> errors(k);
  clock_type::time_point start;
  std::vector<std::thread> threads;
  for (int g = 0; g < k; ++g) {
    threads.emplace_back([&, g] {
      try {
        GMI_CUDA_TRY(cudaSetDevice(0));
        std::optional<gmi::partition::green_context::binding> bind;
        std::optional<gmi::cuda::stream> own;
        cudaStream_t stream;
        if (session) {
          bind.emplace(*session, 0, g);
          stream = bind->stream();
        } else {
          own.emplace();
          stream = own->get();
        }
        trainer t(num_envs, 1 + g, gmi::rl::ppo_config{}, {}, gmi::exec::cuda{.stream = stream});
        t.serve(200);
        t.synchronize();
        ready.fetch_add(1);
        while (!go.load()) std::this_thread::yield();
        const auto t0 = start;
        while (std::chrono::duration<double>(clock_type::now() - t0).count() < seconds) {
          for (int r = 0; r < 5; ++r) t.serve(200);
          t.synchronize();
          steps[g] += 1000;
        }
        ends[g] = std::chrono::duration<double>(clock_type::now() - t0).count();
        rates[g] = static_cast<double>(steps[g]) * num_envs / ends[g];
      } catch (const std::exception& e) {
        errors[g] = e.what();
        ready.fetch_add(1);
      }
    });
  }
  while (ready.load() < k) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  start = clock_type::now();
  go.store(true);
  // NVML utilization while the GMIs run (its counter covers the last sample period).
  double util_sum = 0;
  int util_n = 0;
  const auto nvml_index = gmi::cuda::nvml::index_of_cuda_device(0);
  while (std::chrono::duration<double>(clock_type::now() - start).count() < seconds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (nvml_index) {
      if (const auto u = gmi::cuda::nvml::utilization_rates(*nvml_index)) {
        util_sum += u->gpu;
        ++util_n;
      }
    }
  }
  for (auto& t : threads) t.join();
  for (int g = 0; g < k; ++g) {
    if (!errors[g].empty()) throw gmi::error("GMI " + std::to_string(g) + ": " + errors[g]);
  }
  outcome o;
  std::uint64_t all = 0;
  double wall = 0;
  for (int g = 0; g < k; ++g) {
    all += steps[g];
    wall = std::max(wall, ends[g]);
  }
  o.total = static_cast<double>(all) * num_envs / wall;
  o.per_gmi = rates;
  o.utilization = util_n ? util_sum / util_n : -1;
  if (session) o.slice_sms = session->slice_sms(0);
  return o;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gmi.bench.gmi_serving: k GMIs serving Cartpole on one GPU", "gmi.bench.gmi_serving"};
  int num_envs = 512, reps = 3;
  double seconds = 1.0;
  std::string out, run_id;
  app.add_option("--num-envs", num_envs, "environments per GMI")->check(CLI::Range(1, 1 << 20));
  app.add_option("--reps", reps, "repetitions")->check(CLI::Range(1, 50));
  app.add_option("--seconds", seconds, "seconds per repetition")->check(CLI::Range(0.1, 60.0));
  app.add_option("--out", out, "append result lines here");
  app.add_option("--run-id", run_id, "run id shared with runs beside this one");
  if (const auto code = gmi::runtime::parse_flags(app, argc, argv)) return *code;
  try {
    if (const auto gpus = gmi::cuda::device_count(); !gpus) {
      std::fprintf(stderr, "gmi.bench.gmi_serving: needs a GPU: %s\n", gpus.error().message().c_str());
      return 1;
    }
    auto run = gmi::metrics::describe_run();
    if (!run_id.empty()) run.run_id = run_id;
    gmi::metrics::jsonl_log log = out.empty() ? gmi::metrics::jsonl_log{} : gmi::metrics::jsonl_log(out);
    auto emit = [&](nlohmann::json l) {
      std::cout << l.dump() << std::endl;
      log.write(l);
    };
    for (int k : {1, 2, 4, 8}) {
      // One instance with the same total environments: the comparison at equal total envs.
      std::vector<double> single;
      for (int r = 0; r < reps; ++r) single.push_back(run_gmis(1, num_envs * k, "none", seconds).total);
      const auto single_s = gmi::metrics::summarize(single);
      for (const std::string mode : {"none", "green_context"}) {
        std::vector<double> totals, utils;
        outcome last;
        for (int r = 0; r < reps; ++r) {
          last = run_gmis(k, num_envs, mode, seconds);
          totals.push_back(last.total);
          utils.push_back(last.utilization);
        }
        auto l = gmi::metrics::result_line(run, "serving", "gmi", "steps_per_s", gmi::metrics::summarize(totals));
        l["task"] = "cartpole";
        l["num_envs"] = num_envs;
        l["gmis_per_gpu"] = k;
        l["partition"] = mode == "none" ? "none (streams of one process)" : "green_context";
        l["gmi_threads"] = true;
        l["per_gmi_steps_per_s"] = last.per_gmi;
        l["gpu_utilization_pct"] = gmi::metrics::summarize(utils).median;
        if (last.slice_sms) l["slice_sms"] = last.slice_sms;
        l["single_instance_same_total_envs_steps_per_s"] = single_s.median;
        l["ratio_to_single_instance_same_total_envs"] = gmi::metrics::summarize(totals).median / single_s.median;
        emit(l);
      }
    }
    return 0;
  } catch (const gmi::error& e) {
    std::fprintf(stderr, "gmi.bench.gmi_serving: %s\n", e.describe().c_str());
    return 1;
  }
}
