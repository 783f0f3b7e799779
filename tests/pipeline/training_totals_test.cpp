// The launcher's totals of a synchronous group (pipeline/training_totals.hpp): throughput, identical weights and
// the communication shares from the GMIs' reports.
#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <gmi/pipeline/training_totals.hpp>

namespace {
std::string report(int rank, double samples, double seconds, std::uint64_t hash, double comm, double host) {
  gmi::gmi_training_result r;
  r.rank = rank;
  r.iterations = 10;
  r.samples = samples;
  r.seconds = seconds;
  r.weights_hash = hash;
  r.reason = rank == 0 ? "time limit" : "stopped";
  r.comm_seconds = comm;
  r.host_sync_seconds = host;
  return nlohmann::json(r).dump();
}
}  // namespace

TEST_CASE("pipeline.training_totals.communication_shares") {
  gmi::runtime::run_report rep;
  rep.results = {report(0, 100, 2.0, 7, 0.2, 0.02), report(1, 100, 4.0, 7, 1.2, 0.0)};
  const gmi::gmi_training_total t = gmi::collect_training(rep);
  CHECK(t.samples_per_s == doctest::Approx(50.0));  // 200 samples over the longest GMI's 4 s
  CHECK(t.weights_identical);
  CHECK(t.reason == "time limit");
  CHECK(t.comm_share == doctest::Approx(0.2));       // (0.1 + 0.3) / 2
  CHECK(t.comm_share_max == doctest::Approx(0.3));
  CHECK(t.host_sync_share == doctest::Approx(0.005));  // (0.01 + 0) / 2
  CHECK(gmi::comm_share_text(t) ==
        "communication: 20.0% of the time on the device (gradient sums; mean over 2 GMIs, largest 30.0%) | host syncs 0.5%");
  // The result survives its trip as a report string.
  CHECK(t.per_gmi[1].comm_seconds == doctest::Approx(1.2));
}

// Fused across GPUs each GMI also reports its waits for the other GPUs' sums: their mean share follows the line.
TEST_CASE("pipeline.training_totals.waits_across_gpus") {
  const auto with_across = [](int rank, double seconds, double comm, double across) {
    auto j = nlohmann::json::parse(report(rank, 100, seconds, 7, comm, 0.0));
    if (std::isfinite(across)) j["comm_across_seconds"] = across;
    return j.dump();
  };
  gmi::runtime::run_report rep;
  rep.results = {with_across(0, 2.0, 0.2, 0.1), with_across(1, 4.0, 1.2, 0.2)};
  const gmi::gmi_training_total t = gmi::collect_training(rep);
  CHECK(t.comm_share_across == doctest::Approx(0.05));  // (0.05 + 0.05) / 2
  CHECK(t.per_gmi[1].comm_across_seconds == doctest::Approx(0.2));
  CHECK(gmi::comm_share_text(t) ==
        "communication: 20.0% of the time on the device (gradient sums; mean over 2 GMIs, largest 30.0%) | host syncs "
        "0.0% | waiting for other GPUs 5.0%");
  // one GMI without it (one GPU, or NCCL between the steps): no across share, the line as before
  rep.results[1] = with_across(1, 4.0, 1.2, std::nan(""));
  const gmi::gmi_training_total u = gmi::collect_training(rep);
  CHECK(std::isnan(u.comm_share_across));
  CHECK(gmi::comm_share_text(u).find("other GPUs") == std::string::npos);
  CHECK_FALSE(nlohmann::json(u.per_gmi[1]).contains("comm_across_seconds"));
}

TEST_CASE("pipeline.training_totals.unclocked_or_differing") {
  gmi::runtime::run_report rep;
  const double nan = std::nan("");
  rep.results = {report(0, 100, 2.0, 7, 0.2, 0.0), report(1, 100, 2.0, 8, nan, nan)};
  const gmi::gmi_training_total t = gmi::collect_training(rep);
  CHECK(std::isnan(t.comm_share));  // one GMI without a clock: no share at all
  CHECK_FALSE(t.weights_identical);
  CHECK_FALSE(nlohmann::json::parse(rep.results[1]).contains("comm_seconds"));
  rep.results.push_back("");
  CHECK_THROWS_AS((void)gmi::collect_training(rep), gmi::error);
}

// GPU utilization: slice 0 of each GPU reports GPM; the total is the mean over the GPUs with a figure, and a GPU
// without GPM gives its note when no GPU has one.
TEST_CASE("pipeline.training_totals.gpu_utilization") {
  const auto with_gpm = [](int rank, int slice, std::optional<double> active, std::string note) {
    gmi::gmi_training_result r;
    r.rank = rank;
    r.slice = slice;
    r.iterations = 10;
    r.samples = 100;
    r.seconds = 1.0;
    r.gpm.active = active;
    if (active) r.gpm.occupancy = *active / 2;
    r.gpm.note = std::move(note);
    return nlohmann::json(r).dump();
  };
  gmi::runtime::run_report rep;
  rep.results = {with_gpm(0, 0, 80.0, ""), with_gpm(1, 1, std::nullopt, ""), with_gpm(2, 0, 60.0, ""),
                 with_gpm(3, 1, std::nullopt, "")};
  gmi::gmi_training_total t = gmi::collect_training(rep);
  REQUIRE(t.gpm.active.has_value());
  CHECK(*t.gpm.active == doctest::Approx(70.0));
  CHECK(*t.gpm.occupancy == doctest::Approx(35.0));
  CHECK(t.gpm_gpus == 2);
  CHECK(gmi::utilization_text(t) ==
        "GPU utilization: SM activity 70%, occupancy 35% (GPM, mean over 2 GPUs, from the first group step)");
  CHECK_FALSE(nlohmann::json::parse(rep.results[1]).contains("sm_active_pct"));

  rep.results = {with_gpm(0, 0, std::nullopt, "GPM: not supported on this GPU (Hopper or newer needed)"),
                 with_gpm(1, 1, std::nullopt, "")};
  t = gmi::collect_training(rep);
  CHECK_FALSE(t.gpm.active.has_value());
  CHECK(t.gpm_gpus == 0);
  CHECK(gmi::utilization_text(t) == "GPU utilization: GPM n/a: GPM: not supported on this GPU (Hopper or newer needed)");
}
