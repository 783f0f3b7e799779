#pragma once
// hierarchical_allreduce, construction and teardown: the options checked and resolved, the leader's and the
// members' setup of the GPU's shared segment, buffers, events and handshake flags, and the bounded goodbye.
// Included by hierarchical.cuh; including this alone gives the whole class too.

#include <gmi/comm/hierarchical.cuh>

namespace gmi::comm {

inline hierarchical_allreduce::hierarchical_allreduce(hierarchical_options options, float* buffer, std::size_t count,
                                                      nccl_communicator* leaders)
    : o_(std::move(options)), buffer_(buffer), count_(count), leaders_(leaders) {
  require(o_.local_size >= 1 && o_.local_size <= max_local_gmis, "hierarchical local_size", o_.local_size,
          "1.." + std::to_string(max_local_gmis));
  require(o_.local_rank >= 0 && o_.local_rank < o_.local_size, "hierarchical local_rank", o_.local_rank,
          "0.." + std::to_string(o_.local_size - 1));
  require(leaders == nullptr || o_.local_rank == 0 || o_.reduce == reducer::lanes,
          "hierarchical NCCL communicator on local rank", o_.local_rank,
          "only the leader (local rank 0), or every GMI with reducer::lanes");
  if (o_.reduce != reducer::leader && o_.reduce != reducer::automatic && o_.sync == handshake::device) {
    throw config_error(got_need("hierarchical reducer", std::string(o_.reduce == reducer::lanes ? "lanes" : "every_gmi") +
                                " with the device handshake",
                                "the host handshake (every GMI waits for the others' gradients on its host)"));
  }
  every_gmi_ = o_.local_size > 1 && o_.sync != handshake::device &&
               (o_.reduce == reducer::every_gmi || o_.reduce == reducer::lanes);
  if (o_.sync == handshake::automatic && o_.mode == sharing::ipc && mps_shared_device()) o_.sync = handshake::kernel;
  lanes_ = every_gmi_ && o_.reduce == reducer::lanes;
  if (lanes_ && o_.sync != handshake::kernel) {
    throw config_error(got_need("hierarchical reducer", "lanes with the " + std::string(o_.sync == handshake::host ? "host" : "automatic (host)") +
                                " handshake", "the kernel handshake (GMI processes that are MPS clients, or "
                                "handshake::kernel): each GMI's NCCL call waits on the device for the GPU's gradients"));
  }
  if ((o_.sync == handshake::device || o_.sync == handshake::kernel) && o_.mode != sharing::ipc) {
    throw config_error(got_need("hierarchical handshake", std::string(o_.sync == handshake::kernel ? "kernel" : "device") +
                                " with sharing::in_process",
                                "sharing::ipc (streams of one process may share a hardware queue, where a "
                                "device-side wait queued ahead of its write never finishes); use host"));
  }
  const std::size_t bytes = count * sizeof(float);
  // One piece up to 32 MiB, then four chunks: NCCL loses more on smaller messages than the overlap gains
  // (docs/comm.md has the sweep).
  chunk_floats_ = o_.chunk_bytes ? o_.chunk_bytes / sizeof(float)
                                 : (bytes <= (32u << 20) ? count : std::max<std::size_t>((32u << 20) / 4, (count + 3) / 4));
  // every_gmi: at most max_hier_chunks chunks (one exported event per GMI and chunk); lanes export none.
  const std::size_t most_chunks = lanes_ ? max_lane_chunks : detail::max_hier_chunks;
  if (every_gmi_) chunk_floats_ = std::max(chunk_floats_, (count + most_chunks - 1) / most_chunks);
  chunk_floats_ = std::max<std::size_t>(64, (chunk_floats_ + 63) / 64 * 64);  // chunks keep 256-byte alignment
  chunks_ = std::max<std::size_t>(1, (count_ + chunk_floats_ - 1) / chunk_floats_);
  // One GMI per GPU has no intra-GPU step to overlap with NCCL: one call, as a flat allreduce.
  single_ = leaders_ == nullptr || count_ <= chunk_floats_ || o_.local_size == 1;
  if (lanes_ && leaders_ && chunks_ > 1) {  // each GMI's NCCL calls on a stream of their own, beside its sums
    int least = 0, greatest = 0;
    GMI_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    lane_stream_.emplace(greatest);
  }
  try {
    if (o_.local_rank == 0) setup_leader(); else setup_member();
  } catch (const gmi::error& e) {
    if (segment_.data()) break_group(e.what());  // the GPU's other GMIs fail now, not at their timeout
    if (leaders_) leaders_->abort();
    unregister_flags();
    throw;
  }
}

// Host handshake: the leader owns the done event every member waits on: a member that saw the last
// generation's done_gen but has not yet enqueued its cudaStreamWaitEvent would use a destroyed event, so the
// leader waits until each member has consumed the last generation or detached. Device handshake: each GMI
// waits until its stream is past its last wait on the flags, then unregisters them. All bounded; a broken
// group first releases every queued device wait.
inline hierarchical_allreduce::~hierarchical_allreduce() {
  if (!segment_.data()) return;
  if ((device_ || kernel_) && generation_ > 0 && tail_) {
    const auto tail_done = [&] { return tail_->ready(); };
    try {
      if (barrier_.broken()) release_device_waits();
      bounded_wait(tail_done, [&] { check_group(); }, o_.timeout, msg_device_);
    } catch (...) {
      release_device_waits();
      try {
        bounded_wait(tail_done, [] {}, milliseconds(2000), msg_device_);
      } catch (...) {
        flags_leaked_ = true;  // the stream may still read the pages: keep them pinned (the process is failing)
      }
    }
  }
  if (is_leader() && (!device_ || sum_ != nullptr)) {
    try {
      bounded_wait(
          [&] {
            if (barrier_.broken()) return true;
            for (int r = 1; r < o_.local_size; ++r) {
              const auto& m = c()->member[r];
              const bool gone = m.detached.load(std::memory_order_acquire) != 0;
              // Members map the result buffer and the flag words this destructor frees: wait for them to let go.
              if ((sum_ != nullptr || kernel_) && !gone) return false;
              if (m.consumed_gen.load(std::memory_order_acquire) < generation_ && !gone) return false;
            }
            return true;
          },
          [&] { check_group(); }, o_.timeout, segment_.name() + ": leader waiting for its GMIs to finish",
          long_wait());
    } catch (...) {  // broken, dead or timed out: nobody is left to use the event, or nothing more can be done
    }
  } else if (!is_leader()) {
    result_mapping_.reset();  // before "detached": the leader frees the result buffer once every GMI let go
    flag_mapping_.reset();
    c()->member[o_.local_rank].detached.store(1, std::memory_order_release);
  }
  unregister_flags();
}

inline void hierarchical_allreduce::setup_leader() {
  // The control block is built before the segment is marked ready: a member opening it earlier would read
  // members == 0, or write its fields only to have them zeroed by this constructor.
  segment_ = shm_segment::create(o_.tag, detail::hier_segment_bytes, [&](void* p, std::size_t) {
    auto* fresh = new (p) detail::hier_control{};
    fresh->members = static_cast<std::uint32_t>(o_.local_size);
    fresh->mode = static_cast<std::uint32_t>(o_.mode);
    fresh->group.ranks = fresh->members;
    new (detail::hier_flags_in(p)) detail::hier_flags{};
  });
  setup_messages();
  auto* ctl = c();
  barrier_ = detail::group_barrier(&ctl->group, segment_.name());
  ctl->group.pids[0].store(::getpid());
  // The handshake: device only where asked for (ipc, several GMIs, stream memory operations work), since it is
  // slower than the host one (docs/comm.md); automatic means kernel between processes and host in-process.
  if (o_.mode == sharing::ipc && o_.local_size > 1 && o_.sync == handshake::device) {
    try {
      register_flags();
      device_ = probe_memops();
    } catch (const cuda_error&) {
      if (o_.sync == handshake::device) throw;
      device_ = false;
    }
    if (!device_ && o_.sync == handshake::device) {
      throw config_error(got_need("hierarchical handshake", "device, but stream memory operations (cuStreamWaitValue32 "
                                  "on registered host memory) fail on this device", "host or automatic"));
    }
    if (!device_) {
      unregister_flags();
      flags_ = nullptr;
      cudaGetLastError();  // a failed probe leaves no sticky error; keep it out of later checks
    }
  }
  ctl->device_handshake = device_ ? 1 : 0;
  // The kernel handshake: flags in device memory the members map, the abort and stall words in the shared
  // pages (mapped here and in every member).
  kernel_ = !device_ && o_.local_size > 1 && o_.sync == handshake::kernel;
  if (kernel_) {
    register_flags();
    flag_mem_.emplace(detail::flag_words);
    flag_mem_->fill_bytes(0, nullptr);
    counter_.emplace(1);
    counter_->fill_bytes(0, nullptr);
    GMI_CUDA_TRY(cudaDeviceSynchronize());  // zeros before any member maps them
    flag_words_ = flag_mem_->data();
    ctl->flags = export_buffer(flag_words_, detail::flag_words * sizeof(std::uint32_t));
    ctl->device_handshake = 2;
  }
  if (!device_ && !kernel_) {
    done_event_ = shared_event::create(o_.mode == sharing::ipc);
    if (o_.mode == sharing::ipc) ctl->done_event = done_event_.export_handle();
    ctl->raw_done_event = reinterpret_cast<std::uint64_t>(done_event_.get());
  }
  ctl->member[0].count = count_;
  ctl->copy_back = o_.copy_back ? 1 : 0;
  ctl->every_gmi = reducer_code();
  // The GPU's result buffer: where every GMI reads the sum (copy_back off), and where every_gmi's slices meet
  // for NCCL when there are several GPUs (the leader's buffer would be refilled while members still copy).
  if (o_.local_size > 1 && (!o_.copy_back || (every_gmi_ && leaders_))) {
    result_.emplace(count_);
    sum_ = result_->data();
    if (o_.mode == sharing::ipc) ctl->result = export_buffer(sum_, count_ * sizeof(float));
    ctl->raw_result = reinterpret_cast<std::uint64_t>(sum_);
    ctl->has_result = 1;
  }
  if (every_gmi_) {  // the members read the leader's buffer and wait on its ready event, as it does on theirs
    ready_event_ = shared_event::create(o_.mode == sharing::ipc);
    publish(ctl->member[0]);
  } else if (kernel_ && o_.mode == sharing::ipc) {  // for the members' row exchange
    ctl->member[0].buffer = export_buffer(buffer_, count_ * sizeof(float));
  }
  // Wait for every member to attach, then map their buffers and events.
  bounded_wait(
      [&] {
        for (int r = 1; r < o_.local_size; ++r) {
          if (ctl->member[r].attached.load(std::memory_order_acquire) == 0) return false;
        }
        return true;
      },
      [&] { check_group(); }, o_.timeout, segment_.name() + ": leader waiting for the GPU's GMIs to attach",
      long_wait());
  std::vector<const float*> inputs(o_.local_size, nullptr);
  std::vector<float*> members;
  inputs[0] = buffer_;
  for (int r = 1; r < o_.local_size; ++r) {
    auto& m = ctl->member[r];
    if (m.count != count_) {
      const std::string why = got_need("hierarchical allreduce: GMI " + std::to_string(r) + " of " + segment_.name() +
                                           " buffer floats", m.count, std::to_string(count_) + " as on its leader");
      barrier_.mark_broken(why);
      throw comm_error(why);
    }
    float* p = nullptr;
    if (o_.mode == sharing::ipc) {
      mappings_.emplace_back(m.buffer);
      p = mappings_.back().as<float>();
      if (!device_ && !kernel_) member_ready_.push_back(shared_event::open(m.ready_event));
    } else {
      p = reinterpret_cast<float*>(m.raw_buffer);
      member_ready_.push_back(shared_event::borrow(reinterpret_cast<cudaEvent_t>(m.raw_event)));
    }
    inputs[r] = p;
    members.push_back(p);
    if (every_gmi_ && !kernel_) peer_slices_.push_back(open_slice_events(m));
  }
  if (every_gmi_) build_slices(inputs);
  if (kernel_) peer_rows_ = inputs;
  ctl->across_gpus = leaders_ ? 1 : 0;
  // The kernels' arguments, once: (a) every buffer into the leader's, (c) the leader's into every member's,
  // and with one GPU every buffer into every buffer.
  const auto* skip = skip_word();
  sum_all_ = {};
  reduce_ = {};
  bcast_ = {};
  for (int k = 0; k < o_.local_size; ++k) {
    sum_all_.in[k] = inputs[k];
    sum_all_.out[k] = const_cast<float*>(inputs[k]);
    reduce_.in[k] = inputs[k];
  }
  sum_all_.inputs = sum_all_.outputs = reduce_.inputs = o_.local_size;
  reduce_.out[0] = gpu_sum();
  reduce_.outputs = 1;
  bcast_.in[0] = buffer_;
  bcast_.inputs = 1;
  for (std::size_t k = 0; k < members.size(); ++k) bcast_.out[k] = members[k];
  bcast_.outputs = static_cast<int>(members.size());
  sum_all_.count = reduce_.count = bcast_.count = count_;
  if (!o_.copy_back) bcast_.outputs = 0;  // (c) skipped: enqueue_* test outputs before launching
  sum_all_.skip_if_set = reduce_.skip_if_set = bcast_.skip_if_set = skip;
  if (!single_) {
    int least = 0, greatest = 0;
    GMI_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    reduce_stream_.emplace();
    nccl_stream_.emplace(greatest);
    bcast_stream_.emplace();
  }
  if (leaders_) check_sizes_across_gpus();
  if (device_ || kernel_) tail_.emplace();
  ctl->setup_state.store(1, std::memory_order_release);
}

inline void hierarchical_allreduce::setup_member() {
  segment_ = shm_segment::open(o_.tag, o_.timeout);
  setup_messages();
  auto* ctl = c();
  barrier_ = detail::group_barrier(&ctl->group, segment_.name());
  require(ctl->members == static_cast<std::uint32_t>(o_.local_size), "hierarchical local_size", o_.local_size,
          std::to_string(ctl->members) + " as on the leader");
  auto& m = ctl->member[o_.local_rank];
  ctl->group.pids[o_.local_rank].store(::getpid());
  m.count = count_;
  ready_event_ = shared_event::create(o_.mode == sharing::ipc);
  publish(m);
  m.attached.store(1, std::memory_order_release);
  bounded_wait([&] { return ctl->setup_state.load(std::memory_order_acquire) == 1 || barrier_.broken(); },
               [&] { check_group(); }, o_.timeout, segment_.name() + ": GMI waiting for its leader's setup",
               long_wait());
  barrier_.throw_if_broken();
  if ((ctl->copy_back == 1) != o_.copy_back) {
    const std::string why = got_need("hierarchical copy_back on GMI " + std::to_string(o_.local_rank) + " of " +
                                         segment_.name(), o_.copy_back ? "true" : "false",
                                     std::string(ctl->copy_back ? "true" : "false") + " as on its leader");
    barrier_.mark_broken(why);
    throw config_error(why);
  }
  device_ = ctl->device_handshake == 1;
  kernel_ = ctl->device_handshake == 2;
  if (device_) {
    register_flags();
    tail_.emplace();
  } else if (kernel_) {
    register_flags();
    flag_mapping_.emplace(ctl->flags);
    flag_words_ = flag_mapping_->as<std::uint32_t>();
    counter_.emplace(1);
    counter_->fill_bytes(0, nullptr);
    GMI_CUDA_TRY(cudaDeviceSynchronize());
    tail_.emplace();
  } else {
    done_event_ = o_.mode == sharing::ipc ? shared_event::open(ctl->done_event)
                                          : shared_event::borrow(reinterpret_cast<cudaEvent_t>(ctl->raw_done_event));
  }
  if (ctl->every_gmi != reducer_code()) {
    static constexpr const char* names[] = {"leader", "every_gmi", "lanes"};
    const std::string why = got_need("hierarchical reducer on GMI " + std::to_string(o_.local_rank) + " of " +
                                         segment_.name(), names[reducer_code()],
                                     std::string(names[std::min<std::uint32_t>(ctl->every_gmi, 2)]) + " as on its leader");
    barrier_.mark_broken(why);
    throw config_error(why);
  }
  if (lanes_ && (ctl->across_gpus == 1) != (leaders_ != nullptr)) {
    const std::string why = got_need("hierarchical lanes on GMI " + std::to_string(o_.local_rank) + " of " +
                                         segment_.name(), leaders_ ? "a lane communicator" : "no lane communicator",
                                     std::string(ctl->across_gpus ? "one" : "none") + ", as its leader has");
    barrier_.mark_broken(why);
    throw config_error(why);
  }
  if (ctl->has_result) {
    if (o_.mode == sharing::ipc) {
      result_mapping_.emplace(ctl->result);
      sum_ = result_mapping_->as<float>();
    } else {
      sum_ = reinterpret_cast<float*>(ctl->raw_result);
    }
  }
  if (every_gmi_) {  // every other GMI's buffer and ready event (all published before the leader's setup ended)
    std::vector<const float*> inputs(o_.local_size, nullptr);
    for (int k = 0; k < o_.local_size; ++k) {
      if (k == o_.local_rank) {
        inputs[k] = buffer_;
        continue;
      }
      const auto& peer = ctl->member[k];
      if (o_.mode == sharing::ipc) {
        mappings_.emplace_back(peer.buffer);
        inputs[k] = mappings_.back().as<float>();
        if (!kernel_) member_ready_.push_back(shared_event::open(peer.ready_event));
      } else {
        inputs[k] = reinterpret_cast<const float*>(peer.raw_buffer);
        member_ready_.push_back(shared_event::borrow(reinterpret_cast<cudaEvent_t>(peer.raw_event)));
      }
    }
    build_slices(inputs);
    if (kernel_) peer_rows_ = inputs;
    if (lanes_ && leaders_) check_sizes_across_gpus();  // on its lane, as the leader does on lane 0
  } else if (kernel_) {  // the row exchange reads every GMI's buffer
    peer_rows_.assign(o_.local_size, nullptr);
    for (int k = 0; k < o_.local_size; ++k) {
      if (k == o_.local_rank) {
        peer_rows_[k] = buffer_;
        continue;
      }
      mappings_.emplace_back(ctl->member[k].buffer);
      peer_rows_[k] = mappings_.back().as<float>();
    }
  }
}

// What the GPU's other GMIs need from this one: its buffer and ready event, and with every_gmi one event per
// chunk, recorded after this GMI's slice of that chunk.
inline void hierarchical_allreduce::publish(detail::hier_member& m) {
  if (o_.mode == sharing::ipc) {
    m.buffer = export_buffer(buffer_, count_ * sizeof(float));
    m.ready_event = ready_event_.export_handle();
  } else {
    m.raw_buffer = reinterpret_cast<std::uint64_t>(buffer_);
    m.raw_event = reinterpret_cast<std::uint64_t>(ready_event_.get());
  }
  if (!every_gmi_ || lanes_) return;  // lanes: the kernel handshake's flags, no events
  for (std::size_t i = 0; i < chunks_; ++i) {
    slice_events_.push_back(shared_event::create(o_.mode == sharing::ipc));
    if (o_.mode == sharing::ipc) m.slice_event[i] = slice_events_.back().export_handle();
    m.raw_slice_event[i] = reinterpret_cast<std::uint64_t>(slice_events_.back().get());
  }
}

inline std::vector<shared_event> hierarchical_allreduce::open_slice_events(const detail::hier_member& m) const {
  std::vector<shared_event> events;
  for (std::size_t i = 0; i < chunks_; ++i) {
    events.push_back(o_.mode == sharing::ipc
                         ? shared_event::open(m.slice_event[i])
                         : shared_event::borrow(reinterpret_cast<cudaEvent_t>(m.raw_slice_event[i])));
  }
  return events;
}

// every_gmi: this GMI's slice of each chunk (slice r of chunk [off, off + n) starts at n * r / m rounded down
// to 64 floats), summed over every GMI's buffer into the result buffer, or with one GPU and copy_back
// straight into every GMI's buffer (slices are disjoint, so no GMI writes what another reads).
inline void hierarchical_allreduce::build_slices(const std::vector<const float*>& inputs) {
  const auto m = static_cast<std::size_t>(o_.local_size);
  const auto me = static_cast<std::size_t>(o_.local_rank);
  slices_.clear();
  for (std::size_t i = 0; i < chunks_; ++i) {
    const std::size_t off = i * chunk_floats_, n = std::min(chunk_floats_, count_ - off);
    const auto edge = [&](std::size_t r) { return r == m ? n : n * r / m / 64 * 64; };
    const std::size_t lo = off + edge(me), hi = off + edge(me + 1);
    detail::reduce_args a{};
    for (std::size_t k = 0; k < m; ++k) a.in[k] = inputs[k] + lo;
    a.inputs = o_.local_size;
    if (sum_ != nullptr) {
      a.out[0] = sum_ + lo;
      a.outputs = 1;
    } else {
      for (std::size_t k = 0; k < m; ++k) a.out[k] = const_cast<float*>(inputs[k]) + lo;
      a.outputs = o_.local_size;
    }
    a.count = hi - lo;
    a.skip_if_set = skip_word();  // queued behind a released wait: touch nothing
    slices_.push_back(a);
  }
}

// Leaders agree on the element count before the first collective (a mismatch would corrupt or hang NCCL).
inline void hierarchical_allreduce::check_sizes_across_gpus() {
  cuda::stream s;
  cuda::device_buffer<std::int64_t> v(2);
  const std::int64_t host[2] = {static_cast<std::int64_t>(count_), -static_cast<std::int64_t>(count_)};
  std::int64_t back[2] = {0, 0};
  GMI_CUDA_TRY(cudaMemcpyAsync(v.data(), host, sizeof host, cudaMemcpyHostToDevice, s));
  leaders_->allreduce(v.data(), v.data(), 2, ncclInt64, ncclMax, s);
  GMI_CUDA_TRY(cudaMemcpyAsync(back, v.data(), sizeof back, cudaMemcpyDeviceToHost, s));
  leaders_->synchronize(s, o_.timeout);
  if (back[0] != -back[1]) {
    const std::string why = got_need("hierarchical allreduce: buffer floats across GPUs", "from " +
                                         std::to_string(-back[1]) + " to " + std::to_string(back[0]),
                                     "the same count on every GPU");
    barrier_.mark_broken(why);
    throw comm_error(why);
  }
}

}  // namespace gmi::comm
