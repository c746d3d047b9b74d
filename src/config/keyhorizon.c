/*
 * keyhorizon.c - a job's key horizon and the check against the services'
 * key retention (include/palisade/keyhorizon.h).
 *
 * Why it matters: a service forgets an idempotency key once its retention
 * passed (palisade-sink --key-retention); a request with that key arriving
 * later is a new effect, so a retry or a catch-up after that point applies
 * the effect twice.  The node config's sink.key_retention says what the
 * services promise; `palisade apply` and `palisade validate --config`
 * refuse a job that may still send its key later than that.
 *
 * The horizon is measured from the scheduled instant, the retention from
 * the key's last request: every request of an instant is sent at or after
 * the instant, so horizon <= retention keeps every request of the job
 * within the retention of the key's latest record.
 */
#include <stdio.h>
#include "palisade/err.h"
#include "palisade/keyhorizon.h"
#include "palisade/timefmt.h"

void pal_job_key_horizon(const pal_job_spec *s, pal_key_horizon *h)
{
	h->catchup_ms = s->misfire == PAL_MISFIRE_FIRE_ALL || s->misfire == PAL_MISFIRE_FIRE_ONCE
				? s->catchup_window_ms
				: 0;
	int64_t n = s->max_attempts > 1 ? s->max_attempts - 1 : 0;
	h->retry_ms = n * (s->timeout_ms + s->backoff_max_ms);
	h->bound_ms = 0;
	if (s->max_age_ms > 0)
		h->bound_ms = s->max_age_ms;
	if (s->deadline_ms > 0 && (h->bound_ms == 0 || s->deadline_ms < h->bound_ms))
		h->bound_ms = s->deadline_ms;
	int64_t start = h->catchup_ms + h->retry_ms;
	if (h->bound_ms > 0 && h->bound_ms < start)
		start = h->bound_ms;
	h->total_ms = start + s->timeout_ms;
}

int pal_job_key_horizon_check(const pal_job_spec *s, int64_t key_retention_ms, pal_diags *d)
{
	pal_key_horizon h;
	pal_job_key_horizon(s, &h);
	if (h.total_ms <= key_retention_ms)
		return 0;
	char t[32], c[32], r[32], b[32], k[32], to[32];
	pal_fmt_duration(h.total_ms, t, sizeof t);
	pal_fmt_duration(h.catchup_ms, c, sizeof c);
	pal_fmt_duration(h.retry_ms, r, sizeof r);
	pal_fmt_duration(h.bound_ms, b, sizeof b);
	pal_fmt_duration(key_retention_ms, k, sizeof k);
	pal_fmt_duration(s->timeout_ms, to, sizeof to);
	pal_diags_addf(d, s->file, s->line, s->col,
		       "job \"%s\" may send the same idempotency key up to %s after its instant "
		       "(catch-up %s + retries %s%s%s, + timeout %s), longer than "
		       "sink.key_retention %s: a retry after the service forgot the key would "
		       "apply the effect twice; hint: set retry.max_age or deadline, shorten "
		       "misfire.catchup_window or the retries, or raise sink.key_retention "
		       "(and palisade-sink --key-retention)",
		       s->id, t, c, r, h.bound_ms ? ", cut to " : "", h.bound_ms ? b : "", to, k);
	return PAL_EINVAL;
}
