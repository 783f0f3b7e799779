#!/usr/bin/env python3
"""plan_mapped_split.py IN OUT: a copy of the colocated plan IN whose measured mapping chooses split.

The GPU tests reach the split side of a plan this way on machines where colocated wins the measurement. Exits 2
with one line when IN has no measured mapping or no split candidate."""
import json
import sys

if len(sys.argv) != 3:
    sys.exit("usage: plan_mapped_split.py IN OUT")
plan = json.load(open(sys.argv[1]))
if not isinstance(plan.get("mapping"), dict) or not plan.get("split_chosen"):
    print(f"plan_mapped_split: {sys.argv[1]}: got no measured mapping with a split candidate, need both", file=sys.stderr)
    sys.exit(2)
plan["mapping"]["choice"] = "split"
plan["mapping"]["reason"] = "edited for the test: " + plan["mapping"]["reason"]
with open(sys.argv[2], "w") as out:
    json.dump(plan, out, indent=2)
print(f"plan_mapped_split: wrote {sys.argv[2]} (mapping: split)")
