# Shared set-up of the physics device scripts, sourced after `name=<results name>`: the repository root as the
# working folder; out ($OUT), build ($BUILD or /tmp/build), git_rev, run_id and lines ($out/$name.jsonl); status 0;
# pugixml unpacked from .carry/debs where bench/physics/carry_pugixml.sh carried it, so one build folder serves all.
# configure_build [cmake args] and build_targets SECONDS (the array `targets`) configure and build $build.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
out=${OUT:?OUT: the folder for results (set by the device machine)}
build=${BUILD:-/tmp/build}
git_rev=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
export GMI_GIT_REVISION=$git_rev
run_id="$name-$(date -u +%Y%m%dT%H%M%SZ)"
lines=$out/$name.jsonl
status=0
if ls .carry/debs/libpugixml*.deb >/dev/null 2>&1; then
  for f in .carry/debs/libpugixml*.deb; do dpkg -x "$f" /tmp/gmi-sysroot; done
  export CMAKE_PREFIX_PATH=/tmp/gmi-sysroot/usr LD_LIBRARY_PATH=/tmp/gmi-sysroot/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
fi

# Configures $build (gpu preset, benchmarks on, and the extra cmake arguments given); exits 1 with the log's tail.
configure_build() {
  echo "== configure and build ($build)"
  cmake --preset gpu -B "$build" -DGMI_BUILD_BENCHMARKS=ON "$@" > "$out/configure.log" 2>&1 ||
    { tail -20 "$out/configure.log"; exit 1; }
}

# Builds the array `targets` within $1 seconds (-j$JOBS, default the machine's cores); exits 1 with the errors;
# prints the time and sets `device`.
build_targets() {
  local start
  start=$(date +%s)
  timeout "$1" cmake --build "$build" -j"${JOBS:-$(nproc)}" --target "${targets[@]}" > "$out/build.log" 2>&1 ||
    { grep -E "error|Error" "$out/build.log" | head -20; echo "build failed or timed out"; exit 1; }
  echo "built in $(( $(date +%s) - start )) s: ${targets[*]}"
  device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  echo "device: $device"
}

# Prints the registers and stack of each physics kernel in binary $1 (cuobjdump -res-usage), a line per kernel and
# task (the staged path's stage kernels with their stage); the raw listing goes to $out/res_usage.log.
print_resources() {
  local cuobjdump
  cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
  "$cuobjdump" -res-usage "$1" > "$out/res_usage.log" 2>&1 || { echo "cuobjdump failed on $1"; return; }
  python3 - "$out/res_usage.log" <<'PY'
import re, sys
kinds = ("warp_env_step_kernel|physics_thread_shared_kernel|physics_thread_step_kernel|local_step_envs|warp_step_envs|"
         "staged_begin_kernel|staged_stage_shared_kernel|staged_stage_kernel|staged_end_kernel")
name = None
for line in open(sys.argv[1]):
    m = re.search(r"Function (\S+):", line)
    if m:
        name = m.group(1)
        continue
    r = re.search(r"REG:(\d+) STACK:(\d+)", line)
    k = re.search(rf"({kinds})\w*?(ant_v4|humanoid_v4|anymal|ant|humanoid)(\w*)", name or "")
    if r and k:
        kind = k.group(1)
        if kind in ("staged_stage_kernel", "staged_stage_shared_kernel"):  # the stage, K of <E, K>
            stage = re.match(r"ELi(\d)E", k.group(3))
            kind = f"{kind} {stage.group(1) if stage else '?'}"
        print(f"  {kind:>30} {k.group(2):>8}: {r.group(1):>3} registers, {r.group(2):>6} bytes stack")
        name = None
PY
}
