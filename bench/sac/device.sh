#!/usr/bin/env bash
# SAC on a GPU machine, from the repository root: builds and runs the SAC tests (host: tests/sac; device:
# tests/sac_gpu, Pendulum learned with replay, update and collection on the GPU), logs under $OUT, and writes
# learning lines {"bench":"learning","case":"pendulum_envsN","impl":"gmi_device"|"gmi_host","algo":"sac",..} to
# $OUT/sac.jsonl (one run each: median = min = max). About 3 min build + 2 min run.
set -euo pipefail
out=${OUT:?set OUT to the folder for results}
build=${BUILD:-/tmp/build}
cmake --preset gpu -B "$build" -DGMI_BUILD_BENCHMARKS=ON -DGMI_HEADER_CHECK_NVCC=OFF > "$out/sac_configure.log" 2>&1
cmake --build "$build" -j16 --target gmi.test.sac gmi.test.sac_gpu > "$out/sac_build.log" 2>&1
ctest --test-dir "$build" -R '^sac' -V --timeout 600 > "$out/sac_tests.log" 2>&1 || true
grep -E "sac(_gpu)? pendulum|tests passed|Failed|SKIPPED" "$out/sac_tests.log" | tail -n 30
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-')
git=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
run_id="$(date -u +%Y-%m-%dT%H:%M:%SZ)-${device}-${git}-sac"
# ctest -V prefixes each line with "<test number>: ", e.g.
# "sac_gpu pendulum envs 8: random -1254.0, trained -180.0 after 5000 env steps, 4000 updates, 20.0 s"
# "sac pendulum: random policy -1254.0, trained -182.9 after 5000 env steps, 37.2 s"
awk -v dev="$device" -v git="$git" -v run="$run_id" '
  function line(c, impl, metric, v) {
    printf "{\"bench\":\"learning\",\"case\":\"%s\",\"impl\":\"%s\",\"algo\":\"sac\",\"metric\":\"%s\",\"median\":%s,\"min\":%s,\"max\":%s,\"device\":\"%s\",\"git\":\"%s\",\"run_id\":\"%s\"}\n", c, impl, metric, v, v, v, dev, git, run
  }
  /sac_gpu pendulum envs [0-9]+: random/ {
    envs = $5; sub(":", "", envs); r = $7; sub(",", "", r); t = $9; s = $(NF - 1)
    c = "pendulum_envs" envs
    line(c, "gmi_device", "random_return", r); line(c, "gmi_device", "final_return", t)
    line(c, "gmi_device", "env_steps", $11); line(c, "gmi_device", "seconds", s)
  }
  /sac pendulum: random policy/ {
    r = $6; sub(",", "", r); t = $8; s = $(NF - 1)
    line("pendulum_envs1", "gmi_host", "random_return", r); line("pendulum_envs1", "gmi_host", "final_return", t)
    line("pendulum_envs1", "gmi_host", "env_steps", $10); line("pendulum_envs1", "gmi_host", "seconds", s)
  }' "$out/sac_tests.log" > "$out/sac.jsonl"
cat "$out/sac.jsonl"
