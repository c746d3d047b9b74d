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
 * Digest: SHA-256 (GChecksum) of json_dumps(canonical, DIGEST_FLAGS):
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
 * Also here: the small pal_diags helpers and the spec/jobset destructors.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "palisade/jobspec.h"
#include "palisade/timefmt.h"

#define CANON_FORMAT 1
#define DIGEST_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(15))
#define DEFAULT_IDEM "{job}/{scheduled_at}/{partition}"

/* ---- diagnostics ---- */

void pal_diags_addf(pal_diags *d, const char *file, int line, int col, const char *fmt, ...)
{
	char buf[1024];
	pal_diag *v;
	va_list ap;

	if (!d || d->n >= PAL_DIAGS_MAX)
		return;
	if (d->n == PAL_DIAGS_MAX - 1) {
		snprintf(buf, sizeof buf,
			 "too many problems; the remaining diagnostics are "
			 "suppressed");
		line = col = 0;
	} else {
		va_start(ap, fmt);
		vsnprintf(buf, sizeof buf, fmt, ap);
		va_end(ap);
	}
	v = realloc(d->v, (d->n + 1) * sizeof *v);
	if (!v)
		return;
	d->v = v;
	v[d->n].file = file ? strdup(file) : NULL;
	v[d->n].msg = strdup(buf);
	v[d->n].line = line;
	v[d->n].col = col;
	if (!v[d->n].msg || (file && !v[d->n].file)) {
		free(v[d->n].file);
		free(v[d->n].msg);
		return;
	}
	d->n++;
}

void pal_diags_free(pal_diags *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].file);
		free(d->v[i].msg);
	}
	free(d->v);
	d->v = NULL;
	d->n = 0;
}

void pal_diags_print(const pal_diags *d, FILE *fp)
{
	for (size_t i = 0; i < d->n; i++) {
		const pal_diag *g = &d->v[i];
		const char *file = g->file ? g->file : "<input>";

		if (g->line > 0)
			fprintf(fp, "%s:%d:%d: error: %s\n", file, g->line, g->col, g->msg);
		else
			fprintf(fp, "%s: error: %s\n", file, g->msg);
	}
}

/* ---- names ---- */

static const char *const misfire_names[] = {"fire_all", "fire_once", "skip", "manual"};
static const char *const overlap_names[] = {"allow", "forbid", "queue", "replace"};
static const char *const jitter_names[] = {"full", "equal", "none"};
static const char *const gap_names[] = {"shift", "skip"};
static const char *const dst_overlap_names[] = {"first", "last", "both"};
static const char *const method_names[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};

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

static void fmt_day(int64_t days, char *buf, size_t len)
{
	int64_t y;
	unsigned m, d;

	pal_civil_from_days(days, &y, &m, &d);
	snprintf(buf, len, "%04lld-%02u-%02u", (long long)y, m, d);
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

		fmt_day(v[i].first_day, a, sizeof a);
		if (v[i].last_day == v[i].first_day) {
			json_array_append_new(arr, json_string(a));
		} else {
			fmt_day(v[i].last_day, b, sizeof b);
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
	SET(root, "id", str_or_null(s->id));
	SET(root, "tenant", str_or_null(s->tenant ? s->tenant : "default"));
	SET(root, "group", str_or_null(s->group ? s->group : "default"));

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
	SET(root, "schedule", sched);
	sched = NULL;

	SET(mis, "policy", json_string(pal_misfire_policy_name(s->misfire)));
	SET(mis, "catchup_window_ms", json_integer(s->catchup_window_ms));
	SET(mis, "max_catchup", json_integer(s->max_catchup));
	SET(root, "misfire", mis);
	mis = NULL;

	SET(root, "overlap", json_string(pal_overlap_policy_name(s->overlap)));
	SET(root, "partitions", json_integer(s->partitions));
	SET(root, "priority", json_integer(s->priority));
	SET(root, "max_in_flight", json_integer(s->max_in_flight));
	SET(root, "deadline_ms", json_integer(s->deadline_ms));
	SET(root, "idempotency_key",
	    json_string(s->idempotency_key ? s->idempotency_key : DEFAULT_IDEM));

	SET(tgt, "method", json_string(s->method ? s->method : "POST"));
	SET(tgt, "url", str_or_null(s->url));
	for (size_t i = 0; i < s->n_headers; i++)
		SET(hdr, s->headers[i].name, json_string(s->headers[i].value));
	SET(tgt, "headers", hdr);
	hdr = NULL;
	SET(tgt, "body", str_or_null(s->body));
	SET(tgt, "timeout_ms", json_integer(s->timeout_ms));
	SET(tgt, "status_url", str_or_null(s->status_url));
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

int pal_job_spec_digest(const pal_job_spec *s, char **canon_json, char hex[65])
{
	json_t *j = pal_job_spec_canonical(s);
	char *text;
	GChecksum *ck;
	gsize hl = 65;

	if (canon_json)
		*canon_json = NULL;
	if (!j)
		return PAL_ENOMEM;
	text = json_dumps(j, DIGEST_FLAGS);
	json_decref(j);
	if (!text)
		return PAL_ENOMEM;
	ck = g_checksum_new(G_CHECKSUM_SHA256);
	g_checksum_update(ck, (const guchar *)text, (gssize)strlen(text));
	g_strlcpy(hex, g_checksum_get_string(ck), hl);
	g_checksum_free(ck);
	if (canon_json)
		*canon_json = text;
	else
		free(text);
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

/* OBJ must hold exactly KEYS[0..n). */
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
			known = known || !strcmp(k, keys[i]);
		if (!known) {
			cj_fail(c, "%s: unknown key \"%s\"; hint: written by a newer palisade?",
				path, k);
			return false;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (!json_object_get(obj, keys[i])) {
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

int pal_job_spec_from_canonical(const json_t *j, pal_job_spec *out, char *err, size_t errlen)
{
	static const char *const k_root[] = {
	    "format",  "id",	     "tenant",	 "group",	  "schedule",	 "misfire",
	    "overlap", "partitions", "priority", "max_in_flight", "deadline_ms", "idempotency_key",
	    "target",  "retry"};
	static const char *const k_sched[] = {"cron", "timezone", "dst", "start", "end", "exclude"};
	static const char *const k_mis[] = {"policy", "catchup_window_ms", "max_catchup"};
	static const char *const k_tgt[] = {"method", "url",	    "headers",
					    "body",   "timeout_ms", "status_url"};
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
	out->cron = cj_str(&c, sched, "cron", false);
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
	out->timeout_ms = cj_int(&c, tgt, "timeout_ms", 1, 3650 * day);
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
