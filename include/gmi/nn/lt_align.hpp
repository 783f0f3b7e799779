#pragma once
// The pointer alignments the cuBLASLt layers (lt_linear.cuh) plan with, host-only so that their rules have host
// tests. cuBLASLt's heuristic is told the alignments of A, B, C and D but not of an epilogue's bias vector, so an
// algorithm it picks may read or write the bias 16 bytes at a time and fault (misaligned address, then
// CUBLAS_STATUS_EXECUTION_FAILED on the next call) on a bias that sits at a 4-byte offset inside a larger
// buffer. lt_gemm fuses a bias epilogue only on a bias aligned to lt_bias_alignment, else its caller adds or sums
// the bias with its own kernel.

#include <cstdint>

namespace gmi::nn {

// The bias alignment (bytes) a fused bias / ReLU-bias / bias-gradient epilogue needs from its vector.
inline constexpr std::uint32_t lt_bias_alignment = 16;

// The largest power of two up to 256 that divides the address (what the heuristic must assume of a pointer).
inline std::uint32_t pointer_alignment(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t align = 256;
  while (align > 1 && (a % align) != 0) align /= 2;
  return align;
}

// Whether a fused epilogue may use this bias vector (nullptr: no vector, nothing to misalign).
inline bool lt_bias_epilogue_fits(const void* bias) { return pointer_alignment(bias) >= lt_bias_alignment; }

}  // namespace gmi::nn
