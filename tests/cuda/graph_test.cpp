// CUDA graph API misuse gives config_error that names the mistake, before any CUDA call is made.
#include <doctest/doctest.h>

#include <string>
#include <utility>

#include <gmi/cuda/graph.hpp>

TEST_SUITE("cpu") {
  TEST_CASE("cuda.graph.legacy_stream_cannot_be_captured") {
    bool ran = false;
    CHECK_THROWS_AS(gmi::cuda::begin_capture(nullptr), gmi::config_error);
    CHECK_THROWS_AS(gmi::cuda::begin_capture(cudaStreamLegacy), gmi::config_error);
    CHECK_THROWS_AS((void)gmi::cuda::end_capture(nullptr), gmi::config_error);
    CHECK_THROWS_AS((void)gmi::cuda::capture(nullptr, [&](cudaStream_t) { ran = true; }), gmi::config_error);
    CHECK_FALSE(ran);
    try {
      gmi::cuda::begin_capture(nullptr);
    } catch (const gmi::config_error& e) {
      CHECK(std::string(e.what()).starts_with("begin_capture: got the legacy default stream, need "));
    }
  }

  TEST_CASE("cuda.graph.empty_handles_refuse_use") {
    gmi::cuda::graph g;
    gmi::cuda::graph_exec x;
    CHECK(g.empty());
    CHECK(x.empty());
    CHECK_FALSE(static_cast<bool>(g));
    CHECK_THROWS_AS((void)gmi::cuda::instantiate(g), gmi::config_error);
    CHECK_THROWS_AS((void)g.node_count(), gmi::config_error);
    CHECK_THROWS_AS(x.launch(nullptr), gmi::config_error);
    CHECK_THROWS_AS(x.upload(nullptr), gmi::config_error);
    CHECK_THROWS_AS((void)x.update(g), gmi::config_error);
    try {
      x.launch(nullptr);
    } catch (const gmi::config_error& e) {
      CHECK(std::string(e.what()) == "graph_exec::launch: got an empty graph_exec, need one from gmi::cuda::instantiate");
    }
  }

  TEST_CASE("cuda.graph.moves_keep_one_owner") {
    gmi::cuda::graph a;
    gmi::cuda::graph b(std::move(a));
    CHECK(a.empty());
    CHECK(b.empty());
    gmi::cuda::graph_exec x;
    gmi::cuda::graph_exec y;
    y = std::move(x);
    CHECK(x.empty());
    CHECK(y.empty());
  }
}
