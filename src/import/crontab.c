/*
 * crontab.c - crontab files to palisade jobs (docs/migrating.md).
 *
 * Reads a file as Debian's cron (Vixie cron 3.0) reads it: blank lines and
 * '#' comments, NAME=VALUE variables (quotes around the value dropped),
 * entries of five time fields or an @macro, with a user column in system
 * files (/etc/crontab, /etc/cron.d/, or opts->system), then the command to
 * the end of the line.  In the command the first '%' not escaped by a
 * backslash ends it and the rest is the command's standard input, each
 * further '%' a newline; "\%" is a literal '%'.  CRON_TZ (cronie's
 * variable) is the zone of the entries after it.
 *
 * An entry becomes one job: the same five fields (palisade's 5-field form
 * is Vixie's, the day-of-month/day-of-week OR rule and the DST behaviour
 * included, docs/cron.md), `misfire: skip` (cron never runs what it missed
 * while down), and a call to the --target-url whose JSON body carries the
 * command, its standard input, the user and the variables in effect.
 * Everything else is named in the report: @reboot, MAILTO, fields cron
 * itself rejects, an unknown zone, an assumed one.
 */
#include <stdio.h>
#include <string.h>
#include "palisade/sha256.h"
#include "import_int.h"

typedef struct var {
	char *name, *value;
} var;

typedef struct cronfile {
	pal_import_result *r;
	const pal_import_opts *o;
	const char *name;
	char *prefix;
	bool system;
	GArray *env;	  /* var, in file order, a later assignment replacing */
	char *cron_tz;	  /* CRON_TZ in effect, or NULL */
	GString *assumed; /* lines whose zone was assumed */
} cronfile;

static const char *const macros[] = {"@yearly", "@annually", "@monthly", "@weekly",
				     "@daily",	"@midnight", "@hourly"};

static void set_var(cronfile *f, const char *name, const char *value)
{
	for (guint i = 0; i < f->env->len; i++) {
		var *v = &g_array_index(f->env, var, i);
		if (!strcmp(v->name, name)) {
			g_free(v->value);
			v->value = g_strdup(value);
			return;
		}
	}
	var v = {g_strdup(name), g_strdup(value)};
	g_array_append_val(f->env, v);
}

/* "NAME = VALUE" with optional quotes around either; false when LINE is not
 * an assignment. */
static bool parse_env(const char *line, char **name, char **value)
{
	const char *eq = strchr(line, '=');
	char *n, *v;
	size_t l;

	if (!eq)
		return false;
	n = g_strstrip(g_strndup(line, (gsize)(eq - line)));
	v = g_strstrip(g_strdup(eq + 1));
	l = strlen(n);
	if (l >= 2 && (n[0] == '"' || n[0] == '\'') && n[l - 1] == n[0]) {
		memmove(n, n + 1, l - 2);
		n[l - 2] = 0;
	}
	l = strlen(v);
	if (l >= 2 && (v[0] == '"' || v[0] == '\'') && v[l - 1] == v[0]) {
		memmove(v, v + 1, l - 2);
		v[l - 2] = 0;
	}
	if (!*n || strpbrk(n, " \t")) {
		g_free(n);
		g_free(v);
		return false;
	}
	*name = n;
	*value = v;
	return true;
}

/* Copy cron's text at P into OUT up to its end or, when STOP, up to the
 * first '%' not escaped by a backslash (true then, and *P just past it); a
 * '%' that does not stop is a newline.  "\%" is '%', any other backslash
 * stays (do_command.c). */
static bool percent_text(const char **p, GString *out, bool stop)
{
	bool esc = false;

	for (; **p; (*p)++) {
		char c = **p;
		if (esc) {
			if (c != '%')
				g_string_append_c(out, '\\');
			g_string_append_c(out, c);
			esc = false;
		} else if (c == '\\') {
			esc = true;
		} else if (c == '%' && stop) {
			(*p)++;
			return true;
		} else {
			g_string_append_c(out, c == '%' ? '\n' : c);
		}
	}
	if (esc)
		g_string_append_c(out, '\\');
	return false;
}

/* Split cron's command text at the first unescaped '%' into the command
 * and its standard input, each further '%' a newline, as cron does. */
static void split_percent(const char *text, GString *cmd, GString *in, bool *has_in)
{
	*has_in = percent_text(&text, cmd, true);
	if (*has_in)
		percent_text(&text, in, false);
}

/* Why cron rejects FIELD although palisade reads it, or NULL: a character
 * outside cron's grammar (numbers, names, '*', '-', '/', ','; palisade also
 * reads Quartz's '?', 'L', 'W', '#'), or a step after a single value
 * ("5/10"; cron takes steps after '*' or a range only).  Cron refuses such
 * an entry, so it never ran. */
static const char *cron_rejects(const char *field)
{
	if (field[strspn(field,
			 "0123456789*,-/abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")])
		return "a character outside cron's grammar (numbers, names, '*', '-', '/', ',')";
	char **items = g_strsplit(field, ",", -1);
	const char *why = NULL;

	for (char **it = items; *it && !why; it++) {
		const char *sl = strchr(*it, '/');
		if (sl && **it != '*' && !memchr(*it, '-', (size_t)(sl - *it)))
			why = "a step after a single value (write a range, e.g. \"5-59/10\")";
	}
	g_strfreev(items);
	return why;
}

static const char *next_token(const char *p, char **tok)
{
	const char *s;

	p += strspn(p, " \t");
	s = p;
	p += strcspn(p, " \t");
	*tok = p > s ? g_strndup(s, (gsize)(p - s)) : NULL;
	return p;
}

static void entry(cronfile *f, int lineno, const char *line, size_t len)
{
	char where[32], *fields[5] = {0}, *user = NULL, *why = NULL, *slug, *idsrc;
	const char *p = line, *zone;
	GString *cron = g_string_new(NULL), *cmd = g_string_new(NULL), *in = g_string_new(NULL);
	GString *body = g_string_new(NULL), *desc = g_string_new(NULL), *id = g_string_new(NULL);
	bool has_in, ok = true;
	int nf = 5;
	char hex[65];

	snprintf(where, sizeof where, "%d", lineno);
	if (*p == '@') {
		p = next_token(p, &fields[0]);
		nf = 1;
		bool known = false;
		bool other_case = false;
		for (size_t i = 0; i < G_N_ELEMENTS(macros); i++) {
			known = known || !strcmp(fields[0], macros[i]);
			other_case = other_case || !g_ascii_strcasecmp(fields[0], macros[i]);
		}
		if (!strcmp(fields[0], "@reboot")) {
			pal__import_issue(f->r, f->name, where, "not translated",
					  "@reboot runs at the cron daemon's start, not on a "
					  "schedule; palisade has no such instant");
			ok = false;
		} else if (!known && other_case) {
			pal__import_issue(
			    f->r, f->name, where, "not translated",
			    "macro \"%s\": cron knows its macros in lower case only and "
			    "rejects this one, so the entry never ran",
			    fields[0]);
			ok = false;
		} else if (!known) {
			pal__import_issue(f->r, f->name, where, "not translated",
					  "unknown macro \"%s\"", fields[0]);
			ok = false;
		}
		g_string_append(cron, fields[0]);
	} else {
		for (int i = 0; i < 5; i++) {
			p = next_token(p, &fields[i]);
			if (!fields[i]) {
				pal__import_issue(f->r, f->name, where, "not translated",
						  "entry with %d time fields (cron needs 5)", i);
				ok = false;
				break;
			}
			const char *bad = ok ? cron_rejects(fields[i]) : NULL;
			if (bad) {
				pal__import_issue(f->r, f->name, where, "not translated",
						  "field %d \"%s\": cron itself rejects %s, so the "
						  "entry never ran",
						  i + 1, fields[i], bad);
				ok = false;
			}
			g_string_append_printf(cron, "%s%s", i ? " " : "",
					       fields[i] ? fields[i] : "");
		}
	}
	if (ok && f->system) {
		p = next_token(p, &user);
		if (!user) {
			pal__import_issue(
			    f->r, f->name, where, "not translated",
			    "no user column (a system crontab names the user before the "
			    "command)");
			ok = false;
		}
	}
	p += strspn(p, " \t");
	if (ok && !*p) {
		pal__import_issue(f->r, f->name, where, "not translated",
				  "entry without a command");
		ok = false;
	}
	zone = f->cron_tz ? f->cron_tz : f->o->timezone ? f->o->timezone : "UTC";
	if (ok && (why = pal__import_check_schedule(cron->str, zone, f->o->now))) {
		pal__import_issue(f->r, f->name, where, "not translated", "%s", why);
		ok = false;
	}
	if (!ok)
		goto out;
	if ((why = pal__import_gap_collision(cron->str, zone, f->o->now,
					     f->o->now + 10 * 366 * 86400LL)))
		pal__import_issue(f->r, f->name, where, "approximated", "%s", why);
	if (!f->cron_tz && !f->o->timezone)
		g_string_append_printf(f->assumed, "%s%d", f->assumed->len ? ", " : "", lineno);

	split_percent(p, cmd, in, &has_in);
	g_string_append(body, "{\"command\": ");
	pal__import_json_str(body, cmd->str);
	if (has_in) {
		g_string_append(body, ", \"stdin\": ");
		pal__import_json_str(body, in->str);
	}
	if (user) {
		g_string_append(body, ", \"user\": ");
		pal__import_json_str(body, user);
	}
	g_string_append(body, ", \"env\": {");
	for (guint i = 0, n = 0; i < f->env->len; i++) {
		var *v = &g_array_index(f->env, var, i);
		if (!strcmp(v->name, "CRON_TZ"))
			continue;
		g_string_append(body, n++ ? ", " : "");
		pal__import_json_str(body, v->name);
		g_string_append(body, ": ");
		pal__import_json_str(body, v->value);
	}
	g_string_append(body, "}, \"scheduled_at\": \"{scheduled_at}\"}");

	g_string_append_printf(desc, "crontab %s line %d%s%s: ", f->name, lineno,
			       user ? ", user " : "", user ? user : "");
	if (desc->len + strlen(p) <= 4000)
		g_string_append(desc, p);
	else
		g_string_append_printf(desc, "%.*s... (the whole command is in the body)",
				       (int)(4000 - desc->len), p);

	/* the id: stable while the user and the command stay, whatever the
	 * schedule or the line number */
	idsrc = g_strdup_printf("%s\n%s", user ? user : "", p);
	pal_sha256_hex(idsrc, strlen(idsrc), hex);
	slug = pal__import_slug(cmd->str, 40);
	g_string_append_printf(id, "%s.%s%s%.8s", f->prefix, slug, *slug ? "-" : "", hex);

	/* a system crontab's user becomes the label "user" (and stays in the
	 * description and the body, where the runner reads it) */
	const char *labels[] = {"user", user};
	if (user && pal_label_value_problem(user)) {
		pal__import_issue(f->r, f->name, where, "approximated",
				  "user \"%s\" is not a label value (%s): no label \"user\"; the "
				  "user is in the description and the body",
				  user, pal_label_value_problem(user));
		labels[1] = NULL;
	}
	pal__import_job j = {
	    .id = id->str,
	    .cron = cron->str,
	    .timezone = zone,
	    .misfire = "skip",
	    .description = desc->str,
	    .labels = labels,
	    .n_labels = labels[1] ? 1 : 0,
	    .body = body->str,
	    .source = line,
	    .source_len = len,
	};
	pal__import_emit(f->r, &j, f->o);
	g_free(slug);
	g_free(idsrc);
out:
	g_free(why);
	for (int i = 0; i < nf; i++)
		g_free(fields[i]);
	g_free(user);
	g_string_free(cron, TRUE);
	g_string_free(cmd, TRUE);
	g_string_free(in, TRUE);
	g_string_free(body, TRUE);
	g_string_free(desc, TRUE);
	g_string_free(id, TRUE);
}

static void line(cronfile *f, int lineno, const char *text, size_t len)
{
	char *l = g_strndup(text, len), *name, *value, where[32];
	const char *p = l + strspn(l, " \t");

	snprintf(where, sizeof where, "%d", lineno);
	if (!*p || *p == '#')
		goto out;
	if (!pal__import_text_ok(l, len)) {
		pal__import_issue(f->r, f->name, where, "not translated",
				  "not UTF-8 text (or a control character such as a carriage "
				  "return) in the line");
		goto out;
	}
	if (g_ascii_isdigit(*p) || *p == '*' || *p == '@') {
		entry(f, lineno, p, len - (size_t)(p - l));
		goto out;
	}
	if (!parse_env(p, &name, &value)) {
		pal__import_issue(f->r, f->name, where, "not translated",
				  "neither an entry nor a NAME=VALUE line");
		goto out;
	}
	if (!strcmp(name, "CRON_TZ")) {
		g_free(f->cron_tz);
		f->cron_tz = *value ? g_strdup(value) : NULL;
	} else if (!strcmp(name, "MAILTO") && *value) {
		pal__import_issue(f->r, f->name, where, "not translated",
				  "MAILTO=%s: palisade mails no output; each call's outcome is "
				  "in `palisade attempts` and the service's own logs",
				  value);
	}
	set_var(f, name, value);
	g_free(name);
	g_free(value);
out:
	g_free(l);
}

int pal_import_crontab(pal_import_result *r, const char *name, const char *buf, size_t len,
		       const pal_import_opts *o)
{
	cronfile f = {.r = r, .o = o, .name = name};
	const char *base = strrchr(name, '/'), *nul;
	int lineno = 0;

	if ((nul = memchr(buf, 0, len))) {
		char where[32];
		int at = 1;
		for (const char *p = buf; p < nul; p++)
			at += *p == '\n';
		snprintf(where, sizeof where, "%d", at);
		pal__import_issue(r, name, where, "unreadable", "a NUL byte: not a crontab");
		return PAL_EINVAL;
	}
	f.system = o->system || !strcmp(name, "/etc/crontab") || !strncmp(name, "/etc/cron.d/", 12);
	base = base ? base + 1 : name;
	if (o->prefix)
		f.prefix = g_strdup(o->prefix);
	else if (!strcmp(name, "-"))
		f.prefix = g_strdup("crontab");
	else
		f.prefix = pal__import_slug(base, 40);
	if (!*f.prefix) {
		g_free(f.prefix);
		f.prefix = g_strdup("crontab");
	}
	f.env = g_array_new(FALSE, FALSE, sizeof(var));
	f.assumed = g_string_new(NULL);
	for (size_t at = 0; at < len;) {
		const char *nl = memchr(buf + at, '\n', len - at);
		size_t n = nl ? (size_t)(nl - (buf + at)) : len - at;
		const char *t = buf + at;
		size_t blank = 0;
		while (blank < n && (t[blank] == ' ' || t[blank] == '\t'))
			blank++;
		if (!nl && blank < n && t[blank] != '#') {
			/* cron drops the last line of a file that does not end in a
			 * newline (and `crontab` refuses to install such a file) */
			char where[32];
			snprintf(where, sizeof where, "%d", ++lineno);
			pal__import_issue(r, name, where, "not translated",
					  "the file's last line has no newline at its end: cron "
					  "drops such a line, so it never ran");
		} else {
			line(&f, ++lineno, t, n);
		}
		at += n + 1;
	}
	if (f.assumed->len)
		pal__import_issue(r, name, f.assumed->str, "approximated",
				  "no CRON_TZ and no --timezone: cron reads these schedules in "
				  "its host's local zone; taken as UTC");
	for (guint i = 0; i < f.env->len; i++) {
		g_free(g_array_index(f.env, var, i).name);
		g_free(g_array_index(f.env, var, i).value);
	}
	g_array_free(f.env, TRUE);
	g_string_free(f.assumed, TRUE);
	g_free(f.cron_tz);
	g_free(f.prefix);
	return 0;
}
