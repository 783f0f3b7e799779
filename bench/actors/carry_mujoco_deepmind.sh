#!/usr/bin/env bash
# Optional, beside bench/actors/carry_mujoco.sh: DeepMind's own build of the same MuJoCo version (2.2.2), taken from
# its Python wheel on PyPI (pip download; the library in it is self-contained and built with AVX, Debian's is not),
# into .carry/mujoco-deepmind/libmujoco.so.2.2.2. gmi still builds against Debian's headers; a run that puts this
# folder first on LD_LIBRARY_PATH steps with DeepMind's build (same soname, same version; result lines name the
# library in "mujoco_library"). bench/actors/device_rate.sh measures both when this folder was carried.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pip download mujoco==2.2.2 --no-deps --only-binary=:all: --python-version 3.10 --platform manylinux_2_17_x86_64 \
  -d "$tmp" > /dev/null
python3 -m zipfile -e "$tmp"/mujoco-2.2.2-*.whl "$tmp/x"
mkdir -p .carry/mujoco-deepmind
cp "$tmp/x/mujoco/libmujoco.so.2.2.2" .carry/mujoco-deepmind/
ls -l "$PWD/.carry/mujoco-deepmind/libmujoco.so.2.2.2"
