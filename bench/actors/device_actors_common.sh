# Sourced by bench/actors/device_actors*.sh from their own folder, after start_s and budget_s are set: name (default
# actors), device_common.sh's set-up with BUILD (default /tmp/build-actors), logs in $out/$name/, $lines emptied, JOBS
# (default 16), model (gmi::physics's Ant MJCF), MuJoCo's carried .debs unpacked and $build configured (exit 2 when
# CMake did not find MuJoCo); left (seconds of the budget left) and step (a command under the time left).
name=${name:-actors}
export BUILD=${BUILD:-/tmp/build-actors}
source "$(dirname "${BASH_SOURCE[0]}")/../physics/device_common.sh"
logs=$out/$name
mkdir -p "$logs"
: > "$lines"
export JOBS=${JOBS:-16}
model=include/gmi/physics/builtin/ant_v4.xml
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

# mujoco_builds: prints the cores ($cpus) and host CPU; sets `builds` (debian, and deepmind where
# .carry/mujoco-deepmind was carried: said so when not) and `deepmind_path` (LD_LIBRARY_PATH with DeepMind's first).
mujoco_builds() {
  echo "cores: $cpus of $(nproc --all); host CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
  builds=(debian)
  if [ -f .carry/mujoco-deepmind/libmujoco.so.2.2.2 ]; then
    builds+=(deepmind)
  else
    echo "no .carry/mujoco-deepmind/libmujoco.so.2.2.2: DeepMind's build not measured (bench/actors/carry_mujoco_deepmind.sh)"
  fi
  deepmind_path="$PWD/.carry/mujoco-deepmind:$LD_LIBRARY_PATH"
}

# rate_rounds ROUND2_S STEP_S NAME_A ARG_A NAME_B ARG_B: gmi.bench.actors_rate ($bench) on model argument ARG_A then
# ARG_B, 128 envs a core, at 1 and 8 threads on cores $cpus, for every build of mujoco_builds; round 1 of every build
# first, then round 2 where ROUND2_S seconds are left (so a budget cut loses repeats, not a build). Each run is a
# step of at most STEP_S seconds; lines in $logs/rate_<build>_<NAME>_<round>.jsonl.
rate_rounds() {
  local round2_s=$1 step_s=$2 round lib k path
  local names=("$3" "$5") args=("$4" "$6")
  for round in 1 2; do
    for lib in "${builds[@]}"; do
      if ((round == 2 && $(left) < round2_s)); then echo "round 2 of $lib: left out ($(left) s of the budget left)"; continue; fi
      for k in 0 1; do
        path=$LD_LIBRARY_PATH
        [ "$lib" = deepmind ] && path=$deepmind_path
        LD_LIBRARY_PATH=$path step "rate_${lib}_${names[k]}_$round" "$step_s" taskset -c "$cpus" "$bench" \
          "$logs/rate_${lib}_${names[k]}_$round.jsonl" "${args[k]}" 0.5 128 1 8
      done
    done
  done
}
