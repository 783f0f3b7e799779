# Sourced by bench/learning/device_*.sh: the repository root as cwd, $out (OUT) with run.log teed, BUILD_DIR,
# GMI_GIT_REVISION, and pugixml where bench/physics/carry_pugixml.sh carried it (the examples' configure may look for it).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
out=${OUT:?OUT: the folder for results (set by the device machine)}
mkdir -p "$out"
exec > >(tee -a "$out/run.log") 2>&1
export BUILD_DIR=${BUILD:-/tmp/build}
export GMI_GIT_REVISION=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
if ls .carry/debs/libpugixml*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/gmi-sysroot
  for f in .carry/debs/libpugixml*.deb; do dpkg -x "$f" /tmp/gmi-sysroot; done
  export CMAKE_PREFIX_PATH=/tmp/gmi-sysroot/usr LD_LIBRARY_PATH=/tmp/gmi-sysroot/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
fi
