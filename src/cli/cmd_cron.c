/*
 * cmd_cron.c - `palisade cron next EXPR`: preview the fire instants of a cron
 * expression in a time zone under a DST policy (docs/cron.md).
 *
 * Pure computation: no cluster, no configuration.  Prints one RFC 3339 UTC
 * instant per line; the exit code says whether the expression, the zone and
 * the options were valid (65 for a bad expression or zone, 64 for bad usage).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "palisade/cli.h"
#include "palisade/cron.h"
#include "palisade/err.h"
#include "palisade/timefmt.h"
#include "palisade/tz.h"

#define COUNT_MAX 1000000
#define HINT "usage: palisade cron next EXPR [--tz ZONE] [--from RFC3339] [--count N] [--dst POLICY]\n" \
	     "'palisade cron --help' says more.\n"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade cron next EXPR [--tz ZONE] [--from RFC3339] [--count N] [--dst POLICY]\n"
		"\n"
		"Print the next N fire instants of cron expression EXPR strictly after --from,\n"
		"one per line, as RFC 3339 UTC instants.  Stops early when there are no more\n"
		"(the search ends with the year 2099).\n"
		"\n"
		"  EXPR            5 fields (min hour dom month dow), 6-7 Quartz fields\n"
		"                  (sec min hour dom month dow [year]) or a macro (@daily, ...);\n"
		"                  quote it\n"
		"  --tz ZONE       IANA time zone the expression is read in (default UTC)\n"
		"  --from TIME     RFC 3339 instant to start after (default now)\n"
		"  --count N       number of instants, 1-%d (default 5)\n"
		"  --dst POLICY    auto (default) or gap=shift|skip,overlap=first|last|both\n"
		"  -h, --help      this text\n"
		"\n"
		"Exit status: 0 ok, 64 bad usage, 65 invalid expression or unknown zone.\n"
		"See docs/cron.md.\n",
		COUNT_MAX);
}

/*
 * Prints EXPR and a caret line under field FIELD (1-based) to stderr, so the
 * operator sees which field the parser rejected.  Nothing for field 0.
 */
static void point_at_field(const char *expr, int field)
{
	if (field < 1)
		return;
	const char *p = expr, *start = NULL;
	size_t len = 0;
	for (int i = 1; *p; i++) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		const char *f = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		if (i == field) {
			start = f;
			len = (size_t)(p - f);
			break;
		}
	}
	if (!start || strchr(expr, '\n'))
		return;
	fprintf(stderr, "  %s\n  %*s", expr, (int)(start - expr), "");
	for (size_t i = 0; i < len; i++)
		fputc('^', stderr);
	fputc('\n', stderr);
}

static int parse_count(const char *s, long *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < 1 || v > COUNT_MAX)
		return PAL_EINVAL;
	*out = v;
	return PAL_OK;
}

int pal_cmd_cron(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "tz", required_argument, NULL, 'z' },	   { "from", required_argument, NULL, 'f' },
		{ "count", required_argument, NULL, 'n' }, { "dst", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },	   { NULL, 0, NULL, 0 },
	};
	const char *zone = "UTC", *from_s = NULL, *dst_s = "auto";
	long count = 5;
	int opt;
	char err[512];

	optind = 0; /* GNU getopt: full re-initialisation */
	opterr = 0; /* our own messages, prefixed like every other one */
	while ((opt = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		switch (opt) {
		case 'z': zone = optarg; break;
		case 'f': from_s = optarg; break;
		case 'n':
			if (parse_count(optarg, &count)) {
				fprintf(stderr, "palisade cron: invalid --count \"%s\" (expected 1-%d)\n",
					optarg, COUNT_MAX);
				return PAL_EXIT_USAGE;
			}
			break;
		case 'd': dst_s = optarg; break;
		case 'h': usage(stdout); return PAL_EXIT_OK;
		case ':':
			fprintf(stderr, "palisade cron: option \"%s\" needs a value\n%s", argv[optind - 1],
				HINT);
			return PAL_EXIT_USAGE;
		default:
			fprintf(stderr, "palisade cron: unknown option \"%s\"\n%s", argv[optind - 1], HINT);
			return PAL_EXIT_USAGE;
		}
	}
	if (argc - optind != 2 || strcmp(argv[optind], "next")) {
		if (argc - optind >= 1 && strcmp(argv[optind], "next"))
			fprintf(stderr, "palisade cron: unknown subcommand \"%s\" (expected next)\n",
				argv[optind]);
		else
			fprintf(stderr, "palisade cron next: expected exactly one EXPR (quote it)\n");
		fputs(HINT, stderr);
		return PAL_EXIT_USAGE;
	}
	const char *expr = argv[optind + 1];

	pal_dst_policy dst;
	if (pal_dst_policy_parse(dst_s, &dst, err, sizeof err)) {
		fprintf(stderr, "palisade cron: --dst: %s\n", err);
		return PAL_EXIT_USAGE;
	}
	int64_t from;
	if (from_s) {
		if (pal_parse_rfc3339(from_s, &from)) {
			fprintf(stderr,
				"palisade cron: invalid --from \"%s\" (expected RFC 3339, e.g. "
				"2026-03-29T00:00:00Z)\n",
				from_s);
			return PAL_EXIT_USAGE;
		}
	} else {
		from = (int64_t)time(NULL);
	}

	pal_tz *tz = NULL;
	if (pal_tz_open(zone, &tz, err, sizeof err)) {
		fprintf(stderr, "palisade cron: %s\n", err);
		return PAL_EXIT_DATAERR;
	}
	pal_cron *c = NULL;
	int field = 0;
	if (pal_cron_parse(expr, &c, err, sizeof err, &field)) {
		fprintf(stderr, "palisade cron: invalid cron expression: %s\n", err);
		point_at_field(expr, field);
		pal_tz_close(tz);
		return PAL_EXIT_DATAERR;
	}

	int64_t t = from;
	char buf[32];
	for (long i = 0; i < count; i++) {
		int64_t next;
		if (pal_cron_next(c, tz, dst, t, &next)) {
			pal_fmt_rfc3339(t, buf, sizeof buf);
			fprintf(stderr, "palisade cron: no fire instant after %s (searched through 2099)\n",
				buf);
			break;
		}
		pal_fmt_rfc3339(next, buf, sizeof buf);
		puts(buf);
		t = next;
	}
	pal_cron_free(c);
	pal_tz_close(tz);
	if (fflush(stdout)) {
		perror("palisade cron: stdout");
		return PAL_EXIT_FAIL;
	}
	return PAL_EXIT_OK;
}
