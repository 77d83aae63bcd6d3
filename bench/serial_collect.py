#!/usr/bin/env python3
"""Where a serial fit's collection goes, rows stored in place: 1M x 768
vector rows with STORAGE main (bench/embedding_e2e.py's load), the bare
scans, then serial fits whose rows go to ordinary memory (device = cpu,
k = 10), to page-locked blocks (device = gpu) and to page-locked blocks
kept across fits (gpuclust.pinned_cache_mb = 8192).  Run on the GPU
machine by bench/pg18-run, as bench/embedding_e2e.py is; under the GPU
service (PG18_CONF with shared_preload_libraries = gpuclust), --service
fits on the GPU only.  Results: bench/results/storage-main-h100.md."""
import argparse, os, sys

import psycopg

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import embedding_e2e as e


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--service", action="store_true", help="three GPU fits only")
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
