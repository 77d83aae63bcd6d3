/*-------------------------------------------------------------------------
 *
 * options.c
 *	  The options argument of the k-means functions: a jsonb object whose
 *	  keys are max_iter, tol, init, seed, n_init, algorithm, precision,
 *	  metric, small_groups, max_cluster_size, max_cluster_size_factor,
 *	  levels and refine_iter.  Unknown keys, values of the wrong type and
 *	  values out of range are errors.
 *
 * IDENTIFICATION
 *	  src/options.c
 *
 *-------------------------------------------------------------------------
 */
#include "gpuclust.h"
#include "cpu_threads_setting.h"

#include "gc_math.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/numeric.h"

#define VALID_OPTIONS_HINT "Valid options are max_iter, tol, init, init_candidates, seed, n_init, algorithm, precision, metric, small_groups, max_cluster_size, max_cluster_size_factor, levels and refine_iter."

/*
 * An option of the wrong type or out of range
 */
void
gc_option_error(const char *key, const char *expected)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("option \"%s\" must be %s", key, expected)));
}

static double
option_number(const char *key, JsonbValue *v, const char *expected)
{
	if (v->type != jbvNumeric)
		gc_option_error(key, expected);
	return DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
											  NumericGetDatum(v->val.numeric)));
}

/*
 * An integer option from min to max: a JSON number with no fraction,
 * compared exactly ("seed": 1.7 and 1.0000000000000000001 are refused, not
 * rounded), or 22023 saying what was expected
 */
int64
gc_option_integer(const char *key, JsonbValue *v, int64 min, int64 max,
				  const char *expected)
{
	double		x = option_number(key, v, expected);
	Datum		num = NumericGetDatum(v->val.numeric);
	Datum		whole = DirectFunctionCall2(numeric_trunc, num, Int32GetDatum(0));

	if (x != floor(x) || DatumGetInt32(DirectFunctionCall2(numeric_cmp, num, whole)) != 0)
		gc_option_error(key, expected);
	if (min == PG_INT64_MIN && max == PG_INT64_MAX)
	{
		/* the whole int64 range, compared exactly (a double is not) */
		if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, num,
											  NumericGetDatum(int64_to_numeric(min)))) < 0 ||
			DatumGetInt32(DirectFunctionCall2(numeric_cmp, num,
											  NumericGetDatum(int64_to_numeric(max)))) > 0)
			gc_option_error(key, expected);
		return DatumGetInt64(DirectFunctionCall1(numeric_int8, num));
	}
	if (x < (double) min || x > (double) max)
		gc_option_error(key, expected);
	return (int64) x;
}

/*
 * Read init given as a 2-D array of numbers, one row per centroid
 */
static void
parse_init_centroids(JsonbValue *v, GcKmeansOptions *opts)
{
	const char *expected = "\"kmeans++\", \"kmeans||\", \"random\" or an array of centroids, each an array of numbers";
	JsonbIterator *it;
	JsonbValue	elem;
	JsonbIteratorToken tok;
	int			depth = 0,
				cols = 0,
				capacity = 64,
				count = 0;

	if (v->type != jbvBinary)
		gc_option_error("init", expected);
	opts->init_values = palloc(sizeof(double) * capacity);
	opts->init_rows = 0;
	opts->init_cols = -1;
	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &elem, false)) != WJB_DONE)
	{
		switch (tok)
		{
			case WJB_BEGIN_ARRAY:
				if (++depth > 2)
					gc_option_error("init", expected);
				cols = 0;
				break;
			case WJB_END_ARRAY:
				if (--depth == 1)
				{
					if (opts->init_cols >= 0 && cols != opts->init_cols)
						ereport(ERROR,
								(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								 errmsg("centroids given in option \"init\" must all have the same dimension")));
					opts->init_cols = cols;
					opts->init_rows++;
				}
				break;
			case WJB_ELEM:
				{
					double		x;

					if (depth != 2)
						gc_option_error("init", expected);
					x = option_number("init", &elem, expected);
					if (!isfinite(x) || fabs(x) > GC_MAX_MAGNITUDE)
						gc_option_error("init", "made of finite numbers of magnitude at most 1e150");
					if (count == capacity)
					{
						capacity *= 2;
						opts->init_values = repalloc_huge(opts->init_values,
														  sizeof(double) * capacity);
					}
					opts->init_values[count++] = x;
					cols++;
					break;
				}
			default:
				gc_option_error("init", expected);
		}
	}
	if (opts->init_rows == 0 || opts->init_cols == 0)
		gc_option_error("init", expected);
	opts->params.init = GC_INIT_GIVEN;
	opts->params.init_centroids = opts->init_values;
}

static void
parse_init(JsonbValue *v, GcKmeansOptions *opts)
{
	if (v->type == jbvString)
	{
		char	   *s = pnstrdup(v->val.string.val, v->val.string.len);

		if (strcmp(s, "kmeans++") == 0)
			opts->params.init = GC_INIT_KMEANSPP;
		else if (strcmp(s, "kmeans||") == 0)
			opts->params.init = GC_INIT_KMEANS_PARALLEL;
		else if (strcmp(s, "random") == 0)
			opts->params.init = GC_INIT_RANDOM;
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown init method \"%s\"", s),
					 errhint("Use \"kmeans++\", \"kmeans||\", \"random\" or an array of initial centroids.")));
	}
	else
		parse_init_centroids(v, opts);
}

/*
 * The index of v's string in names, or an error listing them
 */
static int
option_choice(const char *key, JsonbValue *v, const char *const *names, int count,
			  const char *expected)
{
	if (v->type == jbvString)
		for (int i = 0; i < count; i++)
			if (strlen(names[i]) == (size_t) v->val.string.len &&
				strncmp(names[i], v->val.string.val, v->val.string.len) == 0)
				return i;
	gc_option_error(key, expected);
	return 0;
}

static const char *const algorithm_names[] = {"auto", "lloyd", "pruned"};
/* by GcPrecision */
static const char *const precision_names[] = {"float32", "float64", "tf32", "bf16", "fp16", "auto"};
static const char *const metric_names[] = {"euclidean", "cosine"};

const char *
gc_metric_name(GcMetric metric)
{
	return metric_names[metric];
}

const char *
gc_precision_name(GcPrecision precision)
{
	return precision_names[precision];
}

/*
 * Call fn for every key of the options object (nothing when options is
 * NULL); a key fn does not know is an error listing the valid ones
 */
void
gc_for_each_option(Jsonb *options, const char *valid_hint, GcOptionFn fn, void *arg)
{
	JsonbIterator *it;
	JsonbValue	key,
				v;
	JsonbIteratorToken tok;

	if (options == NULL)
		return;
	if (!JB_ROOT_IS_OBJECT(options))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options must be a jsonb object"),
				 errhint("%s", valid_hint)));
	it = JsonbIteratorInit(&options->root);
	while ((tok = JsonbIteratorNext(&it, &key, true)) != WJB_DONE)
	{
		char	   *name;

		if (tok != WJB_KEY)
			continue;
		name = pnstrdup(key.val.string.val, key.val.string.len);
		JsonbIteratorNext(&it, &v, true);
		if (!fn(name, &v, arg))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown option \"%s\"", name),
					 errhint("%s", valid_hint)));
	}
}

/* One kmeans option into opts; false if the key is unknown */
static bool
kmeans_option(const char *name, JsonbValue *v, void *arg)
{
	GcKmeansOptions *opts = arg;
	GcKmeansParams *params = &opts->params;

	if (strcmp(name, "max_iter") == 0)
		params->max_iter = (int) gc_option_integer(name, v, 1, 1000000,
												"an integer between 1 and 1000000");
	else if (strcmp(name, "n_init") == 0)
	{
		params->n_init = (int) gc_option_integer(name, v, 1, 1000,
											  "an integer between 1 and 1000");
		opts->n_init_given = true;
	}
	else if (strcmp(name, "seed") == 0)
		params->seed = (uint64) gc_option_integer(name, v, PG_INT64_MIN, PG_INT64_MAX,
											   "an integer");
	else if (strcmp(name, "tol") == 0)
	{
		params->tol = option_number(name, v, "a non-negative number");
		if (!(params->tol >= 0.0) || !isfinite(params->tol))
			gc_option_error(name, "a non-negative number");
	}
	else if (strcmp(name, "init") == 0)
		parse_init(v, opts);
	else if (strcmp(name, "init_candidates") == 0)
	{
		params->init_candidates = (int) gc_option_integer(name, v, 1, GC_MAX_INIT_CANDIDATES,
													   "an integer between 1 and 64");
		opts->init_candidates_given = true;
	}
	else if (strcmp(name, "algorithm") == 0)
		params->algorithm = (GcAlgorithm) option_choice(name, v, algorithm_names, 3,
														"\"auto\", \"lloyd\" or \"pruned\"");
	else if (strcmp(name, "precision") == 0)
		params->precision = (GcPrecision) option_choice(name, v, precision_names,
														lengthof(precision_names),
														"\"float32\", \"float64\", \"tf32\", \"bf16\", \"fp16\" or \"auto\"");
	else if (strcmp(name, "metric") == 0)
	{
		params->metric = (GcMetric) option_choice(name, v, metric_names, 2,
												  "\"euclidean\" or \"cosine\"");
		opts->metric_given = true;
	}
	else if (strcmp(name, "small_groups") == 0)
		opts->small_groups = gc_small_groups_option(name, v);
	else if (strcmp(name, "max_cluster_size") == 0)
		params->max_cluster_size = gc_option_integer(name, v, 1, PG_INT64_MAX,
												  "an integer of at least 1");
	else if (strcmp(name, "max_cluster_size_factor") == 0)
	{
		params->max_cluster_size_factor = option_number(name, v, "a number of at least 1");
		if (!(params->max_cluster_size_factor >= 1.0) ||
			!isfinite(params->max_cluster_size_factor))
			gc_option_error(name, "a number of at least 1");
	}
	else if (strcmp(name, "levels") == 0)
		params->levels = (int) gc_option_integer(name, v, 1, 2, "1 or 2");
	else if (strcmp(name, "refine_iter") == 0)
	{
		params->refine_iter = (int) gc_option_integer(name, v, 0, 1000000,
												   "an integer between 0 and 1000000");
		opts->refine_iter_given = true;
	}
	else
		return false;
	return true;
}

/*
 * A k argument declared integer or bigint as an int; a bigint out of the
 * int range is clamped just past the limits, which then reject it
 */
int
gc_k_value(Datum k, Oid type)
{
	int64		value;

	if (type == INT2OID)
		return DatumGetInt16(k);
	if (type != INT8OID)
		return DatumGetInt32(k);
	value = DatumGetInt64(k);
	return (int) Max(Min(value, (int64) GC_MAX_K + 1), 0);
}

/* Argument argno of the call, a k or p declared integer or bigint, as gc_k_value reads it */
int
gc_k_argument(FunctionCallInfo fcinfo, int argno)
{
	return gc_k_value(PG_GETARG_DATUM(argno), get_fn_expr_argtype(fcinfo->flinfo, argno));
}

/*
 * Fill opts with k, the defaults, and whatever options overrides
 */
void
gc_parse_kmeans_options(Jsonb *options, int k, GcKmeansOptions *opts)
{
	GcKmeansParams *params = &opts->params;

	if (k < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be at least 1")));
	if (k > GC_MAX_K)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("k must be at most %d", GC_MAX_K)));

	memset(opts, 0, sizeof(*opts));
	params->k = k;
	params->max_iter = 300;
	params->tol = 1e-4;
	params->init = GC_INIT_AUTO;	/* gc_seed_method: k-means++ or k-means|| */
	params->seed = 0;
	params->n_init = 1;
	params->algorithm = GC_ALGORITHM_AUTO;
	params->precision = GC_PRECISION_FLOAT32;
	params->metric = GC_METRIC_EUCLIDEAN;
	params->interrupted = gc_interrupted;
	params->cpu_threads = gc_cpu_threads_setting();
	params->levels = 1;
	params->refine_iter = 2;

	gc_for_each_option(options, VALID_OPTIONS_HINT, kmeans_option, opts);
	if (params->init == GC_INIT_GIVEN && opts->n_init_given && params->n_init > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"n_init\" must be 1 when \"init\" gives the centroids")));
	/* candidates per step ask for k-means++ where init is left out */
	if (opts->init_candidates_given && params->init == GC_INIT_AUTO)
		params->init = GC_INIT_KMEANSPP;
	if (opts->init_candidates_given && params->init != GC_INIT_KMEANSPP)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"init_candidates\" applies only to \"init\": \"kmeans++\"")));
	if (opts->refine_iter_given && params->levels < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"refine_iter\" applies only to \"levels\": 2")));
	if (params->levels >= 2 && params->init == GC_INIT_GIVEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"init\" cannot give the centroids of a two-level fit"),
				 errhint("A two-level fit seeds its coarse and fine fits itself: leave \"init\" out or name a seeding.")));
}

/*
 * Check that centroids given in init are k rows of d values
 */
void
gc_check_init_shape(GcKmeansOptions *opts, int d)
{
	if (opts->params.init != GC_INIT_GIVEN)
		return;
	if (opts->init_rows != opts->params.k || opts->init_cols != d)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"init\" must give %d centroids of dimension %d",
						opts->params.k, d),
				 errdetail("It gives %d centroids of dimension %d.",
						   opts->init_rows, opts->init_cols)));
	if (opts->params.metric == GC_METRIC_COSINE)
		for (int c = 0; c < opts->init_rows; c++)
			if (!gc_unit_normalize(opts->init_values + (size_t) c * d, d))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("centroid %d given in option \"init\" is a zero vector", c + 1),
						 errhint("Under the cosine metric every centroid needs a direction.")));
}

#define VALID_STREAM_OPTIONS_HINT "Valid options are block_rows, centres, metric and seed."

typedef struct StreamOptions
{
	GcStreamHeader *shape;
	int			k;
	int64		m;				/* centres, -1 until given */
	int64		block;			/* block_rows, -1 until given */
} StreamOptions;

/* One kmeans_stream_state option; false if the key is unknown */
static bool
stream_option(const char *name, JsonbValue *v, void *arg)
{
	StreamOptions *so = arg;

	if (strcmp(name, "centres") == 0)
		so->m = gc_option_integer(name, v, so->k, GC_STREAM_MAX_CENTRES,
							   psprintf("an integer between k (%d) and %d", so->k,
										GC_STREAM_MAX_CENTRES));
	else if (strcmp(name, "block_rows") == 0)
		so->block = gc_option_integer(name, v, 2, GC_STREAM_MAX_BLOCK,
								   psprintf("an integer between 2 and %d", GC_STREAM_MAX_BLOCK));
	else if (strcmp(name, "seed") == 0)
		so->shape->seed = (uint64) gc_option_integer(name, v, PG_INT64_MIN, PG_INT64_MAX,
												  "an integer");
	else if (strcmp(name, "metric") == 0)
		so->shape->cosine = option_choice(name, v, metric_names, 2,
										  "\"euclidean\" or \"cosine\"") == GC_METRIC_COSINE;
	else
		return false;
	return true;
}

/*
 * The shape of a new stream summary from k and the options of
 * kmeans_stream_state: centres (m) defaults to 10 k and block_rows to
 * the larger of 65536 and 4 m; whether block_rows was given
 */
bool
gc_parse_stream_options(Jsonb *options, int k, GcStreamHeader *shape)
{
	StreamOptions so = {shape, k, -1, -1};
	bool		block_given;

	if (k < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be at least 1")));
	if (k > GC_STREAM_MAX_CENTRES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("k must be at most %d for a kmeans_stream summary", GC_STREAM_MAX_CENTRES)));
	memset(shape, 0, sizeof(*shape));
	shape->k = k;
	gc_for_each_option(options, VALID_STREAM_OPTIONS_HINT, stream_option, &so);
	if (so.m < 0)
		so.m = Min((int64) 10 * k, GC_STREAM_MAX_CENTRES);
	block_given = so.block >= 0;
	if (!block_given)
		so.block = Min(Max((int64) 65536, 4 * so.m), GC_STREAM_MAX_BLOCK);
	if (so.block < 2 * so.m)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"block_rows\" (" INT64_FORMAT ") must be at least twice the centres kept per block (" INT64_FORMAT ")",
						so.block, so.m),
				 errhint("Raise block_rows or lower centres.")));
	shape->m = (int) so.m;
	shape->block_rows = (int) so.block;
	return block_given;
}
