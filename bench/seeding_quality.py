#!/usr/bin/env python3
"""k-means++ seeding quality: gpuclust's CPU k-means (greedy and plain
k-means++) against scikit-learn's KMeans on the SIPU benchmark sets with
ground truth, with the same n_init, over several seeds.

For each set, n_init and method it reports the mean and worst inertia over
the seeds, the mean ratio to scikit-learn's mean inertia, and the centroid
index (CI, Fränti et al.: the larger of the two orphan counts between the
found and the true centroids; 0 means every true cluster was found) as a
mean and as the number of runs with CI = 0.

    bench/seeding_quality.py [--data ../shared/data/sipu] [--seeds 30,10]
        [--n-init 1,10] [--sets s1,...] [--binary test/engine/seeding_test]
        [--out bench/results/seeding-quality.md]

Needs the engine test binary (make test/engine/seeding_test) and
scikit-learn.
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from sklearn.cluster import KMeans

SETS = ["s1", "s2", "s3", "s4", "a1", "a2", "a3", "birch1", "birch2",
        "unbalance", "dim32"]
HERE = os.path.dirname(os.path.abspath(__file__))
BINARY = os.path.join(HERE, "..", "test", "engine", "seeding_test")


def load(data, name):
    with gzip.open(os.path.join(data, name + ".txt.gz"), "rt") as f:
        x = np.loadtxt(f, dtype=np.float64)
    gt_path = os.path.join(data, name + "-gt.txt.gz")
    if os.path.exists(gt_path):
        with gzip.open(gt_path, "rt") as f:
            gt = np.loadtxt(f, dtype=np.float64)
    else:
        # centroids of the ground-truth partition (4-line header, 1-based labels)
        with gzip.open(os.path.join(data, name + "-gt.pa.gz"), "rt") as f:
            labels = np.array([int(v) for v in f.read().splitlines()[4:] if v.strip()]) - 1
        gt = np.array([x[labels == c].mean(axis=0) for c in range(labels.max() + 1)])
    return x, gt


def centroid_index(found, truth):
    """CI: orphans of the nearest-neighbour mapping, in both directions"""
    def orphans(a, b):
        d = ((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2)
        mapped = np.zeros(len(b), dtype=bool)
        mapped[d.argmin(axis=1)] = True
        return int((~mapped).sum())
    return max(orphans(found, truth), orphans(truth, found))


def gpuclust_fit(binary, path, k, n_init, seed, candidates):
    out = subprocess.run([binary, "fit", path, str(k), str(n_init), str(seed),
                          str(candidates)], check=True, capture_output=True,
                         text=True).stdout.splitlines()
    result = json.loads(out[0])
    result["centroids"] = np.array([[float(v) for v in line.split()[1:]]
                                    for line in out[1:]])
    return result


def sklearn_fit(x, k, n_init, seed):
    t0 = time.time()
    km = KMeans(n_clusters=k, n_init=n_init, random_state=seed, init="k-means++",
                algorithm="lloyd").fit(x)
    return {"inertia": float(km.inertia_), "centroids": km.cluster_centers_,
            "seconds": time.time() - t0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(HERE, "..", "..", "shared", "data", "sipu"))
    ap.add_argument("--seeds", default="30,10",
                    help="runs per n_init, in the order of --n-init")
    ap.add_argument("--n-init", default="1,10")
    ap.add_argument("--binary", default=BINARY)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "seeding-quality.md"))
    args = ap.parse_args()
    n_inits = [int(v) for v in args.n_init.split(",")]
    seed_counts = [int(v) for v in args.seeds.split(",")]
    seed_counts += [seed_counts[-1]] * (len(n_inits) - len(seed_counts))
    rows = []
    raw = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets.split(","):
            x, gt = load(args.data, name)
            k = len(gt)
            path = os.path.join(tmp, name + ".txt")
            np.savetxt(path, x, fmt="%.17g")
            for n_init, seeds in zip(n_inits, seed_counts):
                runs = {"sklearn": [], "greedy": [], "plain": []}
                for seed in range(seeds):
                    sk = sklearn_fit(x, k, n_init, seed)
                    runs["sklearn"].append((sk["inertia"], centroid_index(sk["centroids"], gt)))
                    for method, candidates in (("greedy", 0), ("plain", 1)):
                        # gpuclust's restarts use seeds seed .. seed + n_init - 1:
                        # runs 1000 apart share none
                        r = gpuclust_fit(args.binary, path, k, n_init, 1000 * seed, candidates)
                        runs[method].append((r["inertia"], centroid_index(r["centroids"], gt)))
                        raw.append({"set": name, "k": k, "n_init": n_init, "seed": seed,
                                    "method": method, "inertia": r["inertia"],
                                    "seeding_ms": r["seeding_ms"],
                                    "ci": runs[method][-1][1]})
                    raw.append({"set": name, "k": k, "n_init": n_init, "seed": seed,
                                "method": "sklearn", "inertia": sk["inertia"],
                                "ci": runs["sklearn"][-1][1]})
                sk_mean = np.mean([v[0] for v in runs["sklearn"]])
                row = {"set": name, "n": len(x), "d": x.shape[1], "k": k, "n_init": n_init,
                       "runs": seeds}
                for method, values in runs.items():
                    inertia = np.array([v[0] for v in values])
                    ci = np.array([v[1] for v in values])
                    row[method] = {"mean": float(inertia.mean()), "worst": float(inertia.max()),
                                   "ratio": float(inertia.mean() / sk_mean),
                                   "ci_mean": float(ci.mean()), "ci0": int((ci == 0).sum())}
                rows.append(row)
                print(json.dumps(row), flush=True)
    lines = [
        "# k-means++ seeding quality: gpuclust (CPU) against scikit-learn",
        "",
        "SIPU sets with ground truth; k = the true number of clusters; `runs` "
        "independent runs per n_init (scikit-learn random_state 0, 1, ...; gpuclust "
        "seed 0, 1000, ..., its restarts taking the seeds that follow); default tol and "
        "max_iter on both sides. "
        "`ratio` is the mean inertia over the runs divided by scikit-learn's mean; "
        "CI = 0 counts the runs that found every true cluster "
        "(centroid index 0). greedy is gpuclust's default (`init_candidates` "
        "2 + ⌊ln k⌋, as scikit-learn), plain is `init_candidates` 1. "
        f"scikit-learn {__import__('sklearn').__version__}. "
        "Produced by `bench/seeding_quality.py`.",
        "",
        "| set | n | d | k | n_init | runs | scikit-learn mean inertia | greedy ratio | greedy worst ratio | plain ratio | CI = 0: sklearn / greedy / plain | mean CI: sklearn / greedy / plain |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        sk = r["sklearn"]["mean"]
        lines.append(
            f"| {r['set']} | {r['n']} | {r['d']} | {r['k']} | {r['n_init']} | {r['runs']} | {sk:.6g} | "
            f"{r['greedy']['ratio']:.4f} | {r['greedy']['worst'] / sk:.4f} | {r['plain']['ratio']:.4f} | "
            f"{r['sklearn']['ci0']} / {r['greedy']['ci0']} / {r['plain']['ci0']} | "
            f"{r['sklearn']['ci_mean']:.1f} / {r['greedy']['ci_mean']:.1f} / {r['plain']['ci_mean']:.1f} |")
    worst = max(r["greedy"]["ratio"] for r in rows)
    lines += ["", f"Largest greedy mean ratio: {worst:.4f}."]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.splitext(args.out)[0] + ".jsonl", "w") as f:
        for r in raw:
            f.write(json.dumps(r) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
