/*-------------------------------------------------------------------------
 *
 * pmedian_glue.h
 *	  Declarations of the p-median SQL glue: the options, the input (rows
 *	  with their ids and demands), the pmedian_model type, and the fit
 *	  driver that the aggregate and the set-returning function share.
 *
 * IDENTIFICATION
 *	  src/pmedian_glue.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PMEDIAN_GLUE_H
#define PMEDIAN_GLUE_H

#include "gpuclust.h"

/* n from which method auto uses three_phase (see bench/results) */
#define GC_PM_AUTO_THRESHOLD 200000

/* pmedian_options.c: the options jsonb */
extern void gc_parse_pmedian_options(Jsonb *options, int p, GcPmParams *params,
									 GcSmallGroups *small_groups);
extern void gc_check_pmedian_demand(const GcPmParams *params, bool with_demand);

/* pmedian_run.c: rows with ids and demands, and the fit */
typedef struct PmInput
{
	GcInput		input;			/* the vectors of non-NULL rows */
	bool		with_demand;
	int64		count;			/* ids (and demands) held */
	int64		capacity;
	int64	   *ids;			/* of the rows in input, in order */
	double	   *demand;			/* likewise, when with_demand */
	MemoryContext context;		/* where ids and demands live */
} PmInput;

extern void gc_pm_input_init(PmInput *in, bool with_demand, MemoryContext context);
extern void gc_pm_input_add(PmInput *in, bool id_null, int64 id, Datum vector,
							Oid elemtype, bool demand_null, double demand);
extern void gc_pm_input_add_ids(PmInput *in, const char *ids, const char *demand,
								int64 n);

/* pmedian_model.c: the pmedian_model type */
typedef struct PmedianModel
{
	int32		vl_len_;		/* varlena header */
	int16		version;
	int16		device;			/* GcDeviceKind */
	int16		metric;			/* GcPmMetric */
	int16		method;			/* GcPmMethod, as run */
	int16		improvement;	/* GcPmImprove, as run */
	int16		hard_capacity;	/* capacity_mode hard */
	int16		device_reason;	/* GcDeviceReason */
	int16		path;			/* GcFitPath */
	int32		p;
	int32		d;
	int32		iterations;
	int32		swaps;
	int32		converged;
	int32		capacitated;
	int32		p_requested;	/* p asked for (p is the p fitted: fewer where
								 * small_groups shrank it); 0 read as p */
	int64		rows;
	int64		null_rows;
	double		objective;
	double		violation;
	double		capacity;
	double		repair_cost;	/* hard capacity: objective after the repair
								 * less before it, of either sign */
	double		collect_ms;
	double		transfer_ms;
	double		seeding_ms;
	double		sample_ms;
	double		global_ms;
	double		small_ms;
	double		location_ms;
	double		improve_ms;
	double		repair_ms;
	/* int64 ids[p], double penalties[p], double medoids[p * d] */
	char		data[FLEXIBLE_ARRAY_MEMBER];
} PmedianModel;

#define PMEDIAN_MODEL_VERSION 4
#define PMEDIAN_MODEL_OLDEST_VERSION 3	/* binary forms read back to this one */
#define PmedianModelIds(m) ((int64 *) (m)->data)
#define PmedianModelPenalties(m) ((double *) ((m)->data + sizeof(int64) * (m)->p))
#define PmedianModelMedoids(m) ((double *) ((m)->data + (sizeof(int64) + sizeof(double)) * (m)->p))
#define PmedianModelBytes(p, d) \
	(offsetof(PmedianModel, data) + (sizeof(int64) + sizeof(double)) * (Size) (p) + \
	 sizeof(double) * (Size) (p) * (d))
#define PG_GETARG_PMEDIAN_MODEL(n) ((PmedianModel *) PG_DETOAST_DATUM(PG_GETARG_DATUM(n)))

extern PmedianModel *gc_pmedian_model_alloc(int p, int d);
extern void gc_pmedian_model_check(PmedianModel *m, int errcode_value);

/* pmedian_run.c */
extern PmedianModel *gc_run_pmedian(PmInput *in, const GcPmParams *asked,
									GcSmallGroups small_groups,
									double collect_ms, int32 *alloc,
									double *dist);

#endif							/* PMEDIAN_GLUE_H */
