#!/usr/bin/env python3
"""Embeddings end to end: gpuclust inside PostgreSQL against the route users
take today (export the vectors, cluster in PyTorch, import the labels), on
the same table, the same GPU and in the same run.  Run on the GPU machine by
bench/pg18-run (PostgreSQL 18 with pgvector, bench/pack18), e.g.

    bash bench/pg18-run python3 bench/embedding_e2e.py --n 1000000 --d 768 --k 1000

(with PG18_CONF="min_dynamic_shared_memory = 10GB": the parallel workers'
rows then go into the main shared memory region, doc/devices.md, "Preloading and parallel plans").
--model-only: the table -> model comparison alone (e.g. --k 4096, where
the full run's many fits take long).  --budget-mb MB: a table past a GPU budget, e.g. --n 8000000 --d 768 --k 4096
--budget-mb 8192: the fit within the GPU's memory and streamed, the same
model, both against the parallel scan (budget_run); --fit-gpus all adds
the fit over every GPU (gpuclust.fit_gpus) to the same comparison.
--storage main stores the embeddings in their rows (doc/devices.md, "Storing
embeddings"): pgvector's vector and real[] of d = 768 are otherwise moved to
the TOAST table, and every scan, ours and the export route's alike, fetches
each value from there.

Measured, each once per run (the table is far larger than any cache that
would make a second read cheaper than the first is kept warm by reading it
before the timings start):
  - the bare scan of the column (serial: the aggregate collects serially),
    and one that reads every element (a halfvec of d = 768 is stored inline,
    so the bare scan leaves its elements untouched);
  - kmeans_gpu(embedding, k) on `vector`, `halfvec` and `real[]` columns, float32
    (exact labels) and bf16, with the model's phase timings: collection
    against the bare scan is the per-row cost of reading a vector;
  - labels into a table: CREATE TABLE AS SELECT * FROM kmeans_gpu_assign(..),
    and an UPDATE ... FROM of a label column (the UPDATEs last, as they
    double the table: serial on the table as loaded, then with 8 workers
    and the export route's, each on the table vacuumed after the one
    before);
  - with 8 parallel workers: the bare scan, the fits and the labels into a
    table, the table -> model and labels ratios given both ways;
  - the export route: COPY the vectors out (binary and text, through
    psycopg), parse into NumPy, Lloyd in PyTorch on the GPU (float32, the
    same iterations), COPY the labels back into a table, and UPDATE ... FROM;
  - the same fits with {"metric": "cosine"}.
Both sides are timed warm: gpuclust's serial and parallel fits each after a
warm-up fit of their kind (the session's CUDA context and buffers; the
workers' shared memory, first touched), the labels after a warm-up
kmeans_gpu_assign of their kind, PyTorch's Lloyd after its CUDA
context and cuBLAS are made (runs up to narrow-rows-h100.md counted PyTorch's
context in the export route and timed the first parallel fits cold).
Each measurement prints one JSON line (also appended to $OUT/embedding.jsonl);
the last lines are the ratios the targets are stated in.
"""
import argparse, json, os, struct, sys, time

import numpy as np
import psycopg

OUT = os.environ.get("OUT", "/tmp")
results = open(os.path.join(OUT, "embedding.jsonl"), "a")


def emit(**rec):
    line = json.dumps(rec)
    print(line, flush=True)
    results.write(line + "\n")
    results.flush()
    return rec


def timed(cur, sql, params=None):
    t0 = time.perf_counter()
    cur.execute(sql, params)
    rows = cur.fetchall() if cur.description else None
    return (time.perf_counter() - t0) * 1000.0, rows


def blobs(n, d, k, seed):
    """Gaussian blobs: k centres on the unit sphere, spread 0.05 per axis"""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((k, d)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    for start in range(0, n, 100_000):
        m = min(100_000, n - start)
        labels = rng.integers(0, k, m)
        yield start, centres[labels] + rng.normal(0.0, 0.05, (m, d)).astype(np.float32)


def near_duplicates(n, d, k, seed):
    """Rows that nearly repeat one another: 1,000 patterns, whatever k (row g
    takes values ((g 7919 + j 104729) mod 1000) / 1000, which repeat with g
    mod 1000) plus uniform noise in [0, 0.01), as bench/assign_probe.sql
    makes them"""
    rng = np.random.default_rng(seed)
    j = np.arange(d, dtype=np.int64)
    for start in range(0, n, 100_000):
        g = np.arange(start, min(start + 100_000, n), dtype=np.int64) + 1
        base = ((g[:, None] * 7919 + j[None, :] * 104729) % 1000) / 1000.0
        yield start, (base + rng.uniform(0.0, 0.01, base.shape)).astype(np.float32)


def load(conn, n, d, k, vector_only=False, data="blobs", storage=None):
    """Binary COPY of (id bigint, embedding vector(d)) rows; the halfvec and
    real[] copies too unless vector_only.  storage: the embedding columns'
    STORAGE (None: the types' own, external for vector, halfvec and real[],
    where a value past 2 kB leaves the row for the TOAST table; main keeps
    it in the row up to a page, doc/devices.md "Storing embeddings")"""
    def create(cur, table, column_type):
        cur.execute(f"DROP TABLE IF EXISTS {table}")
        cur.execute(f"CREATE TABLE {table} (id bigint, embedding {column_type}, label int)")
        if storage:
            cur.execute(f"ALTER TABLE {table} ALTER COLUMN embedding SET STORAGE {storage}")

    with conn.cursor() as cur:
        create(cur, "emb", f"vector({d})")
        t0 = time.perf_counter()
        with cur.copy("COPY emb (id, embedding) FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0))
            row = np.dtype([("nf", ">i2"), ("l1", ">i4"), ("id", ">i8"), ("l2", ">i4"),
                            ("dim", ">i2"), ("unused", ">i2"), ("x", ">f4", (d,))])
            for start, X in (near_duplicates if data == "near" else blobs)(n, d, k, 7):
                rec = np.zeros(len(X), dtype=row)
                rec["nf"], rec["l1"], rec["l2"], rec["dim"] = 2, 8, 4 + 4 * d, d
                rec["id"] = np.arange(start, start + len(X))
                rec["x"] = X
                copy.write(rec.tobytes())
            copy.write(struct.pack("!h", -1))
        tables = ("emb",) if vector_only else ("emb", "embh", "embr")
        if not vector_only:
            create(cur, "embh", f"halfvec({d})")
            cur.execute("INSERT INTO embh SELECT id, embedding::halfvec, label FROM emb")
            create(cur, "embr", "real[]")
            cur.execute("INSERT INTO embr SELECT id, embedding::real[], label FROM emb")
        for t in tables:
            cur.execute(f"ALTER TABLE {t} SET (parallel_workers = 8)")
            cur.execute(f"VACUUM ANALYZE {t}")
        cur.execute("SELECT pg_total_relation_size('emb'), pg_total_relation_size(to_regclass('embh')), "
                    "pg_relation_size('emb')")
        size, hsize, heap = cur.fetchone()
        emit(phase="load", n=n, d=d, ms=(time.perf_counter() - t0) * 1000.0, storage=storage or "default",
             table_bytes=size, heap_bytes=heap, halfvec_table_bytes=hsize)


def bare_scan(cur, table, workers=0, values=False):
    """A scan that reads (detoasts) every vector: count() alone would not.
    Its dimension is read from the header, which leaves an inline value's
    elements untouched (halfvec rows of d = 768 stay inline, vector rows are
    toasted); values=True reads every element too (the vector's norm)."""
    if values:
        dims = "vector_norm(embedding)" if table == "emb" else "l2_norm(embedding)"
    else:
        dims = "cardinality(embedding)" if table == "embr" else "vector_dims(embedding)"
    cur.execute(f"SET max_parallel_workers_per_gather = {workers}")
    timed(cur, f"SELECT sum({dims}) FROM {table}")      # warm
    ms, _ = timed(cur, f"SELECT sum({dims}) FROM {table}")
    cur.execute("RESET max_parallel_workers_per_gather")
    return emit(phase="bare_scan_values" if values else "bare_scan", table=table, workers=workers, ms=ms)


def fit(cur, table, k, options, label, workers=0):
    """The table -> model time: the model stored in a table, as a user keeps
    one (ms).  Its fields are read afterwards, timed apart both ways: the
    jsonb cast (json_ms: the text form of k x d centroids, parsed as jsonb)
    and kmeans_model_info (info_ms); runs before 2026-11-24 timed the cast
    with the fit."""
    cur.execute(f"SET max_parallel_workers_per_gather = {workers}")
    cur.execute("DROP TABLE IF EXISTS fit_model")
    ms, _ = timed(cur, f"CREATE TEMP TABLE fit_model AS SELECT kmeans_gpu(embedding, %s, %s::jsonb) AS m "
                       f"FROM {table}", (k, json.dumps(options)))
    cur.execute("RESET max_parallel_workers_per_gather")
    json_ms, _ = timed(cur, "SELECT m::jsonb - 'centroids' - 'sizes' FROM fit_model")
    info_ms, rows = timed(cur, "SELECT kmeans_model_info(m) - 'sizes' FROM fit_model")
    model = rows[0][0]
    return emit(phase="kmeans_gpu", table=table, variant=label, workers=workers, options=options,
                ms=ms, json_ms=json_ms, info_ms=info_ms, timings=model.get("timings_ms"), inertia=model.get("inertia"),
                iterations=model.get("iterations"), kernel=model.get("kernel"),
                device=model.get("device"), path=model.get("path"),
                partial_states=model.get("partial_states"))


def budget_run(conn, a):
    """--budget-mb: the vector table fitted with 8 workers within the GPU's
    free memory (one session where it holds the fit) and again streamed
    past gpuclust.gpu_fit_memory_mb = a.budget_mb (the rows held on the
    host, each pass taking those past the budget through the GPU, k-means||
    seeding included), and with --fit-gpus over those GPUs (within their
    memory, then past the budget), against the parallel bare scan; the
    models must be the same (centroids, sizes, inertia, iterations)."""
    opts = {"max_iter": a.iters, "tol": 0, "seed": 1}
    kept = {}
    variants = [("free memory", 0, ""), ("budget", a.budget_mb, "")]
    if a.fit_gpus:
        variants += [(f"gpus {a.fit_gpus}", 0, a.fit_gpus),
                     (f"gpus {a.fit_gpus}, budget", a.budget_mb, a.fit_gpus)]
    with conn.cursor() as cur:
        cur.execute(f"SET gpuclust.device = {a.device}")
        fit(cur, "emb", a.k, opts, "warm-up parallel", workers=8)
        pscan = bare_scan(cur, "emb", workers=8)
        for label, budget, gpus in variants:
            cur.execute(f"SET gpuclust.gpu_fit_memory_mb = {budget}")
            cur.execute("SELECT set_config('gpuclust.fit_gpus', %s, false)", (gpus,))
            rec = fit(cur, "emb", a.k, opts, label, workers=8)
            cur.execute("SELECT md5((m::jsonb -> 'centroids')::text), md5((m::jsonb -> 'sizes')::text), "
                        "kmeans_model_info(m) - 'sizes' - 'centroids' FROM fit_model")
            centroids, sizes, info = cur.fetchone()
            kept[label] = (centroids, sizes, rec["inertia"], rec["iterations"])
            emit(phase="budget_fit", variant=label, budget_mb=budget, ms=rec["ms"],
                 fit_vs_parallel_scan=rec["ms"] / pscan["ms"], gpus_used=info.get("gpus_used"),
                 resident_fraction=info.get("resident_fraction"),
                 streamed_bytes=info.get("streamed_bytes"))
        cur.execute("RESET gpuclust.gpu_fit_memory_mb")
        cur.execute("RESET gpuclust.fit_gpus")
    emit(phase="budget_same_model", same=len(set(kept.values())) == 1, **kept)


def model_run(conn, a):
    """--model-only: table -> model alone, on the vector table, against the
    export route to a model (binary COPY out, NumPy, Lloyd in PyTorch):
    gpuclust's float32 fit serial and with 8 workers, and bf16 with 8"""
    fixed = {"max_iter": a.iters, "tol": 0, "seed": 1}
    with conn.cursor() as cur:
        cur.execute(f"SET gpuclust.device = {a.device}")
        fit(cur, "emb", a.k, fixed, "warm-up")
        f32 = fit(cur, "emb", a.k, fixed, "float32")
        fit(cur, "emb", a.k, fixed, "warm-up parallel", workers=8)
        p32 = fit(cur, "emb", a.k, fixed, "float32 parallel", workers=8)
        p16 = fit(cur, "emb", a.k, dict(fixed, precision="bf16"), "bf16 parallel", workers=8)
    ids, X, copy_ms, parse_ms = export_binary(conn, a.d)
    emit(phase="export_binary", rows=len(ids), copy_ms=copy_ms, parse_ms=parse_ms)
    if a.no_torch:
        return
    _, torch_ms = torch_lloyd(X, a.k, a.iters, False)
    emit(phase="torch_lloyd", ms=torch_ms, iterations=a.iters)
    route = copy_ms + parse_ms + torch_ms
    emit(phase="model_ratios", export_route_model_ms=route, model_speedup=route / f32["ms"],
         model_speedup_parallel=route / p32["ms"], model_speedup_parallel_bf16=route / p16["ms"])


def assign_call(table):
    """kmeans_gpu_assign over the table's (id, embedding), its k and options
    left as the parameters %s, %s::jsonb"""
    return f"kmeans_gpu_assign('SELECT id, embedding FROM {table}', %s, %s::jsonb)"


def assign_into_table(cur, table, k, options, workers=None):
    """CREATE TABLE AS over kmeans_gpu_assign, after one kmeans_gpu_assign
    counted (its first run with these workers, as the fits have their
    warm-up; runs before 2026-11-25 timed the CREATE TABLE AS cold);
    workers sets max_parallel_workers_per_gather for both (None: the
    server's)."""
    if workers is not None:
        cur.execute(f"SET max_parallel_workers_per_gather = {workers}")
    query, args = assign_call(table), (k, json.dumps(options))
    timed(cur, f"SELECT count(*) FROM {query}", args)
    cur.execute("DROP TABLE IF EXISTS labels_ours")
    ms, _ = timed(cur, f"CREATE TABLE labels_ours AS SELECT * FROM {query}", args)
    rec = emit(phase="assign_ctas", table=table, options=options, workers=workers, ms=ms)
    if workers is not None:
        cur.execute("RESET max_parallel_workers_per_gather")
    return rec


def assign_update(cur, table, k, options, workers=None):
    """UPDATE .. FROM kmeans_gpu_assign of the table's label column.  Every
    UPDATE runs after the other measurements: it writes a new version of
    each row, which leaves the table twice its size until a vacuum, and
    with the vectors in their rows (--storage main) that is a copy of
    every vector."""
    if workers is not None:
        cur.execute(f"SET max_parallel_workers_per_gather = {workers}")
    query, args = assign_call(table), (k, json.dumps(options))
    ms, _ = timed(cur, f"UPDATE {table} t SET label = a.cluster FROM {query} a WHERE a.id = t.id", args)
    rec = emit(phase="assign_update", table=table, options=options, workers=workers, ms=ms)
    if workers is not None:
        cur.execute("RESET max_parallel_workers_per_gather")
    cur.execute(f"VACUUM {table}")
    return rec


def labels_parallel(cur, k, options):
    """Where the labels' time goes with 8 workers, each measured warm (after
    one kmeans_gpu_assign of its own) and twice: the float32 model, the
    labels counted in the server, the same into a table (CREATE TABLE AS),
    that statement under EXPLAIN ANALYZE (the function scan's last row
    against the statement: the rest is the heap's inserts), and the inserts'
    floor, as many rows of the same columns from generate_series"""
    cur.execute("SET max_parallel_workers_per_gather = 8")
    query, args = assign_call("emb"), (k, json.dumps(options))
    timed(cur, f"SELECT count(*) FROM {query}", args)
    for _ in range(2):
        fit(cur, "emb", k, options, "float32 parallel", workers=8)
        cur.execute("SET max_parallel_workers_per_gather = 8")
        ms, rows = timed(cur, f"SELECT count(*) FROM {query}", args)
        emit(phase="assign_count", workers=8, ms=ms, rows=rows[0][0])
        cur.execute("DROP TABLE IF EXISTS labels_ours")
        ms, _ = timed(cur, f"CREATE TABLE labels_ours AS SELECT * FROM {query}", args)
        emit(phase="assign_ctas", workers=8, ms=ms)
    cur.execute("DROP TABLE IF EXISTS labels_ours")
    ms, rows = timed(cur, "EXPLAIN (ANALYZE, FORMAT JSON) CREATE TABLE labels_ours AS "
                          f"SELECT * FROM {query}", args)
    plan = rows[0][0][0]
    emit(phase="assign_ctas_explain", workers=8, ms=ms, execution_ms=plan["Execution Time"],
         function_scan_ms=plan["Plan"]["Actual Total Time"])
    cur.execute("DROP TABLE IF EXISTS labels_floor")
    ms, _ = timed(cur, "CREATE TABLE labels_floor AS SELECT i AS id, (i % 1000)::int AS cluster, "
                       "i * 1e-6::float8 AS distance FROM generate_series(1::bigint, 1000000) i")
    emit(phase="ctas_floor", rows=1_000_000, ms=ms)
    cur.execute("DROP TABLE labels_floor")
    cur.execute("RESET max_parallel_workers_per_gather")


def export_binary(conn, d):
    row = np.dtype([("nf", ">i2"), ("l1", ">i4"), ("id", ">i8"), ("l2", ">i4"),
                    ("dim", ">i2"), ("unused", ">i2"), ("x", ">f4", (d,))])
    buf = bytearray()
    t0 = time.perf_counter()
    with conn.cursor() as cur:
        with cur.copy("COPY emb (id, embedding) TO STDOUT (FORMAT BINARY)") as copy:
            for block in copy:
                buf += block
    copy_ms = (time.perf_counter() - t0) * 1000.0
    t0 = time.perf_counter()
    header = 19
    count = (len(buf) - header - 2) // row.itemsize
    rec = np.frombuffer(buf, dtype=row, count=count, offset=header)
    ids = rec["id"].astype(np.int64)
    X = rec["x"].astype(np.float32)
    parse_ms = (time.perf_counter() - t0) * 1000.0
    return ids, X, copy_ms, parse_ms


def export_text(conn, d, limit_rows):
    """Text COPY parsed row by row (what a script without a binary reader does)"""
    ids, X = [], []
    t0 = time.perf_counter()
    with conn.cursor() as cur:
        with cur.copy(f"COPY (SELECT id, embedding FROM emb LIMIT {limit_rows}) TO STDOUT") as copy:
            for row in copy.rows():
                ids.append(int(row[0]))
                X.append(np.fromstring(row[1][1:-1], sep=",", dtype=np.float32))
    ms = (time.perf_counter() - t0) * 1000.0
    return ms, len(ids)


def torch_lloyd(X, k, iters, cosine):
    """Lloyd in PyTorch from the NumPy rows to the labels on the host (ms),
    with PyTorch's CUDA context and cuBLAS made before the clock starts, as
    gpuclust's fits run after a warm-up fit."""
    import torch
    w = torch.ones(64, 64, device="cuda")
    torch.addmm(w, w, w.t()).argmin(1).cpu()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    Xg = torch.from_numpy(X).cuda()
    if cosine:
        Xg = torch.nn.functional.normalize(Xg, dim=1)
    n = Xg.shape[0]
    C = Xg[torch.randperm(n, generator=torch.Generator().manual_seed(0))[:k].cuda()].clone()
    for _ in range(iters):
        dist = torch.addmm((C * C).sum(1)[None, :], Xg, C.t(), beta=1.0, alpha=-2.0)
        labels = dist.argmin(1)
        sums = torch.zeros_like(C).index_add_(0, labels, Xg)
        counts = torch.bincount(labels, minlength=k).clamp_(min=1).unsqueeze(1)
        C = sums / counts
        if cosine:
            C = torch.nn.functional.normalize(C, dim=1)
    labels = labels.cpu().numpy().astype(np.int32)
    torch.cuda.synchronize()
    del Xg
    torch.cuda.empty_cache()
    return labels, (time.perf_counter() - t0) * 1000.0


def import_labels(conn, ids, labels):
    t0 = time.perf_counter()
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS labels_export")
        cur.execute("CREATE TABLE labels_export (id bigint, cluster int)")
        row = np.dtype([("nf", ">i2"), ("l1", ">i4"), ("id", ">i8"), ("l2", ">i4"), ("c", ">i4")])
        rec = np.zeros(len(ids), dtype=row)
        rec["nf"], rec["l1"], rec["l2"] = 2, 8, 4
        rec["id"], rec["c"] = ids, labels
        with cur.copy("COPY labels_export FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0))
            copy.write(rec.tobytes())
            copy.write(struct.pack("!h", -1))
    return (time.perf_counter() - t0) * 1000.0


def update_from_labels(conn):
    """The export route's UPDATE .. FROM of the labels COPY'd back (ms)"""
    with conn.cursor() as cur:
        ms, _ = timed(cur, "UPDATE emb t SET label = l.cluster FROM labels_export l WHERE l.id = t.id")
    return ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--k", type=int, default=1000)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--text-rows", type=int, default=100_000,
                    help="rows of the text COPY route (scaled to n in the report)")
    ap.add_argument("--skip-load", action="store_true")
    ap.add_argument("--device", default="gpu", help="gpuclust.device for our fits")
    ap.add_argument("--no-torch", action="store_true", help="leave out the PyTorch route (no GPU)")
    ap.add_argument("--collect-only", action="store_true",
                    help="only the serial bare scans and the vector and halfvec float32 fits")
    ap.add_argument("--parallel-only", action="store_true",
                    help="only the vector table, with 8 workers: its parallel bare scan and fits")
    ap.add_argument("--budget-mb", type=int, default=0,
                    help="only the vector table, with 8 workers: one GPU session against a fit "
                         "streamed past gpuclust.gpu_fit_memory_mb = this (budget_run)")
    ap.add_argument("--fit-gpus", default="",
                    help="with --budget-mb: also fit over these GPUs (gpuclust.fit_gpus, e.g. all)")
    ap.add_argument("--model-only", action="store_true",
                    help="only the vector table: table -> model against the export route (model_run)")
    ap.add_argument("--labels", action="store_true",
                    help="with --parallel-only: also where the labels' time goes (labels_parallel)")
    ap.add_argument("--data", choices=("blobs", "near"), default="blobs",
                    help="near: 1,000 patterns plus noise of 0.01, rows that nearly repeat one another")
    ap.add_argument("--storage", choices=("main", "plain", "external", "extended"),
                    help="the embedding columns' STORAGE (default: the types' own, external)")
    a = ap.parse_args()
    conn = psycopg.connect(autocommit=True)
    with conn.cursor() as cur:
        for ext in ("vector", "gpuclust", "gpuclust_pgvector"):
            cur.execute(f"CREATE EXTENSION IF NOT EXISTS {ext}")
        cur.execute(f"SET gpuclust.device = {a.device}")
        cur.execute("SELECT gpuclust_device_info()")
        emit(phase="device", info=cur.fetchone()[0])
    if not a.skip_load:
        load(conn, a.n, a.d, a.k, vector_only=a.parallel_only or a.budget_mb > 0 or a.model_only,
             data=a.data, storage=a.storage)
    if a.budget_mb > 0:
        budget_run(conn, a)
        return
    if a.model_only:
        model_run(conn, a)
        return
    fixed = {"max_iter": a.iters, "tol": 0, "seed": 1}
    if a.parallel_only:
        with conn.cursor() as cur:
            cur.execute(f"SET gpuclust.device = {a.device}")
            fit(cur, "emb", a.k, fixed, "warm-up parallel", workers=8)
            pscan = bare_scan(cur, "emb", workers=8)
            for label, opts in (("float32", fixed), ("float32", fixed), ("bf16", dict(fixed, precision="bf16"))):
                pfit = fit(cur, "emb", a.k, opts, label + " parallel", workers=8)
                emit(phase="ratio", variant=label, fit_vs_parallel_scan=pfit["ms"] / pscan["ms"])
            if a.labels:
                labels_parallel(cur, a.k, fixed)
        return
    with conn.cursor() as cur:
        cur.execute(f"SET gpuclust.device = {a.device}")
        scan = bare_scan(cur, "emb")
        hscan = bare_scan(cur, "embh")
        rscan = bare_scan(cur, "embr")
        vscan = bare_scan(cur, "emb", values=True)
        hvscan = bare_scan(cur, "embh", values=True)
        fit(cur, "emb", a.k, fixed, "warm-up")         # the session's CUDA context and buffers
        f32 = fit(cur, "emb", a.k, fixed, "float32")
        if a.collect_only:
            half = fit(cur, "embh", a.k, fixed, "halfvec float32")
            emit(phase="ratios", collect_vs_scan=f32["timings"]["collect"] / scan["ms"],
                 halfvec_collect_vs_values_scan=half["timings"]["collect"] / hvscan["ms"])
            return
        bf16 = fit(cur, "emb", a.k, dict(fixed, precision="bf16"), "bf16")
        half = fit(cur, "embh", a.k, fixed, "halfvec float32")
        real = fit(cur, "embr", a.k, fixed, "real[] float32")
        cos = fit(cur, "emb", a.k, dict(fixed, metric="cosine"), "cosine float32")
        ctas = assign_into_table(cur, "emb", a.k, fixed)
        # parallel collection: 8 workers, against the parallel bare scan
        par = {}
        pms = {}
        fit(cur, "emb", a.k, fixed, "warm-up parallel", workers=8)   # the workers' segments, first used
        for table in ("emb", "embr"):
            pscan = bare_scan(cur, table, workers=8)
            for label, opts in (("float32", fixed), ("bf16", dict(fixed, precision="bf16"))):
                pfit = fit(cur, table, a.k, opts, label + " parallel", workers=8)
                par[f"{table}_{label}_vs_parallel_scan"] = pfit["ms"] / pscan["ms"]
                pms[(table, label)] = pfit["ms"]
        pctas = assign_into_table(cur, "emb", a.k, fixed, workers=8)
    ids, X, copy_ms, parse_ms = export_binary(conn, a.d)
    emit(phase="export_binary", rows=len(ids), copy_ms=copy_ms, parse_ms=parse_ms)
    text_ms, text_rows = export_text(conn, a.d, a.text_rows)
    emit(phase="export_text", rows=text_rows, ms=text_ms, scaled_ms=text_ms * a.n / max(text_rows, 1))
    if a.no_torch:
        return
    labels, torch_ms = torch_lloyd(X, a.k, a.iters, False)
    emit(phase="torch_lloyd", ms=torch_ms, iterations=a.iters)
    _, torch_cos_ms = torch_lloyd(X, a.k, a.iters, True)
    emit(phase="torch_lloyd_cosine", ms=torch_cos_ms, iterations=a.iters)
    import_ms = import_labels(conn, ids, labels)
    # the UPDATEs last, each followed by a vacuum (assign_update)
    with conn.cursor() as cur:
        cur.execute(f"SET gpuclust.device = {a.device}")
        update = assign_update(cur, "emb", a.k, fixed)
        pupdate = assign_update(cur, "emb", a.k, fixed, workers=8)
    export_update_ms = update_from_labels(conn)
    emit(phase="import_labels", copy_ms=import_ms, update_ms=export_update_ms)

    route_model = copy_ms + parse_ms + torch_ms
    route_labels = route_model + import_ms
    collect = (f32.get("timings") or {}).get("collect")
    hcollect = (half.get("timings") or {}).get("collect")
    rcollect = (real.get("timings") or {}).get("collect")
    emit(phase="ratios",
         collect_vs_scan=collect / scan["ms"] if collect else None,
         halfvec_collect_vs_scan=hcollect / hscan["ms"] if hcollect else None,
         real_collect_vs_scan=rcollect / rscan["ms"] if rcollect else None,
         collect_vs_values_scan=collect / vscan["ms"] if collect else None,
         halfvec_collect_vs_values_scan=hcollect / hvscan["ms"] if hcollect else None,
         export_route_model_ms=route_model, ours_model_ms=f32["ms"], ours_bf16_model_ms=bf16["ms"],
         model_speedup=route_model / f32["ms"], model_speedup_bf16=route_model / bf16["ms"],
         export_route_labels_ms=route_labels, ours_labels_ctas_ms=ctas["ms"],
         labels_speedup=route_labels / ctas["ms"],
         update_speedup=(route_model + import_ms + export_update_ms) / update["ms"],
         cosine_model_speedup=(copy_ms + parse_ms + torch_cos_ms) / cos["ms"],
         # the same with 8 parallel workers collecting the rows
         model_speedup_parallel=route_model / pms[("emb", "float32")],
         model_speedup_parallel_bf16=route_model / pms[("emb", "bf16")],
         labels_speedup_parallel=route_labels / pctas["ms"],
         update_speedup_parallel=(route_model + import_ms + export_update_ms) / pupdate["ms"], **par)


if __name__ == "__main__":
    main()
