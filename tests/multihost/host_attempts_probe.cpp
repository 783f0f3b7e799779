// gmi::run's restart loop across hosts (pipeline/host_attempts.hpp) without GPUs: each host's launcher runs every
// attempt as a child process and relays its sums to the other hosts (runtime/host_relay.hpp, a relayed
// runtime::gpu_hosts), as gmi::run does for GPU GMIs; here an attempt trains Cartpole PPO on one host trainer a
// host (global rank = host), summing gradients, statistics and checkpoint records through gpu_hosts::sum. Without
// --restart-on-failure the launcher trains itself through the link (the reference). Host 0's attempt prints one
// JSON line with the weights' FNV-1a; a failure is one line on stderr.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/core/hash.hpp>
#include <gmi/envs/cartpole.hpp>
#include <gmi/pipeline/host_attempts.hpp>
#include <gmi/rl/ppo.hpp>
#include <gmi/runtime/flags.hpp>
#include <gmi/runtime/gpu_hosts.hpp>
#include <gmi/runtime/host_checkpoint.hpp>

#include "hosts_program.hpp"

namespace {
using net = gmi::agents::gaussian_mlp<>::network<4, 1>;
using trainer = gmi::rl::ppo_trainer<gmi::envs::cartpole, net, gmi::exec::host>;
using gmi_test::wall_now;

struct settings {
  int iterations = 8, envs = 32, checkpoint_every = 0;
  std::uint64_t seed = 100;
  std::string checkpoint;
  bool kill_every_attempt = false;
};

// One attempt on this host (attempt 1 and no resume: a fresh run, where the kill hook fires).
int train(gmi::runtime::gpu_hosts& hosts, const settings& s, const gmi_test::host_flags& f, int attempt,
          const std::string& resume) {
  const int rank = hosts.first_rank(), world = hosts.global_world(), host = hosts.host().host;
  gmi::rl::ppo_config config;
  config.minibatch = 256;
  config.epochs = 2;
  trainer t(s.envs, s.seed + static_cast<std::uint64_t>(rank), config, {}, gmi::exec::host{});
  const auto never = [] { return false; };
  if (!resume.empty()) {
    t.load_state(gmi::runtime::load_from_hosts(gmi::runtime::manifest_for_host(resume, host), rank));
    std::fprintf(stderr, "gmi: %s: attempt %d resumed from iteration %llu (at %.3f)\n", hosts.describe().c_str(), attempt,
                 static_cast<unsigned long long>(t.iteration()), wall_now());
  }
  gmi::rl::ppo_sync sync;
  sync.rank = rank;
  sync.world = world;
  sync.sum_host = [&](float* d, std::size_t n) {  // through doubles: every host adds the same way, the same bits
    std::vector<double> v(d, d + n);
    hosts.sum(0, v.data(), n, never);
    for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<float>(v[i]);
  };
  sync.sum_stats = [&](double* d, std::size_t n) { hosts.sum(0, d, n, never); };
  t.set_sync(std::move(sync));
  if (const auto status = gmi::restart_status::from_env()) status->block().started_ns.store(gmi::steady_ns());
  const gmi::runtime::host_saver saver{rank, world, host, [&](double* d, std::size_t n) { hosts.sum(0, d, n, never); }};
  for (int i = static_cast<int>(t.iteration()); i < s.iterations; ++i) {
    if (attempt == 1 || s.kill_every_attempt) f.maybe_kill(host, i);
    t.iterate();
    const bool every = s.checkpoint_every > 0 && t.iteration() % static_cast<std::uint64_t>(s.checkpoint_every) == 0;
    if (!s.checkpoint.empty() && every) gmi::runtime::save_on_hosts(saver, t.save_state(), s.checkpoint, t.iteration(), 1);
  }
  const std::uint64_t mine = gmi::fnv1a(t.params().data(), t.params().size() * sizeof(float));
  const std::vector<std::uint64_t> every = hosts.gather(mine);
  hosts.finish();
  bool same = true;
  for (const std::uint64_t h : every) same = same && h == mine;
  if (host == 0) {
    std::printf("{\"host\": %d, \"hosts\": %d, \"attempt\": %d, \"iterations\": %d, \"weights_fnv\": \"%016llx\", "
                "\"same_on_every_host\": %s}\n", host, hosts.hosts(), attempt, s.iterations,
                static_cast<unsigned long long>(mine), same ? "true" : "false");
    std::fflush(stdout);
  }
  return same ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app("gmi's restart loop across hosts on host trainers", "gmi.multihost.host_attempts_probe");
  settings s;
  int restarts = 0;
  gmi_test::host_flags f;
  f.add_to(app, "the start of this iteration (in the attempt's process)");
  app.add_option("--iterations", s.iterations, "PPO iterations")->check(CLI::Range(1, 100000));
  app.add_option("--envs", s.envs, "environments a host")->check(CLI::Range(1, 1 << 20));
  app.add_option("--checkpoint", s.checkpoint, "the job manifest (a file a host, host manifests)");
  app.add_option("--checkpoint-every", s.checkpoint_every, "iterations between saves")->check(CLI::Range(0, 100000));
  app.add_option("--restart-on-failure", restarts, "restarts across hosts: each attempt a child process of the launcher")
      ->check(CLI::Range(0, 63));
  app.add_flag("--kill-every-attempt", s.kill_every_attempt, "test: the kill fires in every attempt, not the first only");
  if (auto code = gmi::runtime::parse_flags(app, argc, argv)) return *code;
  try {
    const gmi::runtime::host_info h = gmi::runtime::detect_host(f.host_id);
    gmi::runtime::gpu_hosts_options o;
    o.link.heartbeat_timeout = std::chrono::milliseconds(f.heartbeat_ms);
    o.link.epochs = 1 + restarts;
    o.make_id = [] {  // a made-up id: no NCCL call (no GPU here)
      gmi::comm::nccl_id id;
      std::snprintf(id.id.internal, sizeof id.id.internal, "probe %lld",
                    static_cast<long long>(std::chrono::steady_clock::now().time_since_epoch().count()));
      return id;
    };
    if (const auto relayed = gmi::relayed_hosts_from_env()) {  // an attempt: a child of this host's launcher
      gmi::runtime::gpu_hosts hosts(h, o, *relayed);
      const auto note = gmi::restart_note_from_env();
      return train(hosts, s, f, note ? note->attempt : 1, note ? note->resume : "");
    }
    gmi::runtime::gpu_hosts hosts(h, o);
    if (restarts == 0) return train(hosts, s, f, 1, "");
    gmi::host_attempts_config c;
    c.restarts = restarts;
    c.checkpoint = s.checkpoint;
    c.gmis = 1;
    c.timeout = hosts.timeout();
    return gmi::run_attempts_on_hosts(hosts, c);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmi: %s\n", e.what());
    return 1;
  }
}
