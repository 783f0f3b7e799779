#pragma once
// The CUDA path of gmi::rl::env_batch: environments stepped by a grid-stride kernel on the caller's stream,
// one thread per environment. Include this (from a .cu file) to use env_batch<E, gmi::exec::cuda>.

#include <gmi/exec/cuda.cuh>
#include <gmi/rl/env_batch.hpp>

namespace gmi::rl::detail {

template <>
struct launcher<exec::cuda> {
  // The stream given to reset/step/request_stats wins over policy.stream, so one driver can follow its GMI's
  // stream; policy.block_size is kept.
  template <class F>
  static void run(const exec::cuda& p, CUstream_st* stream, std::size_t n, F f) {
    exec::for_each(exec::cuda{stream ? stream : p.stream, p.block_size}, n, f);
  }
};

}  // namespace gmi::rl::detail
