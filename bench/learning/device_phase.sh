#!/usr/bin/env bash
# Issue 34 on one GPU, one device call of under 9 minutes (cold machine, build included): gmi's defaults (out-of-phase
# episode starts, ppo_config::random_episode_start) against the old defaults (every env starting its first episode
# at step 0: --random-episode-start false) and the JAX reference PPO (plain and normalized) at equal env steps, on
# the tasks that sit above the optimum or behind the reference (docs/learning.md), 2 seeds each.
# From the repository root; writes under $OUT: phase.jsonl (the suite's result lines: impl "gmi" for the defaults,
# "gmi_old" for the old ones; bench/plot reads them from bench/results/learning-suite/) and run.log.
# Environment: SUITE_TASKS (default below, in order of priority: run_suite.sh skips what does not fit), SEEDS (2),
#   OLD_FLAGS (the old defaults' flags, default --random-episode-start false), PHASE_EXTRA ("label|flags;..." more
#   gmi configurations, impl gmi_<label>, e.g. "lin|--lr-schedule linear"), BUILD (/tmp/build), SUITE_BUDGET_S
#   (480), PYTHON (python3 with jax).
source "$(dirname "$0")/device_prelude.sh"
export SUITE_TASKS=${SUITE_TASKS:-"franka_cabinet_proxy anymal_proxy point_reach quadcopter ant_proxy spring_chain pendulum"}
old=${OLD_FLAGS:---random-episode-start false}
export GMI_VARIANTS="old|$old${PHASE_EXTRA:+;$PHASE_EXTRA}"
export SUITE_BUDGET_S=${SUITE_BUDGET_S:-480} SUITE_REFERENCE_S=${SUITE_REFERENCE_S:-90}
seeds=${SEEDS:-2}
[[ "$seeds" =~ ^[1-9][0-9]*$ ]] || { echo "device_phase: SEEDS: got $seeds, need a positive integer"; exit 2; }
[[ "$old" != *";"* && "$old" != *"|"* ]] || { echo "device_phase: OLD_FLAGS: got \"$old\", need flags without ; or |"; exit 2; }
echo "device_phase: gmi (defaults) vs gmi_old ($old) ${PHASE_EXTRA:+and $PHASE_EXTRA }vs the reference on: $SUITE_TASKS; $seeds seeds"
bash bench/learning/run_suite.sh part1 "$out/phase.jsonl" "$seeds"
status=$?
# One line a task and impl: the mean return and, for the proxies, the optimum gap (median over the seeds).
python3 - "$out/phase.jsonl" <<'PY' || status=1
import json, sys
rows = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d.get("metric") in ("mean_return", "optimum_gap", "eval_return"):
        rows.setdefault(d["task"], {}).setdefault(d["impl"], {})[d["metric"]] = d["median"]
for task, impls in rows.items():
    print(f"device_phase: {task}: " + "; ".join(
        f"{impl} " + ", ".join(f"{m} {v:.4g}" if isinstance(v, (int, float)) else f"{m} {v}"
                              for m, v in sorted(ms.items())) for impl, ms in sorted(impls.items())))
PY
echo "device_phase: exit $status; lines in $out/phase.jsonl"
exit $status
