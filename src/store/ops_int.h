/*
 * ops_int.h - what the files of the operator actions share (ops.c, gates.c,
 * cancel.c, manual.c, backfill.c, tickets.c, listings.c) and nobody else
 * needs.  Every function runs on the caller's connection; those taking
 * ERR fill it on failure.
 */
#ifndef PALISADE_OPS_INT_H
#define PALISADE_OPS_INT_H

#include <stddef.h>
#include <stdint.h>
#include "palisade/ops.h"
#include "store_int.h"

/* RFC 3339 UTC text of a timestamptz column (NULL stays NULL). */
#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"

/* Rows (alias T, of triggers or jobs: both have job_id, resource_group
 * and tenant) in the scope of parameters $1 (its kind, pal__ops_scope_kind)
 * and $2 (its name).  A custom plan folds the CASE to one test. */
#define IN_SCOPE(t)                                                                                \
	"(CASE $1::text WHEN 'global' THEN true"                                                   \
	" WHEN 'job' THEN " t ".job_id = $2::text"                                                 \
	" WHEN 'group' THEN " t ".resource_group = $2::text"                                       \
	" WHEN 'tenant' THEN " t ".tenant = $2::text END)"
/* "global", "job", "group" or "tenant": the kind as IN_SCOPE reads it. */
const char *pal__ops_scope_kind(pal_scope_kind k);

/* Give the open schedule triggers of the scope (KIND as IN_SCOPE reads
 * it, NAME) that a node wrote without nominal_at (0.3.0) for a version
 * with spread or jitter their nominal instant (src/store/nominal.c);
 * *FILLED: how many. */
PAL_MUST_CHECK int pal__store_fill_nominal_scope(pal_store *st, const char *kind, const char *name,
						 int64_t *filled, char *err, size_t errlen);
/* Decimal text of V into BUF. */
void pal__ops_i64s(char *buf, size_t len, int64_t v);
/* The int64 in row ROW, column COL of R. */
int64_t pal__ops_val_i64(const PGresult *r, int row, int col);
/* Run a statement that returns no rows we need; *n receives its row count
 * when N is not NULL. */
int pal__ops_exec(pal_store *st, const char *sql, int np, const char *const *p, int64_t *n,
		  char *err, size_t errlen);
/* One int64 from a single-row, single-column query (0 for no row or NULL). */
int pal__ops_query_i64(pal_store *st, const char *sql, int np, const char *const *p, int64_t *out,
		       char *err, size_t errlen);

typedef int (*pal__ops_tx_body)(pal_store *st, void *ctx, char *err, size_t errlen);
/*
 * Run BODY inside BEGIN ... COMMIT.  BODY returns 0 to commit, or an error
 * (the transaction is rolled back).  A deadlock or serialisation failure is
 * retried up to three times; BODY must therefore reset its results first.
 */
int pal__ops_in_tx(pal_store *st, pal__ops_tx_body body, void *ctx, char *err, size_t errlen);
/* Of the instants ATS (a bigint[] literal, epoch seconds) of JOB_ID, a job
 * with `after`, each with the partition count PARTS (an int[] literal, one
 * per instant: its owning version's), those the dependency planner has not
 * decided yet: after the job's first activation with `after` (where that
 * planner starts), above its after_watermarks row, with a partition that
 * has neither a trigger without a request id nor an upstream_* misfire of
 * the job (for all partitions or that one) at the instant: the planner
 * decides each (instant, partition) on its own.  It plans the job's trigger
 * there once the upstreams end, so a manual run or a backfill there would
 * be a second effect.  *N: how many instants; *FIRST: the earliest (0 when
 * none). */
PAL_MUST_CHECK int pal__ops_after_undecided(pal_store *st, const char *job_id, const char *ats,
					    const char *parts, int64_t *n, int64_t *first,
					    char *err, size_t errlen);
/* PAL_ENOENT with a hint when no job JOB_ID exists. */
int pal__ops_job_exists(pal_store *st, const char *job_id, char *err, size_t errlen);
/* Run a pg_notify statement (CHANNEL_SQL with its parameters). */
int pal__ops_notify(pal_store *st, const char *channel_sql, int np, const char *const *p, char *err,
		    size_t errlen);
/* The retention horizon (palisade_retention_horizon(): instants before it
 * may have lost their triggers) into *H, epoch seconds; INT64_MIN while
 * nothing was dropped. */
int pal__ops_horizon(pal_store *st, int64_t *h, char *err, size_t errlen);
/* Serialise requests of one (job, request id) until the transaction ends. */
int pal__ops_lock_request(pal_store *st, const char *job_id, const char *request_id, char *err,
			  size_t errlen);
/* Insert a backfill of JOB_ID in the open transaction, without an audit row,
 * after its checks (pal_ops_backfill; a ticket's resolution uses it too).
 * With UNRUN_ONLY (a misfire ticket's backfill) an (instant, partition)
 * that has a trigger of any source that ran or is to run (attempted, or
 * neither skipped nor cancelled) is left out and counted in res->ran. */
int pal__ops_backfill_in_tx(pal_store *st, const char *job_id, int64_t from, int64_t to,
			    int64_t max, const char *request_id, bool new_effect, bool unrun_only,
			    pal_backfill_result *res, char *err, size_t errlen);
/* In the open transaction: JOB_ID's row held FOR SHARE until it ends (a
 * concurrent delete waits, or is seen), *NOW the database clock (epoch
 * seconds); PAL_ENOENT for no such job, PAL_ESTALE with REFUSED
 * "job-retired" for a retired one.  What trigger and backfill refuse first. */
int pal__ops_hold_job(pal_store *st, const char *job_id, char refused[24], int64_t *now,
		      char *err, size_t errlen);
/* Every stored version of JOB_ID, [{version, spec, effective_from}] by
 * version, into *OUT (json_decref); PAL_ENOENT when the job has none. */
int pal__ops_job_versions(pal_store *st, const char *job_id, json_t **out, char *err,
			  size_t errlen);
/* The versions of the first upstream (`after`) of each version of VERSIONS
 * and, recursively, of theirs: *OUT an object job id -> versions, as
 * pal_backfill_instants_after takes it (an upstream with no job row: an
 * empty array).  With PENDING, an upstream whose latest version is stored
 * and not activated yet, after an activated one, counts as once a
 * controller takes it over: that version owns the instants after where the
 * controller switches to it (its effective_from set there), the activated
 * ones those before (*ALONE, when not NULL: some upstream did). */
int pal__ops_upstream_versions(pal_store *st, json_t *versions, bool pending, json_t **out,
			       bool *alone, char *err, size_t errlen);

#endif
