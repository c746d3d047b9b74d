/*
 * jobfile.c - job files: YAML tree -> validated pal_job_spec list.
 *
 * Every key of a job lives in a table (struct keydef): its name, its type,
 * where it is stored in pal_job_spec, its bounds, and whether it is required.
 * walk_section() applies a table to a mapping; keys it does not know get a
 * did-you-mean from the same table, or a pointer to the section they belong
 * in.  Checks that span keys (start < end, backoff initial <= max, the
 * idempotency key template against partitions, a cron that never fires)
 * run after the walk.  Validation never stops at the first problem: every
 * key of every job is checked and every problem becomes a diagnostic.
 *
 * Nothing here resolves ${ENV} secrets or touches the cluster; cron and zone
 * checks call the cron and tz modules (pure functions).  docs/jobs.md is the
 * user-facing copy of these tables; keep them in step.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <glib.h>
#include "palisade/jobfile.h"
#include "calfile.h"
#include "palisade/aftergraph.h"
#include "palisade/name.h"
#include "palisade/schedule.h"
#include "palisade/trace.h"
#include "palisade/cron.h"
#include "palisade/template.h"
#include "palisade/timefmt.h"
#include "palisade/tz.h"
#include "palisade/url.h"
#include "palisade/yamltree.h"

_Static_assert(sizeof(pal_misfire_policy) == sizeof(int), "enum stored as int");
_Static_assert(sizeof(pal_overlap_policy) == sizeof(int), "enum stored as int");
_Static_assert(sizeof(pal_jitter) == sizeof(int), "enum stored as int");

#define MS_S 1000LL
#define MS_M (60 * MS_S)
#define MS_H (60 * MS_M)
#define MS_D (24 * MS_H)

#define NAME_MAX_LEN 128
#define TEMPLATE_MAX_LEN 1024
/*
 * The longest idempotency key a template may expand to, in bytes: the
 * protocol's limit on Idempotency-Key (docs/protocol.md), which the reference
 * sink enforces as SINK_KEY_MAX (src/sink/sink_int.h; the two are tied by
 * tests/unit/test_sink_proto.c).  It stays below what the executor can put
 * in its 1024-byte header line ("Idempotency-Key: " + key + NUL: 1006).
 */
#define IDEM_KEY_MAX 1000
/* Placeholders at their longest: a request id (`palisade trigger` and
 * `backfill --request-id`: 1-128 characters), a positive bigint trigger id,
 * an RFC 3339 UTC instant of a four-digit year, a partition below 1024. */
#define REQUEST_ID_MAX_LEN PAL_TPL_REQUEST_ID_MAX
#define TRIGGER_ID_MAX_LEN 19
#define SCHEDULED_AT_LEN 20
#define SCHEDULED_DATE_LEN 10
#define PARTITION_MAX_LEN 4
#define URL_MAX_LEN 2048
#define BODY_MAX_LEN (64 * 1024)
#define MAX_HEADERS 64
#define MAX_EXCLUSIONS 1000
#define OWNER_MAX_LEN 256
#define MAX_AFTER 16
#define DESCRIPTION_MAX_LEN 4096
#define MAX_SECTION_KEYS 32 /* keys of one section's table */

/* Per-job validation state. */
struct jctx {
	const pal_ydoc *doc;
	pal_diags *diags;
	int errors; /* problems found in the current job */

	/* nodes remembered for the checks that span keys */
	const pal_ynode *n_schedule, *n_cron, *n_every, *n_at, *n_start, *n_end, *n_idem;
	const pal_ynode *n_partitions;
	const pal_ynode *n_backoff_max, *n_body, *n_status_url;
	const pal_ynode *n_after;
	bool cron_ok, tz_ok;
	struct pal_jobloader *l; /* the caches of parsed crons and zones */
};

static const pal_tz *cached_tz(struct pal_jobloader *l, const char *name, char *err, size_t errlen);
static const pal_cron *cached_cron(struct pal_jobloader *l, const char *expr, char *err,
				   size_t errlen, int *field);
static const pal_calendar *loaded_calendar(struct pal_jobloader *l, const char *name);

static void jdiag(struct jctx *c, const pal_ynode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void jdiag(struct jctx *c, const pal_ynode *n, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	pal_ydiag(c->diags, c->doc, n, "%s", msg);
	c->errors++;
}

/* Diagnostic at byte offset OFF inside scalar N: exact when the scalar is on
 * one line without escapes, otherwise at the scalar's start. */
static void jdiag_at(struct jctx *c, const pal_ynode *n, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void jdiag_at(struct jctx *c, const pal_ynode *n, size_t off, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int col = n->col;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (n->kind == PAL_YNODE_SCALAR && n->line == n->end_line && off <= n->len &&
	    (n->style == PAL_YSTYLE_PLAIN || n->style == PAL_YSTYLE_SINGLE ||
	     n->style == PAL_YSTYLE_DOUBLE)) {
		int q = n->style == PAL_YSTYLE_PLAIN ? 0 : 1;
		long chars = g_utf8_strlen(n->str, (gssize)n->len);

		if ((long)(n->end_col - n->col) == chars + 2 * q)
			col = n->col + q + (int)g_utf8_strlen(n->str, (gssize)off);
	}
	pal_diags_addf(c->diags, c->doc->file, n->line, col, "%s", msg);
	c->errors++;
}

/* Wrap the typed accessors so that failures count against the job. */
#define CHECK(c, call)                                                                             \
	do {                                                                                       \
		if ((call) != 0)                                                                   \
			(c)->errors++;                                                             \
	} while (0)

/* ---- the key tables ---- */

enum ktype {
	K_NAME,	     /* char *, [a-z0-9][a-z0-9._-]* */
	K_INT32,     /* int32_t in [min, max] */
	K_DURATION,  /* int64_t ms in [min, max] */
	K_DURATION0, /* the same, or 0 meaning none */
	K_NUMBER,    /* double in [min, max] */
	K_ENUM,	     /* enum stored as int */
	K_SECTION,   /* nested mapping, walked with sub */
	K_CUSTOM,    /* fn */
};

struct section;

struct keydef {
	const char *name;
	enum ktype type;
	size_t off; /* into pal_job_spec */
	int64_t min, max;
	const char *const *names; /* K_ENUM */
	size_t n_names;
	const char *what; /* K_ENUM: "misfire policy" */
	const struct section *sub;
	void (*fn)(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
	bool required;
};

struct section {
	const char *name; /* for messages: "job", "schedule", ... */
	const struct keydef *keys;
	size_t n;
};

/* The name tables are the model's (jobspec.h), one of each. */
#define misfire_names pal_misfire_policy_names
#define overlap_names pal_overlap_policy_names
#define jitter_names pal_jitter_names
#define method_names pal_http_method_names
#define gap_names pal_dst_gap_names
#define dst_overlap_names pal_dst_overlap_names

#define OFF(field) offsetof(pal_job_spec, field)
#define N(a) (sizeof(a) / sizeof((a)[0]))

static void k_cron(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_timezone(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_dst(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_dst_gap(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_dst_overlap(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_start(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_every(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_at(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_spread(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_jitter(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_end(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_exclude(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_calendar(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_misfire(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_idem(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_suspend(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_mode(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_owner(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_description(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_method(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_url(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_headers(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_body(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_tracestate(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_status_url(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_keep_body(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_keep_headers(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_partitions(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_backoff_max(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_notify(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_after(struct jctx *c, const pal_ynode *v, pal_job_spec *s);

static const struct keydef dst_keys[] = {
    {"gap", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_dst_gap, false},
    {"overlap", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_dst_overlap, false},
};
static const struct section dst_section = {"schedule.dst", dst_keys, N(dst_keys)};

static const struct keydef schedule_keys[] = {
    {"cron", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_cron, false},
    {"every", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_every, false},
    {"at", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_at, false},
    {"spread", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_spread, false},
    {"jitter", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_jitter, false},
    {"timezone", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_timezone, false},
    {"dst", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_dst, false},
    {"start", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_start, false},
    {"end", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_end, false},
    {"exclude", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_exclude, false},
    {"calendar", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_calendar, false},
};
static const struct section schedule_section = {"schedule", schedule_keys, N(schedule_keys)};

static const struct keydef misfire_keys[] = {
    {"policy", K_ENUM, OFF(misfire), 0, 0, misfire_names, N(misfire_names), "misfire policy", NULL,
     NULL, false},
    {"catchup_window", K_DURATION, OFF(catchup_window_ms), 1 * MS_S, 90 * MS_D, NULL, 0, NULL, NULL,
     NULL, false},
    {"max_catchup", K_INT32, OFF(max_catchup), 1, 100000, NULL, 0, NULL, NULL, NULL, false},
};
static const struct section misfire_section = {"misfire", misfire_keys, N(misfire_keys)};

static const struct keydef target_keys[] = {
    {"method", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_method, false},
    {"url", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_url, true},
    {"headers", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_headers, false},
    {"body", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_body, false},
    {"timeout", K_DURATION, OFF(timeout_ms), 100, 1 * MS_H, NULL, 0, NULL, NULL, NULL, false},
    {"tracestate", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_tracestate, false},
    {"status_url", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_status_url, false},
    {"keep_body", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_keep_body, false},
    {"keep_headers", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_keep_headers, false},
};
static const struct section target_section = {"target", target_keys, N(target_keys)};

static const struct keydef backoff_keys[] = {
    {"initial", K_DURATION, OFF(backoff_initial_ms), 1, 1 * MS_H, NULL, 0, NULL, NULL, NULL, false},
    {"max", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_backoff_max, false},
    {"multiplier", K_NUMBER, OFF(backoff_multiplier), 1, 10, NULL, 0, NULL, NULL, NULL, false},
    {"jitter", K_ENUM, OFF(jitter), 0, 0, jitter_names, N(jitter_names), "jitter", NULL, NULL,
     false},
};
static const struct section backoff_section = {"retry.backoff", backoff_keys, N(backoff_keys)};

static const struct keydef retry_keys[] = {
    {"max_attempts", K_INT32, OFF(max_attempts), 1, 1000, NULL, 0, NULL, NULL, NULL, false},
    {"backoff", K_SECTION, 0, 0, 0, NULL, 0, NULL, &backoff_section, NULL, false},
    {"max_age", K_DURATION0, OFF(max_age_ms), 1 * MS_S, 90 * MS_D, NULL, 0, NULL, NULL, NULL,
     false},
};
static const struct section retry_section = {"retry", retry_keys, N(retry_keys)};

static const struct keydef job_keys[] = {
    {"id", K_NAME, OFF(id), 1, NAME_MAX_LEN, NULL, 0, NULL, NULL, NULL, true},
    {"tenant", K_NAME, OFF(tenant), 1, 64, NULL, 0, NULL, NULL, NULL, false},
    {"group", K_NAME, OFF(group), 1, 64, NULL, 0, NULL, NULL, NULL, false},
    /* required unless `after` is given: load_job checks that */
    {"schedule", K_SECTION, 0, 0, 0, NULL, 0, NULL, &schedule_section, NULL, false},
    {"after", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_after, false},
    {"misfire", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_misfire, false},
    {"overlap", K_ENUM, OFF(overlap), 0, 0, overlap_names, N(overlap_names), "overlap policy", NULL,
     NULL, false},
    {"partitions", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_partitions, false},
    {"priority", K_INT32, OFF(priority), -100, 100, NULL, 0, NULL, NULL, NULL, false},
    {"max_in_flight", K_INT32, OFF(max_in_flight), 0, 1000000, NULL, 0, NULL, NULL, NULL, false},
    {"deadline", K_DURATION0, OFF(deadline_ms), 1 * MS_S, 90 * MS_D, NULL, 0, NULL, NULL, NULL,
     false},
    {"idempotency_key", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_idem, false},
    {"target", K_SECTION, 0, 0, 0, NULL, 0, NULL, &target_section, NULL, true},
    {"retry", K_SECTION, 0, 0, 0, NULL, 0, NULL, &retry_section, NULL, false},
    {"notify", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_notify, false},
    {"suspend", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_suspend, false},
    {"mode", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_mode, false},
    {"owner", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_owner, false},
    {"description", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_description, false},
};
static const struct section job_section = {"job", job_keys, N(job_keys)};


/* Every section, to say where a misplaced key belongs. */
static const struct section *const all_sections[] = {
    &job_section,    &schedule_section, &dst_section,	  &misfire_section,
    &target_section, &retry_section,	&backoff_section,
};

/* ---- generic value checks ---- */

/* An id, tenant or group name: [a-z0-9][a-z0-9._-]*, at most MAX bytes. */
static void check_name(struct jctx *c, const pal_ynode *v, const char *what, int64_t max,
		       char **out)
{
	char *s = NULL;

	if (pal_yget_string(c->doc, v, what, &s, c->diags) != 0) {
		c->errors++;
		return;
	}
	if (!s[0]) {
		jdiag(c, v, "%s: must not be empty", what);
		free(s);
		return;
	}
	if ((int64_t)strlen(s) > max) {
		jdiag(c, v, "%s: \"%.32s...\" is too long (%zu bytes, at most %lld)", what, s,
		      strlen(s), (long long)max);
		free(s);
		return;
	}
	size_t n = strlen(s), i = pal_name_bad_byte(s, n);
	if (i < n) {
		jdiag_at(c, v, i,
			 "%s: invalid character '%c' in \"%.64s\" (allowed: lower-case "
			 "letters, digits, '.', '_' and '-', starting with a letter or "
			 "digit)",
			 what, isprint((unsigned char)s[i]) ? s[i] : '?', s);
		free(s);
		return;
	}
	free(*out);
	*out = s;
}

static void apply_key(struct jctx *c, const struct keydef *k, const pal_ynode *v, pal_job_spec *s);

/*
 * Apply table SEC to mapping MAP.  WHERE names the mapping in messages
 * ("job", "schedule", ...).  Unknown keys get a suggestion; missing required
 * keys are reported at the mapping.
 */
static void walk_section(struct jctx *c, const struct section *sec, const pal_ynode *map,
			 pal_job_spec *s)
{
	/* every section's table fits (job_keys is the longest) */
	const char *names[MAX_SECTION_KEYS];
	bool seen[MAX_SECTION_KEYS] = {false};

	g_assert(sec->n <= MAX_SECTION_KEYS);
	if (pal_yexpect_map(c->doc, map, sec->name, c->diags) != 0) {
		c->errors++;
		return;
	}
	for (size_t i = 0; i < sec->n; i++)
		names[i] = sec->keys[i].name;
	if (sec == &schedule_section)
		c->n_schedule = map;
	for (size_t i = 0; i < map->n; i++) {
		const pal_ynode *kn = map->keys[i];
		const struct keydef *k = NULL;

		for (size_t j = 0; j < sec->n; j++) {
			if (!strcmp(kn->str, sec->keys[j].name)) {
				k = &sec->keys[j];
				seen[j] = true;
			}
		}
		if (k) {
			apply_key(c, k, map->vals[i], s);
			continue;
		}
		{
			const char *hint = pal_suggest(kn->str, names, sec->n);
			const char *home = NULL;

			for (size_t j = 0; !hint && !home && j < N(all_sections); j++) {
				if (all_sections[j] == sec)
					continue;
				for (size_t m = 0; m < all_sections[j]->n; m++)
					if (!strcmp(kn->str, all_sections[j]->keys[m].name))
						home = all_sections[j]->name;
			}
			if (hint)
				jdiag(c, kn, "unknown key \"%.64s\" in %s (did you mean \"%s\"?)",
				      kn->str, sec->name, hint);
			else if (home)
				jdiag(c, kn,
				      "unknown key \"%.64s\" in %s; hint: it belongs in the %s "
				      "section",
				      kn->str, sec->name, home);
			else
				jdiag(c, kn,
				      "unknown key \"%.64s\" in %s; hint: docs/jobs.md lists "
				      "the keys",
				      kn->str, sec->name);
		}
	}
	for (size_t j = 0; j < sec->n; j++)
		if (sec->keys[j].required && !seen[j])
			jdiag(c, map, "%s is missing the required key \"%s\"", sec->name,
			      sec->keys[j].name);
}

static void apply_key(struct jctx *c, const struct keydef *k, const pal_ynode *v, pal_job_spec *s)
{
	char *base = (char *)s;
	int64_t i64;
	double d;
	int e;

	switch (k->type) {
	case K_NAME:
		check_name(c, v, k->name, k->max, (char **)(base + k->off));
		break;
	case K_INT32:
		if (pal_yget_int(c->doc, v, k->name, k->min, k->max, &i64, c->diags) == 0) {
			int32_t i32 = (int32_t)i64;

			memcpy(base + k->off, &i32, sizeof i32);
		} else {
			c->errors++;
		}
		break;
	case K_DURATION:
	case K_DURATION0:
		if (pal_yget_duration(c->doc, v, k->name, k->min, k->max, k->type == K_DURATION0,
				      &i64, c->diags) == 0)
			memcpy(base + k->off, &i64, sizeof i64);
		else
			c->errors++;
		break;
	case K_NUMBER:
		if (pal_yget_number(c->doc, v, k->name, (double)k->min, (double)k->max, &d,
				    c->diags) == 0)
			memcpy(base + k->off, &d, sizeof d);
		else
			c->errors++;
		break;
	case K_ENUM:
		if (pal_yget_enum(c->doc, v, k->what, k->names, k->n_names, &e, c->diags) == 0)
			memcpy(base + k->off, &e, sizeof e);
		else
			c->errors++;
		break;
	case K_SECTION:
		walk_section(c, k->sub, v, s);
		break;
	case K_CUSTOM:
		k->fn(c, v, s);
		break;
	}
}

/* ---- templates and secrets ---- */

enum {
	PH_JOB = 1 << 0,
	PH_SCHEDULED_AT = 1 << 1,
	PH_SCHEDULED_DATE = 1 << 2,
	PH_PARTITION = 1 << 3,
	PH_TRIGGER = 1 << 4,
	PH_REQUEST_ID = 1 << 5,
	PH_IDEMPOTENCY_KEY = 1 << 6,
};

static const char *const placeholder_names[] = {
    "job",     "scheduled_at", "scheduled_date",  "partition",
    "trigger", "request_id",   "idempotency_key",
};

#define PH_COMMON                                                                                  \
	(PH_JOB | PH_SCHEDULED_AT | PH_SCHEDULED_DATE | PH_PARTITION | PH_TRIGGER | PH_REQUEST_ID)

static bool is_upper_ident(char ch, bool first)
{
	return (ch >= 'A' && ch <= 'Z') || ch == '_' || (!first && ch >= '0' && ch <= '9');
}

static bool is_lower_ident(char ch, bool first)
{
	return (ch >= 'a' && ch <= 'z') || ch == '_' || (!first && ch >= '0' && ch <= '9');
}

/*
 * Check a string that may hold ${SECRET} references (when SECRETS) and
 * {placeholder}s from ALLOWED (a PH_* mask; 0 means placeholders are not
 * expanded in this field, so one that looks like a placeholder is refused
 * rather than sent literally).  A '{' not followed by identifier + '}' is a
 * literal brace (JSON bodies are full of them).  Returns the mask of the
 * placeholders used.
 */
static unsigned check_template(struct jctx *c, const pal_ynode *v, const char *what,
			       unsigned allowed, bool secrets)
{
	const char *s = v->str;
	unsigned used = 0;

	for (size_t i = 0; s[i]; i++) {
		if (s[i] == '$' && s[i + 1] == '{') {
			size_t j = i + 2;

			while (s[j] && is_upper_ident(s[j], j == i + 2))
				j++;
			if (j == i + 2 || s[j] != '}') {
				size_t close = strcspn(s + i, "}");
				int shown = (int)(s[i + close] ? close + 1 : close);

				jdiag_at(c, v, i,
					 "%s: malformed secret reference \"%.*s\"%s (expected "
					 "${NAME} with NAME made of A-Z, 0-9 and _, not starting "
					 "with a digit)",
					 what, shown > 40 ? 40 : shown, s + i,
					 shown > 40 ? "..." : "");
				return used;
			}
			if (!secrets) {
				jdiag_at(c, v, i,
					 "%s: secret references such as \"%.*s\" are not allowed "
					 "here; hint: secrets belong in target.headers, url, body "
					 "or status_url",
					 what, (int)(j - i + 1), s + i);
			}
			i = j;
			continue;
		}
		if (s[i] == '{' && is_lower_ident(s[i + 1], true)) {
			size_t j = i + 1;
			int found = -1;

			while (s[j] && is_lower_ident(s[j], false))
				j++;
			if (s[j] != '}')
				continue; /* a literal brace */
			for (size_t p = 0; p < N(placeholder_names); p++)
				if (strlen(placeholder_names[p]) == j - i - 1 &&
				    !strncmp(placeholder_names[p], s + i + 1, j - i - 1))
					found = (int)p;
			if (found >= 0 && (allowed & (1u << found))) {
				used |= 1u << found;
			} else if (!allowed) {
				jdiag_at(c, v, i,
					 "%s: placeholders such as \"%.*s\" are not expanded here; "
					 "hint: they work in idempotency_key, body and status_url",
					 what, (int)(j - i + 1), s + i);
			} else {
				GString *list = g_string_new(NULL);
				char word[64];
				const char *cands[N(placeholder_names)];
				size_t nc = 0;
				const char *hint;

				for (size_t p = 0; p < N(placeholder_names); p++) {
					if (!(allowed & (1u << p)))
						continue;
					g_string_append_printf(list, "%s{%s}", nc ? ", " : "",
							       placeholder_names[p]);
					cands[nc++] = placeholder_names[p];
				}
				snprintf(word, sizeof word, "%.*s", (int)(j - i - 1), s + i + 1);
				hint = pal_suggest(word, cands, nc);
				if (hint)
					jdiag_at(c, v, i,
						 "%s: unknown placeholder \"{%s}\" (did you mean "
						 "\"{%s}\"?)",
						 what, word, hint);
				else
					jdiag_at(c, v, i,
						 "%s: unknown placeholder \"{%s}\" (expected %s)",
						 what, word, list->str);
				g_string_free(list, TRUE);
			}
			i = j;
		}
	}
	return used;
}

/*
 * The most bytes idempotency-key template TPL expands to for job JOB_ID, with
 * every placeholder at its longest, as the executor renders it
 * (pal_tpl_render_key): walks TPL as pal_tpl_render() does without flags (a
 * '{', lower-case letters or '_', and '}' naming a placeholder is replaced,
 * every other byte is copied), and when TPL has no {request_id}, adds the
 * "/<request id>" a manual run's or backfill's key ends with.
 */
static size_t idem_key_max_len(const char *tpl, const char *job_id)
{
	static const struct {
		const char *name;
		size_t len;
	} widths[] = {
	    {"scheduled_at", SCHEDULED_AT_LEN}, {"scheduled_date", SCHEDULED_DATE_LEN},
	    {"partition", PARTITION_MAX_LEN},	{"trigger", TRIGGER_ID_MAX_LEN},
	    {"request_id", REQUEST_ID_MAX_LEN},
	};
	size_t n = 0;

	for (const char *p = tpl; *p;) {
		if (*p == '{') {
			const char *e = p + 1;

			while ((*e >= 'a' && *e <= 'z') || *e == '_')
				e++;
			if (*e == '}' && e > p + 1) {
				size_t len = (size_t)(e - p - 1), w = SIZE_MAX;

				if (len == 3 && !memcmp(p + 1, "job", 3))
					w = job_id ? strlen(job_id) : NAME_MAX_LEN;
				for (size_t i = 0; i < N(widths); i++)
					if (strlen(widths[i].name) == len &&
					    !memcmp(p + 1, widths[i].name, len))
						w = widths[i].len;
				if (w != SIZE_MAX) {
					n += w;
					p = e + 1;
					continue;
				}
			}
		}
		n++;
		p++;
	}
	if (!pal_tpl_uses(tpl, "request_id"))
		n += PAL_TPL_KEY_SUFFIX_MAX;
	return n;
}

/* A string key of at most MAX bytes; NULL (with a diagnostic) otherwise. */
static char *get_str(struct jctx *c, const pal_ynode *v, const char *what, size_t max)
{
	char *s = NULL;

	if (pal_yget_string(c->doc, v, what, &s, c->diags) != 0) {
		c->errors++;
		return NULL;
	}
	if (strlen(s) > max) {
		jdiag(c, v, "%s: too long (%zu bytes, at most %zu)", what, strlen(s), max);
		free(s);
		return NULL;
	}
	return s;
}

static bool host_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '.' || ch == '-';
}

/*
 * http:// or https://, a literal host (name, IPv4 or [IPv6]) with an
 * optional port, then any path and query.  No spaces, controls, non-ASCII
 * or credentials.  Placeholders and secrets are checked by check_template().
 */
static bool check_url(struct jctx *c, const pal_ynode *v, const char *what, const char *u)
{
	const char *p, *host, *end;
	size_t hl;

	for (size_t i = 0; u[i]; i++) {
		unsigned char ch = (unsigned char)u[i];

		if (ch <= 0x20 || ch >= 0x7F) {
			jdiag_at(c, v, i,
				 "%s: invalid character in url (spaces, control characters and "
				 "non-ascii are not allowed); hint: percent-encode it",
				 what);
			return false;
		}
	}
	if (!strncmp(u, "http://", 7)) {
		host = u + 7;
	} else if (!strncmp(u, "https://", 8)) {
		host = u + 8;
	} else {
		char shown[80];

		pal_url_redact(u, shown, sizeof shown);
		jdiag(c, v,
		      "%s: \"%.64s\" is not an http or https url; hint: write it as "
		      "http://host:port/path",
		      what, shown);
		return false;
	}
	end = host + strcspn(host, "/?#");
	if (memchr(host, '@', (size_t)(end - host))) {
		jdiag_at(c, v, (size_t)(host - u),
			 "%s: credentials in the url are not allowed; hint: send them in a header "
			 "with a ${SECRET} reference",
			 what);
		return false;
	}
	if (*end == '#') {
		jdiag_at(c, v, (size_t)(end - u),
			 "%s: a url fragment (#...) is never sent; remove it", what);
		return false;
	}
	p = host;
	if (*p == '[') {
		while (p < end && *p != ']')
			p++;
		if (p == end || p == host + 1) {
			jdiag_at(c, v, (size_t)(host - u), "%s: malformed ipv6 address in url",
				 what);
			return false;
		}
		for (const char *q = host + 1; q < p; q++) {
			if (!isxdigit((unsigned char)*q) && *q != ':' && *q != '.') {
				jdiag_at(c, v, (size_t)(q - u), "%s: malformed ipv6 address in url",
					 what);
				return false;
			}
		}
		p++;
		hl = (size_t)(p - host);
	} else {
		while (p < end && host_char(*p))
			p++;
		hl = (size_t)(p - host);
		if (hl == 0) {
			jdiag_at(c, v, (size_t)(host - u), "%s: the url has no host", what);
			return false;
		}
		if (p < end && *p != ':') {
			jdiag_at(c, v, (size_t)(p - u),
				 "%s: invalid character '%c' in the host of the url; hint: "
				 "placeholders and secrets may only appear in the path and query",
				 what, *p);
			return false;
		}
	}
	if (p < end && *p == ':') {
		const char *ps = ++p;
		long port = 0;

		while (p < end && *p >= '0' && *p <= '9' && port <= 65535)
			port = port * 10 + (*p++ - '0');
		if (p == ps || p != end || port < 1 || port > 65535) {
			jdiag_at(c, v, (size_t)(ps - u),
				 "%s: invalid port in url (expected 1 to 65535)", what);
			return false;
		}
	} else if (p != end) {
		jdiag_at(c, v, (size_t)(p - u), "%s: malformed host in url", what);
		return false;
	}
	(void)hl;
	return true;
}

/* ---- custom keys ---- */

/* Byte offset of 1-based field K of cron text S (fields split by blanks). */
static size_t cron_field_offset(const char *s, int k)
{
	size_t i = 0;

	for (int f = 1;; f++) {
		while (s[i] && isspace((unsigned char)s[i]))
			i++;
		if (f == k || !s[i])
			return i;
		while (s[i] && !isspace((unsigned char)s[i]))
			i++;
	}
}

/* Trim and collapse blank runs: "0  30 2 * * ?" and "0 30 2 * * ?" mean
 * the same and must canonicalise the same. */
static char *normalise_cron(const char *s)
{
	char *out = malloc(strlen(s) + 1);
	size_t o = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; s[i];) {
		if (isspace((unsigned char)s[i])) {
			while (s[i] && isspace((unsigned char)s[i]))
				i++;
			if (o && s[i])
				out[o++] = ' ';
			continue;
		}
		out[o++] = s[i++];
	}
	out[o] = '\0';
	return out;
}

static void k_cron(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	char *raw = get_str(c, v, "cron", 256), *norm;
	char err[256] = "";
	int field = 0;

	c->n_cron = v;
	if (!raw)
		return;
	norm = normalise_cron(raw);
	if (!norm) {
		free(raw);
		c->errors++;
		return;
	}
	/* Jenkins' H resolves per job (its id may come later in the mapping):
	 * here it is checked with a stand-in id, whose values are as valid. */
	char *resolved = NULL;
	if (pal_cron_resolve_hash(norm, "", &resolved, err, sizeof err)) {
		jdiag(c, v, "invalid cron expression \"%.128s\": %s", norm, err);
		free(norm);
	} else if (!cached_cron(c->l, resolved, err, sizeof err, &field)) {
		jdiag_at(c, v, field > 0 ? cron_field_offset(raw, field) : 0,
			 "invalid cron expression \"%.128s\": %s", norm,
			 err[0] ? err : "not a valid expression");
		free(norm);
	} else {
		free(s->cron);
		s->cron = norm;
		c->cron_ok = true;
	}
	free(resolved);
	free(raw);
}

static void k_timezone(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	char *name = get_str(c, v, "timezone", 128);
	char err[256] = "";

	if (!name) {
		c->tz_ok = false;
		return;
	}
	if (!cached_tz(c->l, name, err, sizeof err)) {
		if (err[0])
			jdiag(c, v, "timezone: %s", err);
		else
			jdiag(c, v,
			      "unknown time zone \"%.128s\"; hint: use an IANA name such as "
			      "Europe/Berlin or UTC",
			      name);
		free(name);
		c->tz_ok = false;
		return;
	}
	free(s->timezone);
	s->timezone = name;
}

static void k_dst(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	if (v->kind == PAL_YNODE_SCALAR && !pal_ynode_is_null(v)) {
		if (!strcmp(v->str, "auto")) {
			s->dst = PAL_DST_AUTO;
			return;
		}
		jdiag(c, v,
		      "unknown dst policy \"%.64s\" (expected auto, or a mapping such as {gap: "
		      "shift, overlap: first})",
		      v->str);
		return;
	}
	if (v->kind != PAL_YNODE_MAP) {
		jdiag(c, v, "dst: expected auto or a mapping {gap, overlap}, got %s",
		      pal_ynode_describe(v));
		return;
	}
	/* an explicit policy: omitted keys take the fixed-time defaults */
	s->dst.is_auto = false;
	s->dst.gap = PAL_DST_GAP_SHIFT;
	s->dst.overlap = PAL_DST_OVERLAP_FIRST;
	walk_section(c, &dst_section, v, s);
}

static void k_dst_gap(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	int e;

	if (pal_yget_enum(c->doc, v, "dst gap policy", gap_names, N(gap_names), &e, c->diags))
		c->errors++;
	else
		s->dst.gap = (pal_dst_gap)e;
}

static void k_dst_overlap(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	int e;

	if (pal_yget_enum(c->doc, v, "dst overlap policy", dst_overlap_names, N(dst_overlap_names),
			  &e, c->diags))
		c->errors++;
	else
		s->dst.overlap = (pal_dst_overlap)e;
}

static void get_instant(struct jctx *c, const pal_ynode *v, const char *what, bool *has,
			int64_t *out)
{
	char *str = get_str(c, v, what, 64);
	int64_t t;

	if (!str)
		return;
	if (pal_parse_rfc3339(str, &t) != 0) {
		jdiag(c, v,
		      "%s: invalid timestamp \"%.64s\" (expected rfc 3339 with a zone, such as "
		      "2026-01-01T00:00:00Z or 2026-01-01T02:00:00+02:00)",
		      what, str);
	} else {
		*has = true;
		*out = t;
	}
	free(str);
}

static void k_start(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	c->n_start = v;
	get_instant(c, v, "start", &s->has_start, &s->start);
}

/* A schedule duration of whole seconds in [MIN_S, MAX_S] into *OUT. */
static void get_seconds(struct jctx *c, const pal_ynode *v, const char *what, int64_t min_s,
			int64_t max_s, int64_t *out)
{
	int64_t ms;

	if (pal_yget_duration(c->doc, v, what, min_s * MS_S, max_s * MS_S, false, &ms, c->diags)) {
		c->errors++;
		return;
	}
	if (ms % MS_S) {
		jdiag(c, v, "%s: schedules have whole seconds (got %lld ms)", what, (long long)ms);
		return;
	}
	*out = ms / MS_S;
}

static void k_every(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	c->n_every = v;
	get_seconds(c, v, "every", 1, 366 * 86400, &s->every_s);
}

static void k_at(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	c->n_at = v;
	get_instant(c, v, "at", &s->has_at, &s->at);
}

static void k_spread(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	get_seconds(c, v, "spread", 1, 7 * 86400, &s->spread_s);
}

static void k_jitter(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	get_seconds(c, v, "jitter", 1, 86400, &s->jitter_s);
}

static void k_end(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	c->n_end = v;
	get_instant(c, v, "end", &s->has_end, &s->end);
}

/* `calendar: NAME` or a list of names: each a calendar loaded before this
 * job (earlier in the file, or in an earlier file), copied into the spec. */
static void k_calendar(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	const pal_ynode *one[1] = {v};
	const pal_ynode *const *names = one;
	size_t n = 1;

	if (v->kind == PAL_YNODE_SEQ) {
		names = (const pal_ynode *const *)v->vals;
		n = v->n;
		if (n == 0) {
			jdiag(c, v, "calendar: empty list; hint: name a calendar or leave the key out");
			return;
		}
	}
	pal_calendar *cals = calloc(n, sizeof *cals);
	size_t k = 0;

	if (!cals) {
		jdiag(c, v, "calendar: out of memory");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		char *name = get_str(c, names[i], "calendar", NAME_MAX_LEN);
		const pal_calendar *cal = name ? loaded_calendar(c->l, name) : NULL;
		bool twice = false;

		for (size_t j = 0; cal && j < k; j++)
			twice |= !strcmp(cals[j].name, name);
		if (name && !cal)
			jdiag(c, names[i],
			      "unknown calendar \"%.128s\"; hint: define it under \"calendars:\" "
			      "before the jobs that name it (earlier in this file or in an earlier "
			      "file)",
			      name);
		else if (twice)
			jdiag(c, names[i], "calendar \"%.128s\" named twice", name);
		else if (cal && pal_calendar_copy(&cals[k], cal) == 0)
			k++;
		else if (cal)
			jdiag(c, names[i], "calendar: out of memory");
		free(name);
	}
	for (size_t i = 0; i < s->n_calendars; i++)
		pal_calendar_clear(&s->calendars[i]);
	free(s->calendars);
	s->calendars = cals;
	s->n_calendars = k;
}

static void k_exclude(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	pal_exclusion *ex;
	size_t n = 0;

	if (pal_yexpect_seq(c->doc, v, "exclude", c->diags) != 0) {
		c->errors++;
		return;
	}
	if (v->n > MAX_EXCLUSIONS) {
		jdiag(c, v,
		      "exclude: too many entries (%zu, at most %d); hint: use date ranges "
		      "such as 2026-12-24..2027-01-01",
		      v->n, MAX_EXCLUSIONS);
		return;
	}
	ex = calloc(v->n ? v->n : 1, sizeof *ex);
	if (!ex) {
		jdiag(c, v, "exclude: out of memory");
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		const pal_ynode *it = v->vals[i];
		char *str = get_str(c, it, "exclude", 64), *dots;
		int64_t a, b;

		if (!str)
			continue;
		dots = strstr(str, "..");
		if (dots) {
			*dots = '\0';
			if (pal_parse_date(str, &a) != 0 || pal_parse_date(dots + 2, &b) != 0) {
				*dots = '.';
				jdiag(c, it,
				      "exclude: invalid date range \"%.64s\" (expected "
				      "YYYY-MM-DD..YYYY-MM-DD)",
				      str);
			} else if (a > b) {
				jdiag(
				    c, it,
				    "exclude: range \"%s..%s\" ends before it starts; hint: write "
				    "the earlier date first",
				    str, dots + 2);
			} else {
				ex[n].first_day = a;
				ex[n++].last_day = b;
			}
		} else if (pal_parse_date(str, &a) != 0) {
			jdiag(c, it,
			      "exclude: invalid date \"%.64s\" (expected YYYY-MM-DD or "
			      "YYYY-MM-DD..YYYY-MM-DD)",
			      str);
		} else {
			ex[n].first_day = ex[n].last_day = a;
			n++;
		}
		free(str);
	}
	free(s->exclusions);
	s->exclusions = ex;
	s->n_exclusions = n;
}

static void k_misfire(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
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
	walk_section(c, &misfire_section, v, s);
}

static void k_partitions(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
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

static void k_idem(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	char *str = get_str(c, v, "idempotency_key", TEMPLATE_MAX_LEN);

	if (!str)
		return;
	if (!str[0]) {
		jdiag(c, v,
		      "idempotency_key: must not be empty; hint: remove the key to use "
		      "the default {job}/{scheduled_at}/{partition}");
		free(str);
		return;
	}
	if (str[0] == ' ' || str[strlen(str) - 1] == ' ') {
		jdiag(c, v,
		      "idempotency_key: \"%.64s\" begins or ends with a space; HTTP drops "
		      "such spaces from a header value, so the sink would store another key "
		      "than the one palisade asks about; remove them",
		      str);
		free(str);
		return;
	}
	for (size_t i = 0; str[i]; i++) {
		unsigned char ch = (unsigned char)str[i];

		if (ch < 0x20 || ch == 0x7F) {
			jdiag_at(c, v, i,
				 "idempotency_key: control character 0x%02X; the key travels "
				 "in an HTTP header line and must be printable",
				 ch);
			free(str);
			return;
		}
	}
	free(s->idempotency_key);
	s->idempotency_key = str;
	c->n_idem = v; /* a scalar: checked as a template in cross_checks() */
}

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
				jdiag(c, kn, "unknown key \"%.64s\" in after (did you mean \"%s\"?)",
				      kn->str, hint);
			else
				jdiag(c, kn,
				      "unknown key \"%.64s\" in after; hint: an upstream has the "
				      "keys job, on and within",
				      kn->str);
		}
	}
	if (!jn) {
		jdiag(c, it, "after is missing the required key \"job\"");
		return;
	}
	if (jn->kind == PAL_YNODE_SCALAR && (strchr(jn->str, '/') || strchr(jn->str, ':'))) {
		jdiag(c, jn,
		      "after.job: \"%.64s\" names a job of another cluster; hint: an upstream "
		      "must be a job of the cluster the file is applied to",
		      jn->str);
		return;
	}
	check_name(c, jn, "after.job", NAME_MAX_LEN, &a->job);
	a->line = jn->line;
	a->col = jn->col;
}

static void k_after(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	pal_after *a;

	c->n_after = v;
	if (pal_yexpect_seq(c->doc, v, "after", c->diags) != 0) {
		c->errors++;
		return;
	}
	if (v->n == 0 || v->n > MAX_AFTER) {
		jdiag(c, v, "after: expected 1 to %d upstream jobs, got %zu", MAX_AFTER, v->n);
		return;
	}
	a = calloc(v->n, sizeof *a);
	if (!a) {
		jdiag(c, v, "after: out of memory");
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		after_item(c, v->vals[i], &a[i]);
		for (size_t k = 0; a[i].job && k < i; k++)
			if (a[k].job && !strcmp(a[k].job, a[i].job))
				jdiag(c, v->vals[i], "after: upstream \"%s\" is listed twice",
				      a[i].job);
	}
	s->after = a;
	s->n_after = v->n;
}

static void k_suspend(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	static const char *const names[] = {"false", "true"};
	int e;

	if (pal_yget_enum(c->doc, v, "suspend (true or false)", names, 2, &e, c->diags) == 0)
		s->suspend = e == 1;
	else
		c->errors++;
}

/* mode: live (default) or shadow: apply puts the job in shadow (docs/jobs.md) */
static void k_mode(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	static const char *const names[] = {"live", "shadow"};
	int e;

	if (pal_yget_enum(c->doc, v, "mode (live or shadow)", names, 2, &e, c->diags) == 0)
		s->shadow = e == 1;
	else
		c->errors++;
}

/* Free text kept with the job (owner, description): printable, no control
 * characters but newlines (and tabs) in a description. */
static void meta_text(struct jctx *c, const pal_ynode *v, const char *what, size_t max,
		      bool multiline, char **out)
{
	char *str = get_str(c, v, what, max);

	if (!str)
		return;
	for (size_t i = 0; str[i]; i++) {
		unsigned char ch = (unsigned char)str[i];

		if ((ch < 0x20 && !(multiline && (ch == '\n' || ch == '\t'))) || ch == 0x7F) {
			jdiag_at(c, v, i, "%s: control character 0x%02X", what, ch);
			free(str);
			return;
		}
	}
	free(*out);
	*out = str;
}

static void k_owner(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	meta_text(c, v, "owner", OWNER_MAX_LEN, false, &s->owner);
}

static void k_description(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	meta_text(c, v, "description", DESCRIPTION_MAX_LEN, true, &s->description);
}

static void k_method(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	int e;
	char *m;

	if (pal_yget_enum(c->doc, v, "http method", method_names, N(method_names), &e, c->diags) !=
	    0) {
		c->errors++;
		return;
	}
	m = strdup(method_names[e]);
	if (!m) {
		c->errors++;
		return;
	}
	free(s->method);
	s->method = m;
}

static void k_url(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	char *u = get_str(c, v, "url", URL_MAX_LEN);
	int before = c->errors;

	if (!u)
		return;
	if (check_url(c, v, "url", u))
		check_template(c, v, "url", 0, true);
	if (c->errors != before) {
		free(u);
		return;
	}
	free(s->url);
	s->url = u;
}

static void k_status_url(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	char *u = get_str(c, v, "status_url", URL_MAX_LEN);
	int before = c->errors;

	c->n_status_url = v;
	if (!u)
		return;
	if (check_url(c, v, "status_url", u))
		check_template(c, v, "status_url", PH_COMMON | PH_IDEMPOTENCY_KEY, true);
	if (c->errors != before) {
		free(u);
		return;
	}
	free(s->status_url);
	s->status_url = u;
}

/* Sent as the tracestate header beside palisade's traceparent
 * (docs/protocol.md, "Trace context"): fixed text, no placeholders. */
static void k_tracestate(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	char why[256];
	char *t = get_str(c, v, "tracestate", PAL_TRACESTATE_MAX);

	if (!t)
		return;
	if (!pal_tracestate_valid(t, why, sizeof why)) {
		jdiag(c, v, "%s (W3C Trace Context)", why);
		free(t);
		return;
	}
	free(s->tracestate);
	s->tracestate = t;
}

/* ---- notify ---- */

#define MAX_NOTIFY 16

/* One `notify:` entry's "on": an event name or a list of them, each once. */
static unsigned notify_events(struct jctx *c, const pal_ynode *v)
{
	unsigned ev = 0;
	size_t n = v->kind == PAL_YNODE_SEQ ? v->n : 1;

	if (v->kind == PAL_YNODE_MAP) {
		jdiag(c, v, "notify: on: expected an event or a list of events");
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		const pal_ynode *it = v->kind == PAL_YNODE_SEQ ? v->vals[i] : v;
		int e;

		if (pal_yget_enum(c->doc, it, "notify event", pal_notify_event_names,
				  PAL_NOTIFY_N_EVENTS, &e, c->diags) != 0) {
			c->errors++;
			return 0;
		}
		if (ev & (1u << e)) {
			jdiag(c, it, "notify: on: \"%s\" is listed twice",
			      pal_notify_event_names[e]);
			return 0;
		}
		ev |= 1u << e;
	}
	if (!ev)
		jdiag(c, v,
		      "notify: on: expected at least one event (failed, manual, misfire, "
		      "quarantined, recovered)");
	return ev;
}

/* The secret of a webhook: exactly one ${NAME} reference, resolved by the
 * delivering executor, so that no secret is ever stored or logged. */
static char *notify_secret(struct jctx *c, const pal_ynode *v)
{
	char *str = get_str(c, v, "notify: secret", 256);
	size_t n;

	if (!str)
		return NULL;
	n = strlen(str);
	if (n < 4 || str[0] != '$' || str[1] != '{' || str[n - 1] != '}' ||
	    strspn(str + 2, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != n - 3 ||
	    (str[2] >= '0' && str[2] <= '9')) {
		jdiag(c, v,
		      "notify: secret must be one ${NAME} reference to an environment variable "
		      "holding a whsec_ secret, not the secret itself (it would be stored in the "
		      "job's version)");
		free(str);
		return NULL;
	}
	return str;
}

/*
 * `notify: [{on: [failed, ...], url: URL, secret: ${NAME}}]`: who is told
 * of which events of the job (docs/jobs.md).  Every entry needs all three
 * keys; the url is an http(s) url without placeholders or secrets.
 */
static void k_notify(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	static const char *const keys[] = {"on", "url", "secret"};
	pal_notify *out;
	size_t n = 0;

	if (pal_yexpect_seq(c->doc, v, "notify", c->diags) != 0) {
		c->errors++;
		return;
	}
	if (v->n == 0 || v->n > MAX_NOTIFY) {
		jdiag(c, v,
		      "notify: expected 1 to %d entries, got %zu; hint: leave the key out "
		      "for none",
		      MAX_NOTIFY, v->n);
		return;
	}
	out = calloc(v->n, sizeof *out);
	if (!out) {
		jdiag(c, v, "notify: out of memory");
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		const pal_ynode *e = v->vals[i], *on, *url, *sec;
		pal_notify d = {0};
		int before = c->errors;

		if (pal_yexpect_map(c->doc, e, "notify entry", c->diags) != 0) {
			c->errors++;
			continue;
		}
		for (size_t k = 0; k < e->n; k++) {
			bool known = false;

			for (size_t x = 0; x < N(keys); x++)
				known = known || !strcmp(e->keys[k]->str, keys[x]);
			if (!known) {
				const char *hint = pal_suggest(e->keys[k]->str, keys, N(keys));

				if (hint)
					jdiag(c, e->keys[k],
					      "unknown key \"%s\" in notify (did you mean \"%s\"?)",
					      e->keys[k]->str, hint);
				else
					jdiag(c, e->keys[k],
					      "unknown key \"%s\" in notify (expected on, url, "
					      "secret)",
					      e->keys[k]->str);
			}
		}
		on = pal_ynode_get(e, "on");
		url = pal_ynode_get(e, "url");
		sec = pal_ynode_get(e, "secret");
		if (!on || !url || !sec) {
			jdiag(c, e,
			      "notify: missing key \"%s\" (every entry has on, url and secret)",
			      !on    ? "on"
			      : !url ? "url"
				     : "secret");
			continue;
		}
		d.events = notify_events(c, on);
		d.url = get_str(c, url, "notify: url", URL_MAX_LEN);
		if (d.url && check_url(c, url, "notify: url", d.url))
			check_template(c, url, "notify: url", 0, false);
		d.secret = notify_secret(c, sec);
		if (c->errors != before || !d.events || !d.url || !d.secret) {
			free(d.url);
			free(d.secret);
			continue;
		}
		out[n++] = d;
	}
	for (size_t i = 0; i < s->n_notify; i++) {
		free(s->notify[i].url);
		free(s->notify[i].secret);
	}
	free(s->notify);
	s->notify = out;
	s->n_notify = n;
}

/* The first bytes of the response body each attempt keeps: a count of
 * bytes, plain or with a unit (B, KiB, MiB), 0 keeping none. */
static void k_keep_body(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	static const struct {
		const char *unit;
		int64_t mult;
	} units[] = {{"", 1}, {"B", 1}, {"KiB", 1024}, {"MiB", 1024 * 1024}};
	char *t = get_str(c, v, "keep_body", 32), *end;
	long long n;

	if (!t)
		return;
	errno = 0;
	n = isdigit((unsigned char)t[0]) ? strtoll(t, &end, 10) : -1;
	for (size_t i = 0; n >= 0 && !errno && i < N(units); i++) {
		if (strcmp(end, units[i].unit) != 0)
			continue;
		if (n <= PAL_KEEP_BODY_MAX / units[i].mult) {
			s->has_keep_body = true;
			s->keep_body = n * units[i].mult;
			free(t);
			return;
		}
		break;
	}
	jdiag(c, v,
	      "keep_body: \"%s\" is not a size from 0 to 1MiB (bytes, or a number with B, KiB or "
	      "MiB)",
	      t);
	free(t);
}

static bool tchar(char ch);

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The response headers each attempt keeps, by name: stored in lower case,
 * sorted, each once (header names are case-insensitive). */
static void k_keep_headers(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	char **names;
	size_t n = 0;

	if (pal_yexpect_seq(c->doc, v, "keep_headers", c->diags) != 0) {
		c->errors++;
		return;
	}
	if (v->n > PAL_KEEP_HEADERS_MAX) {
		jdiag(c, v, "keep_headers: too many names (%zu, at most %d)", v->n,
		      PAL_KEEP_HEADERS_MAX);
		return;
	}
	names = calloc(v->n ? v->n : 1, sizeof *names);
	if (!names) {
		jdiag(c, v, "keep_headers: out of memory");
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		char *name = get_str(c, v->vals[i], "keep_headers name", 128);
		bool ok = name && name[0];

		for (size_t k = 0; ok && name[k]; k++)
			ok = tchar(name[k]);
		if (name && !ok)
			jdiag(c, v->vals[i],
			      "keep_headers: invalid header name \"%.64s\" (letters, digits and "
			      "!#$%%&'*+-.^_`|~ only)",
			      name);
		if (!ok) {
			free(name);
			continue;
		}
		for (size_t k = 0; name[k]; k++)
			name[k] = g_ascii_tolower(name[k]);
		names[n++] = name;
	}
	qsort(names, n, sizeof *names, cmp_str);
	size_t u = 0;
	for (size_t i = 0; i < n; i++) {
		if (u && !strcmp(names[u - 1], names[i]))
			free(names[i]);
		else
			names[u++] = names[i];
	}
	for (size_t i = 0; i < s->n_keep_headers; i++)
		free(s->keep_headers[i]);
	free(s->keep_headers);
	s->keep_headers = names;
	s->n_keep_headers = u;
}

static void k_body(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	char *b = get_str(c, v, "body", BODY_MAX_LEN);
	int before = c->errors;

	c->n_body = v;
	if (!b)
		return;
	check_template(c, v, "body", PH_COMMON, true);
	if (c->errors != before) {
		free(b);
		return;
	}
	free(s->body);
	s->body = b;
}

static bool tchar(char ch)
{
	return isalnum((unsigned char)ch) || strchr("!#$%&'*+-.^_`|~", ch);
}

/* Headers the executor sets itself (docs/jobs.md, docs/protocol.md). */
static bool reserved_header(const char *name)
{
	static const char *const reserved[] = {"idempotency-key", "host", "content-length",
					       "transfer-encoding", "connection"};

	if (!g_ascii_strncasecmp(name, "palisade-", 9))
		return true;
	for (size_t i = 0; i < N(reserved); i++)
		if (!g_ascii_strcasecmp(name, reserved[i]))
			return true;
	return false;
}

static void k_headers(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	pal_header *h;
	size_t n = 0;

	if (pal_yexpect_map(c->doc, v, "headers", c->diags) != 0) {
		c->errors++;
		return;
	}
	if (v->n > MAX_HEADERS) {
		jdiag(c, v, "headers: too many headers (%zu, at most %d)", v->n, MAX_HEADERS);
		return;
	}
	h = calloc(v->n ? v->n : 1, sizeof *h);
	if (!h) {
		jdiag(c, v, "headers: out of memory");
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		const pal_ynode *kn = v->keys[i], *vn = v->vals[i];
		const char *name = kn->str;
		bool ok = name[0] != '\0' && strlen(name) <= 128;
		char *val;
		int before = c->errors;

		for (size_t k = 0; ok && name[k]; k++)
			ok = tchar(name[k]);
		if (!ok) {
			jdiag(c, kn,
			      "headers: invalid header name \"%.64s\" (letters, digits and "
			      "!#$%%&'*+-.^_`|~ only)",
			      name);
			continue;
		}
		if (reserved_header(name)) {
			jdiag(c, kn,
			      "headers: \"%s\" is set by palisade itself and cannot be "
			      "configured; hint: see the side-effect protocol in docs/jobs.md",
			      name);
			continue;
		}
		for (size_t k = 0; k < n; k++) {
			if (!g_ascii_strcasecmp(h[k].name, name)) {
				jdiag(c, kn,
				      "headers: \"%s\" repeats \"%s\" (header names are "
				      "case-insensitive)",
				      name, h[k].name);
				break;
			}
		}
		if (c->errors != before)
			continue;
		val = get_str(c, vn, "header value", 8192);
		if (!val)
			continue;
		if (strpbrk(val, "\r\n")) {
			jdiag(c, vn,
			      "headers: the value of \"%s\" contains a line break; hint: use "
			      "a quoted single-line string",
			      name);
			free(val);
			continue;
		}
		check_template(c, vn, "header value", 0, true);
		if (c->errors != before) {
			free(val);
			continue;
		}
		h[n].name = strdup(name);
		h[n].value = val;
		if (!h[n].name) {
			free(val);
			c->errors++;
			continue;
		}
		n++;
	}
	for (size_t i = 0; i < s->n_headers; i++) {
		free(s->headers[i].name);
		free(s->headers[i].value);
	}
	free(s->headers);
	s->headers = h;
	s->n_headers = n;
}

/* ---- checks that span keys ---- */

/*
 * The schedule as a whole: exactly one of cron, every and at; a schedule
 * that can never fire is a mistake, not a job (Feb 30, nothing between
 * start and end, an `at` outside them).  One that fired in the past but
 * never will again (a past `at`, a cron whose years are past, an `end` gone
 * by) is valid: a file must not go bad with the mere passing of time, and
 * one such job must not block the apply of all the others.  It is marked
 * spent, and validate and apply report it.
 */
static void schedule_checks(struct jctx *c, const pal_ynode *job, pal_job_spec *s)
{
	const pal_ynode *where = c->n_cron ? c->n_cron : c->n_every ? c->n_every : c->n_at;
	int forms = (c->n_cron != NULL) + (c->n_every != NULL) + (c->n_at != NULL);
	int64_t now = (int64_t)time(NULL), first = 0;
	bool fires_again = true;

	if (forms != 1) {
		/* a bad cron was diagnosed already */
		if (forms > 1 || (!c->n_cron && c->n_schedule))
			jdiag(c, forms > 1 ? where : c->n_schedule,
			      forms > 1
				  ? "schedule: cron, every and at exclude each other; hint: "
				    "keep one"
				  : "schedule is missing the required key \"cron\" (or \"every\" "
				    "or \"at\")");
		return;
	}
	if (s->has_start && s->has_end && s->start >= s->end)
		return; /* diagnosed above */
	if (s->every_s) {
		first = s->has_start ? s->start : now;
		fires_again = !s->has_end || s->end > now;
	} else if (s->has_at) {
		if ((s->has_start && s->at < s->start) || (s->has_end && s->at >= s->end)) {
			jdiag(c, c->n_at, "at is outside [start, end); hint: end is exclusive");
			return;
		}
		fires_again = s->at > now;
	} else if (c->cron_ok && c->tz_ok && s->cron && s->timezone) {
		const pal_cron *cr;
		const pal_tz *tz;
		char err[256], *text = NULL;
		int64_t after = s->has_start ? s->start - 1 : 0, next;

		if (pal_cron_resolve_hash(s->cron, s->id ? s->id : "", &text, err, sizeof err) ||
		    !(cr = cached_cron(c->l, text, err, sizeof err, NULL)) ||
		    !(tz = cached_tz(c->l, s->timezone, err, sizeof err))) {
			free(text);
			return; /* diagnosed where the cron and zone were read */
		}
		free(text);
		if (pal_cron_next(cr, tz, s->dst, after, &first) == PAL_ENOENT) {
			jdiag(c, c->n_cron, "cron expression \"%s\" never fires%s", s->cron,
			      s->has_start ? " after start" : "");
			return;
		}
		if (s->has_end && first >= s->end) {
			jdiag(c, c->n_cron,
			      "cron expression \"%s\" never fires between start and end", s->cron);
			return;
		}
		fires_again =
		    pal_cron_next(cr, tz, s->dst, after > now ? after : now, &next) == 0 &&
		    (!s->has_end || next < s->end);
	}
	s->spent = !fires_again || (s->has_end && s->end <= now);
}

static void cross_checks(struct jctx *c, const pal_ynode *job, pal_job_spec *s)
{
	/* only meaningful when the parts they combine are valid */
	if (s->has_start && s->has_end && s->start >= s->end) {
		char a[32], b[32];

		pal_fmt_rfc3339(s->start, a, sizeof a);
		pal_fmt_rfc3339(s->end, b, sizeof b);
		jdiag(c, c->n_end, "end (%s) is not after start (%s); hint: end is exclusive", b,
		      a);
	}
	if (c->n_backoff_max && s->backoff_max_ms < s->backoff_initial_ms) {
		char a[32], b[32];

		jdiag(c, c->n_backoff_max, "retry.backoff.max (%s) is less than initial (%s)",
		      pal_fmt_duration(s->backoff_max_ms, a, sizeof a),
		      pal_fmt_duration(s->backoff_initial_ms, b, sizeof b));
	}
	if (s->idempotency_key) {
		const pal_ynode *n = c->n_idem ? c->n_idem : job;
		unsigned used;
		int before = c->errors;

		if (c->n_idem) {
			used = check_template(c, n, "idempotency_key", PH_COMMON, false);
		} else {
			/* the default template: always valid */
			used = PH_JOB | PH_SCHEDULED_AT | PH_PARTITION;
		}
		if (c->errors == before) {
			if (!(used & PH_JOB))
				jdiag(c, n,
				      "idempotency_key: must contain {job}: without it two jobs "
				      "can share a key and one effect would be suppressed");
			if (!(used & PH_SCHEDULED_AT))
				jdiag(c, n,
				      "idempotency_key: must contain {scheduled_at}: without "
				      "it every instant shares one key and only the first would "
				      "take effect");
			if (s->partitions > 1 && !(used & PH_PARTITION))
				jdiag(c, n,
				      "idempotency_key: must contain {partition} when "
				      "partitions is %d: partitions would share one key",
				      (int)s->partitions);
		}
		if (c->errors == before && c->n_idem) {
			size_t max = idem_key_max_len(s->idempotency_key, s->id);

			if (max > IDEM_KEY_MAX)
				jdiag(
				    c, n,
				    "idempotency_key: expands to up to %zu bytes, more than the "
				    "%d an Idempotency-Key may have (docs/protocol.md); "
				    "placeholders count at their longest: {job} %zu, "
				    "{scheduled_at} %d, {scheduled_date} %d, {partition} %d, "
				    "{trigger} %d, {request_id} %d, and without {request_id} the "
				    "\"/<request id>\" of a manual run's key %d; hint: shorten "
				    "the fixed text",
				    max, IDEM_KEY_MAX, s->id ? strlen(s->id) : (size_t)NAME_MAX_LEN,
				    SCHEDULED_AT_LEN, SCHEDULED_DATE_LEN, PARTITION_MAX_LEN,
				    TRIGGER_ID_MAX_LEN, REQUEST_ID_MAX_LEN, PAL_TPL_KEY_SUFFIX_MAX);
		}
	}
	if (c->n_body && s->method && !strcmp(s->method, "GET"))
		jdiag(c, c->n_body,
		      "body: a GET request carries no body; hint: use POST or "
		      "remove body");

	schedule_checks(c, job, s);
}

/* ---- jobs and files ---- */

/* Where a job id was first defined, for the duplicate diagnostic; the id
 * itself follows the struct (it is the hash table's key) and the file name
 * is the loader's copy, shared by every job of the file. */
struct idpos {
	const char *file;
	int line, col;
	char id[];
};

struct pal_jobloader {
	GHashTable *ids;  /* id -> struct idpos (freed with the table) */
	GPtrArray *files; /* the file names idpos point to */
	/* Zones and crons that parsed, by name and normalised expression: a
	 * million jobs share a handful of each, and opening a zone (a file
	 * read) and parsing a cron twice per job was a fifth of a load. */
	GHashTable *tzs;   /* name -> pal_tz */
	GHashTable *crons; /* expression -> pal_cron */
	GHashTable *cals;  /* name -> pal_calendar (the `calendars:` loaded so far) */
	pal_after_graph *after; /* the valid jobs with `after`, for the set's checks */
};

static const pal_tz *cached_tz(struct pal_jobloader *l, const char *name, char *err, size_t errlen)
{
	pal_tz *tz = g_hash_table_lookup(l->tzs, name);
	char *key;

	if (tz)
		return tz;
	if (pal_tz_open(name, &tz, err, errlen) != 0)
		return NULL;
	if ((key = strdup(name)))
		g_hash_table_insert(l->tzs, key, tz);
	else
		pal_tz_close(tz); /* out of memory: fail like a bad zone would */
	return key ? tz : NULL;
}

static const pal_cron *cached_cron(struct pal_jobloader *l, const char *expr, char *err,
				   size_t errlen, int *field)
{
	pal_cron *cr = g_hash_table_lookup(l->crons, expr);
	char *key;

	if (cr)
		return cr;
	if (pal_cron_parse(expr, &cr, err, errlen, field) != 0)
		return NULL;
	if ((key = strdup(expr)))
		g_hash_table_insert(l->crons, key, cr);
	else
		pal_cron_free(cr);
	return key ? cr : NULL;
}

static const pal_calendar *loaded_calendar(struct pal_jobloader *l, const char *name)
{
	return g_hash_table_lookup(l->cals, name);
}

static void tz_free(void *p)
{
	pal_tz_close(p);
}

static void cron_free(void *p)
{
	pal_cron_free(p);
}

static void cal_free(void *p)
{
	pal_calendar_clear(p);
	free(p);
}

pal_jobloader *pal_jobloader_new(void)
{
	pal_jobloader *l = calloc(1, sizeof *l);

	if (!l)
		return NULL;
	l->ids = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, free);
	l->files = g_ptr_array_new_with_free_func(free);
	l->tzs = g_hash_table_new_full(g_str_hash, g_str_equal, free, tz_free);
	l->crons = g_hash_table_new_full(g_str_hash, g_str_equal, free, cron_free);
	l->cals = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, cal_free);
	l->after = pal_after_graph_new();
	if (!l->after) {
		pal_jobloader_free(l);
		return NULL;
	}
	return l;
}

void pal_jobloader_free(pal_jobloader *l)
{
	if (!l)
		return;
	g_hash_table_destroy(l->ids);
	g_ptr_array_free(l->files, TRUE);
	g_hash_table_destroy(l->tzs);
	g_hash_table_destroy(l->crons);
	g_hash_table_destroy(l->cals);
	pal_after_graph_free(l->after);
	free(l);
}

static bool seen_cb(void *arg, const char *id)
{
	return pal_jobloader_seen(arg, id);
}

pal_after_graph *pal_jobloader_after(pal_jobloader *l)
{
	return l->after;
}

bool pal_jobloader_seen(const pal_jobloader *l, const char *id)
{
	return l && g_hash_table_contains(l->ids, id);
}

/* The loader's copy of file name NAME (the last one added when equal). */
static const char *intern_file(pal_jobloader *l, const char *name)
{
	if (!name)
		return NULL;
	if (l->files->len && !strcmp(g_ptr_array_index(l->files, l->files->len - 1), name))
		return g_ptr_array_index(l->files, l->files->len - 1);
	char *copy = strdup(name);

	if (copy)
		g_ptr_array_add(l->files, copy);
	return copy;
}

/* Remember ID as defined at FILE:LINE:COL (FILE interned), unless it is
 * known already (the first definition is the one diagnostics name). */
static void remember_id(pal_jobloader *l, const char *id, const char *file, int line, int col)
{
	size_t n = strlen(id);
	struct idpos *ip;

	if (g_hash_table_contains(l->ids, id) || !(ip = malloc(sizeof *ip + n + 1)))
		return;
	memcpy(ip->id, id, n + 1);
	ip->file = file;
	ip->line = line;
	ip->col = col;
	g_hash_table_insert(l->ids, ip->id, ip);
}

/* Append S to SET, growing the array geometrically (set->n alone says how
 * much is allocated: the next power of two, at least 16). */
static int append_job(pal_jobset *set, pal_job_spec *s)
{
	size_t n = set->n;

	if (n == 0 || (n >= 16 && (n & (n - 1)) == 0)) {
		size_t cap = n < 16 ? 16 : 2 * n;
		pal_job_spec *v = realloc(set->jobs, cap * sizeof *v);

		if (!v)
			return PAL_ENOMEM;
		set->jobs = v;
	}
	set->jobs[set->n++] = *s;
	return 0;
}

/*
 * A job has a schedule or `after`, not both: this version has no way to
 * say how the two would combine (either's instants? both at once?), so a
 * file must pick one.  A dependent job gets the never-firing cron
 * PAL_AFTER_CRON, so that the schedule planner leaves it alone.
 */
static void after_schedule(struct jctx *c, const pal_ynode *jn, pal_job_spec *s)
{
	const pal_ynode *sched = pal_ynode_get(jn, "schedule");

	if (!c->n_after) {
		if (!sched)
			jdiag(c, jn, "job is missing the required key \"schedule\"");
		return;
	}
	if (sched) {
		jdiag(c, sched,
		      "a job with \"after\" may not also have a \"schedule\": its instants are "
		      "its upstreams' (this version cannot combine the two); hint: remove "
		      "the schedule, or make a job of its own for it");
		return;
	}
	free(s->cron);
	s->cron = strdup(PAL_AFTER_CRON);
	if (!s->cron)
		jdiag(c, jn, "out of memory");
}

/* Validate one job mapping; append it to SET when it has no problem.
 * Returns the number of problems. */
static int load_job(const pal_ydoc *doc, const char *file, const pal_ynode *jn, pal_jobset *set,
		    pal_jobloader *l, pal_diags *diags)
{
	struct jctx c = {.doc = doc, .diags = diags, .tz_ok = true, .l = l};
	pal_job_spec s;

	if (pal_job_spec_defaults(&s) != 0) {
		pal_ydiag(diags, doc, jn, "out of memory");
		return 1;
	}
	if (jn->kind != PAL_YNODE_MAP) {
		pal_ydiag(diags, doc, jn,
			  "job: expected a mapping with keys id, schedule, target, "
			  "got %s",
			  pal_ynode_describe(jn));
		pal_job_spec_clear(&s);
		return 1;
	}
	walk_section(&c, &job_section, jn, &s);
	after_schedule(&c, jn, &s);
	cross_checks(&c, jn, &s);

	if (s.id) {
		const pal_ynode *idn = pal_ynode_get(jn, "id");
		struct idpos *first = g_hash_table_lookup(l->ids, s.id);

		if (first)
			jdiag(&c, idn,
			      "duplicate job id \"%s\" (first defined at %s:%d:%d); hint: job ids "
			      "are unique across all files",
			      s.id, first->file ? first->file : "?", first->line, first->col);
		else
			remember_id(l, s.id, file, idn->line, idn->col);
	}
	if (c.errors == 0) {
		s.file = strdup(doc->file);
		s.line = jn->line;
		s.col = jn->col;
		if (!s.file ||
		    (s.n_after && pal_after_graph_add_loaded(l->after, s.id, s.after, s.n_after,
							     file) != 0) ||
		    append_job(set, &s) != 0) {
			pal_ydiag(diags, doc, jn, "out of memory");
			pal_job_spec_clear(&s);
			return 1;
		}
		return 0;
	}
	pal_job_spec_clear(&s);
	return c.errors;
}

/* Append calendar C (taken) to SET's list; PAL_ENOMEM leaves C to the caller. */
static int append_calendar(pal_jobset *set, pal_calendar *c)
{
	pal_calendar *v = realloc(set->calendars, (set->n_calendars + 1) * sizeof *v);

	if (!v)
		return PAL_ENOMEM;
	set->calendars = v;
	set->calendars[set->n_calendars++] = *c;
	return 0;
}

/* Validate one item of `calendars:`; known to the loader (for the jobs
 * after it) and appended to SET when it has no problem.  Returns the
 * number of problems. */
static int load_calendar(const pal_ydoc *doc, const pal_ynode *n, pal_jobset *set,
			 pal_jobloader *l, pal_diags *diags)
{
	pal_calendar c, *mine = NULL;
	int errors = pal__calfile_parse(doc, n, &c, diags);

	if (errors)
		return errors;
	const pal_calendar *first = g_hash_table_lookup(l->cals, c.name);

	if (first) {
		pal_ydiag(diags, doc, n,
			  "duplicate calendar \"%s\" (first defined at %s:%d:%d); hint: calendar "
			  "names are unique across all files",
			  c.name, first->file ? first->file : "?", first->line, first->col);
		pal_calendar_clear(&c);
		return 1;
	}
	c.file = doc->file ? strdup(doc->file) : NULL;
	if ((doc->file && !c.file) || !(mine = malloc(sizeof *mine)) ||
	    pal_calendar_copy(mine, &c) != 0 || append_calendar(set, &c) != 0) {
		pal_ydiag(diags, doc, n, "out of memory");
		free(mine);
		pal_calendar_clear(&c);
		return 1;
	}
	g_hash_table_insert(l->cals, mine->name, mine);
	return 0;
}

/* The top level of DOC: its calendars, then its jobs, the first SKIP_CALS
 * and SKIP of which were loaded already (while the file was parsed:
 * pal_jobloader_file_batches). */
static int load_doc(const pal_ydoc *doc, pal_jobset *set, pal_jobloader *l, pal_diags *diags,
		    size_t skip_cals, size_t skip)
{
	static const char *const top[] = {"jobs", "calendars"};
	const pal_ynode *root = doc->root, *jobs = NULL, *cals = NULL, *jobs_key = NULL;
	int errors = 0;

	if (!root || root->kind != PAL_YNODE_MAP) {
		pal_ydiag(diags, doc, root,
			  "expected a mapping with the key \"jobs\", got %s; hint: start the file "
			  "with \"jobs:\" followed by a list of jobs",
			  pal_ynode_describe(root));
		return 1;
	}
	for (size_t i = 0; i < root->n; i++) {
		const pal_ynode *kn = root->keys[i];
		const char *hint;

		if (!strcmp(kn->str, "jobs")) {
			jobs = root->vals[i];
			jobs_key = kn;
			continue;
		}
		if (!strcmp(kn->str, "calendars")) {
			cals = root->vals[i];
			if (jobs_key) {
				pal_ydiag(diags, doc, kn,
					  "\"calendars\" after \"jobs\" (line %d); hint: define "
					  "calendars before the jobs that name them",
					  jobs_key->line);
				errors++;
			}
			continue;
		}
		hint = pal_suggest(kn->str, top, N(top));
		errors++;
		if (hint)
			pal_ydiag(diags, doc, kn,
				  "unknown key \"%.64s\" at the top level (did you "
				  "mean \"%s\"?)",
				  kn->str, hint);
		else
			pal_ydiag(diags, doc, kn,
				  "unknown key \"%.64s\" at the top level; hint: "
				  "a job file holds only \"calendars:\" and \"jobs:\"",
				  kn->str);
	}
	if (cals && pal_yexpect_seq(doc, cals, "calendars", diags) != 0)
		errors++;
	else
		for (size_t i = skip_cals; cals && i < cals->n; i++)
			errors += load_calendar(doc, cals->vals[i], set, l, diags);
	if (!jobs && cals)
		return errors;
	if (!jobs) {
		if (!errors)
			pal_ydiag(diags, doc, root,
				  "the key \"jobs\" is missing; hint: start the file "
				  "with \"jobs:\" followed by a list of jobs");
		return errors + 1;
	}
	if (pal_yexpect_seq(doc, jobs, "jobs", diags) != 0)
		return errors + 1;
	const char *file = intern_file(l, doc->file);

	for (size_t i = skip; i < jobs->n; i++)
		errors += load_job(doc, file, jobs->vals[i], set, l, diags);
	return errors;
}

static gint diag_cmp(gconstpointer a, gconstpointer b, gpointer unused)
{
	const pal_diag *x = a, *y = b;
	long lx = x->line > 0 ? x->line : 0x7fffffffL, ly = y->line > 0 ? y->line : 0x7fffffffL;

	(void)unused;
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return x->col < y->col ? -1 : x->col > y->col;
}

/* Diagnostics of one file read best in file order; checks that span keys
 * run last, so sort (stable: same position keeps its order). */
static void sort_diags(pal_diags *d, size_t from)
{
	if (d && d->n > from + 1)
		g_qsort_with_data(d->v + from, (gint)(d->n - from), sizeof *d->v, diag_cmp, NULL);
}

/* Diagnostics of several files: by file, then in file order. */
static gint file_diag_cmp(gconstpointer a, gconstpointer b, gpointer unused)
{
	const pal_diag *x = a, *y = b;
	int c = strcmp(x->file ? x->file : "", y->file ? y->file : "");

	return c ? c : diag_cmp(a, b, unused);
}

size_t pal_jobloader_check_after(pal_jobloader *l, bool stored_checked, pal_diags *diags)
{
	size_t from = diags->n;
	size_t n = pal_after_graph_check(l->after, seen_cb, l, stored_checked, diags);

	if (diags->n > from + 1)
		g_qsort_with_data(diags->v + from, (gint)(diags->n - from), sizeof *diags->v,
				  file_diag_cmp, NULL);
	return n;
}

/* A loader that knows the ids of SET already (NULL on ENOMEM). */
static pal_jobloader *loader_for(const pal_jobset *set)
{
	pal_jobloader *l = pal_jobloader_new();

	for (size_t i = 0; l && i < set->n_calendars; i++) {
		pal_calendar *c = malloc(sizeof *c);

		if (c && pal_calendar_copy(c, &set->calendars[i]) == 0)
			g_hash_table_insert(l->cals, c->name, c);
		else
			free(c);
	}
	for (size_t i = 0; l && i < set->n; i++)
		if (set->jobs[i].id)
			remember_id(l, set->jobs[i].id, intern_file(l, set->jobs[i].file),
				    set->jobs[i].line, set->jobs[i].col);
	return l;
}

int pal_jobfile_load_buffer(const char *name, const void *buf, size_t len, pal_jobset *set,
			    pal_diags *diags)
{
	pal_jobloader *l = loader_for(set);
	pal_ydoc doc;
	int rc, errors = 0;

	size_t from = diags->n;

	if (!l)
		return PAL_ENOMEM;
	rc = pal_ydoc_load_buffer(name, buf, len, &doc, diags);
	if (rc == 0)
		errors = load_doc(&doc, set, l, diags, 0, 0);
	sort_diags(diags, from);
	pal_ydoc_free(&doc);
	pal_jobloader_free(l);
	if (rc)
		return rc == PAL_ENOMEM ? PAL_ENOMEM : PAL_EINVAL;
	return errors ? PAL_EINVAL : 0;
}

int pal_jobloader_file(pal_jobloader *l, const char *path, pal_jobset *set, pal_diags *diags)
{
	pal_ydoc doc;
	size_t from = diags->n;
	int rc = pal_ydoc_load_file(path, &doc, diags), bad = 0;

	if (rc == 0)
		bad = load_doc(&doc, set, l, diags, 0, 0);
	sort_diags(diags, from);
	pal_ydoc_free(&doc);
	return rc || bad ? PAL_EINVAL : 0;
}

/* One file's load by pal_jobloader_file_batches. */
struct batches {
	pal_jobloader *l;
	pal_diags *diags;
	size_t size;
	pal_jobbatch_fn take;
	void *arg;
	pal_jobset cur; /* valid jobs not handed over yet */
	size_t done;	/* items of `jobs` loaded while the file was parsed */
	size_t cals_done; /* and of `calendars` */
	int errors;
};

static void hand_over(struct batches *b)
{
	pal_jobset set = b->cur;

	b->cur = (pal_jobset){0};
	b->take(b->arg, &set);
}

/* An item of `jobs`, just parsed: validate it now (pal_ydoc_item_fn). */
static void batch_item(void *arg, const pal_ydoc *doc, const pal_ynode *key, const pal_ynode *item)
{
	struct batches *b = arg;

	if (!strcmp(key->str, "calendars")) {
		b->errors += load_calendar(doc, item, &b->cur, b->l, b->diags);
		b->cals_done++;
		return;
	}
	if (strcmp(key->str, "jobs"))
		return; /* an unknown top-level key: load_doc reports it */
	b->errors += load_job(doc, intern_file(b->l, doc->file), item, &b->cur, b->l, b->diags);
	b->done++;
	if (!b->errors && b->cur.n >= b->size)
		hand_over(b);
}

int pal_jobloader_file_batches(pal_jobloader *l, const char *path, size_t size,
			       pal_jobbatch_fn take, void *arg, pal_diags *diags)
{
	pal_ydoc doc;
	size_t from = diags->n;
	struct batches b = {
	    .l = l, .diags = diags, .size = size ? size : 1, .take = take, .arg = arg};
	int rc = pal_ydoc_load_file_items(path, &doc, diags, batch_item, &b);

	if (rc == 0)
		b.errors += load_doc(&doc, &b.cur, l, diags, b.cals_done, b.done);
	if (rc == 0 && !b.errors)
		hand_over(&b);
	pal_jobset_free(&b.cur);
	sort_diags(diags, from);
	pal_ydoc_free(&doc);
	return rc || b.errors ? PAL_EINVAL : 0;
}

int pal_jobfiles_load(const char *const *paths, size_t n, pal_jobset *set, pal_diags *diags)
{
	pal_jobloader *l = loader_for(set);
	int bad = 0;

	if (!l)
		return PAL_ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (pal_jobloader_file(l, paths[i], set, diags))
			bad++;
	if (pal_jobloader_check_after(l, false, diags))
		bad++;
	pal_jobloader_free(l);
	return bad ? PAL_EINVAL : 0;
}
