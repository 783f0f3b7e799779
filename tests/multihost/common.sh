# Sourced by run.sh and gpu_hosts.sh (tests/multihost): their arguments (case, binary, folder, whether MPI was
# built), the visible skip (exit 77) without MPI or mpirun, mpirun's flags for simulated hosts, and the checks
# they share.
set -uo pipefail
case_name=$1 bin=$2 dir=$3 mpi=$4
if [ "$mpi" != mpi ]; then echo "SKIPPED: gmi built without MPI (install libopenmpi-dev, reconfigure)"; exit 77; fi
if ! command -v mpirun >/dev/null; then echo "SKIPPED: mpirun not on PATH (install openmpi-bin)"; exit 77; fi
rm -rf "$dir" && mkdir -p "$dir"
# MPI over TCP only (btl tcp,self), as between real hosts: the simulated hosts share nothing through /dev/shm.
flags=(--oversubscribe --mca btl tcp,self)
[ "$(id -u)" -eq 0 ] && flags+=(--allow-run-as-root)
fail() { echo "FAILED: $*"; exit 1; }

# $1: host 0's error line "... (detected at T)", $2: the file with the wall time of the kill, $3: what was done.
# Fails unless the line came within 10 s of the kill.
detected_within_10s() {
  local detected
  detected=$(echo "$1" | sed -n 's/.*(detected at \([0-9.]*\)).*/\1/p')
  [ -n "$detected" ] || fail "no detection time in: $1"
  awk -v k="$(cat "$2")" -v d="$detected" -v what="$3" \
    'BEGIN { s = d - k; printf "host 0 ended %.2f s after %s\n", s, what; exit !(s >= 0 && s <= 10) }' \
    || fail "host 0 did not end within 10 s of $3"
}
