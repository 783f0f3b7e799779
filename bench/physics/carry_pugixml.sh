#!/usr/bin/env bash
# For GPU machines whose image lacks libpugixml-dev (nothing can be fetched there): here, downloads Debian's
# pugixml packages into .carry/debs (ignored by git, carried with the run's `carry`); there, unpack them and
# point CMake and the loader at them before configuring:
#   for f in .carry/debs/libpugixml*.deb; do dpkg -x "$f" /tmp/gmi-sysroot; done
#   export CMAKE_PREFIX_PATH=/tmp/gmi-sysroot/usr LD_LIBRARY_PATH=/tmp/gmi-sysroot/usr/lib/x86_64-linux-gnu
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .carry/debs
cd .carry/debs
apt-get download libpugixml-dev libpugixml1v5
ls -1 "$PWD"/libpugixml*.deb
