// The batched device step against the same float stages on the host: every environment of a batch follows its
// host twin within 1e-3 without contacts, 1e-2 (ball) and 5e-2 (ant) with them (absolute; device math functions
// and FMA contraction differ from the host's by ulps, and an impact can move by a step).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gpu_steps.hpp"
#include <gmi/physics/physics.hpp>

namespace {
namespace ph = gmi::physics;

void compare_with_host(const char* file, int n, int steps, double tolerance) {
  const ph::model<float> m = ph::load_mjcf_file(std::string(GMI_PHYSICS_MODELS) + "/" + file).cast<float>();
  const int nq = m.size.nq, nv = m.size.nv, nu = m.size.nu;
  std::vector<float> qpos(std::size_t(nq) * n), qvel(std::size_t(nv) * n), ctrl(std::size_t(nu) * n);
  for (int e = 0; e < n; ++e) {
    for (int k = 0; k < nq; ++k) qpos[std::size_t(k) * n + e] = m.qpos0[k];
    // Perturb hinge and slide coordinates only (quaternions stay unit).
    for (int j = 0; j < m.size.njnt; ++j) {
      if (m.jnt_type[j] == ph::joint_hinge || m.jnt_type[j] == ph::joint_slide)
        qpos[std::size_t(m.jnt_qposadr[j]) * n + e] += 0.1f * std::sin(0.37f * e + j);
    }
    for (int k = 0; k < nv; ++k) qvel[std::size_t(k) * n + e] = 0.2f * std::cos(0.11f * e + k);
    for (int k = 0; k < nu; ++k) ctrl[std::size_t(k) * n + e] = 0.5f * std::sin(0.23f * e + k);
  }
  std::vector<float> dq = qpos, dv = qvel;
  gmi::test::run_physics_on_device(m, n, dq, dv, ctrl, steps);
  const ph::data_layout l = ph::make_layout(m.size);
  double worst = 0;
  for (int e = 0; e < n; e += 17) {
    std::vector<float> buffer(l.reals_per_env, 0.0f);
    const ph::data<float> d = ph::data_of(l, buffer.data(), 1, 0);
    for (int k = 0; k < nq; ++k) d.qpos[k] = qpos[std::size_t(k) * n + e];
    for (int k = 0; k < nv; ++k) d.qvel[k] = qvel[std::size_t(k) * n + e];
    for (int k = 0; k < nu; ++k) d.ctrl[k] = ctrl[std::size_t(k) * n + e];
    for (int s = 0; s < steps; ++s) ph::step(m.view(), d);
    for (int k = 0; k < nq; ++k) worst = std::max(worst, double(std::fabs(d.qpos[k] - dq[std::size_t(k) * n + e])));
    for (int k = 0; k < nv; ++k) worst = std::max(worst, double(std::fabs(d.qvel[k] - dv[std::size_t(k) * n + e])));
  }
  MESSAGE(file << ": device against host (float), largest difference over " << steps << " steps: " << worst);
  CHECK(worst < tolerance);
}
}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("physics.batch.device_follows_host_on_the_chain") { compare_with_host("chain3.xml", 1000, 500, 1e-3); }
  TEST_CASE("physics.batch.device_follows_host_on_the_ant_tree") { compare_with_host("ant_tree.xml", 4096, 100, 1e-3); }
  // Contacts switch on at distance 0, so ulp-level differences can shift an impact by a step: looser bounds.
  TEST_CASE("physics.batch.device_follows_host_on_the_dropped_ball") {
    compare_with_host("drop_ball.xml", 1024, 500, 1e-2);
  }
  TEST_CASE("physics.batch.device_follows_host_on_the_ant_on_the_floor") {
    compare_with_host("ant_floor.xml", 2048, 100, 5e-2);
  }
  TEST_CASE("physics.batch.device_follows_host_on_the_humanoid_tree") {
    compare_with_host("humanoid_tree.xml", 2048, 100, 5e-2);
  }
}
