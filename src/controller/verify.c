/*
 * verify.c - recompute the plan set and compare it with triggers and
 * misfires (see include/palisade/verify.h).  Independent of the planner: it
 * walks each version's schedule from its effective_from, so a planner bug
 * shows up as missing or unexpected instants.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "palisade/schedule.h"
#include "palisade/timefmt.h"
#include "palisade/horizoncheck.h"
#include "palisade/verify.h"

#define MAX_SAMPLES 20

static void sample(pal_verify_report *r, const char *kind, const char *job, int64_t at, int part,
		   int rows)
{
	json_t *a = json_object_get(r->samples, kind);
	if (!a) {
		a = json_array();
		json_object_set_new(r->samples, kind, a);
	}
	if (json_array_size(a) >= MAX_SAMPLES)
		return;
	char ts[32];
	pal_fmt_rfc3339(at, ts, sizeof ts);
	json_t *o = json_pack("{s:s, s:s, s:i}", "job", job, "at", ts, "partition", part);
	if (rows)
		json_object_set_new(o, "rows", json_integer(rows));
	json_array_append_new(a, o);
}

static bool covered(json_t *misfires, int64_t at, int part)
{
	size_t i;
	json_t *m;
	json_array_foreach(misfires, i, m)
	{
		int64_t f = json_integer_value(json_array_get(m, 0));
		int64_t t = json_integer_value(json_array_get(m, 1));
		json_t *p = json_array_get(m, 2);
		if (at >= f && at <= t && (json_is_null(p) || json_integer_value(p) == part))
			return true;
	}
	return false;
}

/* The rows of MISFIRES the planner wrote (new reference): an instant it
 * decided has one of them or a trigger, never both nor two (a quarantine
 * row, a forbid skip or a dependent job's row may stand beside a trigger). */
static json_t *decided_rows(json_t *misfires)
{
	static const char *const planner[] = {"missed", "outside_window", "over_max_catchup",
					      "excluded"};
	json_t *out = json_array(), *m;
	size_t i;
	json_array_foreach(misfires, i, m)
	{
		const char *why = json_string_value(json_array_get(m, 3));
		for (size_t k = 0; why && k < sizeof planner / sizeof *planner; k++)
			if (!strcmp(why, planner[k]))
				json_array_append(out, m);
	}
	return out;
}

/* How many rows of ROWS cover instant AT of partition PART. */
static int covering(json_t *rows, int64_t at, int part)
{
	size_t i;
	json_t *m;
	int n = 0;
	json_array_foreach(rows, i, m)
	{
		int64_t f = json_integer_value(json_array_get(m, 0));
		int64_t t = json_integer_value(json_array_get(m, 1));
		json_t *p = json_array_get(m, 2);
		n += at >= f && at <= t && (json_is_null(p) || json_integer_value(p) == part);
	}
	return n;
}

typedef struct inst {
	int64_t at;
	int part;
} inst;

static int cmp_inst(const void *a, const void *b)
{
	const inst *x = a, *y = b;
	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return x->part - y->part;
}

/* Whether VER's schedule is a one-shot (`at`). */
static bool one_shot(json_t *ver)
{
	return json_object_get(json_object_get(json_object_get(ver, "spec"), "schedule"), "at");
}

/* *ENDED: VER has an `end` and no instant after FROM (a stop, from there). */
static int ended(json_t *ver, int64_t from, bool *out, char *err, size_t errlen)
{
	pal_job_spec spec;
	pal_schedule *sc;
	int64_t x;
	bool excl;
	int rc = pal_job_spec_from_canonical(json_object_get(ver, "spec"), &spec, err, errlen);
	if (!rc && (rc = pal_schedule_open(&spec, &sc, err, errlen)))
		pal_job_spec_clear(&spec);
	if (rc)
		return rc;
	*out = spec.has_end && pal_schedule_next_from(sc, from, from, &x, &excl) != PAL_OK;
	pal_schedule_close(sc);
	pal_job_spec_clear(&spec);
	return PAL_OK;
}

/*
 * Where version I of VERSIONS takes over, as the planner decides it
 * (switch_point in src/controller/planner.c): its stored effective_from,
 * unless the version before it has an `end` and no instant after that
 * point (it had ended: a job deleted and applied again, a job whose `end`
 * passed); then
 * at the latest of that version's last instant, its activation and when
 * version I was stored; when version I or the one before it is a one-shot
 * (`at`), at the latter two, also where the stored effective_from is below
 * them (the planner takes them above its watermark too).  A version no controller activated before
 * the job was applied again (effective_from null, kept by with_stops), and
 * the version after it, take over when they were stored (never before the
 * switch point of the version before them), as the planner activates them.
 * Recomputed rather than read, so that a switch point stored too late (the
 * instants between the apply and it planned by no version) shows as
 * missing instants.
 */
static int switch_from(json_t *versions, size_t i, int64_t *lo, char *err, size_t errlen)
{
	json_t *ver = json_array_get(versions, i);
	json_t *created = json_object_get(ver, "created_at");
	bool stop = !json_is_integer(json_object_get(ver, "effective_from"));
	*lo = json_integer_value(json_object_get(ver, "effective_from"));
	if (!i || !json_is_integer(created))
		return PAL_OK;
	json_t *prev = json_array_get(versions, i - 1);
	int64_t plo = json_integer_value(json_object_get(prev, "effective_from"));
	int rc;
	bool prev_stop = !json_is_integer(json_object_get(prev, "effective_from"));
	if (prev_stop && (rc = switch_from(versions, i - 1, &plo, err, errlen)))
		return rc;
	int64_t at = json_integer_value(created) > plo ? json_integer_value(created) : plo, x;
	if (stop || prev_stop) {
		/* a version no controller activated in time (with_stops), and
		 * the version after it: each takes over when it was stored */
		*lo = at;
		return PAL_OK;
	}
	if (one_shot(ver) || one_shot(prev)) {
		/* a one-shot or a job changed to or from one, also where the
		 * stored effective_from is below it */
		*lo = at;
		return PAL_OK;
	}
	if (at >= *lo)
		return PAL_OK;
	pal_job_spec spec;
	pal_schedule *sc;
	rc = pal_job_spec_from_canonical(json_object_get(prev, "spec"), &spec, err, errlen);
	if (rc)
		return rc;
	if ((rc = pal_schedule_open(&spec, &sc, err, errlen))) {
		pal_job_spec_clear(&spec);
		return rc;
	}
	bool excl;
	if (spec.has_end && pal_schedule_next_from(sc, plo, *lo, &x, &excl) != PAL_OK) {
		while (pal_schedule_next_from(sc, plo, at, &x, &excl) == PAL_OK && x <= *lo)
			at = x;
		*lo = at;
	}
	pal_schedule_close(sc);
	pal_job_spec_clear(&spec);
	return PAL_OK;
}

/*
 * VERSIONS as the planner judges them (switch_point in
 * src/controller/planner.c): the activated ones, and of the versions that
 * no controller activated (pal_store_activated_versions: stored between
 * two activated ones, passed over by a controller of 0.3.0) those the
 * planner activates with the version after them, as if a controller had
 * seen them in time: each one that is a stop (no instant after it was
 * stored or after the switch point of the version before), follows one,
 * is or follows a one-shot, or comes before one (that one takes over at
 * its own apply, not where this one would).  Each takes over when it was
 * stored.  A new
 * reference in *OUT.
 */
static int with_stops(json_t *versions, json_t **out, char *err, size_t errlen)
{
	json_t *keep = json_array(), *ver, *c = NULL;
	size_t i;
	int64_t clo = 0;
	int rc = PAL_OK;
	json_array_foreach(versions, i, ver)
	{
		json_t *eff = json_object_get(ver, "effective_from");
		if (json_is_integer(eff)) {
			clo = json_integer_value(eff);
			c = ver;
			json_array_append(keep, ver);
			continue;
		}
		if (!c)
			continue;
		int64_t from = json_integer_value(json_object_get(ver, "created_at"));
		if (from < clo)
			from = clo;
		bool stop = false, c_stop = false;
		if ((rc = ended(ver, from, &stop, err, errlen)) ||
		    (rc = ended(c, from, &c_stop, err, errlen)))
			break;
		json_t *next = json_array_get(versions, i + 1);
		if (stop || c_stop || one_shot(ver) || one_shot(c) || (next && one_shot(next))) {
			clo = from;
			c = ver;
			json_array_append(keep, ver);
		}
	}
	if (rc) {
		json_decref(keep);
		return rc;
	}
	*out = keep;
	return PAL_OK;
}

/* Take one pair from the request's budget *LEFT (NULL: unbounded); false
 * when it is spent (PAL_ETOOBIG: pal_verify says the bound). */
static bool spend(int64_t *left)
{
	return !left || (*left)-- > 0;
}

/* Expected (instant, partition) pairs of one job in [from, to]; with
 * INSTANTS, each instant once (partition 0) and none that is excluded.
 * Each pair spends one of *LEFT: past it, PAL_ETOOBIG with nothing kept. */
static int plan_set(json_t *all, bool instants, int64_t from, int64_t to, int64_t *left, inst **out,
		    size_t *n, char *err, size_t errlen)
{
	size_t cap = 256, k = 0;
	json_t *versions;
	int rc = with_stops(all, &versions, err, errlen);
	if (rc)
		return rc;
	inst *v = malloc(cap * sizeof *v);
	if (!v) {
		json_decref(versions);
		return PAL_ENOMEM;
	}
	size_t nv = json_array_size(versions);
	for (size_t i = 0; i < nv && !rc; i++) {
		json_t *ver = json_array_get(versions, i);
		int64_t lo, hi = INT64_MAX;
		if ((rc = switch_from(versions, i, &lo, err, errlen)) ||
		    (i + 1 < nv && (rc = switch_from(versions, i + 1, &hi, err, errlen))))
			break;
		if (hi <= lo || hi < from || lo >= to)
			continue;
		pal_job_spec spec;
		if ((rc = pal_job_spec_from_canonical(json_object_get(ver, "spec"), &spec, err, errlen)))
			break;
		pal_schedule *sc;
		if ((rc = pal_schedule_open(&spec, &sc, err, errlen))) {
			pal_job_spec_clear(&spec);
			break;
		}
		int64_t t = lo > from - 1 ? lo : from - 1;
		int64_t x;
		bool excl;
		while (pal_schedule_next_from(sc, lo, t, &x, &excl) == PAL_OK && x <= to &&
		       x <= hi) {
			t = x;
			if (instants && excl)
				continue;
			for (int p = 0; p < (instants ? 1 : spec.partitions); p++) {
				if (!spend(left)) {
					rc = PAL_ETOOBIG;
					break;
				}
				if (k == cap) {
					inst *nv2 = realloc(v, (cap *= 2) * sizeof *v);
					if (!nv2) {
						rc = PAL_ENOMEM;
						break;
					}
					v = nv2;
				}
				v[k++] = (inst){ x, p };
			}
			if (rc)
				break;
		}
		pal_schedule_close(sc);
		pal_job_spec_clear(&spec);
	}
	json_decref(versions);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*n = k;
	return PAL_OK;
}

/* Whether instant AT falls to a version of VERSIONS with `after`: the
 * instants of a dependent job are its upstreams' (checked by
 * after_instants below), so its triggers are never "unexpected". */
static bool dependent_at(json_t *versions, int64_t at)
{
	size_t nv = json_array_size(versions);

	for (size_t i = 0; i < nv; i++) {
		json_t *ver = json_array_get(versions, i);
		if (!json_is_integer(json_object_get(ver, "effective_from")))
			continue; /* a stop no controller activated: it has no instant */
		int64_t lo = json_integer_value(json_object_get(ver, "effective_from"));
		int64_t hi = INT64_MAX;
		for (size_t k = i + 1; k < nv && hi == INT64_MAX; k++) {
			json_t *e = json_object_get(json_array_get(versions, k), "effective_from");
			if (json_is_integer(e))
				hi = json_integer_value(e);
		}
		if (at > lo && at <= hi)
			return json_object_get(json_object_get(ver, "spec"), "after") != NULL;
	}
	return false;
}

static int verify_job(pal_store *st, json_t *job, int64_t from, int64_t to, int64_t *left,
		      pal_verify_report *r, char *err, size_t errlen)
{
	const char *id = json_string_value(json_object_get(job, "job_id"));
	json_t *versions = json_object_get(job, "versions");
	inst *exp = NULL;
	size_t nexp = 0;
	int rc = PAL_OK;
	if (json_array_size(versions)) {
		rc = plan_set(versions, false, from, to, left, &exp, &nexp, err, errlen);
		if (rc)
			return rc;
	}
	json_t *trig, *mis;
	rc = pal_store_planned(st, id, from, to, &trig, &mis, err, errlen);
	if (rc) {
		free(exp);
		return rc;
	}
	json_t *dec = decided_rows(mis);
	r->jobs++;
	r->expected += (int64_t)nexp;
	size_t nt = json_array_size(trig), i = 0, j = 0;
	if (nexp) /* qsort(NULL, 0, ...) is undefined (a job with no active version) */
		qsort(exp, nexp, sizeof *exp, cmp_inst);
	/* Merge the two ascending lists. */
	while (i < nexp || j < nt) {
		json_t *t = j < nt ? json_array_get(trig, j) : NULL;
		inst got = { 0, 0 };
		int rows = 0;
		if (t) {
			got.at = json_integer_value(json_array_get(t, 0));
			got.part = (int)json_integer_value(json_array_get(t, 1));
			rows = (int)json_integer_value(json_array_get(t, 2));
		}
		int c = !t ? -1 : i >= nexp ? 1 : cmp_inst(&exp[i], &got);
		if (c < 0) {
			if (covered(mis, exp[i].at, exp[i].part)) {
				r->misfired++;
				int d = covering(dec, exp[i].at, exp[i].part);
				if (d > 1) {
					r->duplicates += d - 1;
					sample(r, "decided_twice", id, exp[i].at, exp[i].part, d);
				}
			} else {
				r->missing++;
				sample(r, "missing", id, exp[i].at, exp[i].part, 0);
			}
			i++;
		} else if (c > 0 && dependent_at(versions, got.at)) {
			r->triggered++;
			if (rows > 1) {
				r->duplicates += rows - 1;
				sample(r, "duplicates", id, got.at, got.part, rows);
			}
			j++;
		} else if (c > 0) {
			r->unexpected++;
			sample(r, "unexpected", id, got.at, got.part, rows);
			j++;
		} else {
			r->triggered++;
			if (rows > 1) {
				r->duplicates += rows - 1;
				sample(r, "duplicates", id, got.at, got.part, rows);
			}
			int d = json_array_size(dec) ? covering(dec, got.at, got.part) : 0;
			if (d) {
				r->duplicates += d;
				sample(r, "decided_twice", id, got.at, got.part, rows + d);
			}
			i++, j++;
		}
	}
	json_decref(dec);
	json_decref(trig);
	json_decref(mis);
	free(exp);
	return PAL_OK;
}

/*
 * Jobs that should have been activated and were not: every instant of their
 * latest version after it was stored (and after FROM) is missing.
 */
static int never_activated(pal_store *st, int64_t from, int64_t to, const char *job_id,
			   int64_t grace, int64_t *left, pal_verify_report *r, char *err,
			   size_t errlen)
{
	json_t *jobs;
	int rc = pal_store_never_activated_json(st, job_id, to - grace, &jobs, err, errlen);
	if (rc)
		return rc;
	size_t i;
	json_t *j;
	json_array_foreach(jobs, i, j)
	{
		const char *id = json_string_value(json_object_get(j, "job_id"));
		int64_t created = json_integer_value(json_object_get(j, "created_at"));
		pal_job_spec spec;
		if ((rc = pal_job_spec_from_canonical(json_object_get(j, "spec"), &spec, err, errlen)))
			break;
		pal_schedule *sc;
		if ((rc = pal_schedule_open(&spec, &sc, err, errlen))) {
			pal_job_spec_clear(&spec);
			break;
		}
		int64_t t = created > from - 1 ? created : from - 1, x, n = 0, first = 0;
		bool excl;
		while (!rc && pal_schedule_next_from(sc, created, t, &x, &excl) == PAL_OK &&
		       x <= to) {
			t = x;
			if (!n)
				first = x;
			for (int p = 0; !excl && p < spec.partitions && !rc; p++, n++)
				if (!spend(left))
					rc = PAL_ETOOBIG;
		}
		r->never_activated++;
		r->expected += n;
		r->missing += n;
		if (n)
			sample(r, "never_activated", id, first, 0, (int)n);
		pal_schedule_close(sc);
		pal_job_spec_clear(&spec);
		if (rc)
			break;
	}
	json_decref(jobs);
	return rc;
}

/*
 * The instants of the first upstreams' misfire ranges (not excluded) that
 * the dependent jobs have decided: their upstream's schedule walked over
 * each range, appended to JOBS (the dependent job) and ATS.
 */
static int upstream_misfired(pal_store *st, int64_t from, int64_t to, const char *job_id,
			     int64_t *left, GPtrArray *jobs, GArray *ats, json_t **keep, char *err,
			     size_t errlen)
{
	json_t *deps, *d;
	size_t i;
	int rc = pal_store_after_upstream_ranges(st, job_id, from, to, &deps, err, errlen);

	if (rc)
		return rc;
	json_array_foreach(deps, i, d)
	{
		json_t *up, *range;
		size_t k;
		if ((rc = pal_store_activated_versions(
			 st, json_string_value(json_object_get(d, "up")), &up, err, errlen)))
			break;
		json_t *versions = json_object_get(json_array_get(up, 0), "versions");
		json_array_foreach(json_object_get(d, "ranges"), k, range)
		{
			inst *v = NULL;
			size_t nv = 0;
			if (!json_array_size(versions))
				break;
			rc = plan_set(versions, true, json_integer_value(json_array_get(range, 0)),
				      json_integer_value(json_array_get(range, 1)), left, &v, &nv,
				      err, errlen);
			if (rc)
				break;
			for (size_t x = 0; x < nv; x++) {
				g_ptr_array_add(
				    jobs, (gpointer)json_string_value(json_object_get(d, "job")));
				g_array_append_val(ats, v[x].at);
			}
			free(v);
		}
		json_decref(up);
		if (rc)
			break;
	}
	*keep = deps; /* owns the job names in JOBS */
	return rc;
}

/*
 * Dependent jobs (`after:`): every instant in [FROM, TO] at which the first
 * upstream's triggers all ended (succeeded, failed, cancelled or skipped)
 * or which it recorded as a misfire (no trigger), up to the job's
 * dependency watermark (what its controller has decided), has a trigger of
 * the job or a misfire row (upstream_failed, upstream_late) for each
 * partition; the others count as missing.
 */
static int after_instants(pal_store *st, int64_t from, int64_t to, const char *job_id,
			  int64_t *left, pal_verify_report *r, char *err, size_t errlen)
{
	json_t *miss, *m, *deps = NULL;
	size_t i;
	GPtrArray *jobs = g_ptr_array_new();
	GArray *ats = g_array_new(FALSE, FALSE, sizeof(int64_t));
	int rc = upstream_misfired(st, from, to, job_id, left, jobs, ats, &deps, err, errlen);

	if (!rc)
		rc = pal_store_after_missing(st, job_id, from, to, (const char *const *)jobs->pdata,
					     (const int64_t *)(void *)ats->data, jobs->len, &miss,
					     err, errlen);
	g_ptr_array_free(jobs, TRUE);
	g_array_free(ats, TRUE);
	json_decref(deps);
	if (rc)
		return rc;
	json_array_foreach(miss, i, m)
	{
		r->missing++;
		sample(r, "missing", json_string_value(json_object_get(m, "job")),
		       json_integer_value(json_object_get(m, "at")),
		       (int)json_integer_value(json_object_get(m, "partition")), 0);
	}
	json_decref(miss);
	return PAL_OK;
}

/* Append every element of A (consumed) to the samples under KIND. */
static void samples_of(pal_verify_report *r, const char *kind, json_t *a)
{
	if (json_array_size(a))
		json_object_set(r->samples, kind, a);
	json_decref(a);
}

/* The checks over [FROM, TO] that recompute instants, spending *LEFT. */
static int recompute(pal_store *st, int64_t from, int64_t to, const char *job_id,
		     const pal_verify_opts *opts, int64_t *left, pal_verify_report *r, char *err,
		     size_t errlen)
{
	json_t *jobs;
	int rc = pal_store_activated_versions(st, job_id, &jobs, err, errlen);
	if (rc)
		return rc;
	if (job_id && json_array_size(jobs) == 0) {
		snprintf(err, errlen, "no job \"%s\"", job_id);
		json_decref(jobs);
		return PAL_ENOENT;
	}
	size_t i;
	json_t *j;
	json_array_foreach(jobs, i, j)
	{
		if ((rc = verify_job(st, j, from, to, left, r, err, errlen)))
			break;
	}
	json_decref(jobs);
	if (!rc)
		rc = after_instants(st, from, to, job_id, left, r, err, errlen);
	if (!rc)
		rc = never_activated(st, from, to, job_id, opts->activation_grace_s, left, r, err,
				     errlen);
	return rc;
}

int pal_verify(pal_store *st, int64_t from, int64_t to, const char *job_id,
	       const pal_verify_opts *opts, pal_verify_report *r, char *err, size_t errlen)
{
	pal_verify_opts dflt = { .activation_grace_s = PAL_VERIFY_ACTIVATION_GRACE_S,
				 .stuck_after_s = PAL_VERIFY_STUCK_AFTER_S,
				 .max_instants = PAL_VERIFY_MAX_INSTANTS };
	if (!opts)
		opts = &dflt;
	memset(r, 0, sizeof *r);
	r->samples = json_object();
	/* An instant after the database clock has not come: it is not missing. */
	int64_t now;
	int rc = pal_store_db_now(st, &now, err, errlen);
	if (rc)
		return rc;
	if (to > now) {
		to = now;
		r->to_clamped = true;
	}
	r->from = from;
	r->to = to;
	int64_t left = opts->max_instants;
	rc = recompute(st, from, to, job_id, opts, opts->max_instants > 0 ? &left : NULL, r, err,
		       errlen);
	if (rc == PAL_ETOOBIG) {
		char f[32], t[32];
		pal_fmt_rfc3339(from, f, sizeof f);
		pal_fmt_rfc3339(to, t, sizeof t);
		snprintf(err, errlen,
			 "%s to %s holds more than %lld instants (times partitions) to recompute, "
			 "the bound of one verify: verify a shorter range%s",
			 f, t, (long long)opts->max_instants,
			 job_id ? "" : ", or one job at a time");
	}
	if (rc)
		return rc;
	/* Quarantined jobs: planning is not keeping its promise for them. */
	json_t *q;
	if ((rc = pal_store_quarantine_json(st, job_id, &q, err, errlen)))
		return rc;
	r->quarantined = (int64_t)json_array_size(q);
	samples_of(r, "quarantined", q);
	/* Jobs whose keys a service may forget before their last retry: a
	 * controller found them and keeps a ticket open while they do. */
	if ((rc = pal_store_horizon_json(st, job_id, &q, err, errlen)))
		return rc;
	r->key_horizon = (int64_t)json_array_size(q);
	samples_of(r, "key_horizon", q);
	if (opts->stuck_after_s > 0) {
		if ((rc = pal_store_stuck_json(st, job_id, from, to, opts->stuck_after_s, &q, err,
					       errlen)))
			return rc;
		r->stuck = (int64_t)json_array_size(q);
		samples_of(r, "stuck", q);
	}
	if (opts->sink) {
		if ((rc = pal_store_sink_duplicates_json(opts->sink, from, to, &q, err, errlen)))
			return rc;
		r->sink_duplicates = (int64_t)json_array_size(q);
		samples_of(r, "sink_duplicates", q);
	}
	return PAL_OK;
}

bool pal_verify_ok(const pal_verify_report *r)
{
	return !r->missing && !r->duplicates && !r->unexpected && !r->quarantined &&
	       !r->never_activated && !r->stuck && !r->sink_duplicates && !r->key_horizon;
}

json_t *pal_verify_report_json(const pal_verify_report *r)
{
	char f[32], t[32];
	pal_fmt_rfc3339(r->from, f, sizeof f);
	pal_fmt_rfc3339(r->to, t, sizeof t);
	return json_pack("{s:b, s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:O}",
			 "ok", pal_verify_ok(r), "from", f, "to", t, "to_clamped", r->to_clamped,
			 "quarantined", (json_int_t)r->quarantined,
			 "key_horizon", (json_int_t)r->key_horizon, "never_activated",
			 (json_int_t)r->never_activated, "stuck", (json_int_t)r->stuck,
			 "sink_duplicates", (json_int_t)r->sink_duplicates, "jobs",
			 (json_int_t)r->jobs, "expected", (json_int_t)r->expected, "triggered",
			 (json_int_t)r->triggered, "misfired", (json_int_t)r->misfired, "missing",
			 (json_int_t)r->missing, "duplicates", (json_int_t)r->duplicates,
			 "unexpected", (json_int_t)r->unexpected, "samples",
			 r->samples ? r->samples : json_null());
}

void pal_verify_report_free(pal_verify_report *r)
{
	json_decref(r->samples);
	r->samples = NULL;
}
