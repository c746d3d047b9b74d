/*
 * diff.c - plan diff (plandiff.h): the next instants of the stored latest
 * version of a job against those of a new spec.  Reads one row of the store
 * (the latest canonical spec) and computes both lists with the schedule
 * engine; writes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <glib.h>
#include <string.h>
#include "palisade/plandiff.h"
#include "palisade/schedule.h"
#include "palisade/timefmt.h"

/* Up to N instants of spec S after FROM into out[]; returns how many, or
 * -1.  ANCHOR: where an `every` without `start` counts from (its
 * activation). */
static int instants(const pal_job_spec *s, int64_t anchor, int64_t from, int n, int64_t *out,
		    bool *ex, char *err, size_t errlen)
{
	pal_schedule *sc;
	if (pal_schedule_open(s, &sc, err, errlen))
		return -1;
	int k = 0;
	int64_t t = from;
	while (k < n && pal_schedule_next_from(sc, anchor, t, &out[k], &ex[k]) == PAL_OK)
		t = out[k++];
	pal_schedule_close(sc);
	return k;
}

bool pal_plan_diff_within(size_t n_jobs, int count, int64_t max, char *err, size_t errlen)
{
	if (max <= 0 || (int64_t)n_jobs * count <= max)
		return true;
	snprintf(err, errlen,
		 "%zu jobs (with the stored jobs that follow a calendar of the files) times %d "
		 "instants is more than %lld, the bound of one plan diff: a smaller count, or "
		 "fewer jobs at a time",
		 n_jobs, count, (long long)max);
	return false;
}

json_t *pal_plan_spec_next(const json_t *spec_json, int64_t anchor, int64_t now, int n)
{
	json_t *next = json_array();
	pal_job_spec spec;
	pal_schedule *sc = NULL;
	char err[512];
	if (!json_is_object(spec_json) ||
	    pal_job_spec_from_canonical(spec_json, &spec, err, sizeof err))
		return next;
	if (!pal_schedule_open(&spec, &sc, err, sizeof err)) {
		int64_t t = now, x;
		bool ex;
		int skipped = 0;
		for (int k = 0; k < n && pal_schedule_next_from(sc, anchor, t, &x, &ex) == PAL_OK;) {
			t = x;
			if (ex) { /* recorded as an excluded misfire, never planned */
				if (++skipped > PAL_JOB_NEXT_SKIP_MAX)
					break;
				continue;
			}
			k++;
			char buf[32];
			pal_fmt_rfc3339(x, buf, sizeof buf);
			json_array_append_new(next, json_string(buf));
		}
		pal_schedule_close(sc);
	}
	pal_job_spec_clear(&spec);
	return next;
}

int pal_plan_job_next(pal_store *st, const char *job_id, int64_t now, int n, json_t **out,
		      char *err, size_t errlen)
{
	*out = NULL;
	json_t *spec_json = NULL;
	int version;
	int64_t anchor, unused;
	int rc = pal_store_job_anchors(st, job_id, &anchor, &unused, err, errlen);
	if (!rc)
		rc = pal_store_latest_spec(st, job_id, &spec_json, &version, err, errlen);
	if (rc)
		return rc;
	*out = pal_plan_spec_next(spec_json, anchor, now, n);
	json_decref(spec_json);
	return PAL_OK;
}

void pal_plan_diff_clear(pal_plan_diff *d)
{
	free(d->stored);
	free(d->stored_ex);
	memset(d, 0, sizeof *d);
}

int pal_plan_diff_job(pal_store *st, const pal_job_spec *s, int64_t from, int count,
		      pal_plan_diff *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	out->after = s->n_after ? s->after[0].job : NULL;
	char hex[65];
	char *canon = NULL;
	json_t *old_json = NULL;
	int64_t stored_anchor, next_anchor;
	int rc = pal_store_job_anchors(st, s->id, &stored_anchor, &next_anchor, err, errlen);
	if (!rc)
		rc = pal_store_latest_spec(st, s->id, &old_json, &out->stored_version, err, errlen);
	if (rc && rc != PAL_ENOENT)
		return rc;
	if (pal_job_spec_digest(s, &canon, hex)) {
		snprintf(err, errlen, "job %s: cannot canonicalise", s->id);
		json_decref(old_json);
		return PAL_EINVAL;
	}
	free(canon);
	out->status = "new";
	pal_job_spec old = {0};
	bool have_old = false;
	if (old_json) {
		const char *old_digest = NULL;
		char verr[512];
		if (pal_job_spec_from_canonical(old_json, &old, verr, sizeof verr)) {
			snprintf(err, errlen, "job %s v%d: %s", s->id, out->stored_version, verr);
			json_decref(old_json);
			return PAL_EINVAL;
		}
		have_old = true;
		char *oc = NULL, ohex[65];
		if (!pal_job_spec_digest(&old, &oc, ohex))
			old_digest = ohex;
		free(oc);
		out->status = old_digest && !strcmp(old_digest, hex) ? "unchanged" : "changed";
		json_decref(old_json);
	} else {
		out->stored_version = 0;
	}
	out->stored = calloc((size_t)count * 2, sizeof *out->stored);
	out->stored_ex = calloc((size_t)count * 2, sizeof *out->stored_ex);
	if (!out->stored || !out->stored_ex) {
		if (have_old)
			pal_job_spec_clear(&old);
		pal_plan_diff_clear(out);
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	out->next = out->stored + count;
	out->next_ex = out->stored_ex + count;
	/* An unchanged spec keeps its version, and so its anchor. */
	if (!strcmp(out->status, "unchanged"))
		next_anchor = stored_anchor;
	out->n_new = instants(s, next_anchor, from, count, out->next, out->next_ex, err, errlen);
	if (out->n_new >= 0 && have_old)
		out->n_stored = instants(&old, stored_anchor, from, count, out->stored,
					 out->stored_ex, err, errlen);
	if (have_old)
		pal_job_spec_clear(&old);
	if (out->n_stored < 0 || out->n_new < 0) {
		pal_plan_diff_clear(out);
		return PAL_EINVAL;
	}
	return PAL_OK;
}

/* The followers in ROWS ([{job_id, spec, notify_own}]) but those of MINE
 * (added to it as they are seen): each with SET's calendars and the rules
 * RULES[0..nr) merged in; a job whose spec does not change by it is left
 * out when ONLY_CHANGED. */
static int diff_rows(pal_store *st, const pal_jobset *set, const pal_notify_rule *rules, size_t nr,
		     json_t *rows, GHashTable *mine, bool only_changed, int64_t from, int count,
		     pal_plan_follow_fn fn, void *ctx, char *err, size_t errlen)
{
	int rc = PAL_OK;
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row)
	{
		const char *id = json_string_value(json_object_get(row, "job_id"));
		if (g_hash_table_contains(mine, id))
			continue;
		g_hash_table_add(mine, (gpointer)id);
		pal_job_spec s;
		char e[512];
		if (pal_job_spec_from_canonical(json_object_get(row, "spec"), &s, e, sizeof e)) {
			snprintf(err, errlen, "job %s: stored spec unreadable: %s", id, e);
			rc = PAL_EINVAL;
			break;
		}
		pal_job_spec_stored_notify_own(
		    &s, json_string_value(json_object_get(row, "notify_own")));
		GString *follows = g_string_new(NULL);
		for (size_t k = 0; !rc && k < set->n_calendars; k++) {
			bool taken;
			if ((rc = pal_job_spec_follow_calendar(&s, &set->calendars[k], &taken)))
				snprintf(err, errlen, "out of memory");
			else if (taken)
				g_string_append_printf(
				    follows, "%scalendar %s v%d", follows->len ? ", " : "",
				    set->calendars[k].name, set->calendars[k].version);
		}
		char *c0 = NULL, *c1 = NULL, h0[65], h1[65];
		if (!rc && nr && !(rc = pal_job_spec_digest(&s, &c0, h0)) &&
		    !(rc = pal_job_spec_merge_notify(&s, rules, nr)) &&
		    !(rc = pal_job_spec_digest(&s, &c1, h1)) && strcmp(h0, h1))
			g_string_append_printf(follows, "%snotify rules of group %s or tenant %s",
					       follows->len ? ", " : "", s.group, s.tenant);
		free(c0);
		free(c1);
		if (rc && !*err)
			snprintf(err, errlen, "out of memory");
		pal_plan_diff d;
		if (!rc && (follows->len || !only_changed) &&
		    !(rc = pal_plan_diff_job(st, &s, from, count, &d, err, errlen))) {
			rc = fn(ctx, id, s.tenant, follows->str, &d);
			pal_plan_diff_clear(&d);
		}
		g_string_free(follows, TRUE);
		pal_job_spec_clear(&s);
		if (rc)
			break;
	}
	return rc;
}

int pal_plan_diff_followers(pal_store *st, const pal_jobset *set, int64_t from, int count,
			    pal_plan_follow_fn fn, void *ctx, char *err, size_t errlen)
{
	json_t *rows = NULL, *scoped = NULL;
	pal_notify_rule *rules = NULL;
	size_t nr = 0;
	*err = '\0';
	int rc = pal_store_calendar_followers_json(st, set->calendars, set->n_calendars, &rows, err,
						   errlen);
	if (!rc && set->n_notify_rules)
		rc = pal_store_notify_rules_overlay(st, set->notify_rules, set->n_notify_rules,
						    &rules, &nr, err, errlen);
	if (!rc && set->n_notify_rules)
		rc = pal_store_rule_scope_jobs_json(st, set->notify_rules, set->n_notify_rules,
						    &scoped, err, errlen);
	GHashTable *mine = g_hash_table_new(g_str_hash, g_str_equal);
	for (size_t i = 0; i < set->n; i++)
		g_hash_table_add(mine, set->jobs[i].id);
	if (!rc)
		rc = diff_rows(st, set, rules, nr, rows, mine, false, from, count, fn, ctx, err,
			       errlen);
	if (!rc && scoped)
		rc = diff_rows(st, set, rules, nr, scoped, mine, true, from, count, fn, ctx, err,
			       errlen);
	g_hash_table_destroy(mine);
	json_decref(rows);
	json_decref(scoped);
	pal_notify_rules_free(rules, nr);
	return rc;
}

static json_t *list_json(const int64_t *v, const bool *ex, int n)
{
	json_t *a = json_array();
	char buf[32];
	for (int i = 0; i < n; i++) {
		pal_fmt_rfc3339(v[i], buf, sizeof buf);
		json_array_append_new(a, json_pack("{s:s, s:b}", "at", buf, "excluded", ex[i]));
	}
	return a;
}

json_t *pal_plan_diff_json(const pal_plan_diff *d, const char *job_id, const char *follows)
{
	json_t *o = json_pack("{s:s, s:s, s:o}", "job_id", job_id, "status", d->status, "new",
			      list_json(d->next, d->next_ex, d->n_new));
	if (follows)
		json_object_set_new(o, "follows", json_string(follows));
	if (d->after)
		json_object_set_new(o, "after", json_string(d->after));
	if (d->stored_version) {
		json_object_set_new(o, "stored_version", json_integer(d->stored_version));
		json_object_set_new(o, "stored", list_json(d->stored, d->stored_ex, d->n_stored));
	}
	return o;
}
