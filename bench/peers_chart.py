#!/usr/bin/env python3
"""doc/performance.md's chart of gpuclust against the strongest peer per workload, from
bench/results/peers-best-h100.table (comma-separated; milliseconds per Lloyd iteration on one
H100, each row's sources named in the file): gpuclust's exact float32 against
the fastest float32 (TF32) peer, and gpuclust's fastest precision against the
fastest peer at any precision.  Needs matplotlib; writes
bench/results/peers-best.png.

Usage: python3 bench/peers_chart.py
"""
import csv, os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

rows = list(csv.DictReader(open(os.path.join(HERE, "peers-best-h100.table"))))
names = [r["workload"] for r in rows]
exact = [float(r["peer_float32_ms"]) / float(r["gpuclust_float32_ms"]) for r in rows]
best = [float(r["peer_best_ms"]) / float(r["gpuclust_best_ms"]) for r in rows]

fig, ax = plt.subplots(figsize=(9, 4.6))
y = range(len(rows))
ax.barh([i + 0.2 for i in y], exact, height=0.38, label="float32, exact labels, vs the fastest float32/TF32 peer")
ax.barh([i - 0.2 for i in y], best, height=0.38, label="fastest precision vs the fastest peer (any precision)")
for i, (e, b) in enumerate(zip(exact, best)):
    ax.text(e + 0.05, i + 0.2, "%.2f×" % e, va="center", fontsize=8)
    ax.text(b + 0.05, i - 0.2, "%.2f×" % b, va="center", fontsize=8)
ax.axvline(1.0, color="black", linewidth=0.8)
ax.set_yticks(list(y))
ax.set_yticklabels(names)
ax.invert_yaxis()
ax.set_xlabel("speed-up of gpuclust over the best peer (peer ms / gpuclust ms per iteration; > 1: gpuclust faster)")
ax.set_title("gpuclust against the strongest GPU k-means peers (flash-kmeans, PyTorch), one H100")
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()
fig.savefig(os.path.join(HERE, "peers-best.png"), dpi=110)
print("wrote", os.path.join(HERE, "peers-best.png"))
