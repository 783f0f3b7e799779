// parts::reset_data (the MuJoCo tasks' reset without mj_resetData's clearing of the whole buffer) against
// mj_resetData: after an episode of history, both resets, the same reset noise and mj_forward, the next steps are
// the same bit for bit on the Ant, Humanoid and Anymal models and the contact-heavy ant_floor; a reset that leaves
// out one field shows up at once, so the comparison can fail.
#include <doctest/doctest.h>
#include <mujoco/mujoco.h>

#include <cmath>
#include <cstring>
#include <string>

#include <gmi/actors/mujoco.hpp>

namespace {
namespace mj = gmi::actors::mujoco;

struct data_ptr {
  mjData* d;
  explicit data_ptr(const mjModel* m) : d(mj_makeData(m)) {}
  ~data_ptr() { mj_deleteData(d); }
  data_ptr(const data_ptr&) = delete;
  data_ptr& operator=(const data_ptr&) = delete;
};

void drive(const mjModel* m, mjData* d, int steps, double phase) {
  for (int k = 0; k < steps; ++k) {
    for (int u = 0; u < m->nu; ++u) d->ctrl[u] = std::sin(0.31 * k + 1.7 * u + phase);
    mj_step(m, d);
  }
}

void noise(const mjModel* m, mjData* d) {
  for (int i = 0; i < m->nq; ++i) d->qpos[i] += 0.05 * std::sin(1.3 * i + 0.2);
  for (int i = 0; i < m->nv; ++i) d->qvel[i] = 0.1 * std::cos(0.7 * i);
}

bool same(const double* a, const double* b, int n) { return std::memcmp(a, b, sizeof(double) * std::size_t(n)) == 0; }

// The first step (1-based) after which the two differ in qpos, qvel, poses or warm start; 0 when none of `steps` does.
int first_difference(const mjModel* m, mjData* a, mjData* b, int steps) {
  for (int k = 1; k <= steps; ++k) {
    for (int u = 0; u < m->nu; ++u) a->ctrl[u] = b->ctrl[u] = std::sin(0.53 * k + u);
    mj_step(m, a);
    mj_step(m, b);
    if (!same(a->qpos, b->qpos, m->nq) || !same(a->qvel, b->qvel, m->nv) || !same(a->xpos, b->xpos, 3 * m->nbody) ||
        !same(a->qacc_warmstart, b->qacc_warmstart, m->nv) || a->time != b->time) {
      return k;
    }
  }
  return 0;
}

// A: history, mj_resetData; B: another history, reset_b; then the same noise and mj_forward.
int compare_resets(const mj::model_ptr& model, void (*reset_b)(const mjModel*, mjData*)) {
  const mjModel* m = model.get();
  data_ptr a(m), b(m);
  drive(m, a.d, 150, 0.0);
  drive(m, b.d, 250, 0.9);
  mj_resetData(m, a.d);
  reset_b(m, b.d);
  noise(m, a.d);
  noise(m, b.d);
  mj_forward(m, a.d);
  mj_forward(m, b.d);
  return first_difference(m, a.d, b.d, 400);
}

// reset_data leaving out one field (the simulation time).
void reset_keeping_time(const mjModel* m, mjData* d) {
  const double kept = d->time;
  mj::parts::reset_data(m, d);
  d->time = kept;
}

std::string builtin(const char* name) { return std::string(GMI_BUILTIN_MODELS) + "/" + name; }
}  // namespace

TEST_CASE("actors.mujoco.reset_data_equals_mj_resetData") {
  for (const std::string& path : {builtin("ant_v4.xml"), builtin("humanoid_v4.xml"), builtin("anymal.xml"),
                                  std::string(GMI_ACTORS_MODELS) + "/ant_floor.xml"}) {
    CAPTURE(path);
    const mj::model_ptr model = mj::load(path);
    CHECK(compare_resets(model, &mj::parts::reset_data) == 0);
    // The comparison sees a reset that leaves out one field.
    CHECK(compare_resets(model, &reset_keeping_time) == 1);
  }
}

TEST_CASE("actors.mujoco.ant_v4_task_reset_equals_mj_resetData_reset") {
  // The Ant task's reset (reset_data, noise from the env's stream, mj_forward) on an mjData with a history gives
  // the same steps as the same reset on a fresh mjData (cleared by mj_makeData).
  const mj::model_ptr model = mj::load(builtin("ant_v4.xml"));
  const mjModel* m = model.get();
  const mj::ant_v4 task(m, {});
  data_ptr used(m), fresh(m);
  drive(m, used.d, 300, 0.4);
  gmi::rng r1(5, 0), r2(5, 0);
  task.reset(used.d, r1);
  task.reset(fresh.d, r2);
  CHECK(first_difference(m, used.d, fresh.d, 400) == 0);
}
