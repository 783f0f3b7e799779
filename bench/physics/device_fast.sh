#!/usr/bin/env bash
# On a GPU machine, from the repository root: the warp-per-environment step with its tree stages, dof stages,
# factorization and solver gradients over the lanes (batch_warp.cuh), checked and measured in one call of under
# 9 minutes on a 16-core H100/H200 (about 4 of them building):
#   1. gmi.test.physics (host, -tc='physics.split.*'): the warp's orderings replayed on the host against the serial
#      stages bit for bit (tree stages a depth at a time, the factorization's side-by-side eliminations, the
#      solver's 8-lane row sums, collision by slots, rows by scans);
#   2. gmi.test.physics_gpu (batch.cuh against the host) and gmi.test.physics_tasks_gpu (warp per env against the
#      host and against thread per env; the env driver's warp path against its thread path; host against device);
#   3. gmi.bench.physics_tasks --driver-paths: env steps per second through env_batch (physics, observation,
#      reward, auto-reset, random actions) on each path, ant_v4, humanoid_v4 and anymal at 4096, 16384 and 65536 envs;
#   4. gmi.bench.physics_tasks --compare-paths: physics only, both device layouts, the same counts.
# pugixml (the test models' loader) is unpacked from .carry/debs where bench/physics/carry_pugixml.sh carried it.
# Result lines (JSON) go to $OUT/physics_fast.jsonl (driver paths) and $OUT/physics_fast_paths.jsonl (physics
# only), logs to $OUT/*.log, a summary to stdout. Usage: bench/physics/device_fast.sh
set -uo pipefail
name=physics_fast
source "$(dirname "$0")/device_common.sh"

configure_build
targets=(gmi.test.physics gmi.test.physics_gpu gmi.test.physics_tasks_gpu gmi.bench.physics_tasks)
build_targets 300

echo "== tests"
timeout 60 "$build/tests/physics/gmi.test.physics" -tc='physics.split.*' > "$out/test_physics_split.log" 2>&1 ||
  { status=1; tail -20 "$out/test_physics_split.log"; }
tail -2 "$out/test_physics_split.log"
timeout 90 "$build/tests/physics/gmi.test.physics_gpu" > "$out/test_physics_gpu.log" 2>&1 ||
  { status=1; tail -20 "$out/test_physics_gpu.log"; }
tail -2 "$out/test_physics_gpu.log"
timeout 150 "$build/tests/envs_gpu/gmi.test.physics_tasks_gpu" -s > "$out/test_physics_tasks_gpu.log" 2>&1; rc=$?
grep -E "env driver|warp per env|local_batch:|worst" "$out/test_physics_tasks_gpu.log" | head -24
tail -3 "$out/test_physics_tasks_gpu.log"; [ $rc -eq 0 ] || status=1

echo "== env steps per second through env_batch, thread per env against warp per env"
timeout 170 "$build/bench/physics/gmi.bench.physics_tasks" --driver-paths --run-id "$run_id" --git "$git_rev" \
  --out "$lines" --envs 2048 4096 8192 16384 65536 --steps 20 --warmup 3 --reps 3 \
  > "$out/bench_physics_fast_driver.log" 2>&1 || { status=1; tail -5 "$out/bench_physics_fast_driver.log"; }
echo "== physics only, thread per env (batch_local) against warp per env (batch_warp)"
timeout 90 "$build/bench/physics/gmi.bench.physics_tasks" --compare-paths --run-id "$run_id-paths" --git "$git_rev" \
  --out "$out/physics_fast_paths.jsonl" --envs 4096 16384 65536 --steps 20 --warmup 3 --reps 3 \
  > "$out/bench_physics_fast_paths.log" 2>&1 || { status=1; tail -5 "$out/bench_physics_fast_paths.log"; }
python3 - "$lines" "$out/physics_fast_paths.jsonl" <<'PY'
import json, sys
for path in sys.argv[1:]:
    try:
        rows = [json.loads(l) for l in open(path)]
    except OSError:
        print(f"no result lines in {path}")
        continue
    print(f"-- {path.rsplit('/', 1)[-1]}")
    rate = {}
    for j in rows:
        how = j.get("path", j.get("impl")) + (f' x{j["warps_per_block"]}' if "warps_per_block" in j else "")
        extra = f'; the rule picks {j["chosen"]}' if "chosen" in j else ""
        print(f'{j["task"]:>9} {j["num_envs"]:>6} envs {str(how):>15}: {j["median"]/1e6:8.3f} M env steps/s '
              f'(min {j["min"]/1e6:.3f}, max {j["max"]/1e6:.3f}){extra}')
        rate.setdefault((j["task"], j["num_envs"]), {})[str(how)] = j["median"]
    for (task, n), by in sorted(rate.items()):
        if len(by) > 1:
            best = max(by, key=by.get)
            print(f'{task:>9} {n:>6} envs: fastest {best} ' + ', '.join(f'{k} {v/1e6:.3f} M' for k, v in by.items()))
PY
exit $status
