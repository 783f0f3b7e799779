#!/usr/bin/env bash
# SAC against PPO on Ant, on ONE GPU (CUDA_VISIBLE_DEVICES may pick it; another script may share the machine's
# cores), from the repository root (OUT set), within 7 minutes of a cold machine including the build:
#   1. builds gmi.example.ant_v4_ppo and gmi.example.ant_v4_sac only (-j$JOBS, default 16) in $BUILD (default
#      /tmp/build-sac-ant), PPO's run starting once ant_v4_ppo is built;
#   2. PPO as a user runs it (gmi.example.ant_v4_ppo --device gpu: gmi's default PPO, its default envs) for
#      PPO_SECONDS (default 60) of training;
#   3. SAC with gmi::run's GPU defaults (gmi.example.ant_v4_sac --device gpu, networks 256x256: rl::sac_gpu_scale,
#      docs/training.md) for SAC_SECONDS (default 120) of training, cut to what is left of the 7 minutes (a line says
#      so); SAC_FLAGS / PPO_FLAGS (environment) add flags to a run, e.g. SAC_FLAGS="--sac-updates-per-vector-step 16";
#   4. a summary: PPO's final mean return, the env steps at which SAC's mean return first reached it (else SAC's best
#      and where), the ratio of PPO's env steps to SAC's, env steps/s and updates/s of each.
# Writes $OUT/sac_ant.jsonl:
#   {"bench":"sac_ant_curve","case":"ant_v4","impl":"gmi","algo":"sac"|"ppo","env_steps","wall_s","mean_return",
#    "eval_return" (the end point only),"num_envs",...} one per metrics line (every 2 s) and the end point;
#   {"bench":"sac_ant","case":"ant_v4","impl":"gmi","algo":..,"metric":"final_return"|"eval_return"|"env_steps"|
#    "wall_s"|"env_steps_per_s"|"updates_per_s","median","min","max",...} (one run: median = min = max);
#   {"bench":"sac_ant","case":"ant_v4","impl":"gmi","algo":"sac","metric":"env_steps_to_ppo_final","median" (null
#    when not reached),"ppo_final_return","ppo_env_steps","ppo_env_steps_to_final","sac_best_return",
#    "sac_env_steps_at_best","ppo_over_sac_env_steps" (PPO's env steps over SAC's to the same return),...};
# every line with device, git, run_id. Logs and metrics files under $OUT/sac_ant/.
# Arguments (optional): SAC_SECONDS (20..300, default 120), PPO_SECONDS (10..200, default 60). pugixml: carry
# .carry/debs (bench/physics/carry_pugixml.sh run here first, `carry: [".carry"]`); device_common.sh unpacks it.
set -uo pipefail
start_s=$(date +%s)
deadline_s=$((start_s + 420))  # 7 minutes
sac_seconds=${1:-120}
ppo_seconds=${2:-60}
[[ "$sac_seconds" =~ ^[0-9]+$ && "$sac_seconds" -ge 20 && "$sac_seconds" -le 300 ]] ||
  { echo "device_ant_v4: SAC seconds: got $sac_seconds, need an integer in 20..300" >&2; exit 2; }
[[ "$ppo_seconds" =~ ^[0-9]+$ && "$ppo_seconds" -ge 10 && "$ppo_seconds" -le 200 ]] ||
  { echo "device_ant_v4: PPO seconds: got $ppo_seconds, need an integer in 10..200" >&2; exit 2; }
name=sac_ant
# Its own build folder unless BUILD names one: another script may be building /tmp/build beside it.
export BUILD=${BUILD:-/tmp/build-sac-ant}
source "$(dirname "$0")/../physics/device_common.sh"
logs="$out/sac_ant"
mkdir -p "$logs"
rm -f "$lines"
export JOBS=${JOBS:-16}

source "$root/bench/sac/task_build.sh"
start_task_build 330 device_ant_v4 ant_v4
nvidia-smi --query-gpu=index,name,memory.used,utilization.gpu --format=csv,noheader | sed 's/^/gpu visible: /'
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}"


rm -f "$logs/ppo.jsonl" "$logs/sac.jsonl"
read -r -a ppo_flags <<< "${PPO_FLAGS:-}"
read -r -a sac_flags <<< "${SAC_FLAGS:-}"
task_run ppo task_ppo/gmi.example.ant_v4_ppo "$ppo_seconds" 90 "${ppo_flags[@]}"
kill -0 "$build_pid" 2>/dev/null && echo "== waiting for ant_v4_sac's build"
task_build_done
# SAC gets what is left: its start and its evaluation (16 episodes on host threads) take some seconds besides.
left=$((deadline_s - $(date +%s) - 25))
if ((left < sac_seconds)); then
  echo "device_ant_v4: SAC cut to ${left} s (asked ${sac_seconds} s): the 7 minutes end sooner"
  sac_seconds=$left
fi
if ((sac_seconds >= 10)); then
  task_run sac pendulum_sac/gmi.example.ant_v4_sac "$sac_seconds" 90 --sac-eval-episodes 16 "${sac_flags[@]}"
else
  echo "device_ant_v4: SAC skipped: ${left} s left" >&2
  status=1
fi

python3 - "$logs" "$lines" "$common" <<'PY' || status=1
import json, sys
logs, dest, common = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
runs = {}
for algo in ("ppo", "sac"):
    try:
        ls = [json.loads(l) for l in open(f"{logs}/{algo}.jsonl") if l.strip()]
    except FileNotFoundError:
        print(f"device_ant_v4: {algo}: no metrics file", file=sys.stderr)
        continue
    prog = [l for l in ls if l.get("event") != "end" and "env_steps" in l]
    end = next((l for l in ls if l.get("event") == "end"), None)
    if end is None:
        print(f"device_ant_v4: {algo}: no end line", file=sys.stderr)
    runs[algo] = (prog, end)
out = open(dest, "a")
def put(d):
    out.write(json.dumps({**d, **common}) + "\n")
tag = {"case": "ant_v4", "impl": "gmi"}
summary = {}
for algo, (prog, end) in runs.items():
    last = end or (prog[-1] if prog else {})
    envs = last.get("num_envs")
    pts = [(p["env_steps"], p["wall_s"], p["mean_return"]) for p in prog if p.get("mean_return") is not None]
    if end and end.get("mean_return") is not None:
        pts.append((end["env_steps"], end["wall_s"], end["mean_return"]))
    for i, (s, w, r) in enumerate(pts):
        d = {"bench": "sac_ant_curve", **tag, "algo": algo, "env_steps": s, "wall_s": w, "mean_return": r,
             "num_envs": envs}
        if i == len(pts) - 1 and end is not None:
            d["eval_return"] = end.get("eval_return")
        put(d)
    steps, wall = last.get("env_steps"), last.get("wall_s")
    upd = last.get("updates")
    m = {"final_return": last.get("mean_return"), "eval_return": last.get("eval_return"), "env_steps": steps,
         "wall_s": wall, "env_steps_per_s": steps / wall if steps and wall else None,
         "updates_per_s": upd / wall if upd and wall else None}
    extra = {"num_envs": envs}
    if algo == "sac" and "sac" in last:
        extra["sac"] = last["sac"]
    for k, v in m.items():
        if v is not None:
            put({"bench": "sac_ant", **tag, "algo": algo, "metric": k, "median": v, "min": v, "max": v, **extra})
    summary[algo] = dict(m, pts=pts, envs=envs)
print(f"{'algo':5} {'envs':>6} {'env steps':>11} {'seconds':>8} {'env steps/s':>12} {'updates/s':>10} "
      f"{'final return':>13} {'eval return':>12}")
for algo, s in summary.items():
    f = lambda v, spec: format(v, spec) if isinstance(v, (int, float)) else "-"
    print(f"{algo:5} {f(s['envs'], '>6')} {f(s['env_steps'], '>11.4g')} {f(s['wall_s'], '>8.1f')} "
          f"{f(s['env_steps_per_s'], '>12.4g')} {f(s['updates_per_s'], '>10.4g')} {f(s['final_return'], '>13.1f')} "
          f"{f(s['eval_return'], '>12.1f')}")
if "ppo" in summary and "sac" in summary and summary["ppo"]["final_return"] is not None and summary["sac"]["pts"]:
    target, ppo_steps = summary["ppo"]["final_return"], summary["ppo"]["env_steps"]
    ppo_first = next((s for s, _, r in summary["ppo"]["pts"] if r >= target), ppo_steps)
    reach = next(((s, w) for s, w, r in summary["sac"]["pts"] if r >= target), None)
    best = max(summary["sac"]["pts"], key=lambda p: p[2])
    d = {"bench": "sac_ant", **tag, "algo": "sac", "metric": "env_steps_to_ppo_final",
         "median": reach[0] if reach else None, "min": reach[0] if reach else None, "max": reach[0] if reach else None,
         "wall_s_to_ppo_final": reach[1] if reach else None, "ppo_final_return": target, "ppo_env_steps": ppo_steps,
         "ppo_env_steps_to_final": ppo_first, "sac_best_return": best[2], "sac_env_steps_at_best": best[0],
         "ppo_over_sac_env_steps": ppo_steps / reach[0] if reach else None,
         "ppo_first_over_sac_env_steps": ppo_first / reach[0] if reach else None}
    put(d)
    if reach:
        print(f"SAC reached PPO's final mean return {target:.1f} after {reach[0]:.4g} env steps ({reach[1]:.0f} s); "
              f"PPO ended at {ppo_steps:.4g} env steps (first at or above it at {ppo_first:.4g}): "
              f"{ppo_steps / reach[0]:.3g}x fewer env steps ({ppo_first / reach[0]:.3g}x against PPO's first reach)")
    else:
        print(f"SAC did not reach PPO's final mean return {target:.1f}: its best {best[2]:.1f} at {best[0]:.4g} env "
              f"steps (PPO: {ppo_steps:.4g} env steps)")
else:
    print("device_ant_v4: no comparison (a run gave no mean return)", file=sys.stderr)
    sys.exit(1)
PY
echo "== result lines: $lines ($(( $(date +%s) - start_s )) s in all; copy into bench/results/sac-ant/ and run bench/plot)"
exit "$status"
