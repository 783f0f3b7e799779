#!/usr/bin/env bash
# Issue 34, learnfix: on ONE GPU (CUDA_VISIBLE_DEVICES picks it; another script may share the machine's cores), a cold
# machine, under 7 minutes with the build: gmi's defaults (in-phase episode starts again, docs/learning.md "Out-of-phase
# episode starts") against out-of-phase starts (--random-episode-start true), the candidate fix for their late
# drift on the proxies (with --lr-schedule linear), the linear lr alone, and the JAX reference PPO (plain and
# normalized), 2 seeds, at the suite's env steps.
# From the repository root; writes under $OUT: fix.jsonl (the suite's result lines: impl "gmi" for the defaults,
# "gmi_<label>" for each variant; bench/plot reads them from bench/results/learning-suite/), run.log, and one summary
# line a task (device_fix: <task>: ...).
# Environment: FIX_TASKS (default below, in order of priority: run_suite.sh skips what does not fit the budget),
#   SEEDS (2), FIX_VARIANTS ("label|flags;..." the gmi configurations beside the defaults), SUITE_JOBS (build jobs,
#   default 16), BUILD (/tmp/build-fix), SUITE_BUDGET_S (380: no training starts after this many seconds, the build
#   included), PYTHON (python3 with jax).
# Its own build folder, so a script on the other GPU building in /tmp/build does not race this one.
export BUILD=${BUILD:-/tmp/build-fix}
source "$(dirname "$0")/device_prelude.sh"
export SUITE_TASKS=${FIX_TASKS:-"franka_cabinet_proxy anymal_proxy ant_proxy point_reach pendulum"}
export GMI_VARIANTS=${FIX_VARIANTS:-"random|--random-episode-start true;random_lin|--random-episode-start true --lr-schedule linear;lin|--lr-schedule linear"}
export SUITE_JOBS=${SUITE_JOBS:-16}
export SUITE_BUDGET_S=${SUITE_BUDGET_S:-380} SUITE_REFERENCE_S=${SUITE_REFERENCE_S:-70}
seeds=${SEEDS:-2}
[[ "$seeds" =~ ^[1-9][0-9]*$ ]] || { echo "device_fix: SEEDS: got $seeds, need a positive integer"; exit 2; }
echo "device_fix: gmi (defaults) vs ${GMI_VARIANTS} vs the reference on: $SUITE_TASKS; $seeds seeds;" \
  "GPU ${CUDA_VISIBLE_DEVICES:-all visible}; $SUITE_JOBS build jobs"
t0=$(date +%s)
bash bench/learning/run_suite.sh part1 "$out/fix.jsonl" "$seeds"
status=$?
# One line a task: each impl's median of the deciding metric (optimum gap of the deterministic evaluation for the
# proxies, lower is better; evaluation return otherwise, higher is better) and its training return.
python3 - "$out/fix.jsonl" <<'PY' || status=1
import json, sys
rows = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    rows.setdefault(d["task"], {}).setdefault(d["impl"], {})[d["metric"]] = d["median"]
for task, impls in rows.items():
    key = "optimum_gap" if any("optimum_gap" in m for m in impls.values()) else "eval_return"
    sign = 1 if key == "optimum_gap" else -1
    gmis = {i: m[key] for i, m in impls.items() if i.startswith("gmi") and key in m}
    best = min(gmis, key=lambda i: sign * gmis[i]) if gmis else "none"
    parts = [f"{i} {key} {m[key]:.4g} (train {m.get('mean_return', float('nan')):.4g})"
             for i, m in sorted(impls.items()) if key in m]
    print(f"device_fix: {task}: " + "; ".join(parts) + f"; best gmi: {best}")
PY
echo "device_fix: exit $status after $(( $(date +%s) - t0 )) s; lines in $out/fix.jsonl"
exit $status
