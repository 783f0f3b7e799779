#pragma once
// Split roles on GPU GMIs over several GPUs: which path each actor's rounds take to the learner. An actor on the
// learner's GPU, or on another GPU with peer access to it (cudaDeviceCanAccessPeer), can write its rounds straight into
// the learner's device memory (split_channels.hpp, the device transport; peer copies over NVLink or PCIe); others go
// through host messages. A run uses one transport for all its actors: device when every actor has a device path, else
// host messages. Host code only (the peer query is a parameter), so CI checks the choice and its refusals.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/pipeline/run_options.hpp>

namespace gmi::detail {

// Where one GMI of a split run is: its GPU (ordinal in the launcher's numbering), the CUDA ordinal its process uses
// for it, and how many GPUs its process sees (1 under MPS and MIG: CUDA_VISIBLE_DEVICES names one).
struct split_gmi_place {
  std::int32_t gpu = 0;
  std::int32_t device = 0;
  std::int32_t visible = 1;
};

enum class split_path : std::uint32_t {
  host = 0,      // host messages: the actor downloads its round, the learner uploads it
  same_gpu = 1,  // device transport: one device-to-device copy on the learner's GPU
  peer = 2,      // device transport: a peer copy from the actor's GPU into the learner's memory
};

// The run's transport and each actor's path with the reason, one line an actor (actor a at index a - 1).
struct split_plan {
  bool device = false;  // every actor through the device transport; else every actor through host messages
  bool peer = false;    // some actor on another GPU: the channels and the weights board open with peer access
  std::vector<split_path> paths;   // what each actor could use on its own
  std::vector<std::string> lines;  // "actor GMI 1 on GPU 1: device transport, peer copies into GPU 0's memory"
};

// Whether device `from` can access device `to`'s memory (cudaDeviceCanAccessPeer in a run; a table in tests).
using peer_query = std::function<bool(int from, int to)>;

// The plan for `choice` (auto: device where every actor can; host: asked; device: refused with one line naming the
// first actor that cannot, and why). Every GMI of a run computes it from the same places, or the learner sends it.
[[nodiscard]] inline split_plan plan_split_paths(split_transport_choice choice, const split_gmi_place& learner,
                                                 std::span<const split_gmi_place> actors, const peer_query& can_access) {
  gmi::require(!actors.empty() && actors.size() <= 255, "split roles actor GMIs", actors.size(), "1 .. 255");
  split_plan p;
  std::vector<std::string> why;
  const std::string lgpu = "GPU " + std::to_string(learner.gpu);
  for (std::size_t i = 0; i < actors.size(); ++i) {
    const split_gmi_place& a = actors[i];
    split_path path = split_path::host;
    std::string w;
    if (choice == split_transport_choice::host) {
      w = "host messages (--split-transport host)";
    } else if (a.gpu == learner.gpu) {
      path = split_path::same_gpu;
      w = "device transport (the learner's GPU)";
    } else if (a.visible < 2 || learner.visible < 2) {
      w = "host messages (its process or the learner's sees one GPU: MPS or MIG)";
    } else if (can_access(a.device, learner.device)) {
      path = split_path::peer;
      w = "device transport, peer copies into " + lgpu + "'s memory";
    } else {
      w = "host messages (no peer access from GPU " + std::to_string(a.gpu) + " to " + lgpu + ")";
    }
    p.paths.push_back(path);
    why.push_back(std::move(w));
  }
  std::size_t first_host = actors.size();
  for (std::size_t i = 0; i < actors.size() && first_host == actors.size(); ++i)
    if (p.paths[i] == split_path::host) first_host = i;
  if (choice == split_transport_choice::device && first_host < actors.size()) {
    const split_gmi_place& a = actors[first_host];
    throw gmi::config_error(gmi::got_need(
        "--split-transport device with actor GMI " + std::to_string(first_host + 1) + " on GPU " + std::to_string(a.gpu),
        why[first_host], "peer access to the learner's " + lgpu + " (or --split-transport auto or host)"));
  }
  p.device = choice != split_transport_choice::host && first_host == actors.size();
  for (std::size_t i = 0; i < actors.size(); ++i) {
    if (p.device && p.paths[i] == split_path::peer) p.peer = true;
    std::string line = "actor GMI " + std::to_string(i + 1) + " on GPU " + std::to_string(actors[i].gpu) + ": ";
    if (p.device || p.paths[i] == split_path::host) {
      line += why[i];
    } else {
      line += "host messages (actor GMI " + std::to_string(first_host + 1) +
              " has no device path; a run's actors share one transport)";
    }
    p.lines.push_back(std::move(line));
  }
  return p;
}

}  // namespace gmi::detail
