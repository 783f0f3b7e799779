# Sourced by bench/actors/device*.sh on the GPU machine, with $1 the folder for the configure log: unpacks the
# carried MuJoCo .debs (unpack_mujoco.sh), configures /tmp/build (gpu preset, benchmarks on) and checks that
# CMake found MuJoCo. Sets GMI_GIT_REVISION for the result lines.
export GMI_GIT_REVISION=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD)}
source bench/actors/unpack_mujoco.sh
cmake --preset gpu -B /tmp/build -DGMI_BUILD_BENCHMARKS=ON > "$1/configure.log" 2>&1
grep -q "^GMI_MUJOCO_LIBRARY:.*mujoco" /tmp/build/CMakeCache.txt \
  || { echo "MuJoCo not found by CMake (see $1/configure.log)"; exit 2; }
