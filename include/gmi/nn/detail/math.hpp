#pragma once
// Scalar math overloaded for float and double, callable on host and device, so network code is written once
// for T = float (kernels) and T = double (finite-difference tests).

#include <cmath>

#include <gmi/core/hd.hpp>

namespace gmi::nn::detail {

GMI_HD inline float exp_(float x) { return ::expf(x); }
GMI_HD inline double exp_(double x) { return ::exp(x); }
GMI_HD inline float expm1_(float x) { return ::expm1f(x); }
GMI_HD inline double expm1_(double x) { return ::expm1(x); }
GMI_HD inline float log_(float x) { return ::logf(x); }
GMI_HD inline double log_(double x) { return ::log(x); }
GMI_HD inline float tanh_(float x) { return ::tanhf(x); }
GMI_HD inline double tanh_(double x) { return ::tanh(x); }
GMI_HD inline float sqrt_(float x) { return ::sqrtf(x); }
GMI_HD inline double sqrt_(double x) { return ::sqrt(x); }

template <class T>
GMI_HD inline T max_(T a, T b) {
  return a > b ? a : b;
}
template <class T>
GMI_HD inline T min_(T a, T b) {
  return a < b ? a : b;
}
template <class T>
GMI_HD inline T clamp_(T x, T lo, T hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

// log(2 pi) / 2, the constant of the Gaussian log-density.
template <class T>
inline constexpr T half_log_2pi = static_cast<T>(0.91893853320467274178032973640562);

}  // namespace gmi::nn::detail

// `#pragma unroll` where nvcc reads it; nothing for the host compiler (which would warn under -Wall).
#if defined(__CUDACC__)
#define GMI_NN_PRAGMA(x) _Pragma(#x)
#define GMI_NN_UNROLL_N(n) GMI_NN_PRAGMA(unroll(n))
#else
#define GMI_NN_UNROLL_N(n)
#endif
