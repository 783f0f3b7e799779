#!/usr/bin/env bash
# GPU machine (16 cores, 1 GPU), from the repository root, with .carry carried (.carry/debs: MuJoCo from
# bench/actors/carry_mujoco.sh, pugixml from bench/physics/carry_pugixml.sh): the placement points of the tasks that
# exist both in gmi::physics and on MuJoCo. Builds gmi.bench.actors_place (one file per task, compiled in
# parallel), gmi.bench.actors_check_threshold and gmi.test.actors_mujoco (-j16), then:
#   1. the host MuJoCo tests (actors.mujoco.*: Humanoid and Anymal against gmi::physics, resumes, placement's CPU side);
#   2. gmi.bench.actors_place for ant_v4, humanoid_v4 and anymal at 1, 3, 7 and 14 actor cores (PPO on CPU actors stepping
#      MuJoCo, PPO with gmi::physics on the GPU at the same env count, the placement line), each within 100 s;
#   3. gmi.bench.actors_check_threshold on those lines: per task, is threshold 1 right at every point.
# Result lines: $OUT/actors_place.jsonl (the bench's and the check's lines); logs in $OUT/actors_place/.
set -uo pipefail
out=${OUT:-/tmp/out}
logs=$out/actors_place
mkdir -p "$logs"
source bench/actors/configure_mujoco.sh "$logs"
lines=$out/actors_place.jsonl
: > "$lines"
status=0
t0=$(date +%s)
cmake --build /tmp/build -j16 --target gmi.bench.actors_place gmi.bench.actors_check_threshold gmi.test.actors_mujoco \
  > "$logs/build.log" 2>&1 || { tail -20 "$logs/build.log"; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
ctest --test-dir /tmp/build -R "actors.mujoco|actors_mujoco" --output-on-failure > "$logs/ctest.log" 2>&1 || status=1
grep -E "tests passed|Failed" "$logs/ctest.log"
for task in ant_v4 humanoid_v4 anymal; do
  timeout 100 /tmp/build/bench/actors/gmi.bench.actors_place "$logs/place.jsonl" "$task" 0.3 1 3 7 14 \
    > "$logs/place_$task.log" 2>&1 || { echo "$task: exit $?"; tail -3 "$logs/place_$task.log"; status=1; }
done
cat "$logs/place.jsonl" >> "$lines" 2>/dev/null
if [ -s "$logs/place.jsonl" ]; then
  /tmp/build/bench/actors/gmi.bench.actors_check_threshold "$logs/place.jsonl" "$logs/threshold.jsonl" 1 > /dev/null
  echo "threshold 1 right at every point of every task: exit $? (0 yes, 1 no, 2 no data)"
  tee -a "$lines" < "$logs/threshold.jsonl" | grep '"placement_threshold"'
fi
grep '"bench":"placement"' "$lines" | head -20
echo "result lines: $(wc -l < "$lines") in $lines; $(( $(date +%s) - t0 )) s"
exit "$status"
