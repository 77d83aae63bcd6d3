#!/usr/bin/env python3
"""Rows past the GPU: gpuclust's streamed fit (test/engine/shards_bench: a
part of the rows resident, the rest passed through two sessions every
iteration from page-locked host memory) against the same fit with every row
resident, and flash-kmeans' host-memory mode (kmeans_largeN: every row
streamed from pinned host memory in blocks, copies overlapped with compute)
on rows of the same shape and kind, in the same run on the same GPU.

Usage (GPU machine, after bench/pack18): bash bench/gpu-run out-of-core
[N D K SHARDS RESIDENT ...]; shapes default to 50M x 128, k = 16,384 with a
quarter of the rows resident (8 of 32 shards) and 10M x 768, k = 4,096 with
a quarter resident (4 of 16).  ITERS (default 5) Lloyd iterations from k
given rows, tol 0, on both sides; flash-kmeans gets a warm-up call on a
slice first (Triton's compile), and the pinned host-to-device rate is
measured with PyTorch.  Results: one JSON line per measurement on stdout
and in $OUT/out_of_core.jsonl; the targets' ratios are gpuclust's streamed
iteration over the larger of its transfer bound and its resident iteration,
and over flash-kmeans' iteration on as many rows.
"""
import json, os, re, subprocess, sys, time

OUT = os.environ.get("OUT", "/tmp/bench-out")
os.makedirs(OUT, exist_ok=True)
results = open(os.path.join(OUT, "out_of_core.jsonl"), "a")
BENCH = os.environ.get("SHARDS_BENCH", ".devpg/shards_bench")
ITERS = int(os.environ.get("ITERS", "5"))
DEVICE = os.environ.get("SHARDS_DEVICE", "gpu")     # cpu: the engine side alone, for a try
SHAPES = [(50_000_000, 128, 16384, 32, 8), (10_000_000, 768, 4096, 16, 4)]


def emit(rec):
    line = json.dumps(rec)
    print(line, flush=True)
    results.write(line + "\n")
    results.flush()


def engine(n, d, k, shards, resident):
    out = subprocess.run([BENCH, str(n), str(d), str(k), str(shards), str(resident),
                          str(ITERS), DEVICE], capture_output=True, text=True)
    recs = {"rc": out.returncode, "stderr": out.stderr[-400:]}
    for line in out.stdout.splitlines():
        if line.startswith("differences:"):
            recs["differences"] = line[len("differences:"):].strip()
            continue
        words = line.split()
        fields = {key: value for key, value in re.findall(r'(\w+)=(\S+)', line)}
        if words[0] == "wrong":         # wrong FIT ...: up to three of a fit's mislabelled rows
            recs.setdefault(f"wrong_{words[1]}", []).append(fields)
            continue
        name = words[0]
        if name == "reference":         # reference FIT ...: a fit's labels against the exact ones
            name = f"reference_{words[1]}"
        elif "=" in name:
            name = "shape" if name.startswith("n=") else "summary"
        recs[name] = fields
    return recs


def pinned_rate():
    """Host-to-device GB/s from page-locked memory, 2 GiB copies"""
    import torch
    src = torch.empty(2 << 30, dtype=torch.uint8).pin_memory()
    dst = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
    dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(3):
        dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize()
    return 3 * (2 << 30) / (time.perf_counter() - t0) / 1e9


def flash_host(n, d, k):
    """flash-kmeans' kmeans_largeN over n pinned float32 rows: ms an iteration"""
    import numpy as np
    import torch
    from flash_kmeans.kmeans_large import kmeans_largeN
    rng = np.random.default_rng(42)
    centres = rng.random((max(k // 4, 1), d), dtype=np.float32)
    x = torch.empty((n, d), dtype=torch.float32).pin_memory()
    step = 1 << 20
    for i in range(0, n, step):        # in slices: one copy of the rows in memory
        m = min(step, n - i)
        block = centres[rng.integers(0, len(centres), m)]
        block += (rng.random((m, d), dtype=np.float32) - 0.5) * 0.2
        x[i:i + m] = torch.from_numpy(block)
    init = x[:: n // k][:k].clone()
    kmeans_largeN(x[: 4 * step], k, max_iters=1, tol=0.0, init_centroids=init,
                  device="cuda:0", dtype=torch.float32)       # compile, warm
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    kmeans_largeN(x, k, max_iters=ITERS, tol=0.0, init_centroids=init,
                  device="cuda:0", dtype=torch.float32)
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3 / ITERS
    del x
    return ms


def main():
    args = [int(a) for a in sys.argv[1:]]
    shapes = [tuple(args[i:i + 5]) for i in range(0, len(args), 5)] or SHAPES
    try:
        emit(dict(measure="pinned_h2d_gb_per_s", value=pinned_rate()))
    except Exception as e:
        emit(dict(measure="pinned_h2d_gb_per_s", error=repr(e)[:300]))
    for n, d, k, shards, resident in shapes:
        print(f"== n={n} d={d} k={k} shards={shards} resident={resident}", file=sys.stderr,
              flush=True)
        t0 = time.perf_counter()
        recs = engine(n, d, k, shards, resident)
        emit(dict(impl="gpuclust", n=n, d=d, k=k, shards=shards, resident_shards=resident,
                  iterations=ITERS, wall_s=time.perf_counter() - t0, fits=recs))
        try:
            ms = flash_host(n, d, k)
            ours = float(recs.get("streamed", {}).get("per_iteration_ms", "nan"))
            emit(dict(impl="flash-kmeans-largeN-fp32", n=n, d=d, k=k, iterations=ITERS,
                      ms_per_iteration=ms, gpuclust_streamed_over_flash=ours / ms))
        except Exception as e:          # a peer that cannot run a shape is reported
            emit(dict(impl="flash-kmeans-largeN-fp32", n=n, d=d, k=k, error=repr(e)[:300]))


if __name__ == "__main__":
    main()
