/*-------------------------------------------------------------------------
 *
 * small_groups.c
 *	  What a fit does with a group (GROUP BY group, window partition or
 *	  assign query) that holds fewer rows than the clusters asked for: the
 *	  option small_groups of the k-means and p-median functions, and the
 *	  one decision gc_group_clusters that every fit over rows takes.
 *	  "error" (the default) raises an error naming the row count and the
 *	  option, "shrink" fits one cluster per row, "null" gives no model.
 *
 * IDENTIFICATION
 *	  src/small_groups.c
 *
 *-------------------------------------------------------------------------
 */
#include "gc_options.h"

static const char *const small_groups_names[] = {"error", "shrink", "null"};	/* by GcSmallGroups */

/*
 * The small_groups option's value, or an error naming the choices
 */
GcSmallGroups
gc_small_groups_option(const char *key, JsonbValue *v)
{
	if (v->type == jbvString)
		for (int i = 0; i < lengthof(small_groups_names); i++)
			if (strlen(small_groups_names[i]) == (size_t) v->val.string.len &&
				strncmp(small_groups_names[i], v->val.string.val, v->val.string.len) == 0)
				return (GcSmallGroups) i;
	gc_option_error(key, "\"error\", \"shrink\" or \"null\"");
}

/*
 * The number of clusters to fit where what ("k" or "p") asks for asked
 * and the group (GROUP BY group, window partition, assign query or
 * summary) holds count of its items (noun: "rows", "summary points"):
 * asked itself when count is at least asked, else as mode says, count
 * ("shrink") or 0 ("null": the group has no model)
 */
int
gc_group_clusters(const char *what, int asked, int64 count, const char *noun,
				  GcSmallGroups mode)
{
	if (asked <= count)
		return asked;
	if (mode == GC_SMALL_GROUPS_SHRINK)
		return (int) count;
	if (mode == GC_SMALL_GROUPS_NULL)
		return 0;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s (%d) is greater than the number of %s (" INT64_FORMAT ")",
					what, asked, noun, count),
			 errdetail("Option \"small_groups\" is \"error\" (the default): a group of fewer %s than %s fails the query.",
					   noun, what),
			 errhint("Ask for fewer clusters, or set option \"small_groups\" to \"shrink\" (fit one cluster per %s) or \"null\" (no model for such a group).",
					 strcmp(noun, "rows") == 0 ? "row" : "point")));
}
