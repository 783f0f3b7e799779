#!/usr/bin/env bash
# The README's quick start is examples/quickstart/quickstart.cu verbatim (built and smoke-run as
# gmi.example.quickstart): take the ```cpp block after the README's marker line and compare it with the file.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
readme="$root/README.md" example="$root/examples/quickstart/quickstart.cu"
marker='<!-- examples/quickstart/quickstart.cu verbatim'
block=$(awk -v m="$marker" '
  index($0, m) == 1 { found = 1; next }
  found == 1 { if ($0 != "```cpp") exit 2; found = 2; next }
  found == 2 { if ($0 == "```") { found = 3; exit } print }
  END { if (found != 3) exit 2 }' "$readme") || {
  echo "readme_quickstart_current: README.md has no line starting '$marker' followed by a closed \`\`\`cpp block" >&2
  exit 1
}
if ! diff -u --label "README.md quick start" --label examples/quickstart/quickstart.cu <(printf '%s\n' "$block") "$example"; then
  echo "readme_quickstart_current: the README's quick start differs from examples/quickstart/quickstart.cu: make them the same" >&2
  exit 1
fi
echo "readme_quickstart_current: the README's quick start is examples/quickstart/quickstart.cu"
