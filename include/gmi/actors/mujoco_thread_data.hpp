#pragma once
// One mjData per thread for mujoco::sim (data_layout::per_thread): each environment keeps only its state rows (what
// a checkpoint saves, mujoco_state.hpp: time, qpos, qvel, act, the solver's warm start, the inputs, mocap poses,
// userdata, and the body poses xpos and xquat that a task may read before its next step, as the Ant's reward does),
// and a step loads them into the stepping thread's one mjData, steps, and stores them back. mj_step computes all
// else from those rows, so the steps are the same bit for bit (test actors.mujoco.per_thread_data_steps_as_per_env),
// while a core's working memory is one mjData (tens of KB touched a step, in its L1 and L2) instead of one per
// environment (128 environments a core: megabytes, from L3 or DRAM at every switch between environments).

#if __has_include(<mujoco/mujoco.h>)
#include <mujoco/mujoco.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include <gmi/actors/mujoco_state.hpp>
#include <gmi/core/error.hpp>

namespace gmi::actors::mujoco {

// Where mujoco::sim keeps its environments' mjData: one each (per_env: data(i) holds environment i's last step
// whole), or one per stepping thread with each environment's state rows apart (per_thread: data(i) is the calling
// thread's mjData with environment i's rows loaded; its other fields are from that thread's last step).
enum class data_layout { per_env, per_thread };
// The layout of a sim made without one: per_thread (faster at the same bits; what the CPU actors, the GPU trainer
// on actors, the placement profile and gmi.bench.actors_train step). Tools that read a step's contacts, solver
// statistics or timers through data(i) ask for per_env.
inline constexpr data_layout default_layout = data_layout::per_thread;

[[nodiscard]] inline const char* layout_name(data_layout l) noexcept {
  return l == data_layout::per_env ? "per_env" : "per_thread";
}

// The state rows of one environment, the fields of state_fields(m) one after another.
struct state_rows {
  std::vector<state_field> fields;
  std::size_t width = 0;
  explicit state_rows(const mjModel* m) : fields(state_fields(m)) {
    for (const state_field& f : fields) width += std::size_t(f.width);
  }
  void store(mjData* d, mjtNum* out) const noexcept {
    for (const state_field& f : fields) out = std::copy_n(f.at(d), f.width, out);
  }
  void load(const mjtNum* in, mjData* d) const noexcept {
    for (const state_field& f : fields) {
      std::copy_n(in, f.width, f.at(d));
      in += f.width;
    }
  }
};

// The calling thread's mjData for model m, made by this thread on first use (first touch: on its core's NUMA node).
// A thread keeps one for each of the last 4 models it stepped (the slot holds the model, so its address is not
// reused while the mjData lives); they go with the thread.
[[nodiscard]] inline mjData* thread_data(const std::shared_ptr<const mjModel>& m) {
  struct data_deleter {
    void operator()(mjData* d) const noexcept { mj_deleteData(d); }
  };
  struct slot {
    std::shared_ptr<const mjModel> model;
    std::unique_ptr<mjData, data_deleter> data;
  };
  thread_local std::vector<slot> slots;
  for (slot& s : slots) {
    if (s.model == m) return s.data.get();
  }
  if (slots.size() >= 4) slots.erase(slots.begin());
  slot s{m, std::unique_ptr<mjData, data_deleter>(mj_makeData(m.get()))};
  require(s.data != nullptr, "mj_makeData", "null", "an mjData (out of memory?)");
  slots.push_back(std::move(s));
  return slots.back().data.get();
}

}  // namespace gmi::actors::mujoco
#endif
