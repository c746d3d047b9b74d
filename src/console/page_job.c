/*
 * page_job.c - the job page (/console/job?id=JOB): the job, its actions,
 * versions, dependencies, latest triggers with their attempts and what
 * each kept of the answer, misfires and tickets, from the job model
 * (model.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "palisade/html.h"
#include "console_int.h"

/* ---- the job page ------------------------------------------------------------ */

/* SCOPES ("a, b, ...", may be NULL) names SCOPE. */
static bool lists_scope(const char *scopes, const char *scope)
{
	bool found = false;
	char **v = g_strsplit(scopes ? scopes : "", ", ", -1);
	for (char **p = v; *p && !found; p++)
		found = !strcmp(*p, scope);
	g_strfreev(v);
	return found;
}

/* Characters of a kept body the job page shows (the API and `palisade
 * attempts --output json` have all of it). */
#define PAGE_EXCERPT_CHARS 300

/* What an attempt kept of the answer (R: its "response"), on a row of its
 * own under the attempt: the kept headers and the body's start, both
 * already shown escaped by the store and HTML-escaped here. */
static void response_row(GString *o, json_t *r, size_t span)
{
	json_t *h = json_object_get(r, "headers");
	const char *body = json_string_value(json_object_get(r, "body"));
	if (!json_object_size(h) && (!body || !*body))
		return;
	g_string_append_printf(o, "<tr class=\"response\"><td colspan=\"%zu\"><pre>", span);
	const char *k;
	json_t *v;
	json_object_foreach(h, k, v)
	{
		pal_html_text(o, k);
		g_string_append(o, ": ");
		pal_html_text(o, json_string_value(v));
		g_string_append_c(o, '\n');
	}
	if (json_is_true(json_object_get(r, "headers_truncated")))
		g_string_append_printf(o, "(headers cut at %d B)\n", PAL_KEEP_HEADERS_BYTES);
	if (body && *body) {
		const char *end = body;
		for (int n = 0; *end && n < PAGE_EXCERPT_CHARS; n++)
			end = g_utf8_next_char(end);
		char *cut = g_strndup(body, (gsize)(end - body));
		pal_html_text(o, cut);
		g_free(cut);
		if (*end || json_is_true(json_object_get(r, "truncated")))
			g_string_append(o, " ...");
	}
	g_string_append(o, "</pre></td></tr>\n");
}

static const char *trigger_class(const json_t *r)
{
	const char *s = json_string_value(json_object_get(r, "state"));
	if (!s)
		return NULL;
	if (!strcmp(s, "failed") || !strcmp(s, "manual") || !strcmp(s, "unknown"))
		return "bad";
	if (!strcmp(s, "retry_wait") || !strcmp(s, "paused") || !strcmp(s, "pausing"))
		return "warn";
	return NULL;
}

/* Upstreams (the jobs this one runs after) and downstreams (the jobs that
 * run after it), each linked to its page; nothing for a job with neither. */
static void render_dependencies(GString *o, const json_t *after, const char *api)
{
	const json_t *ups = json_object_get(after, "upstreams");
	const json_t *downs = json_object_get(after, "downstreams");
	static const pal__col dcols[] = { { "job", "job", C_JOB },
					  { "on", "on", C_TEXT },
					  { "within_ms", "within (ms)", C_NUM } };

	if (!json_array_size(ups) && !json_array_size(downs))
		return;
	pal__console_section_begin(o, "dependencies", "Dependencies (after)", NULL, api);
	g_string_append(o, "<h3>runs after (upstreams)</h3>\n");
	pal__console_table(o, ups, dcols, G_N_ELEMENTS(dcols), api, NULL, NULL);
	g_string_append(o, "<h3>run after it (downstreams)</h3>\n");
	pal__console_table(o, downs, dcols, G_N_ELEMENTS(dcols), api, NULL, NULL);
	g_string_append(o, "<p>decided up to: ");
	pal_html_value(o, json_object_get(after, "watermark"));
	g_string_append(o, "</p>\n</section>\n");
}

void pal__console_render_job(GString *o, const json_t *m, const char *id, const pal__viewer *pv)
{
	GString *api = g_string_new("/api/job?id=");
	pal_html_urlarg(api, id);
	GString *t = g_string_new("palisade job ");
	g_string_append(t, id);
	pal__console_page_begin(o, t->str, false);
	g_string_free(t, TRUE);
	pal__console_header_bar(o, m, api->str, pv);
	pal__console_banners(o, m);
	json_t *job = json_object_get(m, "job");
	/* the job page's forms act on this job's tenant */
	pal__viewer jv = *pv;
	jv.tenant = json_string_value(json_object_get(job, "tenant"));
	const pal__viewer *v = &jv;
	const char *err = json_string_value(json_object_get(m, "error"));
	g_string_append(o, "<h2 id=\"job-id\">job ");
	pal_html_text(o, id);
	g_string_append(o, "</h2>\n");
	if (!job) {
		g_string_append(o, "<p class=\"banner\" id=\"job-error\">");
		pal_html_text(o, err ? err : "not available");
		g_string_append(o, "</p></main></body></html>\n");
		g_string_free(api, TRUE);
		return;
	}
	GString *cli = g_string_new(NULL);
	g_string_append(o, "<table id=\"job-summary\" style=\"width:auto\">\n");
	static const struct {
		const char *key, *label;
	} rows[] = { { "tenant", "tenant" },
		     { "group", "group" },
		     { "shard", "shard" },
		     { "latest_version", "latest version" },
		     { "active_version", "planned with version" },
		     { "paused_by", "paused by" },
		     { "created_at", "created" },
		     { "updated_at", "updated" } };
	for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
		g_string_append_printf(o, "<tr><th>%s</th><td>", rows[i].label);
		json_t *v = json_object_get(job, rows[i].key);
		if (json_is_integer(v)) {
			g_string_assign(cli, "palisade jobs --versions ");
			pal_shell_quote(cli, id);
			pal__console_num_link(o, v, api->str, cli->str);
		} else {
			pal_html_value(o, v);
		}
		g_string_append(o, "</td></tr>\n");
	}
	/* the labels of the latest version, as key=value */
	const char *lk;
	json_t *lv;
	int nl = 0;
	json_object_foreach(json_object_get(job, "labels"), lk, lv)
	{
		g_string_append(o, nl++ ? ", " : "<tr><th>labels</th><td id=\"job-labels\">");
		pal_html_text(o, lk);
		g_string_append_c(o, '=');
		pal_html_text(o, json_string_value(lv));
	}
	if (nl)
		g_string_append(o, "</td></tr>\n");
	g_string_append(o, "<tr><th>next instants</th><td>");
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(m, "next"), i, e)
	{
		if (i)
			g_string_append(o, ", ");
		pal_html_value(o, e);
	}
	g_string_append(o, "</td></tr>\n</table>\n");
	if (pal__console_may(v, v->tenant)) {
		GString *scope = g_string_new("job:");
		g_string_append(scope, id);
		bool paused = lists_scope(json_string_value(json_object_get(job, "paused_by")),
					  scope->str);
		g_string_free(scope, TRUE);
		g_string_append(o, "<section id=\"actions\"><h2>Act on the job</h2>\n<p>");
		pal__console_act_form(o, v, paused ? "resume-job" : "pause-job", id,
				      paused ? "resume" : "pause", NULL);
		pal__console_act_form(o, v, "trigger-job", id, "run now", NULL);
		g_string_append(o, "</p></section>\n");
	}

	GString *jcli = g_string_new("palisade jobs --versions ");
	pal_shell_quote(jcli, id);
	pal__console_section_begin(o, "versions", "Versions", jcli->str, api->str);
	static const pal__col vcols[] = {
		{ "version", "version", C_NUM },	{ "digest", "digest", C_DIGEST },
		{ "cron", "cron", C_TEXT },		{ "timezone", "zone", C_TEXT },
		{ "misfire_policy", "misfire", C_TEXT }, { "overlap_policy", "overlap", C_TEXT },
		{ "partitions", "partitions", C_NUM },	{ "target_host", "host", C_TEXT },
		{ "created_by", "created by", C_TEXT },	{ "created_at", "created", C_TEXT },
		{ "activated_at", "activated", C_TEXT }, { "effective_from", "effective from", C_TEXT },
	};
	pal__console_table(o, json_object_get(m, "versions"), vcols, G_N_ELEMENTS(vcols), api->str,
			   jcli->str, NULL);
	g_string_append(o, "</section>\n");

	render_dependencies(o, json_object_get(m, "after"), api->str);

	g_string_assign(jcli, "palisade triggers --job ");
	pal_shell_quote(jcli, id);
	pal__console_section_begin(o, "triggers", "Recent triggers and their attempts", jcli->str,
				   api->str);
	json_t *trs = json_object_get(m, "triggers");
	static const pal__col tcols[] = {
		{ "id", "trigger", C_TRIGGER },	       { "scheduled_at", "instant", C_TEXT },
		{ "partition", "part", C_NUM },	       { "source", "source", C_TEXT },
		{ "state", "state", C_TEXT },	       { "attempt_count", "attempts", C_NUM },
		{ "fence", "fence", C_NUM },	       { "lease_owner", "lease owner", C_TEXT },
		{ "last_error_class", "error class", C_TEXT },
		{ "next_attempt_at", "next attempt", C_TEXT },
		{ "finished_at", "finished", C_TEXT },
		{ "trace_id", "trace id", C_TEXT },
	};
	static const pal__col acols[] = {
		{ "fence", "fence", C_NUM },	      { "node", "node", C_TEXT },
		{ "claimed_at", "claimed", C_TEXT },  { "ended_at", "ended", C_TEXT },
		{ "outcome", "outcome", C_TEXT },     { "error_class", "error class", C_TEXT },
		{ "http_status", "HTTP", C_NUM },     { "duration_ms", "ms", C_NUM },
	};
	if (json_array_size(trs) == 0) {
		g_string_append(o, "<p class=\"none\">none</p>\n");
	} else {
			bool acts = pal__console_may(v, v->tenant);
		g_string_append(o, "<table><tr>");
		for (size_t k = 0; k < G_N_ELEMENTS(tcols); k++)
			g_string_append_printf(o, "<th>%s</th>", tcols[k].label);
		g_string_append(o, acts ? "<th>act</th></tr>\n" : "</tr>\n");
		json_array_foreach(trs, i, e)
		{
			const char *c = trigger_class(e);
			g_string_append_printf(o, "<tr class=\"trigger%s%s\">", c ? " " : "",
					       c ? c : "");
			for (size_t k = 0; k < G_N_ELEMENTS(tcols); k++)
				pal__console_cell(o, e, &tcols[k], api->str, jcli->str);
			if (acts) {
				g_string_append(o, "<td class=\"acts\">");
				pal__console_trigger_acts(o, v, e);
				g_string_append(o, "</td>");
			}
			g_string_append(o, "</tr>\n");
			json_t *atts = json_object_get(e, "attempts");
			if (json_array_size(atts)) {
				g_string_append_printf(o, "<tr><td colspan=\"%zu\">",
						       G_N_ELEMENTS(tcols) + acts);
				g_string_append(o, "<table class=\"sub\"><tr>");
				for (size_t k = 0; k < G_N_ELEMENTS(acols); k++)
					g_string_append_printf(o, "<th>%s</th>", acols[k].label);
				g_string_append(o, "</tr>\n");
				size_t a;
				json_t *at;
				json_array_foreach(atts, a, at)
				{
					g_string_append(o, "<tr class=\"attempt\">");
					for (size_t k = 0; k < G_N_ELEMENTS(acols); k++)
						pal__console_cell(o, at, &acols[k], api->str,
								  jcli->str);
					g_string_append(o, "</tr>\n");
					response_row(o, json_object_get(at, "response"),
						     G_N_ELEMENTS(acols));
				}
				g_string_append(o, "</table></td></tr>\n");
			}
		}
		g_string_append(o, "</table>\n");
	}
	g_string_append(o, "</section>\n<div class=\"grid\">\n");

	g_string_assign(jcli, "palisade misfires --job ");
	pal_shell_quote(jcli, id);
	pal__console_section_begin(o, "misfires", "Misfires", jcli->str, api->str);
	static const pal__col mcols[] = { { "range_from", "from", C_TEXT },
					  { "range_to", "to", C_TEXT },
					  { "count", "instants", C_NUM },
					  { "reason", "reason", C_TEXT },
					  { "upstream_job", "upstream", C_JOB },
					  { "upstream_trigger", "upstream trigger", C_TRIGGER },
					  { "policy", "policy", C_TEXT },
					  { "decided_at", "decided", C_TEXT } };
	pal__console_table(o, json_object_get(m, "misfires"), mcols, G_N_ELEMENTS(mcols), api->str,
			   jcli->str, NULL);
	g_string_append(o, "</section>\n");
	pal__console_section_begin(o, "tickets", "Tickets", "palisade tickets list --all",
				   api->str);
	static const pal__col kcols[] = {
		{ "id", "ticket", C_TICKET },	       { "state", "state", C_TEXT },
		{ "trigger_id", "trigger", C_NUM },    { "reason", "reason", C_TEXT },
		{ "error_class", "error class", C_TEXT },
		{ "allowed_actions", "allowed actions", C_LIST },
		{ "created_at", "created", C_TEXT },
	};
	pal__console_table_act(o, json_object_get(m, "tickets"), kcols, G_N_ELEMENTS(kcols),
			       api->str, NULL, NULL, v, pal__console_ticket_acts);
	g_string_append(o, "</section>\n</div>\n</main></body></html>\n");
	g_string_free(jcli, TRUE);
	g_string_free(cli, TRUE);
	g_string_free(api, TRUE);
}
