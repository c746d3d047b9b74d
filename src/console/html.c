/*
 * html.c - the parts every console page is made of: the page's head and
 * style, the header bar, the banners of a missing source, sections, cards
 * and tables of a model's rows, and the forms a row offers a logged-in
 * operator (each posts to /console/act, which act.c serves).  Every value
 * is escaped on its way out (palisade/html.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "palisade/html.h"
#include "palisade/ops.h"
#include "console_int.h"

/* ---- HTML: common parts --------------------------------------------------- */

static const char CSS[] =
	"body{font:13px/1.35 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}"
	"header{background:#1d2330;color:#fff;padding:.5em 1.2em;display:flex;gap:1.5em;"
	"align-items:baseline;flex-wrap:wrap}header h1{font-size:16px;margin:0}"
	"header a{color:#cfe0ff}main{padding:.6em 1.2em;max-width:1400px}"
	".banner{padding:.5em .8em;margin:.5em 0;border-radius:4px;background:#fde2e1;"
	"border:1px solid #e5a3a0}"
	".cards{display:flex;flex-wrap:wrap;gap:.6em;margin:.6em 0}"
	".card{background:#fff;border:1px solid #d8dce3;border-radius:4px;padding:.4em .8em;"
	"min-width:8.5em}.card b{display:block;font-size:20px}.card.bad{border-color:#d9534f;"
	"background:#fff3f2}.card span{color:#5a6272}"
	".grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(620px,1fr));gap:0 1.4em}"
	"section{margin:.4em 0 1em}h2{font-size:14px;margin:.8em 0 .2em}"
	"p.src{margin:0 0 .3em;color:#5a6272;font-size:12px}code{font-size:12px}"
	"table{border-collapse:collapse;background:#fff;width:100%}"
	"th,td{border:1px solid #d8dce3;padding:.15em .45em;text-align:left;vertical-align:top}"
	"th{background:#eceff3;font-weight:600}td.num{text-align:right;"
	"font-variant-numeric:tabular-nums}tr.bad td{background:#fff3f2}"
	"tr.warn td{background:#fffbe6}table.sub{width:auto;margin:.2em 0 .2em 1.5em}"
	"p.none{color:#5a6272;margin:.2em 0}a{color:#1750b8}"
	"form.act,form.logout{display:inline-flex;gap:.2em;margin:0 .3em 0 0}"
	"form.act input[name=reason]{font-size:12px}#who{color:#cfe0ff}"
	"form.search{margin:.2em 0 .4em}.pager{color:#5a6272}"
	"#charts{display:flex;flex-wrap:wrap;gap:0 1em}#charts h2,#charts p.src{flex-basis:100%}"
	"figure.chart{margin:0}figure.chart figcaption{font-size:12px;color:#5a6272}"
	"p.legend{margin:0;font-size:11px}"
	".flash{padding:.4em .8em;border-radius:4px;margin:.5em 0}.flash.ok{background:#e3f4e1;"
	"border:1px solid #9fd19a}.flash.bad{background:#fde2e1;border:1px solid #e5a3a0}";

void pal__console_page_begin(GString *o, const char *title, bool refresh)
{
	g_string_append(o, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
			   "<meta name=\"viewport\" content=\"width=device-width\">\n");
	if (refresh)
		g_string_append(o, "<meta http-equiv=\"refresh\" content=\"15\">\n");
	g_string_append(o, "<title>");
	pal_html_text(o, title);
	g_string_append_printf(o, "</title><style>%s</style></head><body>\n", CSS);
}

/* V may act on TENANT's jobs (NULL: on something of every tenant, such as
 * a group or the whole cluster): logged in with an operator or admin
 * token that sees it.  The API decides again; this only hides buttons a
 * click on which would be refused. */
bool pal__console_may(const pal__viewer *v, const char *tenant)
{
	if (!v || !v->s || !pal_role_allows(v->s->who.role, PAL_ROLE_OPERATOR))
		return false;
	return tenant ? pal_token_sees_tenant(&v->s->who, tenant) : v->s->who.n_tenants == 0;
}

static void hidden(GString *o, const char *name, const char *value)
{
	g_string_append_printf(o, "<input type=\"hidden\" name=\"%s\" value=\"", name);
	pal_html_text(o, value);
	g_string_append(o, "\">");
}

/*
 * A form that asks the API for OP on TARGET (NULL: none) with a reason:
 * POST /console/act with the session's CSRF token.  CHOICES (may be NULL)
 * are a ticket's allowed actions, offered in a list.  LABEL is the button.
 */
void pal__console_act_form(GString *o, const pal__viewer *v, const char *op, const char *target,
			   const char *label, const json_t *choices)
{
	g_string_append_printf(o, "<form class=\"act\" method=\"post\" action=\"/console/act\" "
				  "data-op=\"%s\" data-target=\"",
			       op);
	pal_html_text(o, target ? target : "");
	g_string_append(o, "\">");
	hidden(o, "csrf", v->s->csrf);
	hidden(o, "op", op);
	if (target)
		hidden(o, "target", target);
	hidden(o, "back", v->back);
	if (!strcmp(op, "trigger-job")) {
		/* the run's identity: a form sent twice makes one run */
		char rid[37];
		if (pal_ops_uuid4(rid) == 0)
			hidden(o, "request_id", rid);
	}
	if (json_array_size(choices)) {
		g_string_append(o, "<select name=\"action\">");
		size_t i;
		json_t *a;
		json_array_foreach(choices, i, a)
		{
			const char *n = json_string_value(a);
			if (!n || !strcmp(n, "release")) /* its own form (release-job) */
				continue;
			g_string_append(o, "<option>");
			pal_html_text(o, n);
			g_string_append(o, "</option>");
		}
		g_string_append(o, "</select>");
	}
	g_string_append(o, "<input name=\"reason\" placeholder=\"reason\" required "
			   "maxlength=\"500\" size=\"12\"><button type=\"submit\">");
	pal_html_text(o, label);
	g_string_append(o, "</button></form>");
}

void pal__console_header_bar(GString *o, const json_t *m, const char *api, const pal__viewer *v)
{
	g_string_append(o, "<header><h1>palisade &middot; ");
	pal_html_text(o, json_string_value(json_object_get(m, "cluster")));
	g_string_append(o, "</h1><span>served by ");
	pal_html_text(o, json_string_value(json_object_get(m, "served_by")));
	g_string_append(o, " at ");
	pal_html_text(o, json_string_value(json_object_get(m, "now")));
	g_string_append(o, "</span><a href=\"/console\">cluster</a><a href=\"");
	pal_html_text(o, api);
	g_string_append(o, "\">JSON</a><a href=\"/\">this node</a><a href=\"/metrics\">metrics</a>");
	if (v && v->s) {
		const pal_token_identity *w = &v->s->who;
		g_string_append(o, "<span id=\"who\">");
		pal_html_text(o, w->name);
		g_string_append_printf(o, " (%s", pal_role_name(w->role));
		for (size_t i = 0; i < w->n_tenants; i++) {
			g_string_append(o, i ? ", " : "; tenants ");
			pal_html_text(o, w->tenants[i]);
		}
		g_string_append(o, ")</span><form class=\"logout\" method=\"post\" "
				   "action=\"/console/logout\">");
		hidden(o, "csrf", v->s->csrf);
		g_string_append(o, "<button type=\"submit\">log out</button></form>");
	} else {
		g_string_append(o, "<a id=\"login-link\" href=\"/console/login\">log in</a>");
	}
	g_string_append(o, "</header>\n<main>\n");
	if (v && v->s && v->s->flash[0]) {
		g_string_append_printf(o, "<p class=\"flash %s\" id=\"flash\">",
				       v->s->flash_bad ? "bad" : "ok");
		pal_html_text(o, v->s->flash);
		g_string_append(o, "</p>\n");
	}
}

void pal__console_banners(GString *o, const json_t *m)
{
	const char *names[] = { "database", "zookeeper" };
	const char *labels[] = { "PostgreSQL unavailable", "ZooKeeper unavailable" };
	for (int i = 0; i < 2; i++) {
		json_t *s = json_object_get(m, names[i]);
		if (!s || json_is_true(json_object_get(s, "ok")))
			continue;
		g_string_append_printf(o, "<p class=\"banner\" id=\"%s-down\"><b>%s</b>: ", names[i],
				       labels[i]);
		pal_html_text(o, json_string_value(json_object_get(s, "error")));
		g_string_append(o, i == 0 ? " &mdash; the database sections are missing; what this "
					    "node knows is shown below.</p>\n"
					  : " &mdash; the live-node list is missing.</p>\n");
	}
}

/* "<section><h2>TITLE</h2><p class=src>CLI ... JSON ...</p>". */
void pal__console_section_begin(GString *o, const char *id, const char *title, const char *cli,
				const char *json_href)
{
	g_string_append_printf(o, "<section id=\"%s\"><h2>%s</h2><p class=\"src\">", id, title);
	if (cli) {
		g_string_append(o, "CLI <code>");
		pal_html_text(o, cli);
		g_string_append(o, "</code> &middot; ");
	}
	g_string_append(o, "JSON <a href=\"");
	pal_html_text(o, json_href);
	g_string_append(o, "\">");
	pal_html_text(o, json_href);
	g_string_append(o, "</a></p>\n");
}

void pal__console_fmt_secs(GString *o, double s)
{
	if (s < 0)
		s = 0;
	if (s < 60)
		g_string_append_printf(o, "%.1f s", s);
	else if (s < 3600)
		g_string_append_printf(o, "%d min %d s", (int)(s / 60), (int)s % 60);
	else if (s < 86400 * 2)
		g_string_append_printf(o, "%d h %d min", (int)(s / 3600), ((int)s % 3600) / 60);
	else
		g_string_append_printf(o, "%d d %d h", (int)(s / 86400), ((int)s % 86400) / 3600);
}

/* A number that links to where the same figure comes from: HREF (a JSON
 * endpoint) with the CLI command as its title. */
void pal__console_num_link(GString *o, const json_t *v, const char *href, const char *cli)
{
	g_string_append(o, "<a href=\"");
	pal_html_text(o, href);
	g_string_append(o, "\"");
	if (cli) {
		g_string_append(o, " title=\"");
		pal_html_text(o, cli);
		g_string_append(o, "\"");
	}
	g_string_append(o, ">");
	pal_html_value(o, v);
	g_string_append(o, "</a>");
}

void pal__console_cell(GString *o, const json_t *row, const pal__col *k, const char *href,
		       const char *cli)
{
	const json_t *v = json_object_get(row, k->key);
	switch (k->kind) {
	case C_NUM:
		g_string_append(o, "<td class=\"num\">");
		if (json_is_number(v))
			pal__console_num_link(o, v, href, cli);
		else
			pal_html_value(o, v);
		break;
	case C_SECS:
		g_string_append(o, "<td class=\"num\">");
		if (json_is_number(v)) {
			GString *t = g_string_new(NULL);
			pal__console_fmt_secs(t, json_number_value(v));
			json_t *tv = json_string(t->str);
			pal__console_num_link(o, tv, href, cli);
			json_decref(tv);
			g_string_free(t, TRUE);
		} else {
			pal_html_value(o, v);
		}
		break;
	case C_JOB:
		g_string_append(o, "<td>");
		if (json_is_string(v)) {
			g_string_append(o, "<a class=\"job\" href=\"/console/job?id=");
			GString *u = g_string_new(NULL);
			pal_html_urlarg(u, json_string_value(v));
			pal_html_text(o, u->str);
			g_string_free(u, TRUE);
			g_string_append(o, "\">");
			pal_html_text(o, json_string_value(v));
			g_string_append(o, "</a>");
		} else {
			pal_html_value(o, v);
		}
		break;
	case C_TICKET:
	case C_TRIGGER: {
		g_string_append(o, "<td class=\"num\">");
		if (json_is_integer(v)) {
			char cmd[96];
			if (k->kind == C_TICKET)
				snprintf(cmd, sizeof cmd, "palisade tickets show %lld",
					 (long long)json_integer_value(v));
			else
				snprintf(cmd, sizeof cmd, "palisade attempts %lld",
					 (long long)json_integer_value(v));
			pal__console_num_link(o, v, href, cmd);
		} else {
			pal_html_value(o, v);
		}
		break;
	}
	case C_DIGEST: /* the first 12 characters, the whole digest as the title */
		g_string_append(o, "<td title=\"");
		pal_html_value(o, v);
		g_string_append(o, "\"><code>");
		if (json_is_string(v)) {
			char head[13];
			snprintf(head, sizeof head, "%s", json_string_value(v));
			pal_html_text(o, head);
		} else {
			pal_html_value(o, v);
		}
		g_string_append(o, "</code>");
		break;
	case C_LIST:
		g_string_append(o, "<td>");
		if (json_is_array(v)) {
			size_t i;
			json_t *e;
			json_array_foreach(v, i, e)
			{
				if (i)
					g_string_append(o, ", ");
				pal_html_value(o, e);
			}
		} else {
			pal_html_value(o, v);
		}
		break;
	default:
		g_string_append(o, "<td>");
		pal_html_value(o, v);
	}
	g_string_append(o, "</td>");
}

void pal__console_table(GString *o, const json_t *rows, const pal__col *cols, size_t n,
			const char *href, const char *cli, pal__row_class_fn cls)
{
	pal__console_table_act(o, rows, cols, n, href, cli, cls, NULL, NULL);
}

/* TABLE with a last column of ACT's forms, when V may act at all. */
void pal__console_table_act(GString *o, const json_t *rows, const pal__col *cols, size_t n,
			    const char *href, const char *cli, pal__row_class_fn cls,
			    const pal__viewer *v, pal__row_act_fn act)
{
	if (!v || !v->s || !pal_role_allows(v->s->who.role, PAL_ROLE_OPERATOR))
		act = NULL; /* a viewer's table has no act column */
	if (!json_is_array(rows)) {
		g_string_append(o, "<p class=\"none\">not available</p>\n");
		return;
	}
	if (json_array_size(rows) == 0) {
		g_string_append(o, "<p class=\"none\">none</p>\n");
		return;
	}
	g_string_append(o, "<table><tr>");
	for (size_t i = 0; i < n; i++)
		g_string_append_printf(o, "<th>%s</th>", cols[i].label);
	if (act)
		g_string_append(o, "<th>act</th>");
	g_string_append(o, "</tr>\n");
	size_t r;
	json_t *row;
	json_array_foreach((json_t *)rows, r, row)
	{
		const char *c = cls ? cls(row) : NULL;
		g_string_append_printf(o, "<tr%s%s%s>", c ? " class=\"" : "", c ? c : "",
				       c ? "\"" : "");
		for (size_t i = 0; i < n; i++)
			pal__console_cell(o, row, &cols[i], href, cli);
		if (act) {
			g_string_append(o, "<td class=\"acts\">");
			act(o, v, row);
			g_string_append(o, "</td>");
		}
		g_string_append(o, "</tr>\n");
	}
	g_string_append(o, "</table>\n");
}

void pal__console_card(GString *o, const char *id, const char *label, const json_t *v,
		       const char *href, const char *cli, bool bad)
{
	g_string_append_printf(o, "<div class=\"card%s\" id=\"card-%s\"><b>", bad ? " bad" : "", id);
	pal__console_num_link(o, v, href, cli);
	g_string_append_printf(o, "</b><span>%s</span></div>\n", label);
}

int64_t pal__console_sum_key(const json_t *rows, const char *key)
{
	int64_t s = 0;
	size_t i;
	json_t *e;
	json_array_foreach((json_t *)rows, i, e) s += json_integer_value(json_object_get(e, key));
	return s;
}

/* ---- the forms of the rows ------------------------------------------------------ */

/* The tenant an action on ROW concerns: the page's job's, or the row's. */
static const char *row_tenant(const pal__viewer *v, const json_t *row)
{
	return v->tenant ? v->tenant : json_string_value(json_object_get(row, "tenant"));
}

/* A paused scope ("global", "job:J", "group:G", "tenant:T"): resume it. */
void pal__console_gate_acts(GString *o, const pal__viewer *v, const json_t *row)
{
	static const struct {
		const char *prefix, *op;
	} k[] = { { "job:", "resume-job" }, { "group:", "resume-group" }, { "tenant:", "resume-tenant" } };
	const char *scope = json_string_value(json_object_get(row, "scope"));
	if (scope && !strcmp(scope, "global") && pal__console_may(v, NULL))
		pal__console_act_form(o, v, "resume-all", NULL, "resume", NULL);
	for (size_t i = 0; scope && i < G_N_ELEMENTS(k); i++) {
		const char *t = scope + strlen(k[i].prefix);
		if (strncmp(scope, k[i].prefix, strlen(k[i].prefix)))
			continue;
		/* a group may hold several tenants' jobs: an unlimited token's */
		const char *tn = !strcmp(k[i].op, "resume-tenant") ? t
				 : !strcmp(k[i].op, "resume-job")  ? row_tenant(v, row)
								   : NULL;
		if (pal__console_may(v, tn))
			pal__console_act_form(o, v, k[i].op, t, "resume", NULL);
	}
}

/* A backlog row of a group (TENANT false) or a tenant: pause or resume it. */
static void scope_acts(GString *o, const pal__viewer *v, const json_t *row, bool tenant)
{
	const char *name = json_string_value(json_object_get(row, "name"));
	bool paused = json_is_true(json_object_get(row, "gate_paused"));
	if (!name || !pal__console_may(v, tenant ? name : NULL))
		return;
	const char *op = tenant ? (paused ? "resume-tenant" : "pause-tenant")
				: (paused ? "resume-group" : "pause-group");
	pal__console_act_form(o, v, op, name, paused ? "resume" : "pause", NULL);
}

void pal__console_group_acts(GString *o, const pal__viewer *v, const json_t *row)
{
	scope_acts(o, v, row, false);
}

void pal__console_tenant_acts(GString *o, const pal__viewer *v, const json_t *row)
{
	scope_acts(o, v, row, true);
}

/* An open ticket: resolve it with one of its allowed actions; a quarantine
 * ticket (allowed: release) releases its job. */
void pal__console_ticket_acts(GString *o, const pal__viewer *v, const json_t *row)
{
	const char *state = json_string_value(json_object_get(row, "state"));
	const char *job = json_string_value(json_object_get(row, "job_id"));
	json_t *allowed = json_object_get(row, "allowed_actions");
	if ((state && strcmp(state, "open")) || !json_is_integer(json_object_get(row, "id")) ||
	    !pal__console_may(v, row_tenant(v, row)))
		return;
	bool release = false, other = false;
	size_t i;
	json_t *a;
	json_array_foreach(allowed, i, a)
	{
		const char *n = json_string_value(a);
		release |= n && !strcmp(n, "release");
		other |= n && strcmp(n, "release");
	}
	if (release && job)
		pal__console_act_form(o, v, "release-job", job, "release", NULL);
	if (other) {
		char id[24];
		snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(row, "id")));
		pal__console_act_form(o, v, "resolve-ticket", id, "resolve", allowed);
	}
}

/* A trigger that can still be cancelled. */
void pal__console_trigger_acts(GString *o, const pal__viewer *v, const json_t *row)
{
	static const char *const live[] = { "pending", "retry_wait", "paused", "running" };
	const char *state = json_string_value(json_object_get(row, "state"));
	if (!state || !json_is_integer(json_object_get(row, "id")) ||
	    !pal__console_may(v, row_tenant(v, row)))
		return;
	for (size_t i = 0; i < G_N_ELEMENTS(live); i++) {
		if (strcmp(state, live[i]))
			continue;
		char id[24];
		snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(row, "id")));
		pal__console_act_form(o, v, "cancel-trigger", id, "cancel", NULL);
	}
}
