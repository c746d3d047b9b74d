/*
 * depends.c - planning of dependent jobs (`after:`) by the controller that
 * leads their shard (docs/controller.md, "Dependencies").
 *
 * After each committed tick of a led shard, one fenced statement
 * (palisade_plan_after, sql/functions/) decides the instants of the
 * shard's dependent jobs whose upstreams' triggers ended since the last
 * look: a trigger of the job for the instant, or a misfire row with reason
 * upstream_failed or upstream_late, and the job's dependency watermark
 * moved over what it decided, all in that statement.  The decisions live
 * in SQL because they are a join of the upstreams' trigger states; this
 * file only drives the call, counts and logs.
 *
 * A shard without dependent jobs is looked at again after AFTER_IDLE_MS or
 * as soon as a job of it is applied (the controller's notification), so
 * most shards cost one statement every few seconds, not every tick.
 * Runs on the controller thread; owns nothing.
 */
#include <glib.h>
#include "palisade/clock.h"
#include "palisade/log.h"
#include "palisade/metrics.h"
#include "controller_int.h"

#define AFTER_IDLE_MS 5000

void pal_controller__declare_after_metrics(pal_metrics *m)
{
	pal_metric_declare(m, "palisade_controller_after_planned_total", PAL_METRIC_COUNTER,
			   "triggers of dependent jobs (after:) inserted");
	pal_metric_declare(m, "palisade_controller_after_misfires_total", PAL_METRIC_COUNTER,
			   "instants of dependent jobs recorded as misfires (upstream_failed, "
			   "upstream_late)");
	pal_metric_inc(m, "palisade_controller_after_planned_total", NULL, 0);
	pal_metric_inc(m, "palisade_controller_after_misfires_total", NULL, 0);
}

void pal_controller__plan_after(pal_controller *c, int s)
{
	led_shard *l = &c->led[s];
	int64_t now = pal_mono_ms(), planned = 0, misfired = 0;
	int jobs = 0;
	char err[1024];

	if (!l->planner || now < l->after_next_ms)
		return;
	int rc =
	    pal_store_plan_after(c->st, s, l->epoch, &jobs, &planned, &misfired, err, sizeof err);
	if (rc == PAL_ESTALE) {
		pal_controller__fenced(c, s, err);
		return;
	}
	if (rc) {
		/* the next tick tries again; its watermark did not move */
		pal_log(PAL_LOG_WARN, "controller.after_failed", "{s:i, s:s}", "shard", s, "error",
			err);
		return;
	}
	l->after_next_ms = jobs ? 0 : now + AFTER_IDLE_MS;
	if (planned && c->m)
		pal_metric_inc(c->m, "palisade_controller_after_planned_total", NULL,
			       (double)planned);
	if (misfired && c->m)
		pal_metric_inc(c->m, "palisade_controller_after_misfires_total", NULL,
			       (double)misfired);
	if (planned || misfired)
		pal_log(PAL_LOG_DEBUG, "controller.after_planned", "{s:i, s:I, s:i, s:I, s:I}",
			"shard", s, "epoch", (json_int_t)l->epoch, "jobs", jobs, "triggers",
			(json_int_t)planned, "misfires", (json_int_t)misfired);
}
