// The launcher's totals of a split run (pipeline/split_totals.hpp): throughput, lag, and whether the trainers of
// several GPUs ended with the same weights.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include <gmi/pipeline/split_totals.hpp>

namespace {
// A GMI's report over 2 s: a trainer (10 rollouts received, 1 of them dropped, 200 samples trained) or a serving
// GMI (10 rollouts sent, 1000 steps).
std::string report(int rank, int gpu, bool trainer, std::uint64_t hash = 0, double lag = 0) {
  gmi::split_gmi_result r;
  r.rank = rank;
  r.gpu = gpu;
  r.slice = trainer ? 0 : 1;
  r.trainer = trainer;
  r.seconds = 2;
  r.steps = trainer ? 200 : 1000;
  r.rollouts = trainer ? 9 : 10;
  r.dropped = trainer ? 1 : 0;
  r.updates = 3;
  r.lag_mean = lag;
  r.lag_max = 3;
  r.weights_hash = hash;
  r.reason = trainer ? "time limit" : "trainer stop";
  return nlohmann::json(r).dump();
}
}  // namespace

TEST_CASE("pipeline.split_totals.trainers_of_two_gpus") {
  gmi::runtime::run_report rep;
  rep.results = {report(0, 0, true, 42, 2.0), report(1, 0, false), report(2, 1, true, 42, 3.0), report(3, 1, false)};
  const gmi::split_total t = gmi::collect_split(rep);
  CHECK(t.trainers == 2);
  CHECK(t.weights_identical);
  CHECK(t.train_samples_per_s == doctest::Approx(200.0));  // 100 samples/s from each trainer
  CHECK(t.serve_steps_per_s == doctest::Approx(1000.0));
  CHECK(t.updates == 3);  // the group's updates (its trainers update in step)
  CHECK(t.lag_mean == doctest::Approx(2.5));  // weighted by the rollouts each trainer received (10 each)
  CHECK(t.reason == "time limit");
  CHECK(t.per_gmi[2].weights_hash == 42);  // the hash travels through the report
}

TEST_CASE("pipeline.split_totals.trainers_that_differ") {
  gmi::runtime::run_report rep;
  rep.results = {report(0, 0, true, 42, 2.0), report(1, 0, false), report(2, 1, true, 43, 2.0), report(3, 1, false)};
  const gmi::split_total t = gmi::collect_split(rep);
  CHECK(t.trainers == 2);
  CHECK_FALSE(t.weights_identical);
}

TEST_CASE("pipeline.split_totals.a_silent_gmi_is_an_error") {
  gmi::runtime::run_report rep;
  rep.results = {report(0, 0, true, 42, 2.0), ""};
  CHECK_THROWS_WITH_AS(gmi::collect_split(rep), "GMI 1 ended without a split-layout report", gmi::error);
}
