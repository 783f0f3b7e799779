// The NCCL id bootstrap from a launcher's environment (comm/nccl.hpp): detect_launcher for mpirun (OpenMPI),
// Slurm and torchrun variables, which launcher wins when several are present, one clear config_error for a
// missing or contradictory variable; bootstrap_id from a given id or a rendezvous file. No GPU:
// nothing here calls CUDA or NCCL (the non-zero ranks only read what rank 0 would have written).
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gmi/comm/nccl.hpp>

namespace comm = gmi::comm;
using namespace std::chrono_literals;

namespace {
// Every variable detect_launcher reads.
const std::vector<std::string> launch_vars = {
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_LOCALID",
    "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NODEID", "SLURM_JOB_ID", "SLURM_STEP_ID", "RANK",
    "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID"};

// Sets exactly `vars` among launch_vars for its lifetime (the test binary's own environment is restored after).
class scoped_env {
 public:
  using vars_t = std::map<std::string, std::string>;
  explicit scoped_env(const vars_t& vars) {
    for (const auto& name : launch_vars) {
      if (const char* v = std::getenv(name.c_str())) saved_[name] = v;
      ::unsetenv(name.c_str());
    }
    for (const auto& [k, v] : vars) ::setenv(k.c_str(), v.c_str(), 1);
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;
  ~scoped_env() {
    for (const auto& name : launch_vars) ::unsetenv(name.c_str());
    for (const auto& [k, v] : saved_) ::setenv(k.c_str(), v.c_str(), 1);
  }

 private:
  std::map<std::string, std::string> saved_;
};

// The config_error message detect_launcher throws, or "" when it does not throw.
std::string launcher_error(const std::map<std::string, std::string>& vars) {
  scoped_env env(vars);
  try {
    (void)comm::detect_launcher();
  } catch (const gmi::config_error& e) {
    return e.what();
  }
  return "";
}

comm::nccl_id id_with_bytes(unsigned char first) {
  comm::nccl_id id;
  for (std::size_t i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i) id.id.internal[i] = static_cast<char>(first + i);
  return id;
}

std::filesystem::path fresh_dir() {
  auto dir = std::filesystem::temp_directory_path() / ("gmi-bootstrap-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}
}  // namespace

TEST_SUITE("cpu") {
TEST_CASE("comm.bootstrap.no_launcher") {
  scoped_env env(scoped_env::vars_t{});
  CHECK_FALSE(comm::detect_launcher().has_value());
}

TEST_CASE("comm.bootstrap.openmpi") {
  scoped_env env({{"OMPI_COMM_WORLD_RANK", "5"},
                  {"OMPI_COMM_WORLD_SIZE", "8"},
                  {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                  {"OMPI_MCA_ess_base_jobid", "123456"}});
  const auto e = comm::detect_launcher();
  REQUIRE(e.has_value());
  CHECK(e->source == "openmpi");
  CHECK(e->rank == 5);
  CHECK(e->world == 8);
  CHECK(e->local_rank == 1);
  CHECK(e->local_world == 4);
  CHECK(e->job == "123456");
}

TEST_CASE("comm.bootstrap.openmpi_pmix_namespace_and_no_local_variables") {
  scoped_env env({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"PMIX_NAMESPACE", "prterun-x-1@1"}});
  const auto e = comm::detect_launcher();
  REQUIRE(e.has_value());
  CHECK(e->local_rank == 0);
  CHECK(e->local_world == 1);
  CHECK(e->job == "prterun-x-1@1");
}

TEST_CASE("comm.bootstrap.slurm") {
  SUBCASE("ntasks_per_node") {
    scoped_env env({{"SLURM_PROCID", "3"},
                    {"SLURM_NTASKS", "4"},
                    {"SLURM_LOCALID", "1"},
                    {"SLURM_NTASKS_PER_NODE", "2"},
                    {"SLURM_JOB_ID", "991"},
                    {"SLURM_STEP_ID", "2"}});
    const auto e = comm::detect_launcher();
    REQUIRE(e.has_value());
    CHECK(e->source == "slurm");
    CHECK(e->rank == 3);
    CHECK(e->world == 4);
    CHECK(e->local_rank == 1);
    CHECK(e->local_world == 2);
    CHECK(e->job == "991.2");
  }
  SUBCASE("tasks_per_node_list") {
    // "3(x2),2": nodes 0 and 1 run 3 tasks, node 2 runs 2.
    scoped_env env({{"SLURM_PROCID", "7"},
                    {"SLURM_NTASKS", "8"},
                    {"SLURM_LOCALID", "1"},
                    {"SLURM_TASKS_PER_NODE", "3(x2),2"},
                    {"SLURM_NODEID", "2"},
                    {"SLURM_JOB_ID", "17"}});
    const auto e = comm::detect_launcher();
    REQUIRE(e.has_value());
    CHECK(e->local_world == 2);
    CHECK(e->job == "17.0");
  }
  SUBCASE("nprocs_stands_in_for_ntasks") {
    scoped_env env({{"SLURM_PROCID", "1"}, {"SLURM_NPROCS", "2"}});
    const auto e = comm::detect_launcher();
    REQUIRE(e.has_value());
    CHECK(e->world == 2);
    CHECK(e->local_world == 1);
  }
}

TEST_CASE("comm.bootstrap.slurm_task_list_format") {
  CHECK(comm::detail::slurm_tasks_on_node("4", 0) == 4);
  CHECK(comm::detail::slurm_tasks_on_node("4(x2),3", 1) == 4);
  CHECK(comm::detail::slurm_tasks_on_node("4(x2),3", 2) == 3);
  CHECK(comm::detail::slurm_tasks_on_node("1,2,3", 1) == 2);
  CHECK_THROWS_AS(comm::detail::slurm_tasks_on_node("4(x2),3", 3), gmi::config_error);
  CHECK_THROWS_AS(comm::detail::slurm_tasks_on_node("4(x2", 0), gmi::config_error);
  CHECK_THROWS_AS(comm::detail::slurm_tasks_on_node("abc", 0), gmi::config_error);
}

TEST_CASE("comm.bootstrap.torchrun") {
  scoped_env env({{"RANK", "6"},
                  {"WORLD_SIZE", "16"},
                  {"LOCAL_RANK", "2"},
                  {"LOCAL_WORLD_SIZE", "8"},
                  {"MASTER_ADDR", "node01"},
                  {"MASTER_PORT", "29500"},
                  {"TORCHELASTIC_RUN_ID", "job42"}});
  const auto e = comm::detect_launcher();
  REQUIRE(e.has_value());
  CHECK(e->source == "torchrun");
  CHECK(e->rank == 6);
  CHECK(e->world == 16);
  CHECK(e->local_rank == 2);
  CHECK(e->local_world == 8);
  CHECK(e->job == "job42-node01-29500");
}

TEST_CASE("comm.bootstrap.torchrun_default_run_id_keys_on_master") {
  scoped_env env({{"RANK", "0"},
                  {"WORLD_SIZE", "2"},
                  {"MASTER_ADDR", "127.0.0.1"},
                  {"MASTER_PORT", "29400"},
                  {"TORCHELASTIC_RUN_ID", "none"}});
  const auto e = comm::detect_launcher();
  REQUIRE(e.has_value());
  CHECK(e->job == "127.0.0.1-29400");
}

TEST_CASE("comm.bootstrap.innermost_launcher_wins") {
  SUBCASE("torchrun under slurm") {  // srun torchrun ...: Slurm's variables describe the torchrun agent
    scoped_env env({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"RANK", "5"}, {"WORLD_SIZE", "8"},
                    {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"}, {"MASTER_ADDR", "n0"}, {"MASTER_PORT", "1"}});
    const auto e = comm::detect_launcher();
    REQUIRE(e.has_value());
    CHECK(e->source == "torchrun");
    CHECK(e->rank == 5);
    CHECK(e->world == 8);
  }
  SUBCASE("mpirun inside sbatch") {  // the batch step's SLURM_PROCID=0 is inherited by every MPI rank
    scoped_env env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"OMPI_COMM_WORLD_RANK", "3"},
                    {"OMPI_COMM_WORLD_SIZE", "4"}});
    const auto e = comm::detect_launcher();
    REQUIRE(e.has_value());
    CHECK(e->source == "openmpi");
    CHECK(e->rank == 3);
  }
}

TEST_CASE("comm.bootstrap.missing_partner_variable_is_one_clear_error") {
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"OMPI_COMM_WORLD_RANK", "1"}}, "OMPI_COMM_WORLD_SIZE"},
      {{{"OMPI_COMM_WORLD_SIZE", "2"}}, "OMPI_COMM_WORLD_RANK"},
      {{{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}},
       "OMPI_COMM_WORLD_LOCAL_SIZE"},
      {{{"SLURM_PROCID", "0"}}, "SLURM_NTASKS"},
      {{{"SLURM_NTASKS", "2"}}, "SLURM_PROCID"},
      {{{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "1"}}, "SLURM_TASKS_PER_NODE"},
      {{{"RANK", "1"}}, "WORLD_SIZE"},
      {{{"WORLD_SIZE", "2"}}, "RANK"},
      {{{"RANK", "1"}, {"WORLD_SIZE", "2"}}, "MASTER_ADDR"},
      {{{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}, {"LOCAL_RANK", "0"}},
       "LOCAL_WORLD_SIZE"},
  };
  for (const auto& [vars, named] : cases) {
    const std::string message = launcher_error(vars);
    CAPTURE(message);
    CHECK(message.find(named) != std::string::npos);
    CHECK(message.find("need") != std::string::npos);
  }
}

TEST_CASE("comm.bootstrap.contradictory_values_are_one_clear_error") {
  const std::map<std::string, std::string> torch = {{"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}};
  auto with = [&](std::map<std::string, std::string> v) {
    v.insert(torch.begin(), torch.end());
    return v;
  };
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {with({{"RANK", "4"}, {"WORLD_SIZE", "4"}}), "0 <= rank < world"},
      {with({{"RANK", "-1"}, {"WORLD_SIZE", "4"}}), "0 <= rank < world"},
      {with({{"RANK", "0"}, {"WORLD_SIZE", "0"}}), "0 <= rank < world"},
      {with({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}}), "local rank"},
      {with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "4"}}), "local world <= world"},
      {with({{"RANK", "one"}, {"WORLD_SIZE", "4"}}), "an integer"},
      {{{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "2"}}, "slurm rank/world"},
      {{{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "99999999999999"}}, "an integer"},
  };
  for (const auto& [vars, says] : cases) {
    const std::string message = launcher_error(vars);
    CAPTURE(message);
    CHECK(message.find(says) != std::string::npos);
  }
}

TEST_CASE("comm.bootstrap.id_from_gmi_nccl_id") {
  const auto id = id_with_bytes(7);
  comm::launch_env e;
  e.rank = 1;
  e.world = 2;
  CHECK(comm::bootstrap_id(e, {.id_hex = id.hex(), .rendezvous = ""}, 100ms) == id);
}

TEST_CASE("comm.bootstrap.bad_gmi_nccl_id") {
  comm::launch_env e;
  CHECK_THROWS_WITH_AS(comm::bootstrap_id(e, {.id_hex = "abc", .rendezvous = ""}, 100ms),
                       doctest::Contains("hex characters"), gmi::config_error);
  CHECK_THROWS_WITH_AS(comm::bootstrap_id(e, {.id_hex = std::string(2 * NCCL_UNIQUE_ID_BYTES, 'z'), .rendezvous = ""}, 100ms),
                       doctest::Contains("hex digit"), gmi::config_error);
}

TEST_CASE("comm.bootstrap.neither_id_nor_rendezvous") {
  scoped_env env({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}});
  const auto e = comm::detect_launcher();
  REQUIRE(e.has_value());
  CHECK_THROWS_WITH_AS(comm::bootstrap_id(*e, {}, 100ms), doctest::Contains("NCCL id / rendezvous directory: got \"neither given\""),
                       gmi::config_error);
}

TEST_CASE("comm.bootstrap.rendezvous_file_read_by_other_ranks" * doctest::timeout(30)) {
  const auto dir = fresh_dir();
  scoped_env env({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "5"}, {"SLURM_STEP_ID", "0"},
                  });
  const auto e = comm::detect_launcher();
  REQUIRE(e.has_value());
  // What rank 0 writes (write, then rename): the id in hex under a name keyed by launcher and job.
  const auto id = id_with_bytes(40);
  const auto file = dir / "gmi-nccl-id-slurm-5.0";
  {
    std::ofstream out(file.string() + ".tmp");
    out << id.hex() << '\n';
  }
  std::filesystem::rename(file.string() + ".tmp", file);
  CHECK(comm::bootstrap_id(*e, {.id_hex = "", .rendezvous = dir.string()}, 5s) == id);
  std::filesystem::remove_all(dir);
}

TEST_CASE("comm.bootstrap.rendezvous_file_missing_times_out_naming_it" * doctest::timeout(30)) {
  const auto dir = fresh_dir();
  scoped_env env({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_MCA_ess_base_jobid", "77"}});
  const auto e = comm::detect_launcher();
  REQUIRE(e.has_value());
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(comm::bootstrap_id(*e, {.id_hex = "", .rendezvous = dir.string()}, 200ms), doctest::Contains("gmi-nccl-id-openmpi-77"),
                       gmi::comm_error);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  std::filesystem::remove_all(dir);
}
}

TEST_SUITE("cpu") {
TEST_CASE("comm.lanes.max_ctas") {
  // reducer::lanes' NCCL blocks a lane by default: max(2, 32 / m). Another is the caller's nccl_options.max_ctas,
  // where a negative one is one config_error before NCCL is touched.
  CHECK(comm::lane_max_ctas(1) == 32);
  CHECK(comm::lane_max_ctas(2) == 16);
  CHECK(comm::lane_max_ctas(4) == 8);
  CHECK(comm::lane_max_ctas(8) == 4);
  CHECK(comm::lane_max_ctas(16) == 2);
  CHECK(comm::lane_max_ctas(48) == 2);
  comm::nccl_options bad;
  bad.max_ctas = -1;
  CHECK_THROWS_WITH_AS(comm::nccl_communicator(2, comm::nccl_id{}, 0, bad),
                       "nccl options.max_ctas: got -1, need >= 0 blocks (0: NCCL's default)", gmi::config_error);
}
}
