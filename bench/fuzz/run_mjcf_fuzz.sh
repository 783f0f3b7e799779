#!/usr/bin/env bash
# Fuzzes gmi::physics's MJCF loader with libFuzzer under AddressSanitizer and UndefinedBehaviorSanitizer
# (Debian's clang-14 and libclang-rt-14-dev), seeded with the test models, for RUNS inputs (default 1,000,000).
# Usage: bench/fuzz/run_mjcf_fuzz.sh [runs] [workdir]; prints the libFuzzer summary and exits non-zero on a finding
# (the crashing input is left in the workdir as crash-* / leak-* / timeout-*).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
runs=${1:-1000000}
work=${2:-/tmp/gmi-mjcf-fuzz}
mkdir -p "$work/corpus"
cp "$root"/tests/physics/models/*.xml "$work/corpus/"
clang++-14 -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root/include" "$here/mjcf_fuzz.cpp" -lpugixml -o "$work/mjcf_fuzz"
cd "$work"
start=$(date +%s)
set +e
./mjcf_fuzz -runs="$runs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -dict="$here/mjcf.dict" \
  -print_final_stats=1 corpus 2>&1 | tee fuzz.log | grep -E "^#[0-9]+ +(DONE|INITED)|ERROR|SUMMARY|stat::" || true
rc=${PIPESTATUS[0]}
set -e
echo "mjcf_fuzz: exit $rc after $(( $(date +%s) - start )) s; inputs requested $runs; log $work/fuzz.log"
exit "$rc"
