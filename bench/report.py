#!/usr/bin/env python3
"""Turns the suite's JSON lines (bench/results/kmeans-h100.jsonl, fetched
from the GPU machine) into bench/results/kmeans.md and PNG charts.  The
last measurement of each (workload, implementation, algorithm, precision)
wins, so re-runs of a workload replace its earlier rows.

Usage: bench/report.py [results.jsonl]
"""
import json, os, sys
from collections import OrderedDict

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results", "kmeans-h100.jsonl")
OUT = os.path.join(HERE, "results")
PEAK = 60.0

rows = OrderedDict()
for line in open(SRC):
    r = json.loads(line)
    key = (r["workload"], r["impl"], r.get("algorithm", ""), r.get("precision", ""), r.get("forced", ""))
    rows[key] = r

workloads = list(OrderedDict.fromkeys(k[0] for k in rows))


def get(w, impl, algorithm="", precision="", forced=""):
    return rows.get((w, impl, algorithm, precision, forced))


lines = ["# k-means benchmark results (H100)", "",
         "Per-iteration times in milliseconds, measured in one run per workload by `bench/gpu-run suite`",
         "(data generated on the GPU machine with fixed seeds; KDD Cup 99 from `../shared/data`).",
         "`ours` columns: gpuclust's GPU engine with `algorithm`/`precision` as named (float32 unless",
         "marked tf32); `auto` is the hybrid, with what it ran in brackets.  `torch`: PyTorch on the same",
         "GPU (matmul-form distances, argmin, index_add, float32 without TF32).  sklearn: scikit-learn on",
         "the machine's 16 cores.  `peak`: 2·n·k·d flops per iteration of our best float32 time (lloyd,",
         "pruned or auto) over %g TFLOP/s, the H100's FP32 figure (tensor-core kernels can pass 100%%)." % PEAK,
         "`label`/`update`: our Lloyd iteration split (device time); `rechecked`: share of labels the",
         "TF32 screen left to 3xTF32 (float32 tensor path).  `Δ inertia`: tf32 / bf16 inertia against float32's.",
         "`forced`: float32 Lloyd with the kernel forced (kmeans_bench's KERNEL argument): the register kernel, the",
         "TF32 screen, and the screen and bf16 with the streamed tile layout, measured beside the default.",
         "Each of our times is the median of three 50-iteration fits.", "",
         "| workload | n | d | k | lloyd | label / update | rechecked | pruned (skipped) | auto (ran) | tf32 | bf16 | torch | lloyd vs torch | best float32 vs torch | tf32 vs torch | bf16 vs torch | Δ inertia tf32 / bf16 | forced: register / screen / streamed screen / streamed bf16 | sklearn lloyd | sklearn elkan | peak |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
for w in workloads:
    lloyd = get(w, "gpuclust", "lloyd", "float32")
    pruned = get(w, "gpuclust", "pruned", "float32")
    auto = get(w, "gpuclust", "auto", "float32")
    tf32 = get(w, "gpuclust", "lloyd", "tf32")
    bf16 = get(w, "gpuclust", "lloyd", "bf16")
    torch = get(w, "pytorch")
    skl = get(w, "sklearn-lloyd")
    ske = get(w, "sklearn-elkan")
    if lloyd is None or torch is None:
        continue
    f32 = [x["ms_per_iteration"] for x in (lloyd, pruned, auto) if x]
    t = torch["ms_per_iteration"]
    forced = [get(w, "gpuclust", "lloyd", "float32", "register"), get(w, "gpuclust", "lloyd", "float32", "tensor"),
              get(w, "gpuclust", "lloyd", "float32", "tensor-streaming"), get(w, "gpuclust", "lloyd", "bf16", "tensor-streaming")]
    peak = 2.0 * lloyd["n"] * lloyd["k"] * lloyd["d"] / (min(f32) * 1e9) / PEAK
    fmt = lambda x: "%.3f" % x["ms_per_iteration"] if x else "–"
    delta = lambda x: "%+.3f%%" % (100 * (x["inertia"] / lloyd["inertia"] - 1)) if x and "inertia" in x and "inertia" in lloyd else "–"
    lines.append("| %s | %d | %d | %d | %s [%s] | %.3f / %.3f | %s | %s | %s | %s | %s | %.3f | %.1f× | %.1f× | %s | %s | %s | %s | %s | %s | %.0f%% |" % (
        w, lloyd["n"], lloyd["d"], lloyd["k"], fmt(lloyd), lloyd["kernel"],
        lloyd["labeling_ms_per_iteration"], lloyd["update_ms_per_iteration"],
        "%.1f%%" % (100 * lloyd["rechecked"]) if lloyd.get("kernel") == "tensor_screened" else "–",
        "%s (%.0f%%)" % (fmt(pruned), 100 * pruned["skipped"]) if pruned else "–",
        "%s (%s)" % (fmt(auto), auto["ran"]) if auto else "–",
        fmt(tf32), fmt(bf16), t, t / lloyd["ms_per_iteration"], t / min(f32),
        "%.1f×" % (t / tf32["ms_per_iteration"]) if tf32 else "–",
        "%.1f×" % (t / bf16["ms_per_iteration"]) if bf16 else "–",
        "%s / %s" % (delta(tf32), delta(bf16)) if tf32 or bf16 else "–",
        " / ".join(fmt(x) for x in forced) if any(forced) else "–",
        fmt(skl), fmt(ske), 100 * peak))
open(os.path.join(OUT, "kmeans.md"), "w").write("\n".join(lines) + "\n")

# headline chart: speed-up over the PyTorch baseline per workload
names, ours, ours_tf32, ours_bf16 = [], [], [], []
for w in workloads:
    lloyd, auto, tf32, bf16, torch = (get(w, "gpuclust", "lloyd", "float32"), get(w, "gpuclust", "auto", "float32"),
                                      get(w, "gpuclust", "lloyd", "tf32"), get(w, "gpuclust", "lloyd", "bf16"),
                                      get(w, "pytorch"))
    if lloyd is None or torch is None:
        continue
    best = min(x["ms_per_iteration"] for x in (lloyd, auto) if x)
    names.append(w.replace("-var", " σ²").replace("table1-", "T1 ").replace("wuhong-", "WH "))
    ours.append(torch["ms_per_iteration"] / best)
    ours_tf32.append(torch["ms_per_iteration"] / tf32["ms_per_iteration"] if tf32 else 0)
    ours_bf16.append(torch["ms_per_iteration"] / bf16["ms_per_iteration"] if bf16 else 0)
fig, ax = plt.subplots(figsize=(12, 5))
xs = range(len(names))
ax.bar([x - 0.27 for x in xs], ours, 0.27, label="gpuclust float32, exact labels (auto)")
ax.bar([x for x in xs], ours_tf32, 0.27, label="gpuclust tf32")
ax.bar([x + 0.27 for x in xs], ours_bf16, 0.27, label="gpuclust bf16")
ax.axhline(1.0, color="black", linewidth=0.8)
ax.set_yscale("log")
ax.set_ylabel("speed-up per iteration over PyTorch (same H100)")
ax.set_xticks(list(xs))
ax.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
ax.legend()
ax.set_title("k-means iteration time: gpuclust vs a PyTorch baseline on an H100")
fig.tight_layout()
fig.savefig(os.path.join(OUT, "kmeans-speedup.png"), dpi=110)
print("wrote", os.path.join(OUT, "kmeans.md"), "and kmeans-speedup.png")
