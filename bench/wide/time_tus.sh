#!/usr/bin/env bash
# The compile cost of each translation unit of the given targets (default gmi.bench.wide): every object's compile
# command from the build folder's ninja file, run again under /usr/bin/time with ccache off, JOBS at a time
# (default 1), printing CPU seconds (user + sys: what one core spends) and wall seconds per object, slowest first.
# Needs a configured build folder (e.g. cmake --preset gpu -B DIR -DGMI_BUILD_BENCHMARKS=ON).
# Usage: bench/wide/time_tus.sh BUILD_DIR [TARGET...]
set -uo pipefail
build=${1:?usage: time_tus.sh BUILD_DIR [TARGET...]}
shift
targets=("${@:-gmi.bench.wide}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$build" || exit 1
# the compile lines only (not the link), one per object
ninja -t commands "${targets[@]}" | grep -E ' -c [^ ]+\.(cu|cpp)( |$)' | sort -u > "$tmp/commands"
echo "$(wc -l < "$tmp/commands") objects of ${targets[*]}; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
i=0
while IFS= read -r cmd; do
  i=$((i + 1))
  src=$(grep -oE ' -c [^ ]+' <<< "$cmd" | head -1 | cut -c5-)
  printf '%s\t%s\n' "$src" "$cmd" > "$tmp/job.$i"
done < "$tmp/commands"
ls "$tmp"/job.* | xargs -P "${JOBS:-1}" -I{} bash -c '
  src=$(cut -f1 "$1"); cmd=$(cut -f2- "$1")
  /usr/bin/time -f "%U %S %e" -o "$1.t" env CCACHE_DISABLE=1 bash -c "$cmd" > "$1.log" 2>&1 || echo "FAILED: $src" >&2
  read -r u s e < "$1.t"
  awk -v u="$u" -v s="$s" -v e="$e" -v f="$src" "BEGIN { printf \"%7.1f s cpu %7.1f s wall  %s\n\", u + s, e, f }"
' _ {} | sort -rn
