#!/usr/bin/env python3
"""Large k on the GPU: gpuclust's flat fit against its two-level fit
(test/engine/large_k_bench: per-phase times, inertia ratio), beside
flash-kmeans (float32) and PyTorch (TF32 matmuls) running flat Lloyd
iterations at the same k, on generated rows (Gaussian around k / 4 centres
in [0, 1]^d, variance 0.01, as large_k_bench makes them).  The peers start
from k rows drawn with numpy seed 0 and run ITERS iterations; their time
per iteration is the median of three runs after a warm-up.

Usage (GPU machine, after bench/pack18): bash bench/gpu-run large-k [N D K ...]
Shapes default to 1M x 128 at k = 1,024, 4,096, 16,384 and 65,536 x 64.
Results: one JSON line per measurement on stdout and in $OUT/large_k.jsonl.
"""
import json, os, re, subprocess, sys, time

OUT = os.environ.get("OUT", "/tmp/bench-out")
os.makedirs(OUT, exist_ok=True)
results = open(os.path.join(OUT, "large_k.jsonl"), "a")
BENCH = os.environ.get("LARGE_K_BENCH", ".devpg/large_k_bench")
ITERS = int(os.environ.get("ITERS", "20"))
SHAPES = [(1000000, 128, 1024), (1000000, 128, 4096), (1000000, 128, 16384),
          (1000000, 64, 65536)]


def emit(rec):
    line = json.dumps(rec)
    print(line, flush=True)
    results.write(line + "\n")
    results.flush()


def engine(n, d, k):
    """Flat and two-level fits by large_k_bench: its key=value lines"""
    out = subprocess.run([BENCH, str(n), str(d), str(k), "gpu", str(ITERS)],
                         capture_output=True, text=True, check=True).stdout
    recs = {}
    for line in out.splitlines():
        name = line.split()[0]
        if "=" in name:                 # the header and the ratios
            name = "summary" if "speedup" in line else "shape"
        recs[name] = {key: value.strip('"')
                      for key, value in re.findall(r'(\w+)=("[^"]*"|\S+)', line)}
    return recs


def make_rows(n, d, k):
    import numpy as np
    rng = np.random.default_rng(42)
    centres = rng.random((max(k // 4, 1), d), dtype=np.float32)
    X = centres[rng.integers(0, len(centres), n)] + rng.normal(0, 0.1, (n, d)).astype(np.float32)
    return np.ascontiguousarray(X, dtype=np.float32)


def peers(n, d, k):
    import numpy as np
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import peers as p           # flash-kmeans and PyTorch TF32, as bench/peers.py runs them
    X = make_rows(n, d, k)
    C0 = X[np.random.default_rng(0).choice(n, k, replace=False)].copy()
    for impl, measure in (("flash-kmeans-fp32", lambda: p.flash(X, C0, torch.float32, ITERS)),
                          ("pytorch-tf32", lambda: p.torch_tf32(X, C0, ITERS))):
        try:
            ms = measure()
            emit(dict(impl=impl, n=n, d=d, k=k, iterations=ITERS, ms_per_iteration=ms,
                      fit_ms=ms * ITERS))
        except Exception as e:          # a peer that cannot run a shape is reported
            emit(dict(impl=impl, n=n, d=d, k=k, error=repr(e)[:300]))


def main():
    args = [int(a) for a in sys.argv[1:]]
    shapes = [tuple(args[i:i + 3]) for i in range(0, len(args), 3)] or SHAPES
    for n, d, k in shapes:
        print(f"== n={n} d={d} k={k}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        recs = engine(n, d, k)
        emit(dict(impl="gpuclust", n=n, d=d, k=k, max_iter=ITERS, flat=recs.get("flat"),
                  two_level=recs.get("two_level"), summary=recs.get("summary"),
                  wall_s=time.perf_counter() - t0))
        if os.environ.get("SKIP_PEERS") != "1":
            peers(n, d, k)


if __name__ == "__main__":
    main()
