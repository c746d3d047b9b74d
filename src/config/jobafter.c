/*
 * jobafter.c - a job's `after:`: the upstream jobs whose runs start it.
 *
 * Each upstream is checked here on its own (a name, the event it waits for,
 * how long it may lag); whether the upstreams exist and form no cycle is a
 * question of the whole set, answered by the loader's graph (aftergraph.c).
 */
#include <stdlib.h>
#include <string.h>
#include "jobfile_int.h"

#define MAX_AFTER 16

/* One upstream of `after`: {job: NAME, on: succeeded|finished, within: DURATION}. */
static void after_item(struct jctx *c, const pal_ynode *it, pal_after *a)
{
	static const char *const keys[] = {"job", "on", "within"};
	const pal_ynode *jn = NULL;
	int e;

	a->on = PAL_AFTER_SUCCEEDED;
	a->within_ms = MS_D;
	if (pal_yexpect_map(c->doc, it, "after", c->diags) != 0) {
		c->errors++;
		return;
	}
	for (size_t i = 0; i < it->n; i++) {
		const pal_ynode *kn = it->keys[i], *v = it->vals[i];

		if (!strcmp(kn->str, "job")) {
			jn = v;
		} else if (!strcmp(kn->str, "on")) {
			if (pal_yget_enum(c->doc, v, "after.on", pal_after_on_names,
					  N(pal_after_on_names), &e, c->diags) == 0)
				a->on = (pal_after_on)e;
			else
				c->errors++;
		} else if (!strcmp(kn->str, "within")) {
			CHECK(c, pal_yget_duration(c->doc, v, "after.within", 1 * MS_S, 90 * MS_D,
						   false, &a->within_ms, c->diags));
		} else {
			const char *hint = pal_suggest(kn->str, keys, N(keys));

			if (hint)
				pal__job_diag(
				    c, kn, "unknown key \"%.64s\" in after (did you mean \"%s\"?)",
				    kn->str, hint);
			else
				pal__job_diag(
				    c, kn,
				    "unknown key \"%.64s\" in after; hint: an upstream has the "
				    "keys job, on and within",
				    kn->str);
		}
	}
	if (!jn) {
		pal__job_diag(c, it, "after is missing the required key \"job\"");
		return;
	}
	if (jn->kind == PAL_YNODE_SCALAR && (strchr(jn->str, '/') || strchr(jn->str, ':'))) {
		pal__job_diag(
		    c, jn,
		    "after.job: \"%.64s\" names a job of another cluster; hint: an upstream "
		    "must be a job of the cluster the file is applied to",
		    jn->str);
		return;
	}
	pal__job_name(c, jn, "after.job", NAME_MAX_LEN, &a->job);
	a->line = jn->line;
	a->col = jn->col;
}

void pal__job_key_after(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	pal_after *a;

	c->n_after = v;
	if (pal_yexpect_seq(c->doc, v, "after", c->diags) != 0) {
		c->errors++;
		return;
	}
	if (v->n == 0 || v->n > MAX_AFTER) {
		pal__job_diag(c, v, "after: expected 1 to %d upstream jobs, got %zu", MAX_AFTER,
			      v->n);
		return;
	}
	a = calloc(v->n, sizeof *a);
	if (!a) {
		pal__job_diag(c, v, "after: out of memory");
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		after_item(c, v->vals[i], &a[i]);
		for (size_t k = 0; a[i].job && k < i; k++)
			if (a[k].job && !strcmp(a[k].job, a[i].job))
				pal__job_diag(c, v->vals[i],
					      "after: upstream \"%s\" is listed twice", a[i].job);
	}
	s->after = a;
	s->n_after = v->n;
}

/*
 * A job has a schedule or `after`, not both: this version has no way to
 * say how the two would combine (either's instants? both at once?), so a
 * file must pick one.  A dependent job gets the never-firing cron
 * PAL_AFTER_CRON, so that the schedule planner leaves it alone.
 */
void pal__job_after_schedule(struct jctx *c, const pal_ynode *jn, pal_job_spec *s)
{
	const pal_ynode *sched = pal_ynode_get(jn, "schedule");

	if (!c->n_after) {
		if (!sched)
			pal__job_diag(c, jn, "job is missing the required key \"schedule\"");
		return;
	}
	if (sched) {
		pal__job_diag(
		    c, sched,
		    "a job with \"after\" may not also have a \"schedule\": its instants are "
		    "its upstreams' (this version cannot combine the two); hint: remove "
		    "the schedule, or make a job of its own for it");
		return;
	}
	free(s->cron);
	s->cron = strdup(PAL_AFTER_CRON);
	if (!s->cron)
		pal__job_diag(c, jn, "out of memory");
}
