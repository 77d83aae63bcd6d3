#!/usr/bin/env python3
"""The strongest GPU k-means outside a database, on the workloads of
bench/kmeans_suite.py, in the same run as gpuclust's engine bench: flash-kmeans
(Triton; PyPI flash-kmeans, carried to the GPU machine as a wheel by
bench/pack18 and installed with --no-deps) in float32 (its TF32 tl.dot) and
float16, and PyTorch with TF32 matmuls allowed (kmeans_suite.py measures
PyTorch float32).  Every peer starts from the same centroids (k rows drawn
with numpy seed 0) and runs a fixed number of Lloyd iterations (no
convergence test ends them early); the time per iteration is the median of
three timed runs after a warm-up run (Triton's autotuning and compilation
happen there).

Usage (GPU machine, after bench/pack18): bash bench/gpu-run peers [workload ...]
(installs the carried flash-kmeans wheel into /tmp/site and runs this script
as root with a Triton cache in /tmp: no server is needed).
Results: one JSON line per measurement on stdout and in $OUT/peers.jsonl.
"""
import json, os, sys, time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kmeans_suite  # noqa: E402  (workload definitions)

OUT = os.environ.get("OUT", "/tmp/bench-out")
os.makedirs(OUT, exist_ok=True)
results = open(os.path.join(OUT, "peers.jsonl"), "a")


def emit(rec):
    line = json.dumps(rec)
    print(line, flush=True)
    results.write(line + "\n")
    results.flush()


def median_ms(run, repeats=3):
    run()                                     # warm-up: autotune, compile
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        iterations = run()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1000.0 / iterations)
    return sorted(times)[len(times) // 2]


def flash(X, C0, dtype, iters):
    from flash_kmeans import batch_kmeans_Euclid
    x = torch.from_numpy(X).to("cuda", dtype)[None]
    c = torch.from_numpy(C0).to("cuda", dtype)[None]

    def run():
        _, _, it = batch_kmeans_Euclid(x, c.shape[1], max_iters=iters, tol=-1.0,
                                       init_centroids=c.clone())
        return it
    ms = median_ms(run)
    del x, c
    torch.cuda.empty_cache()
    return ms


def torch_tf32(X, C0, iters):
    torch.backends.cuda.matmul.allow_tf32 = True
    x = torch.from_numpy(X).cuda()
    k = C0.shape[0]

    def run():
        C = torch.from_numpy(C0).cuda()
        for _ in range(iters):
            dist = torch.addmm((C * C).sum(1)[None, :], x, C.t(), beta=1.0, alpha=-2.0)
            labels = dist.argmin(1)
            sums = torch.zeros_like(C).index_add_(0, labels, x)
            counts = torch.bincount(labels, minlength=k).clamp_(min=1).unsqueeze(1)
            C = sums / counts
        return iters
    ms = median_ms(run)
    torch.backends.cuda.matmul.allow_tf32 = False
    del x
    torch.cuda.empty_cache()
    return ms


def main():
    names = sys.argv[1:] or list(kmeans_suite.WORKLOADS)
    for name in names:
        X, k, _, _ = kmeans_suite.WORKLOADS[name]()
        X = np.ascontiguousarray(X, dtype=np.float32)
        n, d = X.shape
        C0 = X[np.random.default_rng(0).choice(n, k, replace=False)].copy()
        iters = 5 if n * k * d > 1e11 else 20
        print(f"== {name}: n={n} d={d} k={k}", file=sys.stderr, flush=True)
        for impl, measure in (("flash-kmeans-fp32", lambda: flash(X, C0, torch.float32, iters)),
                              ("flash-kmeans-fp16", lambda: flash(X, C0, torch.float16, iters)),
                              ("pytorch-tf32", lambda: torch_tf32(X, C0, iters))):
            try:
                ms = measure()
                emit(dict(workload=name, impl=impl, n=n, d=d, k=k, ms_per_iteration=ms,
                          tflops=2.0 * n * k * d / (ms * 1e9)))
            except Exception as e:      # a peer that cannot run a shape is reported, not fatal
                emit(dict(workload=name, impl=impl, n=n, d=d, k=k, error=repr(e)[:300]))


if __name__ == "__main__":
    main()
