/*
 * apply_rules.c - notify rules (docs/jobs.md, "Notify rules"): stored in an
 * apply, read for the jobs it adds, and laid over the stored ones for
 * plan diff.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/store.h"
#include "store_int.h"
#include "apply_int.h"

#define rules_free pal_notify_rules_free

/* ---- notify rules (docs/jobs.md, "Notify rules") ----------------------------- */

/* The stored rules, by scope (group first), name and url: the order
 * pal_job_spec_merge_notify inherits them in. */
#define RULES_SQL                                                                                  \
	"SELECT scope = 'tenant', name, url, array_to_string(events, ' '), secret"                 \
	" FROM notify_rules ORDER BY scope, name COLLATE \"C\", url COLLATE \"C\""

static int cmp_rule(const void *x, const void *y)
{
	const pal_notify_rule *a = x, *b = y;
	if (a->tenant != b->tenant)
		return a->tenant ? 1 : -1;
	int c = strcmp(a->name, b->name);
	return c ? c : strcmp(a->n.url, b->n.url);
}

/* The stored rules into *OUT, *N (rules_free). */
static int read_rules(pal_store *st, pal_notify_rule **out, size_t *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	PGresult *r = pal__store_query(st, RULES_SQL, 0, NULL, err, errlen);
	if (!r)
		return PAL_EDB;
	size_t m = (size_t)PQntuples(r);
	pal_notify_rule *v = calloc(m ? m : 1, sizeof *v);
	int rc = v ? PAL_OK : PAL_ENOMEM;
	for (size_t i = 0; !rc && i < m; i++) {
		pal_notify_rule *x = &v[i];
		x->tenant = !strcmp(PQgetvalue(r, (int)i, 0), "t");
		x->name = strdup(PQgetvalue(r, (int)i, 1));
		x->n.url = strdup(PQgetvalue(r, (int)i, 2));
		x->n.secret = strdup(PQgetvalue(r, (int)i, 4));
		gchar **ev = g_strsplit(PQgetvalue(r, (int)i, 3), " ", -1);
		for (size_t k = 0; ev[k]; k++)
			for (int e = 0; e < PAL_NOTIFY_N_EVENTS; e++)
				if (!strcmp(ev[k], pal_notify_event_names[e]))
					x->n.events |= 1u << e;
		g_strfreev(ev);
		if (!x->name || !x->n.url || !x->n.secret)
			rc = PAL_ENOMEM;
	}
	PQclear(r);
	if (rc) {
		rules_free(v, m);
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	*out = v;
	*n = m;
	return PAL_OK;
}

int pal__apply_load_rules(pal_apply *a, char *err, size_t errlen)
{
	if (a->rules_loaded)
		return PAL_OK;
	rules_free(a->rules, a->n_rules);
	a->rules = NULL;
	a->n_rules = 0;
	int rc = read_rules(a->st, &a->rules, &a->n_rules, err, errlen);
	a->rules_loaded = !rc;
	return rc;
}

/* RULE's events as a text[] literal ("{failed,manual}"; g_free). */
static char *rule_events(const pal_notify *n)
{
	GString *g = g_string_new("{");
	for (int e = 0; e < PAL_NOTIFY_N_EVENTS; e++)
		if (n->events & (1u << e))
			g_string_append_printf(g, "%s%s", g->len > 1 ? "," : "",
					       pal_notify_event_names[e]);
	g_string_append_c(g, '}');
	return g_string_free(g, FALSE);
}

/* Insert or update one rule, audited; the row's "existed" when it changed. */
#define RULE_UPSERT_SQL                                                                            \
	"WITH old AS (SELECT 1 FROM notify_rules WHERE scope = $1 AND name = $2 AND url = $3),"    \
	" up AS (INSERT INTO notify_rules (scope, name, url, events, secret, updated_by)"          \
	"  VALUES ($1, $2, $3, $4::text[], $5, $6)"                                                \
	"  ON CONFLICT (scope, name, url) DO UPDATE SET events = EXCLUDED.events,"                 \
	"   secret = EXCLUDED.secret, updated_by = EXCLUDED.updated_by, updated_at = now()"        \
	"  WHERE (notify_rules.events, notify_rules.secret)"                                       \
	"   IS DISTINCT FROM (EXCLUDED.events, EXCLUDED.secret)"                                   \
	"  RETURNING EXISTS (SELECT 1 FROM old) AS existed),"                                      \
	" aud AS (INSERT INTO audit_log (actor, action, scope, reason, details)"                   \
	"  SELECT $6, CASE WHEN existed THEN 'notify_rule.update' ELSE 'notify_rule.create' END,"  \
	"   'notify_rule:' || $1 || ':' || $2, nullif($7, ''),"                                    \
	"   jsonb_build_object('url', $3, 'events', to_jsonb($4::text[]), 'secret', $5) FROM up)"  \
	" SELECT existed FROM up"

#define RULE_DELETE_SQL                                                                            \
	"WITH d AS (DELETE FROM notify_rules WHERE scope = $1 AND name = $2 AND url = $3"          \
	"  RETURNING 1),"                                                                          \
	" aud AS (INSERT INTO audit_log (actor, action, scope, reason, details)"                   \
	"  SELECT $4, 'notify_rule.delete', 'notify_rule:' || $1 || ':' || $2, nullif($5, ''),"    \
	"   jsonb_build_object('url', $3) FROM d)"                                                 \
	" SELECT count(*) FROM d"

int pal_store_apply_notify_rules(pal_apply *a, const pal_notify_rule *rules, size_t n,
				 pal_rule_outcome *out, char *err, size_t errlen)
{
	int rc = pal__apply_collect(a, err, errlen);
	if (!rc && n && !a->rules_excl) {
		/* two applies of rules: the second waits for the first, then
		 * sees its rules (and its followers' versions); see RULES_LOCK.
		 * Taken here only by an apply begun without it (its caller
		 * could not tell that rules would come): it holds the lock
		 * shared already, and two such applies at once deadlock on it
		 * (PostgreSQL aborts one; nothing of it is stored). */
		PGresult *l = pal__store_query(
		    a->st, "SELECT pg_advisory_xact_lock(" RULES_LOCK ")", 0, NULL, err, errlen);
		rc = l ? PAL_OK : PAL_EDB;
		PQclear(l);
		a->rules_excl = !rc;
	}
	for (size_t i = 0; !rc && i < n; i++) {
		const pal_notify_rule *x = &rules[i];
		const char *scope = x->tenant ? "tenant" : "group";
		pal_rule_outcome o = PAL_RULE_UNCHANGED;
		PGresult *r;
		if (x->remove) {
			const char *p[] = {scope, x->name, x->n.url, a->actor, a->reason};
			r = pal__store_query(a->st, RULE_DELETE_SQL, 5, p, err, errlen);
			if (r && atoi(PQgetvalue(r, 0, 0)) > 0)
				o = PAL_RULE_REMOVED;
		} else {
			char *ev = rule_events(&x->n);
			const char *p[] = {scope,	x->name,  x->n.url, ev,
					   x->n.secret, a->actor, a->reason};
			r = pal__store_query(a->st, RULE_UPSERT_SQL, 7, p, err, errlen);
			g_free(ev);
			if (r && PQntuples(r))
				o = !strcmp(PQgetvalue(r, 0, 0), "t") ? PAL_RULE_UPDATED
								      : PAL_RULE_CREATED;
		}
		if (!r) {
			rc = PAL_EDB;
			break;
		}
		PQclear(r);
		if (out)
			out[i] = o;
		if (o == PAL_RULE_UNCHANGED)
			continue;
		if (!a->rule_scopes)
			a->rule_scopes =
			    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
		g_hash_table_add(a->rule_scopes,
				 g_strdup_printf("%c %s", x->tenant ? 't' : 'g', x->name));
		a->rules_loaded = false;
	}
	return rc;
}

int pal_store_notify_rules_overlay(pal_store *st, const pal_notify_rule *rules, size_t n,
				   pal_notify_rule **out, size_t *nout, char *err, size_t errlen)
{
	pal_notify_rule *v;
	size_t ns;
	int rc = read_rules(st, &v, &ns, err, errlen);
	if (rc)
		return rc;
	pal_notify_rule *all = calloc(ns + n + 1, sizeof *all);
	size_t m = ns;
	if (!all) {
		rules_free(v, ns);
		snprintf(err, errlen, "out of memory");
		return PAL_ENOMEM;
	}
	if (ns)
		memcpy(all, v, ns * sizeof *v);
	free(v);
	for (size_t i = 0; !rc && i < n; i++) {
		const pal_notify_rule *x = &rules[i];
		size_t k = 0;
		while (k < ns && !(all[k].tenant == x->tenant && !strcmp(all[k].name, x->name) &&
				   !strcmp(all[k].n.url, x->n.url)))
			k++;
		if (k == ns)
			k = m++;
		else
			pal_notify_rule_clear(&all[k]);
		all[k].tenant = x->tenant;
		all[k].remove = x->remove;
		all[k].n.events = x->n.events;
		if (!(all[k].name = strdup(x->name)) || !(all[k].n.url = strdup(x->n.url)) ||
		    (x->n.secret && !(all[k].n.secret = strdup(x->n.secret))))
			rc = PAL_ENOMEM;
	}
	if (rc) {
		rules_free(all, m);
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	/* by scope, name and url, as read_rules orders them (apply merges
	 * in that order) */
	qsort(all, m, sizeof *all, cmp_rule);
	*out = all;
	*nout = m;
	return PAL_OK;
}

int pal_store_merge_notify_rules(pal_store *st, pal_jobset *set, char *err, size_t errlen)
{
	pal_notify_rule *all;
	size_t m;
	int rc = pal_store_notify_rules_overlay(st, set->notify_rules, set->n_notify_rules, &all,
						&m, err, errlen);
	for (size_t i = 0; !rc && i < set->n; i++)
		if ((rc = pal_job_spec_merge_notify(&set->jobs[i], all, m)))
			snprintf(err, errlen, "out of memory");
	if (!rc)
		rules_free(all, m);
	return rc;
}

/* The live jobs of the groups and tenants of RULES[0..n) that inherit
 * (not notify: []), as [{job_id, spec, notify_own}] (plan diff). */
#define RULE_SCOPE_JOBS_SQL                                                                        \
	"SELECT coalesce(json_agg(json_build_object('job_id', j.job_id, 'spec', v.spec,"           \
	"  'notify_own', v.notify_own::text) ORDER BY j.job_id COLLATE \"C\"), '[]')::text"        \
	" FROM jobs j JOIN job_versions v ON v.job_id = j.job_id AND v.version = j.latest_version" \
	" WHERE j.retired_at IS NULL AND v.notify_own IS DISTINCT FROM -1"                         \
	"  AND (j.resource_group = ANY ($1::text[]) OR j.tenant = ANY ($2::text[]))"

int pal_store_rule_scope_jobs_json(pal_store *st, const pal_notify_rule *rules, size_t n,
				   json_t **out, char *err, size_t errlen)
{
	pal_pgarr g, t;
	pal__pgarr_init(&g);
	pal__pgarr_init(&t);
	for (size_t i = 0; i < n; i++)
		pal__pgarr_text(rules[i].tenant ? &t : &g, rules[i].name);
	char *p[] = {pal__pgarr_end(&g), pal__pgarr_end(&t)};
	int rc = pal__store_query_json(st, RULE_SCOPE_JOBS_SQL, 2, (const char *const *)p, out, err,
				       errlen);
	g_free(p[0]);
	g_free(p[1]);
	return rc;
}
