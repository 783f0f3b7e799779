// Checkpoints across GMIs (the manifest: written atomically, read back, mismatches and torn checkpoints refused,
// the group save over 4 thread GMIs) and --restart-on-failure (the pure decisions, the status block, the
// parent's loop with this test binary re-executed as the attempts).
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmi/pipeline/gmis_checkpoint.hpp>
#include <gmi/pipeline/restart.hpp>
#include <gmi/runtime/supervisor.hpp>

namespace fs = std::filesystem;

namespace {

// An attempt of the restart-loop tests: this binary re-executed by run_with_restarts with RESTART_TEST_SCENARIO
// set (GMI_* variables are not passed on, so the scenario travels under another name). It plays a GMI group
// that reports through the status block and exits before doctest runs.
[[maybe_unused]] const bool attempt_hook = [] {
  const char* scenario = std::getenv("RESTART_TEST_SCENARIO");
  if (!scenario || !gmi::is_restart_attempt()) return false;
  const auto status = gmi::restart_status::from_env();
  if (!status) std::_Exit(99);
  const std::string s = scenario;
  const int attempt = gmi::restart_attempt();
  const std::string resume_path = gmi::restart_note_from_env()->resume;
  const char* resume = resume_path.c_str();
  auto& b = status->block();
  b.started_ns.store(gmi::steady_ns());
  if (s == "lost_once") {  // attempt 1: checkpoint at 20, GMI 2 lost at 23; attempt 2 must resume and succeeds
    if (attempt == 1) {
      b.iteration.store(20);
      b.checkpoint_ns.store(gmi::steady_ns());
      b.checkpoint_plus_1.store(21);
      b.iteration.store(23);
      status->set_note("GMI 2 (GPU 0, slice 2) exited with signal 9 (SIGKILL)");
      b.lost_gmi.store(1);
      std::_Exit(1);
    }
    std::_Exit(resume && std::string(resume) == "ck-path" ? 0 : 98);
  }
  if (s == "killed_always") {  // a thread GMI's fault takes the attempt's process; no checkpoint ever
    b.iteration.store(7);
    ::raise(SIGKILL);
  }
  if (s == "refused") std::_Exit(2);  // a flag refused inside the attempt: final, no restart
  std::_Exit(97);
}();

struct temp_dir {
  fs::path path;
  temp_dir() {
    char pattern[] = "/tmp/gmi-restart-test-XXXXXX";
    REQUIRE(::mkdtemp(pattern) != nullptr);
    path = pattern;
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

// A stand-in for ppo_trainer: what save_gmis_checkpoint and resume_gmi use.
struct fake_trainer {
  std::uint64_t it = 0;
  int envs = 8;
  int rank = 0;
  bool fail_save = false;
  std::vector<float> state;
  [[nodiscard]] std::uint64_t iteration() const { return it; }
  [[nodiscard]] int num_envs() const { return envs; }
  gmi::io::checkpoint save_state() {
    if (fail_save) throw gmi::error("disk full (test)");
    gmi::io::checkpoint ck;
    ck.meta = {{"iteration", it}, {"num_envs", envs}};
    ck.add("state", state);
    return ck;
  }
  void load_state(const gmi::io::checkpoint& ck) {
    state = ck.get<float>("state");
    it = ck.meta.at("iteration").get<std::uint64_t>();
  }
};

gmi::gmis_manifest sample_manifest(const fs::path& path, int world, std::uint64_t it) {
  gmi::gmis_manifest m;
  m.world = world;
  m.gmis_per_gpu = world;
  m.gpus = 1;
  m.iteration = it;
  m.num_envs = 8;
  m.env_steps = 1234;
  m.task = "cartpole";
  for (int r = 0; r < world; ++r) {
    gmi::io::checkpoint ck;
    ck.meta = {{"iteration", it}};
    ck.add("state", std::vector<float>{static_cast<float>(r), 1.0f, 2.0f});
    const fs::path file = gmi::gmis_checkpoint_file(path, it, r);
    gmi::io::save(ck, file);
    m.files.push_back(gmi::describe_saved(file, r));
  }
  return m;
}

std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_SUITE("cpu") {
TEST_CASE("pipeline.gmis_checkpoint.manifest_round_trip") {
  temp_dir d;
  const fs::path path = d.path / "ck.gmi";
  const auto m = sample_manifest(path, 4, 40);
  gmi::write_manifest(m, path);
  const auto back = gmi::read_manifest(path);
  CHECK(back == m);
  CHECK(gmi::gmis_checkpoint_file(path, 40, 2).filename() == "ck.gmi.iter40.gmi2");
  CHECK_NOTHROW(gmi::check_complete(back, path));
  const auto r = gmi::manifest_for_resume(path, 4, 8);
  CHECK(r.iteration == 40);
  // the atomic write leaves only the manifest and the four files (no temp file)
  CHECK(d.names() == std::vector<std::string>{"ck.gmi", "ck.gmi.iter40.gmi0", "ck.gmi.iter40.gmi1",
                                              "ck.gmi.iter40.gmi2", "ck.gmi.iter40.gmi3"});
}

TEST_CASE("pipeline.gmis_checkpoint.refuses_another_gmi_count_and_bad_manifests") {
  temp_dir d;
  const fs::path path = d.path / "ck.gmi";
  gmi::write_manifest(sample_manifest(path, 4, 10), path);
  const std::string world = error_of([&] { (void)gmi::manifest_for_resume(path, 2, 8); });
  CHECK(world.find("GMIs of the checkpoint: got 4, need 2 (this run's GMIs") != std::string::npos);
  CHECK(world.find('\n') == std::string::npos);
  const std::string envs = error_of([&] { (void)gmi::manifest_for_resume(path, 4, 16); });
  CHECK(envs.find("environments per GMI of the checkpoint: got 8, need 16") != std::string::npos);

  // a single-GMI checkpoint is not a manifest
  const fs::path single = d.path / "one.gmi";
  gmi::io::checkpoint ck;
  ck.add("x", std::vector<float>{1.0f});
  gmi::io::save(ck, single);
  CHECK(error_of([&] { (void)gmi::read_manifest(single); }).find("got a checkpoint of 1 GMI") != std::string::npos);
  // not JSON, another format, a manifest with a file per GMI missing
  const fs::path junk = d.path / "junk";
  std::ofstream(junk) << "hello";
  CHECK(error_of([&] { (void)gmi::read_manifest(junk); }).find("not a manifest gmi wrote") != std::string::npos);
  std::ofstream(junk, std::ios::trunc) << R"({"format": "something else"})";
  CHECK(error_of([&] { (void)gmi::read_manifest(junk); }).find("not a gmi checkpoint manifest") != std::string::npos);
  auto j = gmi::to_json_manifest(gmi::read_manifest(path));
  j["files"].erase(j["files"].begin() + 3);
  std::ofstream(junk, std::ios::trunc) << j.dump();
  CHECK(error_of([&] { (void)gmi::read_manifest(junk); }).find("files: got 3, need one per GMI (world 4)") !=
        std::string::npos);
  // writing a manifest whose files do not cover the world is refused before anything is written
  auto short_m = gmi::read_manifest(path);
  short_m.files.pop_back();
  CHECK_THROWS_AS(gmi::write_manifest(short_m, d.path / "other"), gmi::config_error);
  CHECK_FALSE(fs::exists(d.path / "other"));
}

TEST_CASE("pipeline.gmis_checkpoint.torn_checkpoint_is_not_picked") {
  temp_dir d;
  const fs::path path = d.path / "ck.gmi";
  const auto m = sample_manifest(path, 3, 30);
  gmi::write_manifest(m, path);
  REQUIRE(gmi::last_complete_checkpoint(path).has_value());
  SUBCASE("a file rewritten by a save that never completed") {
    gmi::io::checkpoint other;
    other.meta = {{"iteration", 35}};
    other.add("state", std::vector<float>{9.0f, 9.0f, 9.0f, 9.0f});
    gmi::io::save(other, gmi::gmis_checkpoint_file(path, 30, 1));
    std::string why;
    CHECK_FALSE(gmi::last_complete_checkpoint(path, &why).has_value());
    CHECK(why.find("GMI 1's file ck.gmi.iter30.gmi1: got") != std::string::npos);
    CHECK(why.find("the checkpoint is torn") != std::string::npos);
    CHECK(error_of([&] { (void)gmi::manifest_for_resume(path, 3, 8); }).find("torn") != std::string::npos);
  }
  SUBCASE("a file missing") {
    fs::remove(gmi::gmis_checkpoint_file(path, 30, 2));
    std::string why;
    CHECK_FALSE(gmi::last_complete_checkpoint(path, &why).has_value());
    CHECK(why.find("GMI 2's file ck.gmi.iter30.gmi2 is missing") != std::string::npos);
  }
  SUBCASE("no manifest yet: files of a save that never completed are not a checkpoint, and are removed") {
    fs::remove(path);
    std::string why;
    CHECK_FALSE(gmi::last_complete_checkpoint(path, &why).has_value());
    CHECK(why == "no checkpoint saved yet");
    std::ofstream(d.path / "ck.gmi.iter35.gmi0.tmp.12345") << "half";
    CHECK(gmi::remove_unreferenced(path, nullptr) == 4);
    CHECK(d.names().empty());
  }
  SUBCASE("older generations and leftovers go, the manifest's files stay") {
    const auto newer = sample_manifest(path, 3, 40);
    gmi::write_manifest(newer, path);
    std::ofstream(d.path / "unrelated.gmi") << "keep me";
    CHECK(gmi::remove_unreferenced(path, &newer) == 3);
    CHECK(d.names() == std::vector<std::string>{"ck.gmi", "ck.gmi.iter40.gmi0", "ck.gmi.iter40.gmi1",
                                                "ck.gmi.iter40.gmi2", "unrelated.gmi"});
    CHECK(gmi::last_complete_checkpoint(path)->iteration == 40);
  }
}

TEST_CASE("pipeline.gmis_checkpoint.group_save_and_resume_over_4_thread_gmis" * doctest::timeout(60)) {
  temp_dir d;
  const fs::path path = d.path / "ck.gmi";
  const auto save_at = [&](std::uint64_t it, int failing_rank) {
    gmi::runtime::thread_group g(gmi::runtime::launch_spec::uniform(0, 4), [&](gmi::runtime::context& ctx) {
      fake_trainer t;
      t.it = it;
      t.rank = ctx.rank();
      t.fail_save = ctx.rank() == failing_rank;
      t.state = {static_cast<float>(ctx.rank()), static_cast<float>(it)};
      gmi::gmis_manifest base;
      base.gmis_per_gpu = 4;
      base.gpus = 1;
      base.num_envs = 8;
      base.task = "cartpole";
      const auto m = gmi::save_gmis_checkpoint(ctx, t, path, base, {{"git", "test"}});
      CHECK(m.has_value() == (ctx.rank() == 0));
    });
    return g.wait();
  };
  REQUIRE(save_at(10, -1).ok());
  REQUIRE(save_at(20, -1).ok());
  CHECK(gmi::read_manifest(path).iteration == 20);
  CHECK(d.names().size() == 5);  // the manifest and iteration 20's four files; iteration 10's are gone

  // A save that fails on GMI 3 fails the group, leaves no file of iteration 30, and the checkpoint at 20 stands.
  const auto failed = save_at(30, 3);
  REQUIRE_FALSE(failed.ok());
  const std::string& why = failed.first_failure->message;  // GMI 3's own error, or a sibling's account of it
  CHECK((why.find("disk full (test)") != std::string::npos ||
         why.find("checkpoint at iteration 30: the save failed on 1 other GMI(s)") != std::string::npos));
  CHECK(d.names().size() == 5);
  CHECK(gmi::last_complete_checkpoint(path)->iteration == 20);

  // Every GMI resumes from its own file.
  gmi::runtime::thread_group g(gmi::runtime::launch_spec::uniform(0, 4), [&](gmi::runtime::context& ctx) {
    fake_trainer t;
    CHECK(gmi::resume_gmi(ctx, t, path) == 20);
    CHECK(t.state == std::vector<float>{static_cast<float>(ctx.rank()), 20.0f});
  });
  CHECK(g.wait().ok());
  gmi::runtime::thread_group two(gmi::runtime::launch_spec::uniform(0, 2), [&](gmi::runtime::context& ctx) {
    fake_trainer t;
    (void)gmi::resume_gmi(ctx, t, path);
  });
  const auto refused = two.wait();
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.first_failure->message.find("GMIs of the checkpoint: got 4, need 2") != std::string::npos);
}

TEST_CASE("pipeline.gmis_checkpoint.failed_manifest_write_leaves_nothing" * doctest::timeout(60)) {
  temp_dir d;
  const fs::path path = d.path / "ck.gmi";
  fs::create_directory(path);  // rename of the manifest over a non-empty folder fails
  std::ofstream(path / "occupied") << "x";
  gmi::runtime::thread_group g(gmi::runtime::launch_spec::uniform(0, 2), [&](gmi::runtime::context& ctx) {
    fake_trainer t;
    t.it = 10;
    t.state = {1.0f};
    (void)gmi::save_gmis_checkpoint(ctx, t, path, gmi::gmis_manifest{}, {});
  });
  const auto r = g.wait();
  REQUIRE_FALSE(r.ok());
  CHECK(r.first_failure->message.find("checkpoint manifest") != std::string::npos);
  CHECK(d.names() == std::vector<std::string>{"ck.gmi"});  // no per-GMI file, no temp file
}

TEST_CASE("pipeline.restart.kill_at_parses_rank_and_iteration") {
  CHECK(gmi::parse_kill_at("2:20") == gmi::kill_at{2, 20});
  CHECK(gmi::parse_kill_at("0:1") == gmi::kill_at{0, 1});
  for (const char* bad : {"", "2", "2:", ":20", "a:20", "2:x", "-1:20", "2:0", "2:20x", "2:-3"}) {
    INFO(bad);
    const std::string e = error_of([&] { (void)gmi::parse_kill_at(bad); });
    CHECK(e.find("GMI_TEST_KILL_AT: got \"" + std::string(bad) + "\", need rank:iteration") != std::string::npos);
  }
}

TEST_CASE("pipeline.restart.decisions") {
  using gmi::restart_action;
  gmi::attempt_end ok;
  CHECK(gmi::decide_restart(ok, 0, 3) == restart_action::finish);
  gmi::attempt_end refused;
  refused.code = 2;
  CHECK(gmi::decide_restart(refused, 0, 3) == restart_action::finish);
  gmi::attempt_end differ;  // an error a restart can not fix (e.g. weights differ): exit 1, no GMI lost
  differ.code = 1;
  CHECK(gmi::decide_restart(differ, 0, 3) == restart_action::finish);
  gmi::attempt_end lost;
  lost.code = 1;
  lost.lost_gmi = true;
  CHECK(gmi::decide_restart(lost, 0, 3) == restart_action::restart);
  CHECK(gmi::decide_restart(lost, 2, 3) == restart_action::restart);
  CHECK(gmi::decide_restart(lost, 3, 3) == restart_action::give_up);
  gmi::attempt_end crashed;  // a thread GMI's fault took the attempt's process
  crashed.signaled = true;
  crashed.code = SIGSEGV;
  CHECK(gmi::decide_restart(crashed, 0, 1) == restart_action::restart);
  gmi::attempt_end hung;
  hung.past_deadline = true;
  CHECK(gmi::decide_restart(hung, 0, 1) == restart_action::restart);
  crashed.stop_requested = true;  // Ctrl-C: never restart
  CHECK(gmi::decide_restart(crashed, 0, 3) == restart_action::finish);
}

TEST_CASE("pipeline.restart.lost_progress") {
  const auto l = gmi::progress_lost(23, 20, 0, 1024, 0.5);
  CHECK(l.iterations == 3);
  CHECK(l.env_steps == 3072);
  CHECK(l.from_checkpoint);
  CHECK(gmi::describe(l) ==
        "lost 3 iterations (3.07 K env steps, 0.50 s of training) since the checkpoint at iteration 20");
  const auto scratch = gmi::progress_lost(7, std::nullopt, 0, 1024, 0.25);
  CHECK(scratch.iterations == 7);
  CHECK_FALSE(scratch.from_checkpoint);
  CHECK(gmi::describe(scratch).find("since the start at iteration 0 (no checkpoint yet)") != std::string::npos);
  CHECK(gmi::progress_lost(20, 20, 0, 1024, 0).iterations == 0);  // died right at the checkpoint
  CHECK(gmi::progress_lost(40, std::nullopt, 40, 1024, 0).iterations == 0);
}

TEST_CASE("pipeline.restart.status_block_is_shared_through_the_fd") {
  auto owner = gmi::restart_status::create();
  owner.reset();
  gmi::runtime::env_list note;
  gmi::add_to_chosen(note, "restart", gmi::to_json(gmi::restart_note{.attempt = 1, .fd = owner.fd(), .resume = ""}));
  REQUIRE(note.size() == 1);
  ::setenv(gmi::chosen_variable, note[0].second.c_str(), 1);
  {
    const auto attached = gmi::restart_status::from_env();
    REQUIRE(attached.has_value());
    attached->block().iteration.store(42);
    attached->set_note("GMI 2 lost");
  }
  ::unsetenv(gmi::chosen_variable);
  CHECK(owner.block().iteration.load() == 42);
  CHECK(owner.note() == "GMI 2 lost");
  CHECK_FALSE(gmi::restart_status::from_env().has_value());
}

TEST_CASE("pipeline.restart.loop_restarts_from_the_checkpoint" * doctest::timeout(60)) {
  gmi::restart_loop_config c;
  c.restarts = 2;
  c.checkpoint_path = "ck-path";
  c.samples_per_iteration = 1024;
  c.attempt_bound = std::chrono::seconds(30);
  std::optional<std::uint64_t> asked;
  c.last_checkpoint = [&](std::optional<std::uint64_t> saved, std::string&) {
    asked = saved;
    return saved;
  };
  std::atomic<int> stop{0};
  c.stop_signal = &stop;
  ::setenv("RESTART_TEST_SCENARIO", "lost_once", 1);
  CHECK(gmi::run_with_restarts(c) == 0);
  CHECK(asked == std::optional<std::uint64_t>(20));

  ::setenv("RESTART_TEST_SCENARIO", "killed_always", 1);
  asked.reset();
  CHECK(gmi::run_with_restarts(c) == 1);  // attempt 1 and both restarts lost: give up
  CHECK_FALSE(asked.has_value());

  ::setenv("RESTART_TEST_SCENARIO", "refused", 1);
  CHECK(gmi::run_with_restarts(c) == 2);
  ::unsetenv("RESTART_TEST_SCENARIO");

  c.checkpoint_path.clear();
  CHECK(error_of([&] { (void)gmi::run_with_restarts(c); }).find("--restart-on-failure without --checkpoint") !=
        std::string::npos);
}
}
