/*
 * template.h - render the templates of a job version for one trigger:
 * {placeholder}s (job, scheduled_at, scheduled_date, partition, trigger,
 * request_id, idempotency_key) and ${ENV_NAME} secret references.
 *
 * Secrets are resolved here, at call time, from the process environment;
 * they are never stored resolved, and error messages name the variable,
 * never its value.  A '{' not followed by a known name and '}' is literal
 * (JSON bodies are full of braces).
 */
#ifndef PALISADE_TEMPLATE_H
#define PALISADE_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>
#include "palisade/err.h"

typedef struct pal_tpl_vars {
	const char *job;
	int64_t scheduled_at;       /* rendered as RFC 3339 UTC */
	const char *scheduled_date; /* YYYY-MM-DD in the job's zone (caller renders it) */
	int partition;
	int64_t trigger;            /* trigger id */
	const char *request_id;     /* "" for scheduled triggers */
	const char *idempotency_key;/* NULL while rendering the key itself */
} pal_tpl_vars;

enum {
	PAL_TPL_URL = 1u << 0,     /* percent-encode substituted placeholder values */
	PAL_TPL_SECRETS = 1u << 1, /* resolve ${ENV} from the environment */
};

/* Render TPL into *out (caller frees).  PAL_ENOENT when a referenced
 * environment variable is unset (message names it), PAL_ENOMEM. */
PAL_MUST_CHECK int pal_tpl_render(const char *tpl, const pal_tpl_vars *v, unsigned flags, char **out,
				  char *err, size_t errlen);

#endif
