# shellcheck shell=bash
# The shared part of the multi-host GPU scripts (device_run.sh, device_hosts.sh), sourced from the repository root
# after `name=<folder under $OUT>` and, optionally, `gph=<GPUs a simulated host>`: sets OUT, dir ($OUT/$name),
# git_rev, gpus, gph (default: 2 with 4 or more GPUs, else 1), total (2 x gph), device, driver, visible; OpenMPI
# (mpirun on PATH, else unpacked from .carry/openmpi, cmake_mpi then names its compiler); mflags and net (mpirun's
# flags and NCCL's sockets between the simulated hosts). Functions: one_host and two_hosts (a run of $bin),
# stamp, tag_end_line, ended. Exits 77 with fewer than 2 GPUs, 2 on a bad GPUS_PER_HOST.
OUT=${OUT:-/tmp/out}
dir="$OUT/$name"
mkdir -p "$dir"
git_rev=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD)}
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$gpus" -lt 2 ]; then echo "SKIPPED: bench/multihost/$(basename "$0") needs 2 GPUs, found $gpus"; exit 77; fi
gph=${gph:-${GPUS_PER_HOST:-$([ "$gpus" -ge 4 ] && echo 2 || echo 1)}}
case "$gph" in 1|2) ;; *) echo "GPUS_PER_HOST: got $gph, need 1 or 2"; exit 2 ;; esac
[ $((2 * gph)) -le "$gpus" ] || { echo "GPUS_PER_HOST=$gph: got $gpus GPUs, need $((2 * gph))"; exit 2; }
total=$((2 * gph))
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
extra=()
mflags=(--oversubscribe --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo
        --bind-to none)  # no core binding: a host runs many threads; one machine: MPI only over lo
[ "$(id -u)" -eq 0 ] && mflags+=(--allow-run-as-root)
# Between the simulated hosts: NCCL's socket transport over lo (gmi sets NCCL_HOSTID per host, so NCCL sees 2 hosts).
net=(NCCL_NET=Socket NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0 NCCL_MNNVL_ENABLE=0)
visible=CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((total - 1)))
# one_host SECONDS FLAGS...: one launcher of $bin with every GPU, NCCL's defaults, the array $common's flags
one_host() { local s=$1; shift; env "$visible" timeout 90 "$bin" --gpus "$total" "${common[@]}" --max-seconds "$s" "$@"; }
# two_hosts SECONDS FLAGS...: 2 launchers of $bin, each GPUS_PER_HOST GPUs; NAME=VALUE pairs in the array $extra go
# to both
two_hosts() {
  local s=$1; shift
  local xs=(); for kv in "${net[@]}" "${extra[@]}"; do xs+=(-x "$kv"); done
  env "$visible" "${net[@]}" "${extra[@]}" timeout 90 mpirun "${mflags[@]}" "${xs[@]}" \
    -np 1 "$bin" --gpus all --host-id sim0 "${common[@]}" --max-seconds "$s" "$@" : \
    -np 1 "$bin" --gpus all --host-id sim1 "${common[@]}" --max-seconds "$s" "$@"
}
stamp() { while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done; }
# tag_end_line METRICS VARIANT OUT [NCCL_ENV]: the end line in METRICS (a run's --metrics file: its last line with
# train_samples_per_s) with "variant" (and "nccl_env", the NCCL settings the run had beside $net) added, appended to
# OUT; METRICS is removed.
tag_end_line() {
  if [ -s "$1" ]; then
    python3 -c '
import json, sys
ends = [r for r in map(json.loads, filter(str.strip, open(sys.argv[1]))) if "train_samples_per_s" in r]
if ends:
    print(json.dumps(dict(ends[-1], variant=sys.argv[2], nccl_env=sys.argv[3])))' "$1" "$2" "${4:-}" >> "$3"
  fi
  rm -f "$1"
}
# ended VARIANT LOG RC [NCCL_ENV]: after a measured run (its end line in $dir/m.jsonl, its output in $dir/LOG, its
# exit RC): the end line tagged into $train, the log's end and gradient lines, the exit when not 0; returns RC.
ended() {
  tag_end_line "$dir/m.jsonl" "$1" "$train" "${4:-}"
  grep -E "^gmi: (time|step) limit|^gmi: [0-9]+ hosts|gradients " "$dir/$2" | head -3 | cut -c1-240
  [ "$3" -eq 0 ] || { echo "$1: exit $3"; tail -5 "$dir/$2"; }
  return "$3"
}
