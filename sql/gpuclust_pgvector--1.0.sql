/* sql/gpuclust_pgvector--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION gpuclust_pgvector" to load this file. \quit

-- gpuclust's functions over pgvector's vector and halfvec, read in place
-- (no cast to real[], no copy per row).  The C code is in gpuclust's
-- library (MODULE_PATHNAME is $libdir/gpuclust); the aggregates share
-- gpuclust's final functions and transition states.

-- kmeans_gpu over vector

CREATE FUNCTION kmeans_gpu_transfn(internal, vector, int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_transfn(internal, vector, int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_gpu(vec vector, k int, options jsonb) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_gpu(vec vector, k int) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

-- a bigint k, as for arrays
CREATE FUNCTION kmeans_gpu_transfn(internal, vector, bigint, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_transfn(internal, vector, bigint) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_gpu(vec vector, k bigint, options jsonb) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_gpu(vec vector, k bigint) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE FUNCTION kmeans_gpu_cluster(vec vector, k bigint, options jsonb) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_vector'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec vector, k bigint) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_vector'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

-- a smallint k (drivers such as psycopg send small integers as smallint,
-- which the int and bigint forms would both take)
CREATE FUNCTION kmeans_gpu_transfn(internal, vector, smallint, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_transfn(internal, vector, smallint) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_gpu(vec vector, k smallint, options jsonb) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_gpu(vec vector, k smallint) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE FUNCTION kmeans_gpu_cluster(vec vector, k smallint, options jsonb) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_vector'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec vector, k smallint) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_vector'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec vector, k int, options jsonb) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_vector'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec vector, k int) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_vector'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_predict(model kmeans_model, vec vector) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_predict_vector'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_distance(model kmeans_model, vec vector) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_distance_vector'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- kmeans_stream_state over vector

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, vector, int, jsonb) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, vector, int) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_stream_state(vec vector, k int, options jsonb) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_stream_state(vec vector, k int) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

-- a bigint k, as for arrays, and a smallint one (see kmeans_gpu)
CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, vector, bigint, jsonb) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, vector, bigint) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_stream_state(vec vector, k bigint, options jsonb) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_stream_state(vec vector, k bigint) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, vector, smallint, jsonb) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, vector, smallint) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_stream_state(vec vector, k smallint, options jsonb) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_stream_state(vec vector, k smallint) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

-- pmedian_gpu over vector

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, vector, int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, vector, int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, vector, float8, int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE pmedian_gpu(id bigint, vec vector, p int) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec vector, p int, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec vector, demand float8, p int, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

-- a bigint p, as for arrays, and a smallint one (see kmeans_gpu)
CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, vector, bigint) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, vector, bigint, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, vector, float8, bigint, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE pmedian_gpu(id bigint, vec vector, p bigint) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec vector, p bigint, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec vector, demand float8, p bigint, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, vector, smallint) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, vector, smallint, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, vector, float8, smallint, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_vector'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE pmedian_gpu(id bigint, vec vector, p smallint) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec vector, p smallint, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec vector, demand float8, p smallint, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE FUNCTION pmedian_predict(model pmedian_model, vec vector) RETURNS bigint
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_predict_vector'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- kmeans_gpu over halfvec

CREATE FUNCTION kmeans_gpu_transfn(internal, halfvec, int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_transfn(internal, halfvec, int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_gpu(vec halfvec, k int, options jsonb) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_gpu(vec halfvec, k int) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

-- a bigint k, as for arrays
CREATE FUNCTION kmeans_gpu_transfn(internal, halfvec, bigint, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_transfn(internal, halfvec, bigint) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_gpu(vec halfvec, k bigint, options jsonb) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_gpu(vec halfvec, k bigint) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE FUNCTION kmeans_gpu_cluster(vec halfvec, k bigint, options jsonb) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_halfvec'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec halfvec, k bigint) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_halfvec'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

-- a smallint k (drivers such as psycopg send small integers as smallint,
-- which the int and bigint forms would both take)
CREATE FUNCTION kmeans_gpu_transfn(internal, halfvec, smallint, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_transfn(internal, halfvec, smallint) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_gpu(vec halfvec, k smallint, options jsonb) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_gpu(vec halfvec, k smallint) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE FUNCTION kmeans_gpu_cluster(vec halfvec, k smallint, options jsonb) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_halfvec'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec halfvec, k smallint) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_halfvec'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec halfvec, k int, options jsonb) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_halfvec'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec halfvec, k int) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_halfvec'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_predict(model kmeans_model, vec halfvec) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_predict_halfvec'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_distance(model kmeans_model, vec halfvec) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_distance_halfvec'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- kmeans_stream_state over halfvec

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, halfvec, int, jsonb) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, halfvec, int) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_stream_state(vec halfvec, k int, options jsonb) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_stream_state(vec halfvec, k int) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

-- a bigint k, as for arrays, and a smallint one (see kmeans_gpu)
CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, halfvec, bigint, jsonb) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, halfvec, bigint) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_stream_state(vec halfvec, k bigint, options jsonb) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_stream_state(vec halfvec, k bigint) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, halfvec, smallint, jsonb) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, halfvec, smallint) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_stream_state(vec halfvec, k smallint, options jsonb) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_stream_state(vec halfvec, k smallint) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

-- pmedian_gpu over halfvec

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, halfvec, int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, halfvec, int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, halfvec, float8, int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE pmedian_gpu(id bigint, vec halfvec, p int) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec halfvec, p int, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec halfvec, demand float8, p int, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

-- a bigint p, as for arrays, and a smallint one (see kmeans_gpu)
CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, halfvec, bigint) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, halfvec, bigint, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, halfvec, float8, bigint, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE pmedian_gpu(id bigint, vec halfvec, p bigint) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec halfvec, p bigint, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec halfvec, demand float8, p bigint, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, halfvec, smallint) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, halfvec, smallint, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, halfvec, float8, smallint, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_halfvec'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE pmedian_gpu(id bigint, vec halfvec, p smallint) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec halfvec, p smallint, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec halfvec, demand float8, p smallint, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE FUNCTION pmedian_predict(model pmedian_model, vec halfvec) RETURNS bigint
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_predict_halfvec'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- A model's centroids as vector or halfvec, to store in a pgvector column
-- and search with <-> or <=>; converted by pgvector's own casts

CREATE FUNCTION kmeans_centroids_vector(model kmeans_model,
	OUT cluster int, OUT centroid vector, OUT size bigint)
	RETURNS SETOF record
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE ROWS 100
BEGIN ATOMIC
	SELECT c.cluster, c.centroid::vector, c.size FROM kmeans_centroids(model) c ORDER BY c.cluster;
END;

CREATE FUNCTION kmeans_centroids_halfvec(model kmeans_model,
	OUT cluster int, OUT centroid halfvec, OUT size bigint)
	RETURNS SETOF record
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE ROWS 100
BEGIN ATOMIC
	SELECT c.cluster, c.centroid::halfvec, c.size FROM kmeans_centroids(model) c ORDER BY c.cluster;
END;
