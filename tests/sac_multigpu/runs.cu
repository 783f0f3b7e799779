#include "sac_multigpu/runs.hpp"

#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <gmi/cuda/check.hpp>
#include <gmi/envs/pendulum.hpp>
#include <gmi/pipeline/offpolicy_split.hpp>
#include <gmi/pipeline/split_paths.hpp>
#include <gmi/rl/sac.cuh>
#include <gmi/runtime/crash_report.hpp>
#include <gmi/runtime/launcher.hpp>
#include <gmi/runtime/supervisor.hpp>
#include <gmi/runtime/trace.hpp>

namespace sac_multigpu {

namespace {

// Before main (so before doctest's per-case handlers, which hand a fault on to it): a fault in a GMI thread prints
// which GMI crashed and a backtrace (runtime/crash_report.hpp) instead of doctest's bare "test case CRASHED".
[[maybe_unused]] const bool crash_report_installed = [] {
  gmi::runtime::install_crash_report();
  return true;
}();

using trainer = gmi::rl::sac_device_trainer<gmi::envs::pendulum, gmi::rl::sac_networks<3, 1, 64>>;

// What the GMI threads of one split run share, owned through a shared_ptr that every thread holds. thread_group::wait
// leaves a thread that does not stop within stop_grace after a failure detached, and split_run then returns or
// throws: with the state on split_run's stack (a [&] capture) such a thread would read and write a dead frame.
struct run_state {
  gmi::rl::sac_config c;
  gmi::detail::split_channel_spec spec;
  bool device = false;
  std::vector<int> actor_gpus;
  int envs = 0;
  std::size_t env_steps = 0;
  bool evaluate = false;
  std::uint64_t seed = 0;
  split_result out;
  // The learner's end of the device transport: the actors' rounds land in its slot pools and they read its weights
  // board, all device memory the actors' threads reach through plain pointers. It goes with the last holder of the
  // state, never with the learner's thread: a learner that throws would otherwise free the pools while an actor still
  // copies into or out of them, and cudaMemcpyDefault takes a freed device pointer for host memory (a host memcpy
  // into an unmapped address: SIGSEGV in every actor at once).
  std::optional<gmi::detail::split_channels_learner> learner_end;
};

void learner(run_state& s, gmi::runtime::context& ctx) {
  trainer eng(s.c, s.envs, s.seed);
  gmi::runtime::trace(ctx.id(), "sac_multigpu learner: engine built");
  if (s.device) s.learner_end.emplace(s.spec, eng.stream());
  gmi::detail::split_channels_learner* ch = s.learner_end ? &*s.learner_end : nullptr;
  // Held rounds go back while the engine's stream (their release event's) still exists, also when the learner throws.
  struct give_back {
    gmi::detail::split_channels_learner* ch;
    int actors;
    ~give_back() {
      for (int a = 1; ch && a <= actors; ++a) {
        try {
          ch->release(a);
        } catch (const std::exception&) {  // a broken link: nothing of it is read any more
        }
      }
    }
  } const guard{ch, s.spec.actors};
  gmi::runtime::trace(ctx.id(), ch ? "sac_multigpu learner: device transport open"
                                   : "sac_multigpu learner: host messages");
  gmi::detail::split_learner<trainer> l(eng, ctx, ch);
  while (eng.env_steps() < s.env_steps) l.step();
  s.out.episodes = l.read_stats().episodes;
  l.finish();
  gmi::runtime::trace(ctx.id(), "sac_multigpu learner: finished, actors stopped");
  GMI_CUDA_TRY(cudaStreamSynchronize(eng.stream()));
  s.out.env_steps = eng.env_steps();
  s.out.updates = eng.updates();
  s.out.table = eng.table().size();
  auto snap = eng.table().take_snapshot();
  s.out.columns = std::move(snap.columns);
  s.out.traj = std::move(snap.traj);
  s.out.step = std::move(snap.step);
  s.out.next = std::move(snap.next);
  for (const auto& v : {eng.actor_params(), eng.critic_params(0), eng.critic_params(1)})
    s.out.weights.insert(s.out.weights.end(), v.begin(), v.end());
  if (s.evaluate) s.out.eval_return = eng.evaluate(16, 4242);
  gmi::runtime::trace(ctx.id(), "sac_multigpu learner: table and weights read");
}

void actor(run_state& s, gmi::runtime::context& ctx) {
  trainer eng(gmi::detail::split_actor_config(s.c), s.envs, s.seed + std::uint64_t(ctx.rank()));
  gmi::runtime::trace(ctx.id(), "sac_multigpu actor: engine built");
  std::optional<gmi::detail::split_channels_actor> ch;
  if (s.device) ch.emplace(s.spec, ctx.rank(), eng.stream());
  gmi::runtime::trace(ctx.id(), ch ? "sac_multigpu actor: attached to the learner's channel and board"
                                   : "sac_multigpu actor: host messages");
  gmi::detail::split_actor_run(eng, ctx, ch ? &*ch : nullptr, std::size_t(s.envs));
  gmi::runtime::trace(ctx.id(), "sac_multigpu actor: stopped");
}

}  // namespace

bool peer_1_to_0() {
  int reach = 0;
  GMI_CUDA_TRY(cudaDeviceCanAccessPeer(&reach, 1, 0));
  return reach != 0;
}

split_result split_run(const std::vector<int>& actor_gpus, int envs, std::size_t env_steps, bool host, bool evaluate,
                       std::uint64_t seed) {
  auto st = std::make_shared<run_state>();
  run_state& s = *st;
  s.c.batch = 128;  // learn_pendulum's settings (tests/sac_gpu)
  s.c.warmup_steps = 1000;
  s.c.replay_capacity = 100000;
  s.c.actor_lr = 1e-3f;
  s.c.critic_lr = 1e-3f;
  s.c.alpha_lr = 1e-3f;
  s.actor_gpus = actor_gpus;
  s.envs = envs;
  s.env_steps = env_steps;
  s.evaluate = evaluate;
  s.seed = seed;
  const int actors = int(actor_gpus.size());
  int visible = 0;
  GMI_CUDA_TRY(cudaGetDeviceCount(&visible));
  std::vector<gmi::detail::split_gmi_place> places;
  for (int g : actor_gpus) places.push_back({g, g, visible});
  const auto plan = gmi::detail::plan_split_paths(
      host ? gmi::split_transport_choice::host : gmi::split_transport_choice::automatic, {0, 0, visible}, places,
      [](int from, int to) {
        int reach = 0;
        GMI_CUDA_TRY(cudaDeviceCanAccessPeer(&reach, from, to));
        return reach != 0;
      });
  s.device = plan.device;
  s.out.device = plan.device;
  s.out.peer = plan.peer;
  s.out.lines = plan.lines;
  s.spec.tag = gmi::comm::unique_tag("sac-multigpu-split");
  s.spec.actors = actors;
  s.spec.envs = std::uint32_t(envs);
  s.spec.steps = gmi::detail::offpolicy_split_steps;
  s.spec.row_floats = std::uint32_t(trainer::packed_width);
  s.spec.weight_floats = trainer::actor_net::param_count;
  s.spec.placement = gmi::comm::payload_placement::device;
  s.spec.across_processes = false;  // thread GMIs: plain device pointers and events, peer access enabled per context
  s.spec.peer = plan.peer;
  s.spec.timeout = std::chrono::seconds(60);
  // A line before the run (stderr, unbuffered): a log that ends in a crash says which run it was.
  std::string where;
  for (int g : actor_gpus) where += (where.empty() ? "" : ",") + std::to_string(g);
  const char* path = plan.device ? (plan.peer ? "device, peer" : "device") : "host messages";
  std::fprintf(stderr, "sac_multigpu: split run (%s, %s; actors on GPUs %s, %d envs each, %zu env steps, seed %llu)\n",
               host ? "--split-transport host" : "auto", path, where.c_str(), envs, env_steps,
               static_cast<unsigned long long>(seed));
  const auto t0 = std::chrono::steady_clock::now();
  gmi::runtime::launch_spec ls = gmi::runtime::launch_spec::uniform(1, actors + 1);
  ls.heartbeat_timeout = std::chrono::milliseconds(30000);  // the learner's end: a snapshot and an evaluation
  gmi::runtime::thread_group g(std::move(ls), [st](gmi::runtime::context& ctx) {
    GMI_CUDA_TRY(cudaSetDevice(ctx.rank() == 0 ? 0 : st->actor_gpus[std::size_t(ctx.rank() - 1)]));
    if (ctx.rank() == 0) {
      learner(*st, ctx);
    } else {
      actor(*st, ctx);
    }
  });
  (void)g.wait_or_throw();
  s.out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Every thread has returned (wait_or_throw threw otherwise): the learner's end goes here, after every actor's.
  s.learner_end.reset();
  return std::move(s.out);
}

}  // namespace sac_multigpu
