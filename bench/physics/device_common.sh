# Shared set-up of the physics device scripts, sourced after `name=<results name>`: the repository root as the
# working folder; out ($OUT), build ($BUILD or /tmp/build), git_rev, run_id and lines ($out/$name.jsonl); status 0;
# pugixml unpacked from .carry/debs where bench/physics/carry_pugixml.sh carried it, so one build folder serves all.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
out=${OUT:?OUT: the folder for results (set by the device machine)}
build=${BUILD:-/tmp/build}
git_rev=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
export GMI_GIT_REVISION=$git_rev
run_id="$name-$(date -u +%Y%m%dT%H%M%SZ)"
lines=$out/$name.jsonl
status=0
if ls .carry/debs/libpugixml*.deb >/dev/null 2>&1; then
  for f in .carry/debs/libpugixml*.deb; do dpkg -x "$f" /tmp/gmi-sysroot; done
  export CMAKE_PREFIX_PATH=/tmp/gmi-sysroot/usr LD_LIBRARY_PATH=/tmp/gmi-sysroot/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
fi
