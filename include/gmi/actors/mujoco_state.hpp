#pragma once
// The checkpoint section of MuJoCo environments on the CPU actors: what one mjData per environment needs so that a
// resumed run steps the same trajectories as one that never stopped. Saved per environment (f64 rows, one tensor
// each, named prefix + "mujoco." + field): time, qpos, qvel, act, qacc_warmstart (the constraint solver's warm
// start), the inputs ctrl, qfrc_applied, xfrc_applied, mocap_pos, mocap_quat, userdata, and the body poses xpos and
// xquat that mj_step leaves one substep behind qpos (a task's reward reads them: Ant's forward velocity).
// "mujoco.layout" (i64) holds the section's version and the model sizes the rows depend on; loading checks it
// first, then every row's size and that every value is finite, each refusal in one line (a checkpoint file is
// untrusted input). Restoring writes the rows, lets mj_forward recompute the rest, then writes the rows again
// (mj_forward normalizes qpos's quaternions and recomputes the poses, which the saved run had not yet done).

#if __has_include(<mujoco/mujoco.h>)
#include <mujoco/mujoco.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/span.hpp>
#include <gmi/io/checkpoint.hpp>

namespace gmi::actors::mujoco {

// Bumped whenever the fields or their order change; a checkpoint of another version is refused.
inline constexpr std::int64_t state_version = 1;

// "mujoco.layout": the version, then the counts the rows are sized by.
inline constexpr std::array<const char*, 9> layout_names = {"version", "environments", "nq",     "nv",       "na",
                                                            "nu",      "nbody",        "nmocap", "nuserdata"};

[[nodiscard]] inline std::vector<std::int64_t> state_layout(const mjModel* m, std::size_t envs) {
  return {state_version, std::int64_t(envs), m->nq, m->nv, m->na, m->nu, m->nbody, m->nmocap, m->nuserdata};
}

// One saved array of an mjData: its name, its values per environment, and where it lives (time is a scalar).
struct state_field {
  const char* name;
  int width;
  mjtNum* (*at)(mjData*);
};

[[nodiscard]] inline std::vector<state_field> state_fields(const mjModel* m) {
  return {{"time", 1, [](mjData* d) { return &d->time; }},
          {"qpos", m->nq, [](mjData* d) { return d->qpos; }},
          {"qvel", m->nv, [](mjData* d) { return d->qvel; }},
          {"act", m->na, [](mjData* d) { return d->act; }},
          {"qacc_warmstart", m->nv, [](mjData* d) { return d->qacc_warmstart; }},
          {"ctrl", m->nu, [](mjData* d) { return d->ctrl; }},
          {"qfrc_applied", m->nv, [](mjData* d) { return d->qfrc_applied; }},
          {"xfrc_applied", 6 * m->nbody, [](mjData* d) { return d->xfrc_applied; }},
          {"mocap_pos", 3 * m->nmocap, [](mjData* d) { return d->mocap_pos; }},
          {"mocap_quat", 4 * m->nmocap, [](mjData* d) { return d->mocap_quat; }},
          {"userdata", m->nuserdata, [](mjData* d) { return d->userdata; }},
          {"xpos", 3 * m->nbody, [](mjData* d) { return d->xpos; }},
          {"xquat", 4 * m->nbody, [](mjData* d) { return d->xquat; }}};
}

// Adds the section for environments 0..envs-1 (data_of(i): environment i's mjData).
template <class DataOf>
void save_mujoco_state(io::checkpoint& ck, const std::string& prefix, const mjModel* m, std::size_t envs,
                       DataOf&& data_of) {
  ck.add(prefix + "mujoco.layout", state_layout(m, envs));
  for (const state_field& f : state_fields(m)) {
    std::vector<double> rows(envs * std::size_t(f.width));
    for (std::size_t i = 0; i < envs; ++i) {
      const mjtNum* src = f.at(data_of(i));
      for (int k = 0; k < f.width; ++k) rows[i * std::size_t(f.width) + std::size_t(k)] = double(src[k]);
    }
    ck.add(prefix + "mujoco." + f.name, rows, {std::uint64_t(envs), std::uint64_t(f.width)});
  }
}

// Checks the section against this model and env count, then restores it; every refusal is one line and comes
// before any environment is changed.
template <class DataOf>
void load_mujoco_state(const io::checkpoint& ck, const std::string& prefix, const mjModel* m, std::size_t envs,
                       DataOf&& data_of) {
  const std::string layout_name = prefix + "mujoco.layout";
  const std::vector<std::int64_t> want = state_layout(m, envs);
  const std::vector<std::int64_t> got = ck.get<std::int64_t>(layout_name, want.size(), "the MuJoCo state layout");
  require(got[0] == state_version, "checkpoint " + layout_name + " version", got[0],
          std::to_string(state_version) + " (the MuJoCo state this build of gmi reads)");
  for (std::size_t k = 1; k < want.size(); ++k) {
    require(got[k] == want[k], "checkpoint " + layout_name + " " + layout_names[k], got[k],
            std::to_string(want[k]) + " (this run's " + (k == 1 ? "environments" : "model") + ")");
  }
  const std::vector<state_field> fields = state_fields(m);
  std::vector<std::vector<double>> rows;
  rows.reserve(fields.size());
  for (const state_field& f : fields) {
    const std::string name = prefix + "mujoco." + f.name;
    rows.push_back(ck.get<double>(name, envs * std::size_t(f.width), "environments x " + std::to_string(f.width)));
    for (std::size_t j = 0; j < rows.back().size(); ++j) {
      if (!std::isfinite(rows.back()[j])) {
        throw config_error(got_need("checkpoint " + name + "[" + std::to_string(j) + "]", rows.back()[j],
                                    "a finite value (a saved state is finite: a step resets what is not)"));
      }
    }
  }
  for (std::size_t i = 0; i < envs; ++i) {
    mjData* d = data_of(i);
    for (int pass = 0; pass < 2; ++pass) {
      for (std::size_t f = 0; f < fields.size(); ++f) {
        mjtNum* dst = fields[f].at(d);
        const std::size_t w = std::size_t(fields[f].width);
        for (std::size_t k = 0; k < w; ++k) dst[k] = mjtNum(rows[f][i * w + k]);
      }
      if (pass == 0) mj_forward(m, d);
    }
  }
}

}  // namespace gmi::actors::mujoco
#endif
