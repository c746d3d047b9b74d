/*
 * page_cluster.c - the cluster page (/console): the figures an operator
 * looks at first, the last hour's charts, then a table per part of the
 * cluster model (model.c), each naming the CLI command and the JSON
 * section that show the same rows.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "palisade/html.h"
#include "console_int.h"

/* ---- the cluster page ------------------------------------------------------ */

static const char *node_class(const json_t *r)
{
	if (json_is_false(json_object_get(r, "live")) || json_object_get(r, "status_error"))
		return "bad";
	if (json_is_true(json_object_get(r, "draining")) ||
	    json_is_false(json_object_get(r, "ready")))
		return "warn";
	return NULL;
}

/* The nodes table's rows: NODES with "status" (the error, else the note of
 * a peer whose /status needs the token) and "unavailable" for counters the
 * model has as null.  A new reference. */
static json_t *node_rows(const json_t *nodes)
{
	json_t *rows = json_deep_copy(nodes);
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r)
	{
		json_t *why = json_object_get(r, "status_error");
		if (why == NULL)
			why = json_object_get(r, "status_note");
		if (why != NULL)
			json_object_set(r, "status", why);
		static const char *const counters[] = { "stale_rejections_sink",
							"stale_rejections_db" };
		for (size_t k = 0; k < G_N_ELEMENTS(counters); k++)
			if (json_is_null(json_object_get(r, counters[k])))
				json_object_set_new(r, counters[k], json_string("unavailable"));
	}
	return rows;
}

static const char *shard_class(const json_t *r)
{
	return json_is_null(json_object_get(r, "leader")) ? "bad" : NULL;
}

static const char *backlog_class(const json_t *r)
{
	if (json_is_true(json_object_get(r, "gate_paused")))
		return "warn";
	return json_integer_value(json_object_get(r, "due")) > 0 &&
			       json_is_null(json_object_get(r, "recovery_s"))
		       ? "bad"
		       : NULL;
}

static const char *job_class(const json_t *r)
{
	/* red when the newest instant with a failed partition is not older
	 * than the newest with a succeeded one: an instant whose partitions
	 * both failed and succeeded has failed */
	json_t *f = json_object_get(r, "last_failure");
	if (json_is_object(f)) {
		const char *fa = json_string_value(json_object_get(f, "scheduled_at"));
		const char *ok = json_string_value(json_object_get(r, "last_success_instant"));
		if (!ok || (fa && strcmp(fa, ok) >= 0))
			return "bad";
	}
	return json_is_string(json_object_get(r, "paused_by")) ? "warn" : NULL;
}

/* Jobs rows flattened for the table: last failure's fields on the row. */
static json_t *job_rows(const json_t *jobs)
{
	json_t *rows = json_array();
	size_t i;
	json_t *j;
	json_array_foreach(json_object_get(jobs, "rows"), i, j)
	{
		json_t *r = json_deep_copy(j);
		json_t *f = json_object_get(j, "last_failure");
		if (json_is_object(f)) {
			GString *s = g_string_new(NULL);
			g_string_append_printf(s, "%s %s (%s)",
					       json_string_value(json_object_get(f, "at")) ?: "",
					       json_string_value(json_object_get(f, "error_class")) ?: "-",
					       json_string_value(json_object_get(f, "state")) ?: "");
			json_object_set_new(r, "failure", json_string(s->str));
			g_string_free(s, TRUE);
			pal__console_set_from(r, "failure_class", f, "error_class");
		}
		json_array_append_new(rows, r);
	}
	return rows;
}

/* A link to the cluster page showing the jobs after AFTER (NULL: the
 * first page) that match Q (may be NULL), labelled LABEL. */
static void jobs_link(GString *o, const char *q, const char *after, const char *label,
		      const char *id)
{
	GString *u = g_string_new("/console?");
	if (q) {
		g_string_append(u, "q=");
		pal_html_urlarg(u, q);
		g_string_append(u, "&");
	}
	if (after) {
		g_string_append(u, "after=");
		pal_html_urlarg(u, after);
	}
	g_string_append(u, "#jobs");
	g_string_append_printf(o, "<a id=\"%s\" href=\"", id);
	pal_html_text(o, u->str);
	g_string_append_printf(o, "\">%s</a>", label);
	g_string_free(u, TRUE);
}

/*
 * The jobs table's search form (a GET form: it changes nothing, so it
 * needs no CSRF token) and where the page stands: which rows of how many
 * matching jobs, links to the first and the next page.  Pages are keyset
 * pages by job id (?after=ID), so a page costs the same however deep.
 */
static void jobs_pager(GString *o, const json_t *jobs)
{
	const char *q = json_string_value(json_object_get(jobs, "q"));
	const char *after = json_string_value(json_object_get(jobs, "after"));
	const char *next = json_string_value(json_object_get(jobs, "next_after"));
	size_t n = json_array_size(json_object_get(jobs, "rows"));
	g_string_append(o, "<form class=\"search\" method=\"get\" action=\"/console#jobs\">"
			   "<input name=\"q\" placeholder=\"job, tenant or group\" value=\"");
	pal_html_text(o, q ? q : "");
	g_string_append(o, "\"><button type=\"submit\">search</button> <span class=\"pager\">");
	if (n)
		g_string_append_printf(o, "%zu jobs from ", n);
	else
		g_string_append(o, "no jobs of ");
	g_string_append_printf(o, "%lld", (long long)json_integer_value(json_object_get(jobs, "matching")));
	if (q) {
		g_string_append(o, " matching &ldquo;");
		pal_html_text(o, q);
		g_string_append(o, "&rdquo;");
	}
	g_string_append_printf(o, " (%lld in all)",
			       (long long)json_integer_value(json_object_get(jobs, "total")));
	if (after) {
		g_string_append(o, " &middot; after ");
		pal_html_text(o, after);
		g_string_append(o, " &middot; ");
		jobs_link(o, q, NULL, "first page", "jobs-first");
	}
	if (next) {
		g_string_append(o, " &middot; ");
		jobs_link(o, q, next, "next page &rarr;", "jobs-next");
	}
	g_string_append(o, "</span></form>\n");
}

void pal__console_render_cluster(GString *o, const json_t *m, const pal__viewer *vw)
{
	/* no refresh under forms: it would wipe a reason being typed */
	pal__console_page_begin(o, "palisade console", !pal__console_may(vw, NULL));
	pal__console_header_bar(o, m, "/api/cluster", vw);
	pal__console_banners(o, m);
	bool db_ok = json_is_true(json_object_get(json_object_get(m, "database"), "ok"));
	/* a login limited to tenants sees no whole-cluster figure (shards,
	 * triggers by state, misfired instants), as the API's status */
	bool whole = !vw || !vw->s || vw->s->who.n_tenants == 0;
	json_t *nodes = json_object_get(m, "nodes");
	json_t *shards = json_object_get(m, "shards");
	json_t *tickets = json_object_get(m, "tickets");
	json_t *backlog = json_object_get(m, "backlog");
	json_t *gates = json_object_get(m, "gates");

	/* the figures an operator looks at first */
	g_string_append(o, "<div class=\"cards\">\n");
	int64_t live = 0, led = 0;
	size_t i;
	json_t *e;
	json_array_foreach(nodes, i, e) live += json_is_true(json_object_get(e, "live"));
	json_array_foreach(shards, i, e) led += !json_is_null(json_object_get(e, "leader"));
	json_t *v = json_integer(live);
	pal__console_card(o, "nodes", "live nodes", v, "/api/cluster?section=nodes",
			  "palisade status", false);
	json_decref(v);
	if (db_ok && whole) {
		v = json_sprintf("%lld/%zu", (long long)led, json_array_size(shards));
		pal__console_card(o, "shards", "shards led", v, "/api/cluster?section=shards",
				  "palisade status", (size_t)led < json_array_size(shards));
		json_decref(v);
	}
	if (db_ok) {
		v = json_integer(pal__console_sum_key(json_object_get(backlog, "groups"), "due"));
		pal__console_card(o, "due", "due backlog", v, "/api/cluster?section=backlog",
				  "palisade status", false);
		json_decref(v);
		v = json_object_get(tickets, "open");
		pal__console_card(o, "tickets", "open tickets", v, "/api/cluster?section=tickets",
				  "palisade tickets list", json_integer_value(v) > 0);
		v = json_integer((json_int_t)json_array_size(gates));
		pal__console_card(o, "paused", "paused scopes", v, "/api/cluster?section=gates",
				  "palisade gates", json_array_size(gates) > 0);
		json_decref(v);
		v = json_object_get(m, "misfired_instants");
		if (whole)
			pal__console_card(o, "misfires", "misfired instants", v,
					  "/api/cluster?section=misfires", "palisade misfires",
					  false);
		v = json_integer(pal__console_sum_key(nodes, "fenced"));
		pal__console_card(o, "stale", "stale-token rejections", v,
				  "/api/cluster?section=nodes", "palisade status",
				  json_integer_value(v) > 0);
		json_decref(v);
		v = json_integer((json_int_t)json_array_size(json_object_get(m, "breakers")));
		pal__console_card(o, "breakers", "open breakers", v,
				  "/api/cluster?section=breakers", NULL, json_integer_value(v) > 0);
		json_decref(v);
	}
	g_string_append(o, "</div>\n");

	pal__console_section_begin(o, "charts", "The last hour, as this node sampled it", NULL,
				   "/api/cluster?section=history");
	pal__history_svg(o, json_object_get(m, "history"));
	g_string_append(o, "</section>\n");

	pal__console_section_begin(o, "nodes", "Nodes", "palisade status",
				   "/api/cluster?section=nodes");
	static const pal__col ncols[] = {
		{ "node", "node", C_TEXT },	     { "live", "live (ZooKeeper)", C_BOOL },
		{ "version", "version", C_TEXT },    { "roles", "roles", C_LIST },
		{ "schema_max", "schema (knows up to)", C_NUM },
		{ "ready", "ready", C_BOOL },	     { "draining", "draining", C_BOOL },
		{ "shards_led", "shards led", C_NUM }, { "held_leases", "leases held", C_NUM },
		{ "expired_leases", "leases expired", C_NUM }, { "attempts", "attempts", C_NUM },
		{ "failed", "failed", C_NUM },	     { "fenced", "stale-token rejections (db)", C_NUM },
		{ "stale_rejections_sink", "stale rejections (sink)", C_NUM },
		{ "admin", "admin", C_TEXT },	     { "status", "status", C_TEXT },
	};
	json_t *nrows = node_rows(nodes);
	pal__console_table(o, nrows, ncols, G_N_ELEMENTS(ncols), "/api/cluster?section=nodes",
			   "palisade status", node_class);
	json_decref(nrows);
	if (db_ok) {
		g_string_append_printf(o, "<p class=\"src\">database schema version %lld; attempts "
					  "and rejections over the latest attempts (rate window ",
				       (long long)json_integer_value(json_object_get(m, "schema_version")));
		pal__console_fmt_secs(o, json_number_value(json_object_get(m, "rate_window_s")));
		g_string_append(o, ")</p>\n");
	}
	g_string_append(o, "</section>\n");

	if (db_ok) {
		g_string_append(o, "<div class=\"grid\">\n");
		if (whole) {
			pal__console_section_begin(o, "shards", "Shards", "palisade status",
						   "/api/cluster?section=shards");
			static const pal__col scols[] = {
			    {"shard", "shard", C_TEXT},
			    {"leader", "leader", C_TEXT},
			    {"epoch", "epoch", C_NUM},
			    {"lag_s", "watermark lag", C_SECS},
			    {"jobs", "jobs", C_NUM},
			    {"due", "due", C_NUM},
			    {"planned", "planned", C_NUM},
			    {"running", "running", C_NUM},
			    {"oldest_due_s", "oldest due", C_SECS},
			};
			pal__console_table(o, shards, scols, G_N_ELEMENTS(scols),
					   "/api/cluster?section=shards", "palisade status",
					   shard_class);
			g_string_append(o, "</section>\n<div>\n");

			pal__console_section_begin(o, "states", "Triggers by state",
						   "palisade triggers --state STATE",
						   "/api/cluster?section=triggers");
			json_t *states = json_object_get(m, "triggers");
			if (json_object_size(states) == 0) {
				g_string_append(o, "<p class=\"none\">none</p>\n");
			} else {
				g_string_append(
				    o, "<table><tr><th>state</th><th>triggers</th></tr>\n");
				const char *k;
				json_object_foreach(states, k, v)
				{
					g_string_append(o, "<tr><td>");
					pal_html_text(o, k);
					g_string_append(o, "</td><td class=\"num\">");
					/* a finished state's count is the planner's estimate */
					size_t e;
					json_t *est;
					json_array_foreach(json_object_get(m, "triggers_estimated"),
							   e, est)
					{
						if (json_is_string(est) &&
						    !strcmp(json_string_value(est), k))
							g_string_append(
							    o,
							    "<span title=\"an estimate from the "
							    "table statistics\">&asymp;</span> ");
					}
					GString *cli = g_string_new("palisade triggers --state ");
					g_string_append(cli, k);
					pal__console_num_link(o, v, "/api/cluster?section=triggers",
							      cli->str);
					g_string_free(cli, TRUE);
					g_string_append(o, "</td></tr>\n");
				}
				g_string_append(o, "</table>\n");
			}
			g_string_append(o, "</section>\n");
		} else {
			g_string_append(o, "<p class=\"none\" id=\"scoped\">shards and triggers by "
					   "state are every tenant's: not shown to a token limited "
					   "to tenants</p>\n<div>\n");
		}
		pal__console_section_begin(o, "gates", "Paused scopes", "palisade gates",
					   "/api/cluster?section=gates");
		static const pal__col gcols[] = { { "scope", "scope", C_TEXT },
						  { "reason", "reason", C_TEXT },
						  { "actor", "actor", C_TEXT },
						  { "since", "since", C_TEXT },
						  { "held", "instants held", C_NUM },
						  { "oldest_held", "oldest held", C_TEXT } };
		pal__console_table_act(o, gates, gcols, G_N_ELEMENTS(gcols),
				       "/api/cluster?section=gates", "palisade gates", NULL, vw,
				       pal__console_gate_acts);
		g_string_append(o, "</section>\n</div>\n");

		static const pal__col bcols[] = {
			{ "name", "name", C_TEXT },
			{ "due", "due", C_NUM },
			{ "oldest_pending_s", "oldest pending", C_SECS },
			{ "planned", "planned", C_NUM },
			{ "running", "running", C_NUM },
			{ "paused", "paused", C_NUM },
			{ "done_per_s", "done/s", C_NUM },
			{ "recovery_s", "recovery estimate", C_SECS },
			{ "gate_paused", "gate paused", C_BOOL },
		};
		pal__console_section_begin(o, "backlog-groups", "Backlog by group",
					   "palisade status", "/api/cluster?section=backlog");
		pal__console_table_act(o, json_object_get(backlog, "groups"), bcols,
				       G_N_ELEMENTS(bcols), "/api/cluster?section=backlog",
				       "palisade status", backlog_class, vw,
				       pal__console_group_acts);
		g_string_append(o, "</section>\n");
		pal__console_section_begin(o, "backlog-tenants", "Backlog by tenant",
					   "palisade status", "/api/cluster?section=backlog");
		pal__console_table_act(o, json_object_get(backlog, "tenants"), bcols,
				       G_N_ELEMENTS(bcols), "/api/cluster?section=backlog",
				       "palisade status", backlog_class, vw,
				       pal__console_tenant_acts);
		g_string_append(o, "</section>\n");

		pal__console_section_begin(o, "tickets", "Open tickets", "palisade tickets list",
					   "/api/cluster?section=tickets");
		static const pal__col tcols[] = {
			{ "id", "ticket", C_TICKET },	  { "job_id", "job", C_JOB },
			{ "trigger_id", "trigger", C_TRIGGER }, { "reason", "reason", C_TEXT },
			{ "error_class", "error class", C_TEXT },
			{ "allowed_actions", "allowed actions", C_LIST },
			{ "age_s", "open for", C_SECS },
		};
		pal__console_table_act(o, json_object_get(tickets, "rows"), tcols,
				       G_N_ELEMENTS(tcols), "/api/cluster?section=tickets",
				       "palisade tickets list", NULL, vw, pal__console_ticket_acts);
		g_string_append(o, "</section>\n<div>\n");

		pal__console_section_begin(o, "misfires", "Misfires by reason", "palisade misfires",
					   "/api/cluster?section=misfires");
		static const pal__col mcols[] = { { "reason", "reason", C_TEXT },
						  { "decisions", "decisions", C_NUM },
						  { "instants", "instants", C_NUM },
						  { "last", "last", C_TEXT } };
		pal__console_table(o, json_object_get(m, "misfires"), mcols, G_N_ELEMENTS(mcols),
				   "/api/cluster?section=misfires", "palisade misfires", NULL);
		g_string_append(o, "</section>\n");
		pal__console_section_begin(o, "breakers",
					   "Open breakers (calls held back, last 2 min)", NULL,
					   "/api/cluster?section=breakers");
		static const pal__col brcols[] = { { "host", "host", C_TEXT },
						   { "node", "node", C_TEXT },
						   { "held", "calls held", C_NUM },
						   { "last", "last", C_TEXT } };
		pal__console_table(o, json_object_get(m, "breakers"), brcols, G_N_ELEMENTS(brcols),
				   "/api/cluster?section=breakers", NULL, NULL);
		g_string_append(o, "</section>\n</div>\n</div>\n");

		json_t *jobs = json_object_get(m, "jobs");
		pal__console_section_begin(o, "jobs", "Jobs", "palisade jobs --next 2",
					   "/api/cluster?section=jobs");
		jobs_pager(o, jobs);
		static const pal__col jcols[] = {
			{ "job_id", "job", C_JOB },
			{ "tenant", "tenant", C_TEXT },
			{ "group", "group", C_TEXT },
			{ "active_version", "version", C_NUM },
			{ "cron", "cron", C_TEXT },
			{ "last_success", "last success", C_TEXT },
			{ "failure", "last failure (error class)", C_TEXT },
			{ "next", "next instants", C_LIST },
			{ "paused_by", "paused by", C_TEXT },
			{ "due", "backlog", C_NUM },
			{ "oldest_due_s", "oldest due", C_SECS },
		};
		json_t *rows = job_rows(jobs);
		pal__console_table(o, rows, jcols, G_N_ELEMENTS(jcols), "/api/cluster?section=jobs",
				   "palisade jobs", job_class);
		json_decref(rows);
		if (json_is_string(json_object_get(jobs, "next_after")))
			jobs_pager(o, jobs);
		g_string_append(o, "</section>\n");
	}
	g_string_append(o, "</main></body></html>\n");
}
