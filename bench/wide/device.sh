#!/usr/bin/env bash
# Issue 37 on one GPU machine, from the repository root: build, run the nn GPU tests and the PPO gradient-path
# test, then gmi.bench.wide and the JAX reference beside it under one run id (medians of 5 windows), and the
# peak dense GEMM rate; result lines in $OUT/wide.jsonl, test log in $OUT/wide-tests.log, a ratio summary in
# $OUT/wide-summary.txt. Usage: OUT=/some/dir bench/wide/device.sh
set -uo pipefail
OUT=${OUT:?set OUT to the folder for result lines}
mkdir -p "$OUT"
BUILD=${BUILD:-/tmp/build}
rev=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
run_id="$(date -u +%Y-%m-%dT%H:%M:%SZ)-wide-$rev"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
export NCCL_NVLS_ENABLE=0

cmake --preset gpu -B "$BUILD" -DGMI_BUILD_BENCHMARKS=ON > "$OUT/wide-build.log" 2>&1 || { tail -30 "$OUT/wide-build.log"; exit 1; }
timeout 300 cmake --build "$BUILD" -j16 --target gmi.bench.wide gmi.test.nn gmi.test.nn_gpu gmi.test.ppo_gpu \
  >> "$OUT/wide-build.log" 2>&1 || { tail -40 "$OUT/wide-build.log"; exit 1; }

timeout 240 ctest --test-dir "$BUILD" -R '^nn|^ppo_gpu\.gradient_paths' --output-on-failure --timeout 200 \
  > "$OUT/wide-tests.log" 2>&1
tests_rc=$?
grep -E "tests passed|Failed|relative errors" "$OUT/wide-tests.log" | head -60

timeout 180 "$BUILD/bench/wide/gmi.bench.wide" --reps 5 --out "$OUT/wide.jsonl" --run-id "$run_id" --git "$rev"
PYTHONUNBUFFERED=1 timeout 240 python3 bench/wide/jax_reference.py --reps 5 --out "$OUT/wide.jsonl" \
  --run-id "$run_id" --git "$rev"

python3 - "$OUT/wide.jsonl" "$device" > "$OUT/wide-summary.txt" <<'PY'
import json, sys
path, device = sys.argv[1], sys.argv[2]
lines = [json.loads(l) for l in open(path) if l.strip()]
for l in lines:
    l["device"] = device  # one name for both impls: nvidia-smi's
with open(path, "w") as f:
    for l in lines:
        f.write(json.dumps(l) + "\n")
peak = {l["precision"]: l["median"] for l in lines if l.get("case") == "peak_gemm"}
print("peak dense GEMM TFLOP/s:", peak)
def best(impl, case, net, n):
    c = [l for l in lines if l["impl"] == impl and l.get("case") == case and l.get("net") == net and l.get("num_envs") == n]
    return max(c, key=lambda l: l["median"]) if c else None
targets = {("serving", "shadow_hand_mlp", 4096): 85e6, ("serving", "ant_mlp", 4096): 220e6}
for case, nets, ns in (("serving", ("shadow_hand_mlp", "humanoid_mlp", "ant_mlp"), (4096, 16384)),
                       ("training", ("shadow_hand_mlp", "humanoid_mlp", "ant_mlp"), (4096,))):
    for net in nets:
        for n in ns:
            g, j = best("gmi", case, net, n), best("jax_reference", case, net, n)
            if not g:
                continue
            ratio = g["median"] / j["median"] if j else float("nan")
            t = targets.get((case, net, n))
            print(f"{case:8s} {net:16s} {n:6d}: gmi {g['median']/1e6:9.2f} M ({g['precision']}, {g.get('path', g.get('gradient_path'))}, "
                  f"{g.get('tflops', 0):.1f} TF/s) jax {j['median']/1e6 if j else float('nan'):9.2f} M ({j['precision'] if j else '-'}) "
                  f"ratio {ratio:.2f} (need >= 2){'' if not t else f', target {t/1e6:.0f} M: ' + ('met' if g['median'] >= t else 'NOT met')}")
c = [l for l in lines if l.get("net") == "cartpole_mlp"]
if c:
    print(f"serving  cartpole_mlp 512: gmi {c[0]['median']/1e6:.2f} M (target 60 M: {'met' if c[0]['median'] >= 60e6 else 'NOT met'})")
PY
cat "$OUT/wide-summary.txt"
echo "tests exit code: $tests_rc"
exit $tests_rc
