#pragma once
// Glue between a launch_spec and a partition backend's services: the per-GMI environment a backend needs and
// its part of the teardown (MPS: terminate_client for the live GMIs, the failed GMI's GPU first).

#include <algorithm>
#include <cstdio>
#include <vector>

#include <gmi/partition/mps.hpp>
#include <gmi/runtime/launcher.hpp>

namespace gmi::runtime {

// Points every GPU GMI of `spec` at `mps`'s daemon of its GPU (local ordinal 0: CUDA_VISIBLE_DEVICES names the
// GPU) and makes the teardown stop them through terminate_client before any signal. `mps` must outlive the run.
inline void use_mps(launch_spec& spec, const gmi::partition::mps::session& mps) {
  for (auto& p : spec.gmis) {
    if (p.gpu < 0) continue;
    for (auto& kv : mps.client_env(p.gpu, p.slice)) p.env.push_back(kv);
    p.local_device = 0;
    p.device_sms = mps.device_sm_count(p.gpu);
  }
  auto previous = spec.before_kill;
  std::vector<int> gpu_of;
  for (const auto& p : spec.gmis) gpu_of.push_back(p.gpu);
  spec.before_kill = [&mps, previous, gpu_of](const failure& f, const std::vector<live_gmi>& live) {
    if (previous) previous(f, live);
    std::vector<int> gpus;
    const int failed_gpu = f.rank >= 0 && f.rank < static_cast<int>(gpu_of.size()) ? gpu_of[f.rank] : -1;
    if (failed_gpu >= 0) gpus.push_back(failed_gpu);
    for (const auto& l : live) {
      if (l.gpu >= 0 && std::find(gpus.begin(), gpus.end(), l.gpu) == gpus.end()) gpus.push_back(l.gpu);
    }
    for (int g : gpus) {
      std::vector<int> clients;
      for (const auto& l : live) if (l.gpu == g && l.pid > 0) clients.push_back(l.pid);
      const std::string errors = mps.terminate_clients(g, clients);
      if (!errors.empty()) std::fprintf(stderr, "gmi: MPS terminate_client on GPU %d: %s", g, errors.c_str());
    }
  };
}

}  // namespace gmi::runtime
