#!/usr/bin/env python3
"""CPU k-means: gpuclust's engine against scikit-learn, same rows, same
starting centroids, same iterations, same threads.

    bench/cpu_vs_sklearn.py [--threads T] [--iters M] [--quick] [--seeding] [--extremes]

Builds nothing: run `make test/engine/cpu_bench WITH_CUDA=0` first.  For each
case it writes the rows and k random rows as starting centroids to a
temporary directory, runs test/engine/cpu_bench (gpuclust's CPU fit, given
centroids, exactly M iterations, tol 0) and scikit-learn's KMeans (lloyd,
the same centroids, max_iter M, tol 0) under threadpoolctl's limit of T
threads, and prints one JSON line per case with both times (best of 3), the
ratio gpuclust / scikit-learn and both inertias; the two alternate run by
run, so that a busy machine slows both alike.  Starting centroids are k
distinct rows (a repeated one leaves clusters empty, which scikit-learn
refills and gpuclust keeps).  Cosine: both get unit rows; gpuclust's
spherical k-means renormalises its centroids, scikit-learn's does not, so
their inertias differ.  --seeding also times the
default seeding: gpuclust's k-means++ against scikit-learn's
(kmeans_plusplus).  Real data is read from ../shared/data when present.
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.environ.get("GPUCLUST_DATA", os.path.join(ROOT, "..", "shared", "data"))
BENCH = os.path.join(ROOT, "test", "engine", "cpu_bench")


def blobs(n, d, k, spread, seed=1):
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-1, 1, (k, d))
    return centres[rng.integers(0, k, n)] + rng.normal(0, spread, (n, d))


def mnist():
    path = os.path.join(DATA, "uci", "mnist_test.csv.gz")
    if not os.path.exists(path):
        return None
    with gzip.open(path, "rt") as f:
        rows = [l.split(",")[1:] for l in f if l[0].isdigit()]
    return np.asarray(rows, dtype=np.float64)


def kdd():
    path = os.path.join(DATA, "kddcup99", "kddcup.data_10_percent.gz")
    if not os.path.exists(path):
        return None
    rows = []
    with gzip.open(path, "rt") as f:
        for line in f:
            parts = line.strip().rstrip(".").split(",")
            rows.append([float(v) for i, v in enumerate(parts[:-1]) if i not in (1, 2, 3)])
    return np.asarray(rows)


def extremes():
    """The shapes past the tuned ones (k = 10 to 30,000, d = 2 to 1,536), at
    sizes a 2-core machine fits in seconds"""
    yield "blobs 1M x 2, k 10", lambda: blobs(1_000_000, 2, 10, 0.05, 3), 10, "euclidean"
    yield "blobs 200k x 2, k 1000", lambda: blobs(200_000, 2, 1000, 0.01, 4), 1000, "euclidean"
    yield "blobs 100k x 32, k 1000", lambda: blobs(100_000, 32, 1000, 0.3, 5), 1000, "euclidean"
    yield "blobs 20k x 1536, k 10", lambda: blobs(20_000, 1536, 10, 0.3, 6), 10, "euclidean"
    yield "blobs 10k x 1536, k 1000", lambda: blobs(10_000, 1536, 1000, 0.3, 7), 1000, "euclidean"
    yield "blobs 60k x 8, k 30000", lambda: blobs(60_000, 8, 30_000, 0.01, 8), 30_000, "euclidean"


def cases(quick):
    yield "blobs 200k x 32, k 100", lambda: blobs(200_000 if not quick else 50_000, 32, 100, 0.3), 100, "euclidean"
    yield "mnist 10k x 784, k 10", mnist, 10, "euclidean"
    yield "blobs 50k x 64, k 100", lambda: blobs(50_000, 64, 100, 0.3, 2), 100, "euclidean"
    if not quick:
        yield "kdd 494k x 38, k 100", kdd, 100, "euclidean"
    yield "mnist cosine, k 10", mnist, 10, "cosine"


def best_of(runs, fn):
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1e3)
    return min(times), out


def gpuclust_fit(rows_path, init_path, n, d, k, iters, threads, metric):
    out = subprocess.run([BENCH, rows_path, str(n), str(d), str(k), init_path, str(iters),
                          str(threads), "lloyd", metric], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seeding", action="store_true")
    ap.add_argument("--extremes", action="store_true",
                    help="k from 10 to 30,000 and d from 2 to 1,536 instead of the tuned cases")
    args = ap.parse_args()
    from sklearn.cluster import KMeans, kmeans_plusplus
    from threadpoolctl import threadpool_limits

    if not os.access(BENCH, os.X_OK):
        sys.exit("build test/engine/cpu_bench first: make test/engine/cpu_bench WITH_CUDA=0")
    tmp = tempfile.mkdtemp(prefix="cpu_bench.")
    for name, load, k, metric in (extremes() if args.extremes else cases(args.quick)):
        X = load()
        if X is None:
            print(json.dumps({"case": name, "skipped": "data not found"}))
            continue
        X = np.ascontiguousarray(X, dtype=np.float64)
        if metric == "cosine":
            X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-300)
        n, d = X.shape
        # k distinct rows: a repeated starting centroid leaves clusters empty,
        # which scikit-learn refills and gpuclust keeps (KDD repeats rows)
        distinct = np.unique(X, axis=0)
        init = distinct[np.random.default_rng(7).choice(len(distinct), k, replace=False)].copy()
        rows_path, init_path = os.path.join(tmp, "rows"), os.path.join(tmp, "init")
        X.astype("<f8").tofile(rows_path)
        init.astype("<f8").tofile(init_path)

        # the two alternate, so that a busy machine slows both alike
        ours, sk_times = [], []
        with threadpool_limits(args.threads):
            for _ in range(args.runs):
                ours.append(gpuclust_fit(rows_path, init_path, n, d, k, args.iters, args.threads, metric))
                t, sk = best_of(1, lambda: KMeans(k, init=init, n_init=1, max_iter=args.iters, tol=0.0,
                                                  algorithm="lloyd").fit(X))
                sk_times.append(t)
        ours_best = min(ours, key=lambda r: r["total_ms"])
        sk_ms = min(sk_times)
        rec = {"case": name, "n": n, "d": d, "k": k, "threads": args.threads,
               "gpuclust_ms": round(ours_best["total_ms"], 1),
               "gpuclust_iterations": ours_best["iterations"],
               "gpuclust_steps_ms": round(ours_best["steps_ms"], 1),
               "gpuclust_scoring_ms": round(ours_best["scoring_ms"], 1),
               "sklearn_ms": round(sk_ms, 1), "sklearn_iterations": int(sk.n_iter_),
               "ratio": round(ours_best["total_ms"] / sk_ms, 3),
               "inertia_ratio": round(ours_best["inertia"] / sk.inertia_, 6)}
        if args.seeding:
            seeds, pp_times = [], []
            with threadpool_limits(args.threads):
                for _ in range(args.runs):
                    seeds.append(gpuclust_fit(rows_path, "k-means++", n, d, k, 1, args.threads, metric))
                    pp_times.append(best_of(1, lambda: kmeans_plusplus(X, k, random_state=0))[0])
            rec["gpuclust_seeding_ms"] = round(min(s["seeding_ms"] for s in seeds), 1)
            rec["sklearn_seeding_ms"] = round(min(pp_times), 1)
            rec["seeding_ratio"] = round(rec["gpuclust_seeding_ms"] / min(pp_times), 3)
        print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
