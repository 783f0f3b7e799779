# Shared set-up of the wide-network device scripts, sourced after `name=<results name>`: the repository root as the
# working folder; out ($OUT), build ($BUILD or /tmp/build), rev, run_id, device (nvidia-smi's name) and lines
# ($out/$name.jsonl). wide_build SECONDS TARGET... configures $build (gpu preset, benchmarks on) and builds only
# those targets (-j16) within SECONDS, exiting 1 with the errors; wide_slowest COUNT lists its slowest steps;
# wide_reference SECONDS ARGS... runs the JAX reference (bench/wide/jax_reference.py ARGS) within SECONDS under the
# same run id into $lines.
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
out=${OUT:?set OUT to the folder for result lines}
mkdir -p "$out"
build=${BUILD:-/tmp/build}
rev=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
run_id="$(date -u +%Y-%m-%dT%H:%M:%SZ)-$name-$rev"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
lines="$out/$name.jsonl"
export NCCL_NVLS_ENABLE=0
echo "GPU: ${CUDA_VISIBLE_DEVICES:-all visible} ($device); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# left CAP RESERVE (scripts that set start_s and budget_s): CAP seconds, or fewer so that RESERVE seconds of the
# budget stay for the later steps.
left() {
  local rest=$(( budget_s - ($(date +%s) - start_s) - $2 ))
  (( rest < $1 )) && echo $(( rest > 10 ? rest : 10 )) || echo "$1"
}

wide_build() {
  local seconds=$1 start log="$out/$name-build.log"
  shift
  start=$(date +%s)
  cmake --preset gpu -B "$build" -DGMI_BUILD_BENCHMARKS=ON > "$log" 2>&1 || { tail -30 "$log"; exit 1; }
  timeout "$seconds" cmake --build "$build" -j16 --target "$@" >> "$log" 2>&1 ||
    { grep -B2 -A8 "error" "$log" | head -60; echo "build failed or timed out"; exit 1; }
  echo "built in $(( $(date +%s) - start )) s: $*; device: $device"
}

# wide_slowest COUNT: the build's COUNT slowest steps (ninja's log), also appended to $out/$name-build.log.
wide_slowest() {
  awk -F'\t' 'NR > 1 { printf "%6.1f s %s\n", ($2 - $1) / 1000, $4 }' "$build/.ninja_log" | sort -rn | head -"$1" |
    tee -a "$out/$name-build.log"
}

wide_reference() {
  local seconds=$1
  shift
  PYTHONUNBUFFERED=1 timeout "$seconds" python3 bench/wide/jax_reference.py --out "$lines" --run-id "$run_id" \
    --git "$rev" "$@" | cut -c1-200
}
