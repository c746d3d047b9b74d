/*
 * listings.c - the trigger listing (pal_ops_triggers_json) as one JSON
 * array built by the database.  docs/operations.md.
 */
#include <stdio.h>
#include "palisade/ops.h"
#include "ops_int.h"

/* ---- trigger listing ----------------------------------------------------------- */

int pal_ops_triggers_json(pal_store *st, const char *job_id, const char *tenant, const char *state,
			  int64_t since, int64_t until, int64_t trigger_id, int limit, json_t **out,
			  char *err, size_t errlen)
{
	char s[24], l[16], t[24], u[24];
	pal__ops_i64s(s, sizeof s, since);
	pal__ops_i64s(u, sizeof u, until);
	snprintf(l, sizeof l, "%d", limit);
	pal__ops_i64s(t, sizeof t, trigger_id);
	const char *p[] = { job_id, state, since == PAL_OPS_NOW ? NULL : s, l,
			    until == PAL_OPS_NOW ? NULL : u, trigger_id > 0 ? t : NULL, tenant };
#define TRIGGERS_JSON                                                                              \
	"SELECT coalesce(json_agg(json_build_object('id', id, 'job_id', job_id,"                  \
	"  'version', version, 'scheduled_at', " TS("scheduled_at") ", 'partition', partition,"   \
	"  'source', source, 'request_id', request_id, 'state', state, 'fence', fence,"           \
	"  'lease_owner', lease_owner, 'lease_until', " TS("lease_until") ","                      \
	"  'attempt_count', attempt_count, 'last_error_class', last_error_class)"                 \
	"  ORDER BY scheduled_at DESC, partition DESC, id DESC), '[]')::text"
	/* one job's: through its plan and request keys (sql/020); the function's
	 * until is inclusive (0.3.0 nodes call it so), the listing's exclusive
	 * as on every other path: the bound passed is a microsecond before it */
	int rc = pal__store_query_json(
	    st,
	    job_id ? TRIGGERS_JSON " FROM palisade_job_triggers($1::text, $4::int,"
				   " $2::text, to_timestamp($3::bigint),"
				   " to_timestamp($5::bigint) - interval '1 microsecond') t"
		   : TRIGGERS_JSON
		" FROM (SELECT * FROM triggers"
		"  WHERE $1::text IS NULL AND ($2::text IS NULL OR state = $2::text)"
		"  AND ($3::bigint IS NULL OR scheduled_at >= to_timestamp($3::bigint))"
		"  AND ($5::bigint IS NULL OR scheduled_at < to_timestamp($5::bigint))"
		"  AND ($6::bigint IS NULL OR id = $6::bigint)"
		"  AND ($7::text IS NULL OR job_id IN (SELECT job_id FROM jobs WHERE tenant = $7))"
		"  ORDER BY scheduled_at DESC, partition DESC, id DESC LIMIT $4::int) t",
	    job_id ? 5 : 7, p, out, err, errlen);
#undef TRIGGERS_JSON
	if (rc || !job_id || json_array_size(*out))
		return rc;
	if ((rc = pal__ops_job_exists(st, job_id, err, errlen))) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}
