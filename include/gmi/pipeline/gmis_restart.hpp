#pragma once
// --restart-on-failure for a synchronous group that saves gmis_checkpoint.hpp's manifests: the parent's loop
// configuration (gmis_restart_loop: resume from the last complete manifest this run saved, prune what a failed
// save left) and an attempt's side of it (attempt_watch: the status block the parent reads, the test hook
// GMI_TEST_KILL_AT, the note naming a lost GMI). restart.hpp holds the loop itself and the pure decisions.

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include <gmi/core/error.hpp>
#include <gmi/pipeline/gmis_checkpoint.hpp>
#include <gmi/pipeline/restart.hpp>
#include <gmi/pipeline/run_options.hpp>

namespace gmi {

// The restart loop of a group of `world` GMIs that saves manifests at o.checkpoint_path; `group_samples`: env
// steps of the whole group an iteration (for the progress a restart loses).
[[nodiscard]] inline restart_loop_config gmis_restart_loop(const run_options& o, int world, double group_samples) {
  restart_loop_config rc;
  rc.restarts = o.restart_on_failure;
  rc.checkpoint_path = o.checkpoint_path;
  rc.first_resume = o.resume_path;
  rc.first_iteration = o.resume_path.empty() ? 0 : read_manifest(o.resume_path).iteration;
  rc.samples_per_iteration = group_samples;
  rc.attempt_bound = std::chrono::seconds(static_cast<long long>(std::min(o.max_seconds, 1e7)) + 600);
  const std::string path = o.checkpoint_path;
  rc.last_checkpoint = [path, world](std::optional<std::uint64_t> saved, std::string& why) -> std::optional<std::uint64_t> {
    if (!saved) {
      why = "no checkpoint saved in this run yet";
      return std::nullopt;
    }
    const auto m = last_complete_checkpoint(path, &why);
    if (m && m->iteration >= *saved && m->world == world) return m->iteration;
    if (m) why = "the manifest at " + path + " is not the one this run saved";
    return std::nullopt;
  };
  rc.prune = [path] {
    const auto m = last_complete_checkpoint(path);
    remove_unreferenced(path, m ? &*m : nullptr);
  };
  rc.stop_signal = &detail::stop_signal;
  return rc;
}

// An attempt's side of the loop (nothing to do outside one): rank 0 tells the parent where the group is and what it
// saved; a GMI lost here is noted for the parent; GMI_TEST_KILL_AT's GMI SIGKILLs itself after its iteration.
class attempt_watch {
 public:
  attempt_watch() : status_(restart_status::from_env()), kill_(test_kill_from_env()) {}

  // Refuses a test hook naming a rank the group does not have (launcher, before anything starts).
  void check(int world) const {
    if (kill_) require(kill_->rank < world, test_kill_var, std::getenv(test_kill_var), "a rank below " + std::to_string(world));
  }
  [[nodiscard]] bool in_attempt() const noexcept { return status_.has_value(); }
  // Rank 0, before its first iteration: the iteration the attempt starts from.
  void started(std::uint64_t iteration) const {
    if (!status_) return;
    status_->block().start_iteration.store(iteration);
    status_->block().iteration.store(iteration);
    status_->block().started_ns.store(steady_ns());
  }
  // Every GMI after each iteration: rank 0 records it; the hook's GMI ends its process (SIGKILL) when due.
  void iterated(int rank, std::uint64_t iteration, const std::string& who) const {
    if (status_ && rank == 0) status_->block().iteration.store(iteration, std::memory_order_relaxed);
    if (!kill_ || kill_->rank != rank || kill_->iteration != iteration) return;
    const std::string line = who + " killed by the test hook " + test_kill_var + "=" + std::getenv(test_kill_var) +
                             " after iteration " + std::to_string(iteration);
    if (status_) status_->set_note(line);
    std::fprintf(stderr, "gmi: %s\n", line.c_str());
    std::fflush(stderr);
    std::raise(SIGKILL);
  }
  // Rank 0, once a checkpoint of `iteration` is complete (its manifest written).
  void saved(std::uint64_t iteration) const {
    if (!status_) return;
    status_->block().checkpoint_ns.store(steady_ns());
    status_->block().checkpoint_plus_1.store(iteration + 1);
  }
  // The launcher, when a GMI of the group was lost: the parent restarts the group.
  void lost(const std::string& what) const {
    if (!status_) return;
    status_->set_note(what);
    status_->block().lost_gmi.store(1);
  }

 private:
  std::optional<restart_status> status_;
  std::optional<kill_at> kill_;
};

}  // namespace gmi
