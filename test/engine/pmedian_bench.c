/*-------------------------------------------------------------------------
 *
 * pmedian_bench.c
 *	  Times one p-median fit of the CPU reference backend for
 *	  bench/pmedian_cpu.py: rows from a text file (one row a line,
 *	  coordinates separated by blanks), default options (the method and
 *	  the swap improvement chosen by the default rules), and prints one
 *	  line of key=value fields: the phases' times, the objective to the
 *	  last bit, and a hash of the medoids, then the medoids themselves.
 *
 *	  pmedian_bench FILE P [THREADS]
 *	      THREADS: the CPU threads (0, the default: every online core);
 *	      PM_IMPROVE=none|full overrides the improvement rule; PM_METRIC=0..3
 *	      the metric (GcPmMetric, Euclidean by default)
 *
 * IDENTIFICATION
 *	  test/engine/pmedian_bench.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "pmedian_engine.h"

/* Rows of a text file, d from its first line */
static double *
read_rows(const char *path, int64_t *n, int *d)
{
	FILE	   *in = fopen(path, "r");
	char		line[65536];
	int64_t		cap = 1024;
	double	   *x = NULL;

	*n = 0;
	*d = 0;
	while (in && fgets(line, sizeof(line), in))
	{
		char	   *p = line,
				   *end;
		int			j = 0;

		if (x == NULL)
		{
			for (double v = strtod(p, &end); end != p; v = strtod(p, &end), (*d)++)
				p = end, (void) v;
			p = line;
			x = malloc(sizeof(double) * cap * *d);
		}
		if (*n == cap)
			x = realloc(x, sizeof(double) * (cap *= 2) * *d);
		for (; j < *d; j++, p = end)
			x[*n * *d + j] = strtod(p, &end);
		(*n)++;
	}
	if (in)
		fclose(in);
	return x;
}

int
main(int argc, char **argv)
{
	GcPmParams	params = {0};
	GcPmResult	result = {0};
	GcError		err = {0};
	GcRows		rows;
	const char *improve = getenv("PM_IMPROVE");
	int64_t		n;
	int			d;
	double	   *x,
				t0;
	uint64_t	hash = 0;
	GcStatus	status;

	if (argc < 3)
	{
		fprintf(stderr, "usage: pmedian_bench FILE P [THREADS]\n");
		return 2;
	}
	x = read_rows(argv[1], &n, &d);
	if (x == NULL || n == 0)
	{
		fprintf(stderr, "no rows in %s\n", argv[1]);
		return 2;
	}
	load_rows(&rows, x, n, d, NULL, plain_alloc, free);
	params.p = atoi(argv[2]);
	params.metric = getenv("PM_METRIC") ? (GcPmMetric) atoi(getenv("PM_METRIC")) : GC_PM_EUCLIDEAN;
	params.max_iter = 100;
	params.polish_iter = 100;
	params.penalty_step = 2.0;
	params.method = GC_PM_AUTO;
	params.auto_threshold = 200000;	/* GC_PM_AUTO_THRESHOLD of the glue */
	params.sample_factor = 30.0;
	params.cpu_threads = argc > 3 ? atoi(argv[3]) : 0;
	if (improve)
		params.improve = strcmp(improve, "none") == 0 ? GC_PM_IMPROVE_NONE : GC_PM_IMPROVE_FULL;
	result.medoids = malloc(sizeof(int32_t) * params.p);
	result.penalties = malloc(sizeof(double) * params.p);
	t0 = gc_now_ms();
	status = gc_pmedian_fit(&gc_pmedian_cpu_backend, &rows, NULL, &params, &result, &err);
	t0 = gc_now_ms() - t0;
	if (status != GC_OK)
	{
		fprintf(stderr, "fit failed: %s\n", err.message);
		return 1;
	}
	for (int m = 0; m < params.p; m++)
		hash = gc_mix64(hash ^ (uint64_t) result.medoids[m]);
	printf("pmedian_bench n=%lld d=%d p=%d threads=%d metric=%s method=%s improve=%s "
		   "objective=%.17g medoids_hash=%016llx iterations=%d swaps=%d total_ms=%.1f "
		   "transfer_ms=%.1f seeding_ms=%.1f sample_ms=%.1f location_ms=%.1f improve_ms=%.1f\n",
		   (long long) n, d, params.p, params.cpu_threads, gc_pmedian_metric_name(params.metric),
		   gc_pmedian_method_name(result.method), gc_pmedian_improve_name(result.improvement),
		   result.objective, (unsigned long long) hash, result.iterations, result.swaps, t0,
		   result.timings.transfer_ms, result.timings.seeding_ms, result.timings.sample_ms,
		   result.timings.location_ms, result.timings.improve_ms);
	printf("medoids");
	for (int m = 0; m < params.p; m++)
		printf(" %d", result.medoids[m]);
	printf("\n");
	free(result.medoids);
	free(result.penalties);
	gc_rows_release(&rows);
	free(x);
	return 0;
}
