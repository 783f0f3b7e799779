#!/usr/bin/env python3
"""Result lines from one gmi::run metrics file (--metrics, JSON lines) of the SAC bench scripts.

Appends to CURVES one learning-curve line per progress line with a mean return:
  {"bench":"learning_curve", **tags, "env_steps":..,"wall_s":..,"mean_return":.., **common}
and to SUMMARY one line per asked metric of the run's end line:
  {"bench":BENCH, **tags, "metric":NAME, "median":v, "min":v, "max":v, **common}   (one run: median = min = max)
Metrics are NAME or NAME=KEY (the end line's KEY under NAME). Exit 1 when the file or its end line is missing.
Usage: result_lines.py METRICS CURVES SUMMARY BENCH TAGS_JSON COMMON_JSON METRIC...
"""
import json
import os
import sys


def main(argv):
    if len(argv) < 7:
        print("result_lines: arguments: got %d, need METRICS CURVES SUMMARY BENCH TAGS_JSON COMMON_JSON METRIC..."
              % (len(argv) - 1), file=sys.stderr)
        return 2
    path, curves_path, summary_path, bench, tags, common = argv[1:7]
    tags, common = json.loads(tags), json.loads(common)
    label = " ".join(str(v) for v in tags.values())
    if not os.path.exists(path):
        print(f"result_lines: {label}: no metrics file", file=sys.stderr)
        return 1
    end = None
    with open(curves_path, "a") as curves:
        for raw in open(path):
            d = json.loads(raw)
            if d.get("event") == "end":
                end = d
            elif "env_steps" in d and d.get("mean_return") is not None:
                curves.write(json.dumps({"bench": "learning_curve", **tags, "env_steps": d["env_steps"],
                                         "wall_s": d["wall_s"], "mean_return": d["mean_return"], **common}) + "\n")
    if end is None:
        print(f"result_lines: {label}: no end line", file=sys.stderr)
        return 1
    with open(summary_path, "a") as summary:
        for spec in argv[7:]:
            name, _, key = spec.partition("=")
            v = end.get(key or name)
            if v is None:
                continue
            summary.write(json.dumps({"bench": bench, **tags, "metric": name, "median": v, "min": v, "max": v,
                                      **common}) + "\n")
            print(f"{label}: {name} {v:.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
