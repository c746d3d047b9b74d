/*
 * targethosts.h - which hosts a job may call and notify (docs/jobs.md,
 * "Target hosts").
 *
 * executor.target_hosts binds hosts to tenants: {TENANT: [PATTERN, ...]},
 * a PATTERN being a host (a name, an IPv4 address or an [IPv6] address,
 * compared case-insensitively), "*.DOMAIN" (any name ending in .DOMAIN,
 * not DOMAIN itself) or "*" (any host), each optionally followed by
 * ":PORT" (only that port; without it, any port).  Empty (the default),
 * every tenant's jobs may call any host; set, a job's target.url,
 * target.status_url and notify urls may name only the hosts its tenant is
 * given (a tenant not listed: none).  Patterns judge the url's host as
 * written, never what it resolves to: nothing here reads DNS.
 *
 * Checked at load (validate and apply, the CLI with --config and the API:
 * pal_job_targets_check) and again before each call by the executor and
 * before each delivery by the notification sender (pal_target_granted),
 * for jobs stored without the check.
 */
#ifndef PALISADE_TARGETHOSTS_H
#define PALISADE_TARGETHOSTS_H

#include <stdbool.h>
#include <stddef.h>
#include "palisade/diags.h"
#include "palisade/secrets.h" /* pal_tenant_grant */

/* What a node allows; borrows the grants (from the node's pal_nodeconf,
 * which outlives every user).  A NULL policy, or one without grants, is
 * the default: any host. */
typedef struct pal_target_policy {
	const pal_tenant_grant *grants; /* executor.target_hosts, sorted by tenant */
	size_t n_grants;
} pal_target_policy;

/* Whether S is a valid pattern of executor.target_hosts (see above). */
bool pal_target_pattern_ok(const char *s);

/* Whether a job of TENANT may call URL under P: true when P has no grants;
 * else URL must be http:// or https:// with a literal host[:port] (as the
 * job loader requires) that a pattern given to TENANT matches.  Pure, a
 * few string compares; never resolves a name. */
bool pal_target_granted(const pal_target_policy *p, const char *tenant, const char *url);

/* The refusal of URL to TENANT as a message into BUF ("executor.target_hosts
 * does not give host H to tenant T; hint: ..."), lower-case, naming the
 * host and the tenant.  Returns BUF. */
const char *pal_target_refusal(const char *tenant, const char *url, char *buf, size_t len);

/* Every url of job S (target.url, target.status_url, its notify urls)
 * checked under P: one diagnostic at the job's file:line:col per refused
 * url, naming the job, the url and the tenant.  Returns their number. */
struct pal_job_spec;
size_t pal_job_targets_check(const struct pal_job_spec *s, const pal_target_policy *p,
			     pal_diags *d);
/* The url of notify rule R under P: a tenant's rule as a job of the
 * tenant's; a group's, whose jobs may be of any tenant, is not judged here
 * (the delivery checks each job's tenant).  Returns the refusals (0 or 1). */
struct pal_notify_rule;
size_t pal_notify_rule_targets_check(const struct pal_notify_rule *r, const pal_target_policy *p,
				     pal_diags *d);

#endif
