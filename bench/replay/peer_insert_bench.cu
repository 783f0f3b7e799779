// Split roles' insert path over 2 GPUs (pipeline/split_channels.hpp, split_paths.hpp; docs/replay.md): an actor GMI
// thread on GPU 1 sends rounds of 64 steps x E environments (obs 108, act 21, reward, done: issue 39's window shape)
// to a learner GMI thread on GPU 0, which inserts each round into its device table. Two paths:
//   gmi_peer  the device transport over peer access: the actor copies the round straight into the learner's channel
//             slot on GPU 0 (one peer copy, channel_options::peer), the insert kernel reads the slot there;
//   gmi_host  host messages, as the split roles' host transport: the actor downloads the round into host memory and
//             sends it as a message (runtime context), the learner uploads it and runs the insert kernel.
// Both keep at most 4 rounds in flight (the channel's slots; a credit message a round on the host path). Rounds/s at
// the learner, from the end of one rep's rounds to the next (its stream waited for), after warm-up rounds; median,
// min, max over the reps; one JSON line per impl. Each impl also checks that its table ends holding the rounds' bits
// (the table holds 256 rounds: the sum of its obs column's bit patterns against the round's times the rounds held).
#include <gmi/comm/channel.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/replay/device_table.cuh>
#include <gmi/runtime/launcher.hpp>
#include <gmi/runtime/supervisor.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr std::size_t steps = 64;
constexpr std::array<std::size_t, 4> widths{108, 21, 1, 1};  // obs, act, reward, done
constexpr std::size_t row_floats = 131;
constexpr int in_flight = 4;

std::string g_run_id = "local", g_device = "unknown", g_git = GMI_GIT_REVISION;
std::ofstream g_file;

struct result {
  std::vector<double> rounds_per_s;
  std::uint64_t sent_bits = 0, table_bits = 0;  // sums of the obs words' bit patterns (order-free, exact)
};

gmi::replay::table_spec spec_for(std::size_t capacity) {
  gmi::replay::table_spec s;
  s.columns = {gmi::replay::column{"obs", 108}, gmi::replay::column{"act", 21}, gmi::replay::column{"reward", 1},
               gmi::replay::column{"done", 1}};
  s.capacity = capacity;
  s.device_capacity = capacity;
  s.done_column = "done";
  return s;
}

// A round laid out column after column ([steps][envs][width] each), values from a Philox stream, done about once
// in 200 steps.
std::vector<float> make_round(std::size_t envs) {
  const std::size_t n = steps * envs;
  std::vector<float> r(n * row_floats);
  gmi::rng g(7, 0);
  for (auto& v : r) v = g.uniform();
  for (std::size_t i = 0; i < n; ++i) r[n * 130 + i] = r[n * 130 + i] < 0.005f ? 1.0f : 0.0f;
  return r;
}

gmi::replay::rollout columns_of(const float* d, std::size_t envs) {
  const std::size_t n = steps * envs;
  gmi::replay::rollout ro;
  ro.horizon = steps;
  ro.envs = envs;
  std::size_t off = 0;
  for (std::size_t w : widths) {
    ro.columns.push_back(d + off);
    off += n * w;
  }
  return ro;
}

result run(bool peer, std::size_t envs, int rounds, int reps, int warmup) {
  const std::size_t n = steps * envs;
  const std::size_t round_floats = n * row_floats;
  const int total = warmup + rounds * reps;
  gmi::comm::channel_options o;
  o.tag = gmi::comm::unique_tag("bench-peer");
  o.record_bytes = std::uint32_t(row_floats * sizeof(float));
  o.package_steps = std::uint32_t(steps);
  o.package_envs = std::uint32_t(envs);
  o.slots = in_flight;
  o.placement = gmi::comm::payload_placement::device;
  o.across_processes = false;
  o.peer = true;
  o.timeout = std::chrono::seconds(60);
  const std::vector<float> host_round = make_round(envs);
  result out;
  const std::size_t capacity = n * 256;  // whole rounds: FIFO eviction leaves exactly the last 256
  std::uint64_t round_bits = 0;
  for (std::size_t i = 0; i < n * widths[0]; ++i) {
    std::uint32_t u;
    std::memcpy(&u, &host_round[i], 4);
    round_bits += u;
  }
  out.sent_bits = round_bits * std::uint64_t(std::min(total, 256));
  gmi::runtime::launch_spec ls = gmi::runtime::launch_spec::uniform(1, 2);
  ls.heartbeat_timeout = std::chrono::milliseconds(0);  // a table of 0.5 GB and two CUDA contexts start slowly; the
                                                        // device script bounds the run with timeout
  gmi::runtime::thread_group g(std::move(ls), [&](gmi::runtime::context& ctx) {
    if (ctx.rank() == 1) {  // the actor, GPU 1
      GMI_CUDA_TRY(cudaSetDevice(1));
      gmi::cuda::stream s;
      gmi::cuda::device_buffer<float> round(round_floats);
      GMI_CUDA_TRY(cudaMemcpy(round.data(), host_round.data(), round_floats * sizeof(float), cudaMemcpyHostToDevice));
      if (peer) {
        gmi::comm::channel_producer prod(o, 0, s.get());
        for (int r = 0; r < total; ++r) prod.send(round.data(), std::uint32_t(steps), std::uint32_t(envs));
        prod.close();
        return;
      }
      std::vector<float> staged(round_floats);
      for (int r = 0; r < total; ++r) {
        if (r >= in_flight) (void)ctx.recv(0);  // a credit: the learner has inserted round r - in_flight
        GMI_CUDA_TRY(cudaMemcpyAsync(staged.data(), round.data(), round_floats * sizeof(float), cudaMemcpyDeviceToHost,
                                     s.get()));
        GMI_CUDA_TRY(cudaStreamSynchronize(s.get()));
        ctx.send(std::span<const float>(staged.data(), staged.size()), 0);
      }
      for (int r = std::max(0, total - in_flight); r < total; ++r) (void)ctx.recv(0);
      return;
    }
    GMI_CUDA_TRY(cudaSetDevice(0));  // the learner, GPU 0
    gmi::replay::device_table table(spec_for(capacity));
    auto w = table.make_writer(envs);
    std::optional<gmi::comm::channel_consumer> cons;
    if (peer) cons.emplace(o, 0, 1, table.stream());
    gmi::cuda::device_buffer<float> uploaded(peer ? 1 : round_floats);
    auto mark = std::chrono::steady_clock::now();
    for (int r = 0; r < total; ++r) {
      if (r >= warmup && (r - warmup) % rounds == 0) {
        GMI_CUDA_TRY(cudaStreamSynchronize(table.stream()));
        const auto now = std::chrono::steady_clock::now();
        if (r > warmup) out.rounds_per_s.push_back(rounds / std::chrono::duration<double>(now - mark).count());
        mark = now;
      }
      if (peer) {
        std::optional<gmi::comm::experience_batch> b = cons->next_batch();
        gmi::require(b.has_value() && b->bytes() == round_floats * sizeof(float), "bench peer round bytes",
                     b ? b->bytes() : 0, std::to_string(round_floats * sizeof(float)));
        table.insert(w, columns_of(b->as<float>(), envs));
        b.reset();  // the slot goes back after the insert (an event on the table's stream)
      } else {
        const std::vector<std::byte> m = ctx.recv(1);
        gmi::require(m.size() == round_floats * sizeof(float), "bench host round bytes", m.size(),
                     std::to_string(round_floats * sizeof(float)));
        GMI_CUDA_TRY(cudaMemcpyAsync(uploaded.data(), m.data(), m.size(), cudaMemcpyHostToDevice, table.stream()));
        table.insert(w, columns_of(uploaded.data(), envs));
        GMI_CUDA_TRY(cudaStreamSynchronize(table.stream()));  // the message's memory and the staging are reused
        ctx.send(std::span<const std::byte>(m.data(), 1), 1);
      }
    }
    GMI_CUDA_TRY(cudaStreamSynchronize(table.stream()));
    out.rounds_per_s.push_back(rounds / std::chrono::duration<double>(std::chrono::steady_clock::now() - mark).count());
    if (peer) (void)cons->next_batch();  // the end of the actor's stream
    const auto snap = table.take_snapshot();
    for (std::size_t slot = 0; slot < capacity; ++slot) {  // occupied slots only (an empty one's trajectory is -1)
      if (snap.traj[slot] < 0) continue;
      for (std::size_t k = 0; k < widths[0]; ++k) out.table_bits += snap.columns[0][slot * widths[0] + k];
    }
  });
  (void)g.wait_or_throw();
  return out;
}

void emit(const char* impl, const result& r, std::size_t envs) {
  std::vector<double> v = r.rounds_per_s;
  std::sort(v.begin(), v.end());
  const double bytes = double(steps * envs * row_floats * sizeof(float));
  char line[1024];
  std::snprintf(line, sizeof line,
                "{\"bench\": \"replay\", \"case\": \"peer_insert\", \"impl\": \"%s\", \"metric\": \"rounds_per_s\", "
                "\"median\": %.6g, \"min\": %.6g, \"max\": %.6g, \"reps\": %zu, \"steps\": %zu, \"envs\": %zu, "
                "\"obs\": 108, \"act\": 21, \"round_bytes\": %.0f, \"gbytes_per_s\": %.4g, \"items_match\": %s, "
                "\"device\": \"%s\", \"git\": \"%s\", \"run_id\": \"%s\"}",
                impl, v[v.size() / 2], v.front(), v.back(), v.size(), steps, envs, bytes, v[v.size() / 2] * bytes / 1e9,
                r.sent_bits == r.table_bits ? "true" : "false", g_device.c_str(), g_git.c_str(), g_run_id.c_str());
  std::puts(line);
  std::fflush(stdout);
  if (g_file) g_file << line << '\n' << std::flush;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t envs = 64;
  int rounds = 200, reps = 5, warmup = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--run-id") g_run_id = v;
    else if (k == "--device") g_device = v;
    else if (k == "--git") g_git = v;
    else if (k == "--out") g_file.open(v, std::ios::app);
    else if (k == "--envs") envs = std::stoul(v);
    else if (k == "--rounds") rounds = std::stoi(v);
    else if (k == "--reps") reps = std::stoi(v);
    else {
      std::fprintf(stderr, "gmi.bench.replay_peer: unknown flag %s: got it, need one of --run-id --device --git --out "
                           "--envs --rounds --reps\n", k.c_str());
      return 2;
    }
  }
  if (envs < 1 || envs > 4096 || rounds < 1 || reps < 1) {
    std::fprintf(stderr, "gmi.bench.replay_peer: --envs %zu --rounds %d --reps %d: need envs 1..4096, rounds and reps >= 1\n",
                 envs, rounds, reps);
    return 2;
  }
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus < 2) {
    std::fprintf(stderr, "gmi.bench.replay_peer: got %d GPUs, need 2 or more\n", gpus);
    return 2;
  }
  int reach = 0;
  GMI_CUDA_TRY(cudaDeviceCanAccessPeer(&reach, 1, 0));
  std::printf("gmi.bench.replay_peer: GPU 1 -> GPU 0 peer access: %s; rounds of %zu steps x %zu envs (%zu floats a "
              "step), %d rounds a rep, %d reps after %d warm-up rounds\n",
              reach ? "yes" : "no", steps, envs, row_floats, rounds, reps, warmup);
  try {
    if (reach) {
      emit("gmi_peer", run(true, envs, rounds, reps, warmup), envs);
    } else {
      std::fprintf(stderr, "gmi.bench.replay_peer: no peer access from GPU 1 to GPU 0: gmi_peer not measured\n");
    }
    emit("gmi_host", run(false, envs, rounds, reps, warmup), envs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmi.bench.replay_peer: %s\n", e.what());
    return 1;
  }
  return reach ? 0 : 1;
}
