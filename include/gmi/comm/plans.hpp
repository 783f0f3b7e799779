#pragma once
// The paper's reduction plans (IP-only, RP-only, hybrid) and its cost model, so the choice among them is
// made from profiled costs, reported with its reason, and testable on a CPU. gmi's own default is the
// device-side hierarchical allreduce (comm/hierarchical.cuh); these are its baselines and fallbacks.

#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>

namespace gmi::comm {

enum class plan_kind { ip_only, rp_only, hybrid };

inline const char* plan_name(plan_kind k) {
  switch (k) {
    case plan_kind::ip_only: return "ip_only";
    case plan_kind::rp_only: return "rp_only";
    case plan_kind::hybrid: return "hybrid";
  }
  return "unknown";
}

// One candidate with its modelled cost (same unit as the profiled costs, e.g. seconds).
struct plan_cost {
  plan_kind kind{};
  int k = 0;  // hybrid: GMIs per GPU in the RP (NCCL) lanes; 0 for the other plans
  double cost = 0;
  bool valid = true;
  std::string why_invalid;
};

struct plan_choice {
  plan_kind kind{};
  int k = 0;
  double cost = 0;
  std::string reason;                // one line: the winner, its cost and the runner-up's
  std::vector<plan_cost> candidates;  // every plan considered, valid or not
};

// The paper's formulas for n GPUs and m GMIs per GPU, from the profiled cost of one IP step (cost_ip)
// and of one RP (NCCL ring) allreduce (cost_rp):
//   IP-only     = (nm-1) / (m(n-1)) * cost_ip           (n = 1: (m-1)/m * cost_ip, the formula divides by n-1)
//   RP-only     = 2 * cost_rp                           valid only if m <= n
//   hybrid(k)   = (k/n + m - k) * cost_ip + cost_rp     for k = 1..m
inline std::vector<plan_cost> plan_costs(int n, int m, double cost_ip, double cost_rp) {
  require(n >= 1, "plan n (GPUs)", n, ">= 1");
  require(m >= 1, "plan m (GMIs per GPU)", m, ">= 1");
  require(cost_ip >= 0, "plan cost_ip", cost_ip, ">= 0 (a profiled time)");
  require(cost_rp >= 0, "plan cost_rp", cost_rp, ">= 0 (a profiled time)");
  std::vector<plan_cost> out;
  const double nm = static_cast<double>(n) * m;
  out.push_back({plan_kind::ip_only, 0, n == 1 ? (m - 1.0) / m * cost_ip : (nm - 1) / (m * (n - 1.0)) * cost_ip, true, {}});
  plan_cost rp{plan_kind::rp_only, 0, 2 * cost_rp, true, {}};
  if (m > n) {
    rp.valid = false;
    rp.why_invalid = "m = " + std::to_string(m) + " GMIs per GPU > n = " + std::to_string(n) + " GPUs";
  }
  out.push_back(rp);
  if (n > 1) {
    for (int k = 1; k <= m; ++k) {
      out.push_back({plan_kind::hybrid, k, (static_cast<double>(k) / n + m - k) * cost_ip + cost_rp, true, {}});
    }
  }
  return out;
}

// The cheapest valid plan, with a reason that names the runner-up.
inline plan_choice choose_plan(int n, int m, double cost_ip, double cost_rp) {
  plan_choice c;
  c.candidates = plan_costs(n, m, cost_ip, cost_rp);
  const plan_cost* best = nullptr;
  const plan_cost* second = nullptr;
  for (const auto& p : c.candidates) {
    if (!p.valid) continue;
    if (!best || p.cost < best->cost) {
      second = best;
      best = &p;
    } else if (!second || p.cost < second->cost) {
      second = &p;
    }
  }
  c.kind = best->kind;
  c.k = best->k;
  c.cost = best->cost;
  auto label = [](const plan_cost& p) {
    return std::string(plan_name(p.kind)) + (p.kind == plan_kind::hybrid ? "(k=" + std::to_string(p.k) + ")" : "");
  };
  char buf[256];
  std::snprintf(buf, sizeof buf, "n=%d m=%d cost_ip=%.3g cost_rp=%.3g: %s costs %.3g", n, m, cost_ip, cost_rp,
                label(*best).c_str(), best->cost);
  c.reason = buf;
  if (second) {
    std::snprintf(buf, sizeof buf, ", next %s %.3g", label(*second).c_str(), second->cost);
    c.reason += buf;
  }
  for (const auto& p : c.candidates) {
    if (!p.valid) c.reason += "; " + label(p) + " invalid: " + p.why_invalid;
  }
  return c;
}

}  // namespace gmi::comm
