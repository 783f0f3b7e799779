#!/usr/bin/env bash
# GPU machine with 2 or 4 GPUs, from the repository root: gmi::run across hosts (the cartpole_ppo example,
# synchronous PPO, layout colocated, GMIs as threads) on two simulated hosts under mpirun (--host-id sim0/sim1,
# each its share of the GPUs) against one host with all of them. GPUS_PER_HOST (default: 2 with 4 or more GPUs,
# else 1) sets the shape: 2 hosts x GPUS_PER_HOST GPUs against 1 host x 2*GPUS_PER_HOST GPUs. Between the simulated
# hosts NCCL runs on sockets over lo (NCCL_NET=Socket, NCCL_IB_DISABLE=1, NCCL_SOCKET_IFNAME=lo); gmi sets each
# launcher's NCCL_HOSTID to its host id, so within a host NCCL keeps NVLink, as on real hosts. Parts:
#   0. gmi.test.multihost_gpu: the allgather sum's kernel and 2 ranks on 2 GPUs against NCCL's allreduce;
#   1. throughput, 8192 envs a GMI, 1 GMI a GPU, 5 s of training a run, 3 runs each, alternating: one host; two
#      hosts with --cross-host-sum allreduce (NCCL's allreduce among the GPUs' leaders, the old path); two hosts with
#      --cross-host-sum allgather (one allgather and a sum of the rows in rank order); with 2 GPUs a host also the
#      issue's all-sockets model (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1: NVLink off within a host too, 1 run);
#   2. NCCL_PROTO=LL on the faster two-host path of part 1 (2 runs);
#   3. more work per exchange: 32768 envs a GMI with --minibatch 32768 (as many gradient steps an iteration as
#      8192 envs with the default minibatch, 4x the samples each), one host against two hosts on the faster
#      path of part 1 (2 runs each);
#   4. the phases of one two-host run (--comm-clock on);
#   5. 2 GMIs a GPU on both hosts, 40 iterations: every GMI of both hosts ends with the same weights; then the same
#      job with --restart-on-failure 2 and a checkpoint every 10 iterations, host 1's GMI 0 killed after iteration
#      33 (GMI_TEST_KILL_AT, in host 1's attempt process): both launchers restart from iteration 30 and the job must
#      end with the straight run's weights, bit for bit; the time from the kill to the restarted attempt's
#      "resumed" line is kill_restart_recovery_s;
#   6. a killed host (no restarts): host 1's launcher SIGKILLs itself, host 0 must name it within 10 s.
# Writes result lines (bench multihost; train_samples_per_s with "hosts": 1 or 2, two_hosts_over_one_host for each
# two-host variant, cross_host_*_s phases, restart_* and lost_host_detection_s) to $OUT/multihost/device_run.jsonl,
# the runs' end lines to $OUT/multihost/train.jsonl and logs beside them.
# Needs OpenMPI: mpirun on PATH, or the packages bench/multihost/carry_openmpi.sh put in .carry/openmpi (carried).
# About 3 min of build and 5 of runs; every run is bounded by 90 s, parts 2-4 are left out past 420 s of runs.
set -uo pipefail
name=multihost
source "$(dirname "$0")/device_common.sh"
# A build folder of its own: another script's cache in /tmp/build may hold "MPI not found".
build=/tmp/build-multihost
t_build=$(date +%s)
cmake --preset gpu -B "$build" -DGMI_BUILD_BENCHMARKS=ON "${cmake_mpi[@]}" > "$dir/configure.log" 2>&1 \
  || { tail -30 "$dir/configure.log"; exit 1; }
if grep -q "gmi: MPI not found" "$dir/configure.log"; then tail -30 "$dir/configure.log"; echo "CMake did not find MPI"; exit 1; fi
time cmake --build "$build" -j16 --target gmi.example.cartpole_ppo gmi.test.multihost_gpu > "$dir/build.log" 2>&1 \
  || { tail -40 "$dir/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t_build )) s"
t_runs=$(date +%s)
elapsed() { echo $(( $(date +%s) - t_runs )); }
bin=$build/examples/cartpole_ppo/gmi.example.cartpole_ppo
train="$dir/train.jsonl"
phases="$dir/phases.jsonl"
rm -f "$train" "$phases" "$dir/m.jsonl"
common=(--partition none --gmis-per-gpu 1 --minibatch-scope gmi --target-return nan --max-env-steps 1e12 --log-interval 4)
# run VARIANT LOG: one run of a variant, its end line tagged with the variant in $train
run() {
  local variant=$1 log=$2 rc
  case "$variant" in
    one_host) one_host 5 --num-envs 8192 --metrics "$dir/m.jsonl" ;;
    allreduce) extra=(); two_hosts 5 --num-envs 8192 --cross-host-sum allreduce --metrics "$dir/m.jsonl" ;;
    allgather) extra=(); two_hosts 5 --num-envs 8192 --cross-host-sum allgather --metrics "$dir/m.jsonl" ;;
    all_sockets) extra=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_HOSTID=sim)  # one NCCL host, every path on sockets
                 two_hosts 5 --num-envs 8192 --cross-host-sum allreduce --metrics "$dir/m.jsonl" ;;
    proto_ll) extra=(NCCL_PROTO=LL); two_hosts 5 --num-envs 8192 --cross-host-sum "$best" --metrics "$dir/m.jsonl" ;;
    one_host_mb32k) one_host 5 --num-envs 32768 --minibatch 32768 --metrics "$dir/m.jsonl" ;;
    two_hosts_mb32k) extra=(); two_hosts 5 --num-envs 32768 --minibatch 32768 --cross-host-sum "$best" --metrics "$dir/m.jsonl" ;;
  esac > "$dir/$log" 2>&1
  rc=$?
  extra=()
  ended "$variant" "$log" "$rc"
}
echo "== 0. the allgather sum on 2 GPUs (gmi.test.multihost_gpu: the kernel against the host tree, 2 ranks against NCCL)"
CUDA_VISIBLE_DEVICES=0,1 timeout 120 "$build/tests/multihost_gpu/gmi.test.multihost_gpu" > "$dir/multihost_gpu_test.log" 2>&1
echo "gmi.test.multihost_gpu: exit $?" | tee -a "$dir/multihost_gpu_test.log"
tail -3 "$dir/multihost_gpu_test.log"
echo "== 1. throughput: 1 host x $total GPUs against 2 hosts x $gph GPUs, 8192 envs a GMI, 3 runs each, alternating"
variants=(one_host allreduce allgather)
for rep in 1 2 3; do
  for v in "${variants[@]}"; do
    echo "-- $v, run $rep"
    run "$v" "$v.$rep.log" || { echo "$v failed (exit $?)"; tail -30 "$dir/$v.$rep.log"; exit 1; }
  done
done
if [ "$gph" -eq 2 ]; then echo "-- all_sockets (NVLink off within a host too), 1 run"; run all_sockets all_sockets.1.log; fi
# The faster two-host sum of part 1 (medians) carries parts 2 and 3.
best=$(python3 -c '
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = {v: statistics.median([r["train_samples_per_s"] for r in rows if r["variant"] == v] or [0]) for v in ("allreduce", "allgather")}
print(max(med, key=med.get))' "$train")
echo "faster two-host sum in part 1: $best"
if [ "$(elapsed)" -lt 420 ]; then
  echo "== 2. NCCL_PROTO=LL on the $best path, 2 runs"
  for rep in 1 2; do run proto_ll "proto_ll.$rep.log"; done
fi
if [ "$(elapsed)" -lt 420 ]; then
  echo "== 3. 32768 envs a GMI, --minibatch 32768: one host against two hosts, 2 runs each"
  for rep in 1 2; do run one_host_mb32k "one_host_mb32k.$rep.log"; run two_hosts_mb32k "two_hosts_mb32k.$rep.log"; done
fi
if [ "$(elapsed)" -lt 420 ]; then
  echo "== 4. phases: two hosts, 8192 envs, --comm-clock on (auto cross-host sum)"
  extra=(); two_hosts 5 --num-envs 8192 --comm-clock on --metrics "$phases" > "$dir/phases.log" 2>&1 || echo "phases run failed"
  grep -E "^gmi: (time|step) limit|^gmi: across hosts" "$dir/phases.log" | head -3
fi

# 5. Correctness and restarts: 2 GMIs a GPU on both hosts (the GPU's own sum, then NCCL among the leaders).
two_gmis() {  # $1: log; $2: host 1's GMI_TEST_KILL_AT (or ""); the rest: flags for both hosts
  local log=$1 kill=$2; shift 2
  local k=(); [ -n "$kill" ] && k=(env "GMI_TEST_KILL_AT=$kill")
  local xs=(); for kv in "${net[@]}"; do xs+=(-x "$kv"); done
  local f=(--gpus all --partition none --gmis-per-gpu 2 --num-envs 2048 --target-return nan --log-interval 4 --max-env-steps $((40 * 16 * 2048 * 2 * total)))
  env "$visible" "${net[@]}" timeout 120 mpirun "${mflags[@]}" "${xs[@]}" \
    -np 1 "$bin" --host-id sim0 "${f[@]}" "$@" : \
    -np 1 "${k[@]}" "$bin" --host-id sim1 "${f[@]}" "$@" 2>&1 | stamp > "$dir/$log"
  grep -E "step limit|restart|resumed from|killed by|DIFFER|threw|lost" "$dir/$log" | cut -d' ' -f2- | head -8
}
ck=/tmp/gmi-multihost-restart && rm -rf "$ck" && mkdir -p "$ck"
echo "== 5. two hosts x $gph GPUs x 2 GMIs: 40 iterations straight; then killed after 33 with --restart-on-failure 2"
two_gmis straight.log ""
two_gmis restart.log 0:33 --restart-on-failure 2 --checkpoint "$ck/ck" --checkpoint-every 10
ls "$ck" | head -20

echo "== 6. killed host: host 1's launcher SIGKILLs itself after iteration 60 (no restarts), mpirun --enable-recovery"
xs=(); for kv in "${net[@]}"; do xs+=(-x "$kv"); done
env "$visible" "${net[@]}" timeout 90 mpirun "${mflags[@]}" --enable-recovery "${xs[@]}" \
  -np 1 "$bin" --gpus all --host-id sim0 "${common[@]}" --num-envs 8192 --max-seconds 60 : \
  -np 1 env GMI_TEST_KILL_AT=0:60 "$bin" --gpus all --host-id sim1 "${common[@]}" --num-envs 8192 --max-seconds 60 2>&1 \
  | stamp > "$dir/killed_host.log"
tail -4 "$dir/killed_host.log"
echo "runs: $(elapsed) s"

python3 "$(dirname "$0")/device_run_lines.py" "$dir" "$device" "$driver" "$git_rev" "$gph"
