// Synchronous PPO (Cartpole, host trainers) over the host GMIs of every host of a multi-host job: the program the
// multi-host tests start under mpirun (one process a simulated host) and, for the reference, alone (one host with
// all the GMIs). Global rank r trains on seed --seed + r; the trainers sum through runtime::run_on_hosts. Rank 0
// writes the final weights (raw floats) to --weights; every host prints one JSON line, or its one error line.
// With --restart-on-failure N (and --checkpoint), a GMI that fails makes every host restart from the last
// checkpoint every host completed, and an existing checkpoint is resumed from at the start.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/core/hash.hpp>
#include <gmi/envs/cartpole.hpp>
#include <gmi/rl/ppo.hpp>
#include <gmi/runtime/flags.hpp>
#include <gmi/runtime/host_checkpoint.hpp>
#include <gmi/runtime/multihost.hpp>

#include "hosts_program.hpp"

namespace {
using net = gmi::agents::gaussian_mlp<>::network<4, 1>;
using trainer = gmi::rl::ppo_trainer<gmi::envs::cartpole, net, gmi::exec::host>;
using gmi_test::wall_now;
}  // namespace

int main(int argc, char** argv) {
  CLI::App app("gmi multi-host PPO on host GMIs", "gmi.multihost.ppo");
  gmi::runtime::multihost_options o;
  int iterations = 4, envs = 32, throw_host = -1, throw_attempts = 1, checkpoint_every = 0;
  std::uint64_t seed = 100;
  std::string weights, checkpoint, resume;
  bool no_cross_gradients = false;
  gmi_test::host_flags f;
  f.add_to(app, "the start of this iteration");
  app.add_option("--gmis-per-host", o.gmis, "host GMIs on every host")->check(CLI::Range(1, 256));
  app.add_option("--iterations", iterations, "PPO iterations")->check(CLI::Range(1, 100000));
  app.add_option("--envs", envs, "environments a GMI")->check(CLI::Range(1, 1 << 20));
  app.add_option("--seed", seed, "seed of global rank 0 (rank r: seed + r)");
  app.add_option("--weights", weights, "file for rank 0's final weights (raw float32)");
  app.add_option("--checkpoint", checkpoint, "after the last iteration: every GMI's state, host manifests, job manifest");
  app.add_option("--checkpoint-every", checkpoint_every, "... and after every this many iterations (0: the last only)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--resume", resume, "a job manifest to start from (--iterations is the total: it runs on from the manifest's iteration)");
  app.add_option("--restart-on-failure", o.restarts,
                 "restarts of every host from the last checkpoint after a GMI fails; an existing checkpoint is resumed")
      ->check(CLI::Range(0, 63));
  app.add_option("--throw-host", throw_host, "test: GMI 1 of this host throws at iteration --kill-at ...");
  app.add_option("--throw-attempts", throw_attempts, "... in this many attempts (restarts) of a fresh run")->check(CLI::Range(1, 64));
  app.add_flag("--no-cross-host-gradients", no_cross_gradients,
               "test control: after the first weights, gradients are summed within each host only (replicas drift)");
  if (auto code = gmi::runtime::parse_flags(app, argc, argv)) return *code;
  o.host_id = f.host_id;
  o.link.heartbeat_timeout = std::chrono::milliseconds(f.heartbeat_ms);
  o.checkpoint = checkpoint;
  o.resume_existing = o.restarts > 0;

  gmi::rl::ppo_config config;
  config.minibatch = 256;
  config.epochs = 2;
  const auto start = std::chrono::steady_clock::now();
  try {
    const auto report = gmi::runtime::run_on_hosts(o, [&](gmi::runtime::context& ctx, gmi::runtime::host_gmi& g) {
      trainer t(envs, seed + static_cast<std::uint64_t>(g.rank()), config, {}, g.policy());
      const std::string from = g.resume().empty() ? resume : g.resume();  // the hosts' agreed checkpoint first
      if (!from.empty()) t.load_state(gmi::runtime::load_from_hosts(from, g.rank()));
      gmi::rl::ppo_sync s;
      s.rank = g.rank();
      s.world = g.world();
      s.sum_host = [&g, no_cross_gradients, calls = 0](float* d, std::size_t n) mutable {
        if (no_cross_gradients && calls++ > 0) g.sum_this_host(d, n);  // call 0: set_sync's weight broadcast
        else g.sum(d, n);
      };
      s.sum_stats = [&g](double* d, std::size_t n) { g.sum(d, n); };
      t.set_sync(std::move(s));
      for (int i = static_cast<int>(t.iteration()); i < iterations; ++i) {
        // The test hooks fire in a fresh run only (not one resumed at its start: rerunning a killed job resumes it).
        const bool fresh = g.attempt() == 1 && g.resume().empty();
        if (ctx.rank() == 0 && fresh) f.maybe_kill(g.host(), i);
        const bool throws = g.attempt() <= throw_attempts && (g.attempt() > 1 || g.resume().empty());
        if (g.host() == throw_host && ctx.rank() == 1 && i == f.kill_at && throws) {
          throw std::runtime_error("failed on purpose");
        }
        t.iterate();
        ctx.heartbeat();
        const bool every = checkpoint_every > 0 && t.iteration() % static_cast<std::uint64_t>(checkpoint_every) == 0;
        if (!checkpoint.empty() && every && static_cast<int>(t.iteration()) < iterations) {
          gmi::runtime::save_on_hosts(g, t.save_state(), checkpoint, t.iteration(), o.gmis);
        }
      }
      if (!checkpoint.empty()) gmi::runtime::save_on_hosts(g, t.save_state(), checkpoint, t.iteration(), o.gmis);
      if (g.rank() == 0 && !weights.empty()) {
        std::ofstream out(weights, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(t.params().data()), static_cast<std::streamsize>(t.params().size() * sizeof(float)));
      }
      ctx.report(std::to_string(gmi::fnv1a(t.params().data(), t.params().size() * sizeof(float))));
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!report.ok()) {
      std::fprintf(stderr, "gmi: host %d '%s': %s (detected at %.3f)\n", report.host.host, report.host.id.c_str(),
                   report.run.first_failure->message.c_str(), wall_now());
      return 1;
    }
    std::printf("{\"bench\": \"multihost\", \"case\": \"cartpole_host_ppo\", \"hosts\": %d, \"host\": %d, \"host_id\": \"%s\", "
                "\"gmis_per_host\": %d, \"iterations\": %d, \"restarts\": %d, \"restart_seconds\": %.3f, \"seconds\": %.3f, \"weights_fnv\": \"%s\"}\n",
                report.host.hosts, report.host.host, report.host.id.c_str(), o.gmis, iterations, report.restarts, report.restart_seconds, seconds,
                report.run.results.at(0).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmi: %s\n", e.what());
    return 1;
  }
}
