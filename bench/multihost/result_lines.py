"""The multi-host device scripts' shared pieces for result lines (device_run_lines.py, device_hosts_lines.py): reading
end lines, a result line with the run's fields, an iteration's milliseconds, stamped logs and a 40-iteration run's
weight hash."""
import json
import os
import re
import statistics


def read(path):
    return [json.loads(l) for l in open(path) if l.strip()] if os.path.exists(path) else []


def result_line(common, case, metric, values, **extra):
    """A result line (bench multihost): the median, min, max and count of `values`, `common`'s fields and `extra`."""
    d = {"bench": "multihost", "case": case, "impl": "gmi", "metric": metric, "median": statistics.median(values),
         "min": min(values), "max": max(values), "reps": len(values)}
    d.update(common)
    d.update(extra)
    return d


def ms_per_iteration(r):
    return 1e3 * r["per_gmi"][0]["seconds"] / max(1, r["iteration"]) if r.get("per_gmi") else None


def ratios(med, pairs):
    """For (base, variants) pairs over the medians' lines `med` (variant: line): [(variant, its median over the base's)]
    for each variant measured with its base, and the bases not measured."""
    out, missing = [], []
    for base, variants in pairs:
        if base not in med:
            missing.append(base)
            continue
        out += [(v, med[v]["median"] / med[base]["median"]) for v in variants if v in med]
    return out, missing


def stamped(path):
    """(seconds, text) for each line of a log whose lines `stamp` prefixed with the time."""
    out = []
    for l in open(path) if os.path.exists(path) else []:
        t, _, text = l.partition(" ")
        try:
            out.append((float(t), text.rstrip("\n")))
        except ValueError:
            pass
    return out


def fnv(entries, iterations=40):
    """The weights' FNV-1a of a run that ended after `iterations` iterations with identical weights, else None."""
    for _, text in entries:
        m = re.search(rf"step limit after {iterations} iterations.* weights identical on every GMI \(FNV-1a ([0-9a-f]+)\)",
                      text)
        if m:
            return m.group(1)
    return None
