#pragma once
// Split roles' device transport (--split-transport device; offpolicy_split.hpp): each actor GMI writes its round of
// transitions straight into the learner's memory through an experience channel (comm/channel.hpp, one channel an
// actor: one copy into the learner's slot pool, plain device pointers between threads, CUDA IPC between MPS
// processes), and reads the learner's actor weights from a weights board in the learner's memory
// (comm/weights_channel.hpp). The learner's insert kernel reads the slot where the actor wrote it: no host copy of the
// transitions or the weights. Actors on another GPU with peer access write and read the same way over peer copies
// (split_paths.hpp chooses; spec.peer). The host only orders the rounds (the learner's small answer message: stop, random
// actions) and bounds every wait (the channel's and board's timeouts and dead-peer checks); a failure names the GMI.
// With payload_placement::host the same endpoints carry packed rows in shared host memory (the CI twin of the device
// path: host GMIs through the same protocol).

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include <gmi/comm/channel.hpp>
#include <gmi/comm/weights_channel.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/pipeline/run_options.hpp>
#include <gmi/pipeline/split_paths.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/sac_packed.hpp>

namespace gmi::detail {

// Whether a run may use the device transport: GPU GMIs of one GPU (auto or asked), or over several GPUs when each GMI's
// process sees every GPU (--partition none; then each actor's path is chosen at the start by
// plan_split_paths: peer access where the GPUs have it, else host messages for all); host for host GMIs (auto or
// asked). Device where it can not run is refused with one line: host GMIs, and GMIs over several GPUs under another
// partition (MPS, MIG: each process sees one GPU, no peer mapping of the learner's memory; green contexts: not tried).
[[nodiscard]] inline bool split_transport_on_device(split_transport_choice c, bool gpu_gmis, int gpus,
                                                    bool see_every_gpu = false) {
  if (c == split_transport_choice::device) {
    gmi::require(gpu_gmis, "--split-transport device on", "host GMIs (--partition cpu_cores)",
                 "GPU GMIs (--partition none or mps); host GMIs use --split-transport host");
    gmi::require(gpus == 1 || see_every_gpu, "--split-transport device with GMIs on GPUs", gpus,
                 "1, or GMIs that see every GPU (--partition none: peer copies into the learner's GPU); "
                 "--split-transport host across GPUs under other partitions");
  }
  return c != split_transport_choice::host && gpu_gmis && (gpus == 1 || see_every_gpu);
}

// What both ends of the transport are built from (the same values on every GMI of the run).
struct split_channel_spec {
  std::string tag;                       // unique per run (the run id and a suffix)
  int actors = 1;                        // GMIs 1 .. actors
  std::uint32_t envs = 1, steps = 8;     // a round: steps x envs transitions of one actor
  std::uint32_t row_floats = 0;          // floats of one transition (rl::sac_packed::width)
  std::size_t weight_floats = 0;         // the actor network's parameters
  comm::payload_placement placement = comm::payload_placement::device;
  bool across_processes = true;          // MPS processes (CUDA IPC), or threads of one process (plain pointers)
  bool peer = false;                     // actors on other GPUs write and read over peer access (split_paths.hpp)
  comm::milliseconds timeout = comm::default_timeout();

  void validate() const {
    gmi::require(actors >= 1 && actors <= 255, "split transport actors", actors, "1 .. 255");
    gmi::require(envs >= 1 && steps >= 1, "split transport round (envs x steps)",
                 std::to_string(envs) + " x " + std::to_string(steps), ">= 1 x 1");
    gmi::require(row_floats >= 1 && weight_floats >= 1, "split transport row and weight floats",
                 std::to_string(row_floats) + " and " + std::to_string(weight_floats), ">= 1 each");
  }
  // Actor a's channel (a = 1 .. actors): one producer, one consumer, one package a round.
  [[nodiscard]] comm::channel_options channel(int a) const {
    comm::channel_options o;
    o.tag = tag + "-a" + std::to_string(a);
    o.producers = 1;
    o.consumers = 1;
    o.record_bytes = row_floats * sizeof(float);
    o.shape_tag = 0x5ac5711700000000ull ^ (std::uint64_t{row_floats} << 8) ^ std::uint64_t(placement);
    o.package_steps = steps;
    o.package_envs = envs;
    o.packages_per_slot = 1;
    o.slots = 4;
    o.placement = placement;
    o.timeout = timeout;
    o.across_processes = across_processes;
    o.peer = peer;
    return o;
  }
  [[nodiscard]] comm::weights_options weights() const {
    comm::weights_options w;
    w.tag = tag + "-w";
    w.bytes = weight_floats * sizeof(float);
    w.readers = actors;
    w.placement = placement;
    w.buffers = 2;
    w.timeout = timeout;
    w.peer = peer;
    return w;
  }
  [[nodiscard]] const char* name() const noexcept {
    return placement == comm::payload_placement::host ? "host channels" : "device";
  }
};

// A round's note (comm::package_note): the actor's finished episodes and the round's index, checked by the learner.
struct split_round_note {
  double episodes = 0, return_sum = 0, length_sum = 0;
  std::uint64_t round = 0;

  [[nodiscard]] comm::package_note pack() const noexcept {
    return {{std::bit_cast<std::uint64_t>(episodes), std::bit_cast<std::uint64_t>(return_sum),
             std::bit_cast<std::uint64_t>(length_sum), round}};
  }
  [[nodiscard]] static split_round_note unpack(const comm::package_note& n) noexcept {
    return {std::bit_cast<double>(n.words[0]), std::bit_cast<double>(n.words[1]), std::bit_cast<double>(n.words[2]),
            n.words[3]};
  }
};

// An endpoint's failure as one line naming the GMI (the cause after it).
[[noreturn]] inline void split_transport_failed(const split_channel_spec& s, const std::string& who, const std::exception& e) {
  throw gmi::comm_error("split roles (" + std::string(s.name()) + " transport): " + who + ": " + e.what());
}

// GMI 0's end: a consumer an actor and the weights board, all in the learner's memory.
class split_channels_learner {
 public:
  split_channels_learner(split_channel_spec s, cudaStream_t stream) : s_(std::move(s)), stream_(stream) {
    s_.validate();
    try {
      for (int a = 1; a <= s_.actors; ++a) in_.push_back(std::make_unique<comm::channel_consumer>(s_.channel(a), 0, 1, stream));
      weights_.emplace(s_.weights());
    } catch (const std::exception& e) {
      split_transport_failed(s_, "learner GMI 0 setting up", e);
    }
    held_.resize(std::size_t(s_.actors));
  }

  // Actor a's round `round` (waits, bounded): its note; the transitions stay in their slot until release(a).
  split_round_note take(int a, std::uint64_t round) {
    auto& h = slot(a);
    gmi::require(!h, "split transport: actor GMI " + std::to_string(a) + "'s rounds held", 2, "1 (release first)");
    try {
      h = in_[std::size_t(a - 1)]->next_batch();
    } catch (const std::exception& e) {
      split_transport_failed(s_, who(a, round), e);
    }
    if (!h) throw gmi::comm_error("split roles (" + std::string(s_.name()) + " transport): " + who(a, round) +
                                  ": its stream ended (the actor closed before the learner said stop)");
    const std::size_t want = std::size_t(s_.envs) * s_.steps * s_.row_floats * sizeof(float);
    gmi::require(h->bytes() == want && h->packages() == 1, "split transport: " + who(a, round) + " bytes", h->bytes(),
                 std::to_string(want) + " (one package)");
    const split_round_note n = split_round_note::unpack(h->notes().at(0));
    gmi::require(n.round == round, "split transport: " + who(a, round) + " note's round", n.round, std::to_string(round));
    return n;
  }
  // The transitions of actor a's round held (device memory with device placement, else host memory).
  [[nodiscard]] const float* payload(int a) const {
    const auto& h = slot(a);
    gmi::require(h.has_value(), "split transport: actor GMI " + std::to_string(a) + "'s round held", 0, "1 (take first)");
    return h->as<float>();
  }
  // The slot goes back to actor a once the work queued on the stream so far (the insert) has read it.
  void release(int a) { slot(a).reset(); }

  // The next weights version from `src` (device memory with device placement: copied on the stream).
  std::uint64_t publish(const float* src) {
    try {
      return weights_->publish(src, stream_);
    } catch (const std::exception& e) {
      split_transport_failed(s_, "learner GMI 0 publishing weights", e);
    }
  }
  // After the last answer (stop): every actor's stream ends (each closed its producer), bounded.
  void drain() {
    for (int a = 1; a <= s_.actors; ++a) {
      std::optional<comm::experience_batch> b;
      try {
        b = in_[std::size_t(a - 1)]->next_batch();
      } catch (const std::exception& e) {
        split_transport_failed(s_, "actor GMI " + std::to_string(a) + " closing", e);
      }
      gmi::require(!b, "split transport: actor GMI " + std::to_string(a) + " after stop", "another round",
                   "the end of its stream");
    }
  }
  [[nodiscard]] const split_channel_spec& spec() const noexcept { return s_; }

 private:
  std::optional<comm::experience_batch>& slot(int a) {
    gmi::require(a >= 1 && a <= s_.actors, "split transport actor GMI", a, "1 .. " + std::to_string(s_.actors));
    return held_[std::size_t(a - 1)];
  }
  const std::optional<comm::experience_batch>& slot(int a) const { return const_cast<split_channels_learner*>(this)->slot(a); }
  static std::string who(int a, std::uint64_t round) {
    return "actor GMI " + std::to_string(a) + " (waiting for its round " + std::to_string(round) + ")";
  }

  split_channel_spec s_;
  cudaStream_t stream_;
  std::vector<std::unique_ptr<comm::channel_consumer>> in_;
  std::optional<comm::weights_writer> weights_;
  std::vector<std::optional<comm::experience_batch>> held_;
};

// An actor GMI's end: its producer into the learner's slots, its reader of the learner's weights.
class split_channels_actor {
 public:
  split_channels_actor(split_channel_spec s, int rank, cudaStream_t stream) : s_(std::move(s)), rank_(rank), stream_(stream) {
    s_.validate();
    gmi::require(rank >= 1 && rank <= s_.actors, "split transport actor GMI", rank, "1 .. " + std::to_string(s_.actors));
    try {
      out_.emplace(s_.channel(rank), 0, stream);
      weights_.emplace(s_.weights());
    } catch (const std::exception& e) {
      split_transport_failed(s_, "actor GMI " + std::to_string(rank) + " attaching to the learner GMI 0", e);
    }
  }

  // The round's transitions (steps x envs rows of row_floats: packed rows, or columns by rl::sac_packed's offsets)
  // into a learner's slot, after the work queued on the stream; `rows` may be rewritten on the stream at once.
  void send(const float* rows, const rl::episode_stats& s, std::uint64_t round) {
    const split_round_note n{double(s.episodes), s.return_sum, s.length_sum, round};
    try {
      out_->send(rows, s_.steps, s_.envs, n.pack());
    } catch (const std::exception& e) {
      split_transport_failed(s_, "actor GMI " + std::to_string(rank_) + " sending round " + std::to_string(round), e);
    }
  }
  // Weights version `version` into dst (device memory with device placement, copied on the stream), bounded.
  void read_weights(float* dst, std::uint64_t version) {
    std::uint64_t got = 0;
    try {
      got = weights_->wait_newer(dst, version - 1, stream_);
    } catch (const std::exception& e) {
      split_transport_failed(s_, "actor GMI " + std::to_string(rank_) + " reading the learner GMI 0's weights", e);
    }
    gmi::require(got == version, "split transport: actor GMI " + std::to_string(rank_) + " weights version", got,
                 std::to_string(version) + " (the learner publishes one a round)");
  }
  // The end of this actor's stream (bounded: the learner gives every slot back).
  void close() {
    try {
      out_->close();
    } catch (const std::exception& e) {
      split_transport_failed(s_, "actor GMI " + std::to_string(rank_) + " closing", e);
    }
  }

 private:
  split_channel_spec s_;
  int rank_;
  cudaStream_t stream_;
  std::optional<comm::channel_producer> out_;
  std::optional<comm::weights_reader> weights_;
};

// An actor engine's round for the transport: `steps` collection steps into one buffer, packed rows from a host
// engine (rl::sac_trainer::collect_packed), columns by rl::sac_packed::column_offsets in device memory from a device
// engine (rl::sac_device_trainer::collect_on_device: five copies on its stream a step, no host wait).
template <class Engine>
class split_round_buffer {
 public:
  static constexpr bool on_device = requires(Engine& e) { e.collect_on_device(true); };

  template <class Beat>
  const float* collect(Engine& eng, bool random, std::size_t envs, std::uint32_t steps, Beat&& beat) {
    rows_.clear();
    for (std::uint32_t t = 0; t < steps; ++t) {
      if constexpr (on_device) {
        const std::array<const float*, 5> cols = eng.collect_on_device(random);
        const std::size_t n = envs * steps;
        if (dev_.size() < n * Engine::packed_width) dev_ = cuda::device_buffer<float>(n * Engine::packed_width);
        const auto off = rl::sac_packed::column_offsets(n, Engine::O, Engine::A);
        for (int k = 0; k < 5; ++k) {
          const std::size_t w = rl::sac_packed::column_width(k, Engine::O, Engine::A) * envs;
          GMI_CUDA_TRY(cudaMemcpyAsync(dev_.data() + off[std::size_t(k)] + t * w, cols[std::size_t(k)], w * sizeof(float),
                                       cudaMemcpyDeviceToDevice, eng.stream()));
        }
      } else {
        eng.collect_packed(random, rows_);
      }
      beat();
    }
    if constexpr (on_device) return dev_.data();
    return rows_.data();
  }

 private:
  std::vector<float> rows_;
  cuda::device_buffer<float> dev_;
};

// The learner's side of an engine: a held round into its table, and where its actor weights are.
template <class Engine>
void split_insert_round(Engine& eng, int actor, const float* payload, std::size_t envs, std::size_t steps) {
  if constexpr (split_round_buffer<Engine>::on_device) {
    eng.insert_columns(actor, payload, envs, steps);
  } else {
    eng.insert_packed(actor, std::span<const float>(payload, envs * steps * Engine::packed_width), envs, steps);
  }
}
template <class Engine>
const float* split_weights_source(Engine& eng) {
  if constexpr (split_round_buffer<Engine>::on_device) return eng.actor_weights().data();
  else return eng.actor_params().data();
}
// An actor engine's weights from the board: straight into its device buffer, or through a host copy.
template <class Engine>
void split_read_weights(Engine& eng, split_channels_actor& ch, std::uint64_t version, std::vector<float>& host) {
  if constexpr (split_round_buffer<Engine>::on_device) {
    ch.read_weights(eng.actor_weights().data(), version);
  } else {
    host.resize(eng.actor_params().size());
    ch.read_weights(host.data(), version);
    eng.set_actor_params(host);
  }
}

}  // namespace gmi::detail
