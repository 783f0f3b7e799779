#pragma once
// Whether a GPU should hold a replica of a shard that lives elsewhere (another GPU's memory, or pinned host memory)
// and that it draws from (issue 39: hot shards "replicated over NVLink where measured cheaper"). A host rule over
// one placement window, for one (shard, drawing GPU) pair:
//   read cost = the window's draws x row bytes / read_gbps: the gathers reading the shard where it lives (over
//               NVLink from its owner, or over PCIe from pinned host memory);
//   copy cost = the bytes a replica needs / copy_gbps: the whole shard when there is no replica yet, else only the
//               rows inserted in the window (keeping it current).
// A replica is made when copy cost x margin < read cost (margin 2: the copy must cost at most half the reads it
// saves), kept while copy cost < read cost (so one near the line does not come and go), dropped otherwise. With
// fewer than min_draws draws in the window nothing changes. The two bandwidths are measured on the machine (a peer
// or host-to-device copy timed, and a gather timed where the shard lives), never assumed: a link without them is
// refused with one line. Decided here, not applied: no run replicates shards yet (docs/replay.md).

#include <cmath>
#include <cstddef>
#include <cstdint>

#include <gmi/core/error.hpp>

namespace gmi::replay {

// Measured bandwidths between where a shard lives and the GPU that draws from it, GB/s.
struct replica_link {
  double copy_gbps = 0;  // a bulk copy into the drawing GPU's memory
  double read_gbps = 0;  // the gathers' reads where the shard lives (row-sized, scattered)
  void validate() const {
    gmi::require(std::isfinite(copy_gbps) && copy_gbps > 0 && copy_gbps <= 1e5, "replica_link.copy_gbps", copy_gbps,
                 "(0, 1e5] GB/s, measured on this machine");
    gmi::require(std::isfinite(read_gbps) && read_gbps > 0 && read_gbps <= 1e5, "replica_link.read_gbps", read_gbps,
                 "(0, 1e5] GB/s, measured on this machine");
  }
};

struct replica_rule {
  double margin = 2.0;             // make a replica when its copy costs under 1 / margin of the reads it saves
  std::uint64_t min_draws = 4096;  // fewer draws in the window: nothing changes
  void validate() const {
    gmi::require(std::isfinite(margin) && margin >= 1.0 && margin <= 100.0, "replica_rule.margin", margin, "1 .. 100");
  }
};

// One window of one (shard, drawing GPU) pair.
struct replica_window {
  std::uint64_t draws = 0;          // rows this GPU drew from the shard in the window
  std::uint64_t inserted_rows = 0;  // rows the shard took in the window (a replica copies them)
  std::size_t shard_rows = 0;       // rows the shard holds (a new replica copies them all)
  std::size_t row_bytes = 0;
  bool replicated = false;          // this GPU holds a replica now
};

struct replica_decision {
  bool replicate = false;  // hold a replica after this window
  bool decided = false;    // false: too few draws, `replicate` is the current state
  double read_s = 0, copy_s = 0;
};

[[nodiscard]] inline replica_decision decide_replica(const replica_window& w, const replica_link& link,
                                                     const replica_rule& rule) {
  link.validate();
  rule.validate();
  gmi::require(w.row_bytes >= 1, "replica_window.row_bytes", w.row_bytes, ">= 1");
  replica_decision d;
  d.replicate = w.replicated;
  const double gb = 1e9, row = double(w.row_bytes);
  d.read_s = double(w.draws) * row / (link.read_gbps * gb);
  const double copied = w.replicated ? double(w.inserted_rows) : double(w.shard_rows);
  d.copy_s = copied * row / (link.copy_gbps * gb);
  if (w.draws < rule.min_draws) return d;
  d.decided = true;
  d.replicate = w.replicated ? d.copy_s < d.read_s : d.copy_s * rule.margin < d.read_s;
  return d;
}

}  // namespace gmi::replay
