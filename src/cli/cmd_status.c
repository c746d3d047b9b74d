/*
 * cmd_status.c - `palisade status`: nodes (from ZooKeeper), shards with
 * leader, epoch, watermark lag and backlog (from PostgreSQL).
 */
#include <stdio.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(fp, "usage: palisade status [--output table|json] [--pg CONNINFO] [--zk HOSTS]\n"
		    "                       [--config FILE] [--server URL [--token-file FILE]]\n"
		    "Live nodes (from ZooKeeper, when reachable) and, per shard: leader, epoch,\n"
		    "watermark lag, due and planned triggers, oldest due age.  Through --server\n"
		    "the node reads both (GET /api/v1/status).  A warning names the executor\n"
		    "nodes that disagree on executor.target_hosts, .secrets or .tenants.\n");
}

static double num(json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

static void print_table(json_t *st)
{
	json_t *nodes = json_object_get(st, "nodes");
	if (json_is_array(nodes)) {
		printf("nodes: %zu live\n", json_array_size(nodes));
		size_t i;
		json_t *n;
		json_array_foreach(nodes, i, n)
		{
			char *info = json_dumps(json_object_get(n, "info"), JSON_COMPACT);
			printf("  %-20s %s\n", json_string_value(json_object_get(n, "id")),
			       info ? info : "");
			free(info);
		}
	} else {
		printf("nodes: unknown (%s)\n", json_string_value(json_object_get(st, "nodes_error"))
							? json_string_value(json_object_get(st, "nodes_error"))
							: "no ZooKeeper given");
	}
	json_t *sc = json_object_get(st, "schema"),
	       *pend = json_object_get(sc, "pending_after_roll");
	if (json_is_object(sc)) {
		printf("schema: %lld",
		       (long long)json_integer_value(json_object_get(sc, "version")));
		size_t pi;
		json_t *p;
		json_array_foreach(pend, pi, p)
			printf("%s%s", pi ? ", " : "; after-roll steps pending (palisade migrate): ",
			       json_string_value(p));
		putchar('\n');
	}
	size_t wi;
	json_t *w;
	json_array_foreach(json_object_get(st, "warnings"), wi, w)
		printf("warning: %s\n", json_string_value(w));
	printf("%5s %-16s %20s %9s %5s %7s %7s %7s %9s\n", "SHARD", "LEADER", "EPOCH", "LAG_S",
	       "JOBS", "DUE", "PLANNED", "RUNNING", "OLDEST_S");
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(st, "shards"), i, s)
	{
		const char *leader = json_string_value(json_object_get(s, "leader"));
		json_t *old = json_object_get(s, "oldest_due_s");
		char oldest[32] = "-";
		if (json_is_number(old))
			snprintf(oldest, sizeof oldest, "%.1f", json_number_value(old));
		char lag[32] = "-";
		if (json_is_number(json_object_get(s, "lag_s")))
			snprintf(lag, sizeof lag, "%.1f", num(s, "lag_s"));
		printf("%5d %-16s %20lld %9s %5lld %7lld %7lld %7lld %9s\n",
		       (int)json_integer_value(json_object_get(s, "shard")), leader ? leader : "-",
		       (long long)json_integer_value(json_object_get(s, "epoch")), lag,
		       (long long)json_integer_value(json_object_get(s, "jobs")),
		       (long long)json_integer_value(json_object_get(s, "due")),
		       (long long)json_integer_value(json_object_get(s, "planned")),
		       (long long)json_integer_value(json_object_get(s, "running")), oldest);
	}
	char *trig = json_dumps(json_object_get(st, "triggers"), JSON_COMPACT);
	printf("triggers by state: %s\nopen tickets: %lld   misfired instants: %lld\n",
	       trig ? trig : "{}", (long long)json_integer_value(json_object_get(st, "open_tickets")),
	       (long long)json_integer_value(json_object_get(st, "misfires")));
	free(trig);
}

static int status_call(pal_store *st, const void *ctx, json_t **out, char *err, size_t errlen)
{
	/* exit 69 for any failure, an answer that does not parse too */
	return pal_store_status_json(st, out, err, errlen) ? PAL_EDB : PAL_OK;
}

int pal_cmd_status(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	int ec = pal_cli_parse_common(argc, argv, &c, usage);
	if (ec >= 0)
		return ec;
	json_t *status;
	if (pal_cli_server(&c)) {
		if ((ec = pal_cli_remote_get(&c, "status", "/api/v1/status", &status)))
			return ec;
	} else {
		if ((ec = pal_cli_store_call(&c, "status", status_call, NULL, &status)))
			return ec;
		pal__cli_add_nodes(&c, status);
	}
	if (c.json) {
		json_dumpf(status, stdout, JSON_INDENT(2));
		putchar('\n');
	} else {
		print_table(status);
	}
	json_decref(status);
	return PAL_EXIT_OK;
}
