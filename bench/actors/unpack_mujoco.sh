# Sourced on the GPU machine from the repository root: unpacks the carried MuJoCo .debs (.carry/debs, from
# bench/actors/carry_mujoco.sh) into /tmp/gmi-mujoco with dpkg -x (never into /) and points CMake and the loader
# there. Exits 2 with one line when the .debs were not carried.
gmi_mujoco_root=/tmp/gmi-mujoco
ls .carry/debs/libmujoco*.deb >/dev/null 2>&1 || { echo "no .carry/debs/libmujoco*.deb: run bench/actors/carry_mujoco.sh here first"; exit 2; }
for f in .carry/debs/lib{mujoco,ccd,lodepng,qhull,tinyxml2}*.deb; do dpkg -x "$f" "$gmi_mujoco_root"; done
export CMAKE_PREFIX_PATH="$gmi_mujoco_root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export LD_LIBRARY_PATH="$gmi_mujoco_root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
