// The env driver's device path for the physics tasks (physics/step_path.hpp): the rule on the task's size and the
// environment count, the overrides (params.step_path, the process-wide request) and their refusals, and the
// tasks' step split as the warp path runs it (control, physics in the pipeline's arrays, finish) on the host.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/envs/ant.hpp>
#include <gmi/envs/ant_v4.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/envs/humanoid.hpp>
#include <gmi/envs/humanoid_v4.hpp>
#include <gmi/physics/step_path.hpp>

#include "envs_gpu/gpu_runs.hpp"  // test_action

namespace ph = gmi::physics;

namespace {
// A device like an H100's or H200's: 227 KiB of opt-in shared memory per block, 132 SMs; the task's own sizes.
ph::step_path_inputs inputs(std::size_t scratch, std::size_t n) {
  ph::step_path_inputs in;
  in.scratch_bytes_per_env = scratch;
  in.table_bytes = 8192;
  in.shared_bytes_per_block = 227 * 1024;
  in.num_envs = n;
  in.sm_count = 132;
  return in;
}
constexpr auto A = ph::step_path::automatic, T = ph::step_path::threads, W = ph::step_path::warp;

template <class E>
std::size_t scratch_bytes() {
  return E::sim::scratch_reals * sizeof(float);
}
}  // namespace

TEST_CASE("envs.step_path.rule_by_task_size_and_env_count") {
  // A large model at few environments: warp; at more than warp_max_waves times the resident count: threads. With
  // no occupancy count given, one block of what fits: (227 KiB - 8192) / 20000 = 11 environments per SM.
  CHECK(ph::resident_envs_per_sm(inputs(20000, 1)) == 11);
  const std::size_t most = ph::warp_max_waves * 11 * 132;
  CHECK(ph::choose_step_path(A, A, inputs(20000, 4096)).path == W);
  CHECK(ph::choose_step_path(A, A, inputs(20000, most)).path == W);
  const auto many = ph::choose_step_path(A, A, inputs(20000, most + 1));
  CHECK(many.path == T);
  CHECK(many.reason.find("11 resident per SM x 132 SMs") != std::string::npos);
  // The occupancy calculator's count wins over the estimate and moves the bound with it: halving the shared memory
  // per environment (spilled rows) that doubles the resident count doubles the count the warp path takes.
  ph::step_path_inputs occ = inputs(20000, most + 1);
  occ.resident_envs_per_sm = 22;
  CHECK(ph::resident_envs_per_sm(occ) == 22);
  CHECK(ph::choose_step_path(A, A, occ).path == W);
  occ.num_envs = 2 * most;
  CHECK(ph::choose_step_path(A, A, occ).path == W);
  occ.num_envs = 2 * most + 1;
  CHECK(ph::choose_step_path(A, A, occ).path == T);
  // Fewer SMs (a GMI's share of the device): a proportionally smaller bound.
  ph::step_path_inputs part = inputs(20000, most / 2 + 1);
  part.sm_count = 66;
  CHECK(ph::choose_step_path(A, A, part).path == T);
  part.num_envs = most / 2;
  CHECK(ph::choose_step_path(A, A, part).path == W);
  // A small model: threads at any count.
  const auto small = ph::choose_step_path(A, A, inputs(ph::warp_min_scratch_bytes - 4, 64));
  CHECK(small.path == T);
  CHECK(small.reason.find(std::to_string(ph::warp_min_scratch_bytes)) != std::string::npos);
  CHECK(ph::choose_step_path(A, A, inputs(ph::warp_min_scratch_bytes, 64)).path == W);
  // A model whose arrays do not fit a block's shared memory: threads, and a warp asked for is refused in one line.
  const auto big = ph::choose_step_path(A, A, inputs(227 * 1024, 64));
  CHECK(big.path == T);
  CHECK(big.reason.find("shared memory") != std::string::npos);
  try {
    (void)ph::choose_step_path(W, A, inputs(227 * 1024, 64));
    FAIL("a warp path that does not fit was accepted");
  } catch (const gmi::config_error& e) {
    const std::string what = e.what();
    CHECK(what.find("got") != std::string::npos);
    CHECK(what.find("need") != std::string::npos);
    CHECK(what.find('\n') == std::string::npos);
  }
  // The no-GPU case (no shared memory, no SMs): threads.
  CHECK(ph::choose_step_path(A, A, ph::step_path_inputs{20000, 8192, 0, 64, 0}).path == T);
}

TEST_CASE("envs.step_path.the_tasks_under_the_rule") {
  // The tasks' arrays are all above the small-model bound and fit a block with their model.
  for (const std::size_t s : {scratch_bytes<gmi::envs::ant_v4>(), scratch_bytes<gmi::envs::humanoid_v4>(),
                              scratch_bytes<gmi::envs::anymal>(), scratch_bytes<gmi::envs::ant>(),
                              scratch_bytes<gmi::envs::humanoid>()}) {
    CHECK(s >= ph::warp_min_scratch_bytes);
    CHECK(ph::choose_step_path(A, A, inputs(s, 4096)).path == W);
    CHECK(ph::choose_step_path(A, A, inputs(s, 65536)).path == T);  // 496 per SM: the thread path's count
  }
  // The points measured through the env driver at c74e00d on an H200 (132 SMs; the warp path's default layout,
  // 16 lanes with the rows in global slots, held 16 ants, 14 humanoids and 16 anymals per SM): the fastest path was
  // the warp path at 4096 and 16384 environments and threads at 65536, for all three tasks.
  struct measured {
    std::size_t scratch, resident;
  };
  for (const measured t : {measured{scratch_bytes<gmi::envs::ant_v4>(), 16},
                           measured{scratch_bytes<gmi::envs::humanoid_v4>(), 14},
                           measured{scratch_bytes<gmi::envs::anymal>(), 16}}) {
    CAPTURE(t.resident);
    for (const std::size_t n : {std::size_t(4096), std::size_t(16384), std::size_t(65536)}) {
      CAPTURE(n);
      ph::step_path_inputs in = inputs(t.scratch, n);
      in.resident_envs_per_sm = t.resident;
      CHECK(ph::choose_step_path(A, A, in).path == (n <= 16384 ? W : T));
    }
  }
  // Default params leave the choice to the rule.
  CHECK(gmi::envs::ant_v4::params{}.step_path == A);
  CHECK(gmi::envs::humanoid_v4::params{}.step_path == A);
  CHECK(gmi::envs::anymal::params{}.step_path == A);
}

TEST_CASE("envs.step_path.overrides_config_field_and_request") {
  // params.step_path (the config field) wins over the rule; the process-wide request wins over both.
  CHECK(ph::choose_step_path(T, A, inputs(20000, 64)).path == T);
  CHECK(ph::choose_step_path(W, A, inputs(ph::warp_min_scratch_bytes - 4, 64)).path == W);
  CHECK(ph::choose_step_path(W, T, inputs(20000, 64)).path == T);
  CHECK(ph::choose_step_path(T, W, inputs(20000, 64)).path == W);
  CHECK(ph::choose_step_path(T, W, inputs(20000, 64)).reason.find("requested") != std::string::npos);
  CHECK(ph::choose_step_path(T, A, inputs(20000, 64)).reason.find("params.step_path") != std::string::npos);

  CHECK(ph::parse_step_path("") == A);
  CHECK(ph::parse_step_path("auto") == A);
  CHECK(ph::parse_step_path("threads") == T);
  CHECK(ph::parse_step_path("thread_per_env") == T);
  CHECK(ph::parse_step_path("warp") == W);
  CHECK(ph::parse_step_path("warp_per_env") == W);
  CHECK(ph::parse_step_path("staged") == ph::step_path::staged);
  CHECK(ph::parse_step_path("staged_per_env") == ph::step_path::staged);
  // The staged path is taken only when asked for (the rule never picks it), by the request or params.step_path.
  CHECK(ph::choose_step_path(ph::step_path::staged, A, inputs(20000, 64)).path == ph::step_path::staged);
  CHECK(ph::choose_step_path(T, ph::step_path::staged, inputs(20000, 64)).path == ph::step_path::staged);
  CHECK(ph::choose_step_path(ph::step_path::staged, T, inputs(20000, 64)).path == T);
  try {
    (void)ph::parse_step_path("block", "--physics-step");
    FAIL("an unknown path was accepted");
  } catch (const gmi::config_error& e) {
    const std::string what = e.what();
    CHECK(what.find("--physics-step") != std::string::npos);
    CHECK(what.find("block") != std::string::npos);
    CHECK(what.find("auto, threads, warp or staged") != std::string::npos);
  }
  ph::request_step_path("warp");
  CHECK(ph::requested_step_path() == W);
  CHECK_THROWS_AS(ph::request_step_path("warps"), gmi::config_error);
  CHECK(ph::requested_step_path() == W);  // a refused request leaves the last one
  ph::request_step_path("");
  CHECK(ph::requested_step_path() == A);
  CHECK(std::string(ph::step_path_name(W)) == "warp_per_env");
  CHECK(std::string(ph::step_path_name(T)) == "thread_per_env");
  CHECK(std::string(ph::step_path_name(ph::step_path::staged)) == "staged_per_env");
}

TEST_CASE("envs.step_path.staged_block_request") {
  CHECK(ph::requested_staged_block() == ph::default_staged_block);
  ph::request_staged_block(128);
  CHECK(ph::requested_staged_block() == 128);
  CHECK_THROWS_AS(ph::request_staged_block(96), gmi::config_error);
  CHECK_THROWS_AS(ph::request_staged_block(512), gmi::config_error);
  CHECK(ph::requested_staged_block() == 128);  // a refused request leaves the last one
  ph::request_staged_block(0);
  CHECK(ph::requested_staged_block() == ph::default_staged_block);
}

TEST_CASE("envs.step_path.tile_lanes_per_model_and_request") {
  // 16 lanes for the ant_v4 (13 bodies, 14 dofs), the humanoid_v4 (23 dofs) and anymal (18 dofs), their wider stages
  // wrapping round; a small model 8.
  CHECK(ph::default_tile_lanes(gmi::envs::ant_v4::sim::sizes_v) == 16);
  CHECK(ph::default_tile_lanes(gmi::envs::humanoid_v4::sim::sizes_v) == 16);
  CHECK(ph::default_tile_lanes(gmi::envs::anymal::sim::sizes_v) == 16);
  ph::model_sizes small{};
  small.nbody = 4;
  small.nv = 8;
  CHECK(ph::default_tile_lanes(small) == 8);
  small.nv = 9;
  CHECK(ph::default_tile_lanes(small) == 16);
  CHECK(ph::tile_layout_for(gmi::envs::ant_v4::sim::sizes_v).lanes == 16);
  CHECK(ph::tile_layout_for(gmi::envs::ant_v4::sim::sizes_v).spill_rows);
  ph::request_tile_layout(8, "global");
  CHECK(ph::tile_layout_for(gmi::envs::humanoid_v4::sim::sizes_v).lanes == 8);
  CHECK(ph::tile_layout_for(gmi::envs::humanoid_v4::sim::sizes_v).spill_rows);
  CHECK_THROWS_AS(ph::request_tile_layout(12), gmi::config_error);
  CHECK_THROWS_AS(ph::request_tile_layout(16, "local"), gmi::config_error);
  ph::request_tile_layout(32, "shared");
  CHECK(ph::tile_layout_for(gmi::envs::anymal::sim::sizes_v).lanes == 32);
  CHECK_FALSE(ph::tile_layout_for(gmi::envs::anymal::sim::sizes_v).spill_rows);
  ph::request_tile_layout(0);
  CHECK(ph::tile_layout_for(gmi::envs::anymal::sim::sizes_v).lanes == 16);
  CHECK(ph::tile_layout_for(gmi::envs::anymal::sim::sizes_v).spill_rows);
}

TEST_CASE_TEMPLATE("envs.step_path.split_step_is_the_step", E, gmi::envs::ant_v4, gmi::envs::humanoid_v4, gmi::envs::anymal,
                   gmi::envs::ant, gmi::envs::humanoid) {
  // What the warp path's lane 0 does around the physics (rl/physics_env_step.cuh), on the host with the serial
  // stages: control, the state and controls into the pipeline's arrays, substeps physics steps there, the state
  // back, finish. It must give the task's step bit for bit, over steps where the model falls and lands.
  using sim = typename E::sim;
  typename E::params p{};
  std::vector<float> table = E::make_table(p);
  E::bind_table(p, table.data());
  gmi::rng r0(5, 0), r1(5, 0);
  typename E::state a{}, b{};
  E::reset(a, r0, p);
  b = a;
  std::vector<float> scratch(sim::scratch_reals), scratch_b(sim::scratch_reals);
  int moved = 0;
  for (int t = 0; t < 40; ++t) {
    float act[E::act_dim];
    for (int k = 0; k < E::act_dim; ++k) act[k] = test_action(3, t, 0, E::act_dim, k);
    const gmi::transition ta = E::step(a, act, r0, p);
    float ctrl[sim::nu], carry[E::carry_dim];
    E::control(b, act, p, ctrl, carry, scratch_b.data());
    const gmi::physics::data<float> d = sim::bind(scratch_b.data());
    for (int k = 0; k < sim::nq; ++k) d.qpos[k] = b.qpos[k];
    for (int k = 0; k < sim::nv; ++k) {
      d.qvel[k] = b.qvel[k];
      d.qfrc_applied[k] = 0.0f;
    }
    for (int k = 0; k < sim::nu; ++k) d.ctrl[k] = ctrl[k];
    d.time[0] = 0.0f;
    d.prev_nefc[0] = 0.0f;
    for (int k = 0; k < E::physics_substeps(p); ++k) gmi::physics::step(p.model, d);
    for (int k = 0; k < sim::nq; ++k) b.qpos[k] = d.qpos[k];
    for (int k = 0; k < sim::nv; ++k) b.qvel[k] = d.qvel[k];
    const gmi::transition tb = E::finish(b, act, carry, d, p, scratch_b.data());
    REQUIRE(std::memcmp(&a, &b, sizeof a) == 0);
    CHECK(std::memcmp(&ta.reward, &tb.reward, sizeof ta.reward) == 0);
    CHECK(ta.terminated == tb.terminated);
    moved += ta.reward != 0.0f ? 1 : 0;
    if (ta.terminated) break;
  }
  CHECK(moved > 0);
}
