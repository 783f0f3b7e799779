# Sourced by bench/actors/device*.sh on the GPU machine, with $1 the folder for the configure log: unpacks the
# carried MuJoCo .debs (.carry/debs, from bench/actors/carry_mujoco.sh) into /tmp/gmi-mujoco with dpkg -x (never
# into /), points CMake and the loader there, configures /tmp/build (gpu preset, benchmarks on) and checks that
# CMake found MuJoCo. Sets GMI_GIT_REVISION for the result lines.
export GMI_GIT_REVISION=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD)}
gmi_mujoco_root=/tmp/gmi-mujoco
ls .carry/debs/libmujoco*.deb >/dev/null || { echo "no .carry/debs/libmujoco*.deb: run bench/actors/carry_mujoco.sh here first"; exit 2; }
for f in .carry/debs/lib{mujoco,ccd,lodepng,qhull,tinyxml2}*.deb; do dpkg -x "$f" "$gmi_mujoco_root"; done
export CMAKE_PREFIX_PATH="$gmi_mujoco_root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export LD_LIBRARY_PATH="$gmi_mujoco_root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cmake --preset gpu -B /tmp/build -DGMI_BUILD_BENCHMARKS=ON > "$1/configure.log" 2>&1
grep -q "^GMI_MUJOCO_LIBRARY:.*mujoco" /tmp/build/CMakeCache.txt \
  || { echo "MuJoCo not found by CMake (see $1/configure.log)"; exit 2; }
