/*-------------------------------------------------------------------------
 *
 * pmedian_options.c
 *	  The options argument of the p-median functions: a jsonb object with
 *	  metric, max_iter, seed, capacity, capacity_mode, penalty_step, method,
 *	  improve, the three-phase parameters sample_factor, big_clusters and
 *	  polish_iter, and small_groups (small_groups.c).  Unknown keys, values
 *	  of the wrong type and values out of range are errors.
 *
 * IDENTIFICATION
 *	  src/pmedian_options.c
 *
 *-------------------------------------------------------------------------
 */
#include "pmedian_glue.h"
#include "cpu_threads_setting.h"

#include <math.h>

#include "utils/builtins.h"
#include "utils/numeric.h"

#define VALID_OPTIONS_HINT "Valid options are metric, max_iter, seed, capacity, capacity_mode, penalty_step, method, improve, sample_factor, big_clusters, polish_iter and small_groups."

static double
option_number(const char *key, JsonbValue *v, const char *expected)
{
	double		x;

	if (v->type != jbvNumeric)
		gc_option_error(key, expected);
	x = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
										   NumericGetDatum(v->val.numeric)));
	if (!isfinite(x))
		gc_option_error(key, expected);
	return x;
}

static double
option_positive(const char *key, JsonbValue *v)
{
	double		x = option_number(key, v, "a positive number");

	if (!(x > 0.0))
		gc_option_error(key, "a positive number");
	return x;
}

static int
option_int(const char *key, JsonbValue *v, int min, int max, const char *expected)
{
	double		x = option_number(key, v, expected);

	if (x != floor(x) || x < min || x > max)
		gc_option_error(key, expected);
	return (int) x;
}

/*
 * Index of the string v among names, or an error naming the choices
 */
static int
option_choice(const char *key, JsonbValue *v, const char *const *names, int count,
			  const char *hint)
{
	char	   *s;

	if (v->type != jbvString)
		gc_option_error(key, "a string");
	s = pnstrdup(v->val.string.val, v->val.string.len);
	for (int i = 0; i < count; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown %s \"%s\"", key, s),
			 errhint("%s", hint)));
	return 0;
}

/* What the options loop fills in */
typedef struct PmOptions
{
	GcPmParams *params;
	GcSmallGroups *small_groups;
	bool		polish_given;
	bool		mode_given;		/* capacity_mode */
} PmOptions;

/* One pmedian option; false if the key is unknown */
static bool
parse_option(const char *name, JsonbValue *v, void *arg)
{
	PmOptions  *po = arg;
	GcPmParams *params = po->params;
	static const char *const metrics[] = {"euclidean", "sqeuclidean", "manhattan", "cosine"};
	static const char *const methods[] = {"auto", "location_allocation", "three_phase"};

	if (strcmp(name, "metric") == 0)
		params->metric = (GcPmMetric) option_choice(name, v, metrics, 4,
													"Use euclidean, sqeuclidean, manhattan or cosine.");
	else if (strcmp(name, "method") == 0)
		params->method = (GcPmMethod) option_choice(name, v, methods, 3,
													"Use auto, location_allocation or three_phase.");
	else if (strcmp(name, "max_iter") == 0)
		params->max_iter = option_int(name, v, 1, 1000000, "an integer between 1 and 1000000");
	else if (strcmp(name, "polish_iter") == 0)
	{
		params->polish_iter = option_int(name, v, 0, 1000000, "an integer between 0 and 1000000");
		po->polish_given = true;
	}
	else if (strcmp(name, "big_clusters") == 0)
		params->big_clusters = option_int(name, v, 1, GC_MAX_K, "a positive integer");
	else if (strcmp(name, "seed") == 0)
		params->seed = (uint64) gc_option_integer(name, v, PG_INT64_MIN, PG_INT64_MAX,
												  "an integer");
	else if (strcmp(name, "capacity") == 0)
	{
		params->capacity = option_positive(name, v);
		params->capacitated = true;
	}
	else if (strcmp(name, "penalty_step") == 0)
		params->penalty_step = option_positive(name, v);
	else if (strcmp(name, "sample_factor") == 0)
		params->sample_factor = option_positive(name, v);
	else if (strcmp(name, "capacity_mode") == 0)
	{
		static const char *const modes[] = {"soft", "hard"};

		params->hard_capacity = option_choice(name, v, modes, 2, "Use soft or hard.") == 1;
		po->mode_given = true;
	}
	else if (strcmp(name, "improve") == 0)
	{
		if (v->type == jbvBool)
			params->improve = v->val.boolean ? GC_PM_IMPROVE_FULL : GC_PM_IMPROVE_NONE;
		else if (v->type == jbvString && v->val.string.len == 4 &&
				 strncmp(v->val.string.val, "auto", 4) == 0)
			params->improve = GC_PM_IMPROVE_AUTO;
		else
			gc_option_error(name, "true, false or \"auto\"");
	}
	else if (strcmp(name, "small_groups") == 0)
		*po->small_groups = gc_small_groups_option(name, v);
	else
		return false;
	return true;
}

/*
 * Fill params with p, the defaults, and whatever options overrides, and
 * small_groups with the option of that name (default "error")
 */
void
gc_parse_pmedian_options(Jsonb *options, int p, GcPmParams *params,
						 GcSmallGroups *small_groups)
{
	PmOptions	po = {params, small_groups, false, false};

	if (p < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("p must be at least 1"),
				 errdetail("p is %d.", p)));
	if (p > GC_MAX_K)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("p must be at most %d", GC_MAX_K)));
	memset(params, 0, sizeof(*params));
	*small_groups = GC_SMALL_GROUPS_ERROR;
	params->p = p;
	params->metric = GC_PM_EUCLIDEAN;
	params->max_iter = 100;
	params->penalty_step = 2.0;
	params->method = GC_PM_AUTO;
	params->auto_threshold = GC_PM_AUTO_THRESHOLD;
	params->sample_factor = 30.0;
	params->cpu_threads = gc_cpu_threads_setting();
	params->interrupted = gc_interrupted;

	gc_for_each_option(options, VALID_OPTIONS_HINT, parse_option, &po);
	if (!po.polish_given)
		params->polish_iter = params->max_iter;
	if (po.mode_given && !params->capacitated)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"capacity_mode\" needs option \"capacity\""),
				 errhint("Give the capacity of a cluster, e.g. '{\"capacity\": 300, \"capacity_mode\": \"hard\"}'.")));
	if (params->improve == GC_PM_IMPROVE_FULL && params->capacitated)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("option \"improve\" is not supported with a capacity"),
				 errhint("The swap improvement works on the uncapacitated problem; drop one of the two.")));
	if (params->improve == GC_PM_IMPROVE_FULL && p > GC_PM_MAX_IMPROVE_P)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("option \"improve\" supports p up to %d", GC_PM_MAX_IMPROVE_P),
				 errdetail("p is %d.", p)));
}

/*
 * A capacity goes with demands, and only with them
 */
void
gc_check_pmedian_demand(const GcPmParams *params, bool with_demand)
{
	if (with_demand && !params->capacitated)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"capacity\" is required with demands"),
				 errhint("Give the capacity of a cluster, e.g. '{\"capacity\": 300}', or drop the demand argument.")));
	if (!with_demand && params->capacitated)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"capacity\" needs demands"),
				 errhint("Pass each row's demand, or drop the capacity option.")));
}
