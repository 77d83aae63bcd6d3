#!/usr/bin/env python3
"""Per-iteration times of two builds of the engine bench, measured in the
same run on the same data: the build under test against a reference build
(e.g. the last release), for every workload of bench/kmeans_suite.py and
each of its variants.  The two binaries alternate (reference, new,
reference, new), each run reporting the median of three 50-iteration fits,
so that drift of the machine during the run touches both alike; the ratio
new / reference is printed per variant with the larger of the two runs'
spread, to tell a change from noise.

Usage (GPU machine, after bench/pack18 and a reference build in
.devpg/old/engine_test):
    python3 bench/compare_builds.py .devpg/old/engine_test .devpg/engine_test [workload ...]
Results: one JSON line per variant on stdout and in $OUT/compare.jsonl.
"""
import json, os, subprocess, sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kmeans_suite  # noqa: E402

OUT = os.environ.get("OUT", "/tmp/bench-out")
os.makedirs(OUT, exist_ok=True)
results = open(os.path.join(OUT, "compare.jsonl"), "a")


def run(binary, n, d, k, path, variant):
    """One bench call; a forced kernel is an argument of builds that take
    one (the variant's fourth field) and the environment variable of older
    builds"""
    algorithm, precision = variant[0], variant[1]
    forced = variant[2] if len(variant) > 2 else None
    env = dict(os.environ)
    args = [binary, "bench", str(n), str(d), str(k), "file:" + path, algorithm, precision, "50"]
    if forced:
        if "old" in binary:
            env["GPUCLUST_BENCH_KERNEL"] = forced
        else:
            args.append(forced)
    out = subprocess.run(args, capture_output=True, text=True, env=env)
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        sys.stderr.write(out.stdout[-500:] + out.stderr[-500:])
        return None


def main():
    old, new = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or list(kmeans_suite.WORKLOADS)
    for name in names:
        X, k, variants, _ = kmeans_suite.WORKLOADS[name]()
        n, d = X.shape
        path = os.path.join(kmeans_suite.DATA, name + ".f64")
        np.ascontiguousarray(X, dtype=np.float64).tofile(path)
        del X
        for variant in variants:
            times = {"old": [], "new": []}
            kernels = {}
            for _ in range(2):
                for tag, binary in (("old", old), ("new", new)):
                    rec = run(binary, n, d, k, path, variant)
                    if rec:
                        times[tag].append(rec["ms_per_iteration"])
                        kernels[tag] = rec.get("kernel")
            if not times["old"] or not times["new"]:
                continue
            o, w = min(times["old"]), min(times["new"])
            spread = max(max(t) / min(t) - 1 for t in times.values())
            rec = dict(workload=name, variant="/".join(variant), old_ms=o, new_ms=w,
                       ratio=w / o, spread=spread, old_kernel=kernels.get("old"),
                       new_kernel=kernels.get("new"), old_runs=times["old"], new_runs=times["new"])
            line = json.dumps(rec)
            print(line, flush=True)
            results.write(line + "\n")
            results.flush()
        os.remove(path)


if __name__ == "__main__":
    main()
