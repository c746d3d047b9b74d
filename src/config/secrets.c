/*
 * secrets.c - which ${NAME} secret references a job may hold (secrets.h).
 *
 * The rules are pure functions of the name, the job's tenant and the node's
 * policy: the loader's check (pal_job_secrets_check, at validate and apply)
 * and the render-time check (pal_tpl_render, in the executor and the
 * notification delivery) call the same pal_secret_check, so a job refused at
 * apply is refused at render too, whoever stored it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/jobspec.h"
#include "palisade/secrets.h"
#include "palisade/template.h"

/* Names the node reads for itself, whatever its config says: its own and
 * the CLI's (PALISADE_*, and TZDIR and JOURNAL_STREAM, read by palisade
 * too), libpq's (PostgreSQL 15's documented list, "Environment Variables",
 * which is what the libpq palisade is built with reads, and the ones newer
 * libpq versions add: PGREQUIREAUTH, PGSSLCERTMODE, PGLOADBALANCEHOSTS,
 * PGGSSDELEGATION, PGSSLNEGOTIATION), and libcurl's proxy variables (a
 * proxy URL may hold credentials).  A name that merely begins with PG
 * (PGP_SIGNING_KEY) is not libpq's. */
static const char *const node_prefixes[] = {"PALISADE_"};
static const char *const node_names[] = {
    /* libpq */
    "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGPASSWORD", "PGPASSFILE",
    "PGCHANNELBINDING", "PGSERVICE", "PGSERVICEFILE", "PGOPTIONS", "PGAPPNAME", "PGSSLMODE",
    "PGREQUIRESSL", "PGSSLCOMPRESSION", "PGSSLCERT", "PGSSLKEY", "PGSSLROOTCERT", "PGSSLCRL",
    "PGSSLCRLDIR", "PGSSLSNI", "PGREQUIREPEER", "PGSSLMINPROTOCOLVERSION",
    "PGSSLMAXPROTOCOLVERSION", "PGGSSENCMODE", "PGKRBSRVNAME", "PGGSSLIB", "PGCONNECT_TIMEOUT",
    "PGCLIENTENCODING", "PGTARGETSESSIONATTRS", "PGDATESTYLE", "PGTZ", "PGGEQO", "PGSYSCONFDIR",
    "PGLOCALEDIR",
    /* libpq after PostgreSQL 15 */
    "PGREQUIREAUTH", "PGSSLCERTMODE", "PGLOADBALANCEHOSTS", "PGGSSDELEGATION", "PGSSLNEGOTIATION",
    /* libcurl's proxies */
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
    /* palisade's own beside PALISADE_* */
    "TZDIR", "JOURNAL_STREAM"};

static bool is_node_own(const pal_secret_policy *p, const char *name)
{
	for (size_t i = 0; i < sizeof node_prefixes / sizeof *node_prefixes; i++)
		if (!strncmp(name, node_prefixes[i], strlen(node_prefixes[i])))
			return true;
	for (size_t i = 0; i < sizeof node_names / sizeof *node_names; i++)
		if (!strcmp(name, node_names[i]))
			return true;
	return p && ((p->token_env && *p->token_env && !strcmp(name, p->token_env)) ||
		     (p->zk_auth_env && *p->zk_auth_env && !strcmp(name, p->zk_auth_env)));
}

static bool pattern_matches(const char *pat, const char *name)
{
	size_t n = strlen(pat);
	if (n && pat[n - 1] == '*')
		return !strncmp(name, pat, n - 1);
	return !strcmp(name, pat);
}

pal_secret_verdict pal_secret_check(const pal_secret_policy *p, const char *tenant,
				    const char *name)
{
	if (is_node_own(p, name))
		return PAL_SECRET_NODE;
	if (!p || !p->n_grants)
		return PAL_SECRET_OK;
	for (size_t i = 0; tenant && i < p->n_grants; i++) {
		if (strcmp(p->grants[i].tenant, tenant))
			continue;
		for (size_t j = 0; j < p->grants[i].n_names; j++)
			if (pattern_matches(p->grants[i].names[j], name))
				return PAL_SECRET_OK;
	}
	return PAL_SECRET_NOT_GRANTED;
}

const char *pal_secret_refusal(pal_secret_verdict v, const char *tenant, const char *name,
			       char *buf, size_t len)
{
	if (v == PAL_SECRET_NODE)
		snprintf(buf, len,
			 "secret reference ${%s}: %s is one of the node's own variables "
			 "(PALISADE_*, libpq's PG variables, the proxy variables, "
			 "admin.token_env, zookeeper.auth_env), never a job's",
			 name, name);
	else if (v == PAL_SECRET_NOT_GRANTED)
		snprintf(buf, len,
			 "secret reference ${%s}: executor.secrets does not give %s to tenant "
			 "%s; hint: list it (or a PREFIX* covering it) under the tenant in "
			 "executor.secrets",
			 name, name, tenant && *tenant ? tenant : "(none)");
	else
		snprintf(buf, len, "secret reference ${%s}: allowed", name);
	return buf;
}

struct walk {
	const pal_job_spec *s;
	const pal_secret_policy *p;
	pal_diags *d;
	const char *where;
	size_t refused;
};

static void check_one(const char *name, void *ud)
{
	struct walk *w = ud;
	pal_secret_verdict v = pal_secret_check(w->p, w->s->tenant, name);
	if (v == PAL_SECRET_OK)
		return;
	char msg[512];
	pal_diags_addf(w->d, w->s->file, w->s->line, w->s->col, "job \"%s\": %s: %s", w->s->id,
		       w->where, pal_secret_refusal(v, w->s->tenant, name, msg, sizeof msg));
	w->refused++;
}

struct rule_walk {
	const pal_notify_rule *r;
	const pal_secret_policy *p;
	pal_diags *d;
	size_t refused;
};

static void check_rule_one(const char *name, void *ud)
{
	struct rule_walk *w = ud;
	pal_secret_verdict v = pal_secret_check(w->p, w->r->tenant ? w->r->name : NULL, name);
	if (v == PAL_SECRET_OK || (!w->r->tenant && v != PAL_SECRET_NODE))
		return;
	char msg[512];
	pal_diags_addf(
	    w->d, NULL, 0, 0, "notify rule of %s %s (%s): %s", w->r->tenant ? "tenant" : "group",
	    w->r->name, w->r->n.url,
	    pal_secret_refusal(v, w->r->tenant ? w->r->name : NULL, name, msg, sizeof msg));
	w->refused++;
}

size_t pal_notify_rule_secrets_check(const struct pal_notify_rule *r, const pal_secret_policy *p,
				     pal_diags *d)
{
	struct rule_walk w = {.r = r, .p = p, .d = d};
	if (r->n.secret)
		pal_tpl_each_secret_name(r->n.secret, check_rule_one, &w);
	return w.refused;
}

size_t pal_job_secrets_check(const struct pal_job_spec *s, const pal_secret_policy *p, pal_diags *d)
{
	struct walk w = {.s = s, .p = p, .d = d};
	char where[300];
	w.where = "target.url";
	pal_tpl_each_secret_name(s->url, check_one, &w);
	for (size_t i = 0; i < s->n_headers; i++) {
		snprintf(where, sizeof where, "target.headers.%s", s->headers[i].name);
		w.where = where;
		pal_tpl_each_secret_name(s->headers[i].value, check_one, &w);
	}
	w.where = "target.body";
	pal_tpl_each_secret_name(s->body, check_one, &w);
	w.where = "target.status_url";
	pal_tpl_each_secret_name(s->status_url, check_one, &w);
	for (size_t i = 0; i < s->n_notify; i++) {
		snprintf(where, sizeof where, "notify[%zu].secret", i);
		w.where = where;
		pal_tpl_each_secret_name(s->notify[i].secret, check_one, &w);
	}
	return w.refused;
}

struct inherited_walk {
	const pal_secret_policy *p;
	const char *tenant;
	pal_secret_verdict v;
	const char *name; /* the first refused, borrowed for the walk */
	char refused[128];
};

static void check_inherited_one(const char *name, void *ud)
{
	struct inherited_walk *w = ud;
	if (w->v != PAL_SECRET_OK)
		return;
	w->v = pal_secret_check(w->p, w->tenant, name);
	if (w->v != PAL_SECRET_OK)
		snprintf(w->refused, sizeof w->refused, "%s", name);
}

pal_secret_verdict pal_job_inherited_secrets_check(const struct pal_job_spec *s,
						   const struct pal_notify_rule *rules, size_t n,
						   const pal_secret_policy *p, char *msg,
						   size_t len)
{
	if (!s->notify_merged)
		return PAL_SECRET_OK;
	for (size_t i = s->n_notify_own; i < s->n_notify; i++) {
		const pal_notify *e = &s->notify[i];
		struct inherited_walk w = {.p = p, .tenant = s->tenant};
		if (e->secret)
			pal_tpl_each_secret_name(e->secret, check_inherited_one, &w);
		if (w.v == PAL_SECRET_OK)
			continue;
		/* the rule the entry came from: the group's before the
		 * tenant's, as pal_job_spec_merge_notify takes them */
		const pal_notify_rule *r = NULL;
		for (int lvl = 0; lvl < 2 && !r; lvl++)
			for (size_t k = 0; k < n && !r; k++)
				if (!rules[k].remove && rules[k].tenant == (lvl == 1) &&
				    !strcmp(rules[k].name, lvl ? s->tenant : s->group) &&
				    !strcmp(rules[k].n.url, e->url) && rules[k].n.secret &&
				    !strcmp(rules[k].n.secret, e->secret))
					r = &rules[k];
		char why[512];
		snprintf(msg, len,
			 "job \"%s\" (tenant %s) inherits notify[%zu] from the notify rule of "
			 "%s%s%s (%s): %s",
			 s->id, s->tenant, i,
			 r ? (r->tenant ? "tenant" : "group") : "its group or tenant", r ? " " : "",
			 r ? r->name : "", e->url,
			 pal_secret_refusal(w.v, s->tenant, w.refused, why, sizeof why));
		return w.v;
	}
	return PAL_SECRET_OK;
}
