#!/usr/bin/env bash
# For GPU machines whose image lacks OpenMPI (nothing can be fetched there): here, downloads Debian's OpenMPI
# packages and the libraries they load into .carry/openmpi (ignored by git, carried with the run's `carry`);
# bench/multihost/device_run.sh unpacks them there (dpkg -x) and points CMake, PATH, the loader and OpenMPI
# (OPAL_PREFIX) at them. About 9 MB.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .carry/openmpi
cd .carry/openmpi
apt-get download openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev libpmix2 libhwloc15 libevent-core-2.1-7 \
  libevent-pthreads-2.1-7 libevent-2.1-7 libfabric1 libucx0 libibverbs1 librdmacm1 libpsm2-2 libpsm-infinipath1 \
  libmunge2 libnl-3-200 libnl-route-3-200 libxnvctrl0 libnuma1 libpciaccess0 libltdl7 libgfortran5
ls -1 "$PWD"/*.deb | wc -l
du -sh "$PWD"
