#!/usr/bin/env python3
"""Instruments a copy of the gmi tree for bench/ppo/time_synced_steps.sh: the warp gradient kernel stamps its start
(block 0, %globaltimer) and ppo_step_kernel (the synced step with a row exchange) stamps its phases, accumulates
per-GMI means in device memory and prints them every 8192 steps. Diagnostic only: never applied to the repository
itself. Usage: step_timing_patch.py <tree> (fails with one line if the code it hooks into has changed)."""
import sys
from pathlib import Path


def patch(path: Path, pairs):
    text = path.read_text()
    for old, new in pairs:
        if old not in text:
            sys.exit(f"step_timing_patch: {path}: the code to instrument has changed (missing: {old.splitlines()[0]!r})")
        text = text.replace(old, new, 1)
    path.write_text(text)


def main():
    if len(sys.argv) != 2:
        sys.exit("step_timing_patch: usage: step_timing_patch.py <tree>")
    tree = Path(sys.argv[1])
    detail = tree / "include/gmi/rl/detail"
    patch(detail / "ppo_warp_gradient.cuh", [
        ("namespace gmi::rl::detail {\n",
         "#include <gmi/comm/flag_wait.cuh>\nnamespace gmi::rl::detail {\n__device__ unsigned long long timing_grad_start;\n"),
        ("  constexpr int A = W::act_dim, S = W::in_flight;\n",
         "  constexpr int A = W::act_dim, S = W::in_flight;\n"
         "  if (blockIdx.x == 0 && threadIdx.x == 0) timing_grad_start = comm::detail::global_ns();\n"),
    ])
    patch(detail / "ppo_step.cuh", [
        ("namespace gmi::rl::detail {\n",
         "#include <cstdio>\n#include <gmi/rl/detail/ppo_warp_gradient.cuh>\nnamespace gmi::rl::detail {\n"
         "__device__ double timing_sum[8];\n__device__ unsigned long long timing_last_end;\n"),
        ("  std::uint32_t g = 0;\n  if (exchanged && !comm::exchange_begin(a.exchange, g, scratch)) return;\n",
         "  std::uint32_t g = 0;\n  unsigned long long tD = 0, tE = 0, tF = 0, tG = 0;\n"
         "  if (threadIdx.x == 0) tD = comm::detail::global_ns();\n"
         "  if (exchanged && !comm::exchange_begin(a.exchange, g, scratch)) return;\n"
         "  if (threadIdx.x == 0) tE = comm::detail::global_ns();\n"),
        ("  if (exchanged) {\n    if (!comm::exchange_post(a.exchange, g, scratch)) return;\n",
         "  if (threadIdx.x == 0) tF = comm::detail::global_ns();\n"
         "  if (exchanged) {\n    if (!comm::exchange_post(a.exchange, g, scratch)) return;\n"
         "    if (threadIdx.x == 0) tG = comm::detail::global_ns();\n"),
        ("    if (threadIdx.x == 0) ppo_adapt_lr(a.term_log, a.lr, a.kl_target, a.min_lr, a.max_lr);\n  }\n}\n",
         "    if (threadIdx.x == 0) ppo_adapt_lr(a.term_log, a.lr, a.kl_target, a.min_lr, a.max_lr);\n  }\n"
         "  __syncthreads();\n"
         "  if (threadIdx.x == 0) {\n"
         "    const unsigned long long tH = comm::detail::global_ns(), tC = timing_grad_start;\n"
         "    timing_sum[6] += 1;\n"
         "    if (timing_last_end != 0) {\n"
         "      timing_sum[0] += tC - timing_last_end;\n"
         "      timing_sum[1] += tD - tC;\n"
         "      timing_sum[2] += tE - tD;\n"
         "      timing_sum[3] += tF - tE;\n"
         "      timing_sum[4] += tG ? tG - tF : 0;\n"
         "      timing_sum[5] += tH - (tG ? tG : tF);\n"
         "      timing_sum[7] += tH - timing_last_end;\n"
         "    }\n"
         "    timing_last_end = tH;\n"
         "    if (static_cast<unsigned long long>(timing_sum[6]) % 8192 == 0) {\n"
         "      const double n = timing_sum[6] - 1;\n"
         "      printf(\"[step timing, GMI %d] %.0f steps, mean us: to gradient start %.2f | gradient to step kernel %.2f | \"\n"
         "             \"wait for releases %.2f | own row %.2f | post and wait for rows %.2f | mean and Adam %.2f | step %.2f\\n\",\n"
         "             a.exchange.rank, n, timing_sum[0] / n / 1e3, timing_sum[1] / n / 1e3, timing_sum[2] / n / 1e3,\n"
         "             timing_sum[3] / n / 1e3, timing_sum[4] / n / 1e3, timing_sum[5] / n / 1e3, timing_sum[7] / n / 1e3);\n"
         "    }\n"
         "  }\n}\n"),
    ])


if __name__ == "__main__":
    main()
