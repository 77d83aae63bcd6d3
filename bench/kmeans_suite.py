#!/usr/bin/env python3
"""k-means benchmark suite, run on the GPU machine from the project root by
bench/gpu-run (after bench/pack).  For each workload it writes the data once
(float64 rows) and measures, in the same run:

  - our GPU per iteration: lloyd, pruned (where it applies), auto, tf32,
    bf16 (.devpg/kmeans_bench ... reading the same rows from a file),
    and variants that force a float32 labeling kernel with kmeans_bench's
    last argument (register, tensor, tensor-streaming, tensor-fp16: the
    screen on scaled fp16 operands beside auto's TF32 one on Hopper), so that each kernel
    choice is measured against the others in the same run;
  - a PyTorch baseline on the same GPU: matmul-form distances, argmin,
    index_add update, float32 (PyTorch's default: no TF32 in matmul);
  - scikit-learn Lloyd and Elkan on the machine's cores;
  - the achieved fraction of FP32 peak, 2 n k d flops per iteration over
    PEAK_TFLOPS.

kmeans_bench seeds by greedy k-means++ unless GPUCLUST_BENCH_INIT says
otherwise; the large-k workloads set it to auto (k-means|| there), as
the product seeds them.

Results: one JSON line per measurement on stdout and in $OUT/kmeans.jsonl.
Usage: kmeans_suite.py [--old PATH] [workload-name ...]   (default: all)
--old PATH also runs every gpuclust variant with an earlier build's engine
test binary (its `bench` subcommand, the kernel forced through
GPUCLUST_BENCH_KERNEL), right after the new one, as impl "gpuclust-old",
and prints each variant's new/old ratio of per-iteration time to stderr.
GPUCLUST_SKIP_SKLEARN=1 leaves scikit-learn out (its rows from an earlier run stay in the report).

Seeding workloads (SEEDING) time whole GPU fits seeded each way
(.devpg/seeding_parallel_test gpu-bench: float32 Gaussian blobs, 20
iterations): one line per seeding, impl "gpuclust-seeding", with
seeding_ms, iterations_ms and inertia, so k-means|| can be compared with
greedy and plain k-means++ at a shape where greedy is too slow.
"""
import gzip, json, os, subprocess, sys, time

import numpy as np

PEAK_TFLOPS = 60.0      # H100 FP32 (non-tensor), the figure the project uses
OUT = os.environ.get("OUT", "/tmp/bench-out")
DATA = "/tmp/gpuclust-bench"
os.makedirs(OUT, exist_ok=True)
os.makedirs(DATA, exist_ok=True)
results = open(os.path.join(OUT, "kmeans.jsonl"), "a")


def emit(rec):
    line = json.dumps(rec)
    print(line, flush=True)
    results.write(line + "\n")
    results.flush()


def uniform(n, d, seed):
    return np.random.default_rng(seed).random((n, d))


def gaussian(n, d, k, var, seed):
    rng = np.random.default_rng(seed)
    centres = rng.random((k, d))
    labels = rng.integers(0, k, n)
    return centres[labels] + rng.normal(0.0, np.sqrt(var), (n, d))


def kdd():
    rows = []
    # bench/pack copies the file into .devpg/, since ../shared does not travel
    with gzip.open(".devpg/kddcup.data_10_percent.gz", "rt") as f:
        for line in f:
            parts = line.strip().rstrip(".").split(",")
            rows.append([float(v) for i, v in enumerate(parts[:-1]) if i not in (1, 2, 3)])
    return np.asarray(rows, dtype=np.float64)


def ours(name, X, k, algorithm, precision, iters, forced=None, init=None):
    n, d = X.shape
    path = os.path.join(DATA, name + ".f64")
    if not os.path.exists(path):
        np.ascontiguousarray(X, dtype=np.float64).tofile(path)
    args = [".devpg/kmeans_bench", str(n), str(d), str(k), "file:" + path, algorithm, precision,
            str(iters)] + ([forced] if forced else [])
    env = dict(os.environ, GPUCLUST_BENCH_INIT=init) if init else None
    out = subprocess.run(args, capture_output=True, text=True, env=env)
    sys.stderr.write(out.stderr)
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    rec.update(workload=name, impl="gpuclust", peak_fraction=rec["tflops"] / PEAK_TFLOPS)
    if forced:
        rec["forced"] = forced
    emit(rec)
    if OLD_BINARY:
        # an earlier build's kmeans_bench, with the same arguments
        out = subprocess.run([OLD_BINARY] + args[1:], capture_output=True, text=True, env=env)
        sys.stderr.write(out.stderr)
        old = json.loads([l for l in out.stdout.splitlines() if l.startswith("{")][-1])
        old.update(workload=name, impl="gpuclust-old", peak_fraction=old["tflops"] / PEAK_TFLOPS)
        if forced:
            old["forced"] = forced
        emit(old)
        print("ratio new/old %s %s %s %s: %.4f (%.4f / %.4f ms/it; iterations %d / %d, kernel %s / %s)"
              % (name, algorithm, precision, forced or "-",
                 rec["ms_per_iteration"] / old["ms_per_iteration"], rec["ms_per_iteration"],
                 old["ms_per_iteration"], rec["iterations"], old["iterations"], rec["kernel"],
                 old["kernel"]), file=sys.stderr, flush=True)
    return rec


def torch_baseline(name, X, k, iters):
    import torch
    Xg = torch.from_numpy(X.astype(np.float32)).cuda()
    n, d = Xg.shape
    C = Xg[torch.randperm(n, generator=torch.Generator().manual_seed(0))[:k].cuda()].clone()

    def step(C):
        # ||x||^2 is the same for every centroid: argmin needs ||c||^2 - 2 x.c
        dist = torch.addmm((C * C).sum(1)[None, :], Xg, C.t(), beta=1.0, alpha=-2.0)
        labels = dist.argmin(1)
        sums = torch.zeros_like(C).index_add_(0, labels, Xg)
        counts = torch.bincount(labels, minlength=k).clamp_(min=1).unsqueeze(1)
        return sums / counts

    for _ in range(2):
        C = step(C)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        C = step(C)
    end.record()
    torch.cuda.synchronize()
    ms = start.elapsed_time(end) / iters
    rec = dict(workload=name, impl="pytorch", n=n, d=d, k=k, ms_per_iteration=ms,
               tflops=2.0 * n * k * d / (ms * 1e9))
    rec["peak_fraction"] = rec["tflops"] / PEAK_TFLOPS
    emit(rec)
    del Xg
    torch.cuda.empty_cache()
    return rec


def sklearn(name, X, k, algorithm, iters):
    from sklearn.cluster import KMeans
    n, d = X.shape
    init = X[np.random.default_rng(0).choice(n, k, replace=False)]
    km = KMeans(n_clusters=k, init=init, n_init=1, max_iter=iters, tol=0.0, algorithm=algorithm)
    t0 = time.perf_counter()
    km.fit(X)
    ms = (time.perf_counter() - t0) * 1000 / max(km.n_iter_, 1)
    emit(dict(workload=name, impl="sklearn-" + algorithm, n=n, d=d, k=k, ms_per_iteration=ms,
              iterations=int(km.n_iter_), threads=os.cpu_count()))


def workload(name, X, k, variants, torch_iters=20, sk_iters=10, sk_algos=("lloyd", "elkan"),
             init=None):
    for variant in variants:
        ours(name, X, k, variant[0], variant[1], 50, *variant[2:], init=init)
    torch_baseline(name, X, k, torch_iters)
    if os.environ.get("GPUCLUST_SKIP_SKLEARN"):   # re-runs that keep earlier sklearn rows
        sk_algos = ()
    for algo in sk_algos:
        sklearn(name, X, k, algo, sk_iters)
    os.remove(os.path.join(DATA, name + ".f64"))


# (algorithm, precision[, forced float32 kernel])
KERNELS = [("lloyd", "float32", "register"), ("lloyd", "float32", "tensor")]
LLOYD_AUTO = [("lloyd", "float32"), ("auto", "float32")] + KERNELS
ALL = [("lloyd", "float32"), ("pruned", "float32"), ("auto", "float32"), ("lloyd", "tf32")] + KERNELS
DENSE = [("lloyd", "float32"), ("auto", "float32"), ("lloyd", "tf32"), ("lloyd", "bf16"),
         ("lloyd", "bf16", "tensor-streaming"), ("lloyd", "float32", "tensor-streaming"),
         ("lloyd", "float32", "tensor-fp16")]

WORKLOADS = {}
for n in (2_000_000, 4_000_000):
    for k in (100, 400):
        for d in (2, 8):
            WORKLOADS[f"table1-n{n // 1_000_000}M-k{k}-d{d}"] = (
                lambda n=n, k=k, d=d: (uniform(n, d, 1), k, LLOYD_AUTO, dict(sk_iters=3, sk_algos=("lloyd",))))
# where the tensor-core screen overtakes the register kernel as d grows (TENSOR_MIN_D)
for d in (12, 16):
    WORKLOADS[f"crossover-n4M-k400-d{d}"] = (
        lambda d=d: (uniform(4_000_000, d, 1), 400, LLOYD_AUTO, dict(sk_algos=())))
for k in (23, 100):
    WORKLOADS[f"kdd-k{k}"] = lambda k=k: (kdd(), k, ALL, {})
for k in (32, 1024):
    for var in (0.0125, 0.05, 0.1, 0.2, 0.3):
        WORKLOADS[f"wuhong-k{k}-var{var}"] = (
            lambda k=k, var=var: (gaussian(245_760, 32, k, var, 2), k, ALL,
                                  dict(sk_algos=("lloyd", "elkan") if k == 32 else ("lloyd",))))
WORKLOADS["highdim-n1M-d128-k1024"] = lambda: (uniform(1_000_000, 128, 3), 1024, DENSE,
                                               dict(sk_iters=2, sk_algos=("lloyd",)))
WORKLOADS["embeddings-n1M-d768-k1000"] = lambda: (
    gaussian(1_000_000, 768, 1000, 0.05, 4).astype(np.float64), 1000, DENSE,
    dict(torch_iters=5, sk_iters=1, sk_algos=("lloyd",)))

# issue 47's large-k shapes: blobs as embeddings cluster, exact float32 and bf16, seeded as
# the product seeds them (k-means||: greedy k-means++'s k steps took most of each fit)
LARGE_K = [("lloyd", "float32"), ("lloyd", "float32", "tensor-fp16"), ("lloyd", "bf16")]
for n, d, k in ((1_000_000, 768, 4096), (2_000_000, 128, 16384), (4_000_000, 96, 32768),
                (1_000_000, 64, 65536)):
    WORKLOADS[f"largek-n{n // 1_000_000}M-d{d}-k{k}"] = (
        lambda n=n, d=d, k=k: (gaussian(n, d, k, 0.05, 5), k, LARGE_K,
                               dict(torch_iters=5, sk_algos=(), init="auto")))

# seeding workloads: (n, d, k, seedings), generated by the binary itself
SEEDING = {"seeding-n1M-d768-k1000": (1_000_000, 768, 1000, ["kmeans||", "greedy", "plain"])}


def seeding(name, n, d, k, inits):
    out = subprocess.run([".devpg/seeding_parallel_test", "gpu-bench", str(n), str(d), str(k)] + inits,
                         check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("{"):
            emit(dict(json.loads(line), workload=name, impl="gpuclust-seeding"))


OLD_BINARY = None

if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--old"]:
        OLD_BINARY, args = args[1], args[2:]
    names = args or list(WORKLOADS) + list(SEEDING)
    for name in names:
        if name in SEEDING:
            print(f"== {name}", file=sys.stderr, flush=True)
            seeding(name, *SEEDING[name])
            continue
        X, k, variants, extra = WORKLOADS[name]()
        print(f"== {name}: n={X.shape[0]} d={X.shape[1]} k={k}", file=sys.stderr, flush=True)
        workload(name, X, k, variants, **extra)
