/*
 * answer.c - what every handler of the HTTP API answers with (api_int.h):
 * problem documents (RFC 9457) and JSON answers, the request's headers,
 * query and JSON body, pages of a list (?limit=, ?cursor=, {items,
 * next_cursor}), and the checks of a token's tenants against a job, a
 * tenant or a scope.  Called under the API's lock, on its connection.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/apistore.h"
#include "palisade/name.h"
#include "palisade/timefmt.h"
#include "api_int.h"

/* An RFC 9457 problem: TYPE is the stable slug of the error. */
void pal_api__problem(call *c, unsigned status, const char *type, const char *title,
		      const char *fmt, ...)
{
	char detail[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	char t[96];
	snprintf(t, sizeof t, PROBLEM_BASE "%s", type);
	json_decref(c->out);
	c->out = json_pack("{s:s, s:s, s:i, s:s, s:s}", "type", t, "title", title, "status",
			   (int)status, "detail", detail, "instance", c->req->path);
	c->status = status;
	c->problem = true;
}

/* A PAL_E* code of a store or operator function as a problem. */
void pal_api__problem_rc(call *c, int rc, const char *err)
{
	switch (rc) {
	case PAL_ENOENT:
		pal_api__problem(c, 404, "not-found", "Not found", "%s", err);
		break;
	case PAL_ESTALE:
		pal_api__problem(c, 409, "conflict", "Refused in the current state", "%s", err);
		break;
	case PAL_EINVAL:
		pal_api__problem(c, 422, "invalid", "Invalid request", "%s", err);
		break;
	case PAL_ETOOBIG:
		pal_api__problem(c, 422, "too-big", "Over a limit", "%s", err);
		break;
	case PAL_EPERM:
	case PAL_ENOGRANT:
		pal_api__problem(c, 422, "forbidden-secret", "Secret not allowed", "%s", err);
		break;
	case PAL_EBUSY:
	case PAL_EDB:
		pal_api__problem(c, 503, "unavailable", "Database unavailable", "%s", err);
		break;
	default:
		pal_api__problem(c, 500, "internal", "Internal error", "%s", err);
		break;
	}
}

void pal_api__too_many(call *c, long long limit, const char *err)
{
	pal_api__problem(c, 422, "too-many-instants", "Too many instants", "%s", err);
	json_object_set_new(c->out, "limit", json_integer(limit));
}

void pal_api__ok(call *c, unsigned status, json_t *out)
{
	json_decref(c->out);
	c->out = out;
	c->status = status;
	c->problem = false;
}

const char *pal_api__header(call *c, const char *name)
{
	return c->req->lookup(c->req->ctx, true, name);
}

const char *pal_api__query(call *c, const char *name)
{
	const char *v = c->req->lookup(c->req->ctx, false, name);
	return v && *v ? v : NULL;
}

/* A string field of the JSON body, NULL when absent; false (problem set)
 * when present and not a string. */
bool pal_api__body_str(call *c, const char *name, const char **out)
{
	json_t *v = json_object_get(c->body, name);
	*out = NULL;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_string(v)) {
		pal_api__problem(c, 422, "invalid", "Invalid request",
				 "field \"%s\" must be a string", name);
		return false;
	}
	*out = json_string_value(v);
	return true;
}

/* The reason of an action: required unless OPTIONAL. */
bool pal_api__reason(call *c, bool optional, const char **out)
{
	if (!pal_api__body_str(c, "reason", out))
		return false;
	if (!optional && (!*out || !**out)) {
		pal_api__problem(c, 422, "reason-required", "A reason is required",
				 "say why in \"reason\": it is kept in the audit log");
		return false;
	}
	return true;
}

/* ?limit= in 1..PAGE_MAX (default PAGE_DEFAULT); false (problem) otherwise. */
bool pal_api__query_int(call *c, const char *name, int lo, int hi, int dflt, int *out)
{
	const char *s = pal_api__query(c, name);
	*out = dflt;
	if (!s)
		return true;
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v < lo || v > hi) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter",
				 "%s \"%.20s\": expected an integer in %d..%d", name, s, lo, hi);
		return false;
	}
	*out = (int)v;
	return true;
}

bool pal_api__page_limit(call *c, int *limit)
{
	return pal_api__query_int(c, "limit", 1, PAGE_MAX, PAGE_DEFAULT, limit);
}

/* {"items": ITEMS, "next_cursor": NEXT or null}; takes both. */
json_t *pal_api__page_json(json_t *items, char *next)
{
	json_t *o = json_pack("{s:o, s:o}", "items", items, "next_cursor",
			      next ? json_string(next) : json_null());
	g_free(next);
	return o;
}

/* RC of a page read into ROWS and NEXT (taken): the page, or the problem
 * (PAL_EINVAL is a ?cursor= the API did not give: 400). */
void pal_api__page_answer(call *c, int rc, json_t *rows, char *next, const char *err)
{
	if (rc == PAL_EINVAL)
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter", "%s", err);
	else if (rc)
		pal_api__problem_rc(c, rc, err);
	else
		pal_api__ok(c, 200, pal_api__page_json(rows, next));
}

/* The tenant array of the token for the list queries: NULL (every tenant)
 * or a text[] literal (g_free). */
char *pal_api__tenants_literal(const pal_token_identity *w)
{
	if (w->n_tenants == 0)
		return NULL;
	GString *s = g_string_new("{");
	for (size_t i = 0; i < w->n_tenants; i++)
		g_string_append_printf(s, "%s\"%s\"", i ? "," : "", w->tenants[i]);
	g_string_append_c(s, '}');
	return g_string_free(s, FALSE);
}

/* The token sees TENANT; otherwise a problem: 403 for a write ("WHAT NAME
 * is another tenant's", that tenant not named: a token must not learn the
 * tenants of ids it tries), 404 ("no WHAT NAME", as if it did not exist)
 * for a read. */
bool pal_api__tenant_allowed(call *c, const char *tenant, bool write, const char *what,
			     const char *name)
{
	if (pal_token_sees_tenant(&c->who, tenant))
		return true;
	if (write)
		pal_api__problem(c, 403, "forbidden-tenant", "Not your tenant",
				 "%s %.64s is another tenant's; token %s may not act on it", what,
				 name, c->who.name);
	else
		pal_api__problem(c, 404, "not-found", "Not found", "no %s \"%.64s\"", what, name);
	return false;
}

/*
 * The job of path argument 0 is visible to the token: true when it
 * exists and the token sees its tenant.  Otherwise a problem: 404 for a
 * job that does not exist or (reads) of another tenant, 403 (writes) of
 * another tenant.
 */
bool pal_api__job_visible(call *c, bool write)
{
	const char *id = c->arg[0];
	if (!pal_name_ok(id, 128)) {
		pal_api__problem(c, 404, "not-found", "Not found", "no job \"%.64s\"", id);
		return false;
	}
	char tenant[65], err[512];
	int rc = pal_apistore_job_tenant(c->api->st, id, tenant, err, sizeof err);
	if (rc) {
		pal_api__problem_rc(c, rc, err);
		return false;
	}
	return pal_api__tenant_allowed(c, tenant, write, "job", id);
}

/* A token limited to tenants may not use this route. */
bool pal_api__unscoped(call *c)
{
	if (c->who.n_tenants == 0)
		return true;
	pal_api__problem(c, 403, "forbidden-tenant", "Not for a tenant-scoped token",
			 "token %s is limited to tenants; this route concerns all of them",
			 c->who.name);
	return false;
}

/* What a resume of a scope of KIND applies: the node's config. */
pal_resume_opts pal_api__resume_opts(const pal_api *api, pal_scope_kind kind)
{
	return (pal_resume_opts){.misfire_threshold_ms = api->misfire_threshold_ms,
				 .ramp_ms = api->resume_ramp_ms[kind]};
}

/* An RFC 3339 instant of the body (FIELD) into *out; absent: PAL_OPS_NOW. */
bool pal_api__body_time(call *c, const char *field, bool required, int64_t *out)
{
	const char *s;
	*out = PAL_OPS_NOW;
	if (!pal_api__body_str(c, field, &s))
		return false;
	if (!s && !required)
		return true;
	if (!s || pal_parse_rfc3339(s, out)) {
		pal_api__problem(c, 422, "invalid", "Invalid request",
				 "\"%s\": expected an RFC 3339 instant (2026-01-01T00:00:00Z)",
				 field);
		return false;
	}
	if (pal_rfc3339_has_fraction(s)) {
		pal_api__problem(c, 422, "invalid", "Invalid request",
				 "\"%s\": instants are whole seconds; a fraction would be cut off "
				 "and name another instant",
				 field);
		return false;
	}
	return true;
}

/* ?NAME as an RFC 3339 instant (required); false (problem) otherwise. */
bool pal_api__query_time(call *c, const char *name, int64_t *out)
{
	const char *s = pal_api__query(c, name);
	if (!s || pal_parse_rfc3339(s, out)) {
		pal_api__problem(c, 400, "bad-parameter", "Bad parameter",
				 "%s: expected an RFC 3339 instant (2026-01-01T00:00:00Z)", name);
		return false;
	}
	return true;
}

/* The scope of a read's query: at most one of ?job=, ?group=, ?tenant=
 * (none: PAL_SCOPE_GLOBAL) into *SC (its name points into the query).  A
 * job must be visible to the token, a tenant one of its own (404 as if it
 * did not exist otherwise); a group or every job is the caller's to allow.
 * False (problem set) otherwise. */
bool pal_api__query_scope(call *c, pal_scope *sc)
{
	static const pal_scope_kind kinds[] = {PAL_SCOPE_JOB, PAL_SCOPE_GROUP, PAL_SCOPE_TENANT};
	*sc = (pal_scope){PAL_SCOPE_GLOBAL, NULL};
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		const char *v = pal_api__query(c, pal_scope_kind_name(kinds[i]));
		if (!v)
			continue;
		if (sc->name) {
			pal_api__problem(c, 400, "bad-parameter", "Bad parameter",
					 "at most one of job, group and tenant");
			return false;
		}
		*sc = (pal_scope){kinds[i], v};
	}
	if (sc->kind == PAL_SCOPE_JOB) {
		snprintf(c->argbuf[0], sizeof c->argbuf[0], "%s", sc->name);
		c->arg[0] = c->argbuf[0];
		return pal_api__job_visible(c, false);
	}
	if (sc->kind == PAL_SCOPE_TENANT)
		return pal_api__tenant_allowed(c, sc->name, false, "tenant", sc->name);
	return true;
}
