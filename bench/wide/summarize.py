# The summary of a gmi.bench.wide + jax_reference.py run (one run id): each gmi case against the JAX reference,
# the targets, achieved TFLOP/s against the peak dense GEMM measured in the same run, and the wide rule's
# threshold cases. Rewrites every line's device to nvidia-smi's name (one name for both impls).
# Usage: python3 summarize.py LINES.jsonl "DEVICE NAME"
import json
import sys

path, device = sys.argv[1], sys.argv[2]
lines = [json.loads(l) for l in open(path) if l.strip()]
for l in lines:
    l["device"] = device
with open(path, "w") as f:
    for l in lines:
        f.write(json.dumps(l) + "\n")
peak = {l["precision"]: l["median"] for l in lines if l.get("case") == "peak_gemm"}
print("peak dense GEMM TFLOP/s:", {k: round(v, 1) for k, v in peak.items()})


def best(impl, case, net, n):
    # fuse_dz_sums 1 is device_wide2.sh's other setting (off by default since ba47b45): not the default's figure
    c = [l for l in lines if l["impl"] == impl and l.get("case") == case and l.get("net") == net and l.get("num_envs") == n
         and l.get("fuse_dz_sums", 0) == 0]
    return max(c, key=lambda l: l["median"]) if c else None


def of_peak(l):
    t = l.get("total_tflops", l.get("tflops", 0.0))
    p = peak.get(l["precision"], peak.get("tf32"))
    return f"{t:.1f} TF/s = {100 * t / p:.1f}% of {l['precision'] if l['precision'] in peak else 'tf32'} peak" if p else f"{t:.1f} TF/s"


targets = {("serving", "shadow_hand_mlp", 4096): 85e6, ("serving", "ant_mlp", 4096): 220e6}
nets = ("shadow_hand_mlp", "humanoid_mlp", "ant_mlp")
for case, ns in (("serving", (4096, 16384)), ("training", (4096,))):
    for net in nets:
        for n in ns:
            g, j = best("gmi", case, net, n), best("jax_reference", case, net, n)
            if not g:
                continue
            ratio = g["median"] / j["median"] if j else float("nan")
            t = targets.get((case, net, n))
            path = g.get("path") or f"{g.get('collection')}+{g.get('gradient_path')}"
            if g.get("kernels"):
                path += f", kernels {g['kernels']}"
            if g.get("backward"):
                path += f", backward {g['backward']}"
            if "wgrad_chunks" in g:
                path += f", wgrad chunks {g['wgrad_chunks']}"
            print(f"{case:8s} {net:16s} {n:6d}: gmi {g['median'] / 1e6:8.2f} M ({g['precision']}, {path}, {of_peak(g)}) "
                  f"jax {j['median'] / 1e6 if j else float('nan'):8.2f} M ({j['precision'] if j else '-'}, "
                  f"{j.get('tflops', 0) if j else 0:.1f} TF/s) ratio {ratio:.2f} (need >= 2)"
                  + ("" if not t else f", target {t / 1e6:.0f} M: " + ("met" if g["median"] >= t else "NOT met")))
# device_training.sh with a base tree: this revision's training against the base revision's, per precision.
base = [l for l in lines if l["impl"] == "gmi_base" and l.get("case") == "training"]
if base:
    print("training against the base revision (same run, same GPU):")
    for b in base:
        g = [l for l in lines if l["impl"] == "gmi" and l.get("case") == "training" and l.get("net") == b.get("net")
             and l.get("precision") == b.get("precision") and l.get("num_envs") == b.get("num_envs")]
        if g:
            print(f"  {b['net']:16s} {b['precision']:5s} {b['num_envs']:6d}: gmi {g[0]['median'] / 1e6:7.3f} M ({g[0]['git']}) "
                  f"base {b['median'] / 1e6:7.3f} M ({b['git']}) speedup {g[0]['median'] / b['median']:.2f}x")
# device_fused.sh / device_wholenet.sh: the own kernels (kernels mma, wholenet) against cuBLASLt, same case, net,
# envs and precision.
own = [l for l in lines if l["impl"] == "gmi" and l.get("kernels") not in (None, "cublaslt")]
if own:
    print("layer kernels: own kernels (mma: fused products; wholenet: one kernel per forward; auto: the default rule, "
          "its choice in brackets) against cublaslt, same run:")
    for m in own:
        c = [l for l in lines if l["impl"] == "gmi" and l.get("kernels") == "cublaslt" and l.get("case") == m.get("case")
             and l.get("net") == m.get("net") and l.get("num_envs") == m.get("num_envs")
             and l.get("precision") == m.get("precision") and l.get("wgrad_chunks") == m.get("wgrad_chunks")
             and l.get("keep_inputs16") == m.get("keep_inputs16")]
        if c:
            k = m["kernels"] + (f"({m['kernels_chosen']})" if m.get("kernels_chosen") and m["kernels"] == "auto" else "")
            print(f"  {m['case']:8s} {m['net']:16s} {m['num_envs']:6d} {m['precision']:5s}: {k} {m['median'] / 1e6:8.3f} M "
                  f"cublaslt {c[0]['median'] / 1e6:8.3f} M  {k}/cublaslt {m['median'] / c[0]['median']:.2f}")
# device_wide.sh: the weight gradients as chunked products (wgrad chunks 16; 0 = auto) against one product per
# layer (1, the previous default), same case, net, envs, precision and kernels; then bf16 against tf32 per chunking.
split = [l for l in lines if l["impl"] == "gmi" and l.get("wgrad_chunks", 1) != 1 and l.get("case") in ("training", "backward")]
if split:
    print("weight gradients: chunked products against one product per layer (same run):")
    for m in split:
        c = [l for l in lines if l["impl"] == "gmi" and l.get("wgrad_chunks") == 1 and l.get("case") == m["case"]
             and l.get("net") == m.get("net") and l.get("num_envs") == m.get("num_envs")
             and l.get("precision") == m.get("precision") and l.get("kernels") == m.get("kernels")
             and l.get("keep_inputs16") == m.get("keep_inputs16")]
        if not c:
            continue
        if m["case"] == "backward":
            print(f"  backward {m['net']:16s} {m['precision']:5s} 8192 rows: chunks {m['wgrad_chunks_taken']} "
                  f"({m.get('split_products', '?')} chunked products) "
                  f"{m['us_per_pass']:8.1f} us ({m['tflops']:.1f} TF/s), one product {c[0]['us_per_pass']:8.1f} us "
                  f"({c[0]['tflops']:.1f} TF/s): {c[0]['us_per_pass'] / m['us_per_pass']:.2f}x; the forward alone "
                  f"{m.get('forward_us', 0):.1f} / {c[0].get('forward_us', 0):.1f} us")
        else:
            print(f"  training {m['net']:16s} {m['precision']:5s} {m['num_envs']:6d}: chunks {m['wgrad_chunks_taken']} "
                  f"{m['median'] / 1e6:7.3f} M, one product {c[0]['median'] / 1e6:7.3f} M: "
                  f"{m['median'] / c[0]['median']:.2f}x (kernels {m.get('kernels_chosen', m.get('kernels'))})")
    for case in ("training", "backward"):
        for net in nets:
            for w in sorted({l["wgrad_chunks"] for l in lines if l.get("case") == case and "wgrad_chunks" in l}):
                r = {l["precision"]: l for l in lines if l["impl"] == "gmi" and l.get("case") == case
                     and l.get("net") == net and l.get("wgrad_chunks") == w and l.get("keep_inputs16", 1) == 1}
                if "bf16" in r and "tf32" in r:
                    print(f"  {case:8s} {net:16s} chunks {w:2d}: bf16 / tf32 {r['bf16']['median'] / r['tf32']['median']:.2f}")
# device_wide2.sh: bf16 with the backward reading the forward's bf16 inputs (keep_inputs16 1) against converting
# them per layer (0, the path before), same case, net, envs and chunks; then bf16 against tf32 (target >= 1).
kept = [l for l in lines if l["impl"] == "gmi" and l.get("keep_inputs16") == 1 and l.get("precision") == "bf16"]
conv = [l for l in lines if l["impl"] == "gmi" and l.get("keep_inputs16") == 0]
if kept and conv:
    print("bf16 inputs kept from the forward against converted per layer in the backward (same run):")
    for m in kept:
        c = [l for l in conv if l.get("case") == m.get("case") and l.get("net") == m.get("net")
             and l.get("num_envs") == m.get("num_envs") and l.get("wgrad_chunks") == m.get("wgrad_chunks")
             and l.get("kernels") == m.get("kernels")]
        if c:
            unit = "us a pass" if m["case"] == "backward" else "M samples/s"
            a, b = (m["us_per_pass"], c[0]["us_per_pass"]) if m["case"] == "backward" else (m["median"] / 1e6, c[0]["median"] / 1e6)
            speed = b / a if m["case"] == "backward" else a / b
            print(f"  {m['case']:8s} {m['net']:16s} chunks {m.get('wgrad_chunks')}: kept {a:8.3f} converted {b:8.3f} "
                  f"{unit}: {speed:.2f}x")
    for case in ("training", "backward"):
        for net in nets:
            r = {l["precision"]: l for l in lines if l["impl"] == "gmi" and l.get("case") == case and l.get("net") == net
                 and l.get("keep_inputs16", 1) == 1 and l.get("wgrad_chunks") in (0, 16, None)
                 and l.get("fuse_dz_sums", 1) == 1}
            if "bf16" in r and "tf32" in r:
                q = r["bf16"]["median"] / r["tf32"]["median"]
                print(f"  {case:8s} {net:16s}: bf16 / tf32 {q:.2f} (target >= 1: {'met' if q >= 1 else 'NOT met'})")
# device_wide2.sh: the dz pass forming the bias gradient's column partials (fuse_dz_sums 1; bf16 stores no fp32
# dz) against separate dz and column-sum passes (0, the path before), same case, net, envs, precision, chunks and
# kernels; then bf16 against tf32 (target >= 1) and training against JAX (target >= 2) for each.
fused = [l for l in lines if l["impl"] == "gmi" and l.get("fuse_dz_sums") == 1]
apart = [l for l in lines if l["impl"] == "gmi" and l.get("fuse_dz_sums") == 0]
if fused and apart:
    print("dz pass with the bias gradient's column partials (fused) against separate passes (before), same run:")
    for m in fused:
        c = [l for l in apart if all(l.get(k) == m.get(k) for k in
                                     ("case", "net", "num_envs", "precision", "wgrad_chunks", "kernels", "keep_inputs16"))]
        if not c:
            continue
        if m["case"] == "backward":
            a, b, unit, speed = m["us_per_pass"], c[0]["us_per_pass"], "us a pass", c[0]["us_per_pass"] / m["us_per_pass"]
        else:
            a, b, unit, speed = m["median"] / 1e6, c[0]["median"] / 1e6, "M samples/s", m["median"] / c[0]["median"]
        print(f"  {m['case']:8s} {m['net']:16s} {m['precision']:5s}: fused {a:8.3f} before {b:8.3f} {unit}: {speed:.2f}x")
    for f, label in ((1, "fused"), (0, "before")):
        for case in ("training", "backward"):
            for net in nets:
                r = {l["precision"]: l for l in lines if l["impl"] == "gmi" and l.get("case") == case
                     and l.get("net") == net and l.get("fuse_dz_sums") == f and l.get("keep_inputs16", 1) == 1}
                if "bf16" in r and "tf32" in r:
                    q = r["bf16"]["median"] / r["tf32"]["median"]
                    j = best("jax_reference", "training", net, r["bf16"].get("num_envs")) if case == "training" else None
                    vs = ""
                    if j:
                        top = max(r["bf16"]["median"], r["tf32"]["median"])
                        vs = f"; best / JAX {top / j['median']:.2f} (target >= 2: {'met' if top >= 2 * j['median'] else 'NOT met'})"
                    print(f"  {label:6s} {case:8s} {net:16s}: bf16 / tf32 {q:.2f} "
                          f"(target >= 1: {'met' if q >= 1 else 'NOT met'}){vs}")
# device_wide10.sh: the backward's input-gradient chain as one kernel (backward wholenet) against today's default
# (backward auto: cuBLASLt dX products and dz passes), same case, net, envs, precision and kernels; then each
# against JAX's best training in the same run (target >= 2).
whole_b = [l for l in lines if l["impl"] == "gmi" and l.get("backward") == "wholenet"]
auto_b = [l for l in lines if l["impl"] == "gmi" and l.get("backward") == "auto"]
if whole_b and auto_b:
    print("backward chain in one kernel (wholenet) against today's default (auto = cublaslt), same run:")
    for m in whole_b:
        c = [l for l in auto_b if all(l.get(k) == m.get(k) for k in ("case", "net", "num_envs", "precision", "kernels"))]
        if not c:
            continue
        if m["case"] == "backward":
            print(f"  backward {m['net']:16s} {m['precision']:5s}: wholenet {m['us_per_pass']:8.1f} auto "
                  f"{c[0]['us_per_pass']:8.1f} us a forward + backward ({m['forward_us']:.1f} us of it the forward): "
                  f"{c[0]['us_per_pass'] / m['us_per_pass']:.2f}x")
            continue
        j = best("jax_reference", "training", m["net"], m.get("num_envs"))
        vs = ""
        if j:
            vs = (f"; / JAX {m['median'] / j['median']:.2f} (wholenet) {c[0]['median'] / j['median']:.2f} (auto), "
                  f"target >= 2: {'met' if m['median'] >= 2 * j['median'] else 'NOT met'}")
        print(f"  training {m['net']:16s} {m['precision']:5s}: wholenet {m['median'] / 1e6:7.3f} auto "
              f"{c[0]['median'] / 1e6:7.3f} M samples/s: {m['median'] / c[0]['median']:.2f}x{vs}")
lg = [l for l in lines if l.get("case") == "layer_gemm"]
if lg:
    print("one layer, 8192 x 512 x 512 (TFLOP/s of the product):")
    for l in lg:
        p = peak.get(l["precision"])
        print(f"  {l['precision']:5s} {l['kernel']:22s} {l['median']:7.1f} TF/s" + (f" ({100 * l['median'] / p:.1f}% of peak)" if p else ""))
ad = [l for l in lines if l.get("case") == "adam"]
for l in ad:
    print(f"adam {l['params']} parameters, {l['kernel']:13s}: {l['median'] / 1e3:8.1f} k steps/s ({1e6 / l['median']:.1f} us a step)")
c = [l for l in lines if l.get("net") == "cartpole_mlp"]
if c:
    print(f"serving  cartpole_mlp 512: gmi {c[0]['median'] / 1e6:.2f} M (target 60 M: {'met' if c[0]['median'] >= 60e6 else 'NOT met'})")
th = [l for l in lines if l.get("case") == "threshold"]
if th:
    print("wide rule threshold (Ant proxy, fp32, samples/s): narrow = threads + per-sample gradients, wide = batched + gemm")
    for net in dict.fromkeys(l["net"] for l in th):
        row = {l["rule"]: l for l in th if l["net"] == net}
        if "narrow" in row and "wide" in row:
            n_, w_ = row["narrow"], row["wide"]
            print(f"  {net:12s} max width {n_['max_width']:4d}: narrow {n_['median'] / 1e6:7.3f} M ({n_['collection']}+{n_['gradient_path']}) "
                  f"wide {w_['median'] / 1e6:7.3f} M ({w_['collection']}+{w_['gradient_path']}) wide/narrow {w_['median'] / n_['median']:.2f}")
