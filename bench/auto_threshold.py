#!/usr/bin/env python3
"""Where gpuclust.device = auto should switch from the CPU to the GPU.

Run on the GPU machine after bench/pack18, from the project root:

    bash bench/pg18-run python3 bench/auto_threshold.py [--quick]

For a grid of rows n, dimension d and clusters k (uniform random rows, 20
Lloyd iterations at most, tol 0, random init, n_init 1) it times, from the
client, the same kmeans_gpu fit:

  - cpu:       gpuclust.device = cpu, in a new session (best of two when short);
  - gpu_cold:  gpuclust.device = gpu, the first fit of a new session, which
               creates the backend's CUDA context;
  - gpu_warm:  the same session's next fits (best of two);
  - auto_cold / auto_warm: gpuclust.device = auto, first and second fit of a
               new session, with the device and device_reason auto chose.

Each fit's work is n * k * d (n_init is 1), the quantity auto compares with
GC_AUTO_GPU_MIN_WORK_COLD (no context yet) and GC_AUTO_GPU_MIN_WORK_WARM (a
context) in src/device_choice.c.  It prints one JSON line per grid point (also in
$OUT/auto_threshold.jsonl), then the crossovers: the largest work at which
the CPU still won and the smallest at which the GPU won, cold and warm, and
the thresholds to write into src/device_choice.c (the geometric mean of the two,
rounded to one significant digit), with the measured CPU cost per row*k*d
per iteration and the GPU's fixed costs.  CPU fits whose work passes
2e8 are not run (they take seconds, and the GPU wins them by far).

AUTO_CPU_THREADS (a comma list, default "0": the setting's default) runs
the cpu and auto fits once per gpuclust.cpu_threads value, each line
recording "threads"; the GPU fits are timed once per grid point, and the
crossovers are printed per thread count.
"""
import json, math, os, sys, time

import psycopg

OUT = os.environ.get("OUT", "/tmp/bench-out")
os.makedirs(OUT, exist_ok=True)
QUICK = "--quick" in sys.argv
NS = [1000, 4000, 16000] if QUICK else [1000, 4000, 16000, 64000]
DS = [8, 32] if QUICK else [8, 32, 128]
KS = [4, 16, 64] if QUICK else [4, 8, 16, 32, 64, 128, 256]
CPU_MAX_WORK = 2e8
THREADS = [int(t) for t in os.environ.get("AUTO_CPU_THREADS", "0").split(",")]
OPTIONS = '{"max_iter": 20, "tol": 0, "init": "random", "seed": 1}'

results = open(os.path.join(OUT, "auto_threshold.jsonl"), "a")


def connect():
    return psycopg.connect("", autocommit=True)


def fit(conn, table, k):
    """One fit: client-side milliseconds, iterations, device, device_reason"""
    t0 = time.perf_counter()
    row = conn.execute(
        f"SELECT m::jsonb->>'iterations', m::jsonb->>'device', m::jsonb->>'device_reason' "
        f"FROM (SELECT kmeans_gpu(v, {k}, '{OPTIONS}') AS m FROM {table}) s").fetchone()
    ms = (time.perf_counter() - t0) * 1000.0
    return ms, int(row[0]), row[1], row[2]


def session(device, threads=0):
    conn = connect()
    conn.execute(f"SET gpuclust.device = {device}")
    conn.execute(f"SET gpuclust.cpu_threads = {threads}")
    return conn


def main():
    setup = connect()
    setup.execute("CREATE EXTENSION IF NOT EXISTS gpuclust")
    info = setup.execute("SELECT gpuclust_device_info()::text").fetchone()[0]
    print("# device:", info, flush=True)
    points = []
    for n in NS:
        for d in DS:
            table = f"auto_n{n}_d{d}"
            setup.execute(f"DROP TABLE IF EXISTS {table}")
            setup.execute(f"CREATE TABLE {table} AS SELECT i, (SELECT array_agg(random()) "
                          f"FROM generate_series(1, {d}) WHERE i > 0)::float8[] AS v "
                          f"FROM generate_series(1, {n}) i")
            setup.execute(f"VACUUM ANALYZE {table}")
            for k in KS:
                if k > n:
                    continue
                work = n * k * d
                with session("gpu") as g:
                    cold = fit(g, table, k)
                    warm = min(fit(g, table, k)[0], fit(g, table, k)[0])
                for threads in THREADS:
                    rec = {"n": n, "d": d, "k": k, "work": work, "threads": threads}
                    if work <= CPU_MAX_WORK:
                        with session("cpu", threads) as c:
                            runs = [fit(c, table, k)]
                            if runs[0][0] < 2000:
                                runs.append(fit(c, table, k))
                        rec["cpu_ms"] = min(r[0] for r in runs)
                        rec["iterations"] = runs[0][1]
                    rec["gpu_cold_ms"], rec["gpu_warm_ms"] = cold[0], warm
                    rec.setdefault("iterations", cold[1])
                    with session("auto", threads) as a:
                        first, second = fit(a, table, k), fit(a, table, k)
                    rec["auto_cold"] = {"ms": first[0], "device": first[2], "reason": first[3]}
                    rec["auto_warm"] = {"ms": second[0], "device": second[2], "reason": second[3]}
                    line = json.dumps(rec)
                    print(line, flush=True)
                    results.write(line + "\n")
                    results.flush()
                    points.append(rec)
            setup.execute(f"DROP TABLE {table}")
    for threads in THREADS:
        print(f"\n# gpuclust.cpu_threads = {threads}")
        summarize([p for p in points if p["threads"] == threads])


def crossover(points, gpu_key):
    """Largest work the CPU won, smallest the GPU won, and a threshold between"""
    timed = [p for p in points if "cpu_ms" in p]
    cpu_won = [p["work"] for p in timed if p["cpu_ms"] <= p[gpu_key]]
    gpu_won = [p["work"] for p in timed if p["cpu_ms"] > p[gpu_key]]
    hi_cpu = max(cpu_won) if cpu_won else None
    lo_gpu = min(gpu_won) if gpu_won else None
    if hi_cpu is None or lo_gpu is None:
        threshold = lo_gpu if hi_cpu is None else hi_cpu * 2
    else:
        threshold = math.sqrt(hi_cpu * lo_gpu)
    threshold = float(f"{threshold:.0e}") if threshold else None
    # grid points on the wrong side of that threshold
    wrong = [p for p in timed if threshold and
             ((p["work"] < threshold) != (p["cpu_ms"] <= p[gpu_key]))]
    return hi_cpu, lo_gpu, threshold, wrong


def summarize(points):
    timed = [p for p in points if "cpu_ms" in p and p["work"] >= 1e6]
    per = sorted(p["cpu_ms"] * 1e6 / (p["work"] * max(p["iterations"], 1)) for p in timed)
    small = [p for p in points if p["work"] <= 1e6]
    print("\n# CPU: ns per row*k*d per iteration, median over work >= 1e6: %.3f"
          % (per[len(per) // 2] if per else float("nan")))
    if small:
        ctx = sorted(p["gpu_cold_ms"] - p["gpu_warm_ms"] for p in small)
        warm = sorted(p["gpu_warm_ms"] for p in small)
        print("# GPU: first fit's extra (context) ms, median over work <= 1e6: %.1f" % ctx[len(ctx) // 2])
        print("# GPU: warm fit ms, median over work <= 1e6: %.2f" % warm[len(warm) // 2])
    for key, name in (("gpu_cold_ms", "COLD"), ("gpu_warm_ms", "WARM")):
        hi_cpu, lo_gpu, threshold, wrong = crossover(points, key)
        print(f"# {key}: CPU won up to work {hi_cpu}, GPU won from {lo_gpu}; "
              f"#define GC_AUTO_GPU_MIN_WORK_{name} {threshold:.0e}" if threshold else
              f"# {key}: no crossover in the grid (CPU won up to {hi_cpu}, GPU from {lo_gpu})")
        for p in wrong:
            print(f"#   on the wrong side of it: n={p['n']} d={p['d']} k={p['k']} "
                  f"work={p['work']} cpu={p['cpu_ms']:.1f} ms gpu={p[key]:.1f} ms")
    bad = [p for p in points if "cpu_ms" in p and
           (p["auto_cold"]["ms"] > 1.5 * min(p["cpu_ms"], p["gpu_cold_ms"]) + 5)]
    print(f"# auto's first fit slower than 1.5x the better device (+5 ms) at {len(bad)} "
          f"of {len(points)} points with the current constants")
    for p in bad:
        print(f"#   n={p['n']} d={p['d']} k={p['k']} work={p['work']}: auto "
              f"{p['auto_cold']['ms']:.1f} ms on {p['auto_cold']['device']}, cpu "
              f"{p['cpu_ms']:.1f}, gpu cold {p['gpu_cold_ms']:.1f}")


if __name__ == "__main__":
    main()
