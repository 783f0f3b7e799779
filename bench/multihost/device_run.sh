#!/usr/bin/env bash
# GPU machine with 2 (or more) GPUs, from the repository root: gmi::run across hosts (the cartpole_ppo example,
# synchronous PPO, layout colocated, 1 GMI a GPU as threads) on
#   one host with 2 GPUs (no launcher; NCCL's default transports),
#   two simulated hosts x 1 GPU under mpirun (one launcher each, --host-id sim0/sim1, each its share of the
#   GPUs), NCCL on sockets between them (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 over lo),
# 8192 envs a GMI (3 runs each, alternating, 10 s of training a run) and 32768 (bigger iterations: 2 runs each, 8 s);
# then the phases of one two-host run at each size with --comm-clock on (its end line: host 0's GMI 0 in the
# cross-host sums, in MPI, waiting, and the gradient allreduce's device time; the clock's stamp kernels cost
# samples/s, so these runs are not the throughput runs) and one two-host run at 8192 with NCCL's socket knobs
# NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4 (only in this script's environment); then 2 GMIs a GPU on both hosts, checked for identical
# weights after 40 iterations, and saved at 20 and resumed to 40 (the same weights); then a killed host: host 1
# SIGKILLs itself (the GMI test hook) and host 0 must end with one line naming host 1 within 10 s; then kill and
# rerun: 2 GMIs a GPU with a checkpoint every 10 iterations, host 1 killed after iteration 33, the same job run again
# with --resume (docs/multihost.md's loop) must end with the straight run's weights. Writes result lines (bench
# multihost; metric train_samples_per_s with "hosts": 1 or 2, their ratio, lost_host_detection_s,
# kill_rerun_detection_s, kill_rerun_recovery_s; the phases as cross_host_*_s) to $OUT/multihost/device_run.jsonl,
# the runs' own end lines to $OUT/multihost/train.jsonl and logs beside them.
# Needs OpenMPI: mpirun on PATH, or the packages bench/multihost/carry_openmpi.sh put in .carry/openmpi (carried).
# About 3 min of build, 5 of runs (each run bounded by 90 s; the first failure ends the script).
set -uo pipefail
OUT=${OUT:-/tmp/out}
dir="$OUT/multihost"
mkdir -p "$dir"
git_rev=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD)}
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$gpus" -lt 2 ]; then echo "SKIPPED: bench/multihost/device_run.sh needs 2 GPUs, found $gpus"; exit 77; fi
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
export NCCL_NVLS_ENABLE=0
cmake_mpi=()
if ! command -v mpirun > /dev/null; then
  ls .carry/openmpi/*.deb > /dev/null 2>&1 \
    || { echo "no mpirun here and no .carry/openmpi: run bench/multihost/carry_openmpi.sh where apt works, carry .carry"; exit 1; }
  root=/tmp/gmi-openmpi
  rm -rf "$root" && mkdir -p "$root"
  for f in .carry/openmpi/*.deb; do dpkg -x "$f" "$root"; done
  lib=$root/usr/lib/x86_64-linux-gnu
  mkdir -p "$root/bin" && ln -sf "$root/usr/bin/mpirun.openmpi" "$root/bin/mpirun"
  export OPAL_PREFIX=$root/usr PATH=$root/bin:$root/usr/bin:$PATH
  export LD_LIBRARY_PATH=$lib/openmpi/lib:$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PMIX_INSTALL_PREFIX=$lib/pmix2 PMIX_MCA_mca_base_component_path=$lib/pmix2/lib/pmix
  command -v ssh > /dev/null || export OMPI_MCA_plm_rsh_agent=/bin/false  # one machine: nothing is started by ssh
  cmake_mpi=(-DMPI_CXX_COMPILER="$root/usr/bin/mpicxx.openmpi")
  echo "OpenMPI from .carry/openmpi: $(mpirun --version 2>&1 | head -1)"
fi
# A build folder of its own: another script's cache in /tmp/build may hold "MPI not found".
build=/tmp/build-multihost
cmake --preset gpu -B "$build" -DGMI_BUILD_BENCHMARKS=ON "${cmake_mpi[@]}" > "$dir/configure.log" 2>&1 \
  || { tail -30 "$dir/configure.log"; exit 1; }
if grep -q "gmi: MPI not found" "$dir/configure.log"; then tail -30 "$dir/configure.log"; echo "CMake did not find MPI"; exit 1; fi
time cmake --build "$build" -j16 --target gmi.example.cartpole_ppo > "$dir/build.log" 2>&1 \
  || { tail -40 "$dir/build.log"; exit 1; }
bin=$build/examples/cartpole_ppo/gmi.example.cartpole_ppo
train="$dir/train.jsonl"
phases="$dir/phases.jsonl"
common=(--partition none --gmis-per-gpu 1 --minibatch-scope gmi --target-return nan --max-env-steps 1e12 --log-interval 4)
mflags=(--oversubscribe --mca pml ob1 --mca btl tcp,self --bind-to none)  # no core binding: a host runs many threads
[ "$(id -u)" -eq 0 ] && mflags+=(--allow-run-as-root)
sockets=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0)
xs=(); for kv in "${sockets[@]}"; do xs+=(-x "$kv"); done
visible=CUDA_VISIBLE_DEVICES=0,1
# $1: seconds of training; the rest: flags after the common ones (--num-envs and --metrics: each flag once)
one_host() { local s=$1; shift; env "$visible" timeout 90 "$bin" --gpus 2 "${common[@]}" --max-seconds "$s" "$@"; }
two_hosts() {  # as one_host; NCCL_* assignments in $extra (an array) go to both hosts
  local s=$1; shift
  local ex=(); for kv in "${extra[@]}"; do ex+=(-x "$kv"); done
  env "$visible" "${sockets[@]}" "${extra[@]}" timeout 90 mpirun "${mflags[@]}" "${xs[@]}" "${ex[@]}" \
    -np 1 "$bin" --gpus all --host-id sim0 "${common[@]}" --max-seconds "$s" "$@" : \
    -np 1 "$bin" --gpus all --host-id sim1 "${common[@]}" --max-seconds "$s" "$@"
}
rm -f "$train" "$phases"
rc=0
extra=()
for envs in 8192 32768; do
  reps="1 2 3" secs=10
  [ "$envs" -eq 32768 ] && reps="1 2" secs=8
  for rep in $reps; do
    echo "== $envs envs a GMI, rep $rep: one host, 2 GPUs (NCCL default)"
    one_host "$secs" --num-envs "$envs" --metrics "$train" > "$dir/one_host.$envs.$rep.log" 2>&1 || { rc=1; echo "one host failed"; }
    grep -E "^gmi: (time|step) limit|weights" "$dir/one_host.$envs.$rep.log" | head -2
    echo "== $envs envs a GMI, rep $rep: two simulated hosts x 1 GPU (mpirun, NCCL on sockets)"
    two_hosts "$secs" --num-envs "$envs" --metrics "$train" > "$dir/two_hosts.$envs.$rep.log" 2>&1 || { rc=1; echo "two hosts failed"; }
    grep -E "^gmi: [0-9]+ hosts|^gmi: (time|step) limit|^gmi: host 1|^gmi: across hosts" "$dir/two_hosts.$envs.$rep.log" | head -4
    # the first failure ends the script: what follows needs the two-host run to work (and time to spare)
    [ "$rc" -eq 0 ] || { tail -40 "$dir/two_hosts.$envs.$rep.log" "$dir/one_host.$envs.$rep.log"; echo "see $dir"; exit 1; }
  done
done
# Where the time goes: one two-host run a size with the communication clock on (its own metrics file).
for envs in 8192 32768; do
  echo "== phases: $envs envs a GMI, two simulated hosts, --comm-clock on"
  two_hosts 6 --num-envs "$envs" --comm-clock on --metrics "$phases" > "$dir/phases.$envs.log" 2>&1 || echo "phases run failed"
  grep -E "^gmi: (time|step) limit|^gmi: across hosts|^gmi: .*communication" "$dir/phases.$envs.log" | head -4
done
echo "== 8192 envs a GMI: two simulated hosts, NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4"
extra=(NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4)
two_hosts 8 --num-envs 8192 --metrics "$dir/tuned.jsonl" > "$dir/two_hosts.tuned.log" 2>&1 || echo "tuned run failed"
grep -E "^gmi: (time|step) limit|^gmi: across hosts" "$dir/two_hosts.tuned.log" | head -3
extra=()

# Correctness: 2 GMIs a GPU on each host (the GPU's own hierarchical sum, then NCCL among the leaders of both hosts),
# a fixed number of iterations; every GMI of both hosts must end with the same weights (host 0's end line says so).
# Then the same saved at iteration 20 (a file a GMI, a manifest a host, the job's manifest) and resumed to 40: the
# weights must equal the straight run's, bit for bit (the FNV-1a of host 0's end line).
two_gmis() {  # $1: log; the rest: flags for both hosts
  local log=$1; shift
  env "$visible" "${sockets[@]}" timeout 90 mpirun "${mflags[@]}" "${xs[@]}" \
    -np 1 "$bin" --gpus all --host-id sim0 --partition none --gmis-per-gpu 2 --num-envs 2048 --target-return nan \
    --log-interval 4 "$@" : \
    -np 1 "$bin" --gpus all --host-id sim1 --partition none --gmis-per-gpu 2 --num-envs 2048 --target-return nan \
    --log-interval 4 "$@" > "$dir/$log" 2>&1
  echo "$log: exit $?"
  grep -E "^gmi: (step|time) limit|^gmi: host 1|^gmi: resumed|^gmi: checkpoint|DIFFER|threw|lost" "$dir/$log" | head -5
}
ck=/tmp/gmi-multihost-ck && rm -rf "$ck" && mkdir -p "$ck"
echo "== two simulated hosts x 1 GPU x 2 GMIs (threads): 40 iterations; 20 saved, resumed to 40"
two_gmis two_hosts_2gmis.log --max-env-steps 5242880
two_gmis two_hosts_2gmis_save20.log --max-env-steps 2621440 --checkpoint "$ck/ck"
two_gmis two_hosts_2gmis_resume40.log --max-env-steps 5242880 --resume "$ck/ck"
ls "$ck"
fnv() { sed -n 's/.*step limit after 40 iterations.*over 4 GMIs on 2 hosts.*weights identical on every GMI (FNV-1a \([0-9a-f]*\)).*/\1/p' "$dir/$1"; }
straight=$(fnv two_hosts_2gmis.log) resumed=$(fnv two_hosts_2gmis_resume40.log)
echo "weights after 40 iterations: straight ${straight:-none}, resumed at 20 ${resumed:-none}"
two_gmis_ok=0; [ -n "$straight" ] && two_gmis_ok=1
resume_ok=0; [ -n "$straight" ] && [ "$straight" = "$resumed" ] && [ -s "$ck/ck" ] && [ -s "$ck/ck.host1" ] && resume_ok=1

echo "== killed host: host 1 SIGKILLs itself after iteration 60 (GMI_TEST_KILL_AT=0:60), mpirun --enable-recovery"
env "$visible" "${sockets[@]}" timeout 90 mpirun "${mflags[@]}" --enable-recovery "${xs[@]}" \
  -np 1 "$bin" --gpus all --host-id sim0 "${common[@]}" --num-envs 8192 --max-seconds 60 : \
  -np 1 env GMI_TEST_KILL_AT=0:60 "$bin" --gpus all --host-id sim1 "${common[@]}" --num-envs 8192 --max-seconds 60 2>&1 \
  | while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done > "$dir/killed_host.log"
cat "$dir/killed_host.log" | tail -8

# Kill and rerun: what a user's restart loop does across hosts (gmi::run restarts within one host only). Host 1
# dies after iteration 33; host 0 ends with one line; the job runs again with --resume from the job manifest (the
# hosts agree on the last checkpoint every host completed) and must end with the 40 straight iterations' weights.
echo "== kill and rerun: 2 hosts x 1 GPU x 2 GMIs, a checkpoint every 10 iterations, host 1 killed after iteration 33"
ck2=/tmp/gmi-multihost-rerun && rm -rf "$ck2" && mkdir -p "$ck2"
stamp() { while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done; }
kr=(--gpus all --partition none --gmis-per-gpu 2 --num-envs 2048 --target-return nan --log-interval 4
    --max-env-steps 5242880 --checkpoint "$ck2/ck" --checkpoint-every 10)
env "$visible" "${sockets[@]}" timeout 90 mpirun "${mflags[@]}" --enable-recovery "${xs[@]}" \
  -np 1 "$bin" --host-id sim0 "${kr[@]}" : \
  -np 1 env GMI_TEST_KILL_AT=0:33 "$bin" --host-id sim1 "${kr[@]}" 2>&1 | stamp > "$dir/kill_rerun.1.log"
ls "$ck2"
env "$visible" "${sockets[@]}" timeout 90 mpirun "${mflags[@]}" "${xs[@]}" \
  -np 1 "$bin" --host-id sim0 "${kr[@]}" --resume "$ck2/ck" : \
  -np 1 "$bin" --host-id sim1 "${kr[@]}" --resume "$ck2/ck" 2>&1 | stamp > "$dir/kill_rerun.2.log"
grep -E "killed by|host 0 'sim0': host 1|resumed from|step limit" "$dir/kill_rerun.1.log" "$dir/kill_rerun.2.log" | head -8
rerun=$(fnv kill_rerun.2.log)
echo "weights after 40 iterations: straight ${straight:-none}, killed at 33 and rerun ${rerun:-none}"
rerun_ok=0; [ -n "$straight" ] && [ "$straight" = "$rerun" ] && rerun_ok=1

python3 - "$train" "$dir/killed_host.log" "$dir/device_run.jsonl" "$device" "$git_rev" "$two_gmis_ok" "$resume_ok" \
  "$driver" "$dir/kill_rerun.1.log" "$dir/kill_rerun.2.log" "$rerun_ok" "$phases" "$dir/tuned.jsonl" <<'PY'
import json, os, re, statistics, sys, time
train, killed_log, out, device, git, two_gmis_ok, resume_ok, driver, rerun1, rerun2, rerun_ok, phases, tuned = sys.argv[1:14]
def read(path): return [json.loads(l) for l in open(path) if l.strip()] if os.path.exists(path) else []
all_rows = read(train)
run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-multihost"
lines = []
def line(case, metric, values, **extra):
    d = {"bench": "multihost", "case": case, "impl": "gmi", "metric": metric, "median": statistics.median(values),
         "min": min(values), "max": max(values), "reps": len(values), "device": device, "gpus": 2, "driver": driver,
         "git": git, "run_id": run_id}
    d.update(extra)
    lines.append(d)
    return d
ok = two_gmis_ok == "1" and resume_ok == "1"
if two_gmis_ok != "1": print("2 hosts x 1 GPU x 2 GMIs: no step limit after 40 iterations with identical weights")
if resume_ok != "1": print("2 hosts x 1 GPU x 2 GMIs: saved at 20 and resumed to 40, other weights than 40 straight")
def ms_per_iteration(r): return 1e3 * r["per_gmi"][0]["seconds"] / max(1, r["iteration"]) if r.get("per_gmi") else None
for envs in (8192, 32768):
    rows = [r for r in all_rows if r.get("num_envs") == envs]
    med = {}
    for h in (1, 2):
        rs = [r for r in rows if r.get("hosts") == h]
        if not rs:
            print(f"{envs} envs: no end line with hosts {h}"); ok = False; continue
        if not all(r["weights_identical"] for r in rs):
            print(f"{envs} envs, hosts {h}: weights differ between GMIs"); ok = False
        d = line("cartpole_ppo_colocated_2gpus", "train_samples_per_s", [r["train_samples_per_s"] for r in rs], hosts=h,
                 gpus_per_host=2 // h, gmis_per_gpu=1, num_envs=envs, update=rs[0].get("synced_update"),
                 ms_per_iteration=statistics.median(ms_per_iteration(r) for r in rs),
                 transport="nccl default" if h == 1 else "nccl sockets (lo), mpirun tcp")
        med[h] = d
    if 1 in med and 2 in med:
        ratio = med[2]["median"] / med[1]["median"]
        line("cartpole_ppo_colocated_2gpus", "two_hosts_over_one_host", [ratio], target=0.90, num_envs=envs)
        print(f"{envs} envs a GMI: two hosts / one host (medians of train samples/s): {ratio:.3f} (target >= 0.90); "
              f"one host {med[1]['median']:.4g} ({med[1]['ms_per_iteration']:.2f} ms an iteration, update "
              f"{med[1]['update']}), two hosts {med[2]['median']:.4g} ({med[2]['ms_per_iteration']:.2f} ms, update "
              f"{med[2]['update']})")
for r in read(phases):  # host 0's GMI 0 in its training loop, --comm-clock on
    c = r.get("cross_host")
    if not c:
        print(f"phases: no cross_host in the end line ({r.get('num_envs')} envs)"); ok = False; continue
    it = max(1, r["iteration"])
    for k in ("sum_seconds", "mpi_seconds", "wait_seconds", "allreduce_seconds", "wall_seconds"):
        if k in c:
            line("cartpole_ppo_colocated_2gpus_phases", "cross_host_" + k.replace("_seconds", "_s"), [c[k]], hosts=2,
                 num_envs=r["num_envs"], iterations=r["iteration"], sums=c["sums"], per_iteration_ms=1e3 * c[k] / it,
                 comm_clock="on")
    print(f"phases, {r['num_envs']} envs a GMI, {r['iteration']} iterations in {c['wall_seconds']:.2f} s "
          f"({1e3 * c['wall_seconds'] / it:.2f} ms each): cross-host sums {1e3 * c['sum_seconds'] / it:.3f} ms an "
          f"iteration ({c['sums']} sums; MPI {1e3 * c['mpi_seconds'] / it:.3f}, waiting {1e3 * c['wait_seconds'] / it:.3f}), "
          f"gradient allreduce {1e3 * c.get('allreduce_seconds', float('nan')) / it:.3f} ms an iteration (device spans)")
for r in read(tuned):
    line("cartpole_ppo_colocated_2gpus", "train_samples_per_s", [r["train_samples_per_s"]], hosts=2, gpus_per_host=1,
         gmis_per_gpu=1, num_envs=r["num_envs"], ms_per_iteration=ms_per_iteration(r),
         transport="nccl sockets (lo), NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4")
    print(f"two hosts, 8192 envs, NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4: {r['train_samples_per_s']:.4g} samples/s (1 run)")
killed = lost = None
for l in open(killed_log):
    t, _, text = l.partition(" ")
    if killed is None and "killed by the test hook" in text: killed = float(t)
    if lost is None and re.search(r"host 0 'sim0': host 1 'sim1' \(GMI 1\) ", text): lost = float(t); lost_line = text.strip()
if killed is None or lost is None:
    print("killed host: no kill line or no line from host 0 naming host 1 (see killed_host.log)"); ok = False
else:
    s = lost - killed
    line("killed_host", "lost_host_detection_s", [s], target=10.0, line=lost_line)
    print(f"killed host: host 0 named host 1 {s:.2f} s after the kill (target <= 10 s): {lost_line}")
    ok = ok and s <= 10
killed = lost = resumed = None
for l in open(rerun1):
    t, _, text = l.partition(" ")
    if killed is None and "killed by the test hook" in text: killed = float(t)
    if lost is None and re.search(r"host 0 'sim0': host 1 'sim1' \(GMIs 2-3\) ", text): lost = float(t); lost_line = text.strip()
for l in open(rerun2):
    t, _, text = l.partition(" ")
    if resumed is None and text.startswith("gmi: resumed from"): resumed = float(t); resumed_line = text.strip()
if killed is None or lost is None or resumed is None:
    print("kill and rerun: no kill line, no line from host 0 naming host 1, or no resumed line (see kill_rerun.*.log)"); ok = False
else:
    line("kill_rerun", "kill_rerun_detection_s", [lost - killed], target=10.0, line=lost_line)
    line("kill_rerun", "kill_rerun_recovery_s", [resumed - killed], line=resumed_line,
         what="kill to the rerun's trainers resumed (host 0 ends, mpirun ends, the job starts again and loads)")
    print(f"kill and rerun: host 0 named host 1 {lost - killed:.2f} s after the kill; training resumed "
          f"{resumed - killed:.2f} s after it: {resumed_line}")
    ok = ok and lost - killed <= 10
if rerun_ok != "1":
    print("kill and rerun: the rerun did not end with the straight run's weights"); ok = False
with open(out, "a") as f:
    for d in lines: f.write(json.dumps(d) + "\n")
print(f"{len(lines)} result lines in {out}")
sys.exit(0 if ok else 1)
PY
