#!/usr/bin/env bash
# On a GPU machine, from the repository root: the warp path's layouts (batch_warp.cuh, rl/physics_env_step.cuh) checked
# and measured in one call of under 9 minutes on a 16-core H100/H200 (about 4 of them building):
#   1. gmi.test.physics_tasks (host): the path rule against the resident count, tile widths per model, the split step;
#   2. gmi.test.physics_gpu (batch.cuh against the host) and gmi.test.physics_tasks_gpu: every layout (tiles of 32,
#      16 and 8 lanes per environment; the constraint rows in shared memory or in global slots; tiles stepping
#      several environments in turn) against the host and against thread per env, physics only and through the env
#      driver and batched_dynamics;
#   3. gmi.bench.physics_tasks --driver-paths: env steps per second through env_batch (physics, observation, reward,
#      auto-reset, random actions) for ant_v4, humanoid_v4 and anymal at 4096, 16384 and 65536 environments: thread per
#      env, then the warp path at 32 lanes with the rows in shared memory (the first warp path's layout), 16 and 8
#      lanes, each with the rows in shared memory and in global slots; medians of 3;
#   4. with PHYSICS_ONLY=1, gmi.bench.physics_tasks --compare-paths over the same layouts (physics only).
# Before the runs it prints each physics kernel's registers, stack and spills (cuobjdump -res-usage of the bench).
# Result lines (JSON) go to $OUT/physics_subwarp.jsonl (and $OUT/physics_subwarp_paths.jsonl), logs to $OUT/*.log,
# a table to stdout: each layout's rate, its ratio to thread per env and to the first warp layout, the environments
# an SM holds at once, the rule's pick, and the same case's median in BEFORE (result files of an earlier revision,
# space-separated; default the 2157117 measurements committed under bench/results/physics) with after/before.
# A second bench built beside the first with the tile kernels' registers capped at CAP (default 168; 0: ptxas's
# choice; off: no second bench; GMI_PHYSICS_TILE_MAX_REGISTERS, whose default the first has) measures 16 and 8
# lanes with the rows in global slots; its rows are keyed @CAP.
# Usage: bench/physics/device_subwarp.sh   (JOBS: build jobs, default all cores; PHYSICS_ONLY=1; BEFORE=files; CAP)
set -uo pipefail
name=physics_subwarp
source "$(dirname "$0")/device_common.sh"

configure_build
targets=(gmi.test.physics_tasks gmi.test.physics_gpu gmi.test.physics_tasks_gpu gmi.bench.physics_tasks)
# A second bench with the tile kernels' registers capped at CAP (GMI_PHYSICS_TILE_MAX_REGISTERS; 0: ptxas's choice),
# built beside the first (the cores outnumber one translation unit's work); CAP=off skips it.
cap=${CAP:-168}
if [ "$cap" != off ]; then
  capbuild=$build-cap$cap
  ( cmake --preset gpu -B "$capbuild" -DGMI_BUILD_BENCHMARKS=ON \
      -DCMAKE_CUDA_FLAGS="-DGMI_PHYSICS_TILE_MAX_REGISTERS=$cap" &&
    timeout 290 cmake --build "$capbuild" -j"${JOBS:-$(nproc)}" --target gmi.bench.physics_tasks ) \
    > "$out/build_cap.log" 2>&1 &
  cap_pid=$!
fi
build_targets 280
if [ "$cap" != off ]; then
  wait "$cap_pid" || { echo "capped build failed:"; grep -E "error" "$out/build_cap.log" | head -5; cap=off; }
fi

echo "== registers and stack of the physics kernels (bench binary)"
binaries=("$build/bench/physics/gmi.bench.physics_tasks")
[ "$cap" != off ] && binaries+=("$capbuild/bench/physics/gmi.bench.physics_tasks")
for bin in "${binaries[@]}"; do
  echo "-- $bin"
  print_resources "$bin"
done

echo "== tests"
timeout 40 "$build/tests/envs/gmi.test.physics_tasks" -tc='envs.step_path.*' > "$out/test_step_path.log" 2>&1 ||
  { status=1; tail -20 "$out/test_step_path.log"; }
tail -2 "$out/test_step_path.log"
timeout 40 "$build/tests/physics/gmi.test.physics_gpu" > "$out/test_physics_gpu.log" 2>&1 ||
  { status=1; tail -20 "$out/test_physics_gpu.log"; }
tail -2 "$out/test_physics_gpu.log"
timeout 110 "$build/tests/envs_gpu/gmi.test.physics_tasks_gpu" -s > "$out/test_physics_tasks_gpu.log" 2>&1; rc=$?
grep -E "lanes|local_batch:" "$out/test_physics_tasks_gpu.log" | sed 's/^ *//' | head -60
tail -3 "$out/test_physics_tasks_gpu.log"; [ $rc -eq 0 ] || status=1

layouts=(--tile-lanes 32 16 8 --solver-rows shared global)
echo "== env steps per second through env_batch: thread per env, then the warp path in each layout"
timeout 180 "$build/bench/physics/gmi.bench.physics_tasks" --driver-paths "${layouts[@]}" --run-id "$run_id" \
  --git "$git_rev" --out "$lines" --envs 4096 16384 65536 --steps 8 --warmup 2 --reps 3 \
  > "$out/bench_physics_subwarp_driver.log" 2>&1 || { status=1; tail -5 "$out/bench_physics_subwarp_driver.log"; }
if [ "$cap" != off ]; then
  echo "== the same with the tile kernels' registers capped at $cap (16 and 8 lanes, rows in global slots)"
  timeout 120 "$capbuild/bench/physics/gmi.bench.physics_tasks" --driver-paths --tile-lanes 16 8 --solver-rows global \
    --run-id "$run_id-cap$cap" --git "$git_rev" --out "$out/physics_subwarp_cap.jsonl" --envs 4096 16384 65536 \
    --steps 8 --warmup 2 --reps 3 > "$out/bench_physics_subwarp_cap.log" 2>&1 ||
    { status=1; tail -5 "$out/bench_physics_subwarp_cap.log"; }
  # Its warp lines join the table (keys with @cap); its thread lines repeat the uncapped build's kernel.
  grep -v '"path":"thread_per_env"' "$out/physics_subwarp_cap.jsonl" | sed 's/^{/{"cap_build":true,/' >> "$lines"
fi
paths=()
if [ "${PHYSICS_ONLY:-0}" = 1 ]; then
  echo "== physics only, thread per env (batch_local) against the warp path's layouts (batch_warp)"
  timeout 90 "$build/bench/physics/gmi.bench.physics_tasks" --compare-paths "${layouts[@]}" --run-id "$run_id-paths" \
    --git "$git_rev" --out "$out/physics_subwarp_paths.jsonl" --envs 16384 65536 --steps 10 --warmup 2 --reps 3 \
    > "$out/bench_physics_subwarp_paths.log" 2>&1 || { status=1; tail -5 "$out/bench_physics_subwarp_paths.log"; }
  paths=("$out/physics_subwarp_paths.jsonl")
fi
committed=bench/results/physics/2026-11-28-NVIDIA-H200-2157117
before_files=${BEFORE:-$committed-tiles.jsonl $committed-driver-paths.jsonl}
# shellcheck disable=SC2086
python3 - "$lines" "${paths[@]}" -- $before_files <<'PY'
import json, sys
args = sys.argv[1:]
cut = args.index("--")
def key_of(j):
    if j["path"] == "thread_per_env":
        return "threads"
    cap = j.get("tile_max_registers", 0)
    return f'{j.get("lanes")}/{j.get("solver_rows")}' + (f"@{cap}" if j.get("cap_build") else "")
before, revs = {}, set()
for path in args[cut + 1:]:
    try:
        for l in open(path):
            j = json.loads(l)
            before[(j["task"], j["num_envs"], bool(j.get("physics_only")), key_of(j))] = j["median"]
            revs.add(j.get("git", "?"))
    except OSError:
        print(f"no before lines in {path}")
if before:
    print(f"-- before: {', '.join(sorted(revs))} ({len(before)} cases); 'bef' columns below")
for path in args[:cut]:
    try:
        rows = [json.loads(l) for l in open(path)]
    except OSError:
        print(f"no result lines in {path}")
        continue
    print(f"-- {path.rsplit('/', 1)[-1]}: env steps/s (median of 3), ratio to thread per env, to 32 lanes shared")
    by = {}
    for j in rows:
        by.setdefault((j["task"], j["num_envs"], bool(j.get("physics_only"))), {})[key_of(j)] = j
    for (task, n, phys), runs in sorted(by.items()):
        base = runs.get("threads", {}).get("median")
        old = runs.get("32/shared", {}).get("median")
        chosen = next((j.get("chosen") for j in runs.values() if "chosen" in j), None)
        print(f"{task:>9} {n:>6} envs" + (f"; the rule picks {chosen}" if chosen else ""))
        for key, j in runs.items():
            m = j["median"]
            r1 = f"{m / base:5.2f}x thr" if base else ""
            r2 = f"{m / old:5.2f}x w32" if old and key != "threads" else ""
            res = f'{j["resident_envs_per_sm"]:>3} resident/SM, {j.get("envs_per_block")} per block, ' \
                  f'{j.get("registers_per_thread")} regs' \
                if "resident_envs_per_sm" in j else ""
            b = before.get((task, n, phys, key.split("@")[0]))  # a capped row against the layout's before
            r3 = f"bef {b / 1e6:6.3f} M, {m / b:5.2f}x" if b else "bef -"
            print(f"    {key:>14}: {m / 1e6:7.3f} M (min {j['min'] / 1e6:.3f}, max {j['max'] / 1e6:.3f}) {r1} {r2} "
                  f"{r3}; {res}")
        best = max(runs, key=lambda k: runs[k]["median"])
        print(f"    fastest: {best}")
PY
exit $status
