#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <gmi/core/rng.hpp>
#include <gmi/io/gmi_file.hpp>
#include <gmi/io/safetensors.hpp>
#include <limits>
#include <string>
#include <vector>

#include "temp_dir.hpp"

namespace {

namespace io = gmi::io;

// A checkpoint with tensors of every dtype, odd sizes (so padding is exercised), a scalar, an empty tensor and
// nested meta.
io::checkpoint sample_checkpoint() {
  io::checkpoint ck;
  std::vector<float> params(1250);
  for (std::size_t i = 0; i < params.size(); ++i) params[i] = 0.001f * static_cast<float>(i) - 0.5f;
  params[3] = std::numeric_limits<float>::quiet_NaN();
  params[4] = -0.0f;
  ck.add("policy.params", params, {25, 50});
  ck.add_f64("obs_norm.mean", std::vector<double>{1.5, -2.25, 1e300});
  ck.add_i32("buffer.actions", std::vector<std::int32_t>{-1, 0, 7, std::numeric_limits<std::int32_t>::min(), 5});
  ck.add_i64("episode.lengths", std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::max(), -3});
  ck.add_u32("env.seeds", std::vector<std::uint32_t>{0xDEADBEEFu});
  ck.add_u64("rng.block", std::vector<std::uint64_t>{0, 1, 0xFFFFFFFFFFFFFFFFull, 42}, {2, 2});
  ck.add_u8("env.done", std::vector<std::uint8_t>{1, 0, 1});
  ck.add_scalar<std::uint64_t>("env_steps", 123456789012ull);
  ck.add_f32("empty", std::vector<float>{});
  ck.meta["iteration"] = 12;
  ck.meta["env_steps"] = 123456789012ull;
  ck.meta["task"] = "cartpole";
  ck.meta["git_revision"] = "8b405c4";
  ck.meta["config"] = {{"lr", 3e-4}, {"num_envs", 4096}, {"hidden", {64, 64}}};
  return ck;
}

// The message of the config_error that f throws; fails the test when it throws nothing or something else.
template <class F>
std::string config_error_of(F&& f) {
  try {
    f();
  } catch (const gmi::config_error& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("threw something other than gmi::config_error: " << e.what());
  }
  FAIL("did not throw");
  return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::uint64_t u64_at(const std::vector<unsigned char>& b, std::size_t at) {
  std::uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

// Writes preamble + header text + payload + a correct CRC: a file that passes every check up to the JSON, for
// testing what load() does with a header it can not trust.
void write_crafted(const std::filesystem::path& path, std::string header, const std::vector<unsigned char>& payload) {
  while (header.size() % 8 != 0) header += ' ';
  std::vector<unsigned char> file(32);
  std::memcpy(file.data(), "GMICKPT", 8);
  const std::uint32_t version = 1;
  std::memcpy(file.data() + 8, &version, 4);
  const std::uint64_t header_bytes = header.size();
  const std::uint64_t file_bytes = 32 + header.size() + payload.size() + 4;
  std::memcpy(file.data() + 16, &header_bytes, 8);
  std::memcpy(file.data() + 24, &file_bytes, 8);
  file.insert(file.end(), header.begin(), header.end());
  file.insert(file.end(), payload.begin(), payload.end());
  const std::uint32_t crc = gmi::io::crc32c_of(file.data(), file.size());
  file.resize(file.size() + 4);
  std::memcpy(file.data() + file.size() - 4, &crc, 4);
  gmi_test::write_bytes(path, file);
}

// A toy trainer with every kind of state a real one has: parameters, Adam moments, a running observation
// normalizer, per-env RNG streams and counters. It fits w to a noisy linear target; loss() is its curve.
struct toy_trainer {
  static constexpr std::size_t dim = 8, envs = 4;
  std::vector<float> w = std::vector<float>(dim, 0.0f), m = std::vector<float>(dim, 0.0f),
                     v = std::vector<float>(dim, 0.0f);
  std::vector<double> obs_mean = std::vector<double>(dim, 0.0);
  std::vector<std::uint64_t> rng_block = std::vector<std::uint64_t>(envs, 0);
  std::uint64_t iteration = 0;
  std::uint64_t seed = 7;

  float step() {
    std::vector<float> grad(dim, 0.0f);
    float loss = 0;
    for (std::size_t e = 0; e < envs; ++e) {
      gmi::rng r(seed, e, rng_block[e]);
      std::vector<float> x(dim);
      for (std::size_t i = 0; i < dim; i += 4) {
        const gmi::u32x4 block = r.next_block();  // whole blocks, so block() is an exact resume point
        for (std::size_t k = 0; k < 4; ++k) x[i + k] = gmi::u32_to_unit(block.v[k]) * 2.0f - 1.0f;
      }
      rng_block[e] = r.block();
      float pred = 0, target = 0;
      for (std::size_t i = 0; i < dim; ++i) {
        obs_mean[i] += (x[i] - obs_mean[i]) / static_cast<double>(iteration * envs + e + 1);
        const float xn = x[i] - static_cast<float>(obs_mean[i]);
        pred += w[i] * xn;
        target += static_cast<float>(i + 1) * 0.1f * xn;
      }
      const float err = pred - target;
      loss += err * err / envs;
      for (std::size_t i = 0; i < dim; ++i) grad[i] += 2 * err * (x[i] - static_cast<float>(obs_mean[i])) / envs;
    }
    ++iteration;
    const float b1 = 0.9f, b2 = 0.999f, lr = 0.05f;
    for (std::size_t i = 0; i < dim; ++i) {
      m[i] = b1 * m[i] + (1 - b1) * grad[i];
      v[i] = b2 * v[i] + (1 - b2) * grad[i] * grad[i];
      const float mh = m[i] / (1 - std::pow(b1, static_cast<float>(iteration)));
      const float vh = v[i] / (1 - std::pow(b2, static_cast<float>(iteration)));
      w[i] -= lr * mh / (std::sqrt(vh) + 1e-8f);
    }
    return loss;
  }

  [[nodiscard]] io::checkpoint to_checkpoint() const {
    io::checkpoint ck;
    ck.add("policy.w", w);
    ck.add("optim.m", m);
    ck.add("optim.v", v);
    ck.add("obs_norm.mean", obs_mean);
    ck.add("rng.block", rng_block);
    ck.meta["iteration"] = iteration;
    ck.meta["seed"] = seed;
    return ck;
  }

  void restore(const io::checkpoint& ck) {
    ck.get_into("policy.w", gmi::host_span<float>(w.data(), w.size()), "the toy network");
    ck.get_into("optim.m", gmi::host_span<float>(m.data(), m.size()));
    ck.get_into("optim.v", gmi::host_span<float>(v.data(), v.size()));
    ck.get_into("obs_norm.mean", gmi::host_span<double>(obs_mean.data(), obs_mean.size()));
    ck.get_into("rng.block", gmi::host_span<std::uint64_t>(rng_block.data(), rng_block.size()));
    iteration = ck.meta.at("iteration").get<std::uint64_t>();
    seed = ck.meta.at("seed").get<std::uint64_t>();
  }
};

}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("checkpoint.roundtrip.restores_every_tensor") {
    gmi_test::temp_dir dir;
    const io::checkpoint ck = sample_checkpoint();
    io::save(ck, dir / "last.gmi");
    const io::checkpoint back = io::load(dir / "last.gmi");

    CHECK(back == ck);  // names, order, dtypes, shapes, bytes (NaN and -0 included) and meta
    REQUIRE(back.tensors().size() == ck.tensors().size());
    for (std::size_t i = 0; i < ck.tensors().size(); ++i) CHECK(back.tensors()[i].name == ck.tensors()[i].name);
    CHECK(back.origin() == (dir / "last.gmi").string());
    CHECK(back.at("policy.params").shape == io::tensor_shape{25, 50});
    CHECK(back.at("env_steps").shape.empty());
    CHECK(back.get_scalar<std::uint64_t>("env_steps") == 123456789012ull);
    CHECK(back.get_f64("obs_norm.mean") == std::vector<double>{1.5, -2.25, 1e300});
    CHECK(back.get_i32("buffer.actions")[3] == std::numeric_limits<std::int32_t>::min());
    CHECK(back.get_i64("episode.lengths")[0] == std::numeric_limits<std::int64_t>::max());
    CHECK(back.get_u32("env.seeds") == std::vector<std::uint32_t>{0xDEADBEEFu});
    CHECK(back.get_u64("rng.block", 4)[2] == 0xFFFFFFFFFFFFFFFFull);
    CHECK(back.get_u8("env.done") == std::vector<std::uint8_t>{1, 0, 1});
    CHECK(back.get_f32("empty").empty());
    const std::vector<float> params = back.get_f32("policy.params", 1250, "the network this program was built with");
    CHECK(std::isnan(params[3]));
    CHECK(std::signbit(params[4]));
    CHECK(back.meta.at("iteration") == 12);
    CHECK(back.meta.at("env_steps").get<std::uint64_t>() == 123456789012ull);
    CHECK(back.meta.at("config").at("hidden") == nlohmann::json{64, 64});
  }

  TEST_CASE("checkpoint.roundtrip.file_layout_matches_the_spec") {
    gmi_test::temp_dir dir;
    const io::checkpoint ck = sample_checkpoint();
    io::save(ck, dir / "a.gmi");
    const std::vector<unsigned char> file = gmi_test::read_bytes(dir / "a.gmi");
    REQUIRE(file.size() >= 36);
    CHECK(std::memcmp(file.data(), "GMICKPT\0", 8) == 0);
    std::uint32_t version = 0;
    std::memcpy(&version, file.data() + 8, 4);
    CHECK(version == 1);
    const std::uint64_t header_bytes = u64_at(file, 16);
    CHECK(header_bytes % 8 == 0);
    CHECK(u64_at(file, 24) == file.size());
    std::uint32_t crc = 0;
    std::memcpy(&crc, file.data() + file.size() - 4, 4);
    CHECK(crc == gmi::io::crc32c_of(file.data(), file.size() - 4));

    const auto header = nlohmann::json::parse(file.begin() + 32, file.begin() + 32 + static_cast<long>(header_bytes));
    CHECK(header.at("format") == "gmi checkpoint");
    CHECK(header.at("meta") == ck.meta);
    const std::size_t payload = 32 + header_bytes;
    REQUIRE(header.at("tensors").size() == ck.tensors().size());
    for (std::size_t i = 0; i < ck.tensors().size(); ++i) {
      const auto& entry = header.at("tensors")[i];
      const io::tensor& t = ck.tensors()[i];
      CAPTURE(t.name);
      CHECK(entry.at("name") == t.name);
      CHECK(entry.at("dtype") == std::string(io::name_of(t.type)));
      CHECK(entry.at("shape").get<io::tensor_shape>() == t.shape);
      const auto offset = entry.at("offset").get<std::size_t>();
      CHECK(offset % 8 == 0);
      CHECK(entry.at("bytes") == t.bytes.size());
      CHECK(std::memcmp(file.data() + payload + offset, t.bytes.data(), t.bytes.size()) == 0);
    }
  }

  TEST_CASE("checkpoint.roundtrip.empty_checkpoint") {
    gmi_test::temp_dir dir;
    io::save(io::checkpoint{}, dir / "empty.gmi");
    const io::checkpoint back = io::load(dir / "empty.gmi");
    CHECK(back.tensors().empty());
    CHECK(back.meta == nlohmann::json::object());
  }

  TEST_CASE("checkpoint.save.replaces_atomically_and_leaves_no_temp_files") {
    gmi_test::temp_dir dir;
    io::checkpoint first = sample_checkpoint();
    io::save(first, dir / "last.gmi");
    CHECK(dir.entries() == std::vector<std::string>{"last.gmi"});

    io::checkpoint second;
    second.add("policy.params", std::vector<float>{1, 2, 3});
    second.meta["iteration"] = 13;
    io::save(second, dir / "last.gmi");
    CHECK(dir.entries() == std::vector<std::string>{"last.gmi"});  // no last.gmi.tmp.<pid> left behind
    const io::checkpoint back = io::load(dir / "last.gmi");
    CHECK(back == second);
    CHECK(!back.contains("obs_norm.mean"));

    // A relative path saves next to the working directory's files too (the directory fsync uses ".").
    const auto cwd = std::filesystem::current_path();
    std::filesystem::current_path(dir.path());
    io::save(second, "relative.gmi");
    std::filesystem::current_path(cwd);
    CHECK(io::load(dir / "relative.gmi") == second);
  }

  TEST_CASE("checkpoint.save.failure_leaves_no_temp_file_and_old_file_intact") {
    gmi_test::temp_dir dir;
    // rename() over a non-empty directory fails after the temp file is fully written.
    std::filesystem::create_directories(dir / "taken" / "inside");
    CHECK_THROWS_AS(io::save(sample_checkpoint(), dir / "taken"), gmi::error);
    CHECK(dir.entries() == std::vector<std::string>{"taken"});

    const std::string message = config_error_of([&] { io::save(sample_checkpoint(), dir / "missing" / "x.gmi"); });
    CHECK(contains(message, (dir / "missing" / "x.gmi").string()));
    CHECK(contains(message, "cannot create"));

    io::checkpoint bad_meta;
    bad_meta.meta = nlohmann::json::array();
    CHECK(contains(config_error_of([&] { io::save(bad_meta, dir / "m.gmi"); }), "meta: got array, need a JSON object"));
    bad_meta.meta = {{"task", std::string("\xFF\xFE")}};  // not UTF-8: refused before anything is written
    CHECK(contains(config_error_of([&] { io::save(bad_meta, dir / "m.gmi"); }), "meta can not be written as JSON"));
    CHECK(dir.entries() == std::vector<std::string>{"taken"});
  }

  TEST_CASE("checkpoint.load.refuses_missing_file_and_directories") {
    gmi_test::temp_dir dir;
    const std::string missing = config_error_of([&] { (void)io::load(dir / "nope.gmi"); });
    CHECK(contains(missing, "checkpoint \"" + (dir / "nope.gmi").string() + "\": cannot open"));
    CHECK(contains(missing, "No such file"));
    CHECK(contains(config_error_of([&] { (void)io::load(dir.path()); }), "not a regular file"));
  }

  TEST_CASE("checkpoint.load.refuses_truncated_file") {
    gmi_test::temp_dir dir;
    io::save(sample_checkpoint(), dir / "full.gmi");
    const std::vector<unsigned char> full = gmi_test::read_bytes(dir / "full.gmi");
    const std::size_t header_bytes = u64_at(full, 16);
    struct cut {
      const char* where;
      std::size_t size;
    };
    const cut cuts[] = {{"empty", 0},
                        {"inside the magic", 5},
                        {"inside the preamble", 20},
                        {"inside the header", 32 + header_bytes / 2},
                        {"at the end of the header", 32 + header_bytes},
                        {"inside the payload", 32 + header_bytes + 100},
                        {"inside the checksum", full.size() - 2},
                        {"without the checksum", full.size() - 4}};
    for (const cut& c : cuts) {
      CAPTURE(c.where);
      const auto path = dir / "cut.gmi";
      gmi_test::write_bytes(path, {full.begin(), full.begin() + static_cast<long>(c.size)});
      const std::string message = config_error_of([&] { (void)io::load(path); });
      CAPTURE(message);
      CHECK(contains(message, "checkpoint \"" + path.string() + "\": file is " + std::to_string(c.size) + " bytes"));
      if (c.size == 0) {
        CHECK(contains(message, "the file is empty"));
      } else {
        CHECK(contains(message, "the file is truncated"));
      }
      if (c.size >= 36) CHECK(contains(message, "header says " + std::to_string(full.size())));
    }
    // Appended bytes are refused as well.
    std::vector<unsigned char> longer = full;
    longer.push_back(0);
    gmi_test::write_bytes(dir / "long.gmi", longer);
    CHECK(contains(config_error_of([&] { (void)io::load(dir / "long.gmi"); }), "extra bytes"));
  }

  TEST_CASE("checkpoint.load.refuses_a_flipped_byte_by_checksum") {
    gmi_test::temp_dir dir;
    io::save(sample_checkpoint(), dir / "good.gmi");
    const std::vector<unsigned char> good = gmi_test::read_bytes(dir / "good.gmi");
    const std::size_t header_bytes = u64_at(good, 16);
    for (std::size_t at : {32 + header_bytes + 17, 32 + header_bytes / 2, good.size() - 5, good.size() - 1}) {
      CAPTURE(at);
      std::vector<unsigned char> bad = good;
      bad[at] ^= 0x10;
      gmi_test::write_bytes(dir / "bad.gmi", bad);
      const std::string message = config_error_of([&] { (void)io::load(dir / "bad.gmi"); });
      CAPTURE(message);
      CHECK(contains(message, "checkpoint \"" + (dir / "bad.gmi").string() + "\": checksum (CRC-32C): got 0x"));
      CHECK(contains(message, "; the file is corrupted"));
    }
  }

  TEST_CASE("checkpoint.load.refuses_wrong_magic_and_version") {
    gmi_test::temp_dir dir;
    gmi_test::write_bytes(dir / "text.gmi", std::vector<unsigned char>(100, 'x'));
    CHECK(contains(config_error_of([&] { (void)io::load(dir / "text.gmi"); }),
                   "not a gmi checkpoint (first bytes got \"xxxxxxxx\", need \"GMICKPT\\x00\")"));
    gmi_test::write_bytes(dir / "short.gmi", {'P', 'K', 3});
    CHECK(contains(config_error_of([&] { (void)io::load(dir / "short.gmi"); }), "not a gmi checkpoint"));

    io::save(sample_checkpoint(), dir / "good.gmi");
    std::vector<unsigned char> file = gmi_test::read_bytes(dir / "good.gmi");
    file[8] = 2;
    gmi_test::write_bytes(dir / "v2.gmi", file);
    CHECK(contains(config_error_of([&] { (void)io::load(dir / "v2.gmi"); }),
                   "format version: got 2, need 1 (the version this build of gmi reads)"));
  }

  TEST_CASE("checkpoint.load.refuses_bad_headers_behind_a_valid_checksum") {
    gmi_test::temp_dir dir;
    const auto path = dir / "crafted.gmi";
    const std::vector<unsigned char> payload(16, 0);

    write_crafted(path, R"({"tensors": [)", payload);
    CHECK(contains(config_error_of([&] { (void)io::load(path); }), "header is not valid JSON"));

    write_crafted(path, R"({"tensors": [{"name": "a", "dtype": "f32", "shape": [4], "offset": 8, "bytes": 16}]})",
                  payload);
    CHECK(contains(config_error_of([&] { (void)io::load(path); }),
                   "header tensor 0 \"a\": bytes [8, 24) out of range, need within the payload's 16 bytes"));

    write_crafted(path, R"({"tensors": [{"name": "a", "dtype": "bf16", "shape": [4], "offset": 0, "bytes": 8}]})",
                  payload);
    CHECK(contains(config_error_of([&] { (void)io::load(path); }), "dtype: got \"bf16\", need one of f32"));

    write_crafted(path, R"({"tensors": [{"name": "a", "dtype": "f32", "shape": [3], "offset": 0, "bytes": 16}]})",
                  payload);
    CHECK(contains(config_error_of([&] { (void)io::load(path); }), "bytes: got 16, need 12 (shape [3] of f32)"));

    write_crafted(path, R"({"tensors": [{"name": "a", "dtype": "f32", "offset": 0, "bytes": 16}]})", payload);
    CHECK(contains(config_error_of([&] { (void)io::load(path); }), "header does not describe tensors"));

    write_crafted(path, R"({"tensors": [], "meta": 3})", payload);
    CHECK(contains(config_error_of([&] { (void)io::load(path); }), "header meta: got number, need a JSON object"));

    write_crafted(path, R"([1, 2])", payload);
    CHECK(contains(config_error_of([&] { (void)io::load(path); }), "need an object with a \"tensors\" array"));

    write_crafted(path, R"({"tensors": [{"name": "a", "dtype": "u8", "shape": [1], "offset": 0, "bytes": 1},
                                        {"name": "a", "dtype": "u8", "shape": [1], "offset": 8, "bytes": 1}]})",
                  payload);
    CHECK(contains(config_error_of([&] { (void)io::load(path); }), "a name not added before"));
  }

  TEST_CASE("checkpoint.get.refuses_wrong_name_dtype_and_size") {
    const io::checkpoint ck = sample_checkpoint();
    CHECK(
        config_error_of([&] { (void)ck.get_f32("policy.params", 1234, "the network this program was built with"); }) ==
        "checkpoint tensor \"policy.params\": got 1250 floats, need 1234 (the network this program was built with)");
    CHECK(config_error_of([&] { (void)ck.get_f64("policy.params"); }) ==
          "checkpoint tensor \"policy.params\" dtype: got f32, need f64");
    CHECK(config_error_of([&] { (void)ck.get_u64("rng.block", 8); }) ==
          "checkpoint tensor \"rng.block\": got 4 uint64s, need 8");
    const std::string missing = config_error_of([&] { (void)ck.get_f32("policy.parms"); });
    CHECK(
        contains(missing, "checkpoint tensor: got \"policy.parms\", need one of the tensors it holds: policy.params,"));
    std::vector<float> small(10);
    CHECK(contains(
        config_error_of([&] { ck.get_into("policy.params", gmi::host_span<float>(small.data(), small.size())); }),
        "got 1250 floats, need 10"));
    CHECK(contains(config_error_of([&] { (void)ck.get_scalar<std::uint8_t>("env.done"); }),
                   "got 3 bytes, need 1 (a scalar)"));

    // Messages of a loaded checkpoint name its file.
    gmi_test::temp_dir dir;
    io::save(ck, dir / "x.gmi");
    const io::checkpoint back = io::load(dir / "x.gmi");
    CHECK(contains(config_error_of([&] { (void)back.get_f32("policy.params", 1); }),
                   "checkpoint tensor \"policy.params\" (in \"" + (dir / "x.gmi").string() + "\"): got 1250 floats"));
  }

  TEST_CASE("checkpoint.add.refuses_bad_shapes_and_names") {
    io::checkpoint ck;
    const std::vector<float> six(6, 1.0f);
    CHECK(config_error_of([&] {
            ck.add("w", six, {2, 4});
          }) ==
          "checkpoint tensor \"w\" shape [2,4]: got 6 values, need a shape whose dimensions multiply to the number of "
          "values");
    ck.add("w", six, {2, 3});
    CHECK(contains(config_error_of([&] { ck.add("w", six); }),
                   "checkpoint tensor name: got \"w\", need a name not added before"));
    CHECK(contains(config_error_of([&] { ck.add("", six); }), "need a non-empty name"));
    CHECK(contains(config_error_of([&] { ck.add("__metadata__", six); }), "safetensors reserves it"));
    CHECK(contains(config_error_of([&] {
                     ck.add(io::tensor{"raw", io::dtype::f64, {2}, std::vector<std::byte>(12)});
                   }),
                   "checkpoint tensor \"raw\" bytes: got 12, need 16 (shape [2] of f64)"));
    CHECK(ck.tensors().size() == 1);
    CHECK(ck.at("w").shape == io::tensor_shape{2, 3});
  }

  TEST_CASE("checkpoint.resume.continues_the_same_curve") {
    gmi_test::temp_dir dir;
    constexpr int total = 30, saved_at = 11;
    toy_trainer straight;
    std::vector<float> curve;
    for (int i = 0; i < total; ++i) curve.push_back(straight.step());
    CHECK(curve.back() < curve.front());  // it learns, so the curve is worth comparing

    std::vector<float> resumed_curve;
    {
      toy_trainer before;
      for (int i = 0; i < saved_at; ++i) resumed_curve.push_back(before.step());
      io::save(before.to_checkpoint(), dir / "resume.gmi");
    }  // the first process ends here
    toy_trainer after;
    after.restore(io::load(dir / "resume.gmi"));
    for (int i = saved_at; i < total; ++i) resumed_curve.push_back(after.step());

    CHECK(resumed_curve == curve);  // bit for bit, not approximately
    CHECK(after.w == straight.w);
    CHECK(after.rng_block == straight.rng_block);
    CHECK(after.iteration == straight.iteration);
  }
}
