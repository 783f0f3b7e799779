// MPS on a real GPU: a daemon in its own pipe directory starts and quits; 2 and 4 client processes each report
// MPS enabled and the SM count of their percentage; a SIGKILLed client is named, its siblings are stopped through
// terminate_client, and afterwards no daemon, no child and no segment of the run is left.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gmi/partition/mps.hpp>
#include <gmi/runtime/partitioned.hpp>
#include <gmi/runtime/supervisor.hpp>

namespace {

namespace gp = gmi::partition;
using namespace std::chrono_literals;

bool has_mps() {
  if (gp::mps::can_implement(1)) return true;
  MESSAGE("SKIPPED: ", gp::mps::can_implement(1).message());
  return false;
}

std::string fresh_dir(const std::string& tag) {
  const std::string d = "/tmp/gmi-test-mps-" + std::to_string(getpid()) + "-" + tag;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

gmi::runtime::launch_spec client_spec(const gp::mps::session& s, int n, const std::string& out,
                                      const std::string& scenario) {
  auto spec = gmi::runtime::launch_spec::uniform(1, n);
  spec.program = GMI_TEST_MPS_WORKER;
  spec.args = std::vector<std::string>{GMI_TEST_MPS_WORKER};
  spec.env = {{"GMI_TEST_OUT", out}, {"GMI_TEST_SCENARIO", scenario}};
  spec.heartbeat_timeout = 0ms;  // CUDA start-up under MPS can take seconds; these tests watch exits only
  gmi::runtime::use_mps(spec, s);
  return spec;
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("partition_gpu.mps.daemon_start_and_quit" * doctest::timeout(120)) {
    if (!has_mps()) return;
    gp::mps::config c;
    c.run_id = "test-" + std::to_string(getpid()) + "-daemon";
    std::string root, pipe;
    {
      gp::mps::session s(c);
      root = s.root_directory();
      pipe = s.pipe_directory(0);
      CHECK(std::filesystem::exists(pipe));
      CHECK_FALSE(s.daemon_processes(0).empty());
      MESSAGE("servers: ", s.control(0, "get_server_list"));
      s.quit();
      CHECK(s.daemon_processes(0).empty());
    }
    CHECK_FALSE(std::filesystem::exists(root));
  }

  TEST_CASE("partition_gpu.mps.clients_see_their_sm_share" * doctest::timeout(240)) {
    if (!has_mps()) return;
    for (int n : {2, 4}) {
      CAPTURE(n);
      gp::mps::config c;
      c.gmis_per_gpu = n;
      c.run_id = "test-" + std::to_string(getpid()) + "-clients" + std::to_string(n);
      gp::mps::session s(c);
      const std::string out = fresh_dir("clients" + std::to_string(n));
      gmi::runtime::process_group g(client_spec(s, n, out, "report"));
      const auto r = g.wait();
      REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.first_failure->message));
      const auto [lo, hi] = gp::mps::expected_sms(s.device_sm_count(0), c.percentage());
      for (int rank = 0; rank < n; ++rank) {
        std::ifstream in(out + "/rank" + std::to_string(rank) + ".txt");
        int enabled = 0, sms = 0, total = 0;
        in >> enabled >> sms >> total;
        CHECK(enabled == 1);
        CHECK(sms >= lo);
        CHECK(sms <= hi);
        MESSAGE(n, " clients at ", c.percentage(), "%: GMI ", rank, " sees ", sms, " of ", total, " SMs");
      }
      s.quit();
      CHECK(s.daemon_processes(0).empty());
      std::filesystem::remove_all(out);
    }
  }

  TEST_CASE("partition_gpu.mps.killed_client_tears_down" * doctest::timeout(240)) {
    if (!has_mps()) return;
    gp::mps::config c;
    c.gmis_per_gpu = 2;
    c.run_id = "test-" + std::to_string(getpid()) + "-kill";
    gp::mps::session s(c);
    const std::string out = fresh_dir("kill");
    std::string shm;
    std::vector<pid_t> pids;
    {
      gmi::runtime::process_group g(client_spec(s, 2, out, "beat"));
      shm = g.shm_name();
      pids = g.pids();
      const pid_t victim = g.pid(1);
      std::thread killer([&] {
        // Kill once both clients are connected (they wrote their reports).
        const auto until = std::chrono::steady_clock::now() + 60s;
        while (std::chrono::steady_clock::now() < until &&
               !(std::filesystem::exists(out + "/rank0.txt") && std::filesystem::exists(out + "/rank1.txt"))) {
          std::this_thread::sleep_for(20ms);
        }
        kill(victim, SIGKILL);
      });
      const auto r = g.wait();
      killer.join();
      REQUIRE_FALSE(r.ok());
      CHECK(r.first_failure->message == "GMI 1 (GPU 0, slice 1) exited with signal 9 (SIGKILL)");
      MESSAGE("GMI 0 ended: ", r.exits[0].how);
    }
    for (pid_t p : pids) CHECK(kill(p, 0) != 0);
    CHECK_FALSE(std::filesystem::exists("/dev/shm" + shm));
    s.quit();
    CHECK(s.daemon_processes(0).empty());
    std::filesystem::remove_all(out);
  }
}
