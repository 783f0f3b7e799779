#!/usr/bin/env bash
# GPU integration check of a gmi binary: gpu_run.sh [--min-gpus N] <expected exit> <output regex> <command> [args...]
# Skips visibly (exit 77) without a GPU, or with fewer than N GPUs. Passes when the command exits with the expected code, its output
# (lines joined by spaces) matches the regex, and it left nothing behind: no /dev/shm segment of this user's runs, no file the
# CUDA driver keeps there for a process's interprocess events (cuda.shm.*, see docs/runtime.md), no MPS daemon or server of
# ours (pipe directories /tmp/gmi-mps-<uid>-*), no process of its group.
set -uo pipefail
min_gpus=1
if [ "${1:-}" = "--min-gpus" ]; then min_gpus=$2; shift 2; fi
expect_rc=$1 regex=$2
shift 2
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "[gmi] SKIPPED: no GPU (nvidia-smi -L failed)"
  exit 77
fi
have=$(nvidia-smi -L | grep -c '^GPU ')
if [ "$have" -lt "$min_gpus" ]; then
  echo "[gmi] SKIPPED: needs $min_gpus GPUs, this machine has $have"
  exit 77
fi
uid=$(id -u)
shm_before=$(ls /dev/shm 2>/dev/null | grep -c "^gmi-${uid}-" || true)
cuda_shm() { find /dev/shm -maxdepth 1 -name 'cuda.shm.*' -user "$uid" 2>/dev/null | sort; }
cuda_shm_before=$(cuda_shm)
out=$(timeout 300 "$@" 2>&1)
rc=$?
echo "$out"
fail=0
if [ "$rc" != "$expect_rc" ]; then echo "gpu_run: exit code: got $rc, need $expect_rc"; fail=1; fi
# The output as one line, so a regex may span lines.
if ! grep -Eq -- "$regex" <<<"$(tr '\n' ' ' <<<"$out")"; then echo "gpu_run: output does not match '$regex'"; fail=1; fi
sleep 0.2
shm_after=$(ls /dev/shm 2>/dev/null | grep -c "^gmi-${uid}-" || true)
if [ "$shm_after" -gt "$shm_before" ]; then echo "gpu_run: /dev/shm segments left: $shm_after (before: $shm_before)"; fail=1; fi
cuda_left=$(comm -13 <(echo "$cuda_shm_before") <(cuda_shm) | tr '\n' ' ')
if [ -n "${cuda_left// /}" ]; then echo "gpu_run: CUDA interprocess-event files left in /dev/shm: $cuda_left"; fail=1; fi
# MPS processes of a gmi run (pipe directory /tmp/gmi-mps-<uid>-*) still alive; a daemon that was told to quit
# may take a moment to exit, so allow it 3 s.
ours() {
  for pid in $(pgrep -u "$uid" -f "nvidia-cuda-mps" 2>/dev/null); do
    (tr '\0' '\n' < "/proc/$pid/environ") 2>/dev/null | grep -q "^CUDA_MPS_PIPE_DIRECTORY=/tmp/gmi-mps-${uid}-" && echo "$pid"
  done
}
for _ in $(seq 30); do [ -z "$(ours)" ] && break; sleep 0.1; done
left=$(ours)
if [ -n "$left" ]; then echo "gpu_run: MPS processes of a gmi run still alive: $left"; fail=1; fi
exit $fail
