/*
 * secrets.h - which ${NAME} secret references a job may hold (docs/jobs.md,
 * "Secrets").
 *
 * A job's templates name environment variables of the executor; the
 * executor resolves them when it makes the call.  Two rules bound what a
 * job may name:
 *
 *  - The node's own credentials are never a job's: PALISADE_* (the node's
 *    and the CLI's variables, the default admin.token_env and
 *    zookeeper.auth_env among them), TZDIR and JOURNAL_STREAM, the
 *    variables libpq reads (PGPASSWORD, PGSERVICE, ...: its documented list,
 *    not every name beginning with PG), the proxy variables libcurl reads
 *    (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY), and the variables the
 *    node's admin.token_env and zookeeper.auth_env name, whatever they are
 *    called.
 *  - executor.secrets binds the other names to tenants: {TENANT: [NAME or
 *    PREFIX*, ...]}.  Empty (the default), every tenant's jobs may name any
 *    variable but the node's own; set, a job may name only what its tenant
 *    is given (a tenant not listed: nothing).
 *
 * Checked at load (validate and apply, the CLI with --config and the API,
 * pal_job_secrets_check) and again by the executor and the notification
 * delivery at render time (pal_secret_check through pal_tpl_render), for
 * jobs stored without the check.
 */
#ifndef PALISADE_SECRETS_H
#define PALISADE_SECRETS_H

#include <stdbool.h>
#include <stddef.h>
#include "palisade/diags.h"

/* One tenant's entry of a per-tenant list of the node config: of
 * executor.secrets (pal_secret_grant: NAME or PREFIX*) and of
 * executor.target_hosts (targethosts.h: host patterns). */
typedef struct pal_tenant_grant {
	char *tenant; /* the tenant, as a job's tenant key */
	char **names; /* NAME, or PREFIX* (a trailing '*'; "*" alone: any) */
	size_t n_names;
} pal_tenant_grant;
/* One tenant's entry of executor.secrets. */
typedef pal_tenant_grant pal_secret_grant;

/* What a node allows; borrows its strings (from the node's pal_nodeconf,
 * which outlives every user).  A NULL policy is the default one: only the
 * fixed rules (PALISADE_*, libpq's, the proxy variables). */
typedef struct pal_secret_policy {
	const char *token_env;		/* admin.token_env ("" or NULL: none) */
	const char *zk_auth_env;	/* zookeeper.auth_env ("" or NULL: none) */
	const pal_secret_grant *grants; /* executor.secrets, sorted by tenant */
	size_t n_grants;		/* 0: no binding (any name but the node's) */
} pal_secret_policy;

typedef enum {
	PAL_SECRET_OK = 0,
	PAL_SECRET_NODE,	/* one of the node's own credentials */
	PAL_SECRET_NOT_GRANTED, /* executor.secrets does not give it to the tenant */
} pal_secret_verdict;

/* Whether a job of TENANT may name ${NAME} under P (NULL: the default
 * policy).  Pure; never reads the environment. */
pal_secret_verdict pal_secret_check(const pal_secret_policy *p, const char *tenant,
				    const char *name);

/* The verdict V about ${NAME} of a job of TENANT as a message into BUF
 * ("secret reference ${X}: ..."), lower-case, naming the variable, never
 * its value.  Returns BUF. */
const char *pal_secret_refusal(pal_secret_verdict v, const char *tenant, const char *name,
			       char *buf, size_t len);

/* Every ${NAME} of job S (target url, headers, body, status_url, notify
 * secrets) checked under P: one diagnostic at the job's file:line:col per
 * refused reference.  Returns the number of refused references. */
struct pal_job_spec;
size_t pal_job_secrets_check(const struct pal_job_spec *s, const pal_secret_policy *p,
			     pal_diags *d);
/* The secret of notify rule R (docs/jobs.md, "Notify rules") under P: a
 * tenant's rule as a job of the tenant; a group's, whose jobs may be of
 * any tenant, only for the node's own credentials (the delivery checks
 * each job's tenant).  One diagnostic per refusal; returns their number. */
struct pal_notify_rule;
size_t pal_notify_rule_secrets_check(const struct pal_notify_rule *r, const pal_secret_policy *p,
				     pal_diags *d);
/* The inherited notify entries of job S (those after its n_notify_own, once
 * merged with RULES[0..n), the rules it was merged with) checked under P
 * against the job's tenant, as its own entries are.  PAL_SECRET_OK, else
 * the first refusal's verdict with MSG naming the job, its tenant, the
 * rule (scope, name, url) and the reference. */
pal_secret_verdict pal_job_inherited_secrets_check(const struct pal_job_spec *s,
						   const struct pal_notify_rule *rules, size_t n,
						   const pal_secret_policy *p, char *msg,
						   size_t len);

#endif
