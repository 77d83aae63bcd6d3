#!/usr/bin/env python3
"""k-means++ seeding quality: gpuclust's CPU k-means (greedy and plain
k-means++, and k-means||) against scikit-learn's KMeans on the SIPU
benchmark sets with ground truth, with the same n_init, over several seeds.

For each set, n_init and method it reports the mean and worst inertia over
the seeds, the mean ratio to scikit-learn's mean inertia, and the centroid
index (CI, Fränti et al.: the larger of the two orphan counts between the
found and the true centroids; 0 means every true cluster was found) as a
mean and as the number of runs with CI = 0.

    bench/seeding_quality.py [--data ../shared/data/sipu] [--seeds 30,10]
        [--n-init 1,10] [--sets s1,...] [--binary test/engine/seeding_test]
        [--out bench/results/seeding-quality.md] [--from-jsonl FILE]
        [--methods greedy,plain,parallel]

--methods picks gpuclust's seedings: greedy (the default below n k d =
2^34), plain (init_candidates 1) and parallel (init "kmeans||", the
default above); the table has a ratio column per method.

With --from-seeds N it compares the seedings alone instead, free of any
difference between the two Lloyd implementations and with many more
runs: N seedings by gpuclust (greedy) and by scikit-learn's
kmeans_plusplus, each followed by the same scikit-learn Lloyd run (init
given, n_init 1); it reports the mean seeding cost and the mean final
inertia of gpuclust's over scikit-learn's, the standard error of the
latter ratio, and the runs that reach the best inertia seen (within 0.1%).

With --kdd it fits KDD Cup 99 10% instead (494,021 rows of its 38 numeric
features, 141,480 distinct; ../shared/data/kddcup99) at k = 100, greedy
k-means++ and default tol on both sides, --seeds runs per --n-init
(gpuclust seed 1000 s, scikit-learn random_state s), --jobs fits at a time,
and writes the mean inertia ratios to --out (default
bench/results/seeding-kdd.md) with the runs beside it (.jsonl).  The set
repeats rows (most of them several times): it tests that seeding weighs a
row by its copies, and the tolerance relative to the data's variance.

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


# gpuclust's seedings: (init_candidates, init) for seeding_test fit
METHODS = {"greedy": (0, "kmeans++"), "plain": (1, "kmeans++"), "parallel": (0, "kmeans||")}
LABELS = {"greedy": "greedy", "plain": "plain", "parallel": "k-means||"}


def gpuclust_fit(binary, path, k, n_init, seed, method):
    candidates, init = METHODS[method]
    out = subprocess.run([binary, "fit", path, str(k), str(n_init), str(seed),
                          str(candidates), "1e-4", init], check=True, capture_output=True,
                         text=True).stdout.splitlines()
    result = json.loads(out[0])
    result["centroids"] = np.array([[float(v) for v in line.split()[1:]]
                                    for line in out[1:]])
    return result


def gpuclust_seeds(binary, path, k, seed):
    out = subprocess.run([binary, "fit", path, str(k), "0", str(seed), "0"], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    return [int(line.split()[1]) for line in out[1:]]


def seeding_cost(x, centres):
    return float(min_sq_dist(x, centres).sum())


def min_sq_dist(x, centres):
    best = np.full(len(x), np.inf)
    for c in centres:
        best = np.minimum(best, ((x - c) ** 2).sum(axis=1))
    return best


def compare_seeds(args):
    from sklearn.cluster import kmeans_plusplus
    lines = [
        "# k-means++ seedings alone: gpuclust's greedy against scikit-learn's",
        "",
        f"{args.from_seeds} seedings per set by each (gpuclust seed 0, 1000, ...; "
        "scikit-learn's `kmeans_plusplus`, random_state 0, 1, ...), each followed by the "
        "same scikit-learn Lloyd run from those centres (n_init 1, default tol). `cost` "
        "and `final` are gpuclust's mean over scikit-learn's mean; `se` the standard error "
        "of `final`; `best` counts the runs ending within 0.1% of the lowest inertia seen. "
        f"scikit-learn {__import__('sklearn').__version__}. Produced by "
        "`bench/seeding_quality.py --from-seeds`.",
        "",
        "| set | n | d | k | runs | seeding cost ratio | final inertia ratio | se | best: gpuclust / scikit-learn |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets.split(","):
            x, gt = load(args.data, name)
            k = len(gt)
            path = os.path.join(tmp, name + ".txt")
            np.savetxt(path, x, fmt="%.17g")
            runs = args.from_seeds if len(x) <= 20000 else max(1, args.from_seeds // 10)
            ours_cost, ours_final, sk_cost, sk_final = [], [], [], []
            for seed in range(args.seed_offset, args.seed_offset + runs):
                c = x[gpuclust_seeds(args.binary, path, k, 1000 * seed + args.seed_offset)]
                ours_cost.append(seeding_cost(x, c))
                ours_final.append(KMeans(n_clusters=k, init=c, n_init=1).fit(x).inertia_)
                c = kmeans_plusplus(x, k, random_state=seed)[0]
                sk_cost.append(seeding_cost(x, c))
                sk_final.append(KMeans(n_clusters=k, init=c, n_init=1).fit(x).inertia_)
            ours_cost, ours_final, sk_cost, sk_final = map(
                np.array, (ours_cost, ours_final, sk_cost, sk_final))
            best = min(ours_final.min(), sk_final.min()) * 1.001
            se = np.sqrt(ours_final.var() / runs + sk_final.var() / runs) / sk_final.mean()
            line = (f"| {name} | {len(x)} | {x.shape[1]} | {k} | {runs} | "
                    f"{ours_cost.mean() / sk_cost.mean():.4f} | "
                    f"{ours_final.mean() / sk_final.mean():.4f} | {se:.4f} | "
                    f"{(ours_final <= best).sum()} / {(sk_final <= best).sum()} |")
            print(line, flush=True)
            lines.append(line)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


def summarise(raw, shapes, methods):
    """one table row per (set, n_init), in the order of the runs"""
    groups = {}
    for r in raw:
        groups.setdefault((r["set"], r["n_init"]), []).append(r)
    rows = []
    for (name, n_init), runs in groups.items():
        sk = np.array([r["inertia"] for r in runs if r["method"] == "sklearn"])
        row = {"set": name, "n": shapes[name][0], "d": shapes[name][1], "k": runs[0]["k"],
               "n_init": n_init, "runs": len(sk)}
        for method in ["sklearn"] + methods:
            inertia = np.array([r["inertia"] for r in runs if r["method"] == method])
            ci = np.array([r["ci"] for r in runs if r["method"] == method])
            row[method] = {"mean": float(inertia.mean()), "worst": float(inertia.max()),
                           "ratio": float(inertia.mean() / sk.mean()),
                           "se": float(np.sqrt(inertia.var() / len(inertia) + sk.var() / len(sk))
                                       / sk.mean()),
                           "ci_mean": float(ci.mean()), "ci0": int((ci == 0).sum())}
        rows.append(row)
    return rows


def sklearn_fit(x, k, n_init, seed):
    t0 = time.time()
    km = KMeans(n_clusters=k, n_init=n_init, random_state=seed, init="k-means++",
                algorithm="lloyd").fit(x)
    return {"inertia": float(km.inertia_), "centroids": km.cluster_centers_,
            "iterations": int(km.n_iter_), "seconds": time.time() - t0}


def load_kdd(data):
    rows = []
    with gzip.open(os.path.join(data, "kddcup.data_10_percent.gz"), "rt") as f:
        for line in f:
            parts = line.strip().rstrip(".").split(",")
            rows.append([float(v) for i, v in enumerate(parts[:-1]) if i not in (1, 2, 3)])
    return np.asarray(rows)


def kdd_run(job):
    """one fit of a KDD job: (side, n_init, seed, binary, path)"""
    side, n_init, seed, binary, path = job
    if side == "sklearn":
        x = np.loadtxt(path)
        r = sklearn_fit(x, 100, n_init, seed)
        return {"method": "sklearn", "n_init": n_init, "seed": seed, "inertia": r["inertia"],
                "iterations": r["iterations"], "seconds": r["seconds"]}
    r = gpuclust_fit(binary, path, 100, n_init, 1000 * seed, "greedy")
    return {"method": "greedy", "n_init": n_init, "seed": seed, "inertia": r["inertia"],
            "iterations": r["iterations"], "seeding_ms": r["seeding_ms"]}


def kdd(args):
    from concurrent.futures import ProcessPoolExecutor
    data = os.path.join(os.path.dirname(os.path.normpath(args.data)), "kddcup99")
    x = load_kdd(data)
    out = args.out if args.out != ap_default_out() else os.path.join(HERE, "results",
                                                                      "seeding-kdd.md")
    if args.from_jsonl:
        with open(args.from_jsonl) as f:
            raw = [json.loads(line) for line in f]
        n_inits = sorted({r["n_init"] for r in raw})
    else:
        n_inits = [int(v) for v in args.n_init.split(",")]
        seeds = [int(v) for v in args.seeds.split(",")]
        seeds += [seeds[-1]] * (len(n_inits) - len(seeds))
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kdd.txt")
            np.savetxt(path, x, fmt="%.17g")
            jobs = [(side, n_init, seed, args.binary, path)
                    for n_init, count in zip(n_inits, seeds) for seed in range(count)
                    for side in ("greedy", "sklearn")]
            with ProcessPoolExecutor(args.jobs) as pool:
                raw = list(pool.map(kdd_run, jobs))
    lines = [
        "# KDD Cup 99 10% at k = 100: gpuclust (CPU) against scikit-learn",
        "",
        f"{len(x)} rows × {x.shape[1]} numeric features, "
        f"{len(np.unique(x, axis=0))} distinct; greedy k-means++ "
        "(2 + ⌊ln 100⌋ = 6 candidates) and default tol (1e-4) and max_iter on both "
        "sides; gpuclust seed 1000 s (its restarts the seeds after), scikit-learn "
        f"random_state s. scikit-learn {__import__('sklearn').__version__}. "
        "Produced by `bench/seeding_quality.py --kdd`.",
        "",
        "| n_init | runs | scikit-learn mean inertia | gpuclust mean inertia | ratio ± se | "
        "mean iterations: scikit-learn / gpuclust |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for n_init in n_inits:
        sk = np.array([r["inertia"] for r in raw if r["method"] == "sklearn" and r["n_init"] == n_init])
        gc = np.array([r["inertia"] for r in raw if r["method"] == "greedy" and r["n_init"] == n_init])
        it = [np.mean([r["iterations"] for r in raw if r["method"] == m and r["n_init"] == n_init])
              for m in ("sklearn", "greedy")]
        se = np.sqrt(gc.var() / len(gc) + sk.var() / len(sk)) / sk.mean()
        lines.append(f"| {n_init} | {len(gc)} | {sk.mean():.6g} | {gc.mean():.6g} | "
                     f"{gc.mean() / sk.mean():.4f} ± {se:.4f} | {it[0]:.1f} / {it[1]:.1f} |")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    if not args.from_jsonl:
        with open(os.path.splitext(out)[0] + ".jsonl", "w") as f:
            for r in raw:
                f.write(json.dumps(r) + "\n")
    print("\n".join(lines))
    return 0


def ap_default_out():
    return os.path.join(HERE, "results", "seeding-quality.md")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(HERE, "..", "..", "shared", "data", "sipu"))
    ap.add_argument("--seeds", default="30,10",
                    help="runs per n_init, in the order of --n-init")
    ap.add_argument("--n-init", default="1,10")
    ap.add_argument("--binary", default=BINARY)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--out", default=ap_default_out())
    ap.add_argument("--kdd", action="store_true",
                    help="KDD Cup 99 10%% at k = 100 (default out: results/seeding-kdd.md)")
    ap.add_argument("--jobs", type=int, default=1, help="--kdd: fits at a time")
    ap.add_argument("--from-seeds", type=int, default=0,
                    help="compare N seedings alone (N / 10 on sets above 20,000 rows)")
    ap.add_argument("--seed-offset", type=int, default=0,
                    help="--from-seeds: first random_state (gpuclust: 1000 s + offset)")
    ap.add_argument("--from-jsonl", help="rebuild the table from a previous run's .jsonl")
    ap.add_argument("--methods", default="greedy,plain,parallel",
                    help="gpuclust's seedings: greedy, plain, parallel (k-means||)")
    args = ap.parse_args()
    methods = args.methods.split(",")
    if args.from_seeds:
        return compare_seeds(args)
    if args.kdd:
        return kdd(args)
    n_inits = [int(v) for v in args.n_init.split(",")]
    seed_counts = [int(v) for v in args.seeds.split(",")]
    seed_counts += [seed_counts[-1]] * (len(n_inits) - len(seed_counts))
    raw = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets.split(",") if not args.from_jsonl else []:
            x, gt = load(args.data, name)
            k = len(gt)
            path = os.path.join(tmp, name + ".txt")
            np.savetxt(path, x, fmt="%.17g")
            for n_init, seeds in zip(n_inits, seed_counts):
                runs = {m: [] for m in ["sklearn"] + methods}
                for seed in range(seeds):
                    sk = sklearn_fit(x, k, n_init, seed)
                    runs["sklearn"].append((sk["inertia"], centroid_index(sk["centroids"], gt)))
                    for method in methods:
                        # gpuclust's restarts use seeds seed .. seed + n_init - 1:
                        # runs 1000 apart share none
                        r = gpuclust_fit(args.binary, path, k, n_init, 1000 * seed, method)
                        runs[method].append((r["inertia"], centroid_index(r["centroids"], gt)))
                        raw.append({"set": name, "k": k, "n_init": n_init, "seed": seed,
                                    "method": method, "inertia": r["inertia"],
                                    "seeding_ms": r["seeding_ms"],
                                    "ci": runs[method][-1][1]})
                    raw.append({"set": name, "k": k, "n_init": n_init, "seed": seed,
                                "method": "sklearn", "inertia": sk["inertia"],
                                "ci": runs["sklearn"][-1][1]})
                print(f"{name} n_init {n_init}: done", flush=True)
    if args.from_jsonl:
        with open(args.from_jsonl) as f:
            raw = [json.loads(line) for line in f]
    shapes = {}
    for name in dict.fromkeys(r["set"] for r in raw):
        x, _ = load(args.data, name)
        shapes[name] = x.shape
    methods = [m for m in methods if any(r["method"] == m for r in raw)]
    rows = summarise(raw, shapes, methods)
    lines = [
        "# k-means++ seeding quality: gpuclust (CPU) against scikit-learn",
        "",
        "SIPU sets with ground truth; k = the true number of clusters; `runs` "
        "independent runs per n_init (scikit-learn random_state 0, 1, ...; gpuclust "
        "seed 0, 1000, ..., its restarts taking the seeds that follow); default tol and "
        "max_iter on both sides. "
        "`ratio` is the mean inertia over the runs divided by scikit-learn's mean, "
        "± its standard error (the n_init 1 rows need hundreds of runs to resolve 1%: "
        "see seeding-quality-seeds.md for the seedings alone); "
        "CI = 0 counts the runs that found every true cluster "
        "(centroid index 0). greedy is gpuclust's default up to n k d = 2^34 "
        "(`init_candidates` 2 + ⌊ln k⌋, as scikit-learn), plain is `init_candidates` 1, "
        "k-means|| is `init` \"kmeans||\" (the default above 2^34: 5 rounds sampling "
        "about k rows each, then greedy on the weighted candidates). "
        f"scikit-learn {__import__('sklearn').__version__}. "
        f"Produced by `bench/seeding_quality.py --methods {','.join(methods)}`.",
        "",
        "| set | n | d | k | n_init | runs | scikit-learn mean inertia | "
        + " | ".join(f"{LABELS[m]} ratio ± se" for m in methods)
        + " | " + " | ".join(f"{LABELS[m]} worst ratio" for m in methods)
        + " | CI = 0: " + " / ".join(["sklearn"] + [LABELS[m] for m in methods])
        + " | mean CI: " + " / ".join(["sklearn"] + [LABELS[m] for m in methods]) + " |",
        "|" + " --- |" * (9 + 2 * len(methods)),
    ]
    for r in rows:
        sk = r["sklearn"]["mean"]
        lines.append(
            f"| {r['set']} | {r['n']} | {r['d']} | {r['k']} | {r['n_init']} | {r['runs']} | {sk:.6g} | "
            + " | ".join(f"{r[m]['ratio']:.4f} ± {r[m]['se']:.4f}" for m in methods) + " | "
            + " | ".join(f"{r[m]['worst'] / sk:.4f}" for m in methods) + " | "
            + " / ".join(str(r[m]["ci0"]) for m in ["sklearn"] + methods) + " | "
            + " / ".join(f"{r[m]['ci_mean']:.1f}" for m in ["sklearn"] + methods) + " |")
    lines.append("")
    for m in methods:
        lines.append(f"Largest {LABELS[m]} mean ratio: {max(r[m]['ratio'] for r in rows):.4f}.")
    if "greedy" in methods and "parallel" in methods:
        both = [(r["parallel"]["mean"] / r["greedy"]["mean"], r["set"], r["n_init"]) for r in rows]
        worst = max(both)
        lines.append(f"k-means|| mean inertia over greedy's: largest {worst[0]:.4f} "
                     f"({worst[1]}, n_init {worst[2]}), geometric mean "
                     f"{float(np.exp(np.mean(np.log([b[0] for b in both])))):.4f}.")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    if not args.from_jsonl:
        with open(os.path.splitext(args.out)[0] + ".jsonl", "w") as f:
            for r in raw:
                f.write(json.dumps(r) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
