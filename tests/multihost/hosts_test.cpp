// The pieces of a multi-host run that need no second process: the host's place from launcher variables, its GPU
// share, the host sum (tree order, stop, mismatched calls), and the hosts' agreement on the checkpoint a restart
// resumes from (two threads as two hosts).
#include <doctest/doctest.h>

#include <barrier>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include <gmi/comm/two_level_ids.hpp>
#include <gmi/io/gmi_file.hpp>
#include <gmi/runtime/host_restart.hpp>
#include <gmi/runtime/host_sum.hpp>
#include <gmi/runtime/hosts.hpp>
#include <gmi/runtime/supervisor.hpp>

namespace {
// Sets launcher variables for one scope, removing them afterwards.
struct scoped_env {
  std::vector<std::string> names;
  scoped_env(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [k, v] : vars) {
      ::setenv(k, v, 1);
      names.emplace_back(k);
    }
  }
  ~scoped_env() {
    for (const auto& k : names) ::unsetenv(k.c_str());
  }
};

std::vector<float> random_row(std::mt19937& gen, std::size_t n) {
  std::uniform_real_distribution<float> d(-1e3f, 1e3f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen) * (gen() % 7 == 0 ? 1e-6f : 1.0f);  // mixed scales: the order shows in the bits
  return v;
}
// Two hosts as threads: gather() gives both every host's bytes in host order (both call it the same times).
struct two_host_gather {
  std::barrier<> meet{2};
  std::vector<char> slots[2];
  gmi::runtime::host_gather for_host(int h) {
    return [this, h](const void* mine, void* all, std::size_t bytes) {
      slots[h].assign(static_cast<const char*>(mine), static_cast<const char*>(mine) + bytes);
      meet.arrive_and_wait();
      for (int k = 0; k < 2; ++k) std::memcpy(static_cast<char*>(all) + k * bytes, slots[k].data(), bytes);
      meet.arrive_and_wait();
    };
  }
};

// Global rank r's file of iteration `it`, and (when `manifest`) host h's manifest naming its 2 GMIs' files of it.
void save_gmi_files(const std::filesystem::path& path, int host, std::uint64_t it, bool manifest) {
  gmi::runtime::host_checkpoint_manifest m;
  m.iteration = it;
  m.hosts = 2;
  m.gmis_per_host = 2;
  for (int k = 0; k < 2; ++k) {
    const int rank = host * 2 + k;
    gmi::io::checkpoint ck;
    ck.meta["rank"] = rank;
    ck.meta["iteration"] = it;
    const auto file = gmi::runtime::host_checkpoint_path(path, it, rank);
    gmi::io::save(ck, file);
    const auto crc = gmi::io::read_stored_crc(file);
    m.files.push_back({host, rank, file.filename().string(), crc.bytes, crc.crc32c});
  }
  if (manifest) gmi::runtime::write_host_manifest(m, path.string() + ".host" + std::to_string(host));
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("multihost.hosts_agree_on_the_last_checkpoint_every_host_completed") {
    const auto dir = std::filesystem::temp_directory_path() / ("gmi-agree-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto path = dir / "ck";
    // Both hosts saved iteration 4; host 0 also saved 6, host 1 was lost before its manifest of 6.
    for (int h = 0; h < 2; ++h) save_gmi_files(path, h, 4, true);
    save_gmi_files(path, 0, 6, true);
    save_gmi_files(path, 1, 6, false);
    auto agree = [&](auto&& check) {
      two_host_gather g;
      std::optional<std::uint64_t> got[2];
      std::string error[2];
      std::thread hosts[2];
      for (int h = 0; h < 2; ++h) {
        hosts[h] = std::thread([&, h] {
          try {
            got[h] = gmi::runtime::agree_on_checkpoint(path, {h, 2, 2}, g.for_host(h));
          } catch (const std::exception& e) {
            error[h] = e.what();
          }
        });
      }
      for (auto& t : hosts) t.join();
      check(got, error);
    };
    agree([&](auto& got, auto& error) {
      CHECK(error[0].empty());
      REQUIRE(got[0].has_value());
      REQUIRE(got[1].has_value());
      CHECK(*got[0] == 4);
      CHECK(*got[1] == 4);
    });
    // The manifests now name iteration 4 on both hosts, and the job manifest every file of it.
    CHECK(gmi::runtime::read_host_manifest(path.string() + ".host0").iteration == 4);
    const auto job = gmi::runtime::read_host_manifest(path);
    CHECK(job.iteration == 4);
    REQUIRE(job.files.size() == 4);
    CHECK(gmi::runtime::load_from_hosts(path, 3).meta.at("rank").get<int>() == 3);
    // A damaged file of the agreed iteration: both hosts refuse with the same line, naming the host and the file.
    std::filesystem::resize_file(gmi::runtime::host_checkpoint_path(path, 4, 3), 10);
    agree([&](auto& got, auto& error) {
      CHECK_FALSE(got[0].has_value());
      CHECK(error[0] == error[1]);
      CHECK(error[0].find("on host 1") != std::string::npos);
      CHECK(error[0].find("ck.iter4.gmi3") != std::string::npos);
    });
    // A host without a manifest: the job starts over (no checkpoint on every host).
    std::filesystem::remove(path.string() + ".host1");
    agree([&](auto& got, auto& error) {
      CHECK(error[0].empty());
      CHECK_FALSE(got[0].has_value());
      CHECK_FALSE(got[1].has_value());
    });
    std::filesystem::remove_all(dir);
  }

  TEST_CASE("multihost.host_place_from_openmpi_variables") {
    scoped_env env{{"OMPI_COMM_WORLD_RANK", "1"},       {"OMPI_COMM_WORLD_SIZE", "2"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                   {"OMPI_MCA_ess_base_jobid", "77"}};
    const auto h = gmi::runtime::detect_host();
    CHECK(h.host == 1);
    CHECK(h.hosts == 2);
    CHECK(h.source == "openmpi");
    CHECK(h.id == h.machine + ".1");  // two launchers on one machine: simulated hosts with their own ids
    CHECK(gmi::runtime::detect_host("rack3-node12").id == "rack3-node12");
    CHECK_THROWS_WITH_AS((void)gmi::runtime::detect_host("a/b"),
                         "host id: got \"a/b\", need letters, digits, '.', '_' or '-', at most 48", gmi::config_error);
    CHECK(gmi::runtime::host_gpus(4, h) == std::vector<int>{2, 3});
    CHECK_THROWS_AS((void)gmi::runtime::host_gpus(3, h), gmi::config_error);
  }

  // A GMI process inherits its launcher's launcher variables but is no host of its own (gmi::run's processes).
  TEST_CASE("multihost.a_gmi_process_is_not_a_host") {
    scoped_env env{{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}};
    CHECK(gmi::runtime::job_host().hosts == 2);
    scoped_env gmi{{"GMI_IDENTITY", R"({"rank": 0, "world": 1, "gpu": 0, "slice": 0, "local_device": 0, "gpus": 1,
        "gmis_per_gpu": 1, "device_sms": 0, "run_id": "t", "shm": "/t", "roles": [], "groups": [[0]]})"}};
    const auto h = gmi::runtime::job_host();
    CHECK(h.hosts == 1);
    CHECK(h.source == "none");
  }

  TEST_CASE("multihost.one_launcher_is_one_host") {
    const auto h = gmi::runtime::detect_host();
    CHECK(h.hosts == 1);
    CHECK(h.source == "none");
    CHECK(h.id == h.machine);
    CHECK(gmi::runtime::host_gpus(4, h) == std::vector<int>{0, 1, 2, 3});
    CHECK(gmi::runtime::shm_safe("a b/c") == "a_b_c");
  }

  // With a power of two GMIs a host, the hosts' tree over their sums is the one-host tree over every GMI.
  TEST_CASE("multihost.tree_sum_over_hosts_is_the_one_host_tree") {
    std::mt19937 gen(7);
    const std::size_t n = 257;
    for (const int per_host : {1, 2, 4}) {
      for (const int hosts : {2, 3, 5}) {
        CAPTURE(per_host);
        CAPTURE(hosts);
        std::vector<std::vector<float>> rows;
        for (int r = 0; r < per_host * hosts; ++r) rows.push_back(random_row(gen, n));
        std::vector<const float*> all;
        for (const auto& r : rows) all.push_back(r.data());
        std::vector<float> flat(n);
        gmi::runtime::tree_sum(all, n, flat.data());
        std::vector<std::vector<float>> host_sums(static_cast<std::size_t>(hosts), std::vector<float>(n));
        std::vector<const float*> per;
        for (int h = 0; h < hosts; ++h) {
          std::vector<const float*> mine(all.begin() + h * per_host, all.begin() + (h + 1) * per_host);
          gmi::runtime::tree_sum(mine, n, host_sums[static_cast<std::size_t>(h)].data());
          per.push_back(host_sums[static_cast<std::size_t>(h)].data());
        }
        std::vector<float> two_level(n);
        gmi::runtime::tree_sum(per, n, two_level.data());
        CHECK(two_level == flat);
      }
    }
    // The control: left to right differs from the tree in some bits, so the check above can fail.
    std::vector<std::vector<float>> rows;
    for (int r = 0; r < 6; ++r) rows.push_back(random_row(gen, n));
    std::vector<const float*> all;
    for (const auto& r : rows) all.push_back(r.data());
    std::vector<float> tree(n), serial(rows[0]);
    gmi::runtime::tree_sum(all, n, tree.data());
    for (std::size_t r = 1; r < rows.size(); ++r) {
      for (std::size_t i = 0; i < n; ++i) serial[i] += rows[r][i];
    }
    CHECK(serial != tree);
  }

  // The two-level cross-host sum's NCCL ids (comm/two_level_ids.hpp) travel in one sum over every GMI: 2 hosts x
  // 2 GPUs x 2 GMIs as threads of one host_sum. Each GMI gets its host's id (made by that host's GPU 0 leader) and
  // its GPU's rail id (made by host 0's leader of that GPU), every byte value included.
  TEST_CASE("multihost.two_level_ids_travel_in_one_sum") {
    const gmi::comm::two_level_shape shape{2, 2};
    const int per_gpu = 2, gmis = shape.hosts * shape.gpus * per_gpu;
    const std::size_t bytes = 300;  // past 255: every byte value, 0 and 255 among them
    gmi::runtime::host_sum sums(gmis, 1, {}, std::chrono::milliseconds(5000));
    const auto id_of = [&](int host, int gpu) {  // the bytes GMI (host, gpu, slice 0) makes
      std::vector<char> id(bytes);
      for (std::size_t i = 0; i < bytes; ++i) id[i] = static_cast<char>((i + 97 * (host * shape.gpus + gpu)) & 255);
      return id;
    };
    std::vector<std::pair<std::vector<char>, std::vector<char>>> got(static_cast<std::size_t>(gmis));
    std::vector<int> made(static_cast<std::size_t>(gmis), 0);
    std::vector<std::thread> threads;
    for (int g = 0; g < gmis; ++g) {
      threads.emplace_back([&, g] {
        const int host = g / (shape.gpus * per_gpu), gpu = g / per_gpu % shape.gpus;
        const bool leader = g % per_gpu == 0;
        const auto make = [&](char* out) {
          ++made[static_cast<std::size_t>(g)];
          const std::vector<char> id = id_of(host, gpu);
          std::memcpy(out, id.data(), bytes);
        };
        const auto sum = [&](double* v, std::size_t n) { sums.sum(g, v, n, [] { return false; }); };
        got[static_cast<std::size_t>(g)] =
            gmi::comm::exchange_two_level_id_bytes(shape, host, gpu, leader, bytes, make, sum);
      });
    }
    for (auto& t : threads) t.join();
    for (int g = 0; g < gmis; ++g) {
      CAPTURE(g);
      const int host = g / (shape.gpus * per_gpu), gpu = g / per_gpu % shape.gpus;
      CHECK(got[static_cast<std::size_t>(g)].first == id_of(host, 0));
      CHECK(got[static_cast<std::size_t>(g)].second == id_of(0, gpu));
    }
    // Host 0's GPU 0 leader makes its host's id and rail 0's; host 1's GPU 0 leader its host's; host 0's GPU 1
    // leader rail 1's; nobody else makes one.
    CHECK(made == std::vector<int>{2, 0, 1, 0, 1, 0, 0, 0});
    // A slot two GMIs wrote is refused in one line.
    std::vector<double> slots(2 * 4, 0.0);
    slots[5] = 300;
    std::vector<char> back(4);
    CHECK_THROWS_WITH_AS(gmi::comm::unpack_id_bytes(slots, 1, back.data(), 4),
                         doctest::Contains("summed id byte 1 of slot 1: got 300"), gmi::config_error);
  }

  TEST_CASE("multihost.host_sum_threads_and_a_cross_step") {
    const int gmis = 3;
    std::size_t cross_calls = 0;
    // A stand-in for the link: a second host whose sum is always 1000 per element.
    gmi::runtime::host_sum sums(gmis, 2,
                                [&](const void* mine, void* all, std::size_t bytes, const std::function<bool()>&) {
                                  ++cross_calls;
                                  std::memcpy(all, mine, bytes);
                                  std::vector<double> other(bytes / sizeof(double), 1000.0);
                                  std::memcpy(static_cast<char*>(all) + bytes, other.data(), bytes);
                                },
                                std::chrono::milliseconds(5000));
    std::vector<std::vector<double>> data(gmis);
    std::vector<std::thread> threads;
    for (int g = 0; g < gmis; ++g) {
      data[static_cast<std::size_t>(g)] = {double(g + 1), double(10 * (g + 1))};
      threads.emplace_back([&, g] {
        for (int round = 0; round < 2; ++round) {
          auto& d = data[static_cast<std::size_t>(g)];
          sums.sum(g, d.data(), d.size(), [] { return false; });
        }
      });
    }
    for (auto& t : threads) t.join();
    // Round 1: 1+2+3 + 1000, 10+20+30 + 1000; round 2: three times that, plus 1000.
    for (const auto& d : data) CHECK(d == std::vector<double>{3 * 1006.0 + 1000, 3 * 1060.0 + 1000});
    CHECK(cross_calls == 2);
  }

  TEST_CASE("multihost.host_sum_refuses_and_stops") {
    gmi::runtime::host_sum sums(2, 1, {}, std::chrono::milliseconds(200));
    std::vector<float> a(4, 1.0f);
    // GMI 1 never comes: the wait is bounded, and the group stays broken for everyone afterwards.
    CHECK_THROWS_AS(sums.sum(0, a.data(), a.size(), [] { return false; }), gmi::comm_error);
    CHECK_THROWS_AS(sums.sum(1, a.data(), a.size(), [] { return false; }), gmi::comm_error);

    gmi::runtime::host_sum stopped(2, 1, {}, std::chrono::milliseconds(60000));
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH_AS(stopped.sum(0, a.data(), a.size(), [] { return true; }),
                         "host sum: the run is being torn down", gmi::comm_error);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));

    gmi::runtime::host_sum mismatched(2, 1, {}, std::chrono::milliseconds(5000));
    std::vector<float> b(5, 1.0f);
    std::thread other([&] { CHECK_THROWS_AS(mismatched.sum(1, b.data(), b.size(), [] { return false; }), gmi::comm_error); });
    CHECK_THROWS_AS(mismatched.sum(0, a.data(), a.size(), [] { return false; }), gmi::comm_error);
    other.join();
  }

  // Simulated hosts on one machine share no /dev/shm names: each run's segment carries its host's id, and its
  // GMIs name their host and global rank.
  TEST_CASE("multihost.segment_and_names_carry_the_host") {
    gmi::runtime::launch_spec spec = gmi::runtime::launch_spec::uniform(0, 2);
    spec.host = 1;
    spec.host_name = "node7.1";
    spec.first_rank = 2;
    spec.global_world = 4;
    spec.run_tag = "h" + gmi::runtime::shm_safe("node7.1") + "-";
    std::vector<std::string> described(2);
    std::vector<int> global(2);
    gmi::runtime::thread_group group(spec, [&](gmi::runtime::context& ctx) {
      described[static_cast<std::size_t>(ctx.rank())] = ctx.id().describe();
      global[static_cast<std::size_t>(ctx.rank())] = ctx.id().global_rank();
    });
    CHECK(group.shm_name().find("-hnode7.1-") != std::string::npos);
    CHECK(group.wait().ok());
    CHECK(described[1] == "GMI 3 (host 1 'node7.1', host, slice 1)");
    CHECK(global == std::vector<int>{2, 3});
    // The identity travels to GMI processes with its host fields.
    const auto env = gmi::runtime::to_env(spec.identity_of(1, "r", "/s"));
    ::setenv(env[0].first.c_str(), env[0].second.c_str(), 1);
    const auto back = gmi::runtime::this_gmi();
    ::unsetenv(env[0].first.c_str());
    REQUIRE(back);
    CHECK(back->describe() == "GMI 3 (host 1 'node7.1', host, slice 1)");
    CHECK(back->global_size() == 4);
  }
}
