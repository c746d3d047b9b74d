/*
 * store.h - PostgreSQL access: connections, migrations, job versions.
 *
 * PostgreSQL is the single source of truth (docs/schema.md).  All SQL text of
 * palisade lives in sql/ (schema) and in src/store/ (queries); other modules
 * call these functions.  A pal_store is one connection and is not
 * thread-safe: give each thread or role its own.
 */
#ifndef PALISADE_STORE_H
#define PALISADE_STORE_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include "palisade/err.h"
#include "palisade/jobspec.h"
#include "palisade/planbatch.h"

/* The migrations compiled into this binary (generated from sql/). */
typedef struct pal_migration {
	int version;
	const char *name;
	const char *sql;
} pal_migration;
extern const pal_migration pal_migrations[];
extern const int pal_n_migrations;

/* A function, view or trigger of the schema: NAME (its file's, under
 * sql/functions/) and the file's whole text, one CREATE OR REPLACE
 * (docs/schema.md).  Applied, all of them in one transaction, after the
 * numbered migrations; PAL_OBJECTS_DIGEST tells a database that has these
 * bodies from one that does not (generated from sql/functions/). */
typedef struct pal_sql_object {
	const char *name;
	const char *sql;
} pal_sql_object;
extern const pal_sql_object pal_objects[];
extern const int pal_n_objects;
extern const char pal_objects_digest[];

/* The oldest binary schema that works against a database with M applied:
 * the N of a "-- compatible_from: N" line in M's leading comment block (an
 * expand step), else M's own version (a contract step).  docs/upgrades.md. */
int pal_migration_compatible_from(const pal_migration *m);
/* M declares, with a header line "-- applied: after the roll", that the
 * binary carrying it works with or without it applied: a node leaves it to
 * `palisade migrate`, which applies it once no live node is older than its
 * compatible_from (docs/upgrades.md, "Steps applied after the roll"). */
bool pal_migration_after_roll(const pal_migration *m);
/* The N migrations MS are a valid list: each numbered, each number above
 * the one before (schema_migrations knows a step by its number: of two of
 * one number, the second would pass for applied).  PAL_EINVAL with ERR
 * naming them otherwise: a fault of the build, which `palisade migrate`
 * (exit 65) and a node (node.migrations_invalid, exit 65) check before
 * they touch the database.  An after-roll step may be followed by any
 * step: it is then a plain contract step (not in the tail). */
int pal_migrations_check(const pal_migration *ms, int n, char *err, size_t errlen);

/* A binary's schema range and a database's schema, side by side. */
typedef struct pal_schema_range {
	int binary;		/* highest migration compiled in */
	int min;		/* lowest database schema it runs on (it migrates up to it):
				 * the highest migration before its after-roll tail */
	int compatible_from;	/* declared by its own newest migration */
	int db_version;		/* highest applied version, 0 when none */
	int db_compatible_from; /* largest compatible_from recorded */
	int db_compatible_by;	/* the version that declares it */
} pal_schema_range;

/* The binary's side of R (the database's fields are zeroed). */
void pal_store_binary_schema(pal_schema_range *r);
/* The same for the N migrations MS (in version order). */
void pal_schema_range_of(const pal_migration *ms, int n, pal_schema_range *r);
/* The database supports this binary: db_version >= min and
 * db_compatible_from <= binary. */
bool pal_schema_supported(const pal_schema_range *r);

typedef struct pal_store pal_store;

/* Fill R for this binary and the database of ST (no lock, read only). */
PAL_MUST_CHECK int pal_store_schema_range(pal_store *st, pal_schema_range *r, char *err,
					  size_t errlen);
/* The binary's after-roll steps the database of ST lacks: *N of them, the
 * names (static) of the first MAX into NAMES (may be NULL); all of them on
 * an empty database.  Read only, no lock. */
enum { PAL_AFTER_ROLL_MAX = 16 }; /* names a caller keeps room for */
PAL_MUST_CHECK int pal_store_pending_after_roll(pal_store *st, const char **names, int max, int *n,
						char *err, size_t errlen);
/* Whether a node ever ran on ST's database (*RAN): a shard row names a
 * leader, or an executor marked itself seen.  A database `palisade
 * migrate` alone set up has neither: no node can be told apart there,
 * live or not, for none registered anywhere.  Read only, no lock. */
PAL_MUST_CHECK int pal_store_nodes_ever_ran(pal_store *st, bool *ran, char *err, size_t errlen);
/* The nodes a shard row names as its leader and that wrote it (a claim or
 * a tick) in the last WITHIN_MS, as a JSON array of {"node", "shards",
 * "age_ms"} (shards: how many such rows, age_ms: since the latest write),
 * into *OUT, a new reference.  What `palisade migrate` holds against the
 * live nodes ZooKeeper lists.  Read only, no lock. */
PAL_MUST_CHECK int pal_store_recent_leaders(pal_store *st, int within_ms, json_t **out, char *err,
					    size_t errlen);

/*
 * Connect with CONNINFO (libpq keyword/value string or URI).  Sets
 * application_name to "palisade" unless the conninfo names one.  Fails with
 * PAL_EDB and libpq's message.  Free with pal_store_close().
 */
PAL_MUST_CHECK int pal_store_open(const char *conninfo, pal_store **out, char *err, size_t errlen);
/* Session timeouts of every later pal_store_open() in this process:
 * idle_in_transaction_session_timeout (default 5 s) and statement_timeout
 * (0, the default: the server's).  A node sets the first from its config
 * (postgres.idle_in_transaction_timeout). */
void pal_store_set_session_timeouts(int64_t idle_in_transaction_ms, int64_t statement_ms);
/* Declare that every later pal_store_open() of this process reaches a
 * transaction pooler (postgres.pool_mode: transaction, docs/operations.md):
 * such a store keeps no session state.  It sends its statements unnamed
 * instead of prepared, makes no session setting (jit, the session timeouts
 * above; pal_store_set_statement_timeout and _lock_timeout do nothing: the
 * pooler's server connections carry them), and refuses LISTEN, the
 * migration lock and pal_store_prepare_commits (PAL_EINVAL).  Off by
 * default. */
void pal_store_set_transaction_pooling(bool on);
/* pal_store_open() for a connection that needs a session of its own
 * (LISTEN, session settings, named statements, session advisory locks),
 * whatever pal_store_set_transaction_pooling() said: CONNINFO must reach
 * PostgreSQL or a session-mode pool (postgres.direct_conninfo). */
PAL_MUST_CHECK int pal_store_open_session(const char *conninfo, pal_store **out, char *err,
					  size_t errlen);
/* ST was opened through a transaction pooler (see above). */
bool pal_store_pooled(const pal_store *st);
/* *BEHIND: ST reaches PostgreSQL through a connection pooler, whatever it
 * was opened as: the server process that answers is not the one the
 * connection was given at connect (a pooler such as PgBouncer answers the
 * connection with a backend key of its own).  PAL_EDB on a database error. */
PAL_MUST_CHECK int pal_store_behind_pooler(pal_store *st, bool *behind, char *err, size_t errlen);
void pal_store_close(pal_store *st);
/* Asynchronous statements (one at a time per store): the socket to poll
 * for input, whether a statement is in flight, and reading what arrived -
 * *done becomes true when the answer is complete (then call the matching
 * _recv).  PAL_EDB when the connection broke. */
int pal_store_socket(pal_store *st);
bool pal_store_busy(const pal_store *st);
PAL_MUST_CHECK int pal_store_consume(pal_store *st, bool *done, char *err, size_t errlen);
/* The last failed query hit lock_timeout (SQLSTATE 55P03): the row is held
 * elsewhere (e.g. by a paused process); retry later, the connection is fine. */
bool pal_store_lock_timeout(const pal_store *st);
/* The last failed query was aborted as a deadlock (SQLSTATE 40P01): its
 * transaction was rolled back; retry, the connection is fine. */
bool pal_store_deadlock(const pal_store *st);
/* The database clock minus this host's CLOCK_MONOTONIC (*MINUS_MONO_MS) and
 * minus its CLOCK_REALTIME (*MINUS_WALL_MS), in ms, measured around one
 * round trip.  Decisions that compare times stored in the database
 * (max_age, deadlines, a claimed trigger's instant) add the first to the
 * monotonic clock: a wall clock that is off, or steps (NTP, an operator),
 * never enters them.  The second is for the operator (a metric). */
PAL_MUST_CHECK int pal_store_db_clock_offsets(pal_store *st, int64_t *minus_mono_ms,
					      int64_t *minus_wall_ms, char *err, size_t errlen);

/*
 * Apply every compiled-in migration the database lacks, each in its own
 * transaction, all under one session-level pg_advisory_lock, so that any
 * number of concurrent callers converge to one schema (G8).  *applied
 * receives how many this call applied.  A database at a version this binary
 * does not know is run against when every recorded compatible_from is <= the
 * binary's schema (expand steps); otherwise PAL_ESCHEMA, before anything is
 * applied.  pal_store_migrate() (a node) applies no after-roll step
 * (pal_migration_after_roll) but on an empty database: it stops at the
 * binary's minimum.  A contract step for the nodes running
 * (pal_store_pending_contract) below that is not applied either:
 * PAL_ESCHEMA, nothing applied, ERR naming it and `palisade migrate`.
 * pal_store_migrate_all() applies those too (the CLI, once it has checked
 * the live nodes), the ones up to version UPTO only when UPTO > 0
 * (`palisade migrate --to`, and --before-roll: UPTO the minimum).  The
 * functions come with any run that reaches the binary's minimum.
 * pal_migrations_check() failing: PAL_EINVAL, nothing applied.
 *
 * Then the functions, views and triggers (pal_objects), when the database
 * is at the binary's minimum at least and does not run them yet (docs/schema.md,
 * "Functions, views and triggers"): *FUNCTIONS says whether this call
 * applied them; pal_store_migrate() logs store.functions_applied instead.
 *
 * Each migration waits at most 500 ms for any one lock and gives way (is
 * rolled back and tried again after a pause) when that runs out or it is
 * chosen as a deadlock's victim, for up to 15 s in all per call; then
 * PAL_EBUSY, that migration not applied (the earlier ones stay).  Nodes'
 * transactions are thereby never held up by a migration for long, nor
 * chosen as victims of its deadlocks.
 */
PAL_MUST_CHECK int pal_store_migrate(pal_store *st, int *applied, char *err, size_t errlen);
PAL_MUST_CHECK int pal_store_migrate_all(pal_store *st, int upto, int *applied, bool *functions,
					 char *err, size_t errlen);
/* Take (LOCK) or release the advisory lock of the migrations around a
 * check and pal_store_migrate_all(), so that no other process applies
 * anything in between (it nests with the migrations' own).  Blocks while
 * another process migrates.  PAL_EDB on a database error. */
PAL_MUST_CHECK int pal_store_migrate_lock(pal_store *st, bool lock, char *err, size_t errlen);

/* The migrations this binary would apply to a database that are contract
 * steps for the nodes running on it: those whose compatible_from is above
 * the database's (the largest recorded), not yet applied.  None for an
 * empty database (no node runs on it).  docs/upgrades.md. */
typedef struct pal_pending_contract {
	int steps;	     /* how many such migrations (0: nothing to check) */
	int compatible_from; /* the largest compatible_from among them */
	int version;	     /* the migration that declares it */
	const char *name;    /* its name (static), NULL when steps == 0 */
	int db_version;	     /* the database's schema and compatible_from now */
	int db_compatible_from;
} pal_pending_contract;
/* Fill PC for ST's database, of the migrations up to version UPTO (0: all)
 * (read only, no lock: a snapshot; a concurrent migrate may apply some
 * meanwhile). */
PAL_MUST_CHECK int pal_store_pending_contract(pal_store *st, int upto, pal_pending_contract *pc,
					      char *err, size_t errlen);

/*
 * Check that the schema is in this binary's range: PAL_ESCHEMA when newer
 * by a contract step (refuse to run), PAL_EINVAL when older or missing (run
 * migrate); a newer schema of expand steps only is accepted.
 * *version receives the database's highest applied version (0 if none).
 */
PAL_MUST_CHECK int pal_store_schema_check(pal_store *st, int *version, char *err, size_t errlen);

/* Shard count of the cluster: stored at first use (INSERT ... ON CONFLICT DO
 * NOTHING with DEFAULT_SHARDS), then fixed.  Also seeds the shards rows. */
PAL_MUST_CHECK int pal_store_shard_count(pal_store *st, int default_shards, int *n, char *err,
					 size_t errlen);
/* Where the nodes of this database register in ZooKeeper (the chroot of
 * zookeeper.connect, then <root>/<cluster>/nodes), as each node of this
 * release says at its start and every 10 s after: one cluster_settings row
 * per path, its created_at the last time a node said so (written at most
 * every PAL_ZK_PATH_REFRESH_S).  A path said within PAL_ZK_PATH_LIVE_S is live.
 * `palisade migrate` reads them to tell that the path it reads is the
 * nodes' (docs/upgrades.md).  pal_store_zk_nodes_path_seen() records PATH
 * and gives the other live paths, comma-separated, in OTHERS ("" when
 * none); pal_store_zk_nodes_paths() gives every recorded path as a JSON
 * array of {path, seen_s_ago, live}, the last seen first. */
#define PAL_ZK_PATH_REFRESH_S 5
#define PAL_ZK_PATH_LIVE_S (6 * PAL_ZK_PATH_REFRESH_S)
PAL_MUST_CHECK int pal_store_zk_nodes_path_seen(pal_store *st, const char *path, char *others,
						size_t otherslen, char *err, size_t errlen);
PAL_MUST_CHECK int pal_store_zk_nodes_paths(pal_store *st, json_t **out, char *err,
					    size_t errlen);

typedef enum { PAL_APPLY_CREATED, PAL_APPLY_UPDATED, PAL_APPLY_UNCHANGED } pal_apply_outcome;

/* What apply did with one job (the job is the spec at the same index). */
typedef struct pal_apply_result {
	pal_apply_outcome outcome;
	int version; /* the job's latest version after apply */
	bool was_live; /* the job was stored and not retired before this apply */
} pal_apply_result;

/* The largest pal_job_spec_min_schema() among the N jobs of JOBS that RES
 * (at the same indices) says were created or updated, with *JOB and *KEY
 * (borrowed from JOBS, static) naming the first job that needs it; 0 when
 * none does (both NULL then). */
int pal_apply_min_schema(const pal_job_spec *jobs, const pal_apply_result *res, size_t n,
			 const char **job, const char **key);

/*
 * Store job specs as plan versions, in one transaction fed in batches
 * (src/store/apply.c): per job, version n+1 when the canonical digest
 * differs from version n, nothing when it is the same.  History is never
 * rewritten.  Writes one audit_log row per created or updated job and
 * NOTIFYs channel palisade_apply (payload: the job id) on commit.
 * Concurrent appliers serialise per job (row locks taken in job-id order
 * within a batch).  Job ids must be unique across the whole set.
 *
 * pal_store_apply_begin opens the transaction (*out, ended by exactly one
 * of commit or abort, which free it).  pal_store_apply_add stores N specs,
 * RESULTS[i] for SPECS[i]; the specs may be freed when it returns.  Its
 * last statement may still be running on the server when it returns (so
 * the caller can read the next file meanwhile): an error it hits is
 * reported by the next add or by commit.  On any error nothing is stored:
 * call pal_store_apply_abort.
 */
typedef struct pal_apply pal_apply;
PAL_MUST_CHECK int pal_store_apply_begin(pal_store *st, const char *actor, const char *reason,
					 int default_shards, pal_apply **out, char *err,
					 size_t errlen);
/* pal_store_apply_begin for an apply that may change notify rules (RULES
 * true: pal_store_apply_notify_rules will be given some): its first
 * statement takes the rules' lock exclusive, where pal_store_apply_begin
 * takes it shared, so that no apply waits for it while holding another
 * lock.  Blocks while another apply holds it in the other mode. */
/* Check the notify entries the jobs of apply A inherit from their group's
 * and tenant's rules (its own jobs' and the followers') against each job's
 * tenant under P (borrowed until A ends; NULL, the default: not checked):
 * a refused one fails pal_store_apply_add or pal_store_apply_followers
 * with PAL_ENOGRANT (PAL_EPERM for one of the node's own variables), the
 * message naming the job, its tenant, the rule and the reference. */
struct pal_secret_policy;
void pal_store_apply_secret_policy(pal_apply *a, const struct pal_secret_policy *p);
PAL_MUST_CHECK int pal_store_apply_begin_rules(pal_store *st, const char *actor,
					       const char *reason, int default_shards, bool rules,
					       pal_apply **out, char *err, size_t errlen);
PAL_MUST_CHECK int pal_store_apply_add(pal_apply *a, const pal_job_spec *specs, size_t n,
				       pal_apply_result *results, char *err, size_t errlen);
PAL_MUST_CHECK int pal_store_apply_commit(pal_apply *a, char *err, size_t errlen);
void pal_store_apply_abort(pal_apply *a);

/*
 * Store the shared calendars CALS[0..n) in the apply (src/store/calendars.c):
 * each keeps its latest version when its digest is unchanged, else gets
 * version n+1 (audited).  Sets cals[i].version and RESULTS[i] (RESULTS may
 * be NULL).  The jobs added after it that name one
 * of them carry that version; a job naming a calendar this apply did not
 * store is refused (PAL_EINVAL).  Call before adding the jobs.
 */
PAL_MUST_CHECK int pal_store_apply_calendars(pal_apply *a, pal_calendar *cals, size_t n,
					     pal_apply_result *results, char *err, size_t errlen);
/*
 * A calendar's followers (src/store/apply_followers.c): when this apply
 * stored a new version of a calendar, every live job outside this apply
 * whose latest version names a calendar this apply stored, with a copy at
 * another version, gets version n+1 with the stored calendar in
 * place of its copy (the rest of its spec as stored), in the apply's
 * transaction, so that no job keeps planning against a calendar's old
 * rules.  FN (may be NULL) is called with each such job's id and new
 * version.  Call after the jobs, --prune's retirements and before commit;
 * commit calls it when the caller did not.
 */
/*
 * The same for notify rules: when this apply changed a rule
 * (pal_store_apply_notify_rules), every live job of its group or tenant
 * outside this apply, or applied by it before the rule, whose effective
 * notify changes (docs/jobs.md, "Notify rules") gets version n+1 with its
 * own entries and the rules' in place of its old inherited ones.  FN gets
 * FOLLOWS: "a calendar it names" or "its group's or tenant's notify rules".
 */
typedef void (*pal_apply_follow_fn)(void *ctx, const char *job_id, int version,
				    const char *follows);
PAL_MUST_CHECK int pal_store_apply_followers(pal_apply *a, pal_apply_follow_fn fn, void *ctx,
					     char *err, size_t errlen);
/*
 * Store the notify rules RULES[0..n) (docs/jobs.md, "Notify rules"): a
 * rule whose scope and url are stored with other events or another secret
 * is updated, a new one inserted, one with remove deleted, each audited
 * (notify_rule.create, .update, .delete); an equal one, or the removal of
 * none, changes nothing.  OUT[i] (may be NULL) gets what happened.  The
 * jobs added after it merge the stored rules into their notify.  Call
 * before adding the jobs.
 */
typedef enum {
	PAL_RULE_UNCHANGED,
	PAL_RULE_CREATED,
	PAL_RULE_UPDATED,
	PAL_RULE_REMOVED
} pal_rule_outcome;
PAL_MUST_CHECK int pal_store_apply_notify_rules(pal_apply *a, const pal_notify_rule *rules,
						size_t n, pal_rule_outcome *out, char *err,
						size_t errlen);
/* The stored notify rules, with RULES[0..n) (a set's, not stored) in place
 * of those of the same scope and url (a removal marked removed, which the
 * merge skips), in the order apply merges them, into *OUT, *NOUT
 * (pal_notify_rules_free); and that merged into the notify of each job of
 * SET (`plan diff`: what apply would store).  0, PAL_EDB or PAL_ENOMEM. */
PAL_MUST_CHECK int pal_store_notify_rules_overlay(pal_store *st, const pal_notify_rule *rules,
						  size_t n, pal_notify_rule **out, size_t *nout,
						  char *err, size_t errlen);
/* The live jobs of the groups and tenants RULES[0..n) name that inherit
 * rules, as a JSON array of {job_id, spec, notify_own (text or null)}. */
PAL_MUST_CHECK int pal_store_rule_scope_jobs_json(pal_store *st, const pal_notify_rule *rules,
						  size_t n, json_t **out, char *err, size_t errlen);
PAL_MUST_CHECK int pal_store_merge_notify_rules(pal_store *st, pal_jobset *set, char *err,
						size_t errlen);
/* What version each of CALS[0..n) would get from an apply now (`plan
 * diff`): sets cals[i].version, writes nothing. */
PAL_MUST_CHECK int pal_store_calendar_versions(pal_store *st, pal_calendar *cals, size_t n,
					       char *err, size_t errlen);
/* The live stored jobs that would follow CALS[0..n) (their versions set as
 * by pal_store_calendar_versions): [{job_id, spec, notify_own}], the latest canonical
 * spec of each job whose copy of one of them is at another version, by job
 * id (json_decref). */
PAL_MUST_CHECK int pal_store_calendar_followers_json(pal_store *st, const pal_calendar *cals,
						     size_t n, json_t **out, char *err,
						     size_t errlen);
/* The calendars (only NAME when not NULL) at their latest version with the
 * jobs whose latest version names them, as a JSON array (json_decref). */
PAL_MUST_CHECK int pal_store_calendars_json(pal_store *st, const char *name, json_t **out,
					    char *err, size_t errlen);

/* The whole of SET in one call: begin, calendars, notify rules, add, commit. */
PAL_MUST_CHECK int pal_store_apply(pal_store *st, const pal_jobset *set, const char *actor,
				   const char *reason, int default_shards,
				   pal_apply_result *results, char *err, size_t errlen);

/* Latest stored canonical spec of JOB_ID into *spec_json (json_decref) and
 * its version; PAL_ENOENT when the job does not exist. */
PAL_MUST_CHECK int pal_store_latest_spec(pal_store *st, const char *job_id, json_t **spec_json,
					 int *version, char *err, size_t errlen);

/* Where the intervals of an `every` without `start` count from, as the
 * controller will plan them (docs/jobs.md; `plan diff`), epoch seconds:
 * *NEXT for a version applied now (the job's shard watermark while a
 * version of it is active, where a new version takes over; now for a job
 * never activated or unknown), *STORED for the latest stored version (its
 * effective_from, *NEXT while no controller has activated it). */
PAL_MUST_CHECK int pal_store_job_anchors(pal_store *st, const char *job_id, int64_t *stored,
					 int64_t *next, char *err, size_t errlen);

/* Jobs with their versions as a JSON array (json_decref); JOB_ID NULL for
 * all jobs.  Fields: job_id tenant group shard latest_version active_version
 * created_at updated_at versions[{version digest cron timezone partitions
 * created_by created_at activated_at}]. */
PAL_MUST_CHECK int pal_store_jobs_json(pal_store *st, const char *job_id, json_t **out, char *err,
				       size_t errlen);

/* ---- controller (src/store/plan.c) ---------------------------------------- */

/*
 * Claim SHARD for EPOCH in PostgreSQL: succeeds only when the stored epoch is
 * lower (or equal and ours, after a reconnect).  *watermark receives the
 * shard's watermark (PAL_NO_TIME if none), *last_write the time of the last
 * fenced write before the claim (shards.updated_at: the previous leader's
 * last committed tick or later write, or the previous claim).  PAL_ESTALE
 * with a message when a newer or equal foreign epoch holds it.
 */
PAL_MUST_CHECK int pal_store_shard_claim(pal_store *st, int shard, int64_t epoch, const char *node,
					 int64_t *watermark, int64_t *last_write, char *err,
					 size_t errlen);

/*
 * Called once per job of a shard load with its shard and its versions,
 * ascending (borrowed: valid during the call only).  A non-zero return stops
 * the load and is returned by pal_store_shard_jobs().
 */
typedef int (*pal_shard_job_fn)(void *ctx, int shard, const char *job_id,
				const pal_plan_version *versions, size_t n);

/*
 * Stream the jobs of SHARDS[0..n_shards) (or only JOB_ID when not NULL) to
 * FN, one job at a time, with the versions a planner needs given each
 * shard's re-scan start CUTOFFS[i] (the latest version activated at or
 * before it, every later activated one, and the latest, maybe pending), as
 * typed planning versions read from the columns of job_versions (no spec
 * JSON is sent or decoded).  Rows arrive in libpq's single-row mode, so
 * memory stays flat whatever the shards' size; loading many shards at once
 * reads job_versions once.  Without WITH_SPECS only version and
 * effective_from are filled: the version lists alone, for a reload that
 * then fetches only the jobs whose lists changed.  *jobs receives how many
 * jobs FN saw.  Blocks for the whole load.
 */
PAL_MUST_CHECK int pal_store_shard_jobs(pal_store *st, const int *shards, const int64_t *cutoffs,
					size_t n_shards, const char *job_id, bool with_specs,
					pal_shard_job_fn fn, void *ctx, size_t *jobs, char *err,
					size_t errlen);

/* pal_store_shard_jobs (with specs) of only the jobs IDS[0..n_ids) of
 * SHARDS[0..n_shards): a successor's first load after a handoff. */
PAL_MUST_CHECK int pal_store_shard_jobs_ids(pal_store *st, const int *shards,
					    const int64_t *cutoffs, size_t n_shards,
					    const char *const *ids, size_t n_ids,
					    pal_shard_job_fn fn, void *ctx, size_t *jobs, char *err,
					    size_t errlen);

/*
 * For each job IDS[i], the latest instant above AFTER (a shard's
 * watermark - overlap) that the planner decided: its newest schedule or
 * catch-up trigger or planner-written misfire row (range_to), into
 * DECIDED[i] (PAL_NO_TIME: none).  A successor's takeover check
 * (pal_planner_loaded_due()), inside the tick's transaction.  Blocks.
 */
PAL_MUST_CHECK int pal_store_decided_after(pal_store *st, const char *const *ids, size_t n,
					   int64_t after, int64_t *decided, char *err,
					   size_t errlen);

/*
 * Graceful handoff (src/store/jobs.c, sql/014_shard_handoff.sql).
 * pal_store_handoff_write: as NODE, leader of each ROWS[i].shard at its
 * epoch whose committed watermark is its watermark, record its ids as the
 * jobs with an instant in (watermark, horizon], all rows in one
 * transaction.  RCS[i]: PAL_OK, PAL_ESTALE (that row not written: the
 * shard no longer has that epoch and watermark) or PAL_EDB (nothing
 * written; the return value and ERR say why).
 * pal_store_handoff_read: for each SHARDS[i], the row whose watermark is
 * the shard's current one: HORIZONS[i] (PAL_NO_TIME: none usable) and
 * IDS[i] (a NULL-terminated array of ids, NULL when none; the caller frees
 * it with g_strfreev).
 * pal_store_handoff_clear: delete the rows of SHARDS[0..n).
 */
typedef struct pal_handoff {
	int shard;
	int64_t epoch, watermark, horizon;
	const char *const *ids;
	size_t n_ids;
} pal_handoff;
PAL_MUST_CHECK int pal_store_handoff_write(pal_store *st, const char *node, const pal_handoff *rows,
					   size_t n, int *rcs, char *err, size_t errlen);
PAL_MUST_CHECK int pal_store_handoff_read(pal_store *st, const int *shards, size_t n,
					  int64_t *horizons, char ***ids, char *err, size_t errlen);
PAL_MUST_CHECK int pal_store_handoff_clear(pal_store *st, const int *shards, size_t n, char *err,
					   size_t errlen);

/*
 * Open the fenced tick transaction: BEGIN, lock the shard row if it still
 * holds EPOCH.  Returns the committed watermark and the database clock
 * (clock_timestamp, seconds).  PAL_ESTALE (rolled back) when fenced.
 */
PAL_MUST_CHECK int pal_store_tick_begin(pal_store *st, int shard, int64_t epoch, int64_t *watermark,
					int64_t *now, char *err, size_t errlen);

/* Write BATCH (activations, triggers, misfires, tickets, watermark, NOTIFY)
 * and COMMIT: one statement per kind of row, every array through the one
 * encoder (quoted elements).  *inserted = trigger rows inserted (conflicts excluded).  On
 * any failure the transaction is rolled back; PAL_ESTALE when fenced. */
PAL_MUST_CHECK int pal_store_tick_commit(pal_store *st, int shard, int64_t epoch, const char *node,
					 const pal_plan_batch *b, int64_t *inserted, char *err,
					 size_t errlen);
void pal_store_tick_abort(pal_store *st);

/* The last failure was a statement the server refused (a constraint, bad
 * data, a bug in it) on a connection that is still up: retrying the same
 * rows cannot succeed, but other rows can. */
bool pal_store_statement_failed(const pal_store *st);

/* A job taken out of planning, and the server's error that put it there. */
typedef struct pal_quarantined {
	const char *job_id; /* points into the batch's strings (the planner's) */
	char error[512];
	bool created; /* false: it was quarantined already */
} pal_quarantined;

/*
 * After pal_store_tick_commit() failed with a refused statement and a new
 * pal_store_tick_begin(): write B job by job in savepoints, bisecting the
 * jobs of the batch down to the ones whose rows the server refuses; those
 * are quarantined (pal_store_quarantine_job, SINCE = the watermark of the
 * failed tick) in the same transaction, the rest is committed with the
 * watermark.  *bad (free()) lists the quarantined jobs.  Cost on failure:
 * O(k log n) statements for k bad jobs of n.
 */
PAL_MUST_CHECK int pal_store_tick_commit_isolated(pal_store *st, int shard, int64_t epoch,
						  const char *node, int64_t since,
						  const pal_plan_batch *b, int64_t *inserted,
						  pal_quarantined **bad, size_t *n_bad, char *err,
						  size_t errlen);

/* Quarantine JOB_ID (a quarantine row and an open ticket whose allowed
 * action is "release"); nothing when it already is (*created false; CREATED
 * may be NULL).  SINCE: its first instant not planned (PAL_NO_TIME: now). */
PAL_MUST_CHECK int pal_store_quarantine_job(pal_store *st, const char *job_id, int shard,
					    int64_t epoch, int64_t since, const char *error,
					    bool *created, char *err, size_t errlen);

/* The quarantined jobs (JOB_ID only, when not NULL), as a JSON array of
 * {job, version, since, error, ticket}. */
PAL_MUST_CHECK int pal_store_quarantine_json(pal_store *st, const char *job_id, json_t **out,
					     char *err, size_t errlen);

/* verify: the latest versions of jobs (JOB_ID only, when not NULL) that
 * have no activated version although created at or before CREATED_BEFORE,
 * as [{job_id, version, spec, created_at}]. */
PAL_MUST_CHECK int pal_store_never_activated_json(pal_store *st, const char *job_id,
						  int64_t created_before, json_t **out, char *err,
						  size_t errlen);

/* verify: triggers scheduled in [FROM, TO] in a non-terminal state (pending,
 * retry_wait, running, unknown, pausing, cancelling) unchanged and overdue
 * for more than OLDER_THAN_S, as [{trigger, job, at, state, since}]. */
PAL_MUST_CHECK int pal_store_stuck_json(pal_store *st, const char *job_id, int64_t from, int64_t to,
					int64_t older_than_s, json_t **out, char *err,
					size_t errlen);

/* verify --sink-pg: effects applied twice in a palisade-sink database SINK
 * (sql/sink/): keys with more than one ledger row for one chunk, the last
 * applied at or after FROM (TO is not a bound: an instant's effect may be
 * applied long after it), as [{key, chunk, rows}]. */
PAL_MUST_CHECK int pal_store_sink_duplicates_json(pal_store *sink, int64_t from, int64_t to,
						  json_t **out, char *err, size_t errlen);

/* Ids of the quarantined jobs of SHARD: a NULL-terminated array in *OUT
 * (free with g_strfreev), *N of them. */
PAL_MUST_CHECK int pal_store_quarantined_ids(pal_store *st, int shard, char ***out, size_t *n,
					     char *err, size_t errlen);

/* Release JOB_ID from quarantine: delete its row, resolve its ticket, audit
 * (actor, reason) and notify the controllers (palisade_apply), in one
 * transaction.  PAL_ENOENT when it is not quarantined. */
PAL_MUST_CHECK int pal_store_release_quarantine(pal_store *st, const char *job_id,
						const char *actor, const char *reason, char *err,
						size_t errlen);

/* ---- verify (src/store/verify.c) ------------------------------------------- */

/* The database clock, in whole Unix seconds (floor). */
PAL_MUST_CHECK int pal_store_db_now(pal_store *st, int64_t *now, char *err, size_t errlen);

/* Activated versions of every job (or JOB_ID): JSON [{job_id, versions:
 * [{version, spec, effective_from}]}], versions ascending. */
PAL_MUST_CHECK int pal_store_activated_versions(pal_store *st, const char *job_id, json_t **out,
						char *err, size_t errlen);

/* Plan keys of JOB_ID's scheduled triggers with at in [FROM, TO] as
 * [[at, partition, rows]...] ascending, and its misfire ranges overlapping
 * the interval as [[from, to, partition|null, reason]...]. */
PAL_MUST_CHECK int pal_store_planned(pal_store *st, const char *job_id, int64_t from, int64_t to,
				     json_t **triggers, json_t **misfires, char *err,
				     size_t errlen);

/* Cluster status JSON (src/store/status.c): {now, shards: [{shard leader
 * epoch watermark lag_s jobs due planned running oldest_due_s}], triggers:
 * {state: count}, open_tickets, misfires, schema: {version, pending_after_roll:
 * [name...]}}. */
PAL_MUST_CHECK int pal_store_status_json(pal_store *st, json_t **out, char *err, size_t errlen);
/* The same with the live states counted exactly and the finished ones
 * (succeeded, failed, cancelled, skipped) estimated from the planner's
 * statistics, listed in triggers_estimated: what the console shows, at a
 * cost that follows the live triggers, not the table's history. */
PAL_MUST_CHECK int pal_store_status_live_json(pal_store *st, json_t **out, char *err,
					      size_t errlen);

/* One audit_log row (an operator action outside the ops module, such as a
 * drain over the admin endpoint); DETAILS_JSON may be NULL. */
PAL_MUST_CHECK int pal_store_audit(pal_store *st, const char *actor, const char *action,
				   const char *scope, const char *reason, const char *details_json,
				   char *err, size_t errlen);

/* SELECT 1: checks the connection (lease thread with nothing to renew). */
PAL_MUST_CHECK int pal_store_ping(pal_store *st, char *err, size_t errlen);

/* Limit every later statement of ST to MS milliseconds (statement_timeout),
 * and every wait for a lock (lock_timeout). */
PAL_MUST_CHECK int pal_store_set_statement_timeout(pal_store *st, int64_t ms, char *err,
						   size_t errlen);
PAL_MUST_CHECK int pal_store_set_lock_timeout(pal_store *st, int64_t ms, char *err, size_t errlen);
/* LISTEN on CHANNEL (an identifier of palisade's, not user input). */
PAL_MUST_CHECK int pal_store_listen(pal_store *st, const char *channel, char *err, size_t errlen);
/* Called for each notification: its channel and payload (borrowed). */
typedef void (*pal_notify_fn)(void *ctx, const char *channel, const char *payload);
/* Read what arrived on ST without blocking and hand every notification to
 * FN (NULL: only count them); *n receives how many.  PAL_EDB when the
 * connection broke (err says why).  Not while a statement is in flight. */
PAL_MUST_CHECK int pal_store_notifications(pal_store *st, pal_notify_fn fn, void *ctx, int *n,
					   char *err, size_t errlen);

/* ---- dependencies (`after:`, src/store/depends.c) ---- */

/* The stored live jobs apply's dependency check needs: those named in
 * NAMES[0..n) and every one whose latest version has `after`, as a JSON
 * array of [id, [upstream, ...]] (json_decref).  TENANTS: NULL for every
 * tenant's, else a PostgreSQL text[] literal of the tenants whose jobs
 * count (an API token limited to tenants: another tenant's job is then
 * unknown to the check, as if it did not exist). */
PAL_MUST_CHECK int pal_store_after_stored(pal_store *st, const char *const *names, size_t n,
					  const char *tenants, json_t **out, char *err,
					  size_t errlen);
/* Add to G every stored job its check needs (pal_store_after_stored for
 * G's upstream names and TENANTS), so that pal_after_graph_check knows the
 * cluster's jobs too.  PAL_EDB or PAL_ENOMEM with ERR. */
struct pal_after_graph;
PAL_MUST_CHECK int pal_store_after_graph_stored(pal_store *st, struct pal_after_graph *g,
						const char *tenants, char *err, size_t errlen);
/* Plan the dependent jobs of SHARD under EPOCH in one statement
 * (palisade_plan_after, docs/controller.md "Dependencies"): *JOBS dependent
 * jobs seen, *PLANNED triggers inserted, *MISFIRED misfire rows written.
 * PAL_ESTALE when EPOCH no longer holds the shard (nothing written). */
PAL_MUST_CHECK int pal_store_plan_after(pal_store *st, int shard, int64_t epoch, int *jobs,
					int64_t *planned, int64_t *misfired, char *err,
					size_t errlen);
/* Upstreams and downstreams of JOB_ID (its active version, else its
 * latest): {"upstreams": [{job, on, within_ms}], "downstreams": [{job, on,
 * within_ms}], "watermark": RFC 3339 or null} (json_decref).  The
 * downstreams of TENANTS[0..N_TENANTS) only (none: every tenant's). */
PAL_MUST_CHECK int pal_store_after_links(pal_store *st, const char *job_id,
					 const char *const *tenants, size_t n_tenants, json_t **out,
					 char *err, size_t errlen);
/* The dependent jobs (JOB_ID only, when not NULL) with the misfire ranges
 * of their first upstream (not excluded) inside [FROM, TO] and what the
 * job has decided: [{job, up, ranges: [[from, to]...]}] (unix seconds). */
PAL_MUST_CHECK int pal_store_after_upstream_ranges(pal_store *st, const char *job_id,
						   int64_t from, int64_t to, json_t **out,
						   char *err, size_t errlen);

/* verify's dependency check over instants in [FROM, TO] (unix seconds) of
 * the dependent jobs (JOB_ID only, when not NULL): every instant at or
 * below a dependent job's watermark at which its first upstream's
 * triggers all succeeded, and every upstream instant given (dependent job
 * JOBS[i], instant ATS[i]: an instant of a misfire range of the upstream;
 * those with an upstream trigger are left out), must have a trigger of
 * the job or a misfire row.  *OUT: [{job, at, partition}] of those that
 * have neither (json_decref). */
PAL_MUST_CHECK int pal_store_after_missing(pal_store *st, const char *job_id, int64_t from,
					   int64_t to, const char *const *jobs, const int64_t *ats,
					   size_t n, json_t **out, char *err, size_t errlen);

#endif
