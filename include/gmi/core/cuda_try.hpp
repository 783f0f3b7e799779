#pragma once
// GMI_CUDA_TRY(expr): evaluate a CUDA runtime (cudaError_t), driver (CUresult) or NCCL (ncclResult_t) call
// and throw the matching gmi error, naming the expression, on failure. core/ stays std-only: the overloads
// of gmi::detail::check_call for each result type live beside their API (cuda/check.hpp, comm/nccl).

#include <source_location>
#include <type_traits>

namespace gmi::detail {
template <class Result>
void check_call(Result, const char*, std::source_location) {
  static_assert(!std::is_same_v<Result, Result>,
                "GMI_CUDA_TRY: no check_call overload for this result type; include <gmi/cuda/check.hpp> "
                "(cudaError_t, CUresult) or <gmi/comm/nccl.hpp> (ncclResult_t) first");
}
}  // namespace gmi::detail

#define GMI_CUDA_TRY(expr) ::gmi::detail::check_call((expr), #expr, ::std::source_location::current())
