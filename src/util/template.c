/*
 * template.c - placeholder and secret substitution (see template.h).
 */
#include <ctype.h>
#include <glib.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/template.h"
#include "palisade/timefmt.h"

static void append_value(GString *g, const char *v, bool url)
{
	if (!url) {
		g_string_append(g, v);
		return;
	}
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (isalnum(*p) || strchr("-._~", *p))
			g_string_append_c(g, (char)*p);
		else
			g_string_append_printf(g, "%%%02X", *p);
	}
}

/* Value of placeholder NAME[0..n) or NULL when not a placeholder. */
static const char *lookup(const pal_tpl_vars *v, const char *name, size_t n, char *buf, size_t len)
{
#define IS(s) (n == sizeof(s) - 1 && !memcmp(name, s, n))
	if (IS("job"))
		return v->job;
	if (IS("scheduled_at")) {
		pal_fmt_rfc3339(v->scheduled_at, buf, len);
		return buf;
	}
	if (IS("scheduled_date"))
		return v->scheduled_date ? v->scheduled_date : "";
	if (IS("partition")) {
		snprintf(buf, len, "%d", v->partition);
		return buf;
	}
	if (IS("trigger")) {
		snprintf(buf, len, "%" PRId64, v->trigger);
		return buf;
	}
	if (IS("request_id"))
		return v->request_id ? v->request_id : "";
	if (IS("idempotency_key"))
		return v->idempotency_key;
	return NULL;
#undef IS
}

#define SECRET_NAME_MAX 128

/* A secret reference "${NAME}" at P: NAME into NAME (NUL-terminated) and
 * the end of the reference returned; NULL when P holds none. */
static const char *secret_ref(const char *p, char name[SECRET_NAME_MAX])
{
	if (p[0] != '$' || p[1] != '{')
		return NULL;
	const char *e = strchr(p + 2, '}');
	size_t n = e ? (size_t)(e - p - 2) : 0;
	if (!n || n >= SECRET_NAME_MAX)
		return NULL;
	memcpy(name, p + 2, n);
	name[n] = '\0';
	return e + 1;
}

void pal_tpl_each_secret_name(const char *tpl, void (*fn)(const char *name, void *ud), void *ud)
{
	char name[SECRET_NAME_MAX];
	for (const char *p = tpl ? strchr(tpl, '$') : NULL; p; p = strchr(p + 1, '$'))
		if (secret_ref(p, name))
			fn(name, ud);
}

struct each_value {
	void (*fn)(const char *value, void *ud);
	void *ud;
};

static void value_of(const char *name, void *ud)
{
	const struct each_value *e = ud;
	const char *val = getenv(name);
	if (val)
		e->fn(val, e->ud);
}

void pal_tpl_each_secret(const char *tpl, void (*fn)(const char *value, void *ud), void *ud)
{
	struct each_value e = {fn, ud};
	pal_tpl_each_secret_name(tpl, value_of, &e);
}

int pal_tpl_render(const char *tpl, const pal_tpl_vars *v, unsigned flags, char **out, char *err,
		   size_t errlen)
{
	*out = NULL;
	GString *g = g_string_sized_new(strlen(tpl) + 64);
	char buf[64];
	for (const char *p = tpl; *p;) {
		char name[SECRET_NAME_MAX];
		const char *e;
		if ((flags & PAL_TPL_SECRETS) && (e = secret_ref(p, name))) {
			/* the policy first: a name the job may not use is refused
			 * whether or not this node has it */
			pal_secret_verdict sv = pal_secret_check(v->secrets, v->tenant, name);
			if (sv != PAL_SECRET_OK) {
				pal_secret_refusal(sv, v->tenant, name, err, errlen);
				g_string_free(g, TRUE);
				return sv == PAL_SECRET_NODE ? PAL_EPERM : PAL_ENOGRANT;
			}
			const char *val = getenv(name);
			if (!val) {
				snprintf(err, errlen,
					 "secret reference ${%s}: environment variable %s is not "
					 "set on this node",
					 name, name);
				g_string_free(g, TRUE);
				return PAL_ENOENT;
			}
			g_string_append(g, val);
			p = e;
			continue;
		}
		if (p[0] == '{') {
			const char *e = p + 1;
			while (*e && (islower((unsigned char)*e) || *e == '_'))
				e++;
			if (*e == '}' && e > p + 1) {
				const char *val = lookup(v, p + 1, (size_t)(e - p - 1), buf, sizeof buf);
				if (val) {
					append_value(g, val, flags & PAL_TPL_URL);
					p = e + 1;
					continue;
				}
			}
		}
		g_string_append_c(g, *p++);
	}
	*out = g_string_free(g, FALSE);
	return *out ? PAL_OK : PAL_ENOMEM;
}

bool pal_tpl_uses(const char *tpl, const char *name)
{
	/* Without flags the renderer reads every "{name}" as the placeholder:
	 * a '{' can neither be part of a placeholder's name nor be taken by a
	 * secret reference there. */
	size_t n = strlen(name);
	for (const char *p = strchr(tpl, '{'); p; p = strchr(p + 1, '{'))
		if (!strncmp(p + 1, name, n) && p[1 + n] == '}')
			return true;
	return false;
}

int pal_tpl_render_key(const char *tpl, const pal_tpl_vars *v, char **out, char *err, size_t errlen)
{
	int rc = pal_tpl_render(tpl, v, 0, out, err, errlen);
	if (rc || !v->request_id || !*v->request_id || pal_tpl_uses(tpl, "request_id"))
		return rc;
	/* A deliberate run (manual or backfill) is its own effect: its key is
	 * the template's followed by its request id, which has no '/' (the CLI
	 * allows A-Z a-z 0-9 . _ : -). */
	char *k = g_strdup_printf("%s/%s", *out, v->request_id);
	free(*out);
	*out = k;
	return k ? PAL_OK : PAL_ENOMEM;
}
