/* sql/gpuclust--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION gpuclust" to load this file. \quit

-- The k-means model: centroids, cluster sizes, statistics and timings.
-- Its text form is a JSON object.  Large models are stored out of line
-- uncompressed (STORAGE external, as pgvector's vector): centroids
-- compress poorly (1,000 x 768 float32-valued centroids by 37%), and pglz
-- took longer than the bytes saved, each time a model was stored (about
-- 0.1 s of a 1.8 s fit into a table on the H100 machine) and read back.
CREATE TYPE kmeans_model;

CREATE FUNCTION kmeans_model_in(cstring) RETURNS kmeans_model
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_model_in'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_model_out(kmeans_model) RETURNS cstring
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_model_out'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_model_recv(internal) RETURNS kmeans_model
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_model_recv'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_model_send(kmeans_model) RETURNS bytea
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_model_send'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE kmeans_model (
	INPUT = kmeans_model_in,
	OUTPUT = kmeans_model_out,
	RECEIVE = kmeans_model_recv,
	SEND = kmeans_model_send,
	INTERNALLENGTH = VARIABLE,
	ALIGNMENT = double,
	STORAGE = external
);

-- The cast builds the jsonb value of the text form without parsing the
-- centroids as text, so that a cancel stops it on a large model
CREATE FUNCTION gpuclust_kmeans_model_jsonb(kmeans_model) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_model_jsonb'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (kmeans_model AS jsonb) WITH FUNCTION gpuclust_kmeans_model_jsonb(kmeans_model);

-- kmeans_gpu aggregate: float8[] and real[] vectors, k, optional options

CREATE FUNCTION kmeans_gpu_transfn(internal, float8[], int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_transfn(internal, float8[], int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_transfn(internal, real[], int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_real'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_transfn(internal, real[], int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_real'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_finalfn(internal) RETURNS kmeans_model
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_finalfn'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

-- Parallel plans: a partial state is a handle on the rows one process
-- collected (in shared memory when gpuclust is preloaded); these functions
-- take any kmeans_gpu state, whatever the element type of the vectors.
CREATE FUNCTION kmeans_gpu_combinefn(internal, internal) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_combinefn'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_serialfn(internal) RETURNS bytea
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_serialfn'
	LANGUAGE C STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_deserialfn(bytea, internal) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_partial_deserialfn'
	LANGUAGE C STRICT PARALLEL SAFE;

CREATE AGGREGATE kmeans_gpu(vec float8[], k int, options jsonb) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_gpu(vec float8[], k int) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_gpu(vec real[], k int, options jsonb) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_gpu(vec real[], k int) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

-- Vectors of any number type and a bigint k.  ARRAY[1, 2] is integer[],
-- which PostgreSQL could cast to float8[] or real[] alike: exact overloads
-- for integer[], bigint[], smallint[] and numeric[] settle it.  anyarray
-- with a bigint k (count(*) / 10 is bigint) takes every array: other
-- element types get an error naming the cast.

CREATE FUNCTION kmeans_gpu_transfn(internal, integer[], int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_transfn(internal, integer[], int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_gpu(vec integer[], k int, options jsonb) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_gpu(vec integer[], k int) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE FUNCTION kmeans_gpu_transfn(internal, bigint[], int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_transfn(internal, bigint[], int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_gpu(vec bigint[], k int, options jsonb) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_gpu(vec bigint[], k int) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE FUNCTION kmeans_gpu_transfn(internal, smallint[], int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_transfn(internal, smallint[], int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_gpu(vec smallint[], k int, options jsonb) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_gpu(vec smallint[], k int) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE FUNCTION kmeans_gpu_transfn(internal, numeric[], int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_transfn(internal, numeric[], int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_gpu(vec numeric[], k int, options jsonb) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_gpu(vec numeric[], k int) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE FUNCTION kmeans_gpu_transfn(internal, anyarray, bigint, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_transfn(internal, anyarray, bigint) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_gpu(vec anyarray, k bigint, options jsonb) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_gpu(vec anyarray, k bigint) (
	SFUNC = kmeans_gpu_transfn, STYPE = internal,
	FINALFUNC = kmeans_gpu_finalfn, COMBINEFUNC = kmeans_gpu_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

-- Using a model

CREATE FUNCTION kmeans_predict(model kmeans_model, vec float8[]) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_predict'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_predict(model kmeans_model, vec real[]) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_predict_real'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_distance(model kmeans_model, vec float8[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_distance'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_distance(model kmeans_model, vec real[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_distance_real'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_predict(model kmeans_model, vec integer[]) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_predict_numeric'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_distance(model kmeans_model, vec integer[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_distance_numeric'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_predict(model kmeans_model, vec bigint[]) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_predict_numeric'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_distance(model kmeans_model, vec bigint[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_distance_numeric'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_predict(model kmeans_model, vec smallint[]) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_predict_numeric'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_distance(model kmeans_model, vec smallint[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_distance_numeric'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_predict(model kmeans_model, vec numeric[]) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_predict_numeric'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_distance(model kmeans_model, vec numeric[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_distance_numeric'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_predict(model kmeans_model, vec anyarray) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_predict_numeric'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_distance(model kmeans_model, vec anyarray) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_distance_numeric'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_centroids(model kmeans_model,
	OUT cluster int, OUT centroid float8[], OUT size bigint)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_centroids'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 100;

-- The centroids with their coarse cluster (a two-level model's parent,
-- NULL in one level): the shape an IVF index builder takes
CREATE FUNCTION kmeans_model_centroids(model kmeans_model,
	OUT cluster int, OUT parent int, OUT centroid float8[])
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_model_centroids'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 100;

-- A model's fields without its centroids (model::jsonb - 'centroids',
-- without writing k x d values as text)
CREATE FUNCTION kmeans_model_info(model kmeans_model) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_model_info'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Assignments as a relation: the query yields (id, vector).  Its rows are
-- collected by gpuclust_kmeans_assign_collect, which kmeans_gpu_assign runs
-- over the query (a parallel plan collects in parallel workers, as
-- kmeans_gpu does); the aggregate hands its labels to the call running it
-- and is refused anywhere else.

CREATE FUNCTION gpuclust_kmeans_assign_transfn(internal, bigint, anyelement, int, jsonb)
	RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_assign_transfn'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION gpuclust_kmeans_assign_combinefn(internal, internal) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_assign_combinefn'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION gpuclust_kmeans_assign_finalfn(internal) RETURNS bigint
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_assign_finalfn'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE gpuclust_kmeans_assign_collect(id bigint, vec anyelement, k int, options jsonb) (
	SFUNC = gpuclust_kmeans_assign_transfn, STYPE = internal,
	FINALFUNC = gpuclust_kmeans_assign_finalfn,
	COMBINEFUNC = gpuclust_kmeans_assign_combinefn,
	SERIALFUNC = kmeans_gpu_serialfn, DESERIALFUNC = kmeans_gpu_deserialfn,
	PARALLEL = SAFE
);

-- A numeric id of kmeans_gpu_assign's query as the aggregate takes it:
-- whole, or an error (a cast to bigint would round it)
CREATE FUNCTION gpuclust_assign_id(numeric) RETURNS bigint
	AS 'MODULE_PATHNAME', 'gpuclust_assign_id'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- The planner's row estimate for kmeans_gpu_assign and pmedian_gpu_assign:
-- their query's own, where the query is a constant (one row out per row in)

CREATE FUNCTION gpuclust_assign_support(internal) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_assign_support'
	LANGUAGE C STRICT;

-- k is bigint, so that an int, a bigint (a count) and a smallint (as
-- drivers such as psycopg bind small integers) all reach this one function
CREATE FUNCTION kmeans_gpu_assign(query text, k bigint, options jsonb DEFAULT '{}',
	OUT id bigint, OUT cluster int, OUT distance float8)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_assign'
	LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE ROWS 1000
	SUPPORT gpuclust_assign_support;

-- Window form: each row's cluster within its partition

CREATE FUNCTION kmeans_gpu_cluster(vec float8[], k int, options jsonb) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec float8[], k int) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec real[], k int, options jsonb) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_real'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec real[], k int) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_real'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec integer[], k int, options jsonb) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_numeric'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec integer[], k int) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_numeric'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec bigint[], k int, options jsonb) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_numeric'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec bigint[], k int) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_numeric'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec smallint[], k int, options jsonb) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_numeric'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec smallint[], k int) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_numeric'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec numeric[], k int, options jsonb) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_numeric'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec numeric[], k int) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_numeric'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec anyarray, k bigint, options jsonb) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_numeric'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_gpu_cluster(vec anyarray, k bigint) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_kmeans_window_numeric'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

-- Which device gpuclust would use, and its memory

CREATE FUNCTION gpuclust_device_info() RETURNS jsonb
	AS 'MODULE_PATHNAME', 'gpuclust_device_info'
	LANGUAGE C VOLATILE PARALLEL SAFE;

-- The GPU service (gpuclust in shared_preload_libraries): whether it runs,
-- its process, how often it started, its GPUs, and the fits queued and
-- running

CREATE FUNCTION gpuclust_service_info() RETURNS jsonb
	AS 'MODULE_PATHNAME', 'gpuclust_service_info'
	LANGUAGE C VOLATILE PARALLEL SAFE;

-- Progress of the fits under way, one row per backend, in the style of
-- pg_stat_progress_*: reported on PostgreSQL 17 and later, and on 15 and 16
-- when gpuclust is in shared_preload_libraries (gpuclust_progress_enabled()
-- says whether fits report), else the view is empty.

CREATE FUNCTION gpuclust_progress_slots(OUT pid int4, OUT datid oid, OUT fit text,
										OUT phase text, OUT rows int8, OUT restart int4,
										OUT n_init int4, OUT iteration int4,
										OUT max_iter int4, OUT shift float8,
										OUT inertia float8, OUT device text,
										OUT gpu_id int4, OUT started timestamptz,
										OUT gpus int4, OUT resident_fraction float8,
										OUT streamed_bytes int8)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'gpuclust_progress_slots'
	LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION gpuclust_progress_enabled() RETURNS bool
	AS 'MODULE_PATHNAME', 'gpuclust_progress_enabled'
	LANGUAGE C STABLE PARALLEL SAFE;

CREATE VIEW gpuclust_progress AS
	SELECT s.pid, s.datid, d.datname, s.fit, s.phase, s.rows, s.restart, s.n_init,
		   s.iteration, s.max_iter, s.shift, s.inertia, s.device, s.gpu_id, s.gpus,
		   s.resident_fraction, s.streamed_bytes, s.started
	FROM gpuclust_progress_slots() s
		LEFT JOIN pg_catalog.pg_database d ON d.oid = s.datid;

GRANT SELECT ON gpuclust_progress TO PUBLIC;

-- p-median (k-medoids): medoid ids and vectors, objective, capacity
-- violation, penalty multipliers, statistics and timings.  Its text form
-- is a JSON object; stored like kmeans_model (STORAGE external).
CREATE TYPE pmedian_model;

CREATE FUNCTION pmedian_model_in(cstring) RETURNS pmedian_model
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_model_in'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION pmedian_model_out(pmedian_model) RETURNS cstring
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_model_out'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION pmedian_model_recv(internal) RETURNS pmedian_model
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_model_recv'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION pmedian_model_send(pmedian_model) RETURNS bytea
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_model_send'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE pmedian_model (
	INPUT = pmedian_model_in,
	OUTPUT = pmedian_model_out,
	RECEIVE = pmedian_model_recv,
	SEND = pmedian_model_send,
	INTERNALLENGTH = VARIABLE,
	ALIGNMENT = double,
	STORAGE = external
);

CREATE FUNCTION gpuclust_pmedian_model_jsonb(pmedian_model) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_model_jsonb'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (pmedian_model AS jsonb) WITH FUNCTION gpuclust_pmedian_model_jsonb(pmedian_model);

-- pmedian_gpu aggregates: (id, vector, p [, options]) and, capacitated,
-- (id, vector, demand, p, options); float8[] and real[] vectors

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, float8[], int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, float8[], int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, float8[], float8, int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, real[], int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_real'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, real[], int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_real'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, real[], float8, int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_real'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_finalfn(internal) RETURNS pmedian_model
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_finalfn'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

-- Parallel plans: a partial state is a handle on the rows one process
-- collected, with their ids and demands (in shared memory as for
-- kmeans_gpu); these functions take any pmedian_gpu state.
CREATE FUNCTION pmedian_gpu_combinefn(internal, internal) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_combinefn'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_serialfn(internal) RETURNS bytea
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_serialfn'
	LANGUAGE C STRICT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_deserialfn(bytea, internal) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_partial_deserialfn'
	LANGUAGE C STRICT PARALLEL SAFE;

CREATE AGGREGATE pmedian_gpu(id bigint, vec float8[], p int) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec float8[], p int, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec float8[], demand float8, p int, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec real[], p int) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec real[], p int, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec real[], demand float8, p int, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

-- Vectors of any number type, as for kmeans_gpu: ARRAY[1, 2] (integer[])
-- would otherwise be ambiguous between float8[] and real[].

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, integer[], int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, integer[], int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, integer[], float8, int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE pmedian_gpu(id bigint, vec integer[], p int) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec integer[], p int, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec integer[], demand float8, p int, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, bigint[], int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, bigint[], int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, bigint[], float8, int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE pmedian_gpu(id bigint, vec bigint[], p int) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec bigint[], p int, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec bigint[], demand float8, p int, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, smallint[], int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, smallint[], int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, smallint[], float8, int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE pmedian_gpu(id bigint, vec smallint[], p int) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec smallint[], p int, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec smallint[], demand float8, p int, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, numeric[], int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, numeric[], int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, numeric[], float8, int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE pmedian_gpu(id bigint, vec numeric[], p int) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec numeric[], p int, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec numeric[], demand float8, p int, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

-- A bigint p (count(*) / 100 is bigint), as kmeans_gpu takes a bigint k:
-- every array type, other element types getting an error naming the cast

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, anyarray, bigint) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, anyarray, bigint, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION pmedian_gpu_transfn(internal, bigint, anyarray, float8, bigint, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE pmedian_gpu(id bigint, vec anyarray, p bigint) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec anyarray, p bigint, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE pmedian_gpu(id bigint, vec anyarray, demand float8, p bigint, options jsonb) (
	SFUNC = pmedian_gpu_transfn, STYPE = internal,
	FINALFUNC = pmedian_gpu_finalfn, COMBINEFUNC = pmedian_gpu_combinefn,
	SERIALFUNC = pmedian_gpu_serialfn, DESERIALFUNC = pmedian_gpu_deserialfn,
	PARALLEL = SAFE
);

-- The id of the nearest medoid, by the model's metric

CREATE FUNCTION pmedian_predict(model pmedian_model, vec float8[]) RETURNS bigint
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_predict'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION pmedian_predict(model pmedian_model, vec real[]) RETURNS bigint
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_predict_real'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION pmedian_predict(model pmedian_model, vec integer[]) RETURNS bigint
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_predict_numeric'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION pmedian_predict(model pmedian_model, vec bigint[]) RETURNS bigint
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_predict_numeric'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION pmedian_predict(model pmedian_model, vec smallint[]) RETURNS bigint
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_predict_numeric'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION pmedian_predict(model pmedian_model, vec numeric[]) RETURNS bigint
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_predict_numeric'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- A model's fields without the medoids' coordinates (model::jsonb -
-- 'medoids')

CREATE FUNCTION pmedian_model_info(model pmedian_model) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_model_info'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Allocation as a relation: the query yields (id, vector [, demand])

-- p is bigint, so that an int, a bigint (a count) and a smallint (as
-- drivers such as psycopg bind small integers) all reach this one function
CREATE FUNCTION pmedian_gpu_assign(query text, p bigint, options jsonb DEFAULT '{}',
	OUT id bigint, OUT medoid_id bigint, OUT distance float8)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'gpuclust_pmedian_assign'
	LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE ROWS 1000
	SUPPORT gpuclust_assign_support;
-- Streaming k-means: mergeable summaries (STREAM divide and conquer).
-- Text form: base64 of a versioned, checksummed binary summary.
CREATE TYPE kmeans_stream;

CREATE FUNCTION kmeans_stream_in(cstring) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_in'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_out(kmeans_stream) RETURNS cstring
	AS 'MODULE_PATHNAME', 'gpuclust_stream_out'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_recv(internal) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_recv'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_send(kmeans_stream) RETURNS bytea
	AS 'MODULE_PATHNAME', 'gpuclust_stream_send'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE kmeans_stream (
	INPUT = kmeans_stream_in,
	OUTPUT = kmeans_stream_out,
	RECEIVE = kmeans_stream_recv,
	SEND = kmeans_stream_send,
	INTERNALLENGTH = VARIABLE,
	ALIGNMENT = int4,
	STORAGE = extended
);

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, float8[], int, jsonb) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, float8[], int) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, real[], int, jsonb) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_real'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, real[], int) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_real'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_final(kmeans_stream) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_finalfn'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

-- Two summaries as one (NULLs are ignored); also the combine function.
-- STABLE: the compaction runs on the device gpuclust.device picks.
CREATE FUNCTION kmeans_stream_merge(a kmeans_stream, b kmeans_stream) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_merge'
	LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_stream_state(vec float8[], k int, options jsonb) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_stream_state(vec float8[], k int) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_stream_state(vec real[], k int, options jsonb) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_stream_state(vec real[], k int) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

-- Vectors of any number type, as for kmeans_gpu

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, integer[], int, jsonb) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, integer[], int) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_stream_state(vec integer[], k int, options jsonb) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_stream_state(vec integer[], k int) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, bigint[], int, jsonb) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, bigint[], int) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_stream_state(vec bigint[], k int, options jsonb) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_stream_state(vec bigint[], k int) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, smallint[], int, jsonb) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, smallint[], int) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_stream_state(vec smallint[], k int, options jsonb) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_stream_state(vec smallint[], k int) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, numeric[], int, jsonb) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, numeric[], int) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_stream_state(vec numeric[], k int, options jsonb) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_stream_state(vec numeric[], k int) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

-- A bigint k, as for kmeans_gpu: every array type

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, anyarray, bigint, jsonb) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_transfn(kmeans_stream, anyarray, bigint) RETURNS kmeans_stream
	AS 'MODULE_PATHNAME', 'gpuclust_stream_transfn_numeric'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_stream_state(vec anyarray, k bigint, options jsonb) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_stream_state(vec anyarray, k bigint) (
	SFUNC = kmeans_stream_transfn, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

CREATE AGGREGATE kmeans_stream_merge(kmeans_stream) (
	SFUNC = kmeans_stream_merge, STYPE = kmeans_stream,
	FINALFUNC = kmeans_stream_final, COMBINEFUNC = kmeans_stream_merge,
	PARALLEL = SAFE
);

-- Weighted k-means over a summary: a model for kmeans_predict and friends.
-- VOLATILE, as the fits are: the model records the device gpuclust.device
-- picks and the time each phase took.  NULL options are the defaults.
CREATE FUNCTION kmeans_stream_model(state kmeans_stream, options jsonb DEFAULT '{}') RETURNS kmeans_model
	AS 'MODULE_PATHNAME', 'gpuclust_stream_model'
	LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION kmeans_stream_info(state kmeans_stream) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'gpuclust_stream_info'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Catch-only forms (src/argument_errors.c): the commonest slips resolve to
-- these, which raise an error naming the fix, instead of to "function is
-- not unique" (42725) or "does not exist" (42883).  No correct call
-- resolves to them: a correct call matches a real form exactly at more
-- arguments (the vector's array type, an int or bigint k, jsonb options),
-- and where it matches none exactly (an untyped query or vector) the
-- untyped literal prefers the real form's text.
--   vec text, k int: an untyped vector literal such as '{1,2}' (which
--     matches every array form equally) or a text column;
--   vec "any", k double precision, options "any": a numeric or float k
--     (round(sqrt(count(*)))), options of type text, pgvector's types
--     without gpuclust_pgvector, and, as before, arrays of non-numbers
--     (double precision is the preferred numeric type, so an int k with
--     such an array comes here rather than being ambiguous);
--   assign forms, query "any", k numeric: a numeric k.  An untyped query
--     prefers the real form's text, and numeric, in bigint's category and
--     not preferred, leaves an untyped k (a driver's parameter) to it too.
--     A double precision k (preferred) would take an int k from an untyped
--     query, and text options would take untyped ones: neither is caught.

CREATE FUNCTION gpuclust_argument_error_transfn(internal, text, int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;
CREATE FUNCTION gpuclust_argument_error_transfn(internal, text, int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;
CREATE FUNCTION gpuclust_argument_error_transfn(internal, "any", double precision) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;
CREATE FUNCTION gpuclust_argument_error_transfn(internal, "any", double precision, "any") RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;
CREATE FUNCTION gpuclust_argument_error_kmeans_final(internal) RETURNS kmeans_model
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE kmeans_gpu(vec text, k int) (
	SFUNC = gpuclust_argument_error_transfn, STYPE = internal,
	FINALFUNC = gpuclust_argument_error_kmeans_final
);
CREATE AGGREGATE kmeans_gpu(vec text, k int, options jsonb) (
	SFUNC = gpuclust_argument_error_transfn, STYPE = internal,
	FINALFUNC = gpuclust_argument_error_kmeans_final
);
CREATE AGGREGATE kmeans_gpu(vec "any", k double precision) (
	SFUNC = gpuclust_argument_error_transfn, STYPE = internal,
	FINALFUNC = gpuclust_argument_error_kmeans_final
);
CREATE AGGREGATE kmeans_gpu(vec "any", k double precision, options "any") (
	SFUNC = gpuclust_argument_error_transfn, STYPE = internal,
	FINALFUNC = gpuclust_argument_error_kmeans_final
);

CREATE FUNCTION kmeans_gpu_cluster(vec text, k int) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;
CREATE FUNCTION kmeans_gpu_cluster(vec text, k int, options jsonb) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;
CREATE FUNCTION kmeans_gpu_cluster(vec "any", k double precision) RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;
CREATE FUNCTION kmeans_gpu_cluster(vec "any", k double precision, options "any") RETURNS int
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C VOLATILE WINDOW CALLED ON NULL INPUT PARALLEL SAFE;

-- pmedian_gpu: the id and the vector "any" (a uuid or text id is named)
CREATE FUNCTION gpuclust_argument_error_transfn(internal, bigint, text, int) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;
CREATE FUNCTION gpuclust_argument_error_transfn(internal, bigint, text, int, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;
CREATE FUNCTION gpuclust_argument_error_transfn(internal, "any", "any", double precision) RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;
CREATE FUNCTION gpuclust_argument_error_transfn(internal, "any", "any", double precision, "any")
	RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;
CREATE FUNCTION gpuclust_argument_error_transfn(internal, "any", "any", "any", double precision, "any")
	RETURNS internal
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;
CREATE FUNCTION gpuclust_argument_error_pmedian_final(internal) RETURNS pmedian_model
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE AGGREGATE pmedian_gpu(id bigint, vec text, p int) (
	SFUNC = gpuclust_argument_error_transfn, STYPE = internal,
	FINALFUNC = gpuclust_argument_error_pmedian_final
);
CREATE AGGREGATE pmedian_gpu(id bigint, vec text, p int, options jsonb) (
	SFUNC = gpuclust_argument_error_transfn, STYPE = internal,
	FINALFUNC = gpuclust_argument_error_pmedian_final
);
CREATE AGGREGATE pmedian_gpu(id "any", vec "any", p double precision) (
	SFUNC = gpuclust_argument_error_transfn, STYPE = internal,
	FINALFUNC = gpuclust_argument_error_pmedian_final
);
CREATE AGGREGATE pmedian_gpu(id "any", vec "any", p double precision, options "any") (
	SFUNC = gpuclust_argument_error_transfn, STYPE = internal,
	FINALFUNC = gpuclust_argument_error_pmedian_final
);
CREATE AGGREGATE pmedian_gpu(id "any", vec "any", demand "any", p double precision, options "any") (
	SFUNC = gpuclust_argument_error_transfn, STYPE = internal,
	FINALFUNC = gpuclust_argument_error_pmedian_final
);

CREATE FUNCTION kmeans_gpu_assign(query "any", k numeric,
	OUT id bigint, OUT cluster int, OUT distance float8)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE;
CREATE FUNCTION kmeans_gpu_assign(query "any", k numeric, options jsonb,
	OUT id bigint, OUT cluster int, OUT distance float8)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE;
CREATE FUNCTION pmedian_gpu_assign(query "any", p numeric,
	OUT id bigint, OUT medoid_id bigint, OUT distance float8)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE;
CREATE FUNCTION pmedian_gpu_assign(query "any", p numeric, options jsonb,
	OUT id bigint, OUT medoid_id bigint, OUT distance float8)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'gpuclust_argument_error'
	LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE;
