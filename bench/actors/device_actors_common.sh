# Sourced by bench/actors/device_actors*.sh from their own folder, after start_s and budget_s are set: name=actors,
# device_common.sh's set-up with BUILD (default /tmp/build-actors), logs in $out/actors/, $lines emptied, JOBS
# (default 16), model (gmi::physics's Ant MJCF), MuJoCo's carried .debs unpacked and $build configured (exit 2 when
# CMake did not find MuJoCo); left (seconds of the budget left) and step (a command under the time left).
name=actors
export BUILD=${BUILD:-/tmp/build-actors}
source "$(dirname "${BASH_SOURCE[0]}")/../physics/device_common.sh"
logs=$out/actors
mkdir -p "$logs"
: > "$lines"
export JOBS=${JOBS:-16}
model=include/gmi/physics/builtin/ant.xml
source bench/actors/unpack_mujoco.sh
configure_build
grep -q "^GMI_MUJOCO_LIBRARY:.*mujoco" "$build/CMakeCache.txt" ||
  { echo "MuJoCo not found by CMake (see $out/configure.log)"; exit 2; }

left() { echo $(( budget_s - ($(date +%s) - start_s) )); }
# step NAME SECONDS CMD...: runs CMD under timeout min(SECONDS, time left), output in $logs/NAME.log; skipped when
# under 20 s are left; a failure or skip sets status 1.
step() {
  local what=$1 want=$2 have
  shift 2
  have=$(left)
  ((have > want)) && have=$want
  if ((have < 20)); then echo "skipped $what: $(left) s of the budget left"; status=1; return 1; fi
  timeout "$have" "$@" > "$logs/$what.log" 2>&1
  local rc=$?
  ((rc == 0)) || { echo "$what: exit $rc (timeout $have s)"; tail -3 "$logs/$what.log"; status=1; }
  return $rc
}
