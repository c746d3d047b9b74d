/*
 * cutover.c - one cut-over step of a scope (cutover.h): the stop lines of
 * the latest step, read from the ledger and verify, then the step itself
 * (pal_store_cutover in src/store/shadow.c).  The CLI's direct path and the
 * API's POST /api/v1/cutover both come here, so both refuse alike.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "palisade/coord.h"
#include "palisade/cutover.h"
#include "palisade/shadow.h"
#include "palisade/timefmt.h"
#include "palisade/verify.h"

/* The stop lines of SC's step at SINCE: each crossed one appended to OUT. */
static int stoplines(pal_store *st, const pal_scope *sc, int64_t since, int64_t max_pending_s,
		     const char *sink_pg, json_t *out, char *err, size_t errlen)
{
	json_t *sl, *jobs;
	int rc = pal_store_stoplines_json(st, sc, &sl, err, errlen);
	if (rc)
		return rc;
	if ((rc = pal_store_scope_jobs_json(st, sc, &jobs, err, errlen))) {
		json_decref(sl);
		return rc;
	}
	int64_t tickets = json_integer_value(json_object_get(sl, "open_tickets"));
	int64_t oldest = json_integer_value(json_object_get(sl, "oldest_pending_s"));
	int64_t fenced = json_integer_value(json_object_get(sl, "fenced"));
	int64_t base = json_integer_value(json_object_get(sl, "fenced_baseline"));
	json_decref(sl);
	pal_verify_opts vo = {.activation_grace_s = PAL_VERIFY_ACTIVATION_GRACE_S,
			      .stuck_after_s = 0};
	char serr[512];
	if (sink_pg && pal_store_open(sink_pg, &vo.sink, serr, sizeof serr)) {
		snprintf(err, errlen, "the sink's database: %s", serr);
		json_decref(jobs);
		return PAL_EDB;
	}
	pal_store *sink = vo.sink;
	int64_t missing = 0, doubled = 0, sinkdup = 0;
	size_t i;
	json_t *j;
	/* up to a few seconds ago: the last instants may be in flight */
	int64_t to = (int64_t)time(NULL) - 5;
	json_array_foreach(jobs, i, j)
	{
		if (to <= since)
			break;
		pal_verify_report r;
		char verr[512];
		rc = pal_verify(st, since, to, json_string_value(j), &vo, &r, verr, sizeof verr);
		if (rc) {
			snprintf(err, errlen, "verify %s: %s", json_string_value(j), verr);
			break;
		}
		missing += r.missing;
		doubled += r.duplicates + r.unexpected;
		sinkdup += r.sink_duplicates;
		pal_verify_report_free(&r);
		/* the sink's doubled keys over the range once, not once per job */
		if (sink && vo.sink)
			vo.sink = NULL;
	}
	if (sink)
		pal_store_close(sink);
	json_decref(jobs);
	if (rc)
		return rc;
	struct {
		const char *line;
		bool crossed;
		int64_t value, bound;
	} lines[] = {
	    {"missing_instants", missing > 0, missing, 0},
	    {"doubled_instants", doubled > 0, doubled, 0},
	    {"doubled_effects", sinkdup > 0, sinkdup, 0},
	    {"stale_token_rejections", fenced > base, fenced, base},
	    {"oldest_pending_s", oldest > max_pending_s, oldest, max_pending_s},
	    {"open_tickets", tickets > 0, tickets, 0},
	};
	for (size_t k = 0; k < sizeof lines / sizeof *lines; k++) {
		if (!lines[k].crossed)
			continue;
		json_array_append_new(out, json_pack("{s:s, s:I, s:I}", "line", lines[k].line,
						     "value", (json_int_t)lines[k].value, "bound",
						     (json_int_t)lines[k].bound));
	}
	return PAL_OK;
}

/* The latest step of the scope named SCOPE: *PERCENT (0 none) and *AT
 * (PAL_OPS_NOW when unknown). */
static int latest_step(pal_store *st, const char *scope, int *percent, int64_t *at, char *err,
		       size_t errlen)
{
	json_t *shadows;
	*percent = 0;
	*at = PAL_OPS_NOW;
	int rc = pal_store_shadow_list_json(st, &shadows, err, errlen);
	if (rc)
		return rc;
	size_t i;
	json_t *s;
	json_array_foreach(shadows, i, s)
	{
		if (strcmp(json_string_value(json_object_get(s, "scope")), scope))
			continue;
		json_t *steps = json_object_get(s, "steps");
		json_t *last = json_array_get(steps, json_array_size(steps) - 1);
		if (last) {
			*percent = (int)json_integer_value(json_object_get(last, "percent"));
			if (pal_parse_rfc3339(json_string_value(json_object_get(last, "at")), at))
				*at = PAL_OPS_NOW;
		}
	}
	json_decref(shadows);
	return PAL_OK;
}

/* OUT's split_chains as WHO may see them (NULL: every tenant): a chain
 * with a job of a tenant WHO does not see is left out, counted in
 * hidden_split_chains, its ids unsaid (as plan diff's hidden_followers);
 * the tenants the store names in each chain for this are not answered. */
static void split_chains_seen(const pal_token_identity *who, json_t *out)
{
	json_t *a = json_object_get(out, "split_chains");
	json_int_t hidden = 0;
	for (size_t i = json_array_size(a); i-- > 0;) {
		json_t *x = json_array_get(a, i);
		const char *jt = json_string_value(json_object_get(x, "job_tenant"));
		const char *ut = json_string_value(json_object_get(x, "upstream_tenant"));
		if (who && (!pal_token_sees_tenant(who, jt ? jt : "") ||
			    !pal_token_sees_tenant(who, ut ? ut : ""))) {
			json_array_remove(a, i);
			hidden++;
			continue;
		}
		json_object_del(x, "job_tenant");
		json_object_del(x, "upstream_tenant");
	}
	json_object_set_new(out, "hidden_split_chains", json_integer(hidden));
}

int pal_cutover_step(pal_store *st, const pal_cutover_req *rq, const char *actor,
		     const char *reason, json_t **out, bool *refused, char *err, size_t errlen)
{
	*out = NULL;
	*refused = false;
	char scope[200];
	pal_scope_format(&rq->scope, scope, sizeof scope);
	int prev;
	int64_t prev_at;
	int rc = latest_step(st, scope, &prev, &prev_at, err, errlen);
	if (rc)
		return rc;
	if (prev > 0 && prev_at != PAL_OPS_NOW) {
		json_t *crossed = json_array();
		rc = stoplines(st, &rq->scope, prev_at, rq->max_pending_s, rq->sink_pg, crossed,
			       err, errlen);
		if (rc || json_array_size(crossed)) {
			if (!rc) {
				*refused = true;
				*out = json_pack("{s:s, s:b, s:i, s:O}", "scope", scope, "refused",
						 1, "previous_percent", prev, "crossed", crossed);
			}
			json_decref(crossed);
			return rc;
		}
		json_decref(crossed);
	}
	pal_cutover_result res;
	rc = pal_store_cutover(st, &rq->scope, rq->percent, rq->at, actor, reason, rq->dry_run,
			       &res, err, errlen);
	if (rc) {
		json_decref(res.split);
		json_decref(res.made_live);
		return rc;
	}
	char ts[32];
	pal_fmt_rfc3339(rq->at, ts, sizeof ts);
	*out = json_pack("{s:s, s:i, s:s, s:i, s:I, s:I, s:o, s:I, s:o, s:b}", "scope", scope,
			 "percent", rq->percent, "at", ts, "previous_percent", res.previous_percent,
			 "jobs", (json_int_t)res.jobs, "live_jobs", (json_int_t)res.live_jobs,
			 "made_live", res.made_live, "moved", (json_int_t)res.moved, "split_chains",
			 res.split, "dry_run", rq->dry_run);
	split_chains_seen(rq->who, *out);
	return PAL_OK;
}

int pal_boundary_check_nodes(pal_store *st, const pal_scope *sc, const char *cmd,
			     const char *zk, const char *root, const char *cluster, bool lenient,
			     char *msg, size_t len)
{
	char job[256], scope[200], err[512], who[1024];
	int rc = pal_store_scope_moving_job(st, sc, job, sizeof job, msg, len);
	if (!rc)
		msg[0] = '\0';
	if (rc || !*job)
		return rc;
	pal_scope_format(sc, scope, sizeof scope);
	json_t *older = NULL;
	rc = zk && *zk ? pal_coord_older_nodes(zk, root, cluster, 5000, PAL_BOUNDARY_MIN_SCHEMA,
					       "controller", &older, err, sizeof err)
		       : PAL_EZK;
	if (rc && lenient) {
		snprintf(msg, len,
			 "%s of %s goes ahead without knowing the live nodes (%s): %s has spread "
			 "or jitter, whose nominal instants a controller older than schema %d "
			 "neither writes nor plans by; if one still runs, check the boundary's "
			 "instants with palisade shadow diff",
			 cmd, scope, zk && *zk ? err : "no ZooKeeper connect string is known", job,
			 PAL_BOUNDARY_MIN_SCHEMA);
		return PAL_OK;
	}
	if (rc) {
		snprintf(msg, len,
			 "%s of %s judges the nominal instants of %s (spread or jitter), which "
			 "nodes older than schema %d do not write, and the live nodes cannot be "
			 "read (%s): run it once ZooKeeper answers; nothing changed",
			 cmd, scope, job, PAL_BOUNDARY_MIN_SCHEMA,
			 zk && *zk ? err : "no ZooKeeper connect string is known");
		return PAL_EZK;
	}
	size_t n = json_array_size(older);
	if (n)
		snprintf(msg, len,
			 "%s of %s judges the nominal instants of %s (spread or jitter), which "
			 "nodes older than schema %d neither write nor plan by (docs/migrating.md, "
			 "\"Spread and jitter at a boundary\"); live node%s older than that: %s; run "
			 "it once every node runs a release of schema %d or later; nothing changed",
			 cmd, scope, job, PAL_BOUNDARY_MIN_SCHEMA, n == 1 ? "" : "s",
			 pal_coord_describe_nodes(older, who, sizeof who), PAL_BOUNDARY_MIN_SCHEMA);
	json_decref(older);
	return n ? PAL_EBUSY : PAL_OK;
}
