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


def gradient_sums_per_iteration(r):
    """A synced PPO iteration's minibatch gradient sums (epochs x minibatches) from an end line, else None."""
    ppo = r.get("ppo") or {}
    if not all(k in ppo for k in ("epochs", "horizon", "minibatch")) or "num_envs" not in r:
        return None
    samples = ppo["horizon"] * r["num_envs"] * (1 if r.get("minibatch_scope") == "gmi" else r.get("gmis", 1))
    return ppo["epochs"] * max(1, samples // max(1, ppo["minibatch"]))


def us_per_sum(r):
    """The microseconds a cross-host gradient sum took (device spans, --comm-clock on) from an end line, else None."""
    c, sums = r.get("cross_host") or {}, gradient_sums_per_iteration(r)
    if not sums or "allreduce_seconds" not in c:
        return None
    return 1e6 * c["allreduce_seconds"] / (max(1, r["iteration"]) * sums)


def fastest(path):
    """The variant of the phases end lines in `path` whose gradient sums took the fewest microseconds, else ""."""
    timed = [(us_per_sum(r), r["variant"]) for r in read(path) if "variant" in r and us_per_sum(r) is not None]
    return min(timed)[1] if timed else ""


def phase_lines(common, folder, gph):
    """The phases runs' result lines and summary texts (phases.jsonl in `folder`: end lines of two-host runs with
    --comm-clock on, each tagged with its variant; host 0's GMI 0 in its training loop): each cross_host time an
    iteration, and the gradient sums' device time a sum where the end line gives the sums an iteration."""
    lines, texts = [], []
    for r in [r for r in read(os.path.join(folder, "phases.jsonl")) if "train_samples_per_s" in r]:
        c, v = r.get("cross_host"), r.get("variant", r.get("cross_host_sum"))
        if not c:
            texts.append(f"phases {v}: no cross_host in the end line")
            continue
        it = max(1, r["iteration"])
        sums, us = gradient_sums_per_iteration(r), us_per_sum(r)
        for k in ("sum_seconds", "mpi_seconds", "allreduce_seconds", "wall_seconds"):
            if k in c:
                lines.append(result_line(common, "cartpole_ppo_colocated_phases",
                                         "cross_host_" + k.replace("_seconds", "_s"), [c[k]], hosts=2,
                                         gpus_per_host=gph, iterations=r["iteration"], per_iteration_ms=1e3 * c[k] / it,
                                         comm_clock="on", cross_host_sum=r.get("cross_host_sum"), variant=v,
                                         nccl_env=r.get("nccl_env", ""), gradient_sums_per_iteration=sums,
                                         us_per_gradient_sum=us))
        per_sum = f", {us:.1f} us a sum ({sums} sums an iteration)" if us is not None else ""
        texts.append(f"phases {v:24s} {r['iteration']} iterations, {1e3 * c['wall_seconds'] / it:.2f} ms each: "
                     f"statistics sums {1e3 * c['sum_seconds'] / it:.3f} ms, gradient sums "
                     f"{1e3 * c.get('allreduce_seconds', float('nan')) / it:.3f} ms an iteration (device spans){per_sum}"
                     f"{' [' + r['nccl_env'] + ']' if r.get('nccl_env') else ''}")
    return lines, texts


def gpu_test_line(common, folder, gpus):
    """The GPU test's result line (multihost_gpu_test.log in `folder` ends with its exit) and whether it passed."""
    log = os.path.join(folder, "multihost_gpu_test.log")
    passed = os.path.exists(log) and "gmi.test.multihost_gpu: exit 0" in open(log).read()
    return result_line(common, "gathered_sum", "multihost_gpu_test_passed", [1.0 if passed else 0.0],
                       what=f"gmi.test.multihost_gpu on GPUs 0-{gpus - 1}"), passed


def variant_medians(common, rows, shapes, gpus, quiet=()):
    """Each variant's train_samples_per_s line from its runs' end lines `rows` (tagged with "variant"); `shapes`:
    variant: (case, hosts, what), `gpus` in all. Returns (lines, {variant: line}, summary texts, whether every run
    kept identical weights); a variant without runs gets a text unless it is in `quiet`."""
    lines, med, texts, ok = [], {}, [], True
    for variant, (case, hosts, what) in shapes.items():
        rs = [r for r in rows if r.get("variant") == variant]
        if not rs:
            if variant not in quiet:
                texts.append(f"{variant:15s} no end line")
            continue
        if not all(r.get("weights_identical") for r in rs):
            texts.append(f"{variant}: weights differ between GMIs")
            ok = False
        d = result_line(common, case, "train_samples_per_s", [r["train_samples_per_s"] for r in rs], hosts=hosts,
                        gpus_per_host=gpus // hosts, gmis_per_gpu=1, num_envs=rs[0]["num_envs"], variant=variant,
                        cross_host_sum=rs[0].get("cross_host_sum"), update=rs[0].get("synced_update"), what=what,
                        ms_per_iteration=statistics.median(ms_per_iteration(r) or 0 for r in rs))
        lines.append(d)
        med[variant] = d
        texts.append(f"{variant:15s} {hosts} host(s) x {gpus // hosts} GPU(s): {d['median'] / 1e6:8.2f} M samples/s "
                     f"(median of {len(rs)}, {d['ms_per_iteration']:.2f} ms an iteration) [{what}]")
    return lines, med, texts, ok


if __name__ == "__main__":  # `result_lines.py fastest PHASES.jsonl`: the variant with the fastest gradient sums
    import sys
    if len(sys.argv) != 3 or sys.argv[1] != "fastest":
        sys.exit("usage: result_lines.py fastest PHASES.jsonl")
    print(fastest(sys.argv[2]))
