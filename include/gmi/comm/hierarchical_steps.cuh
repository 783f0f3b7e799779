#pragma once
// hierarchical_allreduce, the steps of one call: (a) the intra-GPU sum, (b) NCCL across GPUs, (c) the copy back,
// enqueued for each handshake (host, device, kernel) and reducer (leader, every_gmi, lanes).
// Included by hierarchical.cuh; including this alone gives the whole class too.

#include <gmi/comm/hierarchical.cuh>

namespace gmi::comm {

// The whole buffer in one go on one stream: (a), (b), (c) in order, or one kernel with one GPU.
inline void hierarchical_allreduce::enqueue_single(cudaStream_t s) {
  if (!leaders_) {
    detail::launch_reduce(o_.copy_back ? sum_all_ : reduce_, s);
    return;
  }
  if (o_.local_size > 1) detail::launch_reduce(reduce_, s);         // (a)
  leaders_->allreduce(gpu_sum(), gpu_sum(), count_, s);              // (b)
  if (bcast_.outputs > 0) detail::launch_reduce(bcast_, s);         // (c)
}

// Chunks on three streams so (a), (b) and (c) of different chunks overlap; reduce_stream_ must already be
// ordered after the GMIs' gradients. Returns the stream the last step is on. Every caller joins that stream
// back into its own before the call ends and forks reduce_stream_ from its own at the next call, so the next
// round's (a) never overwrites the sum that this round's (c) still reads. NCCL's stream has the device's
// greatest priority: its blocks go first onto SMs that the sum kernels leave, so (b) of one chunk runs while
// (a) of the next sums.
inline cudaStream_t hierarchical_allreduce::enqueue_chunks() {
  for (std::size_t off = 0; off < count_; off += chunk_floats_) {
    const std::size_t n = std::min(chunk_floats_, count_ - off);
    const unsigned beside_nccl = o_.overlap_blocks ? o_.overlap_blocks : detail::uncapped_reduce_blocks;
    const bool first = off == 0, last = off + n == count_;
    if (o_.local_size > 1) {
      detail::launch_reduce(slice(reduce_, off, n), *reduce_stream_, first ? detail::uncapped_reduce_blocks : beside_nccl);  // (a)
    }
    reduced_.record(*reduce_stream_);
    reduced_.wait_on(*nccl_stream_);
    leaders_->allreduce(gpu_sum() + off, gpu_sum() + off, n, *nccl_stream_);  // (b)
    summed_.record(*nccl_stream_);
    summed_.wait_on(*bcast_stream_);
    if (bcast_.outputs > 0) {
      detail::launch_reduce(slice(bcast_, off, n), *bcast_stream_, last ? detail::uncapped_reduce_blocks : beside_nccl);  // (c)
    }
  }
  return *bcast_stream_;
}

// handshake::kernel: the host only enqueues. leader reducer: a member sets ready[r] and waits for done; the
// leader waits for every ready, sums, runs NCCL and (c), sets done. every_gmi: every GMI sets ready[r] and
// waits for every ready, sums its slices, then a member sets sliced[r] and waits for done, the leader waits
// for every sliced, runs NCCL over the sum and sets done; with a result buffer and copy_back each GMI copies.
// Reuse is safe for the same reasons as with the host handshake (each wait is stream-ordered the same way).
// captured: the call goes into a CUDA graph (generations from the device counter, no tail event).
inline void hierarchical_allreduce::run_kernel(cudaStream_t stream, std::uint64_t g, clock::time_point t0, bool captured) {
  if (!o_.blocking) check_peers_now_and_then();
  barrier_.throw_if_broken();
  const int me = o_.local_rank, m = o_.local_size;
  bool first = true;
  const auto op = [&](int set, int wait_first, int wait_count) {
    detail::flag_op f;
    f.counter = counter_->data();
    f.bump = std::exchange(first, false);
    f.replayed = captured;
    f.flags = flag_words_;
    f.set_slot = set;
    f.wait_first = wait_first;
    f.wait_count = wait_count;
    f.generation = static_cast<std::uint32_t>(g);
    f.abort = abort_dev_;
    f.stalled = stalled_dev_;
    f.timeout_ns = static_cast<unsigned long long>(o_.timeout.count()) * 1000000ull;
    f.skip_slot = detail::skip_slot(me);
    detail::launch_flag(f, stream);
  };
  if (lanes_ && leaders_) {
    op(detail::ready_slot(me), detail::ready_slot(0), m);
    enqueue_lane(stream);
    op(detail::sliced_slot(me), detail::sliced_slot(0), m);  // every lane's slice is in the result buffer
    if (o_.copy_back) {
      GMI_CUDA_TRY(cudaMemcpyAsync(buffer_, sum_, count_ * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    }
  } else if (every_gmi_) {
    op(detail::ready_slot(me), detail::ready_slot(0), m);
    for (const auto& s : slices_) detail::launch_reduce(s, stream);
    if (is_leader()) {
      op(detail::sliced_slot(0), detail::sliced_slot(0), m);
      if (leaders_) {
        for (std::size_t off = 0; off < count_; off += chunk_floats_) {
          leaders_->allreduce(sum_ + off, sum_ + off, std::min(chunk_floats_, count_ - off), stream);
        }
      }
      op(detail::done_slot, 0, 0);
    } else {
      op(detail::sliced_slot(me), detail::done_slot, 1);
    }
    if (o_.copy_back && sum_ != nullptr) {
      GMI_CUDA_TRY(cudaMemcpyAsync(buffer_, sum_, count_ * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    }
  } else if (is_leader()) {
    op(detail::ready_slot(0), detail::ready_slot(0), m);
    if (single_) {
      enqueue_single(stream);
    } else {  // chunks overlap on three streams forked from the caller's and joined back before done
      own_ready_.record(stream);
      own_ready_.wait_on(*reduce_stream_);
      own_done_.record(enqueue_chunks());
      own_done_.wait_on(stream);
    }
    op(detail::done_slot, 0, 0);
  } else {
    op(detail::ready_slot(me), detail::done_slot, 1);
  }
  if (!captured) tail_->record(stream);
  finish_call(stream, t0, t0);
}

// reducer::lanes: this GMI's slice of each chunk summed into the result buffer, then allreduced in place over its
// lane. In chunks, the NCCL calls go on a stream of their own (forked from the caller's, joined back), so the
// sum of chunk i + 1 runs beside the NCCL call of chunk i. Reuse is safe as with every_gmi: the next round's
// sums write the result buffer only after every GMI's next ready flag, which follows its copy or its reads.
inline void hierarchical_allreduce::enqueue_lane(cudaStream_t stream) {
  const auto lane_call = [&](const detail::reduce_args& a, cudaStream_t s) {
    if (a.count > 0) leaders_->allreduce(a.out[0], a.out[0], a.count, s);  // the same slices on every GPU
  };
  if (!lane_stream_) {
    for (const auto& a : slices_) {
      detail::launch_reduce(a, stream);
      lane_call(a, stream);
    }
    return;
  }
  for (const auto& a : slices_) {
    detail::launch_reduce(a, stream);
    reduced_.record(stream);
    reduced_.wait_on(*lane_stream_);
    lane_call(a, *lane_stream_);
  }
  own_done_.record(*lane_stream_);
  own_done_.wait_on(stream);
}

// reducer::every_gmi, host handshake. (1) every GMI says "my gradient is on the device" and waits (host) until
// all have; (2) each sums its slice of every chunk on its own stream, after the others' ready events, and
// records one event per chunk; (3) the leader waits (host) until every slice is enqueued, then per chunk waits
// on the slices' events and runs NCCL (several GPUs), records done; (4) the members wait for done; with a result
// buffer and copy_back each GMI copies the sum into its own buffer. Reuse is safe: a GMI refills its buffer
// only after done (every slice kernel has read it), and the next round's slices write the result buffer only
// after every GMI's next ready event (each has finished reading or copying it).
inline void hierarchical_allreduce::run_every_gmi(cudaStream_t stream, std::uint64_t g, clock::time_point t0) {
  barrier_.throw_if_broken();
  auto* ctl = c();
  auto& me = ctl->member[o_.local_rank];
  const auto all_at = [&](auto field) {
    return [&, field] {
      if (barrier_.broken()) return true;
      for (int r = 0; r < o_.local_size; ++r) {
        if ((ctl->member[r].*field).load(std::memory_order_acquire) < g) return false;
      }
      return true;
    };
  };
  ready_event_.record(stream);
  me.ready_gen.store(g, std::memory_order_release);
  bounded_wait(all_at(&detail::hier_member::ready_gen), [&] { check_group(); }, o_.timeout, msg_peers_);
  const auto t1 = clock::now();
  barrier_.throw_if_broken();
  for (auto& e : member_ready_) e.wait_on(stream);
  for (std::size_t i = 0; i < chunks_; ++i) {
    detail::launch_reduce(slices_[i], stream);
    slice_events_[i].record(stream);
  }
  me.sliced_gen.store(g, std::memory_order_release);
  if (is_leader()) {
    bounded_wait(all_at(&detail::hier_member::sliced_gen), [&] { check_group(); }, o_.timeout, msg_members_);
    barrier_.throw_if_broken();
    const cudaStream_t s = leaders_ && !single_ ? *nccl_stream_ : stream;
    for (std::size_t i = 0; i < chunks_; ++i) {
      if (s != stream) slice_events_[i].wait_on(s);
      for (auto& peer : peer_slices_) peer[i].wait_on(s);
      if (leaders_) {
        const std::size_t off = i * chunk_floats_, n = std::min(chunk_floats_, count_ - off);
        leaders_->allreduce(sum_ + off, sum_ + off, n, s);
      }
    }
    done_event_.record(s);
    if (s != stream) done_event_.wait_on(stream);
    ctl->done_gen.store(g, std::memory_order_release);
  } else {
    bounded_wait([&] { return ctl->done_gen.load(std::memory_order_acquire) >= g || barrier_.broken(); },
                 [&] { check_group(); }, o_.timeout, msg_leader_);
    barrier_.throw_if_broken();
    done_event_.wait_on(stream);
    me.consumed_gen.store(g, std::memory_order_release);
  }
  if (o_.copy_back && sum_ != nullptr) {
    GMI_CUDA_TRY(cudaMemcpyAsync(buffer_, sum_, count_ * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  }
  finish_call(stream, t0, t1);
}

inline void hierarchical_allreduce::run_member(cudaStream_t stream, std::uint64_t g, clock::time_point t0) {
  barrier_.throw_if_broken();
  auto& me = c()->member[o_.local_rank];
  clock::time_point t1;
  if (device_) {
    // The stream says "ready" and waits for "done" itself: nothing on this host waits for the leader.
    if (!o_.blocking) check_peers_now_and_then();
    flag_write(stream, ready_dev_[o_.local_rank], g);
    t1 = clock::now();
    flag_wait(stream, done_dev_, g);
    tail_->record(stream);
  } else {
    ready_event_.record(stream);
    me.ready_gen.store(g, std::memory_order_release);
    bounded_wait([&] { return c()->done_gen.load(std::memory_order_acquire) >= g || barrier_.broken(); },
                 [&] { check_group(); }, o_.timeout, msg_leader_);
    t1 = clock::now();
    barrier_.throw_if_broken();
    done_event_.wait_on(stream);
    me.consumed_gen.store(g, std::memory_order_release);
  }
  finish_call(stream, t0, t1);
}

inline void hierarchical_allreduce::run_leader(cudaStream_t stream, std::uint64_t g, clock::time_point t0) {
  barrier_.throw_if_broken();
  clock::time_point t1 = t0;
  const bool members = o_.local_size > 1;
  if (device_) {
    if (!o_.blocking) check_peers_now_and_then();
    cudaStream_t first = stream;
    if (!single_) {
      own_ready_.record(stream);
      own_ready_.wait_on(*reduce_stream_);
      first = *reduce_stream_;
    }
    for (int r = 1; r < o_.local_size; ++r) flag_wait(first, ready_dev_[r], g);
    cudaStream_t last = stream;
    if (single_) enqueue_single(stream); else last = enqueue_chunks();
    flag_write(last, done_dev_, g);
    if (!single_) {
      own_done_.record(last);
      own_done_.wait_on(stream);
    }
    tail_->record(stream);
  } else {
    cudaStream_t first = stream;
    if (!single_) {
      own_ready_.record(stream);
      own_ready_.wait_on(*reduce_stream_);
      first = *reduce_stream_;
    }
    if (members) {
      bounded_wait(
          [&] {
            for (int r = 1; r < o_.local_size; ++r) {
              if (c()->member[r].ready_gen.load(std::memory_order_acquire) < g) return false;
            }
            return true;
          },
          [&] { check_group(); }, o_.timeout, msg_members_);
      t1 = clock::now();
      for (auto& e : member_ready_) e.wait_on(first);
    }
    cudaStream_t last = stream;
    if (single_) enqueue_single(stream); else last = enqueue_chunks();
    if (members) done_event_.record(last);
    if (members && !single_) done_event_.wait_on(stream);
    else if (!single_) {
      own_done_.record(last);
      own_done_.wait_on(stream);
    }
    c()->done_gen.store(g, std::memory_order_release);
  }
  finish_call(stream, t0, t1);
}

inline void hierarchical_allreduce::finish_call(cudaStream_t stream, clock::time_point t0, clock::time_point t1) {
  const auto t2 = clock::now();
  if (o_.blocking) wait_device(stream);
  const auto t3 = clock::now();
  timing_.host_wait_us = us(t1 - t0);
  timing_.enqueue_us = us(t2 - t1);
  timing_.device_wait_us = us(t3 - t2);
  timing_.total_us = us(t3 - t0);
}

inline void hierarchical_allreduce::wait_device(cudaStream_t stream) {
  bounded_wait(
      [&] {
        const cudaError_t e = cudaStreamQuery(stream);
        if (e == cudaErrorNotReady) return false;
        GMI_CUDA_TRY(e);
        return true;
      },
      [&] {
        check_group();
        if (leaders_) leaders_->check_async();
      },
      o_.timeout, msg_device_);
  barrier_.throw_if_broken();  // a released device wait leaves garbage: never report it as a result
  if (kernel_ && flags_->stalled.v.load(std::memory_order_acquire) != 0) throw comm_error(msg_stalled());
}

}  // namespace gmi::comm
