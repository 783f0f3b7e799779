#pragma once
// The paper's Algorithm 1 (profiling-based GMI exploration): for GMIs per GPU from the backend's upper bound down
// to 1, for environments per GMI from 128 doubling to 32768, run a trial; stop a row when projected memory would
// not fit the GMI's share of device memory, when a trial fails, or when throughput saturates (Sat = R_top / R_mem
// < alpha); keep the candidate with the highest projected system throughput. gmi adds a time budget, a progress
// line per trial, several partition backends in one search, and a plan that records every trial. docs/plan.md.

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/status.hpp>
#include <gmi/cuda/green_context.hpp>
#include <gmi/partition/cpu_cores.hpp>
#include <gmi/partition/green_context.hpp>
#include <gmi/partition/mig.hpp>
#include <gmi/partition/mps.hpp>
#include <gmi/partition/none.hpp>
#include <gmi/plan/mapping.hpp>
#include <gmi/plan/plan.hpp>
#include <gmi/plan/profiler.hpp>
#include <gmi/plan/topology.hpp>

namespace gmi::plan {

// The saturation threshold. The paper does not publish its alpha. Sat = R_top / R_mem is the relative throughput
// gain of a step divided by its relative memory growth: >= 1 while throughput still scales with the environments
// (R_top ~ 1 for a doubling, R_mem <= 1), and near 0 once it has saturated. 0.1 stops a row when a doubling buys
// less than a tenth of its relative memory cost (e.g. < 10% more throughput for ~2x memory); our choice, set it
// with explore_options::alpha.
inline constexpr double default_alpha = 0.1;
// Algorithm 1 starts at 10 GMIs per GPU.
inline constexpr int paper_max_gmis_per_gpu = 10;
inline constexpr int paper_min_envs = 128, paper_max_envs = 32768;

// The most GMIs per GPU a backend can run on this machine, and why.
struct gmis_limit {
  int max = 0;
  std::string why;
};

inline constexpr const char* known_partitions = "none, mps, green_context, mig or cpu_cores";

// Upper bound of the row loop for `partition` on `t`. config_error for an unknown backend name.
[[nodiscard]] inline gmis_limit backend_limit(std::string_view partition, const topology& t) {
  if (partition == gmi::partition::none::name) return {INT_MAX, "none: time slicing, no limit of its own"};
  if (partition == gmi::partition::mps::name) {
    return {gmi::partition::mps::max_clients_per_gpu,
            "mps: " + std::to_string(gmi::partition::mps::max_clients_per_gpu) + " client contexts per GPU"};
  }
  if (partition == gmi::partition::mig::name) {
    if (!t.gpus.empty() && t.gpus[0].mig_enabled) {
      return {static_cast<int>(t.gpus[0].mig.size()), "mig: " + std::to_string(t.gpus[0].mig.size()) +
                                                           " MIG instances exist on GPU 0"};
    }
    return {gmi::partition::mig::max_instances_per_gpu,
            "mig: at most " + std::to_string(gmi::partition::mig::max_instances_per_gpu) + " instances per GPU"};
  }
  if (partition == gmi::partition::green_context::name) {
    if (t.gpus.empty()) return {0, "green_context: no GPU (" + t.reason + ")"};
    const auto& g = t.gpus[0];
    const int step = gmi::cuda::slice_granularity(g.cc_major, 0);
    return {g.sm_count / step, "green_context: " + std::to_string(g.sm_count) + " SMs in slices of at least " +
                                   std::to_string(step)};
  }
  if (partition == gmi::partition::cpu_cores::name) {
    return {static_cast<int>(t.cpu_cores.size()), "cpu_cores: " + std::to_string(t.cpu_cores.size()) + " cores"};
  }
  throw gmi::config_error(gmi::got_need("partition", std::string(partition), known_partitions));
}

// The backend's own can_implement(gmis_per_gpu) (never throws).
[[nodiscard]] inline gmi::status backend_can_implement(std::string_view partition, int gmis_per_gpu) {
  if (partition == gmi::partition::none::name) return gmi::partition::none::can_implement(gmis_per_gpu);
  if (partition == gmi::partition::mps::name) return gmi::partition::mps::can_implement(gmis_per_gpu);
  if (partition == gmi::partition::mig::name) return gmi::partition::mig::can_implement(gmis_per_gpu);
  if (partition == gmi::partition::green_context::name) {
    return gmi::partition::green_context::can_implement(gmis_per_gpu);
  }
  if (partition == gmi::partition::cpu_cores::name) return gmi::partition::cpu_cores::can_implement(gmis_per_gpu);
  return gmi::status::invalid(gmi::got_need("partition", std::string(partition), known_partitions));
}

// Algorithm 1 lines 16-22 for one step of a row: R_top = (top - pre_top) / pre_top, R_mem = (mem - pre_mem) /
// pre_mem, Sat = R_top / R_mem, saturated when Sat < alpha. Where R_mem is not positive (memory did not grow, or
// was not measured) Sat is undefined: saturated then means throughput did not grow.
struct saturation {
  std::optional<double> r_top, r_mem, sat;
  bool saturated = false;
};

[[nodiscard]] inline saturation saturation_of(double pre_top, double top, double pre_mem, double mem, double alpha) {
  saturation s;
  if (pre_top > 0) s.r_top = (top - pre_top) / pre_top;
  if (pre_mem > 0) s.r_mem = (mem - pre_mem) / pre_mem;
  if (s.r_top && s.r_mem && *s.r_mem > 0) {
    s.sat = *s.r_top / *s.r_mem;
    s.saturated = *s.sat < alpha;
  } else {
    s.saturated = !(top > pre_top);
  }
  return s;
}

struct explore_options {
  std::vector<std::string> partitions{"none"};  // searched in this order, each with the full Algorithm 1
  int max_gmis_per_gpu = paper_max_gmis_per_gpu;  // user cap; rows start at min(cap, backend limit)
  int min_envs = paper_min_envs;                  // environments per GMI: min_envs, 2 min_envs, ... <= max_envs
  int max_envs = paper_max_envs;
  double alpha = default_alpha;
  double budget_seconds = 600;          // wall time for all trials; the paper's search takes "several minutes"
  double estimated_trial_seconds = 0;   // > 0: checked against the budget before the first trial
  // Whether a backend can run this many GMIs per GPU; a refused row is recorded and skipped.
  // Empty: backend_can_implement.
  std::function<gmi::status(const std::string& partition, int gmis_per_gpu)> can_implement;
  std::function<void(const trial_record&)> progress;  // called once per table row, as it is decided
  std::function<double()> clock;  // seconds, monotonic; empty: std::chrono::steady_clock (tests pass a fake)
  std::optional<mapping_decision> mapping;  // the measured colocated/split decision, carried into the plan
};

// A progress callback that prints describe(record) to `out`, one line each, prefixed "plan: ".
[[nodiscard]] inline std::function<void(const trial_record&)> print_progress(std::FILE* out = stderr) {
  return [out](const trial_record& r) {
    std::fprintf(out, "plan: %s\n", describe(r).c_str());
    std::fflush(out);
  };
}

namespace detail {

inline void check_options(const topology& t, const explore_options& o) {
  if (t.host_only()) {
    throw gmi::config_error(gmi::got_need("plan explorer machine", "no GPU (" + t.reason + ")", "at least one GPU"));
  }
  const machine m = machine::of(t);
  if (!m.homogeneous()) {
    throw gmi::config_error(gmi::got_need("plan explorer GPUs", m.describe(),
                                          "one GPU model and memory size (throughput is projected as one GPU's x "
                                          "GPU count)"));
  }
  require(!o.partitions.empty(), "plan explorer partitions", "none", std::string("at least one of ") + known_partitions);
  require(o.max_gmis_per_gpu >= 1, "plan explorer max_gmis_per_gpu", o.max_gmis_per_gpu, ">= 1");
  require(o.min_envs >= 1, "plan explorer min_envs", o.min_envs, ">= 1");
  require(o.max_envs >= o.min_envs, "plan explorer max_envs", o.max_envs,
          ">= min_envs (" + std::to_string(o.min_envs) + ")");
  require(std::isfinite(o.alpha), "plan explorer alpha", o.alpha, "a finite number");
  require(std::isfinite(o.budget_seconds) && o.budget_seconds > 0, "plan explorer budget_seconds", o.budget_seconds,
          "> 0");
  require(std::isfinite(o.estimated_trial_seconds) && o.estimated_trial_seconds >= 0,
          "plan explorer estimated_trial_seconds", o.estimated_trial_seconds, ">= 0 (0: unknown)");
}

inline std::string seconds_text(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g s", s);
  return b;
}

}  // namespace detail

// Runs Algorithm 1 with `trial` on the machine `t` (homogeneous GPUs). Returns the plan: the best candidate, or
// when none passed the checks (every row stopped at its first or second point) the highest measured trial, with
// `selection` saying so. Throws config_error for bad options, a host-only topology, a budget too small for one
// trial, or when no row could be run; gmi::error when every trial failed.
[[nodiscard]] inline plan explore(const topology& t, const trial_function& trial, const explore_options& o = {}) {
  detail::check_options(t, o);
  require(static_cast<bool>(trial), "plan explorer trial function", "empty", "a callable");
  const auto clock = o.clock ? o.clock : [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  if (o.estimated_trial_seconds > o.budget_seconds) {
    throw gmi::config_error(gmi::got_need("plan explorer budget", detail::seconds_text(o.budget_seconds),
                                          "at least one trial: estimated " +
                                              detail::seconds_text(o.estimated_trial_seconds) + " per trial"));
  }
  const int gpus = static_cast<int>(t.gpus.size());
  const std::uint64_t device_memory = t.gpus[0].memory_bytes;

  plan out;
  out.made_for = machine::of(t);
  out.alpha = o.alpha;
  out.budget_seconds = o.budget_seconds;
  out.mapping = o.mapping;
  out.stopped_by = "every row finished";

  const double start = clock();
  int trials_run = 0;
  double longest_trial = 0;
  std::optional<std::size_t> best;  // index into out.trials
  double max_top = -std::numeric_limits<double>::infinity();
  bool stop = false;
  std::string refusals;

  const auto emit = [&](trial_record r) -> trial_record& {
    out.trials.push_back(std::move(r));
    if (o.progress) o.progress(out.trials.back());
    return out.trials.back();
  };

  for (const std::string& partition : o.partitions) {
    if (stop) break;
    const gmis_limit limit = backend_limit(partition, t);
    const int first_row = std::min(o.max_gmis_per_gpu, limit.max);
    if (first_row < 1) {
      trial_record r;
      r.what = {partition, 1, o.min_envs};
      r.decision = verdict::row_refused;
      r.note = limit.why;
      refusals += (refusals.empty() ? "" : "; ") + limit.why;
      emit(std::move(r));
      continue;
    }
    for (int g = first_row; g >= 1 && !stop; --g) {  // line 2
      const std::uint64_t share = device_memory / static_cast<std::uint64_t>(g);
      const gmi::status can = o.can_implement ? o.can_implement(partition, g) : backend_can_implement(partition, g);
      if (!can) {
        trial_record r;
        r.what = {partition, g, o.min_envs};
        r.memory_share_bytes = share;
        r.decision = verdict::row_refused;
        r.note = can.message();
        refusals += (refusals.empty() ? "" : "; ") + partition + " x " + std::to_string(g) + ": " + can.message();
        emit(std::move(r));
        continue;
      }
      memory_projection projection;
      bool have_previous = false;
      double pre_top = 0, pre_mem = 0;  // line 3
      for (long envs = o.min_envs; envs <= o.max_envs; envs *= 2) {  // line 4
        trial_record r;
        r.what = {partition, g, static_cast<int>(envs)};
        r.memory_share_bytes = share;
        // Line 6: from the third point on (num_env >= 512 in the paper's sequence), skip what would not fit.
        if (projection.points() >= 2) {
          r.projected_memory_bytes = projection.at(static_cast<int>(envs));
          if (r.projected_memory_bytes && *r.projected_memory_bytes > static_cast<double>(share)) {
            r.decision = verdict::memory_stop;
            r.note = "projected " + detail::gib(*r.projected_memory_bytes) + " per GMI > share " +
                     detail::gib(static_cast<double>(share)) + " (GPU memory / " + std::to_string(g) + ")";
            emit(std::move(r));
            break;
          }
        }
        const double elapsed = clock() - start;
        if (trials_run > 0 && elapsed + longest_trial > o.budget_seconds) {
          r.decision = verdict::budget_stop;
          r.note = detail::seconds_text(elapsed) + " spent + " + detail::seconds_text(longest_trial) +
                   " (longest trial) > budget " + detail::seconds_text(o.budget_seconds);
          out.stopped_by = "budget: " + r.note + ", after " + std::to_string(trials_run) + " trials";
          emit(std::move(r));
          stop = true;
          break;
        }
        // Line 10: profile.
        const double t0 = clock();
        trial_result result;
        try {
          result = trial(r.what);
        } catch (const std::exception& e) {
          result = trial_result::failed(std::string("trial threw: ") + e.what());
        }
        r.seconds = clock() - t0;
        r.measured = true;
        ++trials_run;
        longest_trial = std::max(longest_trial, r.seconds);
        if (trials_run == 1 && r.seconds > o.budget_seconds) {
          throw gmi::config_error(gmi::got_need("plan explorer budget", detail::seconds_text(o.budget_seconds),
                                                "at least one trial: the first trial (" + describe(r.what) + ") took " +
                                                    detail::seconds_text(r.seconds) + " (measured)"));
        }
        r.ok = result.ok;
        if (!result.ok) {  // line 5: filter out OOM / crashing cases
          r.decision = verdict::failed;
          r.note = result.failure.empty() ? "the trial reported a failure without a reason" : result.failure;
          emit(std::move(r));
          break;
        }
        r.throughput = result.throughput;
        r.peak_memory_bytes = result.peak_memory_bytes;
        projection.add(static_cast<int>(envs), result.peak_memory_bytes);
        const double top = result.throughput, mem = static_cast<double>(result.peak_memory_bytes);
        if (!have_previous) {  // lines 12-14
          have_previous = true;
          pre_top = top;
          pre_mem = mem;
          r.decision = verdict::first_point;
          emit(std::move(r));
          continue;
        }
        const saturation s = saturation_of(pre_top, top, pre_mem, mem, o.alpha);  // lines 17-19
        r.r_top = s.r_top;
        r.r_mem = s.r_mem;
        r.sat = s.sat;
        pre_top = top;  // line 20
        pre_mem = mem;
        if (s.saturated) {  // line 22
          r.decision = verdict::saturated;
          r.note = s.sat ? "Sat " + detail::fixed(*s.sat, 3) + " < alpha " + detail::fixed(o.alpha, 3)
                         : std::string("memory did not grow and throughput did not grow");
          emit(std::move(r));
          break;
        }
        r.system_throughput = top * gpus;  // line 26: estimate(GMIPerGPU, num_GPU, top), top being one GPU's total
        if (r.system_throughput > max_top) {  // lines 27-29
          max_top = r.system_throughput;
          r.decision = verdict::best;
          emit(std::move(r));
          best = out.trials.size() - 1;
        } else {
          r.decision = verdict::candidate;
          emit(std::move(r));
        }
      }
    }
  }
  out.explore_seconds = clock() - start;

  if (best) {
    out.selection = "algorithm 1";
  } else {
    for (std::size_t i = 0; i < out.trials.size(); ++i) {
      const auto& r = out.trials[i];
      if (r.measured && r.ok && (!best || r.throughput > out.trials[*best].throughput)) best = i;
    }
    if (!best) {
      if (trials_run == 0) {
        throw gmi::config_error("plan explorer: no row could run: " + refusals);
      }
      std::string first_failure;
      for (const auto& r : out.trials) {
        if (r.measured && !r.ok) {
          first_failure = describe(r.what) + ": " + r.note;
          break;
        }
      }
      throw gmi::error("plan explorer: all " + std::to_string(trials_run) + " trials failed; first: " + first_failure);
    }
    out.selection = "fallback: no trial passed Algorithm 1's checks (each row ended at its first point, or "
                    "saturated at its second); chose the highest measured throughput";
  }
  const trial_record& chosen = out.trials[*best];
  out.chosen = chosen.what;
  out.gpu_throughput = chosen.throughput;
  out.projected_throughput = chosen.throughput * gpus;
  return out;
}

}  // namespace gmi::plan
