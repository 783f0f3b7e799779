#!/usr/bin/env bash
# Issue 40's target on a 4-GPU machine, alone on it (all 4 GPUs), from the repository root (OUT set), within 6 minutes
# of a cold machine including the build: one host x 4 GPUs against two simulated hosts x 2 GPUs (mpirun, NCCL on
# sockets over lo between the hosts, NVLink within each; bench/multihost/device_common.sh, shared with
# device_run.sh), 1 GMI a GPU, gmi::run's colocated synchronous PPO:
#   0. builds gmi.example.cartpole_ppo, gmi.test.multihost_gpu and gmi.example.ant_v4_ppo (gmi's GPU physics) in one
#      ninja call ($BUILD, default /tmp/build-hosts, -j16); Cartpole's parts start once its targets are built, while
#      ant_v4_ppo may still compile on a core (pugixml from .carry/debs where bench/physics/carry_pugixml.sh put it);
#   1. gmi.test.multihost_gpu on the GPUs (the allgather sum's kernel, 2 ranks against NCCL's allreduce, the direct
#      gather's bits; with 4: 2 hosts x 2 GPUs, the two-level sum's and the direct gather's bits against the
#      one-level allgather, eager and replayed);
#   2. the bits: 2 hosts x GPUS_PER_HOST GPUs x 2 GMIs, 40 iterations, --cross-host-sum allgather, two_level and direct
#      must end with the same weights (FNV-1a); a sum that does not end its 40 iterations is left out of the runs below;
#   3. the phases of each sum (two hosts, Cartpole, 3 s, --comm-clock on): the iteration, the statistics sums and
#      the gradient sums an iteration, and the microseconds a gradient sum;
#   4. NCCL's socket settings (set only in these runs' mpirun environment) on the fastest sum of part 3, each a
#      phases run as in part 3: NCCL_PROTO=LL (small messages), one socket thread and one socket
#      (NCCL_SOCKET_NTHREADS=1 NCCL_NSOCKS_PERTHREAD=1), one channel a peer, and the bandwidth settings (4 x 4,
#      Simple) as a check; "tuned" below is the sum and settings with the fastest gradient sums of parts 3 and 4;
#   5. Cartpole, 8192 envs a GMI, 4 s of training a run, CARTPOLE_REPS runs each (default 3, cut to the time
#      left), alternating: one host; two hosts with allgather, two_level, direct and tuned;
#   6. Ant, 4096 envs a GMI, 6 s a run, 2 runs each, alternating: one host; two hosts (two_level), if time is left.
# GPUS_PER_HOST=1 runs it on a 2-GPU machine (2 hosts x 1 GPU against one host x 2; about 6-8 minutes with a cold
# build). Every run is bounded (90 s); HOSTS_SECONDS (default 400) is the limit for starting parts. Writes result
# lines ("hosts": 1|2, train_samples_per_s a variant, two_hosts_over_one_host with target 0.90, the phases and us a
# gradient sum a variant, the bit check, the GPU test) to $OUT/hosts.jsonl, the summary to stdout and
# $OUT/hosts-summary.txt, end lines and logs to $OUT/hosts/. Needs mpirun (or .carry/openmpi,
# bench/multihost/carry_openmpi.sh). Exit 1 when a check failed.
set -uo pipefail
start_s=$(date +%s)
deadline_s=$((start_s + ${HOSTS_SECONDS:-400}))  # HOSTS_SECONDS: a shorter limit beside other work
left() { echo $((deadline_s - $(date +%s))); }
name=hosts
here=$(cd "$(dirname "$0")" && pwd)
export BUILD=${BUILD:-/tmp/build-hosts}
# The repository root, out, build, run_id, lines ($OUT/hosts.jsonl), pugixml, configure_build.
source "$here/../physics/device_common.sh"
gph=${GPUS_PER_HOST:-2}  # 1 on a 2-GPU machine: two hosts x 1 GPU against one host x 2
source "$here/device_common.sh"  # dir ($OUT/hosts), OpenMPI, one_host and two_hosts
[ "$gpus" -ge $((2 * gph)) ] || { echo "device_hosts: needs $((2 * gph)) GPUs, found $gpus"; exit 77; }
rm -f "$lines"
configure_build "${cmake_mpi[@]}" -DGMI_BUILD_ALL_TASK_EXAMPLES=ON -DGMI_HEADER_CHECK_NVCC=OFF
grep -q "gmi: MPI not found" "$out/configure.log" && { tail -20 "$out/configure.log"; echo "CMake did not find MPI"; exit 1; }
log_lines=$( (wc -l < "$build/.ninja_log") 2>/dev/null || echo 0)
timeout 320 cmake --build "$build" -j16 --target gmi.example.cartpole_ppo gmi.test.multihost_gpu gmi.example.ant_v4_ppo \
  > "$dir/build.log" 2>&1 &
build_pid=$!
logged() {  # whether this call's ninja logged every output named as built (.ninja_log: start, end, mtime, output, hash)
  local o
  for o in "$@"; do
    tail -n +$((log_lines + 1)) "$build/.ninja_log" 2>/dev/null | awk -F'\t' -v o="$o" '$4 == o { f = 1 } END { exit !f }' ||
      return 1
  done
}
# wait_built OUTPUTS...: until ninja logged them, or it ended (up to date: nothing logged, exit 0); returns 1 with
# the errors when it ended without them (a failed build or a timeout).
wait_built() {
  while kill -0 "$build_pid" 2>/dev/null && ! logged "$@"; do sleep 2; done
  if ! logged "$@"; then
    wait "$build_pid"
    local rc=$?
    [ "$rc" -eq 0 ] || { grep -E "error|Error" "$dir/build.log" | head -20; echo "build failed before $* (exit $rc)"; return 1; }
  fi
  echo "built after $(( $(date +%s) - start_s )) s: $*"
}
wait_built examples/cartpole_ppo/gmi.example.cartpole_ppo tests/multihost_gpu/gmi.test.multihost_gpu || exit 1
echo "device: $gpus x $device, driver $driver, git $git_rev, run $run_id; $(left) s left"
train="$dir/train.jsonl"
phases="$dir/phases.jsonl"
rm -f "$train" "$phases" "$dir/m.jsonl"
steady=(--partition none --gmis-per-gpu 1 --minibatch-scope gmi --target-return nan --max-env-steps 1e12 --log-interval 100)
common=("${steady[@]}")
# Each variant's run: the launcher function, seconds of training and flags (--metrics added); nccl: the NCCL settings
# a variant's mpirun adds to $net (tuned: set after part 4).
declare -A how=(
  [one_host]="one_host 4 --num-envs 8192"
  [allgather]="two_hosts 4 --num-envs 8192 --cross-host-sum allgather"
  [two_level]="two_hosts 4 --num-envs 8192 --cross-host-sum two_level"
  [direct]="two_hosts 4 --num-envs 8192 --cross-host-sum direct"
  [ant_one_host]="one_host 6 --num-envs 4096"
  [ant_two_level]="two_hosts 6 --num-envs 4096 --cross-host-sum two_level"
  [ant_allgather]="two_hosts 6 --num-envs 4096 --cross-host-sum allgather")
declare -A nccl=()
# run VARIANT REP: one run of a variant into $dir/VARIANT.REP.log, its end line tagged with the variant in $train
run() {
  local cmd rc
  read -r -a cmd <<< "${how[$1]}"
  read -r -a extra <<< "${nccl[$1]:-}"
  "${cmd[@]}" --metrics "$dir/m.jsonl" > "$dir/$1.$2.log" 2>&1
  rc=$?
  ended "$1" "$1.$2.log" "$rc" "${nccl[$1]:-}"
}
# phase_run NAME SUM [NCCL settings...]: a 3-s two-host Cartpole run with --comm-clock on, its end line tagged NAME
# (and the settings) in $phases
phase_run() {
  local v=$1 sum=$2; shift 2
  extra=("$@")
  two_hosts 3 --num-envs 8192 --cross-host-sum "$sum" --comm-clock on --metrics "$dir/m.jsonl" \
    > "$dir/phases_$v.log" 2>&1 || { echo "phases $v: failed"; tail -3 "$dir/phases_$v.log"; }
  tag_end_line "$dir/m.jsonl" "$v" "$phases" "$*"
  extra=()
}

echo "== 1. gmi.test.multihost_gpu on $total GPUs (the two-level sum's and the direct gather's bits with 4)"
env "$visible" timeout 90 "$build/tests/multihost_gpu/gmi.test.multihost_gpu" > "$dir/multihost_gpu_test.log" 2>&1
echo "gmi.test.multihost_gpu: exit $?" | tee -a "$dir/multihost_gpu_test.log"

echo "== 2. bits: 2 hosts x $gph GPU(s) x 2 GMIs, 40 iterations, allgather against two_level and direct"
bin=$build/examples/cartpole_ppo/gmi.example.cartpole_ppo
sums=()
for sum in allgather two_level direct; do
  common=(--partition none --gmis-per-gpu 2 --num-envs 2048 --target-return nan --log-interval 100
          --max-env-steps $((40 * 16 * 2048 * 2 * total)))
  two_hosts 60 --cross-host-sum "$sum" 2>&1 | stamp > "$dir/bits_$sum.log"
  grep -E "step limit|DIFFER|threw|lost" "$dir/bits_$sum.log" | cut -d' ' -f2- | head -3 | cut -c1-200
  # A sum that did not end its 40 iterations (a hang bounded by the timeout, a failure) would cost every later run
  # as much: the runs below leave it out.
  if grep -q "FNV-1a" "$dir/bits_$sum.log"; then sums+=("$sum"); else echo "$sum did not end its 40 iterations: left out below"; fi
done
common=("${steady[@]}")
[ "${#sums[@]}" -gt 0 ] || { echo "no cross-host sum ended its 40 iterations"; sums=(allgather); }

echo "== 3. phases a sum: two hosts x $gph, Cartpole 8192 envs a GMI, 3 s, --comm-clock on ($(left) s left)"
for sum in "${sums[@]}"; do phase_run "$sum" "$sum"; done
best=$(python3 "$here/result_lines.py" fastest "$phases")
best=${best:-${sums[0]}}
echo "fastest gradient sums: $best"

# NCCL's socket settings for small messages, tried on the fastest sum (each a name and its NAME=VALUE settings)
declare -A sockets=(
  [ll]="NCCL_PROTO=LL"
  [ll_1x1]="NCCL_PROTO=LL NCCL_SOCKET_NTHREADS=1 NCCL_NSOCKS_PERTHREAD=1"
  [ll_1x1_1ch]="NCCL_PROTO=LL NCCL_SOCKET_NTHREADS=1 NCCL_NSOCKS_PERTHREAD=1 NCCL_MIN_NCHANNELS=1 NCCL_MAX_NCHANNELS=1 NCCL_NCHANNELS_PER_NET_PEER=1"
  [simple_4x4]="NCCL_PROTO=Simple NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4")
echo "== 4. NCCL socket settings on $best ($(left) s left)"
for k in ll ll_1x1 ll_1x1_1ch simple_4x4; do
  [ "$(left)" -ge 150 ] || { echo "socket settings $k and after: skipped ($(left) s left)"; break; }
  read -r -a kv <<< "${sockets[$k]}"
  phase_run "$best+$k" "$best" "${kv[@]}"
done
tuned=$(python3 "$here/result_lines.py" fastest "$phases")
tuned=${tuned:-$best}
tuned_sum=${tuned%%+*}
tuned_env=""
[ "$tuned" != "$tuned_sum" ] && tuned_env=${sockets[${tuned#*+}]}
tuned_text="tuned: --cross-host-sum $tuned_sum ${tuned_env:-"(NCCL default socket settings)"}"
echo "$tuned_text"
how[tuned]="two_hosts 4 --num-envs 8192 --cross-host-sum $tuned_sum"
nccl[tuned]=$tuned_env
variants=(one_host "${sums[@]}")
[ -n "$tuned_env" ] && variants+=(tuned)  # tuned with the default settings is one of the sums already

reps=${CARTPOLE_REPS:-3}
echo "== 5. Cartpole, 8192 envs a GMI: one host x $total against two hosts x $gph (${variants[*]:1}), up to $reps runs each"
for rep in $(seq 1 "$reps"); do
  [ "$rep" -eq 1 ] || [ "$(left)" -ge $((12 * ${#variants[@]} + 20)) ] || { echo "runs $rep and after: skipped ($(left) s left)"; break; }
  for v in "${variants[@]}"; do
    echo "-- $v, run $rep ($(left) s left)"
    run "$v" "$rep"
  done
done
new=two_level
[[ " ${sums[*]} " == *" two_level "* ]] || new=allgather

ant_v4=1
if [ "$(left)" -ge 100 ]; then
  wait_built examples/task_ppo/gmi.example.ant_v4_ppo || ant_v4=0
fi
bin=$build/examples/task_ppo/gmi.example.ant_v4_ppo
reps=2
[ "$(left)" -lt 170 ] && reps=1  # an Ant run pair takes about 80 s
if [ "$ant_v4" -eq 0 ] || [ "$(left)" -lt 45 ] || [ ! -x "$bin" ] || kill -0 "$build_pid" 2>/dev/null; then
  echo "== 6. Ant: skipped ($(left) s left; ant_v4_ppo built: $ant_v4, or still building)"
else
  echo "== 6. Ant, 4096 envs a GMI: one host x $total against two hosts x $gph ($new), $reps run(s) each"
  for rep in $(seq 1 "$reps"); do
    for v in ant_one_host "ant_$new"; do
      echo "-- $v, run $rep ($(left) s left)"
      run "$v" "$rep"
    done
  done
fi

kill "$build_pid" 2>/dev/null
echo "runs done after $(( $(date +%s) - start_s )) s"

echo "== summary" | tee "$out/hosts-summary.txt"
echo "$tuned_text" > "$dir/tuned.txt"
python3 "$here/device_hosts_lines.py" "$dir" "$lines" "$device" "$driver" "$git_rev" "$run_id" "$gph" \
  | tee -a "$out/hosts-summary.txt"
exit "${PIPESTATUS[0]}"
