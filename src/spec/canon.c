/*
 * canon.c - canonical JSON of a job spec, its digest, and the way back.
 *
 * The canonical form is what job_versions stores and what "the same spec"
 * means: applying a file whose canonical form is unchanged must not create a
 * new version.  So it is built from the validated spec, never from the YAML
 * text: every key present with its effective default, durations as integer
 * milliseconds, start/end as RFC 3339 UTC, exclusions sorted and merged into
 * "YYYY-MM-DD" / "YYYY-MM-DD..YYYY-MM-DD" strings, headers as an object,
 * dst as {"auto": true} or {"gap": .., "overlap": ..}.  ${ENV} secret
 * references stay as written; nothing is resolved.
 *
 * Digest: SHA-256 (src/util/sha256.c) of json_dumps(canonical, DIGEST_FLAGS), which
 * pal_job_spec_digest() writes directly (see "the canonical text" below):
 *   JSON_COMPACT        no insignificant whitespace;
 *   JSON_SORT_KEYS      key order by bytes, so the digest does not depend on
 *                       the order this file inserts keys in (a refactor here
 *                       must never change stored digests);
 *   JSON_ENSURE_ASCII   non-ASCII as \u escapes, so the bytes hashed do not
 *                       depend on any transport's encoding;
 *   JSON_REAL_PRECISION(15)  the one real (backoff.multiplier) prints as
 *                       written ("1.1", not "1.1000000000000001"), and reads
 *                       back to the same double.
 * The "format" key versions this layout; from_canonical() refuses formats and
 * keys it does not know, so an older binary never half-reads a newer spec.
 *
 * Also here: the spec/jobset destructors, the defaults, the shard of a job
 * id and the policy names - the job-spec model (include/palisade/jobspec.h).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "palisade/jobspec.h"
#include "palisade/sha256.h"
#include "palisade/timefmt.h"

#define CANON_FORMAT PAL_SPEC_FORMAT
#define DIGEST_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(15))
#define DEFAULT_IDEM "{job}/{scheduled_at}/{partition}"

/* ---- names ---- */

const char *const pal_misfire_policy_names[4] = {"fire_all", "fire_once", "skip", "manual"};
const char *const pal_overlap_policy_names[4] = {"allow", "forbid", "queue", "replace"};
const char *const pal_jitter_names[3] = {"full", "equal", "none"};
const char *const pal_dst_gap_names[2] = {"shift", "skip"};
const char *const pal_dst_overlap_names[3] = {"first", "last", "both"};
const char *const pal_http_method_names[5] = {"GET", "POST", "PUT", "PATCH", "DELETE"};
const char *const pal_notify_event_names[PAL_NOTIFY_N_EVENTS] = {"failed", "manual", "misfire",
								 "quarantined", "recovered"};
const char *const pal_after_on_names[2] = {"succeeded", "finished"};
#define misfire_names pal_misfire_policy_names
#define overlap_names pal_overlap_policy_names
#define jitter_names pal_jitter_names
#define gap_names pal_dst_gap_names
#define dst_overlap_names pal_dst_overlap_names
#define method_names pal_http_method_names

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char *name_of(const char *const *names, size_t n, int v)
{
	return v >= 0 && (size_t)v < n ? names[v] : "invalid";
}

const char *pal_misfire_policy_name(pal_misfire_policy p)
{
	return name_of(misfire_names, N(misfire_names), (int)p);
}

const char *pal_overlap_policy_name(pal_overlap_policy p)
{
	return name_of(overlap_names, N(overlap_names), (int)p);
}

const char *pal_jitter_name(pal_jitter j)
{
	return name_of(jitter_names, N(jitter_names), (int)j);
}

/* ---- spec lifetime ---- */

int pal_job_spec_defaults(pal_job_spec *s)
{
	memset(s, 0, sizeof *s);
	s->tenant = strdup("default");
	s->group = strdup("default");
	s->timezone = strdup("UTC");
	s->method = strdup("POST");
	s->idempotency_key = strdup(DEFAULT_IDEM);
	s->dst = PAL_DST_AUTO;
	s->misfire = PAL_MISFIRE_FIRE_ONCE;
	s->catchup_window_ms = 3600 * 1000LL;
	s->max_catchup = 100;
	s->overlap = PAL_OVERLAP_ALLOW;
	s->partitions = 1;
	s->priority = 0;
	s->max_in_flight = 0;
	s->deadline_ms = 0;
	s->timeout_ms = 30 * 1000LL;
	s->max_attempts = 5;
	s->backoff_initial_ms = 1000;
	s->backoff_max_ms = 5 * 60 * 1000LL;
	s->backoff_multiplier = 2.0;
	s->jitter = PAL_JITTER_FULL;
	s->max_age_ms = 3600 * 1000LL;
	if (!s->tenant || !s->group || !s->timezone || !s->method || !s->idempotency_key) {
		pal_job_spec_clear(s);
		return PAL_ENOMEM;
	}
	return 0;
}

void pal_job_spec_clear(pal_job_spec *s)
{
	if (!s)
		return;
	free(s->id);
	free(s->tenant);
	free(s->group);
	free(s->cron);
	free(s->timezone);
	free(s->exclusions);
	for (size_t i = 0; i < s->n_calendars; i++)
		pal_calendar_clear(&s->calendars[i]);
	free(s->calendars);
	free(s->idempotency_key);
	free(s->method);
	free(s->url);
	for (size_t i = 0; i < s->n_headers; i++) {
		free(s->headers[i].name);
		free(s->headers[i].value);
	}
	free(s->headers);
	free(s->body);
	free(s->status_url);
	free(s->tracestate);
	for (size_t i = 0; i < s->n_notify; i++) {
		free(s->notify[i].url);
		free(s->notify[i].secret);
	}
	free(s->notify);
	for (size_t i = 0; i < s->n_labels; i++) {
		free(s->labels[i].key);
		free(s->labels[i].value);
	}
	free(s->labels);
	for (size_t i = 0; i < s->n_keep_headers; i++)
		free(s->keep_headers[i]);
	free(s->keep_headers);
	for (size_t i = 0; i < s->n_after; i++)
		free(s->after[i].job);
	free(s->after);
	free(s->owner);
	free(s->description);
	free(s->file);
	memset(s, 0, sizeof *s);
}

void pal_jobset_free(pal_jobset *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->n; i++)
		pal_job_spec_clear(&set->jobs[i]);
	free(set->jobs);
	set->jobs = NULL;
	set->n = 0;
	for (size_t i = 0; i < set->n_calendars; i++)
		pal_calendar_clear(&set->calendars[i]);
	free(set->calendars);
	set->calendars = NULL;
	set->n_calendars = 0;
	for (size_t i = 0; i < set->n_notify_rules; i++)
		pal_notify_rule_clear(&set->notify_rules[i]);
	free(set->notify_rules);
	set->notify_rules = NULL;
	set->n_notify_rules = 0;
}

void pal_notify_rule_clear(pal_notify_rule *r)
{
	if (!r)
		return;
	free(r->name);
	free(r->n.url);
	free(r->n.secret);
	memset(r, 0, sizeof *r);
}

void pal_notify_rules_free(pal_notify_rule *rules, size_t n)
{
	for (size_t i = 0; i < n; i++)
		pal_notify_rule_clear(&rules[i]);
	free(rules);
}

void pal_job_spec_stored_notify_own(pal_job_spec *s, const char *col)
{
	if (!col || !*col)
		return;
	long own = strtol(col, NULL, 10);
	s->notify_merged = true;
	s->notify_none = own < 0;
	s->n_notify_own = own < 0 ? 0 : (size_t)own;
	if (s->n_notify_own > s->n_notify)
		s->n_notify_own = s->n_notify;
}

/* The events URL gets from V[0..n) already. */
static unsigned notify_has(const pal_notify *v, size_t n, const char *url)
{
	unsigned ev = 0;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].url, url))
			ev |= v[i].events;
	return ev;
}

int pal_job_spec_merge_notify(pal_job_spec *s, const pal_notify_rule *rules, size_t n)
{
	size_t own = s->notify_merged ? s->n_notify_own : s->n_notify;
	pal_notify *v = calloc(own + n + 1, sizeof *v);
	size_t m = 0;

	if (!v)
		return PAL_ENOMEM;
	for (size_t i = 0; i < own; i++)
		v[m++] = s->notify[i];
	for (int level = 0; level < 2 && !s->notify_none; level++)
		for (size_t i = 0; i < n; i++) {
			const pal_notify_rule *r = &rules[i];
			unsigned ev;

			if (r->remove || r->tenant != (level == 1) ||
			    strcmp(r->name, level ? s->tenant : s->group))
				continue;
			ev = r->n.events & ~notify_has(v, m, r->n.url);
			if (!ev)
				continue;
			v[m].events = ev;
			v[m].url = strdup(r->n.url);
			v[m].secret = strdup(r->n.secret);
			if (!v[m].url || !v[m].secret) {
				free(v[m].url);
				free(v[m].secret);
				for (size_t k = own; k < m; k++) {
					free(v[k].url);
					free(v[k].secret);
				}
				free(v);
				return PAL_ENOMEM;
			}
			m++;
		}
	for (size_t i = own; i < s->n_notify; i++) {
		free(s->notify[i].url);
		free(s->notify[i].secret);
	}
	free(s->notify);
	s->notify = v;
	s->n_notify = m;
	s->n_notify_own = own;
	s->notify_merged = true;
	return 0;
}

void pal_jobset_calendar_versions(pal_jobset *set)
{
	for (size_t i = 0; i < set->n; i++)
		for (size_t k = 0; k < set->jobs[i].n_calendars; k++)
			for (size_t c = 0; c < set->n_calendars; c++)
				if (!strcmp(set->jobs[i].calendars[k].name, set->calendars[c].name))
					set->jobs[i].calendars[k].version =
					    set->calendars[c].version;
}

int pal_job_spec_follow_calendar(pal_job_spec *s, const pal_calendar *c, bool *taken)
{
	if (taken)
		*taken = false;
	for (size_t i = 0; i < s->n_calendars; i++) {
		pal_calendar *cur = &s->calendars[i], copy;
		if (strcmp(cur->name, c->name) || cur->version == c->version)
			continue;
		if (pal_calendar_copy(&copy, c))
			return PAL_ENOMEM;
		pal_calendar_clear(cur);
		*cur = copy;
		if (taken)
			*taken = true;
	}
	return PAL_OK;
}

/* The calendars of S as the canonical form's schedule.calendars: in the
 * job's order (the first that excludes an instant is the one named), each
 * with its version.  New reference, NULL on ENOMEM. */
static json_t *canon_calendars(const pal_job_spec *s)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < s->n_calendars; i++) {
		json_t *c = pal_calendar_canonical(&s->calendars[i], true);

		if (!c || json_array_append_new(arr, c)) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

int pal_job_shard(const char *job_id, int n_shards)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	if (n_shards <= 0 || !job_id)
		return 0;
	for (const unsigned char *p = (const unsigned char *)job_id; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ULL;
	}
	return (int)(h % (uint64_t)n_shards);
}

/* ---- canonical JSON ---- */

static int cmp_excl(const void *a, const void *b)
{
	const pal_exclusion *x = a, *y = b;

	if (x->first_day != y->first_day)
		return x->first_day < y->first_day ? -1 : 1;
	if (x->last_day != y->last_day)
		return x->last_day < y->last_day ? -1 : 1;
	return 0;
}

/* Sorted, overlapping and adjacent ranges merged: the same set of days
 * always gives the same list. */
static json_t *canon_exclusions(const pal_exclusion *ex, size_t n)
{
	json_t *arr = json_array();
	pal_exclusion *v;
	size_t m = 0;

	if (!arr)
		return NULL;
	if (n == 0)
		return arr;
	v = malloc(n * sizeof *v);
	if (!v) {
		json_decref(arr);
		return NULL;
	}
	memcpy(v, ex, n * sizeof *v);
	qsort(v, n, sizeof *v, cmp_excl);
	for (size_t i = 1; i < n; i++) {
		if (v[i].first_day <= v[m].last_day + 1) {
			if (v[i].last_day > v[m].last_day)
				v[m].last_day = v[i].last_day;
		} else {
			v[++m] = v[i];
		}
	}
	for (size_t i = 0; i <= m; i++) {
		char a[32], b[32], both[72];

		pal_fmt_date(v[i].first_day, a, sizeof a);
		if (v[i].last_day == v[i].first_day) {
			json_array_append_new(arr, json_string(a));
		} else {
			pal_fmt_date(v[i].last_day, b, sizeof b);
			snprintf(both, sizeof both, "%s..%s", a, b);
			json_array_append_new(arr, json_string(both));
		}
	}
	free(v);
	return arr;
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *instant_or_null(bool has, int64_t t)
{
	char buf[40];

	if (!has)
		return json_null();
	pal_fmt_rfc3339(t, buf, sizeof buf);
	return json_string(buf);
}

/* The notify entries as the canonical form writes them: a list in the
 * file's order, each {"on": [events in pal_notify_event_names order],
 * "secret": .., "url": ..}.  NULL on ENOMEM. */
static json_t *canon_notify(const pal_job_spec *s)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < s->n_notify; i++) {
		const pal_notify *n = &s->notify[i];
		json_t *on = json_array(), *e = json_object();

		for (int k = 0; on && k < PAL_NOTIFY_N_EVENTS; k++)
			if (n->events & (1u << k))
				json_array_append_new(on, json_string(pal_notify_event_names[k]));
		if (!on || !e || json_object_set_new(e, "on", on) ||
		    json_object_set_new(e, "secret", json_string(n->secret)) ||
		    json_object_set_new(e, "url", json_string(n->url)) ||
		    json_array_append_new(arr, e)) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* `after` in canonical form: [{"job", "on", "within_ms"}] in the file's order. */
static json_t *canon_after(const pal_job_spec *s)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < s->n_after; i++) {
		json_t *o = json_pack("{s:s, s:s, s:I}", "job", s->after[i].job, "on",
				      pal_after_on_names[s->after[i].on], "within_ms",
				      (json_int_t)s->after[i].within_ms);
		if (!o || json_array_append_new(a, o)) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

json_t *pal_job_spec_canonical(const pal_job_spec *s)
{
	json_t *root, *sched, *dst, *mis, *tgt, *hdr, *retry, *bo;
	bool ok = true;

	root = json_object();
	sched = json_object();
	dst = json_object();
	mis = json_object();
	tgt = json_object();
	hdr = json_object();
	retry = json_object();
	bo = json_object();
	if (!root || !sched || !dst || !mis || !tgt || !hdr || !retry || !bo)
		goto fail;

		/* json_object_set_new() steals the value even when it fails */
#define SET(obj, key, val) (ok = json_object_set_new((obj), (key), (val)) == 0 && ok)
	SET(root, "format", json_integer(CANON_FORMAT));
	/* only for a dependent job: every other job keeps its digest */
	if (s->n_after)
		SET(root, "after", canon_after(s));
	SET(root, "id", str_or_null(s->id));
	SET(root, "tenant", str_or_null(s->tenant ? s->tenant : "default"));
	SET(root, "group", str_or_null(s->group ? s->group : "default"));

	/* only when named: a job without calendars keeps the digest it had */
	if (s->n_calendars)
		SET(sched, "calendars", canon_calendars(s));
	SET(sched, "cron", str_or_null(s->cron));
	SET(sched, "timezone", json_string(s->timezone ? s->timezone : "UTC"));
	if (s->dst.is_auto) {
		SET(dst, "auto", json_true());
	} else {
		SET(dst, "gap", json_string(name_of(gap_names, N(gap_names), (int)s->dst.gap)));
		SET(dst, "overlap",
		    json_string(
			name_of(dst_overlap_names, N(dst_overlap_names), (int)s->dst.overlap)));
	}
	SET(sched, "dst", dst);
	dst = NULL;
	SET(sched, "start", instant_or_null(s->has_start, s->start));
	SET(sched, "end", instant_or_null(s->has_end, s->end));
	SET(sched, "exclude", canon_exclusions(s->exclusions, s->n_exclusions));
	/* The schedule forms after the first release: written only when set,
	 * so a cron job keeps the digest it had. */
	if (s->has_at)
		SET(sched, "at", instant_or_null(true, s->at));
	if (s->every_s)
		SET(sched, "every_ms", json_integer(s->every_s * 1000));
	if (s->spread_s)
		SET(sched, "spread_ms", json_integer(s->spread_s * 1000));
	if (s->jitter_s)
		SET(sched, "jitter_ms", json_integer(s->jitter_s * 1000));
	SET(root, "schedule", sched);
	sched = NULL;

	SET(mis, "policy", json_string(pal_misfire_policy_name(s->misfire)));
	SET(mis, "catchup_window_ms", json_integer(s->catchup_window_ms));
	SET(mis, "max_catchup", json_integer(s->max_catchup));
	SET(root, "misfire", mis);
	mis = NULL;

	/* only when set: a job without notify keeps the digest it had */
	if (s->n_notify)
		SET(root, "notify", canon_notify(s));
	SET(root, "overlap", json_string(pal_overlap_policy_name(s->overlap)));
	SET(root, "partitions", json_integer(s->partitions));
	SET(root, "priority", json_integer(s->priority));
	SET(root, "max_in_flight", json_integer(s->max_in_flight));
	SET(root, "deadline_ms", json_integer(s->deadline_ms));
	SET(root, "idempotency_key",
	    json_string(s->idempotency_key ? s->idempotency_key : DEFAULT_IDEM));
	/* only when set: a job without labels keeps the digest it had */
	if (s->n_labels) {
		json_t *lb = json_object();
		for (size_t i = 0; lb && i < s->n_labels; i++)
			json_object_set_new(lb, s->labels[i].key, json_string(s->labels[i].value));
		SET(root, "labels", lb);
	}

	SET(tgt, "method", json_string(s->method ? s->method : "POST"));
	SET(tgt, "url", str_or_null(s->url));
	for (size_t i = 0; i < s->n_headers; i++)
		SET(hdr, s->headers[i].name, json_string(s->headers[i].value));
	SET(tgt, "headers", hdr);
	hdr = NULL;
	SET(tgt, "body", str_or_null(s->body));
	SET(tgt, "timeout_ms", json_integer(s->timeout_ms));
	SET(tgt, "status_url", str_or_null(s->status_url));
	/* only when set: a job without one keeps the digest it had */
	if (s->tracestate)
		SET(tgt, "tracestate", json_string(s->tracestate));
	/* the same for what attempts keep of the response */
	if (s->has_keep_body)
		SET(tgt, "keep_body", json_integer(s->keep_body));
	if (s->n_keep_headers) {
		json_t *kh = json_array();
		for (size_t i = 0; kh && i < s->n_keep_headers; i++)
			json_array_append_new(kh, json_string(s->keep_headers[i]));
		SET(tgt, "keep_headers", kh);
	}
	SET(root, "target", tgt);
	tgt = NULL;

	SET(bo, "initial_ms", json_integer(s->backoff_initial_ms));
	SET(bo, "max_ms", json_integer(s->backoff_max_ms));
	SET(bo, "multiplier", json_real(s->backoff_multiplier));
	SET(bo, "jitter", json_string(pal_jitter_name(s->jitter)));
	SET(retry, "max_attempts", json_integer(s->max_attempts));
	SET(retry, "backoff", bo);
	bo = NULL;
	SET(retry, "max_age_ms", json_integer(s->max_age_ms));
	SET(root, "retry", retry);
	retry = NULL;
#undef SET
	if (ok)
		return root;
fail:
	json_decref(root);
	json_decref(sched);
	json_decref(dst);
	json_decref(mis);
	json_decref(tgt);
	json_decref(hdr);
	json_decref(retry);
	json_decref(bo);
	return NULL;
}

/* ---- the canonical text, written directly ---- */

/*
 * pal_job_spec_digest() does not build the jansson object: it writes the
 * bytes json_dumps(pal_job_spec_canonical(s), DIGEST_FLAGS) would produce,
 * directly (5x fewer instructions; at 1M jobs the object and the generic
 * dumper were half of the CPU time of `palisade apply`).  The keys below are
 * in JSON_SORT_KEYS order (bytes), strings are escaped as jansson does with
 * JSON_ENSURE_ASCII, the one real is printed as jansson's dtostr does.
 * tests/unit/test_canon.c compares both outputs over tricky specs: a change
 * here must never change a stored digest.
 */
struct cw {
	GString *g;
	bool bad; /* a string that is not UTF-8: json_string() refuses it */
};

static void cw_raw(struct cw *w, const char *s)
{
	g_string_append(w->g, s);
}

static void cw_str(struct cw *w, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)s, *run = p;

	if (!g_utf8_validate(s, -1, NULL)) {
		w->bad = true;
		return;
	}
	g_string_append_c(w->g, '"');
	while (*p) {
		unsigned char c = *p;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			p++;
			continue;
		}
		g_string_append_len(w->g, (const char *)run, (gssize)(p - run));
		if (c >= 0x80) {
			gunichar u = g_utf8_get_char((const char *)p);
			char seq[16];

			if (u < 0x10000) {
				snprintf(seq, sizeof seq, "\\u%04X", (unsigned)u);
			} else {
				u -= 0x10000;
				snprintf(seq, sizeof seq, "\\u%04X\\u%04X",
					 (unsigned)(0xD800 | ((u & 0xffc00) >> 10)),
					 (unsigned)(0xDC00 | (u & 0x3ff)));
			}
			g_string_append(w->g, seq);
			p = (const unsigned char *)g_utf8_next_char((const char *)p);
		} else {
			const char *e = NULL;

			switch (c) {
			case '"':
				e = "\\\"";
				break;
			case '\\':
				e = "\\\\";
				break;
			case '\b':
				e = "\\b";
				break;
			case '\f':
				e = "\\f";
				break;
			case '\n':
				e = "\\n";
				break;
			case '\r':
				e = "\\r";
				break;
			case '\t':
				e = "\\t";
				break;
			}
			if (e) {
				g_string_append(w->g, e);
			} else {
				g_string_append(w->g, "\\u00");
				g_string_append_c(w->g, hex[c >> 4]);
				g_string_append_c(w->g, hex[c & 15]);
			}
			p++;
		}
		run = p;
	}
	g_string_append_len(w->g, (const char *)run, (gssize)(p - run));
	g_string_append_c(w->g, '"');
}

static void cw_str_or_null(struct cw *w, const char *s)
{
	if (s)
		cw_str(w, s);
	else
		cw_raw(w, "null");
}

static void cw_int(struct cw *w, int64_t v)
{
	char buf[24], *p = buf + sizeof buf;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	g_string_append_len(w->g, p, buf + sizeof buf - p);
}

/* jansson's jsonp_dtostr with precision 15 (the C locale is assumed, as
 * jansson's from_locale() would make it). */
static void cw_real(struct cw *w, double v)
{
	char buf[64];
	int n = snprintf(buf, sizeof buf - 3, "%.15g", v);
	char *e;

	if (n < 0 || n >= (int)sizeof buf - 3) {
		w->bad = true;
		return;
	}
	if (!strchr(buf, '.') && !strchr(buf, 'e'))
		strcat(buf, ".0");
	e = strchr(buf, 'e');
	if (e) {
		char *start = e + 1, *end = e + 2;

		if (*start == '-')
			start++;
		while (*end == '0')
			end++;
		if (end != start)
			memmove(start, end, strlen(end) + 1);
	}
	cw_raw(w, buf);
}

static void cw_instant(struct cw *w, bool has, int64_t t)
{
	char buf[40];

	if (!has) {
		cw_raw(w, "null");
		return;
	}
	pal_fmt_rfc3339(t, buf, sizeof buf);
	cw_str(w, buf);
}

static int cmp_header(const void *a, const void *b)
{
	return strcmp((*(const pal_header *const *)a)->name, (*(const pal_header *const *)b)->name);
}

static int canonical_text(const pal_job_spec *s, GString *g, pal_canon_spans *sp)
{
	pal_canon_spans ignore;

	if (!sp)
		sp = &ignore;
	struct cw w = {.g = g};
	const pal_header **hs = NULL;

#define KEY(k) cw_raw(&w, k)
	KEY("{");
	if (s->n_after) {
		KEY("\"after\":[");
		for (size_t i = 0; i < s->n_after; i++) {
			KEY(i ? ",{\"job\":" : "{\"job\":");
			cw_str(&w, s->after[i].job);
			KEY(",\"on\":");
			cw_str(&w, pal_after_on_names[s->after[i].on]);
			KEY(",\"within_ms\":");
			cw_int(&w, s->after[i].within_ms);
			KEY("}");
		}
		KEY("],");
	}
	KEY("\"deadline_ms\":");
	cw_int(&w, s->deadline_ms);
	KEY(",\"format\":");
	cw_int(&w, CANON_FORMAT);
	KEY(",\"group\":");
	cw_str_or_null(&w, s->group ? s->group : "default");
	KEY(",\"id\":");
	cw_str_or_null(&w, s->id);
	KEY(",\"idempotency_key\":");
	cw_str(&w, s->idempotency_key ? s->idempotency_key : DEFAULT_IDEM);
	/* sorted by key (the loader and cj_labels keep them so) */
	for (size_t i = 0; i < s->n_labels; i++) {
		KEY(i ? "," : ",\"labels\":{");
		cw_str(&w, s->labels[i].key);
		KEY(":");
		cw_str(&w, s->labels[i].value);
	}
	if (s->n_labels)
		KEY("}");
	KEY(",\"max_in_flight\":");
	cw_int(&w, s->max_in_flight);
	KEY(",\"misfire\":{\"catchup_window_ms\":");
	cw_int(&w, s->catchup_window_ms);
	KEY(",\"max_catchup\":");
	cw_int(&w, s->max_catchup);
	KEY(",\"policy\":");
	cw_str(&w, pal_misfire_policy_name(s->misfire));
	KEY("}");
	if (s->n_notify) {
		KEY(",\"notify\":[");
		for (size_t i = 0; i < s->n_notify; i++) {
			int first = 1;

			KEY(i ? ",{\"on\":[" : "{\"on\":[");
			for (int k = 0; k < PAL_NOTIFY_N_EVENTS; k++) {
				if (!(s->notify[i].events & (1u << k)))
					continue;
				if (!first)
					KEY(",");
				first = 0;
				cw_str(&w, pal_notify_event_names[k]);
			}
			KEY("],\"secret\":");
			cw_str(&w, s->notify[i].secret);
			KEY(",\"url\":");
			cw_str(&w, s->notify[i].url);
			KEY("}");
		}
		KEY("]");
	}
	KEY(",\"overlap\":");
	cw_str(&w, pal_overlap_policy_name(s->overlap));
	KEY(",\"partitions\":");
	cw_int(&w, s->partitions);
	KEY(",\"priority\":");
	cw_int(&w, s->priority);
	KEY(",\"retry\":");
	sp->retry_off = g->len;
	KEY("{\"backoff\":{\"initial_ms\":");
	cw_int(&w, s->backoff_initial_ms);
	KEY(",\"jitter\":");
	cw_str(&w, pal_jitter_name(s->jitter));
	KEY(",\"max_ms\":");
	cw_int(&w, s->backoff_max_ms);
	KEY(",\"multiplier\":");
	cw_real(&w, s->backoff_multiplier);
	KEY("},\"max_age_ms\":");
	cw_int(&w, s->max_age_ms);
	KEY(",\"max_attempts\":");
	cw_int(&w, s->max_attempts);
	KEY("}");
	sp->retry_len = g->len - sp->retry_off;
	KEY(",\"schedule\":{");
	if (s->has_at) {
		KEY("\"at\":");
		cw_instant(&w, true, s->at);
		KEY(",");
	}
	if (s->n_calendars) {
		json_t *cals = canon_calendars(s);
		char *t = cals ? json_dumps(cals, DIGEST_FLAGS) : NULL;

		KEY("\"calendars\":");
		if (t)
			cw_raw(&w, t);
		else
			w.bad = true;
		KEY(",");
		free(t);
		json_decref(cals);
	}
	KEY("\"cron\":");
	cw_str_or_null(&w, s->cron);
	KEY(",\"dst\":");
	if (s->dst.is_auto) {
		KEY("{\"auto\":true}");
	} else {
		KEY("{\"gap\":");
		cw_str(&w, name_of(gap_names, N(gap_names), (int)s->dst.gap));
		KEY(",\"overlap\":");
		cw_str(&w, name_of(dst_overlap_names, N(dst_overlap_names), (int)s->dst.overlap));
		KEY("}");
	}
	KEY(",\"end\":");
	cw_instant(&w, s->has_end, s->end);
	if (s->every_s) {
		KEY(",\"every_ms\":");
		cw_int(&w, s->every_s * 1000);
	}
	KEY(",\"exclude\":");
	if (s->n_exclusions == 0) {
		KEY("[]");
	} else {
		json_t *ex = canon_exclusions(s->exclusions, s->n_exclusions);
		char *t = ex ? json_dumps(ex, DIGEST_FLAGS) : NULL;

		if (t)
			cw_raw(&w, t);
		else
			w.bad = true;
		free(t);
		json_decref(ex);
	}
	if (s->jitter_s) {
		KEY(",\"jitter_ms\":");
		cw_int(&w, s->jitter_s * 1000);
	}
	if (s->spread_s) {
		KEY(",\"spread_ms\":");
		cw_int(&w, s->spread_s * 1000);
	}
	KEY(",\"start\":");
	cw_instant(&w, s->has_start, s->start);
	KEY(",\"timezone\":");
	cw_str(&w, s->timezone ? s->timezone : "UTC");
	KEY("},\"target\":");
	sp->target_off = g->len;
	KEY("{\"body\":");
	cw_str_or_null(&w, s->body);
	KEY(",\"headers\":{");
	if (s->n_headers) {
		hs = malloc(s->n_headers * sizeof *hs);
		if (!hs)
			return PAL_ENOMEM;
		for (size_t i = 0; i < s->n_headers; i++)
			hs[i] = &s->headers[i];
		qsort(hs, s->n_headers, sizeof *hs, cmp_header);
		for (size_t i = 0; i < s->n_headers; i++) {
			if (i)
				KEY(",");
			cw_str(&w, hs[i]->name);
			KEY(":");
			cw_str(&w, hs[i]->value);
		}
		free(hs);
	}
	KEY("}");
	if (s->has_keep_body) {
		KEY(",\"keep_body\":");
		cw_int(&w, s->keep_body);
	}
	for (size_t i = 0; i < s->n_keep_headers; i++) {
		KEY(i ? "," : ",\"keep_headers\":[");
		cw_str(&w, s->keep_headers[i]);
	}
	if (s->n_keep_headers)
		KEY("]");
	KEY(",\"method\":");
	cw_str(&w, s->method ? s->method : "POST");
	KEY(",\"status_url\":");
	cw_str_or_null(&w, s->status_url);
	KEY(",\"timeout_ms\":");
	cw_int(&w, s->timeout_ms);
	if (s->tracestate) {
		KEY(",\"tracestate\":");
		cw_str(&w, s->tracestate);
	}
	KEY(",\"url\":");
	cw_str_or_null(&w, s->url);
	KEY("}");
	sp->target_len = g->len - sp->target_off;
	KEY(",\"tenant\":");
	cw_str_or_null(&w, s->tenant ? s->tenant : "default");
	KEY("}");
#undef KEY
	return w.bad ? PAL_ENOMEM : 0;
}

int pal_job_spec_digest(const pal_job_spec *s, char **canon_json, char hex[65])
{
	return pal_job_spec_digest_spans(s, canon_json, hex, NULL);
}

int pal_job_spec_digest_spans(const pal_job_spec *s, char **canon_json, char hex[65],
			      pal_canon_spans *spans)
{
	GString *g = g_string_sized_new(1024);
	int rc;

	if (canon_json)
		*canon_json = NULL;
	rc = canonical_text(s, g, spans);
	if (rc) {
		g_string_free(g, TRUE);
		return rc;
	}
	pal_sha256_hex(g->str, g->len, hex);
	if (canon_json) {
		/* the caller free()s: hand over a malloc'd copy */
		*canon_json = malloc(g->len + 1);
		if (!*canon_json) {
			g_string_free(g, TRUE);
			return PAL_ENOMEM;
		}
		memcpy(*canon_json, g->str, g->len + 1);
	}
	g_string_free(g, TRUE);
	return 0;
}

/* ---- from canonical ---- */

struct cj {
	char *err;
	size_t errlen;
	bool bad;
};

static void cj_fail(struct cj *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void cj_fail(struct cj *c, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	if (c->bad)
		return; /* keep the first problem */
	c->bad = true;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (c->err && c->errlen)
		snprintf(c->err, c->errlen, "invalid canonical job spec: %s", buf);
}

/* OBJ must hold exactly KEYS[0..n); a key written "?name" may be absent
 * (a key added later, written only when set, so that the digests of specs
 * without it do not change). */
static bool cj_keys(struct cj *c, const json_t *obj, const char *path, const char *const *keys,
		    size_t n)
{
	const char *k;
	json_t *v;

	if (!json_is_object(obj)) {
		cj_fail(c, "%s: expected an object", path);
		return false;
	}
	json_object_foreach((json_t *)obj, k, v)
	{
		bool known = false;

		for (size_t i = 0; i < n; i++)
			known = known || !strcmp(k, keys[i] + (keys[i][0] == '?'));
		if (!known) {
			cj_fail(c, "%s: unknown key \"%s\"; hint: written by a newer palisade?",
				path, k);
			return false;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (keys[i][0] != '?' && !json_object_get(obj, keys[i])) {
			cj_fail(c, "%s: missing key \"%s\"", path, keys[i]);
			return false;
		}
	}
	(void)v;
	return true;
}

static char *cj_str(struct cj *c, const json_t *obj, const char *key, bool nullable)
{
	json_t *v = json_object_get(obj, key);
	char *s;

	if (nullable && json_is_null(v))
		return NULL;
	if (!json_is_string(v)) {
		cj_fail(c, "%s: expected a string", key);
		return NULL;
	}
	s = strdup(json_string_value(v));
	if (!s)
		cj_fail(c, "out of memory");
	return s;
}

static int64_t cj_int(struct cj *c, const json_t *obj, const char *key, int64_t min, int64_t max)
{
	json_t *v = json_object_get(obj, key);
	json_int_t x;

	if (!json_is_integer(v)) {
		cj_fail(c, "%s: expected an integer", key);
		return min;
	}
	x = json_integer_value(v);
	if (x < min || x > max) {
		cj_fail(c, "%s: %lld out of range", key, (long long)x);
		return min;
	}
	return x;
}

static int cj_enum(struct cj *c, const json_t *obj, const char *key, const char *const *names,
		   size_t n)
{
	json_t *v = json_object_get(obj, key);

	if (json_is_string(v))
		for (size_t i = 0; i < n; i++)
			if (!strcmp(json_string_value(v), names[i]))
				return (int)i;
	cj_fail(c, "%s: expected one of the known names", key);
	return 0;
}

static void cj_instant(struct cj *c, const json_t *obj, const char *key, bool *has, int64_t *t)
{
	json_t *v = json_object_get(obj, key);

	*has = false;
	if (json_is_null(v))
		return;
	if (!json_is_string(v) || pal_parse_rfc3339(json_string_value(v), t) != 0) {
		cj_fail(c, "%s: expected null or an rfc 3339 timestamp", key);
		return;
	}
	*has = true;
}

static void cj_exclusions(struct cj *c, const json_t *arr, pal_job_spec *s)
{
	size_t n = json_array_size(arr);

	if (!json_is_array(arr)) {
		cj_fail(c, "exclude: expected an array");
		return;
	}
	s->exclusions = calloc(n ? n : 1, sizeof *s->exclusions);
	if (!s->exclusions) {
		cj_fail(c, "out of memory");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const char *str = json_string_value(json_array_get(arr, i));
		char buf[32];
		const char *dots;
		int64_t a, b;

		if (!str || strlen(str) >= sizeof buf) {
			cj_fail(c, "exclude: expected date strings");
			return;
		}
		snprintf(buf, sizeof buf, "%s", str);
		dots = strstr(buf, "..");
		if (dots) {
			buf[dots - buf] = '\0';
			if (pal_parse_date(buf, &a) || pal_parse_date(dots + 2, &b) || a > b) {
				cj_fail(c, "exclude: invalid range \"%s\"", str);
				return;
			}
		} else if (pal_parse_date(buf, &a)) {
			cj_fail(c, "exclude: invalid date \"%s\"", str);
			return;
		} else {
			b = a;
		}
		s->exclusions[i].first_day = a;
		s->exclusions[i].last_day = b;
		s->n_exclusions = i + 1;
	}
}

/* schedule.calendars, when present: each calendar's canonical form. */
static void cj_calendars(struct cj *c, const json_t *arr, pal_job_spec *s)
{
	size_t n = json_array_size(arr);

	if (c->bad || !arr)
		return;
	if (!json_is_array(arr) || !n) {
		cj_fail(c, "schedule.calendars: expected a non-empty array");
		return;
	}
	s->calendars = calloc(n, sizeof *s->calendars);
	if (!s->calendars) {
		cj_fail(c, "out of memory");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		char e[256];

		if (pal_calendar_from_canonical(json_array_get(arr, i), &s->calendars[i], e,
						sizeof e)) {
			cj_fail(c, "schedule.calendars: %s", e);
			return;
		}
		s->n_calendars = i + 1;
	}
}

/* "notify": a non-empty list of {"on": [event names], "secret", "url"}. */
static void cj_notify(struct cj *c, const json_t *arr, pal_job_spec *s)
{
	static const char *const k_notify[] = {"on", "secret", "url"};
	size_t n = json_array_size(arr);

	if (!json_is_array(arr) || n == 0) {
		cj_fail(c, "notify: expected a non-empty list");
		return;
	}
	s->notify = calloc(n, sizeof *s->notify);
	if (!s->notify) {
		cj_fail(c, "out of memory");
		return;
	}
	for (size_t i = 0; i < n && !c->bad; i++) {
		const json_t *e = json_array_get(arr, i), *on, *ev;
		pal_notify *d = &s->notify[i];
		size_t k;

		if (!cj_keys(c, e, "notify[]", k_notify, N(k_notify)))
			return;
		s->n_notify = i + 1;
		d->url = cj_str(c, e, "url", false);
		d->secret = cj_str(c, e, "secret", false);
		on = json_object_get(e, "on");
		json_array_foreach(on, k, ev)
		{
			int m = -1;

			for (int x = 0; x < PAL_NOTIFY_N_EVENTS; x++)
				if (json_is_string(ev) &&
				    !strcmp(json_string_value(ev), pal_notify_event_names[x]))
					m = x;
			if (m < 0) {
				cj_fail(c, "notify[].on: unknown event");
				return;
			}
			d->events |= 1u << m;
		}
		if (!d->events)
			cj_fail(c, "notify[].on: expected a non-empty list of events");
	}
}

static int cmp_label(const void *a, const void *b)
{
	return strcmp(((const pal_label *)a)->key, ((const pal_label *)b)->key);
}

/* "labels": a non-empty object of at most PAL_LABELS_MAX string values,
 * keys and values by the label rule; kept sorted by key. */
static void cj_labels(struct cj *c, const json_t *obj, pal_job_spec *s)
{
	const char *k;
	json_t *v;

	if (!obj || c->bad)
		return;
	if (!json_is_object(obj) || !json_object_size(obj) ||
	    json_object_size(obj) > PAL_LABELS_MAX) {
		cj_fail(c, "labels: expected an object of 1 to %d labels", PAL_LABELS_MAX);
		return;
	}
	s->labels = calloc(json_object_size(obj), sizeof *s->labels);
	if (!s->labels) {
		cj_fail(c, "out of memory");
		return;
	}
	json_object_foreach((json_t *)obj, k, v)
	{
		if (!json_is_string(v) || pal_label_key_problem(k) ||
		    pal_label_value_problem(json_string_value(v))) {
			cj_fail(c, "labels: \"%.64s\" is not a valid label", k);
			return;
		}
		pal_label *l = &s->labels[s->n_labels++];
		l->key = strdup(k);
		l->value = strdup(json_string_value(v));
		if (!l->key || !l->value) {
			cj_fail(c, "out of memory");
			return;
		}
	}
	qsort(s->labels, s->n_labels, sizeof *s->labels, cmp_label);
}

/* An optional schedule duration of whole seconds, stored in ms; 0 when absent. */
static int64_t sched_seconds(struct cj *c, const json_t *sched, const char *key)
{
	if (!json_object_get(sched, key))
		return 0;
	int64_t ms = cj_int(c, sched, key, 1000, 3650 * 86400000LL);
	if (ms % 1000)
		cj_fail(c, "schedule.%s: expected whole seconds", key);
	return ms / 1000;
}

/* target.keep_headers, absent or an array of up to PAL_KEEP_HEADERS_MAX
 * strings. */
static void cj_keep_headers(struct cj *c, const json_t *arr, pal_job_spec *s)
{
	size_t i;
	json_t *v;

	if (!arr || c->bad)
		return;
	if (!json_is_array(arr) || json_array_size(arr) > PAL_KEEP_HEADERS_MAX) {
		cj_fail(c, "keep_headers: expected an array of at most %d names",
			PAL_KEEP_HEADERS_MAX);
		return;
	}
	s->keep_headers = calloc(json_array_size(arr) + 1, sizeof *s->keep_headers);
	if (!s->keep_headers) {
		cj_fail(c, "out of memory");
		return;
	}
	json_array_foreach(arr, i, v)
	{
		if (!json_is_string(v)) {
			cj_fail(c, "keep_headers: expected strings");
			return;
		}
		s->keep_headers[i] = strdup(json_string_value(v));
		s->n_keep_headers = i + 1;
		if (!s->keep_headers[i]) {
			cj_fail(c, "out of memory");
			return;
		}
	}
}

static void cj_after(struct cj *c, const json_t *a, pal_job_spec *s)
{
	static const char *const k_after[] = {"job", "on", "within_ms"};
	const int64_t day = 86400000LL;

	if (!a || c->bad)
		return;
	if (!json_is_array(a) || json_array_size(a) == 0) {
		cj_fail(c, "after: expected a non-empty array");
		return;
	}
	s->after = calloc(json_array_size(a), sizeof *s->after);
	if (!s->after) {
		cj_fail(c, "out of memory");
		return;
	}
	for (size_t i = 0; i < json_array_size(a) && !c->bad; i++) {
		const json_t *o = json_array_get(a, i);

		if (!cj_keys(c, o, "after", k_after, N(k_after)))
			return;
		s->after[i].job = cj_str(c, o, "job", false);
		s->after[i].on =
		    (pal_after_on)cj_enum(c, o, "on", pal_after_on_names, N(pal_after_on_names));
		s->after[i].within_ms = cj_int(c, o, "within_ms", 1, 3650 * day);
		s->n_after = i + 1;
	}
}

int pal_job_spec_from_canonical(const json_t *j, pal_job_spec *out, char *err, size_t errlen)
{
	static const char *const k_root[] = {
	    "format",  "id",	     "tenant",	 "group",	  "schedule",	 "misfire",
	    "overlap", "partitions", "priority", "max_in_flight", "deadline_ms", "idempotency_key",
	    "target",  "retry",	     "?notify",	 "?after",	  "?labels"};
	static const char *const k_sched[] = {"cron",	   "timezone",	 "dst",	       "start",
					      "end",	   "exclude",	 "?calendars", "?at",
					      "?every_ms", "?spread_ms", "?jitter_ms"};
	static const char *const k_mis[] = {"policy", "catchup_window_ms", "max_catchup"};
	static const char *const k_tgt[] = {"method",	   "url",	 "headers",
					    "body",	   "timeout_ms", "status_url",
					    "?tracestate", "?keep_body", "?keep_headers"};
	static const char *const k_retry[] = {"max_attempts", "backoff", "max_age_ms"};
	static const char *const k_bo[] = {"initial_ms", "max_ms", "multiplier", "jitter"};
	static const char *const k_dst_auto[] = {"auto"};
	static const char *const k_dst[] = {"gap", "overlap"};
	struct cj c = {.err = err, .errlen = errlen};
	const json_t *sched, *dst, *mis, *tgt, *hdr, *retry, *bo, *mult;
	const int64_t day = 86400000LL;

	memset(out, 0, sizeof *out);
	if (err && errlen)
		err[0] = '\0';
	if (!cj_keys(&c, j, "spec", k_root, N(k_root)))
		goto fail;
	if (cj_int(&c, j, "format", 1, 1000000) != CANON_FORMAT) {
		cj_fail(&c,
			"format %lld is not understood by this binary (it reads %d); hint: "
			"upgrade palisade",
			(long long)json_integer_value(json_object_get(j, "format")), CANON_FORMAT);
		goto fail;
	}
	sched = json_object_get(j, "schedule");
	mis = json_object_get(j, "misfire");
	tgt = json_object_get(j, "target");
	retry = json_object_get(j, "retry");
	if (!cj_keys(&c, sched, "schedule", k_sched, N(k_sched)) ||
	    !cj_keys(&c, mis, "misfire", k_mis, N(k_mis)) ||
	    !cj_keys(&c, tgt, "target", k_tgt, N(k_tgt)) ||
	    !cj_keys(&c, retry, "retry", k_retry, N(k_retry)))
		goto fail;
	bo = json_object_get(retry, "backoff");
	dst = json_object_get(sched, "dst");
	hdr = json_object_get(tgt, "headers");
	if (!cj_keys(&c, bo, "retry.backoff", k_bo, N(k_bo)))
		goto fail;

	out->id = cj_str(&c, j, "id", false);
	out->tenant = cj_str(&c, j, "tenant", false);
	out->group = cj_str(&c, j, "group", false);
	out->cron = cj_str(&c, sched, "cron", true);
	out->timezone = cj_str(&c, sched, "timezone", false);
	if (json_is_object(dst) && json_object_get(dst, "auto")) {
		if (cj_keys(&c, dst, "schedule.dst", k_dst_auto, 1) &&
		    !json_is_true(json_object_get(dst, "auto")))
			cj_fail(&c, "schedule.dst.auto: expected true");
		out->dst = PAL_DST_AUTO;
	} else if (cj_keys(&c, dst, "schedule.dst", k_dst, N(k_dst))) {
		out->dst.is_auto = false;
		out->dst.gap = (pal_dst_gap)cj_enum(&c, dst, "gap", gap_names, N(gap_names));
		out->dst.overlap = (pal_dst_overlap)cj_enum(&c, dst, "overlap", dst_overlap_names,
							    N(dst_overlap_names));
	}
	cj_instant(&c, sched, "start", &out->has_start, &out->start);
	cj_instant(&c, sched, "end", &out->has_end, &out->end);
	cj_exclusions(&c, json_object_get(sched, "exclude"), out);
	cj_calendars(&c, json_object_get(sched, "calendars"), out);
	if (json_object_get(sched, "at"))
		cj_instant(&c, sched, "at", &out->has_at, &out->at);
	out->every_s = sched_seconds(&c, sched, "every_ms");
	out->spread_s = sched_seconds(&c, sched, "spread_ms");
	out->jitter_s = sched_seconds(&c, sched, "jitter_ms");
	if (!c.bad && (out->cron != NULL) + (out->every_s > 0) + out->has_at != 1)
		cj_fail(&c, "schedule: expected exactly one of cron, every_ms and at");
	cj_after(&c, json_object_get(j, "after"), out);

	out->misfire =
	    (pal_misfire_policy)cj_enum(&c, mis, "policy", misfire_names, N(misfire_names));
	out->catchup_window_ms = cj_int(&c, mis, "catchup_window_ms", 0, 3650 * day);
	out->max_catchup = (int32_t)cj_int(&c, mis, "max_catchup", 0, INT32_MAX);

	out->overlap =
	    (pal_overlap_policy)cj_enum(&c, j, "overlap", overlap_names, N(overlap_names));
	out->partitions = (int32_t)cj_int(&c, j, "partitions", 1, 1024);
	out->priority = (int32_t)cj_int(&c, j, "priority", -100, 100);
	out->max_in_flight = (int32_t)cj_int(&c, j, "max_in_flight", 0, INT32_MAX);
	out->deadline_ms = cj_int(&c, j, "deadline_ms", 0, 3650 * day);
	out->idempotency_key = cj_str(&c, j, "idempotency_key", false);

	{
		int m = cj_enum(&c, tgt, "method", method_names, N(method_names));

		out->method = c.bad ? NULL : strdup(method_names[m]);
	}
	out->url = cj_str(&c, tgt, "url", false);
	out->body = cj_str(&c, tgt, "body", true);
	out->status_url = cj_str(&c, tgt, "status_url", true);
	out->tracestate =
	    json_object_get(tgt, "tracestate") ? cj_str(&c, tgt, "tracestate", false) : NULL;
	out->timeout_ms = cj_int(&c, tgt, "timeout_ms", 1, 3650 * day);
	out->has_keep_body = json_object_get(tgt, "keep_body") != NULL;
	if (out->has_keep_body)
		out->keep_body = cj_int(&c, tgt, "keep_body", 0, PAL_KEEP_BODY_MAX);
	cj_keep_headers(&c, json_object_get(tgt, "keep_headers"), out);
	if (!json_is_object(hdr)) {
		cj_fail(&c, "headers: expected an object");
	} else if (!c.bad) {
		const char *k;
		json_t *v;
		size_t i = 0;

		out->headers = calloc(json_object_size(hdr) + 1, sizeof *out->headers);
		if (!out->headers)
			cj_fail(&c, "out of memory");
		json_object_foreach((json_t *)hdr, k, v)
		{
			if (c.bad)
				break;
			if (!json_is_string(v)) {
				cj_fail(&c, "headers: value of \"%s\" is not a string", k);
				break;
			}
			out->headers[i].name = strdup(k);
			out->headers[i].value = strdup(json_string_value(v));
			out->n_headers = ++i;
			if (!out->headers[i - 1].name || !out->headers[i - 1].value)
				cj_fail(&c, "out of memory");
		}
	}

	if (json_object_get(j, "notify"))
		cj_notify(&c, json_object_get(j, "notify"), out);
	cj_labels(&c, json_object_get(j, "labels"), out);

	out->max_attempts = (int32_t)cj_int(&c, retry, "max_attempts", 1, INT32_MAX);
	out->max_age_ms = cj_int(&c, retry, "max_age_ms", 0, 3650 * day);
	out->backoff_initial_ms = cj_int(&c, bo, "initial_ms", 0, 3650 * day);
	out->backoff_max_ms = cj_int(&c, bo, "max_ms", 0, 3650 * day);
	mult = json_object_get(bo, "multiplier");
	if (!json_is_number(mult) || json_number_value(mult) < 1 || json_number_value(mult) > 1000)
		cj_fail(&c, "retry.backoff.multiplier: expected a number >= 1");
	else
		out->backoff_multiplier = json_number_value(mult);
	out->jitter = (pal_jitter)cj_enum(&c, bo, "jitter", jitter_names, N(jitter_names));

	if (!c.bad && !out->method)
		cj_fail(&c, "out of memory");
	if (!c.bad)
		return 0;
fail:
	/* every path here has recorded its reason through cj_fail() */
	pal_job_spec_clear(out);
	return PAL_EINVAL;
}

int pal_job_spec_min_schema(const pal_job_spec *s, const char **key)
{
	*key = NULL;
	if (s->n_labels) {
		*key = "labels";
		return PAL_SCHEMA_LABELS;
	}
	if (s->n_after) {
		*key = "after";
		return PAL_SCHEMA_AFTER;
	}
	if (s->has_keep_body || s->n_keep_headers) {
		*key = s->n_keep_headers ? "target.keep_headers" : "target.keep_body";
		return PAL_SCHEMA_RESPONSES;
	}
	if (s->n_notify) {
		*key = "notify";
		return PAL_SCHEMA_NOTIFY;
	}
	return 0;
}
