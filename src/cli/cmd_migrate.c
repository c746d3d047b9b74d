/*
 * cmd_migrate.c - `palisade migrate`: bring the schema up to this binary's
 * version.  Safe to run from any number of processes at once (G8).
 *
 * Before applying anything, holding the migrations' advisory lock until
 * they are applied, it asks the store which of the migrations it would
 * apply are contract steps for the nodes running now
 * (pal_store_pending_contract: compatible_from above the database's), and
 * when there are any, reads the live nodes from ZooKeeper (their ephemeral
 * nodes/<id> records, which advertise the binary's schema) and refuses while
 * one of them runs a schema below that compatible_from, or while it cannot
 * tell.  --force applies them anyway and writes an audit_log row
 * (schema.contract_forced) naming the steps and the nodes it overrode.
 * docs/upgrades.md.
 *
 * The binary's after-roll steps (pal_migration_after_roll) are contract
 * steps like any other here: applied once no live node is older than their
 * compatible_from.  --before-roll leaves them (the steps up to the binary's
 * minimum, as a node of it migrates), whatever the database.  The report
 * names the after-roll steps it applied and those it left.
 *
 * Then, once the schema is this binary's, it runs the data backfills of the
 * expand steps to the end (datafill.h), in batches that commit one by one,
 * and prints a line per step it worked on.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/coord.h"
#include "palisade/datafill.h"
#include "palisade/err.h"
#include "palisade/log.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade migrate [--pg CONNINFO] [--zk HOSTS] [--config FILE]\n"
		"                        [--to VERSION | --before-roll] [--force [--reason TEXT]]\n"
		"                        [--backfill-batch N] [--backfill-batches N]\n"
		"Apply the schema migrations this binary carries (sql/NNN_*.sql) under an\n"
		"advisory lock, or those up to VERSION only (--to; nodes of this binary\n"
		"apply the rest when they start, but for the after-roll steps).\n"
		"After-roll steps (header '-- applied: after the roll', the last ones): a\n"
		"node of this binary runs with or without them and leaves them pending;\n"
		"migrate applies them as contract steps (below), or leaves them with\n"
		"--before-roll (every step before them and the functions: what a node\n"
		"applies), and says which it applied and which are left.  An empty\n"
		"database gets them all, but with --before-roll.\n"
		"Refuses a database whose schema is newer than the binary.  Each\n"
		"migration waits at most 500 ms for a lock that\n"
		"live nodes hold, and is rolled back and tried again for up to 15 s.\n"
		"Refuses a contract step (a migration whose compatible_from is above the\n"
		"database's) while a live node (ZooKeeper: --zk, the config's\n"
		"zookeeper.connect, else $PALISADE_ZK; under the config's zookeeper.root\n"
		"and cluster.name, else /palisade and default) runs an older schema than\n"
		"it needs, or while the live nodes cannot be read (a database no node\n"
		"ever ran on asks no ZooKeeper).  --force applies it anyway and\n"
		"records that in the audit log (schema.contract_forced, with --reason).\n"
		"Then fills the values expand steps added to existing rows (jobs.ref,\n"
		"triggers.job_ref), N rows per transaction (--backfill-batch, default\n"
		"and most 5000), to the end or for at most --backfill-batches batches\n"
		"(0: none);\n"
		"a later run, or a node's retention round, goes on where it stopped.\n"
		"Exit: 0 done, 4 contract step refused (older nodes live), 64 bad command\n"
		"line or no ZooKeeper connect string, 65 this binary's list of migrations\n"
		"invalid (a build fault), 69 database or ZooKeeper unreachable, or the live\n"
		"nodes not readable (no nodes path for the cluster, or the database shows a\n"
		"leader ZooKeeper does not list), 70 schema newer than this binary, 75 a\n"
		"migration's locks not taken in time (nothing of it applied; run again).\n");
}

/* How recently a shard row must have been written for its leader to count
 * as running now: a leader writes it at its claim and at every tick (each
 * controller.scan_interval, 1 s by default). */
enum { LEADER_RECENT_MS = 20000 };

/* Whether the database shows a node running that LIVE, ZooKeeper's list
 * of the cluster (read at PATH), lacks: a shard row written in the last
 * LEADER_RECENT_MS by a leader not in it.  Then ZooKeeper's list is not
 * this database's cluster (another root or cluster name), and "no older
 * node listed" says nothing: PAL_ENOENT with ERR naming the leaders.  A
 * leader that stopped a moment ago and whose shards no node has claimed
 * yet is named too, until they are claimed. */
static int unlisted_leaders(pal_store *st, const json_t *live, const char *path, char *err,
			    size_t errlen)
{
	json_t *leaders;
	int rc = pal_store_recent_leaders(st, LEADER_RECENT_MS, &leaders, err, errlen);
	if (rc)
		return rc;
	char who[512] = "";
	size_t at = 0, i, j;
	json_t *l, *n;
	json_array_foreach(leaders, i, l)
	{
		const char *id = json_string_value(json_object_get(l, "node"));
		bool listed = false;
		json_array_foreach(live, j, n)
			listed |= id && !strcmp(id, json_string_value(json_object_get(n, "id")) ?: "");
		if (!listed && at < sizeof who)
			at += (size_t)snprintf(who + at, sizeof who - at,
					       "%s%s (%lld shard%s, last written %lld ms ago)",
					       at ? ", " : "", id ? id : "?",
					       json_integer_value(json_object_get(l, "shards")),
					       json_integer_value(json_object_get(l, "shards")) == 1
						   ? ""
						   : "s",
					       json_integer_value(json_object_get(l, "age_ms")));
	}
	json_decref(leaders);
	if (!at)
		return PAL_OK;
	snprintf(err, errlen,
		 "the database shows shards led in the last %d s by %s, which ZooKeeper does not "
		 "list under %s (a node that stopped a moment ago counts until another claims its "
		 "shards or %d s pass: run migrate again then; otherwise are the root and cluster "
		 "name the nodes'? pass --config with the nodes' configuration)",
		 LEADER_RECENT_MS / 1000, who, path, LEADER_RECENT_MS / 1000);
	return PAL_ENOENT;
}

/*
 * PATH is not where the database's nodes register, as the nodes of this
 * release say it (pal_store_zk_nodes_path_seen()): another cluster's path
 * may list nodes, even nodes of the same names, none of them old, and read
 * as "no older node live" a contract step would land beside the nodes
 * that do run on this database.  Refused when a path other than PATH is
 * live (a node of this release said it in the last PAL_ZK_PATH_LIVE_S), or when none is
 * and the last one said is not PATH.  Returns 0 (no path recorded: no node
 * of this release has started; or PATH is the one), else the exit code
 * with ERR set.
 */
static int recorded_path_differs(pal_store *st, const char *path, char *err, size_t errlen)
{
	json_t *paths = NULL, *p;
	size_t i;
	if (pal_store_zk_nodes_paths(st, &paths, err, errlen))
		return PAL_EXIT_UNAVAIL;
	const char *other = NULL;
	long long ago = 0;
	bool live_other = false;
	json_array_foreach(paths, i, p) {
		const char *v = json_string_value(json_object_get(p, "path")) ?: "";
		bool live = json_is_true(json_object_get(p, "live"));
		bool last = i == 0; /* the last one said comes first */
		if (strcmp(v, path) && (live || (last && !live))) {
			other = v;
			ago = json_integer_value(json_object_get(p, "seen_s_ago"));
			live_other = live;
			break;
		}
	}
	if (other && live_other)
		snprintf(err, errlen,
			 "this migrate reads %s, but a live node of this database said it registers "
			 "under %s (%lld s ago); if that node is misconfigured, stop it: its path stops "
			 "counting %d s later: pass --config with the nodes' configuration (and --zk "
			 "with their chroot)",
			 path, other, ago, PAL_ZK_PATH_LIVE_S);
	else if (other)
		snprintf(err, errlen,
			 "this migrate reads %s, but the last node that ran said it registers under "
			 "%s (%lld s ago); if that node was misconfigured, start one node with the "
			 "right configuration first: pass --config with the nodes' configuration (and "
			 "--zk with their chroot)",
			 path, other, ago);
	json_decref(paths);
	return other ? PAL_EXIT_UNAVAIL : PAL_EXIT_OK;
}

/*
 * The live nodes that run a schema below PC's compatible_from, as a JSON
 * array of {id, version, schema} (new reference) into *older.  Returns 0,
 * else the exit code after printing why the nodes could not be read, or
 * why ZooKeeper's list cannot be taken for the cluster of ST's database
 * (unlisted_leaders()) (with FORCE: a warning, 0, an empty *older and
 * *zk_error set, a static string).
 */
static int older_nodes(const pal_cli_common *c, pal_store *st, const pal_pending_contract *pc,
		       bool force, json_t **older, const char **zk_error)
{
	static char err[1024];
	char path[512];
	json_t *live = NULL;
	*zk_error = NULL;
	/* no node ever ran on it (set up by migrate alone, `--to` included):
	 * none to wait for, and none registered anywhere to read */
	bool ran = true;
	if (pal_store_nodes_ever_ran(st, &ran, err, sizeof err)) {
		pal_cli_err("migrate", "%s", err);
		return PAL_EXIT_UNAVAIL;
	}
	if (!ran) {
		*older = json_array();
		return PAL_EXIT_OK;
	}
	pal_coord_nodes_path(pal__cli_zk(c), pal__cli_config_zk_root(c), pal__cli_config_cluster(c),
			     path, sizeof path);
	/* the nodes read first: no ZooKeeper known (64) or none answering (69)
	 * says so before any judgement of the path */
	int ec = pal__cli_older_nodes(c, pc->compatible_from, &live, older, err, sizeof err);
	if (!ec && (ec = recorded_path_differs(st, path, err, sizeof err))) {
		json_decref(*older);
		*older = NULL;
	}
	if (!ec && unlisted_leaders(st, live, path, err, sizeof err)) {
		json_decref(*older);
		*older = NULL;
		ec = PAL_EXIT_UNAVAIL;
	}
	json_decref(live);
	if (!ec)
		return PAL_EXIT_OK;
	pal_cli_err("migrate", "%s: cannot tell whether nodes older than schema %d are live%s", err,
		    pc->compatible_from,
		    force ? "; applying anyway (--force)" : "; nothing applied");
	*older = json_array();
	if (!force)
		return ec;
	*zk_error = err;
	return PAL_EXIT_OK;
}

/* The report's lines on the after-roll steps: those pending before the run
 * (BEFORE, NB) that it applied, and those still pending (AFTER, NA). */
static void report_after_roll(const char **before, int nb, const char **after, int na)
{
	char done[512] = "", left[512] = "";
	size_t dl = 0, ll = 0;
	for (int i = 0; i < nb && i < PAL_AFTER_ROLL_MAX; i++) {
		bool still = false;
		for (int j = 0; j < na && j < PAL_AFTER_ROLL_MAX; j++)
			still |= before[i] == after[j];
		if (!still && dl < sizeof done)
			dl += (size_t)snprintf(done + dl, sizeof done - dl, "%s%s", dl ? ", " : "",
					       before[i]);
	}
	for (int j = 0; j < na && j < PAL_AFTER_ROLL_MAX && ll < sizeof left; j++)
		ll +=
		    (size_t)snprintf(left + ll, sizeof left - ll, "%s%s", ll ? ", " : "", after[j]);
	if (*done)
		printf("migrate: applied after-roll step%s: %s\n", nb - na == 1 ? "" : "s", done);
	if (*left)
		printf("migrate: after-roll step%s left pending: %s (this release's nodes run "
		       "with or without %s; run 'palisade migrate' once every node runs this "
		       "release, docs/upgrades.md)\n",
		       na == 1 ? "" : "s", left, na == 1 ? "it" : "them");
}

int pal_cmd_migrate(int argc, char **argv)
{
	pal_cli_common c = {0};
	bool force = false, before_roll = false;
	const char *reason = NULL;
	int upto = 0, fill_batch = 5000, fill_max = -1;
	static const struct option lo[] = {PAL_CLI_COMMON_LONGOPTS,
					   {"backfill-batch", required_argument, NULL, 'b'},
					   {"backfill-batches", required_argument, NULL, 'B'},
					   {"before-roll", no_argument, NULL, 'R'},
					   {"force", no_argument, NULL, 'f'},
					   {"reason", required_argument, NULL, 'r'},
					   {"to", required_argument, NULL, 't'},
					   {"help", no_argument, NULL, 'h'},
					   {0}};
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'f':
			force = true;
			break;
		case 'r':
			reason = optarg;
			break;
		case 'R':
			before_roll = true;
			break;
		case 'b':
		case 'B': {
			char *end;
			long v = strtol(optarg, &end, 10);
			long most = opt == 'b' ? PAL_DATAFILL_BATCH_MAX : 1000000;
			if (end == optarg || *end || v < (opt == 'b') || v > most) {
				pal_cli_err("migrate", "--%s %s: want a count from %d to %ld",
					    opt == 'b' ? "backfill-batch" : "backfill-batches",
					    optarg, opt == 'b', most);
				return PAL_EXIT_USAGE;
			}
			*(opt == 'b' ? &fill_batch : &fill_max) = (int)v;
			break;
		}
		case 't': {
			pal_schema_range b;
			pal_store_binary_schema(&b);
			char *end;
			long v = strtol(optarg, &end, 10);
			if (end == optarg || *end || v < 1 || v > b.binary) {
				pal_cli_err("migrate",
					    "--to %s: want a schema version from 1 to %d (this "
					    "binary's)",
					    optarg, b.binary);
				return PAL_EXIT_USAGE;
			}
			upto = (int)v;
			break;
		}
		default:
			if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0)
				return ec;
		}
	}
	if (optind != argc || (reason && !force) || (before_roll && upto)) {
		if (reason && !force)
			pal_cli_err("migrate",
				    "--reason goes with --force (it is the audit's reason)");
		if (before_roll && upto)
			pal_cli_err("migrate", "--before-roll and --to: give one of them");
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	char err[1024];
	/* A fault of the build: nothing to ask the database */
	if (pal_migrations_check(pal_migrations, pal_n_migrations, err, sizeof err)) {
		pal_cli_err("migrate", "this binary's list of migrations is invalid: %s; nothing "
				       "applied", err);
		return PAL_EXIT_DATAERR;
	}
	pal_schema_range bin;
	pal_store_binary_schema(&bin);
	if (before_roll && bin.min < bin.binary)
		upto = bin.min; /* a node's own run: the functions come with it */
	/* The store's warnings (a migration giving way to locks) are
	 * diagnostics: stderr, beside the errors, not in the report. */
	pal_log_set_fd(2);
	pal_store *st;
	ec = pal_cli_connect(&c, true, &st);
	if (ec)
		return ec;
	/* The migration lock is a session's.  --pg and PALISADE_PG must name
	 * PostgreSQL itself: through a transaction pooler the lock would be
	 * taken on one server connection and left held there (--config names
	 * postgres.direct_conninfo, which may be a session-mode pool). */
	bool pooler = false;
	if ((c.pg && *c.pg) || !c.config) {
		if (pal_store_behind_pooler(st, &pooler, err, sizeof err)) {
			pal_store_close(st);
			pal_cli_err("migrate", "%s", err);
			return PAL_EXIT_UNAVAIL;
		}
		if (pooler) {
			pal_store_close(st);
			pal_cli_err(
			    "migrate",
			    "refusing: the connection goes through a connection pooler (the "
			    "server process that answers is not the one given at connect), "
			    "where the migration lock, a session's, would be taken on one "
			    "server connection and stay held there; give --pg (or "
			    "PALISADE_PG) PostgreSQL itself, or --config with "
			    "postgres.direct_conninfo; nothing applied");
			return PAL_EXIT_REFUSED;
		}
	}
	pal_pending_contract pc = {0}; /* read only once filled (!rc) */
	/* Check and apply under the migrations' lock: what is pending cannot
	 * change in between (a node or another migrate applying some). */
	int rc = pal_store_migrate_lock(st, true, err, sizeof err);
	const char *tail_before[PAL_AFTER_ROLL_MAX], *tail_after[PAL_AFTER_ROLL_MAX];
	int n_before = 0, n_after = 0;
	if (!rc)
		rc = pal_store_pending_after_roll(st, tail_before, PAL_AFTER_ROLL_MAX, &n_before,
						  err, sizeof err);
	if (!rc)
		rc = pal_store_pending_contract(st, upto, &pc, err, sizeof err);
	json_t *older = NULL;
	const char *zk_error = NULL;
	if (!rc && pc.steps > 0) {
		if ((ec = older_nodes(&c, st, &pc, force, &older, &zk_error))) {
			pal_store_close(st); /* ends the session: the lock goes with it */
			json_decref(older);
			return ec;
		}
		if (json_array_size(older) > 0) {
			char who[1024];
			pal_coord_describe_nodes(older, who, sizeof who);
			if (!force) {
				pal_cli_err(
				    "migrate",
				    "refusing contract step %s (compatible_from %d; %d contract "
				    "step%s pending, database at schema %d): live node%s older "
				    "than schema %d: %s; roll %s to a release of schema >= %d "
				    "first (docs/upgrades.md), or pass --force; nothing applied%s",
				    pc.name, pc.compatible_from, pc.steps, pc.steps == 1 ? "" : "s",
				    pc.db_version, json_array_size(older) == 1 ? "" : "s",
				    pc.compatible_from, who,
				    json_array_size(older) == 1 ? "it" : "them", pc.compatible_from,
				    pc.version > bin.min && !upto
					? " (--before-roll applies the steps before the after-roll "
					  "ones)"
					: "");
				pal_store_close(st); /* and the lock */
				json_decref(older);
				return PAL_EXIT_REFUSED;
			}
			pal_cli_err(
			    "migrate",
			    "applying contract step %s (compatible_from %d) with older nodes "
			    "live (--force): %s; they will refuse to lead under it",
			    pc.name, pc.compatible_from, who);
		}
	}
	int applied = 0, version = 0;
	bool functions = false;
	if (!rc)
		rc = pal_store_migrate_all(st, upto, &applied, &functions, err, sizeof err);
	/* The override is recorded once it took effect (audit_log exists then
	 * whatever the starting schema was). */
	if (!rc && force && pc.steps > 0 && (zk_error || json_array_size(older) > 0)) {
		json_t *d = json_pack("{s:s, s:i, s:i, s:i, s:i, s:O, s:s?}", "step", pc.name,
				      "compatible_from", pc.compatible_from, "contract_steps",
				      pc.steps, "from_schema", pc.db_version, "applied", applied,
				      "older_nodes", older, "zk_error", zk_error);
		char *ds = json_dumps(d, JSON_COMPACT);
		json_decref(d);
		rc = pal_store_audit(st, pal_cli_actor(), "schema.contract_forced", "schema",
				     reason ? reason : "palisade migrate --force", ds, err,
				     sizeof err);
		free(ds);
		if (rc)
			pal_cli_err("migrate", "the migrations were applied, but the audit row of "
					       "--force was not written");
	}
	json_decref(older);
	if (!rc)
		rc = pal_store_pending_after_roll(st, tail_after, PAL_AFTER_ROLL_MAX, &n_after, err,
						  sizeof err);
	char uerr[256];
	if (pal_store_migrate_lock(st, false, uerr, sizeof uerr) && !rc) {
		snprintf(err, sizeof err, "%s", uerr);
		rc = PAL_EDB;
	}
	if (!rc && upto) {
		/* Short of this binary's schema on purpose: report where it is. */
		pal_schema_range r;
		rc = pal_store_schema_range(st, &r, err, sizeof err);
		version = r.db_version;
	} else if (!rc)
		rc = pal_store_schema_check(st, &version, err, sizeof err);
	/* The backfills need the schema up to the binary's minimum at least
	 * (their functions come with it). */
	pal_datafill_report fill = {.done = true};
	if (!rc && (!upto || upto >= bin.min) && fill_max)
		rc = pal_store_datafill(
		    st,
		    &(pal_datafill_limits){.batch = fill_batch,
					   .max_batches = fill_max < 0 ? 0 : fill_max,
					   .wait_ms = PAL_DATAFILL_MIGRATE_WAIT_MS},
		    &fill, err, sizeof err);
	pal_store_close(st);
	if (rc) {
		pal_cli_err("migrate", "%s", err);
		return rc == PAL_EDB	 ? PAL_EXIT_UNAVAIL
		       : rc == PAL_EBUSY ? PAL_EXIT_TEMPFAIL
					 : PAL_EXIT_SOFTWARE;
	}
	printf("migrate: applied %d migration%s; schema at version %d\n", applied,
	       applied == 1 ? "" : "s", version);
	if (functions)
		printf("migrate: applied the %d functions, views and triggers of schema %d\n",
		       pal_n_objects, bin.binary);
	report_after_roll(tail_before, n_before, tail_after, n_after);
	for (int i = 0; i < fill.n; i++)
		if (fill.s[i].filled || !fill.s[i].finished) /* not a new database's empty steps */
			printf("migrate: backfill %s: %lld rows in %d batch%s of up to %d, %s\n",
			       fill.s[i].step, (long long)fill.s[i].filled, fill.s[i].batches,
			       fill.s[i].batches == 1 ? "" : "es", fill_batch,
			       fill.s[i].finished ? "finished" : "stopped");
	if (!fill.done)
		printf("migrate: backfill not finished (%s): a node's retention round or the next "
		       "migrate goes on (palisade_backfills)\n",
		       fill.waiting ? "its check waits for transactions older than the jobs step's "
				      "end"
		       : fill.busy  ? "another run holds it, or a row lock was held"
				    : "--backfill-batches");
	return PAL_EXIT_OK;
}
