#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <gmi/io/gmi_file.hpp>
#include <gmi/io/safetensors.hpp>
#include <string>
#include <vector>

#include "temp_dir.hpp"

namespace {

namespace io = gmi::io;

io::checkpoint weights() {
  io::checkpoint ck;
  ck.add_u8("policy.mask", std::vector<std::uint8_t>{1, 0, 1});  // odd size first: export must realign the rest
  std::vector<float> w(6);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) * 0.5f - 1.0f;
  ck.add("policy.w", w, {2, 3});
  ck.add_f64("policy.log_std", std::vector<double>{-0.5, -0.25});
  ck.add_i32("policy.ids", std::vector<std::int32_t>{-7, 7, 0});
  ck.add_i64("value.steps", std::vector<std::int64_t>{-1});
  ck.add_u32("value.bins", std::vector<std::uint32_t>{1, 2, 3, 4, 5});
  ck.add_u64("rng.block", std::vector<std::uint64_t>{9, 10});
  ck.add_scalar<float>("policy.temperature", 1.25f);
  ck.add_f32("policy.empty", std::vector<float>{});
  ck.meta["iteration"] = 12;
  ck.meta["task"] = "cartpole";
  ck.meta["config"] = {{"lr", 0.5}};
  return ck;
}

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

std::vector<unsigned char> bytes_of(std::string_view text) { return {text.begin(), text.end()}; }

}  // namespace

TEST_SUITE("cpu") {
  // Reads the file as the safetensors spec describes it, independently of load_safetensors.
  TEST_CASE("checkpoint.safetensors.header_and_data_follow_the_format") {
    gmi_test::temp_dir dir;
    const io::checkpoint ck = weights();
    io::export_safetensors(ck, dir / "w.safetensors");
    CHECK(dir.entries() == std::vector<std::string>{"w.safetensors"});

    const std::vector<unsigned char> file = gmi_test::read_bytes(dir / "w.safetensors");
    REQUIRE(file.size() >= 8);
    std::uint64_t n = 0;
    std::memcpy(&n, file.data(), 8);
    CHECK(n % 8 == 0);
    REQUIRE(8 + n <= file.size());
    const std::string header_text(file.begin() + 8, file.begin() + 8 + static_cast<long>(n));
    CHECK(header_text.front() == '{');                                   // the reference reader insists on it
    CHECK(header_text.find_last_not_of(' ') == header_text.rfind('}'));  // padding is spaces only
    const auto header = nlohmann::ordered_json::parse(header_text);
    const std::size_t data = 8 + n;

    const auto& metadata = header.at("__metadata__");
    CHECK(metadata.at("format") == "pt");
    CHECK(metadata.at("iteration") == "12");
    CHECK(metadata.at("task") == "cartpole");
    CHECK(metadata.at("config") == R"({"lr":0.5})");
    for (const auto& [key, value] : metadata.items()) CHECK(value.is_string());

    std::uint64_t expected_begin = 0;
    std::size_t seen = 0;
    std::size_t last_width = 8;
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") continue;
      CAPTURE(name);
      ++seen;
      const io::tensor& t = ck.at(name);
      CHECK(entry.at("dtype") == std::string(io::safetensors_name_of(t.type)));
      CHECK(entry.at("shape").get<io::tensor_shape>() == t.shape);
      const auto offsets = entry.at("data_offsets").get<std::vector<std::uint64_t>>();
      REQUIRE(offsets.size() == 2);
      CHECK(offsets[0] == expected_begin);  // contiguous in header order, no holes
      CHECK(offsets[1] - offsets[0] == t.bytes.size());
      CHECK((data + offsets[0]) % io::size_of(t.type) == 0);  // every tensor aligned to its element size
      CHECK(io::size_of(t.type) <= last_width);
      last_width = io::size_of(t.type);
      REQUIRE(data + offsets[1] <= file.size());
      CHECK(std::memcmp(file.data() + data + offsets[0], t.bytes.data(), t.bytes.size()) == 0);
      expected_begin = offsets[1];
    }
    CHECK(seen == ck.tensors().size());
    CHECK(data + expected_begin == file.size());  // the data section ends with the last tensor
  }

  TEST_CASE("checkpoint.safetensors.load_safetensors_reads_back_the_export") {
    gmi_test::temp_dir dir;
    const io::checkpoint ck = weights();
    io::export_safetensors(ck, dir / "w.safetensors");
    const io::checkpoint back = io::load_safetensors(dir / "w.safetensors");
    CHECK(back.tensors().size() == ck.tensors().size());
    for (const io::tensor& t : ck.tensors()) {
      CAPTURE(t.name);
      REQUIRE(back.contains(t.name));
      CHECK(back.at(t.name) == t);
    }
    CHECK(back.get_scalar<float>("policy.temperature") == 1.25f);
    CHECK(back.meta.at("iteration") == "12");  // safetensors metadata holds strings only
    CHECK(back.meta.at("format") == "pt");
    CHECK(back.origin() == (dir / "w.safetensors").string());
  }

  TEST_CASE("checkpoint.safetensors.filter_selects_tensors") {
    gmi_test::temp_dir dir;
    const io::checkpoint ck = weights();
    io::export_safetensors(ck, dir / "policy.safetensors", io::names_starting_with({"policy.w", "policy.log_std"}));
    const io::checkpoint back = io::load_safetensors(dir / "policy.safetensors");
    REQUIRE(back.tensors().size() == 2);
    CHECK(back.tensors()[0].name == "policy.log_std");  // f64 before f32: widest first
    CHECK(back.tensors()[1].name == "policy.w");
    CHECK(back.get_f32("policy.w", 6) == ck.get_f32("policy.w"));

    io::export_safetensors(ck, dir / "none.safetensors", [](std::string_view) { return false; });
    CHECK(io::load_safetensors(dir / "none.safetensors").tensors().empty());
  }

  // Byte strings from the safetensors project's own Python tests (bindings/python/tests/test_simple.py): files
  // written by the reference implementation, unpadded and padded headers, metadata first.
  TEST_CASE("checkpoint.safetensors.reads_files_of_the_reference_implementation") {
    gmi_test::temp_dir dir;
    const std::string header = R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})";
    REQUIRE(header.size() == 0x3c);
    std::vector<unsigned char> file = {0x3c, 0, 0, 0, 0, 0, 0, 0};
    file.insert(file.end(), header.begin(), header.end());
    for (std::int32_t v : {1, 2, 3, 4}) {
      const auto* p = reinterpret_cast<const unsigned char*>(&v);
      file.insert(file.end(), p, p + 4);
    }
    gmi_test::write_bytes(dir / "simple.safetensors", file);
    const io::checkpoint simple = io::load_safetensors(dir / "simple.safetensors");
    CHECK(simple.get_i32("test", 4) == std::vector<std::int32_t>{1, 2, 3, 4});
    CHECK(simple.at("test").shape == io::tensor_shape{2, 2});

    const std::string with_meta =
        R"({"__metadata__":{"framework":"pt"},"test1":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})"
        "       ";
    REQUIRE(with_meta.size() == 0x66);
    file = {0x66, 0, 0, 0, 0, 0, 0, 0};
    file.insert(file.end(), with_meta.begin(), with_meta.end());
    file.resize(file.size() + 16, 0);
    gmi_test::write_bytes(dir / "meta.safetensors", file);
    const io::checkpoint meta = io::load_safetensors(dir / "meta.safetensors");
    CHECK(meta.get_i32("test1") == std::vector<std::int32_t>(4, 0));
    CHECK(meta.meta.at("framework") == "pt");
  }

  TEST_CASE("checkpoint.safetensors.refuses_damaged_files") {
    gmi_test::temp_dir dir;
    const auto path = dir / "bad.safetensors";
    const auto write_with_header = [&](const std::string& header, std::size_t data_bytes) {
      std::vector<unsigned char> file(8);
      const std::uint64_t n = header.size();
      std::memcpy(file.data(), &n, 8);
      file.insert(file.end(), header.begin(), header.end());
      file.resize(file.size() + data_bytes, 0);
      gmi_test::write_bytes(path, file);
    };

    gmi_test::write_bytes(path, bytes_of("abc"));
    CHECK(contains(config_error_of([&] { (void)io::load_safetensors(path); }),
                   "safetensors \"" + path.string() + "\": file is 3 bytes, need at least 8"));

    io::export_safetensors(weights(), dir / "good.safetensors");
    std::vector<unsigned char> good = gmi_test::read_bytes(dir / "good.safetensors");
    std::uint64_t n = 0;
    std::memcpy(&n, good.data(), 8);
    gmi_test::write_bytes(path, {good.begin(), good.begin() + static_cast<long>(n / 2)});
    CHECK(contains(config_error_of([&] { (void)io::load_safetensors(path); }), "the file is truncated"));
    gmi_test::write_bytes(path, {good.begin(), good.end() - 3});
    CHECK(contains(config_error_of([&] { (void)io::load_safetensors(path); }), "out of range"));

    write_with_header(R"({"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})", 4);
    CHECK(contains(config_error_of([&] { (void)io::load_safetensors(path); }),
                   "tensor \"a\" dtype: got \"BF16\", need one of F32 F64 I32 I64 U32 U64 U8"));
    write_with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4);
    CHECK(contains(config_error_of([&] { (void)io::load_safetensors(path); }),
                   "bytes: got 4, need 8 (shape [2] of f32)"));
    write_with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4);
    CHECK(contains(config_error_of([&] { (void)io::load_safetensors(path); }),
                   "tensor \"a\": data_offsets [0,8] out of range"));
    write_with_header(R"({"a":)", 0);
    CHECK(contains(config_error_of([&] { (void)io::load_safetensors(path); }), "header is not valid JSON"));
    write_with_header(R"({"__metadata__":{"k":1}})", 0);
    CHECK(contains(config_error_of([&] { (void)io::load_safetensors(path); }), "header does not describe tensors"));
  }
}
