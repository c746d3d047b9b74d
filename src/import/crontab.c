/*
 * crontab.c - crontab files to palisade jobs (docs/migrating.md).
 *
 * Reads a file as Debian's cron (Vixie cron 3.0) reads it: blank lines and
 * '#' comments, NAME=VALUE variables (quotes around the value dropped),
 * entries of five time fields or an @macro, with a user column in system
 * files (/etc/crontab, /etc/cron.d/, or opts->system), then the command to
 * the end of the line.  In the command the first '%' not escaped by a
 * backslash ends it and the rest is the command's standard input, each
 * further '%' a newline; "\%" is a literal '%'.  CRON_TZ is cronie's
 * variable, the zone of the entries after it; Debian's cron does not read
 * it (opts->cron says which daemon ran the file).
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

/* An entry translated, waiting for its id: a job's id depends on whether
 * another entry of the file has the same user and command. */
typedef struct pending {
	char *base;  /* PREFIX.SLUG-HASH of the user and the command */
	char *sched; /* the schedule as written and CRON_TZ: tells twins apart */
	char *cron, *zone, *desc, *user, *body, *source;
	size_t source_len;
	int lineno;
} pending;

typedef struct cronfile {
	pal_import_result *r;
	const pal_import_opts *o;
	const char *name;
	char *prefix;
	bool system;
	GArray *env;	  /* var, in file order, a later assignment replacing */
	bool read_tz;	  /* CRON_TZ moves the schedules (cronie) */
	char *cron_tz;	  /* CRON_TZ in effect when read_tz, or NULL */
	GString *assumed; /* lines whose zone was assumed */
	GPtrArray *pending;
} cronfile;

static void pending_free(gpointer p)
{
	pending *e = p;
	g_free(e->base);
	g_free(e->sched);
	g_free(e->cron);
	g_free(e->zone);
	g_free(e->desc);
	g_free(e->user);
	g_free(e->body);
	g_free(e->source);
	g_free(e);
}

/* The names Debian's cron reads in /etc/cron.d (run-parts' rule). */
#define CRON_D_NAME "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"

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
		if (!strcmp(v->name, "CRON_TZ") && f->read_tz)
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
	if (user && pal_label_value_problem(user))
		pal__import_issue(f->r, f->name, where, "approximated",
				  "user \"%s\" is not a label value (%s): no label \"user\"; the "
				  "user is in the description and the body",
				  user, pal_label_value_problem(user));
	pending *e = g_new0(pending, 1);
	e->base = g_strdup(id->str);
	e->sched = g_strdup_printf("%s\n%s", cron->str, f->cron_tz ? f->cron_tz : "");
	e->cron = g_strdup(cron->str);
	e->zone = g_strdup(zone);
	e->desc = g_strdup(desc->str);
	e->user = user && !pal_label_value_problem(user) ? g_strdup(user) : NULL;
	e->body = g_strdup(body->str);
	e->source = g_strndup(line, len);
	e->source_len = len;
	e->lineno = lineno;
	g_ptr_array_add(f->pending, e);
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

/* Write every pending entry, in file order.  An entry whose user and
 * command no other entry of the file has keeps PREFIX.SLUG-HASH, whatever
 * its schedule; entries that share them (one command at several schedules)
 * each get "_" and 8 hex digits of the SHA-256 of their own schedule (and
 * CRON_TZ), so that no entry's id depends on where the others stand, and
 * removing one of three leaves the other two their ids (the last of two
 * takes PREFIX.SLUG-HASH: the report names each such id, so that the
 * import is applied with --prune-prefix).  Entries equal in all of these
 * get "-2", "-3", ... (pal__import_emit): they differ in nothing the id
 * could name. */
static void emit_all(cronfile *f)
{
	GHashTable *n = g_hash_table_new(g_str_hash, g_str_equal);

	for (guint i = 0; i < f->pending->len; i++) {
		pending *e = g_ptr_array_index(f->pending, i);
		g_hash_table_insert(
		    n, e->base,
		    GINT_TO_POINTER(GPOINTER_TO_INT(g_hash_table_lookup(n, e->base)) + 1));
	}
	for (guint i = 0; i < f->pending->len; i++) {
		pending *e = g_ptr_array_index(f->pending, i);
		char hex[65], *id;
		bool twin = GPOINTER_TO_INT(g_hash_table_lookup(n, e->base)) > 1;
		if (twin) {
			pal_sha256_hex(e->sched, strlen(e->sched), hex);
			id = g_strdup_printf("%s_%.8s", e->base, hex);
		} else {
			id = g_strdup(e->base);
		}
		const char *labels[] = {"user", e->user};
		pal__import_job j = {
		    .id = id,
		    .cron = e->cron,
		    .timezone = e->zone,
		    .misfire = "skip",
		    .description = e->desc,
		    .labels = labels,
		    .n_labels = e->user ? 1 : 0,
		    .body = e->body,
		    .source = e->source,
		    .source_len = e->source_len,
		};
		const char *used = pal__import_emit(f->r, &j, f->o);
		if (twin) {
			char where[32];
			snprintf(where, sizeof where, "%d", e->lineno);
			pal__import_note(f->r, f->name, where, "id",
					 "%s: another entry has the same user and command, so the "
					 "id carries this entry's schedule; when one of them is "
					 "added or removed the others' ids change: apply the "
					 "import with `--prune-prefix %s.`",
					 used, f->prefix);
		}
		g_free(id);
	}
	g_hash_table_destroy(n);
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
	if (!strcmp(name, "CRON_TZ") && f->read_tz) {
		g_free(f->cron_tz);
		f->cron_tz = *value ? g_strdup(value) : NULL;
		if (!f->o->cron && *value)
			pal__import_issue(f->r, f->name, where, "approximated",
					  "CRON_TZ=%s taken as the zone of the entries after it, as "
					  "cronie reads it; Debian's cron does not read CRON_TZ (its "
					  "entries run in the host's zone): --cron cronie or --cron "
					  "debian says which daemon ran the file",
					  value);
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
	cronfile f = {.r = r, .o = o, .name = name, .read_tz = !o->cron || strcmp(o->cron, "debian")};
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
	/* where the file is, by its resolved directory: `cd /etc/cron.d` and a
	 * relative name is a system crontab too */
	const char *at = o->resolved ? o->resolved : name;
	f.system = o->system || !strcmp(at, "/etc/crontab") || !strncmp(at, "/etc/cron.d/", 12);
	if (!strncmp(at, "/etc/cron.d/", 12) &&
	    (!at[12] || at[12 + strspn(at + 12, CRON_D_NAME)])) {
		pal__import_issue(r, name, "1", "not translated",
				  "skipped: cron reads only the files of /etc/cron.d named with "
				  "letters, digits, '_' and '-' (run-parts' rule) and ignores "
				  "this one (a dpkg leftover, a disabled copy), so none of its "
				  "entries ran");
		return 0;
	}
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
	f.pending = g_ptr_array_new_with_free_func(pending_free);
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
	emit_all(&f);
	if (f.assumed->len)
		pal__import_issue(r, name, f.assumed->str, "approximated",
				  f.read_tz ? "no CRON_TZ and no --timezone: cron reads these "
					      "schedules in its host's local zone; taken as UTC"
					    : "no --timezone: cron reads these schedules in its "
					      "host's local zone; taken as UTC");
	for (guint i = 0; i < f.env->len; i++) {
		g_free(g_array_index(f.env, var, i).name);
		g_free(g_array_index(f.env, var, i).value);
	}
	g_array_free(f.env, TRUE);
	g_string_free(f.assumed, TRUE);
	g_ptr_array_free(f.pending, TRUE);
	g_free(f.cron_tz);
	g_free(f.prefix);
	return 0;
}
