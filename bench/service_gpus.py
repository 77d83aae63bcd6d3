#!/usr/bin/env python3
"""The GPU service on a machine with several GPUs (issue 13: the service
spreads fits across the visible GPUs, gpuclust.gpu_id pins one), against
the server of PGHOST/PGPORT with gpuclust preloaded and max_connections
above SESSIONS + 2.  On the GPU machine:

    PG18_CONF=$'shared_preload_libraries = gpuclust\\nmax_connections = 100' \\
        bash bench/pg18-run python3 bench/service_gpus.py

A table of ROWS rows of d = 16; kmeans_gpu(v, 100) on the GPU alone, then in
SESSIONS sessions at once with gpu_id left at its default, then with every
session pinned to the last GPU.  While they run, one session samples
gpuclust_progress every 5 ms (the GPU each fit runs on) and nvidia-smi each
GPU's memory.  Prints per run the fits seen on each GPU and each GPU's peak
memory over its idle value, and exits non-zero when a fit fails, does not
come from the service, differs from the fit alone, when the spread run
leaves a GPU unused, or the pinned run touches another GPU.
"""
import os
import subprocess
import sys
import threading
import time

import psycopg

ROWS = int(os.environ.get("ROWS", "1000000"))
SESSIONS = int(os.environ.get("SESSIONS", "16"))
FIT = ("SELECT m::jsonb->>'path', md5((m::jsonb - 'timings_ms' - 'distances_skipped' - 'partial_states'"
       " - 'shared_memory_states')::text) FROM (SELECT kmeans_gpu(v, 100) AS m FROM gpus_rows) s")


def connect():
    return psycopg.connect(autocommit=True)


def gpu_memory():
    out = subprocess.run(["nvidia-smi", "--query-gpu=index,memory.used", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=True).stdout
    return {int(i): int(m) for i, m in (line.split(",") for line in out.strip().splitlines())}


def fit(pin, results, n):
    try:
        with connect() as conn:
            conn.execute("SET gpuclust.device = gpu")
            if pin is not None:
                conn.execute(f"SET gpuclust.gpu_id = {pin}")
            results[n] = conn.execute(FIT).fetchone()
    except psycopg.Error as e:
        results[n] = ("FAILED", str(e).splitlines()[0])


def run(label, pin, reference, gpus):
    seen, peaks, done = {}, {g: 0 for g in gpus}, threading.Event()
    idle = gpu_memory()

    def sample_progress():
        with connect() as conn:
            while not done.is_set():
                for pid, gpu in conn.execute("SELECT pid, gpu_id FROM gpuclust_progress WHERE device = 'gpu'"
                                             " AND phase IN ('uploading', 'seeding', 'iterating')"):
                    seen[pid] = gpu
                time.sleep(0.005)

    def sample_memory():
        while not done.is_set():
            for g, mib in gpu_memory().items():
                peaks[g] = max(peaks[g], mib - idle[g])
            time.sleep(0.05)

    samplers = [threading.Thread(target=sample_progress), threading.Thread(target=sample_memory)]
    for t in samplers:
        t.start()
    results = [None] * SESSIONS
    t0 = time.perf_counter()
    workers = [threading.Thread(target=fit, args=(pin, results, n)) for n in range(SESSIONS)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    wall = time.perf_counter() - t0
    done.set()
    for t in samplers:
        t.join()
    per_gpu = {g: sum(1 for v in seen.values() if v == g) for g in gpus}
    failed = [r for r in results if r[0] != "service"]
    differ = [r for r in results if r[0] == "service" and r[1] != reference]
    print(f"{label}: {SESSIONS} sessions in {wall:.2f} s; fits seen running on each GPU {per_gpu} "
          f"(of {len(seen)} sampled); peak GPU memory over idle, MiB {peaks}; "
          f"not from the service {len(failed)}, differing from the fit alone {len(differ)}")
    for r in failed[:3]:
        print("  ", r)
    return per_gpu, peaks, not failed and not differ


def main():
    with connect() as conn:
        conn.execute("SET client_min_messages = warning")
        conn.execute("CREATE EXTENSION IF NOT EXISTS gpuclust")
        conn.execute("SELECT setseed(0.5)")
        conn.execute("DROP TABLE IF EXISTS gpus_rows")
        conn.execute(f"CREATE TABLE gpus_rows AS SELECT array_agg(random() ORDER BY j)::float8[] AS v "
                     f"FROM generate_series(1, {ROWS}) i, generate_series(1, 16) j GROUP BY i")
        conn.execute("SET gpuclust.device = gpu")
        conn.execute(FIT)       # the service's first GPU fit loads its kernels
        # read after a fit: the service opens its GPUs after the server starts
        info = conn.execute("SELECT gpuclust_service_info()").fetchone()[0]
        print("service:", info)
        t0 = time.perf_counter()
        path, reference = conn.execute(FIT).fetchone()
        print(f"alone: {1000 * (time.perf_counter() - t0):.0f} ms, path {path}")
    gpus = sorted(gpu_memory())
    ok = info["gpus"] == len(gpus) and len(gpus) >= 2
    if not ok:
        print(f"the service opened {info['gpus']} GPU(s) of {len(gpus)}: nothing to spread")
    spread, _, good = run("spread (gpu_id at its default)", None, reference, gpus)
    ok &= good and all(spread[g] > 0 for g in gpus)
    last = gpus[-1]
    pinned, peaks, good = run(f"pinned (gpu_id = {last})", last, reference, gpus)
    ok &= good and pinned[last] > 0 and all(pinned[g] == 0 for g in gpus if g != last)
    print("spread over every GPU and pinned to one:", "yes" if ok else "NO")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
