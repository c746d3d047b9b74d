/*
 * status.c - the cluster view behind `palisade status`: shards with leader,
 * epoch, watermark, lag and backlog, all judged by the database clock.
 *
 * The per-shard backlog counts read the live triggers only, each group of
 * states through the partial index whose predicate it is (LIVE below), so
 * they cost what the live work is, however much history the table keeps.
 * The count of every state (pal_store_status_json) still reads the whole
 * table, as `palisade status` promises exact figures; the console's
 * variant (pal_store_status_live_json) counts the live states exactly and
 * takes the finished ones from the planner's statistics.
 */
#include <stdio.h>
#include <string.h>
#include "palisade/store.h"
#include "store_int.h"

/* COLS of every live trigger: three scans, one per partial index
 * (triggers_tenant_ready, sql/003; triggers_live, sql/001;
 * triggers_open_rare, sql/020), whose predicates the WHERE clauses imply. */
#define LIVE(cols)                                                                                 \
	"(SELECT " cols " FROM triggers WHERE state IN ('pending', 'retry_wait', 'unknown')"       \
	" UNION ALL SELECT " cols                                                                  \
	" FROM triggers WHERE state IN ('running', 'pausing', 'cancelling')"                       \
	" UNION ALL SELECT " cols " FROM triggers WHERE state IN ('paused', 'manual'))"

/* The shards, open tickets and misfires of both variants; BY_STATE is the
 * SQL of the 'triggers' members. */
#define STATUS_SQL(by_state)                                                                       \
	"SELECT json_build_object("                                                                \
	" 'now', clock_timestamp(),"                                                               \
	" 'shards', coalesce((SELECT json_agg(json_build_object("                                  \
	"   'shard', s.shard_id, 'leader', s.leader, 'epoch', s.epoch,"                            \
	"   'watermark', s.watermark,"                                                             \
	"   'lag_s', greatest(0, extract(epoch FROM clock_timestamp() - s.watermark))::float8,"    \
	"   'jobs', (SELECT count(*) FROM jobs j WHERE j.shard = s.shard_id),"                     \
	"   'due', coalesce(b.due, 0), 'planned', coalesce(b.planned, 0),"                         \
	"   'running', coalesce(b.running, 0),"                                                    \
	"   'oldest_due_s', b.oldest_due_s) ORDER BY s.shard_id)"                                  \
	"  FROM shards s LEFT JOIN ("                                                              \
	"   SELECT shard,"                                                                         \
	"    count(*) FILTER (WHERE state IN ('pending', 'retry_wait') AND due_at <= "             \
	"clock_timestamp()) AS due,"                                                               \
	"    count(*) FILTER (WHERE state IN ('pending', 'retry_wait') AND due_at > "              \
	"clock_timestamp()) AS planned,"                                                           \
	"    count(*) FILTER (WHERE state IN ('running', 'pausing', 'cancelling', 'unknown')) "    \
	"AS running,"                                                                              \
	"    extract(epoch FROM clock_timestamp() - min(due_at) FILTER ("                          \
	"      WHERE state IN ('pending', 'retry_wait') AND due_at <= "                            \
	"clock_timestamp()))::float8 AS oldest_due_s"                                              \
	"   FROM " LIVE("shard, state, due_at") " t"                                               \
						"   GROUP BY shard) b ON b.shard = s.shard_id), "  \
						"'[]')," by_state ","                              \
						" 'open_tickets', (SELECT count(*) FROM tickets "  \
						"WHERE state = 'open'),"                           \
						" 'misfires', (SELECT coalesce(sum(count), 0) "    \
						"FROM misfires))::text"

/*
 * The finished states' counts, and shadow's (planned, never claimed: as
 * bulky as history for a scope in shadow, and no partial index holds it):
 * for each analysed leaf partition of
 * triggers, its row estimate (pg_class.reltuples) times the state's
 * frequency among the partition's most common values (pg_stats), summed.
 * A partition not analysed yet, or a state too rare to be a common value,
 * adds nothing: an estimate, as good as autovacuum's last ANALYZE.
 */
#define FINISHED_ESTIMATE                                                                          \
	"(SELECT v AS state, round(sum(c.reltuples * f))::bigint AS n"                             \
	"  FROM pg_partition_tree('triggers'::regclass) pt"                                        \
	"  JOIN pg_class c ON c.oid = pt.relid AND pt.isleaf AND c.reltuples > 0"                  \
	"  JOIN pg_namespace ns ON ns.oid = c.relnamespace"                                        \
	"  JOIN pg_stats ps ON ps.schemaname = ns.nspname AND ps.tablename = c.relname"            \
	"   AND ps.attname = 'state'"                                                              \
	"  CROSS JOIN LATERAL unnest(ps.most_common_vals::text::text[], ps.most_common_freqs)"     \
	"   AS m(v, f)"                                                                            \
	"  WHERE v IN ('succeeded', 'failed', 'cancelled', 'skipped', 'shadow') GROUP BY v)"

/* The live states' counts. */
#define LIVE_COUNTS "(SELECT state, count(*) AS n FROM " LIVE("state") " l GROUP BY state)"

/* The view with every state counted (STATUS_EXACT) and with the live ones
 * counted and the finished ones estimated (STATUS_LIVE). */
enum { STATUS_EXACT, STATUS_LIVE };
static const char *const status_sql[] = {
    [STATUS_EXACT] =
	STATUS_SQL(" 'triggers', (SELECT coalesce(json_object_agg(state, n), '{}')"
		   " FROM (SELECT state, count(*) AS n FROM triggers GROUP BY state) t)"),
    [STATUS_LIVE] =
	STATUS_SQL(" 'triggers', (SELECT coalesce(json_object_agg(state, n), '{}') FROM"
		   " (SELECT * FROM " LIVE_COUNTS " c UNION ALL SELECT * FROM " FINISHED_ESTIMATE
		   " e) t), 'triggers_estimated', (SELECT coalesce(json_agg(state ORDER BY"
		   " state), '[]') FROM " FINISHED_ESTIMATE " e)"),
};

/* {version, pending_after_roll: [name...]} of the database's schema into
 * OUT's "schema" (docs/upgrades.md, "Steps applied after the roll"). */
static int add_schema(pal_store *st, json_t *out, char *err, size_t errlen)
{
	pal_schema_range r;
	const char *names[PAL_AFTER_ROLL_MAX];
	int n = 0;
	int rc = pal_store_schema_range(st, &r, err, errlen);
	if (!rc)
		rc = pal_store_pending_after_roll(st, names, PAL_AFTER_ROLL_MAX, &n, err, errlen);
	if (rc)
		return rc;
	json_t *pend = json_array();
	for (int i = 0; i < n && i < PAL_AFTER_ROLL_MAX; i++)
		json_array_append_new(pend, json_string(names[i]));
	json_object_set_new(
	    out, "schema",
	    json_pack("{s:i, s:o}", "version", r.db_version, "pending_after_roll", pend));
	return PAL_OK;
}

int pal_store_recent_leaders(pal_store *st, int within_ms, json_t **out, char *err, size_t errlen)
{
	char w[16];
	snprintf(w, sizeof w, "%d", within_ms);
	const char *p[] = {w};
	/* a leader's claim and each of its ticks write updated_at */
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('node', leader, 'shards', n, 'age_ms', age)"
	    " ORDER BY leader), '[]') FROM (SELECT leader, count(*) AS n,"
	    " (extract(epoch FROM clock_timestamp() - max(updated_at)) * 1000)::bigint AS age"
	    " FROM shards WHERE leader IS NOT NULL"
	    " AND updated_at > clock_timestamp() - $1::int * interval '1 millisecond'"
	    " GROUP BY leader) l",
	    1, p, out, err, errlen);
}

int pal_store_nodes_ever_ran(pal_store *st, bool *ran, char *err, size_t errlen)
{
	PGresult *r = pal__store_query(st,
				       "SELECT EXISTS (SELECT 1 FROM shards WHERE leader IS NOT NULL)"
				       " OR EXISTS (SELECT 1 FROM executor_nodes)",
				       0, NULL, err, errlen);
	if (!r)
		return PAL_EDB;
	*ran = !strcmp(PQgetvalue(r, 0, 0), "t");
	PQclear(r);
	return PAL_OK;
}

int pal_store_status_json(pal_store *st, json_t **out, char *err, size_t errlen)
{
	int rc = pal__store_query_json(st, status_sql[STATUS_EXACT], 0, NULL, out, err, errlen);
	if (!rc && (rc = add_schema(st, *out, err, errlen))) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

int pal_store_status_live_json(pal_store *st, json_t **out, char *err, size_t errlen)
{
	return pal__store_query_json(st, status_sql[STATUS_LIVE], 0, NULL, out, err, errlen);
}
