/*
 * cmd_retention.c - `palisade retention`: one round of retention by hand
 * (nodes run one every retention.check_interval): partition maintenance of
 * triggers and attempts, then slices of misfires and audit_log; or the
 * retention horizon alone (--horizon).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/nodeconf.h"
#include "palisade/retention.h"
#include "palisade/timefmt.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade retention [--keep DUR] [--interval DUR] [--ahead DUR]\n"
		"                          [--misfires DUR] [--audit DUR] [--horizon]\n"
		"                          [--pg CONNINFO] [--config FILE]\n"
		"One round of retention.  Partition maintenance of triggers and attempts:\n"
		"create the time ranges up to now + ahead, drop the ranges that ended more\n"
		"than keep ago and hold no live trigger (a range with one is kept and listed)\n"
		"and no trigger a dependent job (after:) still reads above its watermark (kept\n"
		"and listed with the job).  Misfire records such a job still reads are kept too.\n"
		"Then delete, in slices of retention.delete_slice rows, the misfire records\n"
		"whose whole range ended more than --misfires ago and the audit_log rows\n"
		"older than --audit (0: keep them).  Defaults: the config's\n"
		"retention.triggers, partition_interval, ahead, misfires, audit.\n"
		"Rounds never overlap: a round that finds another running prints 'busy'.\n"
		"--horizon prints the retention horizon only (instants before it may be gone).\n"
		"Exit: 0 done (also busy), 64 usage, 65 invalid config, 69 database unreachable.\n");
}

static bool dur(const char *name, const char *arg, int64_t *out)
{
	if (pal_parse_duration_ms(arg, out) || *out < 0) {
		fprintf(stderr, "palisade retention: --%s: not a duration: %s\n", name, arg);
		return false;
	}
	return true;
}

/* A round of retention with CONF into *REP, or (CONF NULL) the horizon
 * into *HAVE and *AT. */
struct retention_args {
	const pal_retention_conf *conf;
	pal_retention_report *rep;
	bool *have;
	int64_t *at;
};

static int retention_call(pal_store *st, const void *ctx, json_t **out, char *err, size_t errlen)
{
	const struct retention_args *a = ctx;
	int rc = a->conf ? pal_store_retention(st, a->conf, a->rep, err, errlen)
			 : pal_store_retention_horizon(st, a->have, a->at, err, errlen);
	if (!rc && a->conf)
		rc = pal_store_history_retention(st, a->conf, a->rep, err, errlen);
	/* exit 69 for any failure: the conf was checked before connecting */
	return rc ? PAL_EDB : PAL_OK;
}

int pal_cmd_retention(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "keep", required_argument, NULL, 'k' }, { "interval", required_argument, NULL, 'i' },
		{ "ahead", required_argument, NULL, 'a' }, { "horizon", no_argument, NULL, 'H' },
		{ "misfires", required_argument, NULL, 'm' }, { "audit", required_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' }, PAL_CLI_COMMON_LONGOPTS, { 0 }
	};
	pal_cli_common c = { 0 };
	int64_t keep = -1, iv = -1, ahead = -1, mis = -1, aud = -1;
	bool horizon = false;
	int opt, ec;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'k':
			if (!dur("keep", optarg, &keep))
				return PAL_EXIT_USAGE;
			break;
		case 'i':
			if (!dur("interval", optarg, &iv))
				return PAL_EXIT_USAGE;
			break;
		case 'a':
			if (!dur("ahead", optarg, &ahead))
				return PAL_EXIT_USAGE;
			break;
		case 'm':
			if (!dur("misfires", optarg, &mis))
				return PAL_EXIT_USAGE;
			break;
		case 'u':
			if (!dur("audit", optarg, &aud))
				return PAL_EXIT_USAGE;
			break;
		case 'H':
			horizon = true;
			break;
		default:
			if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0)
				return ec;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	pal_nodeconf nc;
	pal_diags d = { 0 };
	if (c.config ? pal_nodeconf_load(c.config, &nc, &d) : pal_nodeconf_defaults(&nc)) {
		pal_diags_print(&d, stderr);
		pal_diags_free(&d);
		return PAL_EXIT_DATAERR;
	}
	pal_diags_free(&d);
	pal_retention_conf rc = {
		.keep_ms = keep >= 0 ? keep : nc.retention_keep_ms,
		.interval_ms = iv >= 0 ? iv : nc.retention_interval_ms,
		.ahead_ms = ahead >= 0 ? ahead : nc.retention_ahead_ms,
		.lock_ms = PAL_RETENTION_LOCK_MS,
		.misfires_ms = mis >= 0 ? mis : nc.retention_misfires_ms,
		.audit_ms = aud >= 0 ? aud : nc.retention_audit_ms,
		.request_ids_ms = nc.retention_request_ids_ms,
		.slice = nc.retention_slice,
	};
	pal_nodeconf_free(&nc);
	char err[1024];
	if (!horizon && pal_retention_check(&rc, err, sizeof err)) {
		pal_cli_err("retention", "%s", err);
		return PAL_EXIT_USAGE;
	}
	bool have;
	int64_t at;
	pal_retention_report rep;
	struct retention_args ra = {horizon ? NULL : &rc, &rep, &have, &at};
	if ((ec = pal_cli_store_call(&c, "retention", retention_call, &ra, NULL)))
		return ec;
	if (horizon) {
		char buf[64];
		if (have)
			pal_fmt_rfc3339(at / 1000, buf, sizeof buf);
		printf("%s\n", have ? buf : "none (nothing dropped yet)");
		return PAL_EXIT_OK;
	}
	fputs(rep.lines, stdout);
	char readers[64] = "";
	if (rep.kept_read)
		snprintf(readers, sizeof readers, ", %d read by dependent jobs", rep.kept_read);
	printf("retention: %d created, %d dropped (%lld bytes), %d kept (%lld live triggers%s), "
	       "%d busy, %d reshaped, %lld misfires and %lld audit rows deleted\n", rep.created,
	       rep.dropped, (long long)rep.dropped_bytes, rep.kept, (long long)rep.kept_live, readers,
	       rep.busy + rep.history_busy, rep.reshaped, (long long)rep.misfires_deleted,
	       (long long)rep.audit_deleted);
	return PAL_EXIT_OK;
}
