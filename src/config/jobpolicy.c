/*
 * jobpolicy.c - how a job's instants are run: the misfire policy, retries
 * and their backoff, partitions, suspension and shadow mode.
 *
 * The overlap policy and the limits that are plain numbers (priority,
 * max_in_flight, deadline) are rows of the job's own table (jobkeys.c).
 */
#include <stdint.h>
#include <string.h>
#include "jobfile_int.h"
#include "palisade/timefmt.h"

static void k_backoff_max(struct jctx *c, const pal_ynode *v, pal_job_spec *s);

static const struct keydef misfire_keys[] = {
    {"policy", K_ENUM, OFF(misfire), 0, 0, misfire_names, N(misfire_names), "misfire policy", NULL,
     NULL, false},
    {"catchup_window", K_DURATION, OFF(catchup_window_ms), 1 * MS_S, 90 * MS_D, NULL, 0, NULL, NULL,
     NULL, false},
    {"max_catchup", K_INT32, OFF(max_catchup), 1, 100000, NULL, 0, NULL, NULL, NULL, false},
};
const struct section pal__job_misfire_section = {"misfire", misfire_keys, N(misfire_keys)};

static const struct keydef backoff_keys[] = {
    {"initial", K_DURATION, OFF(backoff_initial_ms), 1, 1 * MS_H, NULL, 0, NULL, NULL, NULL, false},
    {"max", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_backoff_max, false},
    {"multiplier", K_NUMBER, OFF(backoff_multiplier), 1, 10, NULL, 0, NULL, NULL, NULL, false},
    {"jitter", K_ENUM, OFF(jitter), 0, 0, jitter_names, N(jitter_names), "jitter", NULL, NULL,
     false},
};
const struct section pal__job_backoff_section = {"retry.backoff", backoff_keys, N(backoff_keys)};

static const struct keydef retry_keys[] = {
    {"max_attempts", K_INT32, OFF(max_attempts), 1, 1000, NULL, 0, NULL, NULL, NULL, false},
    {"backoff", K_SECTION, 0, 0, 0, NULL, 0, NULL, &pal__job_backoff_section, NULL, false},
    {"max_age", K_DURATION0, OFF(max_age_ms), 1 * MS_S, 90 * MS_D, NULL, 0, NULL, NULL, NULL,
     false},
};
const struct section pal__job_retry_section = {"retry", retry_keys, N(retry_keys)};

void pal__job_key_misfire(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	int e;

	/* shorthand: `misfire: skip` is `misfire: {policy: skip}` */
	if (v->kind == PAL_YNODE_SCALAR) {
		if (pal_yget_enum(c->doc, v, "misfire policy", misfire_names, N(misfire_names), &e,
				  c->diags) == 0)
			s->misfire = (pal_misfire_policy)e;
		else
			c->errors++;
		return;
	}
	pal__job_walk(c, &pal__job_misfire_section, v, s);
}

void pal__job_key_partitions(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	int64_t n;

	c->n_partitions = v;
	if (pal_yget_int(c->doc, v, "partitions", 1, 1024, &n, c->diags) == 0)
		s->partitions = (int32_t)n;
	else
		c->errors++;
}

static void k_backoff_max(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	c->n_backoff_max = v;
	CHECK(c, pal_yget_duration(c->doc, v, "max", 1, 1 * MS_D, false, &s->backoff_max_ms,
				   c->diags));
}

void pal__job_key_suspend(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	static const char *const names[] = {"false", "true"};
	int e;

	if (pal_yget_enum(c->doc, v, "suspend (true or false)", names, 2, &e, c->diags) == 0)
		s->suspend = e == 1;
	else
		c->errors++;
}

/* mode: live (default) or shadow: apply puts the job in shadow (docs/jobs.md) */
void pal__job_key_mode(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	static const char *const names[] = {"live", "shadow"};
	int e;

	if (pal_yget_enum(c->doc, v, "mode (live or shadow)", names, 2, &e, c->diags) == 0)
		s->shadow = e == 1;
	else
		c->errors++;
}

/* Backoff max against initial, for the checks that span keys. */
void pal__job_check_backoff(struct jctx *c, pal_job_spec *s)
{
	if (c->n_backoff_max && s->backoff_max_ms < s->backoff_initial_ms) {
		char a[32], b[32];

		pal__job_diag(c, c->n_backoff_max,
			      "retry.backoff.max (%s) is less than initial (%s)",
			      pal_fmt_duration(s->backoff_max_ms, a, sizeof a),
			      pal_fmt_duration(s->backoff_initial_ms, b, sizeof b));
	}
}
