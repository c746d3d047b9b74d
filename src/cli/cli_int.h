/* cli_int.h - what the subcommands of bin/palisade share. */
#ifndef PALISADE_CLI_INT_H
#define PALISADE_CLI_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include "palisade/jobfile.h"
#include "palisade/ops.h"
#include "palisade/secrets.h"
#include "palisade/store.h"

/* Options every cluster-touching command accepts. */
typedef struct pal_cli_common {
	const char *pg;     /* --pg CONNINFO */
	const char *zk;     /* --zk HOSTS */
	const char *config; /* --config FILE (node config: postgres.conninfo, zookeeper.connect) */
	bool json;          /* --output json */
	const char *server;     /* --server URL: act through a node's HTTP API */
	const char *token_file; /* --token-file FILE: its API token */
} pal_cli_common;

/* getopt_long entries for the common options; ids 0x100.. */
#define PAL_CLI_COMMON_LONGOPTS                                                                    \
	{ "pg", required_argument, NULL, 0x100 }, { "zk", required_argument, NULL, 0x101 },      \
		{ "config", required_argument, NULL, 0x102 },                                     \
		{ "output", required_argument, NULL, 0x103 },                                     \
		{ "server", required_argument, NULL, 0x104 },                                     \
		{ "token-file", required_argument, NULL, 0x105 }

/* Handle a common option returned by getopt_long; true when it was one.
 * Exits with 64 on a bad --output value. */
bool pal_cli_common_opt(pal_cli_common *c, int opt, const char *arg);

/* An option the command does not handle itself: a common one (returns -1,
 * go on), -h/--help (usage on stdout, returns 0) or anything else (usage on
 * stderr, returns 64).  A command's option loop ends with
 *   default: if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0) return ec; */
int pal_cli_opt_other(pal_cli_common *c, int opt, const char *arg, void (*usage)(FILE *));

/* The whole command line of a command that takes only the common options
 * and no arguments: -1 when it parsed, else the exit code to return. */
int pal_cli_parse_common(int argc, char **argv, pal_cli_common *c, void (*usage)(FILE *));
/* The same with MIN..MAX positional arguments left at argv[optind..]. */
int pal_cli_parse_args(int argc, char **argv, pal_cli_common *c, void (*usage)(FILE *), int min,
		       int max);

/* --NAME ARG as an integer in LO..HI; false (message printed) otherwise. */
bool pal_cli_int(const char *cmd, const char *name, const char *arg, long long lo, long long hi,
		 long long *out);

/* Resolve the PostgreSQL conninfo: --pg, else the config file's
 * postgres.conninfo, else $PALISADE_PG.  NULL when none (message printed).
 * The returned string is owned by the process (lives until exit). */
const char *pal_cli_pg(const pal_cli_common *c);

/* postgres.conninfo (postgres.direct_conninfo when set behind a
 * transaction pooler) of node config PATH, or NULL or "" when unset; exits
 * 65 with the diagnostics when the file is invalid (pal__cli_zk() reads
 * its zookeeper.connect). */
const char *pal__cli_config_pg(const char *path);
/* Default shard count for a new cluster: the config's shards, else 16. */
int pal__cli_config_shards(const pal_cli_common *c);
/* sink.key_retention of node config PATH (NULL: the default). */
int64_t pal__cli_config_key_retention(const char *path);
/* What `resume` of a scope of KIND applies (controller.misfire_threshold,
 * resume.ramp_*) from node config CONFIG (NULL: the defaults). */
void pal__cli_resume_opts(const char *config, pal_scope_kind kind, pal_resume_opts *o);
/* Check every job of SET against that retention (pal_job_key_horizon_check);
 * returns how many were refused, their diagnostics appended to D. */
int pal__cli_check_key_horizons(const char *config, const pal_jobset *set, pal_diags *d);
/* Check every job of SET against the secret and target host policies of
 * node config CONFIG (NULL: the default ones: the node's own variables
 * only, any host; pal_job_secrets_check, pal_job_targets_check); returns
 * how many references and urls were refused, their diagnostics appended to
 * D. */
size_t pal__cli_check_tenant_policy(const char *config, const pal_jobset *set, pal_diags *d);
/* The secret policy of CONFIG's executor.secrets (kept until exit), NULL
 * without a config: what apply checks the inherited notify entries
 * under (pal_store_apply_secret_policy). */
const pal_secret_policy *pal__cli_config_secrets(const char *config);
/* When job S is spent (no instant of its schedule still to come: a past
 * `at`, past years, an `end` gone by), say so on FP as
 * "FILE:LINE:COL: note: ..." and return true.  Such a job is valid and is
 * applied; validate and apply report it instead of refusing the set. */
bool pal__cli_note_spent(const pal_job_spec *s, FILE *fp);
/* zookeeper.root and cluster.name of --config, else the defaults. */
const char *pal__cli_config_zk_root(const pal_cli_common *c);
const char *pal__cli_config_cluster(const pal_cli_common *c);

/* The ZooKeeper connect string of C: --zk, the config's
 * zookeeper.connect, else $PALISADE_ZK; NULL when none is known. */
const char *pal__cli_zk(const pal_cli_common *c);
/* The live nodes of C's cluster (pal_coord_list_registered_nodes()) into
 * *LIVE, those whose binary schema is below MIN_SCHEMA
 * (pal_coord_older_of()) into *OLDER; the caller json_decref()s both.
 * Returns 0, else an exit code with ERR and both NULL: 64 when no connect
 * string is known, 69 when ZooKeeper cannot be read or has no nodes path
 * for the cluster (never registered: no node seen is not no node live). */
int pal__cli_older_nodes(const pal_cli_common *c, int min_schema, json_t **live, json_t **older,
			 char *err, size_t errlen);
/* Add "nodes": [{id, info}] from ZooKeeper to STATUS (or "nodes_error"). */
void pal__cli_add_nodes(const pal_cli_common *c, json_t *status);

/* Connect, and unless MIGRATING, check the schema version.  Prints the
 * error and returns the exit code (0 on success). */
int pal_cli_connect(const pal_cli_common *c, bool migrating, pal_store **out);
/* The same for the conninfo CI (pal_cli_pg(); NULL when there is none),
 * without printing: the message (a line, "" when none) goes to MSG for the
 * caller to print.  Touches no CLI state: safe in a thread of its own. */
int pal__cli_connect_msg(const char *ci, bool migrating, pal_store **out, char *msg, size_t msglen);
/* One call of a command on the store: a PAL_E* code, ERR (ERRLEN bytes)
 * filled when it fails.  CTX holds its arguments (and pointers to where
 * results other than JSON go); OUT is where a call with a JSON answer puts
 * it (owned by the caller of pal_cli_store_call()). */
typedef int (*pal_cli_store_fn)(pal_store *st, const void *ctx, json_t **out, char *err,
				size_t errlen);
/* The opening most commands share on the database: connect
 * (pal_cli_connect(): refused with --server, the schema checked), FN(CTX,
 * OUT), close, and on a failure of FN "palisade CMD: ERR" on stderr.
 * Returns the exit code: the connection's, else pal_cli_exit_code() of what
 * FN returned (0 when it succeeded).  Prints nothing else: the command
 * prints what FN got, after the connection is closed.  Blocks on the
 * database. */
int pal_cli_store_call(const pal_cli_common *c, const char *cmd, pal_cli_store_fn fn,
		       const void *ctx, json_t **out);

/*
 * The HTTP API instead of the database (remote.c, docs/api.md): --server URL,
 * else $PALISADE_SERVER, names a node's admin listener; the token comes from
 * --token-file FILE (its first line), else $PALISADE_TOKEN.  No database
 * credentials are needed.  pal_cli_server() is the URL or NULL (then the
 * command connects to PostgreSQL as before).
 */
const char *pal_cli_server(const pal_cli_common *c);
/* METHOD PATH ("/api/v1/...") with BODY (LEN bytes of CTYPE; NULL: none) on
 * the server of C.  The answer is printed: as JSON with --output json, else
 * as "key: value" lines (a list one compact JSON item a line); an error's
 * detail goes to stderr as "palisade CMD: ...".  Returns the exit code:
 * 0 for 2xx, 3 for 404, 4 for 409, 64 for 400, 65 for 422, 69 for 503 or an
 * unreachable server, 77 for 401 and 403, else 70. */
int pal_cli_remote(const pal_cli_common *c, const char *cmd, const char *method, const char *path,
		   const char *ctype, const char *body, size_t len);
/* Before sending WHAT (an option's name, as the user gave it), which a
 * node of 0.3.0 does not read and drops (acting without it): the node at
 * the server names its release (a Palisade-Version header, since 0.4.0),
 * else an error saying so and 69.  A balancer may send the request itself
 * to another node: the caller judges from the answer too. */
int pal_cli_remote_needs(const pal_cli_common *c, const char *cmd, const char *what);
/* An answer O of the API printed as pal_cli_remote() prints it. */
void pal_cli_print_answer(const pal_cli_common *c, const json_t *o);
/* The same, the answer of a 2xx into *OUT (json_decref) instead of being
 * printed; nothing printed but an error. */
int pal_cli_remote_call(const pal_cli_common *c, const char *cmd, const char *method,
			const char *path, const char *ctype, const char *body, size_t len,
			json_t **out);
/* GET PATH: the answer of a 2xx into *OUT (json_decref), nothing printed
 * but an error; the exit code as pal_cli_remote(). */
int pal_cli_remote_get(const pal_cli_common *c, const char *cmd, const char *path, json_t **out);
/* The same with a JSON object body (taken: json_decref'd here). */
int pal_cli_remote_json(const pal_cli_common *c, const char *cmd, const char *path, json_t *body);
/* METHOD PATH with the JSON object BODY (taken: json_decref'd here): the
 * answer of a 2xx into *OUT (json_decref), nothing printed but an error;
 * the exit code as pal_cli_remote(). */
int pal_cli_remote_send(const pal_cli_common *c, const char *cmd, const char *method,
			const char *path, json_t *body, json_t **out);
/* GET PATH (a list of the API) page after page, following its cursor to
 * the end: every page's "items" into *ITEMS (json_decref; NULL on an
 * error); the exit code as pal_cli_remote(). */
int pal_cli_remote_items(const pal_cli_common *c, const char *cmd, const char *path,
			 json_t **items);
/* The same, up to MAX rows (0: every page): what --limit MAX reads through
 * the API, a page of at most 1000 at a time. */
int pal_cli_remote_rows(const pal_cli_common *c, const char *cmd, const char *path, long long max,
			json_t **items);
/* FIELD of each row of ROWS (an instant of the API, with microseconds) at
 * whole seconds, as the database path prints it: "...T04:34:00Z". */
void pal_cli_whole_seconds(json_t *rows, const char *field);
/* GET PATH (one object of the API, a query allowed) whose array LIST comes
 * a page at a time (CURSOR_KEY: the ?cursor= of its next page, null at the
 * last): the object with the whole array into *OUT, CURSOR_KEY removed.
 * FIRST, when not NULL, is the object's first page had already (borrowed).
 * The exit code as pal_cli_remote(). */
int pal_cli_remote_whole(const pal_cli_common *c, const char *cmd, const char *path,
			 const char *list, const char *cursor_key, json_t *first, json_t **out);
/* The same with pages of at most PAGE rows (1..1000): a list whose page
 * the API bounds further (`jobs --next`). */
int pal_cli_remote_pages(const pal_cli_common *c, const char *cmd, const char *path, long long max,
			 int page, json_t **items);

/* Actor for audit rows: $PALISADE_ACTOR, else user@host. Static buffer. */
const char *pal_cli_actor(void);

/*
 * Exit codes beside those of err.h (0 ok, 64 usage, 65 invalid input, 69
 * unavailable, 70 internal), one per outcome a script tells apart:
 *   2  verify ran and found a mismatch (the cluster disagrees with its plan)
 *   3  not found: the job, trigger or ticket named does not exist
 *   4  refused: the action is not allowed in the object's current state
 *      (a trigger already finished, a ticket already resolved, a re-run that
 *      could duplicate an effect without --new-effect, a retired job)
 * docs/operations.md and palisade(1) list them.
 */
enum {
	PAL_EXIT_MISMATCH = 2,
	PAL_EXIT_NOTFOUND = 3,
	PAL_EXIT_REFUSED = 4,
	PAL_EXIT_NOPERM = 77, /* EX_NOPERM: the API refused the token (--server) */
};

/* Exit code for a PAL_E* code of a store or ops function: ENOENT 3,
 * ESTALE 4, EINVAL and ETOOBIG 65, EDB and EBUSY 69, else 70. */
int pal_cli_exit_code(int rc);

/* A job id (WHAT "job", at most 128 bytes) or a tenant or group name (64
 * bytes) given on the command line, checked like the keys of a job file:
 * [a-z0-9][a-z0-9._-]*.  False (message printed) otherwise. */
bool pal_cli_name(const char *cmd, const char *what, const char *arg);
#define PAL_CLI_JOB_MAX 128
#define PAL_CLI_GROUP_MAX 64

/* `palisade shadow --job|--group|--tenant` and `shadow list` (cmd_cutover.c). */
int pal__cli_shadow_set(int argc, char **argv);

/* The scope options of every command that acts on or reads one scope
 * (pause, resume, shadow, cutover, rollback, report cost, shadow diff):
 * --job, --group, --tenant, getopt codes 'j', 'g', 'T'. */
#define PAL_CLI_SCOPE_LONGOPTS                                                                     \
	{"job", required_argument, NULL, 'j'}, {"group", required_argument, NULL, 'g'},            \
	{                                                                                          \
		"tenant", required_argument, NULL, 'T'                                             \
	}
/* Take OPT when it is one of those: SC names the scope (ARG, checked by
 * pal_cli_name) and *N counts the scopes given; true (*OK false with the
 * message printed for a bad name).  False for another option. */
bool pal_cli_scope_opt(const char *cmd, int opt, const char *arg, pal_scope *sc, int *n, bool *ok);

/* The scope and range of a report over the ledger (report cost, shadow
 * diff): --from and --to (getopt codes 'f', 't'; both required, to after
 * from) and at most one scope (PAL_CLI_SCOPE_LONGOPTS; global when none). */
typedef struct pal_cli_range {
	int64_t from, to; /* PAL_OPS_NOW until given */
	pal_scope scope;
	int scopes;
} pal_cli_range;
#define PAL_CLI_RANGE_LONGOPTS                                                                     \
	{"from", required_argument, NULL, 'f'}, {"to", required_argument, NULL, 't'},              \
	    PAL_CLI_SCOPE_LONGOPTS
/* Take OPT when it is one of those (true; *OK false with the message
 * printed when its argument is bad); false for another option. */
bool pal_cli_range_opt(const char *cmd, int opt, const char *arg, pal_cli_range *r, bool *ok);
/* After the options: true when both ends are given, in order, and at most
 * one scope; else false with the message printed. */
bool pal_cli_range_ok(const char *cmd, const pal_cli_range *r);
/* The range and scope as the query of an API route, "from=..&to=..[&job=..]"
 * (g_free). */
char *pal_cli_range_query(const pal_cli_range *r);

/* --OPT ARG as an RFC 3339 instant in whole seconds into *out.  A fraction
 * other than zero is refused: instants are whole seconds, and cutting it
 * off would name another instant than the one asked for.  False (message
 * printed) otherwise. */
bool pal_cli_time(const char *cmd, const char *opt, const char *arg, int64_t *out);

/* Commands of cmd_lifecycle.c and cmd_read.c. */
int pal_cmd_delete(int argc, char **argv);   /* delete JOB... (retire) */
int pal_cmd_attempts(int argc, char **argv); /* attempts TRIGGER */
int pal_cmd_gates(int argc, char **argv);
int pal_cmd_misfires(int argc, char **argv);
int pal_cmd_audit(int argc, char **argv);

/* After a commit that retired IDS[0..n): wait up to WAIT_MS for the
 * controllers to take the retiring versions in, then cancel the triggers
 * they planned from the old versions meanwhile.  Prints what it did on
 * stderr (table) and returns the exit code (0, or 69 when the database
 * failed). */
int pal__cli_retire_settle(const char *cmd, pal_store *st, const char *const *ids, size_t n,
			   const char *reason, int64_t wait_ms, int64_t *late_cancelled);

/* Print "palisade CMD: " + message to stderr. */
void pal_cli_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
