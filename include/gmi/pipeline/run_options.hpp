#pragma once
// What gmi::run reads from its flags (run_options), and the stop flag its signal handlers set. Shared by run.cuh
// and the drivers it calls (serving, synchronous training, population, autotune).

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <gmi/comm/row_exchange_across_gpus.hpp>
#include <gmi/core/choice.hpp>
#include <gmi/plan/placement.hpp>
#include <gmi/rl/ppo_config.hpp>
#include <gmi/rl/sac_config.hpp>
#include <gmi/runtime/gmis.hpp>

namespace gmi {

// Autotune (the serving and colocated layouts): search with the paper's Algorithm 1, then run the plan chosen.
struct autotune_flags {
  bool on = false;
  double budget_seconds = 120;
  int max_gmis_per_gpu = 8;
  std::string partitions;        // comma list; empty: --partition
  double trial_seconds = 0.5;
  std::string plan_path;         // --plan: serve with this saved plan (checked against the machine)
  std::string save_path;         // --save-plan
  bool mapping = true;           // colocated: also measure the split layout and keep the faster (--autotune-no-mapping)
  double placement_threshold = plan::default_placement_threshold;  // GPU simulation at >= this x CPU actors' env steps/s
  std::string ratio_sweep;            // CPU/GPU ratio sweep lines (gmi.bench.actors_ratio) to choose the ratio from
};

// The run's choices that are words on the command line: each enum with its table (core/choice.hpp: parse_choice
// refuses anything else in one line listing the words, choice_name gives the word back for messages and results).
enum class device_choice { automatic, gpu, host };
inline constexpr choice_table<device_choice, 3> device_choice_names{
    {{"auto", device_choice::automatic}, {"gpu", device_choice::gpu}, {"host", device_choice::host}}};
// Synchronous training over GMIs: how the gradients are summed every minibatch.
enum class allreduce_choice { hierarchical, cpu_staged, automatic };
inline constexpr choice_table<allreduce_choice, 3> allreduce_choice_names{
    {{"hierarchical", allreduce_choice::hierarchical}, {"cpu_staged", allreduce_choice::cpu_staged},
     {"automatic", allreduce_choice::automatic}}};
// Synchronous training over GMIs: how a synced GMI runs its update.
enum class update_choice { fused, graph, eager };
inline constexpr choice_table<update_choice, 3> update_choice_names{
    {{"fused", update_choice::fused}, {"graph", update_choice::graph}, {"eager", update_choice::eager}}};
// Across hosts: how the GPUs' leaders sum a minibatch's gradients (gmi_gradient_sync).
enum class cross_sum_choice { automatic, allreduce, allgather, two_level, direct };
inline constexpr choice_table<cross_sum_choice, 5> cross_sum_choice_names{
    {{"auto", cross_sum_choice::automatic}, {"allreduce", cross_sum_choice::allreduce},
     {"allgather", cross_sum_choice::allgather}, {"two_level", cross_sum_choice::two_level},
     {"direct", cross_sum_choice::direct}}};
// Whose --minibatch it is: the group's (split over its GMIs) or each GMI's.
enum class scope_choice { group, gmi };
inline constexpr choice_table<scope_choice, 2> scope_choice_names{{{"group", scope_choice::group}, {"gmi", scope_choice::gmi}}};
// Timing each GMI's communication.
enum class clock_choice { on, automatic, off };
inline constexpr choice_table<clock_choice, 3> clock_choice_names{
    {{"on", clock_choice::on}, {"auto", clock_choice::automatic}, {"off", clock_choice::off}}};
// Split layout: V-trace's advantages normalized before or after its rho weights them.
enum class advantages_choice { before_rho, after_rho };
inline constexpr choice_table<advantages_choice, 2> advantages_choice_names{
    {{"before_rho", advantages_choice::before_rho}, {"after_rho", advantages_choice::after_rho}}};
// Split layout: PPO's ratio over the policy that acted or over the learner's at the start of the update.
enum class clip_choice { behaviour, learner };
inline constexpr choice_table<clip_choice, 2> clip_choice_names{
    {{"behaviour", clip_choice::behaviour}, {"learner", clip_choice::learner}}};
// Off-policy split roles: how the actors' transitions reach the learner and its weights come back (messages through
// the host, or channels into the learner's device memory: pipeline/split_channels.hpp); auto picks device where it runs.
enum class split_transport_choice { automatic, host, device };
inline constexpr choice_table<split_transport_choice, 3> split_transport_names{
    {{"auto", split_transport_choice::automatic}, {"host", split_transport_choice::host},
     {"device", split_transport_choice::device}}};

// The PPO settings a result line records (what a learning curve depends on).
inline nlohmann::json ppo_settings_json(const rl::ppo_config& c) {
  nlohmann::json j = {{"horizon", c.horizon},
          {"minibatch", c.minibatch},
          {"epochs", c.epochs},
          {"lr", c.learning_rate},
          {"lr_schedule", rl::lr_schedule_name(c.schedule)},
          {"kl_target", c.kl_target},
          {"clip", c.clip},
          {"dual_clip", c.dual_clip},
          {"entropy_coef", c.entropy_coef},
          {"bounds_loss_coef", c.bounds_loss_coef},
          {"normalize_obs", c.normalize_obs},
          {"normalize_value", c.normalize_value},
          {"popart", c.popart},
          {"value_symlog", c.value_symlog},
          {"normalize_advantage", c.normalize_advantage},
          {"clip_value", c.clip_value},
          {"max_grad_norm", c.max_grad_norm},
          {"value_coef", c.value_coef},
          {"obs_clip", c.obs_clip},
          {"random_episode_start", c.random_episode_start},
          {"obs_normalizer_window", c.obs_normalizer_window},
          {"value_normalizer_window", c.value_normalizer_window},
          {"reward_scaling", c.reward_scaling},
          {"net_precision", nn::precision_name(c.network.precision)},
          {"net_kernels", nn::layer_kernels_name(c.network.kernels)},
          {"net_backward", nn::backward_kernels_name(c.network.backward)}};
  if (c.schedule == rl::lr_schedule::linear) j["lr_decay_env_steps"] = c.lr_decay_env_steps;
  if (c.value_scale_only) j["value_scale_only"] = true;
  if (c.advantage_window != 1) j["advantage_window"] = c.advantage_window;
  if (c.clip_value) j["value_clip"] = c.value_clip;
  if (c.reward_scaling) {
    j["reward_clip"] = c.reward_clip;
    j["reward_scaling_window"] = c.reward_scaling_window;
  }
  if (c.entropy_decay == rl::entropy_schedule::linear) {
    j["entropy_schedule"] = "linear";
    j["min_entropy_coef"] = c.min_entropy_coef;
    j["entropy_decay_env_steps"] = c.entropy_decay_env_steps;
  }
  if (std::isfinite(c.log_std_min)) j["log_std_min"] = c.log_std_min;
  if (std::isfinite(c.log_std_max)) j["log_std_max"] = c.log_std_max;
  return j;
}

struct run_options {
  int num_envs = 512;
  std::uint64_t seed = 1;
  device_choice device = device_choice::automatic;
  int gpu = 0;
  std::string gpus = "1";  // how many GPUs from --gpu on, or "all"
  int gmis_per_gpu = 1;
  std::string partition = "none";
  runtime::launch_mode launch = runtime::launch_mode::automatic;
  std::optional<int> mps_percentage;
  int sms_per_gmi = 0;
  // CPU actors (actors::on_cpu): actor cores per GMI (0: on_cpu's Cores, or an even share); a plan's CPU/GPU ratio sets it
  int actor_cores_per_gmi = 0;
  double max_env_steps = 50e6;
  double max_seconds = 3600;
  double target_return = std::numeric_limits<double>::quiet_NaN();
  // --target-optimum-gap g: target_return = optimum - g |optimum| (tasks with a known optimal mean return).
  double target_optimum_gap = std::numeric_limits<double>::quiet_NaN();
  double optimal_mean_return = std::numeric_limits<double>::quiet_NaN();  // the task's, where known (set by gmi::run)
  int min_episodes = 32;  // finished episodes a "solved" decision must rest on
  double log_interval = 1.0;
  std::string metrics_path;
  double serve_seconds = 3.0;
  int serve_steps_per_launch = 100;
  bool quiet = false;
  std::string checkpoint_path;  // save here (and <path>.safetensors with the policy's weights)
  int checkpoint_every = 0;     // iterations between saves; 0: at the end only
  std::string resume_path;
  int restart_on_failure = 0;   // relaunches of a lost GMI group allowed (restart.hpp); 0: none
  // Under mpirun/srun with several launchers (runtime/hosts.hpp): this host's id (empty: hostname[.local rank]).
  std::string host_id;
  // Across hosts: the GPUs' leaders sum each minibatch's gradients with NCCL's allreduce, with one allgather and
  // a sum of the rows in rank order (comm/gathered_sum.cuh: half the dependent hops, the same bits on every GMI),
  // or in two levels (comm/two_level_sum.cuh: each host's GPUs, then GPU k of every host: one hop between the
  // hosts), or direct (each leader's row straight to every leader in one group of NCCL sends and receives, then
  // the allgather's sum: one hop in all, NVLink and the network at once); auto: two levels with several GPUs a
  // host, the allgather with 2 leaders, else the allreduce.
  cross_sum_choice cross_host_sum = cross_sum_choice::automatic;
  // Synchronous training over GMIs: how the gradients are summed every minibatch. "hierarchical": on the device
  // (comm::hierarchical_allreduce, NCCL among the GPUs); "cpu_staged": the paper's IP baseline, every GMI's
  // gradient row through host shared memory (comm::ip_allreduce); "automatic": both timed, the faster kept.
  allreduce_choice gradient_allreduce = allreduce_choice::hierarchical;
  // How a synced GMI runs its update: "graph": captured once and replayed each iteration where the gradient sum
  // allows it (the device path with the kernel handshake, or one GMI per GPU), else eagerly; "fused": the same,
  // and where the GMIs of one GPU share their gradient rows (MPS, one GPU) each minibatch step sums the group's
  // rows inside its own kernel (ppo_step_kernel); "eager": kernel by kernel always (the comparison runs).
  update_choice synced_update = update_choice::fused;
  // Synchronous training over GMIs: whose --minibatch it is. "group": the group's, each GMI takes its share, so an
  // Adam step averages as many samples (and an iteration makes as many steps) as one GMI holding every environment;
  // "gmi": each GMI's, as rl_games' multi-GPU training (the paper's baseline and GMI-DRL) has it, so a step averages
  // world x --minibatch samples and an iteration makes as many steps as one GMI alone.
  scope_choice minibatch_scope = scope_choice::group;
  // Synchronous training over GMIs: "on" times each GMI's communication (gmi_gradient_sync::comm_seconds) and
  // reports its share of the time; "auto" only where the timing is free (the fused step kernels' waits, the
  // CPU-staged sums), since the stamp kernels around sums between the steps cost samples/s (docs/training.md);
  // "off" never.
  clock_choice comm_clock = clock_choice::automatic;
  // Synchronous training over the GPUs of one host (GMIs as processes, --synced-update fused): where the inboxes
  // of the row exchange across GPUs live; automatic: peer device memory where every GMI reaches every GPU, else
  // pinned host memory, and with one GMI a GPU NCCL between the steps instead.
  comm::inbox_memory inbox_memory = comm::inbox_memory::automatic;
  bool population = false;  // independent trainings, one per GMI (population.hpp)
  std::string sweep_path;   // their settings, one JSON object per GMI
  rl::ppo_config ppo;
  rl::sac_config sac;  // off-policy pipelines (gmi::trainers::sac): pipeline/run_offpolicy.cuh
  int sac_eval_episodes = 16;  // off-policy: fresh episodes of the deterministic policy at the end (0: none)
  // How the GPU trainer forms a minibatch's gradient: "" (the network's default), "warps", "tiles" or "threads";
  // for comparisons (rl::request_gradient_path; a path the network does not fit is refused).
  std::string ppo_gradient;
  // How the GPU trainer collects: "" (the wide-network rule, rl/wide_rule.hpp), "threads" or "batched".
  std::string collection;
  // The precision of the GPU trainer's cuBLASLt products ("" keeps ppo.network's, fp32 by default).
  std::string net_precision;
  // The wide layers' kernels at tf32/bf16 ("" keeps ppo.network's: cublaslt; or mma).
  std::string net_kernels;
  // The backward's input-gradient chain at tf32/bf16 ("" keeps ppo.network's: auto, today cublaslt; or wholenet).
  std::string net_backward;
  int max_policy_lag = 4;   // split layout: rollouts acted with weights more updates old are dropped
  // split layout: rollouts each serving GMI may have queued for the trainer (its channel link's slots: the
  // back-pressure bound). Fewer slots did not lower the lag and left the trainer waiting more (docs/training.md).
  int channel_slots = 4;
  advantages_choice normalize_advantages = advantages_choice::before_rho;  // split layout
  clip_choice clip_against = clip_choice::behaviour;  // split layout
  float rho_bar = 1.0f;     // split layout: V-trace truncations
  float c_bar = 1.0f;
  // split layout: the trainer replays its update as one CUDA graph from the second update on (true), or enqueues
  // every kernel (false, for side-by-side runs; --learner-graph on|off)
  bool learner_graph = true;
  // Set by a plan whose measured mapping is split, or by --split-roles: a colocated pipeline's roles run as layout
  // split, a trainer GMI fed by serving GMIs on every GPU.
  bool split_roles = false;
  split_transport_choice split_transport = split_transport_choice::automatic;  // off-policy split roles (--split-transport)
  // Off-policy (SAC) data-parallel learners: each update's batch one uniform sample over the union of the learners'
  // tables, each learner drawing its share (rl/sac_global.hpp; --sac-global-sampling). Off: each samples its own.
  bool sac_global_sampling = false;
  autotune_flags autotune;
};

namespace detail {
inline std::atomic<int> stop_signal{0};
extern "C" inline void on_stop_signal(int sig) { stop_signal.store(sig); }
}  // namespace detail

}  // namespace gmi
