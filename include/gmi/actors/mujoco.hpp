#pragma once
// MuJoCo tasks for the CPU actors (MuJoCo's C library, Debian's libmujoco-dev; link gmi::mujoco): a model
// loaded from any MJCF file (refused in one line when MuJoCo can not compile it), a task on it (mjcf_task: any
// model, observation qpos and qvel, action the controls; ant_v4, humanoid_v4, anymal: mujoco_<task>.hpp) and
// mujoco::sim<Task>, a host_sim with one mjData per stepping thread and each environment's state rows apart
// (data_layout::per_thread, the default: mujoco_thread_data.hpp; the same steps, a core's working memory one
// mjData), or one mjData per environment made by the thread that owns it (per_env: NUMA first touch; for tools
// that read a step's contacts or solver statistics through data(i)), plus the task's own
// per-environment floats where it has them (anymal's command, last action).
// Built without MuJoCo, load() says so in one line and the rest of this header is absent.

#include <cstdint>
#include <memory>
#include <string>

#include <gmi/core/error.hpp>

#if __has_include(<mujoco/mujoco.h>)
#include <dlfcn.h>
#include <mujoco/mujoco.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <gmi/actors/host_sim.hpp>
#include <gmi/actors/mujoco_ant_v4.hpp>
#include <gmi/actors/mujoco_anymal.hpp>
#include <gmi/actors/mujoco_humanoid_v4.hpp>
#include <gmi/actors/mujoco_state.hpp>
#include <gmi/actors/mujoco_task_parts.hpp>
#include <gmi/actors/mujoco_thread_data.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/io/checkpoint.hpp>
#include <gmi/rl/env_batch.hpp>

namespace gmi::actors::mujoco {

inline constexpr bool available = true;

struct model_deleter {
  void operator()(mjModel* m) const noexcept { mj_deleteModel(m); }
};
using model_ptr = std::shared_ptr<const mjModel>;

// mj_loadXML's result owned, or its error message as one line: "<what>: got "<message>", need a model ...".
[[nodiscard]] inline model_ptr compiled(mjModel* m, const std::string& what, const char* error) {
  if (!m) {
    std::string why = error[0] ? error : "unknown MuJoCo error";
    std::replace(why.begin(), why.end(), '\n', ' ');
    throw config_error(got_need(what, "\"" + why + "\"", "a model MuJoCo " + std::string(mj_versionString()) + " compiles"));
  }
  return model_ptr(m, model_deleter{});
}

// The file the MuJoCo library was loaded from (dladdr of mj_step), or "unknown": result lines name the build that
// stepped (Debian's, or another build of the same version put first on LD_LIBRARY_PATH).
[[nodiscard]] inline std::string library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&mj_step), &info) != 0 && info.dli_fname) return info.dli_fname;
  return "unknown";
}

// Compiles an MJCF file; refuses a file MuJoCo can not load with its message, in one line.
[[nodiscard]] inline model_ptr load(const std::string& path) {
  char error[1024] = "";
  mjModel* m = mj_loadXML(path.c_str(), nullptr, error, sizeof error);
  return compiled(m, "MJCF file " + path, error);
}

// Compiles MJCF text (a model with no includes or assets; `name` names it in messages and as its file in a
// MuJoCo virtual file system), refused in one line as load() does: gmi::physics's built-in models (their mjcf).
[[nodiscard]] inline model_ptr load_text(const std::string& name, const std::string& text) {
  const auto vfs = std::make_unique<mjVFS>();  // about 2 MB: not on the stack
  mj_defaultVFS(vfs.get());
  require(name.size() < mjMAXVFSNAME && mj_makeEmptyFileVFS(vfs.get(), name.c_str(), int(text.size())) == 0,
          "MJCF text name", name, "a file name shorter than " + std::to_string(mjMAXVFSNAME) + " characters");
  std::copy(text.begin(), text.end(), static_cast<char*>(vfs->filedata[0]));
  char error[1024] = "";
  mjModel* m = mj_loadXML(name.c_str(), vfs.get(), error, sizeof error);
  mj_deleteVFS(vfs.get());
  return compiled(m, "MJCF text " + name, error);
}

// Any model: observation qpos then qvel, action the controls (clamped by MuJoCo where ctrllimited), no reward,
// terminated when the state is no longer finite; reset qpos0 + U(-noise, noise), qvel noise N(0, 1).
class mjcf_task {
 public:
  struct params {
    int frame_skip = 1;
    double reset_noise_scale = 0.0;
    int max_steps = 1000;
  };
  mjcf_task(const mjModel* m, params p) : m_(m), p_(p) {
    require(m->nu >= 1, "MJCF model's actuators", m->nu, ">= 1 (actions drive the controls)");
    require(p.frame_skip >= 1, "mjcf_task frame_skip", p.frame_skip, ">= 1");
  }
  [[nodiscard]] int obs_dim() const noexcept { return m_->nq + m_->nv; }
  [[nodiscard]] int act_dim() const noexcept { return m_->nu; }
  [[nodiscard]] int max_steps() const noexcept { return p_.max_steps; }
  void reset(mjData* d, gmi::rng& r) const {
    parts::reset_data(m_, d);  // mj_resetData's state without clearing the whole buffer
    const double s = p_.reset_noise_scale;
    if (s > 0) {
      for (int i = 0; i < m_->nq; ++i) d->qpos[i] = m_->qpos0[i] + double(r.uniform(float(-s), float(s)));
      for (int i = 0; i < m_->nv; ++i) d->qvel[i] = s * double(r.normal());
    }
    mj_forward(m_, d);
  }
  [[nodiscard]] gmi::transition step(mjData* d, const float* action) const {
    for (int u = 0; u < m_->nu; ++u) d->ctrl[u] = double(action[u]);
    parts::substeps(m_, d, p_.frame_skip);
    return {0.0f, !parts::state_finite(m_, d)};
  }
  void observe(const mjData* d, float* obs) const {
    for (int i = 0; i < m_->nq; ++i) *obs++ = float(d->qpos[i]);
    for (int i = 0; i < m_->nv; ++i) *obs++ = float(d->qvel[i]);
  }

 private:
  const mjModel* m_;
  params p_;
};

namespace detail {
template <class T>
struct sizes {};
template <class T>
  requires requires { T::obs_size; T::act_size; }
struct sizes<T> {
  static constexpr int obs_size = T::obs_size, act_size = T::act_size;
};
// Tasks with state beyond mjData declare task_state_size floats per environment; the sim keeps and saves them.
template <class T>
inline constexpr int task_state_size = 0;
template <class T>
  requires requires { T::task_state_size; }
inline constexpr int task_state_size<T> = T::task_state_size;
}  // namespace detail

// num_envs copies of Task on one compiled model. Environment i draws from gmi::rng(seed, i, ...); episodes,
// time limits (Task::max_steps), auto-reset, final observations and invalid actions (a NaN or infinite
// component: not applied, the env is reset and the step reports terminated, as in rl::env_batch) per env.
// `layout` (default_layout, per_thread, by default) says where the mjData live (mujoco_thread_data.hpp).
template <class Task>
class sim : public detail::sizes<Task> {
 public:
  using host_sim_concept = host_sim_tag;
  using task_type = Task;

  sim(model_ptr model, int num_envs, std::uint64_t seed, typename Task::params params = {},
      data_layout layout = default_layout)
      : model_(std::move(model)), task_(model_.get(), params), seed_(seed), layout_(layout), rows_(model_.get()) {
    require(num_envs >= 1, "num_envs", num_envs, ">= 1");
    require(task_.max_steps() >= 1 && task_.max_steps() < uncounted_bit, "max_steps", task_.max_steps(),
            ">= 1 and below 2^30 (bit 30 marks a random start's first episode)");
    envs_ = std::vector<env>(std::size_t(num_envs));
    for (env& e : envs_) e.task_state.assign(std::size_t(extra), 0.0f);
  }
  sim(const std::string& mjcf_path, int num_envs, std::uint64_t seed, typename Task::params params = {},
      data_layout layout = default_layout)
      : sim(load(mjcf_path), num_envs, seed, params, layout) {}
  sim(const sim&) = delete;
  sim& operator=(const sim&) = delete;

  [[nodiscard]] std::size_t num_envs() const noexcept { return envs_.size(); }
  [[nodiscard]] int obs_dim() const noexcept { return task_.obs_dim(); }
  [[nodiscard]] int act_dim() const noexcept { return task_.act_dim(); }
  [[nodiscard]] const mjModel* model() const noexcept { return model_.get(); }
  [[nodiscard]] const Task& task() const noexcept { return task_; }
  [[nodiscard]] data_layout layout() const noexcept { return layout_; }
  // Environment i's MuJoCo data (made on first use if prepare did not make it). per_thread: the calling thread's
  // mjData with environment i's state rows loaded (its other fields from this thread's last step; writes not kept).
  [[nodiscard]] mjData* data(std::size_t i) { return checkout(i); }
  // Environment i's task floats (Task::task_state_size of them; none for tasks without).
  [[nodiscard]] const float* task_state(std::size_t i) const noexcept { return envs_[i].task_state.data(); }

  // Called by cpu_actors on the thread that owns [first, last): the mjData (per_thread: the thread's one and the
  // environments' state rows) are allocated and touched there.
  void prepare(std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) (void)checkout(i);
  }

  // A new episode in environment i; episode_start::random_step then starts its step counter at a draw in
  // [0, max_steps) taken after the task's reset, marked uncounted, as rl::env_batch_view::reset_one does.
  void reset_one(std::size_t i, float* obs, rl::episode_start start = rl::episode_start::first_step) {
    env& e = envs_[i];
    gmi::rng r(seed_, i, e.rng_block);
    mjData* d = checkout(i);
    if constexpr (extra > 0) {
      task_.reset(d, e.task_state.data(), r);
    } else {
      task_.reset(d, r);
    }
    observe(d, e, obs);
    checkin(i, d);
    int length = 0;
    if (start == rl::episode_start::random_step) {
      const std::uint64_t m = static_cast<std::uint64_t>(task_.max_steps());
      length = static_cast<int>((static_cast<std::uint64_t>(r.next_u32()) * m) >> 32) | uncounted_bit;
    }
    e.rng_block = r.block();
    e.length = length;
    e.ret = 0;
  }

  rl::step_result step_one(std::size_t i, const float* action, float* obs, float* final_obs) {
    env& e = envs_[i];
    mjData* d = checkout(i);
    bool valid = true;
    for (int k = 0; k < task_.act_dim(); ++k) valid = valid && std::isfinite(action[k]);
    const int uncounted = e.length & uncounted_bit;
    const int length = (e.length & ~uncounted_bit) + 1;
    rl::step_result out{0.0f, true, false};
    if (valid) {
      gmi::transition tr;
      if constexpr (extra > 0) {
        tr = task_.step(d, e.task_state.data(), action);
      } else {
        tr = task_.step(d, action);
      }
      e.ret += tr.reward;
      out = {tr.reward, tr.terminated, !tr.terminated && length >= task_.max_steps()};
    } else {
      e.invalid += 1;
    }
    e.length = length | uncounted;
    if (out.terminated || out.truncated) {
      if (valid && !uncounted) {
        e.episodes += 1;
        e.return_sum += double(e.ret);
        e.length_sum += double(length);
      }
      if (final_obs) observe(d, e, final_obs);
      checkin(i, d);
      reset_one(i, obs);
    } else {
      observe(d, e, obs);
      checkin(i, d);
    }
    return out;
  }

  // Checkpoints (sim_with_checkpoint): every environment's mjData state (mujoco_state.hpp) plus its reset RNG
  // counter, length and return so far (prefix + "env.rng_blocks", "env.lengths", "env.returns", as env_batch
  // names them) and the task's own floats (prefix + "env.task_state", [environments, task_state_size]), so a
  // resumed run continues the same episodes. Call between runs (no actor is stepping).
  void save_state(io::checkpoint& ck, const std::string& prefix) {
    save_mujoco_state(ck, prefix, model_.get(), envs_.size(), [&](std::size_t i) { return checkout(i); });
    std::vector<std::uint64_t> blocks;
    std::vector<std::int32_t> lengths;
    std::vector<float> returns;
    for (const env& e : envs_) {
      blocks.push_back(e.rng_block);
      lengths.push_back(e.length);
      returns.push_back(e.ret);
    }
    ck.add(prefix + "env.rng_blocks", blocks);
    ck.add(prefix + "env.lengths", lengths);
    ck.add(prefix + "env.returns", returns);
    if constexpr (extra > 0) {
      std::vector<float> task_state;
      for (const env& e : envs_) task_state.insert(task_state.end(), e.task_state.begin(), e.task_state.end());
      ck.add(prefix + "env.task_state", task_state, {envs_.size(), std::size_t(extra)});
    }
  }
  // Refuses, in one line and before changing anything, a section of another version, model or env count, and
  // negative lengths or non-finite values.
  void load_state(const io::checkpoint& ck, const std::string& prefix) {
    const std::size_t n = envs_.size();
    const auto blocks = ck.get<std::uint64_t>(prefix + "env.rng_blocks", n, "this run's environments");
    const auto lengths = ck.get<std::int32_t>(prefix + "env.lengths", n, "this run's environments");
    const auto returns = ck.get<float>(prefix + "env.returns", n, "this run's environments");
    for (std::size_t i = 0; i < n; ++i) {
      require(lengths[i] >= 0, "checkpoint " + prefix + "env.lengths[" + std::to_string(i) + "]", lengths[i], ">= 0");
      require(std::isfinite(returns[i]), "checkpoint " + prefix + "env.returns[" + std::to_string(i) + "]",
              returns[i], "a finite return");
    }
    std::vector<float> task_state;
    if constexpr (extra > 0) {
      task_state = ck.get<float>(prefix + "env.task_state", n * std::size_t(extra), "this run's environments x " +
                                                                                       std::to_string(extra) + " task floats");
      for (std::size_t k = 0; k < task_state.size(); ++k) {
        require(std::isfinite(task_state[k]), "checkpoint " + prefix + "env.task_state[" + std::to_string(k) + "]",
                task_state[k], "a finite value");
      }
    }
    // One environment at a time (load_mujoco_state's order): each stored back before the next is loaded.
    std::size_t held = n;
    mjData* d = nullptr;
    load_mujoco_state(ck, prefix, model_.get(), n, [&](std::size_t i) {
      if (d) checkin(held, d);
      held = i;
      return d = checkout(i);
    });
    if (d) checkin(held, d);
    for (std::size_t i = 0; i < n; ++i) {
      envs_[i].rng_block = blocks[i];
      envs_[i].length = lengths[i];
      envs_[i].ret = returns[i];
      std::copy_n(task_state.begin() + std::ptrdiff_t(i * std::size_t(extra)), extra, envs_[i].task_state.begin());
    }
  }

  // Sums in environment order, so the result does not depend on which thread stepped what.
  rl::episode_stats read_stats() {
    rl::episode_stats s;
    for (env& e : envs_) {
      s.episodes += e.episodes;
      s.return_sum += e.return_sum;
      s.length_sum += e.length_sum;
      s.invalid_actions += e.invalid;
      e.episodes = e.invalid = 0;
      e.return_sum = e.length_sum = 0;
    }
    return s;
  }

 private:
  struct data_deleter {
    void operator()(mjData* d) const noexcept { mj_deleteData(d); }
  };
  static constexpr int extra = detail::task_state_size<Task>;
  static constexpr int uncounted_bit = 1 << 30;  // in env::length during a random start's first episode
  struct env {
    std::unique_ptr<mjData, data_deleter> data;  // per_env
    std::vector<mjtNum> rows;                    // per_thread: the state rows (rows_)
    std::vector<float> task_state;  // detail::task_state_size<Task> floats
    std::uint64_t rng_block = 0;
    int length = 0;
    float ret = 0;
    std::uint64_t episodes = 0, invalid = 0;
    double return_sum = 0, length_sum = 0;
  };

  void observe(const mjData* d, const env& e, float* obs) const {
    if constexpr (extra > 0) {
      task_.observe(d, e.task_state.data(), obs);
    } else {
      task_.observe(d, obs);
    }
  }

  // Environment i's mjData to step: its own (per_env), or the calling thread's with environment i's rows loaded
  // (per_thread; an environment never stepped gets mj_resetData's state, as a new mjData has).
  mjData* checkout(std::size_t i) {
    if (layout_ == data_layout::per_env) return made(i);
    mjData* d = thread_data(model_);
    env& e = envs_[i];
    if (e.rows.empty()) {
      mj_resetData(model_.get(), d);
      e.rows.resize(rows_.width);
      rows_.store(d, e.rows.data());
    } else {
      rows_.load(e.rows.data(), d);
    }
    return d;
  }
  // After a change to checkout(i)'s mjData: per_thread stores environment i's rows back.
  void checkin(std::size_t i, mjData* d) {
    if (layout_ == data_layout::per_thread) rows_.store(d, envs_[i].rows.data());
  }

  mjData* made(std::size_t i) {
    env& e = envs_[i];
    if (!e.data) {
      e.data.reset(mj_makeData(model_.get()));
      require(e.data != nullptr, "mj_makeData", "null", "an mjData (out of memory?)");
    }
    return e.data.get();
  }

  model_ptr model_;
  Task task_;
  std::uint64_t seed_;
  data_layout layout_;
  state_rows rows_;
  std::vector<env> envs_;
};

static_assert(host_sim<sim<ant_v4>> && fixed_size_sim<sim<ant_v4>> && sim_with_checkpoint<sim<ant_v4>> &&
              sim_with_random_start<sim<ant_v4>>);
static_assert(host_sim<sim<humanoid_v4>> && fixed_size_sim<sim<humanoid_v4>> && sim_with_checkpoint<sim<humanoid_v4>>);
static_assert(host_sim<sim<anymal>> && fixed_size_sim<sim<anymal>> && sim_with_checkpoint<sim<anymal>>);
static_assert(host_sim<sim<mjcf_task>> && !fixed_size_sim<sim<mjcf_task>>);

}  // namespace gmi::actors::mujoco

#else

namespace gmi::actors::mujoco {
inline constexpr bool available = false;
// Without MuJoCo's headers at build time every load says so.
[[noreturn]] inline void load(const std::string& path) {
  throw config_error(got_need("MJCF file " + path + " for MuJoCo", "gmi built without MuJoCo",
                              "libmujoco-dev installed and gmi::mujoco linked (scripts/install-deps)"));
}
}  // namespace gmi::actors::mujoco

#endif
