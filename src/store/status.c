/*
 * status.c - the cluster view behind `palisade status`: shards with leader,
 * epoch, watermark, lag and backlog, all judged by the database clock.
 */
#include <stdio.h>
#include "palisade/store.h"
#include "store_int.h"

int pal_store_status_json(pal_store *st, json_t **out, char *err, size_t errlen)
{
	return pal__store_query_json(
	    st,
	    "SELECT json_build_object("
	    " 'now', clock_timestamp(),"
	    " 'shards', coalesce((SELECT json_agg(json_build_object("
	    "   'shard', s.shard_id, 'leader', s.leader, 'epoch', s.epoch,"
	    "   'watermark', s.watermark,"
	    "   'lag_s', greatest(0, extract(epoch FROM clock_timestamp() - s.watermark))::float8,"
	    "   'jobs', (SELECT count(*) FROM jobs j WHERE j.shard = s.shard_id),"
	    "   'due', coalesce(b.due, 0), 'planned', coalesce(b.planned, 0),"
	    "   'running', coalesce(b.running, 0),"
	    "   'oldest_due_s', b.oldest_due_s) ORDER BY s.shard_id)"
	    "  FROM shards s LEFT JOIN ("
	    "   SELECT shard,"
	    "    count(*) FILTER (WHERE state IN ('pending', 'retry_wait') AND due_at <= "
	    "clock_timestamp()) AS due,"
	    "    count(*) FILTER (WHERE state IN ('pending', 'retry_wait') AND due_at > "
	    "clock_timestamp()) AS planned,"
	    "    count(*) FILTER (WHERE state IN ('running', 'pausing', 'cancelling', 'unknown')) "
	    "AS running,"
	    "    extract(epoch FROM clock_timestamp() - min(due_at) FILTER ("
	    "      WHERE state IN ('pending', 'retry_wait') AND due_at <= "
	    "clock_timestamp()))::float8 AS oldest_due_s"
	    "   FROM triggers WHERE state NOT IN ('succeeded', 'failed', 'cancelled', 'skipped')"
	    "   GROUP BY shard) b ON b.shard = s.shard_id), '[]'),"
	    " 'triggers', (SELECT coalesce(json_object_agg(state, n), '{}') FROM"
	    "   (SELECT state, count(*) AS n FROM triggers GROUP BY state) t),"
	    " 'open_tickets', (SELECT count(*) FROM tickets WHERE state = 'open'),"
	    " 'misfires', (SELECT coalesce(sum(count), 0) FROM misfires))::text",
	    0, NULL, out, err, errlen);
}
