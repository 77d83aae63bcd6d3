#!/usr/bin/env python3
"""Where a serial fit's collection goes, rows stored in place: 1M x 768
vector rows with STORAGE main (bench/embedding_e2e.py's load), the bare
scans, then serial fits whose rows go to ordinary memory (device = cpu,
k = 10), to page-locked blocks (device = gpu) and to page-locked blocks
kept across fits (gpuclust.pinned_cache_mb = 8192).  Run on the GPU
machine by bench/pg18-run, as bench/embedding_e2e.py is; under the GPU
service (PG18_CONF with shared_preload_libraries = gpuclust), --service
fits on the GPU only.  Results: bench/results/storage-main-h100.md.

--ab OLD_SO compares two builds in one run, on one table: round after
round, a fresh session with the installed gpuclust library, then one with
OLD_SO put in its place (renamed in, so that no process that mapped a
library sees its file change), each fitting on the GPU; the installed
library is put back at the end.  Each fit prints its collection and the
md5 of its centroids, which the two builds must share
(bench/results/deferred-hashes-h100.md)."""
import argparse, hashlib, json, os, shutil, subprocess, sys, time

import psycopg

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import embedding_e2e as e


def install_library(source, libdir):
    """Put source in place of libdir/gpuclust.so by renaming a copy over it"""
    staged = os.path.join(libdir, "gpuclust.ab.so")
    shutil.copyfile(source, staged)
    os.chmod(staged, 0o755)
    os.replace(staged, os.path.join(libdir, "gpuclust.so"))


def ab_rounds(old_so, rounds, fixed, device, k):
    libdir = subprocess.run(["pg_config", "--pkglibdir"], capture_output=True, text=True,
                            check=True).stdout.strip()
    new_so = os.path.join(os.environ.get("TMPDIR", "/tmp"), "gpuclust.new.so")
    shutil.copyfile(os.path.join(libdir, "gpuclust.so"), new_so)
    try:
        for r in range(rounds):
            for build, so in (("new", new_so), ("old", old_so)):
                install_library(so, libdir)
                with psycopg.connect(autocommit=True) as conn, conn.cursor() as cur:
                    cur.execute("SET max_parallel_workers_per_gather = 0")
                    cur.execute(f"SET gpuclust.device = {device}")
                    for f in range(2):
                        t0 = time.perf_counter()
                        cur.execute("SELECT kmeans_gpu(embedding, %s, %s::jsonb)::jsonb FROM emb",
                                    (k, json.dumps(fixed)))
                        m = cur.fetchone()[0]
                        ms = 1000 * (time.perf_counter() - t0)
                        e.emit(phase="ab", build=build, round=r, fit=f, ms=ms,
                               collect=m["timings_ms"]["collect"], transfer=m["timings_ms"]["transfer"],
                               centroids_md5=hashlib.md5(json.dumps(m["centroids"]).encode()).hexdigest())
    finally:
        install_library(new_so, libdir)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--service", action="store_true", help="three GPU fits only")
    ap.add_argument("--ab", metavar="OLD_SO", help="compare with this build of gpuclust.so")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="gpu", help="--ab: gpuclust.device of the fits")
    ap.add_argument("--k", type=int, default=1000, help="--ab: k of the fits")
    a = ap.parse_args()
    conn = psycopg.connect(autocommit=True)
    with conn.cursor() as cur:
        for ext in ("vector", "gpuclust", "gpuclust_pgvector"):
            cur.execute(f"CREATE EXTENSION IF NOT EXISTS {ext}")
    e.load(conn, a.n, 768, 1000, vector_only=True, storage="main")
    fixed = {"max_iter": 2, "tol": 0, "seed": 1}
    with conn.cursor() as cur:
        if not a.service:
            e.bare_scan(cur, "emb")
            e.bare_scan(cur, "emb", values=True)
    if a.ab:
        conn.close()
        ab_rounds(a.ab, a.rounds, fixed, a.device, a.k)
        return
    with conn.cursor() as cur:
        if not a.service:
            cur.execute("SET gpuclust.device = cpu")
            for _ in range(2):
                e.fit(cur, "emb", 10, dict(fixed, init="random"), "cpu k=10")
        cur.execute("SET gpuclust.device = gpu")
        for _ in range(3):
            e.fit(cur, "emb", 1000, fixed, "service serial" if a.service else "gpu pinned_cache_mb=256")
        if not a.service:
            cur.execute("SET gpuclust.pinned_cache_mb = 8192")
            for _ in range(3):
                e.fit(cur, "emb", 1000, fixed, "gpu pinned_cache_mb=8192")


if __name__ == "__main__":
    main()
