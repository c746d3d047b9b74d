/*
 * cmd_cron.c - `palisade cron next EXPR`: preview the fire instants of a cron
 * expression in a time zone under a DST policy (docs/cron.md); `palisade cron
 * batch`: the same for many cases read from stdin, one process for all of
 * them (the cron reference comparison runs thousands).
 *
 * Pure computation: no cluster, no configuration.  `next` prints one RFC 3339
 * UTC instant per line; the exit code says whether the expression, the zone
 * and the options were valid (65 for a bad expression or zone, 64 for bad
 * usage).  `batch` prints one line per case, its own exit code first.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "palisade/cli.h"
#include "palisade/cron.h"
#include "palisade/err.h"
#include "palisade/schedule.h"
#include "palisade/timefmt.h"
#include "palisade/tz.h"

#define COUNT_MAX 1000000
#define HINT "usage: palisade cron next EXPR [--tz ZONE] [--from RFC3339] [--count N] [--dst POLICY]\n" \
	     "                          [--job ID]\n" \
	     "       palisade cron batch <CASES\n" \
	     "'palisade cron --help' says more.\n"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade cron next EXPR [--tz ZONE] [--from RFC3339] [--count N] [--dst POLICY]\n"
		"                          [--job ID]\n"
		"       palisade cron batch <CASES\n"
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
		"  --job ID        resolve Jenkins' H in EXPR as for the job ID (required\n"
		"                  when EXPR has H); the resolved expression goes to stderr\n"
		"  -h, --help      this text\n"
		"\n"
		"Exit status: 0 ok, 64 bad usage, 65 invalid expression or unknown zone.\n"
		"\n"
		"batch reads one case per line from stdin, five tab-separated fields\n"
		"EXPR, ZONE, FROM, COUNT and DST (as the options of next; FROM is required),\n"
		"and prints one line per case: the exit code next would give, then the\n"
		"instants separated by spaces (0) or the message (64, 65).  It exits 0\n"
		"once every line is answered, whatever the cases' codes.\n"
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

/*
 * Opens ZONE and parses EXPR for one case.  Returns PAL_EXIT_OK with *tz and
 * *c set (the caller frees them with pal_tz_close() and pal_cron_free()), or
 * PAL_EXIT_DATAERR with the message in ERR, *field the rejected field (0 when
 * none) and nothing to free.
 */
static int cron_open(const char *expr, const char *zone, pal_tz **tz, pal_cron **c, char *err,
		     size_t errlen, int *field)
{
	char why[448];
	*field = 0;
	if (pal_tz_open_iana(zone, tz, why, sizeof why)) {
		snprintf(err, errlen, "%s", why);
		return PAL_EXIT_DATAERR;
	}
	if (pal_cron_parse(expr, c, why, sizeof why, field)) {
		snprintf(err, errlen, "invalid cron expression: %s", why);
		pal_tz_close(*tz);
		*tz = NULL;
		return PAL_EXIT_DATAERR;
	}
	return PAL_EXIT_OK;
}

/*
 * Prints up to COUNT instants of C strictly after FROM to stdout: with SEP
 * '\n' one per line (next), with SEP ' ' each after a space (a batch line,
 * after its code).  Returns false when the instants ran out first; *last is
 * the instant the search went on from.
 */
static bool cron_print(const pal_cron *c, const pal_tz *tz, pal_dst_policy dst, int64_t from,
		       long count, char sep, int64_t *last)
{
	char buf[32];
	int64_t t = from;
	for (long i = 0; i < count; i++) {
		int64_t next;
		if (pal_cron_next(c, tz, dst, t, &next)) {
			*last = t;
			return false;
		}
		pal_fmt_rfc3339(next, buf, sizeof buf);
		if (sep == ' ')
			putchar(' ');
		fputs(buf, stdout);
		if (sep == '\n')
			putchar('\n');
		t = next;
	}
	*last = t;
	return true;
}

/*
 * Answers one batch line (tab-separated EXPR, ZONE, FROM, COUNT, DST; the
 * line is modified) with one output line: "0 T1 T2 ..." or "CODE message".
 */
static void cron_batch_line(char *line, long lineno)
{
	char *f[5], *save = NULL, err[512];
	int n = 0;
	for (char *tok = strtok_r(line, "\t", &save); tok; tok = strtok_r(NULL, "\t", &save)) {
		if (n < 5)
			f[n] = tok;
		n++;
	}
	if (n != 5) {
		printf("%d line %ld: expected 5 tab-separated fields (EXPR ZONE FROM COUNT DST), got %d\n",
		       PAL_EXIT_USAGE, lineno, n);
		return;
	}
	int64_t from;
	long count;
	pal_dst_policy dst;
	if (pal_parse_rfc3339(f[2], &from)) {
		printf("%d line %ld: invalid FROM \"%s\" (expected RFC 3339)\n", PAL_EXIT_USAGE, lineno, f[2]);
		return;
	}
	if (parse_count(f[3], &count)) {
		printf("%d line %ld: invalid COUNT \"%s\" (expected 1-%d)\n", PAL_EXIT_USAGE, lineno, f[3],
		       COUNT_MAX);
		return;
	}
	if (pal_dst_policy_parse(f[4], &dst, err, sizeof err)) {
		printf("%d line %ld: DST: %s\n", PAL_EXIT_USAGE, lineno, err);
		return;
	}
	pal_tz *tz;
	pal_cron *c;
	int field;
	if (cron_open(f[0], f[1], &tz, &c, err, sizeof err, &field)) {
		printf("%d %s\n", PAL_EXIT_DATAERR, err);
		return;
	}
	int64_t last;
	printf("%d", PAL_EXIT_OK);
	(void)cron_print(c, tz, dst, from, count, ' ', &last);
	putchar('\n');
	pal_cron_free(c);
	pal_tz_close(tz);
}

/* `palisade cron batch`: every line of stdin answered, in order. */
static int cron_batch(void)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	long lineno = 0;
	while ((len = getline(&line, &cap, stdin)) >= 0) {
		lineno++;
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		cron_batch_line(line, lineno);
	}
	free(line);
	if (ferror(stdin)) {
		perror("palisade cron batch: stdin");
		return PAL_EXIT_FAIL;
	}
	if (fflush(stdout)) {
		perror("palisade cron batch: stdout");
		return PAL_EXIT_FAIL;
	}
	return PAL_EXIT_OK;
}

int pal_cmd_cron(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "tz", required_argument, NULL, 'z' },	   { "from", required_argument, NULL, 'f' },
		{ "count", required_argument, NULL, 'n' }, { "dst", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },	   { "job", required_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	const char *zone = "UTC", *from_s = NULL, *dst_s = "auto", *job = NULL;
	long count = 5;
	int opt, opts = 0;
	char err[512];

	optind = 0; /* GNU getopt: full re-initialisation */
	opterr = 0; /* our own messages, prefixed like every other one */
	while ((opt = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		opts++;
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
		case 'j': job = optarg; break;
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
	if (argc - optind == 1 && !strcmp(argv[optind], "batch")) {
		if (opts) {
			fprintf(stderr, "palisade cron batch: takes no options (each line names its own)\n%s",
				HINT);
			return PAL_EXIT_USAGE;
		}
		return cron_batch();
	}
	if (argc - optind != 2 || strcmp(argv[optind], "next")) {
		if (argc - optind >= 1 && strcmp(argv[optind], "next") && strcmp(argv[optind], "batch"))
			fprintf(stderr, "palisade cron: unknown subcommand \"%s\" (expected next or batch)\n",
				argv[optind]);
		else if (argc - optind >= 1 && !strcmp(argv[optind], "batch"))
			fprintf(stderr, "palisade cron batch: takes no arguments (it reads stdin)\n");
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

	/* Jenkins' H: resolved per job, as the job file's loader and apply do */
	char *resolved = NULL;
	if (pal_cron_resolve_hash(expr, job ? job : "", &resolved, err, sizeof err)) {
		fprintf(stderr, "palisade cron: invalid cron expression: %s\n", err);
		return PAL_EXIT_DATAERR;
	}
	if (strcmp(resolved, expr)) {
		if (!job) {
			fprintf(stderr, "palisade cron: the expression has H, which depends on the "
					"job; hint: give --job ID\n");
			free(resolved);
			return PAL_EXIT_USAGE;
		}
		fprintf(stderr, "palisade cron: H for job %s: %s\n", job, resolved);
		expr = resolved;
	}


	pal_tz *tz = NULL;
	pal_cron *c = NULL;
	int field, rc = cron_open(expr, zone, &tz, &c, err, sizeof err, &field);
	if (rc) {
		fprintf(stderr, "palisade cron: %s\n", err);
		point_at_field(expr, field);
		free(resolved);
		return rc;
	}
	int64_t last;
	if (!cron_print(c, tz, dst, from, count, '\n', &last)) {
		char buf[32];
		pal_fmt_rfc3339(last, buf, sizeof buf);
		fprintf(stderr, "palisade cron: no fire instant after %s (searched through 2099)\n", buf);
	}
	pal_cron_free(c);
	pal_tz_close(tz);
	free(resolved);
	if (fflush(stdout)) {
		perror("palisade cron: stdout");
		return PAL_EXIT_FAIL;
	}
	return PAL_EXIT_OK;
}
