/*
 * planbatch.c - the plain values of planbatch.h: a planning version borrowed
 * from a spec, and freeing a tick's batch.
 */
#include <stdlib.h>
#include <string.h>
#include "palisade/planbatch.h"

pal_plan_version pal_plan_version_of_spec(const pal_job_spec *s, int version,
					  int64_t effective_from)
{
	return (pal_plan_version){ .version = version,
				   .effective_from = effective_from,
				   .cron = s->cron,
				   .timezone = s->timezone,
				   .dst = s->dst,
				   .has_start = s->has_start,
				   .has_end = s->has_end,
				   .start = s->start,
				   .end = s->end,
				   .exclusions = s->exclusions,
				   .n_exclusions = s->n_exclusions,
				   .calendars = s->calendars,
				   .n_calendars = s->n_calendars,
				   .misfire = s->misfire,
				   .catchup_window_ms = s->catchup_window_ms,
				   .max_catchup = s->max_catchup,
				   .partitions = s->partitions,
				   .priority = s->priority,
				   .tenant = s->tenant,
				   .group = s->group,
				   .created_at = PAL_NO_TIME };
}

void pal_plan_batch_free(pal_plan_batch *b)
{
	free(b->trig);
	free(b->refs);
	free(b->mis);
	free(b->act);
	free(b->tick);
	free(b->failed);
	memset(b, 0, sizeof *b);
}
