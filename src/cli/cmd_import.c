/*
 * cmd_import.c - `palisade import crontab|kubernetes`: another scheduler's
 * jobs as a palisade job file (docs/migrating.md).
 *
 * Reads the files (or stdin for "-"), translates them with the importers of
 * src/import/ (pure functions, include/palisade/importer.h), writes the job
 * YAML to stdout and the report of everything not translated exactly to
 * stderr.  Exit status: 0 everything translated exactly, 2 something left
 * out or approximated (each named in the report), 65 input it cannot read,
 * 64 usage.  Never connects to anything.
 */
#include <errno.h>
#include <getopt.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/importer.h"
#include "palisade/tz.h"
#include "palisade/yamltree.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(
	    fp,
	    "usage: palisade import crontab [--system] --prefix NAME --target-url URL\n"
	    "                               [--timezone ZONE] [--cron debian|cronie]\n"
	    "                               [--group NAME] [--mode MODE] FILE|-\n"
	    "       palisade import kubernetes [--prefix NAME] --target-url URL [--timezone ZONE]\n"
	    "                                  [--group NAME] [--mode MODE] FILE...\n"
	    "       palisade import quartz --pg CONNINFO [--sched-name NAME] [--prefix NAME]\n"
	    "                              --target-url URL [--timezone ZONE] [--group NAME]\n"
	    "                              [--mode MODE]\n"
	    "\n"
	    "Translate crontab files, Kubernetes CronJob manifests (batch/v1, batch/v1beta1,\n"
	    "multi-document YAML) or the cron triggers of a Quartz 2.x JDBC job store\n"
	    "(PostgreSQL, read only) into a palisade job file on stdout; every element not\n"
	    "translated exactly is named on stderr with its line or row (docs/migrating.md).\n"
	    "\n"
	    "  --target-url URL  the service every job calls; {job} is replaced by the job id,\n"
	    "                    {digest} by 16 hex digits of the SHA-256 of the source entry\n"
	    "  --timezone ZONE   the zone the old system reads schedules in when the source\n"
	    "                    does not name one (default: UTC, reported as assumed)\n"
	    "  --group NAME      the resource group of every job: the scope to move them by\n"
	    "                    (`palisade cutover --group NAME --at T`)\n"
	    "  --mode MODE       shadow (default): every job is written with `mode: shadow`, so\n"
	    "                    that palisade plans it and calls nothing until a cut-over\n"
	    "                    while the old system still runs it; live: no mode written\n"
	    "  --cron DAEMON     crontab: the cron that ran the file, for CRON_TZ lines:\n"
	    "                    cronie reads the entries after one in its zone; debian\n"
	    "                    (Debian's cron) does not read it: the schedules are in the\n"
	    "                    host's zone (--timezone) and CRON_TZ is passed in `env`.\n"
	    "                    Without it a CRON_TZ line is read as cronie does and named\n"
	    "  --system          crontab: the file has the user column (implied for\n"
	    "                    /etc/crontab and /etc/cron.d/*, also by a relative path)\n"
	    "  --prefix NAME     the first part of every job id, one segment (no '.'): crontab,\n"
	    "                    required: one per host and file (e.g. host-a, host-a-root), so\n"
	    "                    that two hosts' files of one name never share ids;\n"
	    "                    kubernetes: the cluster (ids PREFIX.NAMESPACE.NAME), so that\n"
	    "                    two clusters' CronJobs of one namespace and name never do;\n"
	    "                    quartz: the scheduler (ids PREFIX.GROUP.NAME), so that two\n"
	    "                    schedulers' triggers of one group and name never do;\n"
	    "                    `apply --prune-prefix NAME.` takes that import's jobs only\n"
	    "  --pg CONNINFO     quartz: the PostgreSQL database holding the QRTZ_ tables\n"
	    "  --sched-name NAME quartz: the scheduler (SCHED_NAME) to import; needed when\n"
	    "                    the store holds several\n"
	    "\n"
	    "exit status: 0 all translated exactly, 2 something left out or approximated,\n"
	    "65 unreadable input (or a Quartz store that cannot be read), 64 usage error\n");
}

/* The whole of PATH ("-": stdin) into *BUF; false (message printed) when it
 * cannot be read. */
static bool slurp(const char *path, char **buf, size_t *len)
{
	FILE *fp = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	size_t cap = 65536, n = 0, got;
	char *b;

	if (!fp) {
		pal_cli_err("import", "cannot open %s: %s", path, strerror(errno));
		return false;
	}
	b = malloc(cap);
	while (b && (got = fread(b + n, 1, cap - n, fp)) > 0) {
		n += got;
		if (n > PAL_YAML_MAX_BYTES) {
			pal_cli_err("import", "%s: over %zu bytes", path, PAL_YAML_MAX_BYTES);
			free(b);
			b = NULL;
			break;
		}
		if (n == cap) {
			char *nb = realloc(b, cap *= 2);
			if (!nb)
				free(b);
			b = nb;
		}
	}
	if (b && ferror(fp)) {
		pal_cli_err("import", "cannot read %s: %s", path, strerror(errno));
		free(b);
		b = NULL;
	}
	if (fp != stdin)
		fclose(fp);
	*buf = b;
	*len = n;
	return b != NULL;
}

/* PATH with its directory resolved (realpath) and its own name kept, so a
 * symbolic link in /etc/cron.d stays there; NULL for stdin or a directory
 * that does not resolve (the importer then judges by PATH). */
static char *resolve_dir(const char *path)
{
	if (!strcmp(path, "-"))
		return NULL;
	char *dir = g_path_get_dirname(path), *base = g_path_get_basename(path);
	char *real = realpath(dir, NULL), *out = NULL;
	if (real)
		out = g_build_filename(real, base, NULL);
	free(real);
	g_free(dir);
	g_free(base);
	return out; /* g_free() */
}

/* Where the old system's record of what it fired comes from, for
 * `palisade shadow diff --against` (docs/migrating.md, "Comparing"): one
 * line per kind of source, printed after an import that wrote jobs. */
static const char *record_hint(const char *kind)
{
	if (!strcmp(kind, "crontab"))
		return "each run is a line of the cron daemon's log (`CRON[pid]: (user) CMD "
		       "(command)` in /var/log/syslog or `journalctl -u cron`): its minute is the "
		       "instant, the command (the job's description) names the job";
	if (!strcmp(kind, "kubernetes"))
		return "each Job a CronJob created carries the annotation "
		       "batch.kubernetes.io/cronjob-scheduled-timestamp: `kubectl get jobs -n NS "
		       "-o "
		       "json | jq -r '.items[] | "
		       "\"NS.\\(.metadata.ownerReferences[0].name),\\(.metadata."
		       "annotations[\"batch.kubernetes.io/cronjob-scheduled-timestamp\"])\"'`, NS. "
		       "being the job id's namespace prefix";
	return "QRTZ_FIRED_TRIGGERS keeps only the triggers firing now: log "
	       "JobExecutionContext.getScheduledFireTime() from a JobListener or TriggerListener "
	       "of the application, one line per fire, the job by the id this report and the "
	       "job file give it";
}

/* Print R's report and job file; the exit code. */
static int finish(const char *kind, pal_import_result *r, const pal_import_opts *o, int ec)
{
	fputs(pal_import_report(r), stderr);
	if (ec == PAL_EXIT_OK) {
		fputs(pal_import_yaml(r), stdout);
		if (pal_import_issues(r))
			ec = PAL_EXIT_MISMATCH;
	}
	fprintf(stderr, "palisade import %s: %zu job%s, %zu element%s not translated exactly%s\n",
		kind, pal_import_jobs(r), pal_import_jobs(r) == 1 ? "" : "s", pal_import_issues(r),
		pal_import_issues(r) == 1 ? "" : "s",
		ec == PAL_EXIT_DATAERR ? " (unreadable input: no job file written)" : "");
	if (ec != PAL_EXIT_DATAERR && pal_import_jobs(r) && o->shadow)
		fprintf(
		    stderr,
		    "palisade import %s: every job is in shadow (mode: shadow): `palisade apply`, "
		    "compare with `palisade shadow diff%s%s`, then `palisade cutover %s%s --at T` "
		    "and remove the old entries before T, after their last instant before it "
		    "(docs/migrating.md)\n",
		    kind, o->group ? " --group " : "", o->group ? o->group : "",
		    o->group ? "--group " : "--job ", o->group ? o->group : "ID (each job)");
	if (ec != PAL_EXIT_DATAERR && pal_import_jobs(r))
		fprintf(
		    stderr,
		    "palisade import %s: for `palisade shadow diff --against FILE` (job_id,RFC3339 "
		    "lines, one per instant the old system fired): %s (docs/migrating.md)\n",
		    kind, record_hint(kind));
	pal_import_result_free(r);
	return ec;
}

static int import_quartz(const char *pg, const char *sched, const pal_import_opts *o,
			 const char *extra)
{
	pal_quartz_rows *rows_owner = NULL;
	const pal_quartz_trigger *rows;
	const char *used = NULL;
	pal_import_result *r;
	char err[1024];
	size_t n;
	int rc;

	if (extra) {
		pal_cli_err("import", "quartz takes no files (\"%s\"): it reads --pg", extra);
		return PAL_EXIT_USAGE;
	}
	rc = pal_quartz_read(pg, sched, &rows_owner, &rows, &n, &used, err, sizeof err);
	if (rc) {
		pal_cli_err("import", "%s", err);
		return rc == PAL_EINVAL ? PAL_EXIT_USAGE : PAL_EXIT_DATAERR;
	}
	r = pal_import_result_new();
	if (n && pal_import_quartz(r, used, rows, n, o))
		rc = PAL_EXIT_DATAERR;
	else if (sched && !n)
		pal_cli_err("import", "scheduler \"%s\" has no triggers in the store", sched);
	pal_quartz_free(rows_owner);
	return finish("quartz", r, o, rc ? PAL_EXIT_DATAERR : PAL_EXIT_OK);
}

int pal_cmd_import(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"system", no_argument, NULL, 's'},
	    {"prefix", required_argument, NULL, 'p'},
	    {"target-url", required_argument, NULL, 'u'},
	    {"timezone", required_argument, NULL, 'z'},
	    {"pg", required_argument, NULL, 'g'},
	    {"sched-name", required_argument, NULL, 'n'},
	    {"group", required_argument, NULL, 'G'},
	    {"mode", required_argument, NULL, 'm'},
	    {"cron", required_argument, NULL, 'c'},
	    {NULL, 0, NULL, 0},
	};
	pal_import_opts o = {.now = (int64_t)time(NULL), .shadow = true};
	pal_import_result *r;
	const char *kind;
	char err[256];
	int opt, ec = PAL_EXIT_OK;
	bool crontab, quartz;
	const char *pg = NULL, *sched = NULL;

	optind = 1;
	opterr = 0;
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return PAL_EXIT_OK;
	}
	if (argc < 2 || (strcmp(argv[1], "crontab") && strcmp(argv[1], "kubernetes") &&
			 strcmp(argv[1], "quartz"))) {
		pal_cli_err("import", "expected crontab, kubernetes or quartz%s%s",
			    argc >= 2 ? ", got " : "", argc >= 2 ? argv[1] : "");
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	kind = argv[1];
	crontab = !strcmp(kind, "crontab");
	quartz = !strcmp(kind, "quartz");
	argc--;
	argv++;
	while ((opt = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			o.system = true;
			break;
		case 'p':
			o.prefix = optarg;
			break;
		case 'u':
			o.target_url = optarg;
			break;
		case 'z':
			o.timezone = optarg;
			break;
		case 'g':
			pg = optarg;
			break;
		case 'n':
			sched = optarg;
			break;
		case 'G':
			o.group = optarg;
			break;
		case 'c':
			if (strcmp(optarg, "debian") && strcmp(optarg, "cronie")) {
				pal_cli_err("import", "--cron: expected debian or cronie, got \"%s\"",
					    optarg);
				return PAL_EXIT_USAGE;
			}
			o.cron = optarg;
			break;
		case 'm':
			if (strcmp(optarg, "shadow") && strcmp(optarg, "live")) {
				pal_cli_err("import", "--mode: expected shadow or live, got \"%s\"",
					    optarg);
				return PAL_EXIT_USAGE;
			}
			o.shadow = !strcmp(optarg, "shadow");
			break;
		case 'h':
			usage(stdout);
			return PAL_EXIT_OK;
		default:
			pal_cli_err("import", "unknown option \"%s\"", argv[optind - 1]);
			usage(stderr);
			return PAL_EXIT_USAGE;
		}
	}
	if (pal_import_check_target(o.target_url, err, sizeof err)) {
		pal_cli_err("import", "%s", err);
		return PAL_EXIT_USAGE;
	}
	if (o.prefix && !pal_cli_name("import", "--prefix", o.prefix))
		return PAL_EXIT_USAGE;
	if (o.prefix && strchr(o.prefix, '.')) {
		pal_cli_err("import",
			    "--prefix %s: one segment, without '.' (e.g. host-a-root, not "
			    "host-a.root), so that `apply --prune-prefix` of one import never "
			    "takes another's jobs",
			    o.prefix);
		return PAL_EXIT_USAGE;
	}
	if (o.group && !pal_cli_name("import", "group", o.group))
		return PAL_EXIT_USAGE;
	if (crontab && !o.prefix) {
		pal_cli_err("import",
			    "crontab needs --prefix NAME, the first part of every job id: one per "
			    "host and file (e.g. host-a or host-a-root), so that the same file of "
			    "two hosts does not give the same ids (an import without it used the "
			    "file's name with every run of other characters one '-', `crontab` for "
			    "stdin: give that to keep its ids)");
		return PAL_EXIT_USAGE;
	}
	if (o.timezone) {
		pal_tz *tz = NULL;
		if (pal_tz_open_iana(o.timezone, &tz, err, sizeof err)) {
			pal_cli_err("import", "--timezone: %s", err);
			return PAL_EXIT_USAGE;
		}
		pal_tz_close(tz);
	}
	if (!crontab && (o.system || o.cron)) {
		pal_cli_err("import", "--%s is a crontab option", o.system ? "system" : "cron");
		return PAL_EXIT_USAGE;
	}
	if (quartz != (pg != NULL) || (sched && !quartz)) {
		pal_cli_err("import", quartz ? "quartz needs --pg CONNINFO"
					     : "--pg and --sched-name are quartz options");
		return PAL_EXIT_USAGE;
	}
	if (quartz)
		return import_quartz(pg, sched, &o, optind < argc ? argv[optind] : NULL);
	if (optind >= argc || (crontab && argc - optind > 1)) {
		pal_cli_err("import", crontab ? "give one crontab FILE (or - for stdin)"
					      : "give one or more manifest FILEs");
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	r = pal_import_result_new();
	for (int i = optind; i < argc; i++) {
		char *buf;
		size_t len;
		int rc;
		if (!slurp(argv[i], &buf, &len)) {
			ec = PAL_EXIT_DATAERR;
			continue;
		}
		char *resolved = crontab ? resolve_dir(argv[i]) : NULL;
		o.resolved = resolved;
		rc = crontab ? pal_import_crontab(r, argv[i], buf, len, &o)
			     : pal_import_kubernetes(r, argv[i], buf, len, &o);
		o.resolved = NULL;
		g_free(resolved);
		if (rc)
			ec = PAL_EXIT_DATAERR;
		free(buf);
	}
	return finish(kind, r, &o, ec);
}
