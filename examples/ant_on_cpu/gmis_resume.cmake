# CTest helper of examples/ant_on_cpu: 2 host GMIs of CPU actors stepping MuJoCo's Ant through gmi::run
# (--gmis-per-gpu 2 --device host, 1 actor core each, 64 envs a GMI: 2048 env steps an iteration of the group).
#   cmake -DBIN=<gmi.example.ant_on_cpu> -DDIR=<scratch folder> -P gmis_resume.cmake
#   1. 4 iterations saving a checkpoint: the end line names both GMIs' actor cores and identical weights; the
#      metrics end line has 2 actor core sets and weights_identical true; every GMI's file holds its environments'
#      MuJoCo state (actors.mujoco.qpos);
#   2. --resume from it to 8 iterations: resumed at iteration 4 with 2 GMIs, ends at 8, identical weights;
#   3. 8 iterations without a stop: the same weights as 2 (FNV-1a of the end lines), so the round trip is exact.
#   4. --resume from it with the limit it is at (--max-env-steps 8192, which counts env steps since training
#      began): nothing to train, one line, the step limit at iteration 4 with the checkpoint's weights.
# Each failure is one FATAL_ERROR line naming the step; every run is bounded by a timeout.
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")
set(_common --device host --gmis-per-gpu 2 --actor-cores-per-gmi 1 --num-envs 64 --log-interval 0
            --target-return nan)

# run(NAME REGEX args...): runs BIN with _common and args, needs exit code 0 and output matching REGEX; sets
# <NAME>_out to the output and <NAME>_hash to the end line's weights hash.
function(run name regex)
  execute_process(COMMAND "${BIN}" ${_common} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 120)
  message("${name}:\n${out}${err}")
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "${name}: exit code: got ${rc}, need 0")
  endif()
  if(NOT "${out}" MATCHES "${regex}")
    message(FATAL_ERROR "${name}: output does not match '${regex}'")
  endif()
  if(NOT "${out}" MATCHES "over 2 GMIs .actor cores [0-9]+ [|] [0-9]+. [|][^\n]*weights identical on every GMI .FNV-1a ([0-9a-f]+)")
    message(FATAL_ERROR "${name}: no end line naming each GMI's actor core and identical weights")
  endif()
  set(${name}_hash "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

# end_line(NAME FILE ITERATION RESUMED_AT): the metrics file's end line has the iteration, resumed_at, both GMIs'
# actor core sets and weights_identical true.
function(end_line name file iteration resumed_at)
  file(STRINGS "${file}" lines REGEX "\"event\":\"end\"")
  list(LENGTH lines n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "${name}: metrics end lines in ${file}: got ${n}, need 1")
  endif()
  string(JSON it GET "${lines}" iteration)
  string(JSON at GET "${lines}" resumed_at)
  string(JSON sets LENGTH "${lines}" actor_cores)
  string(JSON same GET "${lines}" weights_identical)
  if(NOT it EQUAL iteration OR NOT at EQUAL resumed_at OR NOT sets EQUAL 2 OR NOT same)
    message(FATAL_ERROR "${name}: metrics end line: got iteration ${it}, resumed_at ${at}, ${sets} actor core sets, "
                        "weights_identical ${same}; need ${iteration}, ${resumed_at}, 2, true")
  endif()
endfunction()

run(saved "checkpoint [^ ]*ck .manifest [+] 2 GMI files[^\n]* at iteration 4\n.*step limit after 4 iterations"
    --max-env-steps 8192 --checkpoint "${DIR}/ck" --metrics "${DIR}/saved.jsonl")
end_line(saved "${DIR}/saved.jsonl" 4 0)
foreach(gmi 0 1)
  file(STRINGS "${DIR}/ck.iter4.gmi${gmi}" mujoco REGEX "actors[.]mujoco[.]qpos")
  if(NOT mujoco)
    message(FATAL_ERROR "saved: ${DIR}/ck.iter4.gmi${gmi} holds no actors.mujoco.qpos (GMI ${gmi}'s MuJoCo state)")
  endif()
endforeach()
run(resumed "resumed from [^ ]*ck at iteration 4 .2 GMIs.*step limit after 8 iterations"
    --max-env-steps 16384 --resume "${DIR}/ck" --metrics "${DIR}/resumed.jsonl")
end_line(resumed "${DIR}/resumed.jsonl" 8 4)
run(straight "step limit after 8 iterations" --max-env-steps 16384)
if(NOT resumed_hash STREQUAL straight_hash)
  message(FATAL_ERROR "resumed weights: got FNV-1a ${resumed_hash}, need ${straight_hash} (8 iterations without a stop)")
endif()
run(at_limit "nothing to train: resumed at iteration 4, 8192 env steps, at or past --max-env-steps 8192.*step limit after 4 iterations"
    --max-env-steps 8192 --resume "${DIR}/ck" --metrics "${DIR}/at_limit.jsonl")
end_line(at_limit "${DIR}/at_limit.jsonl" 4 4)
if(NOT at_limit_hash STREQUAL saved_hash)
  message(FATAL_ERROR "resumed at its limit: weights FNV-1a ${at_limit_hash}, need the checkpoint's ${saved_hash}")
endif()
message("2 host GMIs on MuJoCo: saved at 4, resumed to 8, weights ${resumed_hash} equal to a run without a stop")
