/*
 * jobkeys.c - the key table of a job and the walk that applies a table.
 *
 * Every key of a job lives in a table (struct keydef, jobfile_int.h): its
 * name, its type, where it is stored in pal_job_spec, its bounds, and
 * whether it is required.  pal__job_walk() applies a table to a mapping;
 * keys it does not know get a did-you-mean from the same table, or a
 * pointer to the section they belong in (every section's table is known
 * here, though each lives beside the keys it checks).  The checks every
 * kind of key shares are here too: the diagnostics at file:line:col that
 * count against the job, names, bounded strings, and the job's free text.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "jobfile_int.h"
#include "palisade/name.h"

_Static_assert(sizeof(pal_misfire_policy) == sizeof(int), "enum stored as int");
_Static_assert(sizeof(pal_overlap_policy) == sizeof(int), "enum stored as int");
_Static_assert(sizeof(pal_jitter) == sizeof(int), "enum stored as int");

#define OWNER_MAX_LEN 256
#define DESCRIPTION_MAX_LEN 4096
#define MAX_SECTION_KEYS 32 /* keys of one section's table */

void pal__job_diag(struct jctx *c, const pal_ynode *n, const char *fmt, ...)
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
void pal__job_diag_at(struct jctx *c, const pal_ynode *n, size_t off, const char *fmt, ...)
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

static void k_owner(struct jctx *c, const pal_ynode *v, pal_job_spec *s);
static void k_description(struct jctx *c, const pal_ynode *v, pal_job_spec *s);

static const struct keydef job_keys[] = {
    {"id", K_NAME, OFF(id), 1, NAME_MAX_LEN, NULL, 0, NULL, NULL, NULL, true},
    {"tenant", K_NAME, OFF(tenant), 1, 64, NULL, 0, NULL, NULL, NULL, false},
    {"group", K_NAME, OFF(group), 1, 64, NULL, 0, NULL, NULL, NULL, false},
    /* required unless `after` is given: load_job checks that */
    {"schedule", K_SECTION, 0, 0, 0, NULL, 0, NULL, &pal__job_schedule_section, NULL, false},
    {"after", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, pal__job_key_after, false},
    {"misfire", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, pal__job_key_misfire, false},
    {"overlap", K_ENUM, OFF(overlap), 0, 0, overlap_names, N(overlap_names), "overlap policy", NULL,
     NULL, false},
    {"partitions", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, pal__job_key_partitions, false},
    {"priority", K_INT32, OFF(priority), -100, 100, NULL, 0, NULL, NULL, NULL, false},
    {"max_in_flight", K_INT32, OFF(max_in_flight), 0, 1000000, NULL, 0, NULL, NULL, NULL, false},
    {"deadline", K_DURATION0, OFF(deadline_ms), 1 * MS_S, 90 * MS_D, NULL, 0, NULL, NULL, NULL,
     false},
    {"idempotency_key", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, pal__job_key_idem, false},
    {"target", K_SECTION, 0, 0, 0, NULL, 0, NULL, &pal__job_target_section, NULL, true},
    {"retry", K_SECTION, 0, 0, 0, NULL, 0, NULL, &pal__job_retry_section, NULL, false},
    {"notify", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, pal__job_key_notify, false},
    {"suspend", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, pal__job_key_suspend, false},
    {"mode", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, pal__job_key_mode, false},
    {"owner", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_owner, false},
    {"description", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, k_description, false},
    {"labels", K_CUSTOM, 0, 0, 0, NULL, 0, NULL, NULL, pal__job_key_labels, false},
};
const struct section pal__job_section = {"job", job_keys, N(job_keys)};

/* Every section, to say where a misplaced key belongs. */
static const struct section *const all_sections[] = {
    &pal__job_section,	       &pal__job_schedule_section, &pal__job_dst_section,
    &pal__job_misfire_section, &pal__job_target_section,   &pal__job_retry_section,
    &pal__job_backoff_section,
};

/* ---- generic value checks ---- */

/* An id, tenant or group name: [a-z0-9][a-z0-9._-]*, at most MAX bytes. */
void pal__job_name(struct jctx *c, const pal_ynode *v, const char *what, int64_t max, char **out)
{
	char *s = NULL;

	if (pal_yget_string(c->doc, v, what, &s, c->diags) != 0) {
		c->errors++;
		return;
	}
	if (!s[0]) {
		pal__job_diag(c, v, "%s: must not be empty", what);
		free(s);
		return;
	}
	if ((int64_t)strlen(s) > max) {
		pal__job_diag(c, v, "%s: \"%.32s...\" is too long (%zu bytes, at most %lld)", what,
			      s, strlen(s), (long long)max);
		free(s);
		return;
	}
	size_t n = strlen(s), i = pal_name_bad_byte(s, n);
	if (i < n) {
		pal__job_diag_at(c, v, i,
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
void pal__job_walk(struct jctx *c, const struct section *sec, const pal_ynode *map, pal_job_spec *s)
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
	if (sec == &pal__job_schedule_section)
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
				pal__job_diag(c, kn,
					      "unknown key \"%.64s\" in %s (did you mean \"%s\"?)",
					      kn->str, sec->name, hint);
			else if (home)
				pal__job_diag(
				    c, kn,
				    "unknown key \"%.64s\" in %s; hint: it belongs in the %s "
				    "section",
				    kn->str, sec->name, home);
			else
				pal__job_diag(
				    c, kn,
				    "unknown key \"%.64s\" in %s; hint: docs/jobs.md lists "
				    "the keys",
				    kn->str, sec->name);
		}
	}
	for (size_t j = 0; j < sec->n; j++)
		if (sec->keys[j].required && !seen[j])
			pal__job_diag(c, map, "%s is missing the required key \"%s\"", sec->name,
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
		pal__job_name(c, v, k->name, k->max, (char **)(base + k->off));
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
		pal__job_walk(c, k->sub, v, s);
		break;
	case K_CUSTOM:
		k->fn(c, v, s);
		break;
	}
}

/* A string key of at most MAX bytes; NULL (with a diagnostic) otherwise. */
char *pal__job_str(struct jctx *c, const pal_ynode *v, const char *what, size_t max)
{
	char *s = NULL;

	if (pal_yget_string(c->doc, v, what, &s, c->diags) != 0) {
		c->errors++;
		return NULL;
	}
	if (strlen(s) > max) {
		pal__job_diag(c, v, "%s: too long (%zu bytes, at most %zu)", what, strlen(s), max);
		free(s);
		return NULL;
	}
	return s;
}

/* ---- the job's free text ---- */

/* Free text kept with the job (owner, description): printable, no control
 * characters but newlines (and tabs) in a description. */
static void meta_text(struct jctx *c, const pal_ynode *v, const char *what, size_t max,
		      bool multiline, char **out)
{
	char *str = pal__job_str(c, v, what, max);

	if (!str)
		return;
	for (size_t i = 0; str[i]; i++) {
		unsigned char ch = (unsigned char)str[i];

		if ((ch < 0x20 && !(multiline && (ch == '\n' || ch == '\t'))) || ch == 0x7F) {
			pal__job_diag_at(c, v, i, "%s: control character 0x%02X", what, ch);
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
