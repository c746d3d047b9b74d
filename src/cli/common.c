/*
 * common.c - options and connection set-up shared by the subcommands.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pwd.h>
#include <time.h>
#include <glib.h>
#include "palisade/err.h"
#include "palisade/name.h"
#include "palisade/timefmt.h"
#include "palisade/url.h"
#include "cli_int.h"

void pal_cli_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "palisade %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

bool pal_cli_common_opt(pal_cli_common *c, int opt, const char *arg)
{
	switch (opt) {
	case 0x100: c->pg = arg; return true;
	case 0x101: c->zk = arg; return true;
	case 0x102: c->config = arg; return true;
	case 0x104: c->server = arg; return true;
	case 0x105: c->token_file = arg; return true;
	case 0x103:
		if (!strcmp(arg, "json"))
			c->json = true;
		else if (!strcmp(arg, "table"))
			c->json = false;
		else {
			fprintf(stderr, "palisade: unknown --output \"%s\" (expected table or json)\n", arg);
			exit(PAL_EXIT_USAGE);
		}
		return true;
	default:
		return false;
	}
}

int pal_cli_opt_other(pal_cli_common *c, int opt, const char *arg, void (*usage)(FILE *))
{
	if (pal_cli_common_opt(c, opt, arg))
		return -1;
	if (opt == 'h') {
		usage(stdout);
		return PAL_EXIT_OK;
	}
	usage(stderr);
	return PAL_EXIT_USAGE;
}

int pal_cli_parse_args(int argc, char **argv, pal_cli_common *c, void (*usage)(FILE *), int min,
		       int max)
{
	static const struct option lo[] = { PAL_CLI_COMMON_LONGOPTS,
					    { "help", no_argument, NULL, 'h' },
					    { 0 } };
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1)
		if ((ec = pal_cli_opt_other(c, opt, optarg, usage)) >= 0)
			return ec;
	if (argc - optind < min || argc - optind > max) {
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	return -1;
}

int pal_cli_parse_common(int argc, char **argv, pal_cli_common *c, void (*usage)(FILE *))
{
	return pal_cli_parse_args(argc, argv, c, usage, 0, 0);
}

bool pal_cli_int(const char *cmd, const char *name, const char *arg, long long lo, long long hi,
		 long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(arg, &end, 10);
	if (errno || end == arg || *end || v < lo || v > hi) {
		pal_cli_err(cmd, "--%s \"%s\": expected an integer in %lld..%lld", name, arg, lo, hi);
		return false;
	}
	*out = v;
	return true;
}

const char *pal_cli_pg(const pal_cli_common *c)
{
	if (c->pg && *c->pg)
		return c->pg;
	if (c->config) {
		const char *v = pal__cli_config_pg(c->config);
		if (v && *v)
			return v;
	}
	const char *e = getenv("PALISADE_PG");
	if (e && *e)
		return e;
	return NULL;
}

int pal__cli_connect_msg(const char *ci, bool migrating, pal_store **out, char *msg, size_t msglen)
{
	char err[1024];
	*msg = '\0';
	*out = NULL;
	if (!ci) {
		snprintf(msg, msglen, "palisade: no PostgreSQL connection string: pass --pg, set "
				      "postgres.conninfo in --config FILE, or export PALISADE_PG\n");
		return PAL_EXIT_USAGE;
	}
	int rc = pal_store_open(ci, out, err, sizeof err);
	if (rc) {
		/* libpq quotes a conninfo URI it cannot parse: mask its password */
		char shown[sizeof err];
		pal_url_redact_text(err, shown, sizeof shown);
		snprintf(msg, msglen, "palisade: %s\n", shown);
		return PAL_EXIT_UNAVAIL;
	}
	if (migrating)
		return PAL_EXIT_OK;
	int v;
	rc = pal_store_schema_check(*out, &v, err, sizeof err);
	if (rc) {
		snprintf(msg, msglen, "palisade: %s\n", err);
		pal_store_close(*out);
		*out = NULL;
		return rc == PAL_ESCHEMA ? PAL_EXIT_SOFTWARE : rc == PAL_EDB ? PAL_EXIT_UNAVAIL
									: PAL_EXIT_SOFTWARE;
	}
	return PAL_EXIT_OK;
}

int pal_cli_connect(const pal_cli_common *c, bool migrating, pal_store **out)
{
	if (c->server) {
		fprintf(stderr, "palisade: this command works on the database only (--pg, --config "
				"or PALISADE_PG), not through --server; docs/api.md lists those that "
				"do\n");
		*out = NULL;
		return PAL_EXIT_USAGE;
	}
	char msg[2100];
	int ec = pal__cli_connect_msg(pal_cli_pg(c), migrating, out, msg, sizeof msg);
	fputs(msg, stderr);
	return ec;
}

const char *pal_cli_actor(void)
{
	static char buf[256];
	const char *a = getenv("PALISADE_ACTOR");
	if (a && *a)
		return a;
	char host[128] = "localhost";
	gethostname(host, sizeof host - 1);
	struct passwd *pw = getpwuid(getuid());
	snprintf(buf, sizeof buf, "%s@%s", pw ? pw->pw_name : "unknown", host);
	return buf;
}

int pal_cli_exit_code(int rc)
{
	switch (rc) {
	case PAL_OK: return PAL_EXIT_OK;
	case PAL_ENOENT: return PAL_EXIT_NOTFOUND;
	case PAL_ESTALE: return PAL_EXIT_REFUSED;
	case PAL_EINVAL:
	case PAL_EPERM:
	case PAL_ENOGRANT:
	case PAL_ETOOBIG: return PAL_EXIT_DATAERR;
	case PAL_EDB:
	case PAL_EBUSY: return PAL_EXIT_UNAVAIL;
	default: return PAL_EXIT_SOFTWARE;
	}
}

int pal_cli_store_call(const pal_cli_common *c, const char *cmd, pal_cli_store_fn fn,
		       const void *ctx, json_t **out)
{
	pal_store *st;
	int ec = pal_cli_connect(c, false, &st);
	if (ec)
		return ec;
	char err[1024] = "";
	int rc = fn(st, ctx, out, err, sizeof err);
	pal_store_close(st);
	if (rc)
		pal_cli_err(cmd, "%s", err);
	return pal_cli_exit_code(rc);
}

bool pal_cli_name(const char *cmd, const char *what, const char *arg)
{
	size_t max = !strcmp(what, "job") ? PAL_CLI_JOB_MAX : PAL_CLI_GROUP_MAX;
	size_t n = strlen(arg);
	if (!n) {
		pal_cli_err(cmd, "an empty %s name names nothing", what);
		return false;
	}
	if (n > max) {
		pal_cli_err(cmd, "%s name \"%.32s...\" is too long (%zu bytes, at most %zu)", what,
			    arg, n, max);
		return false;
	}
	size_t bad = pal_name_bad_byte(arg, n);
	if (bad < n) {
		pal_cli_err(cmd,
			    "%s name \"%.64s\": invalid character at byte %zu (allowed: "
			    "lower-case letters, digits, '.', '_' and '-', starting with a "
			    "letter or digit)",
			    what, arg, bad + 1);
		return false;
	}
	return true;
}

bool pal_cli_time(const char *cmd, const char *opt, const char *arg, int64_t *out)
{
	if (pal_parse_rfc3339(arg, out)) {
		pal_cli_err(cmd, "--%s \"%s\": expected RFC 3339 (2026-01-01T00:00:00Z)", opt, arg);
		return false;
	}
	if (pal_rfc3339_has_fraction(arg)) {
		pal_cli_err(cmd,
			    "--%s \"%s\": instants are whole seconds; a fraction would be cut off "
			    "and name another instant; hint: write %.19s%s",
			    opt, arg, arg, arg + strcspn(arg + 20, "Zz+-") + 20);
		return false;
	}
	return true;
}

bool pal_cli_scope_opt(const char *cmd, int opt, const char *arg, pal_scope *sc, int *n, bool *ok)
{
	*ok = true;
	if (opt != 'j' && opt != 'g' && opt != 'T')
		return false;
	*ok = pal_cli_name(cmd, opt == 'j' ? "job" : opt == 'g' ? "group" : "tenant", arg);
	sc->kind = opt == 'j' ? PAL_SCOPE_JOB : opt == 'g' ? PAL_SCOPE_GROUP : PAL_SCOPE_TENANT;
	sc->name = arg;
	(*n)++;
	return true;
}

bool pal_cli_range_opt(const char *cmd, int opt, const char *arg, pal_cli_range *r, bool *ok)
{
	*ok = true;
	switch (opt) {
	case 'f':
		*ok = pal_cli_time(cmd, "from", arg, &r->from);
		return true;
	case 't':
		*ok = pal_cli_time(cmd, "to", arg, &r->to);
		return true;
	default:
		return pal_cli_scope_opt(cmd, opt, arg, &r->scope, &r->scopes, ok);
	}
}

bool pal_cli_range_ok(const char *cmd, const pal_cli_range *r)
{
	if (r->scopes > 1) {
		pal_cli_err(cmd, "give at most one of --job, --group, --tenant");
		return false;
	}
	if (r->from == PAL_OPS_NOW || r->to == PAL_OPS_NOW) {
		pal_cli_err(cmd, "--from and --to are required");
		return false;
	}
	if (r->to <= r->from) {
		pal_cli_err(cmd, "--to must be after --from");
		return false;
	}
	return true;
}

char *pal_cli_range_query(const pal_cli_range *r)
{
	char from[32], to[32];
	pal_fmt_rfc3339(r->from, from, sizeof from);
	pal_fmt_rfc3339(r->to, to, sizeof to);
	if (r->scope.kind == PAL_SCOPE_GLOBAL)
		return g_strdup_printf("from=%s&to=%s", from, to);
	char *name = g_uri_escape_string(r->scope.name, NULL, FALSE);
	char *q = g_strdup_printf("from=%s&to=%s&%s=%s", from, to,
				  pal_scope_kind_name(r->scope.kind), name);
	g_free(name);
	return q;
}

bool pal__cli_note_spent(const pal_job_spec *s, FILE *fp)
{
	if (!s->spent)
		return false;
	/* judged on the instants the planner plans: moved by spread and jitter */
	bool moved = s->spread_s || s->jitter_s;
	const char *what = s->has_at && moved ? "its one instant (at), moved by spread or jitter, is past"
			   : s->has_at		  ? "its one instant (at) is past"
			   : s->has_end && s->end <= (int64_t)time(NULL) ? "its end is past"
			   : moved ? "every instant its cron names, moved by spread or jitter, is past"
				   : "every instant its cron names is past";
	fprintf(fp,
		"%s:%d:%d: note: job %s will not fire again: %s; it is applied, and nothing "
		"of it is planned\n",
		s->file ? s->file : "-", s->line, s->col, s->id, what);
	return true;
}
