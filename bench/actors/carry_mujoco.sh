#!/usr/bin/env bash
# For GPU machines without MuJoCo (nothing can be fetched there): here, downloads Debian's MuJoCo packages and the
# few libraries libmujoco links into .carry/debs (ignored by git, carried with the run's `carry`); there,
# bench/actors/device.sh unpacks them with dpkg -x into /tmp/gmi-mujoco (never into /) and points CMake and the
# loader at that folder.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .carry/debs
cd .carry/debs
apt-get download libmujoco-dev libmujoco2.2.2 libccd2 liblodepng0 libqhull-r8.0 libtinyxml2-9
ls -1 "$PWD"/lib{mujoco,ccd,lodepng,qhull,tinyxml2}*.deb
