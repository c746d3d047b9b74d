/*
 * template.h - render the templates of a job version for one trigger:
 * {placeholder}s (job, scheduled_at, scheduled_date, partition, trigger,
 * request_id, idempotency_key) and ${ENV_NAME} secret references.
 *
 * Secrets are resolved here, at call time, from the process environment,
 * once the node's policy allows the job's tenant to name them (secrets.h);
 * they are never stored resolved, and error messages name the variable,
 * never its value.  A '{' not followed by a known name and '}' is literal
 * (JSON bodies are full of braces).
 */
#ifndef PALISADE_TEMPLATE_H
#define PALISADE_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/secrets.h"

typedef struct pal_tpl_vars {
	const char *job;
	int64_t scheduled_at;       /* rendered as RFC 3339 UTC */
	const char *scheduled_date; /* YYYY-MM-DD in the job's zone (caller renders it) */
	int partition;
	int64_t trigger;            /* trigger id */
	const char *request_id;     /* "" for scheduled triggers */
	const char *idempotency_key;/* NULL while rendering the key itself */
	/* PAL_TPL_SECRETS: the node's policy (NULL: the default one) and the
	 * tenant of the trigger, which decide the names it may resolve */
	const pal_secret_policy *secrets;
	const char *tenant;
} pal_tpl_vars;

enum {
	PAL_TPL_URL = 1u << 0,     /* percent-encode substituted placeholder values */
	PAL_TPL_SECRETS = 1u << 1, /* resolve ${ENV} from the environment */
};

/* Render TPL into *out (caller frees).  A reference v->secrets refuses to
 * v->tenant (pal_secret_check: checked before the environment is read):
 * PAL_EPERM for one of the node's own variables (refused on every node),
 * PAL_ENOGRANT for a name executor.secrets does not give the tenant (a
 * node whose policy differs may).  PAL_ENOENT when a referenced environment
 * variable is unset (the message names it), PAL_ENOMEM. */
PAL_MUST_CHECK int pal_tpl_render(const char *tpl, const pal_tpl_vars *v, unsigned flags, char **out,
				  char *err, size_t errlen);

/* Call FN(value, UD) for each ${ENV} reference of TPL (may be NULL) that is
 * set in this process's environment: the values pal_tpl_render() with
 * PAL_TPL_SECRETS puts in, for masking them in what comes back. */
void pal_tpl_each_secret(const char *tpl, void (*fn)(const char *value, void *ud), void *ud);

/* Call FN(name, UD) for each ${NAME} reference of TPL (may be NULL), as
 * pal_tpl_render() with PAL_TPL_SECRETS reads them; NAME is valid during
 * the call only. */
void pal_tpl_each_secret_name(const char *tpl, void (*fn)(const char *name, void *ud), void *ud);

/* True when TPL uses placeholder NAME ("request_id"), as pal_tpl_render()
 * without flags reads it. */
bool pal_tpl_uses(const char *tpl, const char *name);

/*
 * Render idempotency-key template TPL for one trigger into *out (caller
 * frees): TPL rendered without flags, and for a trigger with a request id (a
 * manual run or a backfill; v->request_id not empty) whose template does not
 * use {request_id}, "/" and the request id appended.  So a deliberate re-run
 * never sends a scheduled run's key, two request ids never share one, and
 * every attempt, takeover and status query of one trigger sends the same
 * key.  The suffix adds PAL_TPL_KEY_SUFFIX_MAX bytes at most (the job
 * validator counts it).  PAL_ENOMEM.
 */
#define PAL_TPL_REQUEST_ID_MAX 128 /* --request-id: 1-128 characters */
#define PAL_TPL_KEY_SUFFIX_MAX (1 + PAL_TPL_REQUEST_ID_MAX)
PAL_MUST_CHECK int pal_tpl_render_key(const char *tpl, const pal_tpl_vars *v, char **out, char *err,
				      size_t errlen);

#endif
