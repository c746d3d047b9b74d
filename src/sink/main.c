/*
 * main.c - bin/palisade-sink: the reference side-effect service
 * (docs/sink.md, docs/protocol.md).
 *
 * Ordered start-up: options -> logging -> signals blocked (before any
 * thread exists, so every thread inherits the mask) -> metrics -> schema
 * (one connection, under the sink's advisory lock) -> connection pool ->
 * effects listener -> admin listener.  The main thread then waits in
 * sigwait(): no signal handler runs and no flag is global.  SIGTERM or
 * SIGINT stops the sink: requests waiting on a pause or a delay are woken,
 * the listeners close their connections and join their threads, the pool
 * closes; exit 0.  A second SIGTERM during that ends the process at once.
 * SIGPIPE is ignored (a client that went away must not kill the sink).
 *
 * Ownership: main() owns the one sink_ctx and everything it points to.
 */
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "palisade/err.h"
#include "palisade/log.h"
#include "sink_int.h"
#include "retention.h"

#define DRAIN_MS 5000 /* grace for requests under way at SIGTERM */

#include "palisade/version.h"

static const char usage_text[] =
    "usage: palisade-sink --listen ADDR [options]\n"
    "\n"
    "The reference side-effect service of palisade: applies effects into\n"
    "PostgreSQL, honouring Idempotency-Key and Palisade-Fencing-Token atomically\n"
    "with the effect.  See docs/sink.md and docs/protocol.md.\n"
    "\n"
    "  --listen ADDR                effects listener, host:port or [v6]:port (required)\n"
    "  --admin ADDR                 admin listener: /admin/stats, /admin/faults,\n"
    "                               /metrics, /healthz (default: none)\n"
    "  --pg CONNINFO                PostgreSQL conninfo (default: $PALISADE_PG)\n"
    "  --threads N                  PostgreSQL connections = transactions at once\n"
    "                               (default 32, 1..256)\n"
    "  --max-connections N          concurrent HTTP connections (default 1000)\n"
    "  --max-connections-per-address N\n"
    "                               of them from one client address (default: all)\n"
    "  --head-timeout-ms N          a request head must be complete within N ms of\n"
    "                               the connection opening (default 10000, 100..600000)\n"
    "  --body-timeout-ms N          and its body within N ms of the head (default 30000,\n"
    "                               100..600000)\n"
    "  --group-max N                apply up to N requests that arrive together in one\n"
    "                               transaction, one COMMIT (default 64, 1..1000;\n"
    "                               1 = one transaction per request)\n"
    "  --group-wait-ms N            wait at most N ms for a group to fill (default 2,\n"
    "                               0..1000)\n"
    "  --group-committers N         group transactions at once (default 4, 1..--threads)\n"
    "  --delay-ms N                 hold each transaction N ms before COMMIT (default 0;\n"
    "                               such a request is applied in its own transaction)\n"
    "  --error-rate R               answer this share 503 before the database (0..1)\n"
    "  --drop-after-commit-rate R   commit, then close without answering (0..1)\n"
    "  --noop                       answer every apply 200 without PostgreSQL\n"
    SINK_RETENTION_USAGE
    "  --log-level LEVEL            debug, info, warn, error (default info)\n"
    "  --migrate-only               apply the sink schema and exit\n"
    "  --print-schema               print the compiled-in schema (sql/sink/*.sql)\n"
    "  --help, --version\n";

enum {
	OPT_LISTEN = 256,
	OPT_ADMIN,
	OPT_PG,
	OPT_THREADS,
	OPT_MAX_CONNS,
	OPT_MAX_CONNS_PER_ADDR,
	OPT_HEAD_TIMEOUT,
	OPT_BODY_TIMEOUT,
	OPT_DELAY,
	OPT_GROUP_MAX,
	OPT_GROUP_WAIT,
	OPT_GROUP_COMMITTERS,
	OPT_ERROR_RATE,
	OPT_DROP_RATE,
	OPT_NOOP,
	OPT_LOG_LEVEL,
	OPT_MIGRATE_ONLY,
	OPT_PRINT_SCHEMA,
	OPT_HELP,
	OPT_VERSION,
};

static const struct option long_opts[] = {
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"admin", required_argument, NULL, OPT_ADMIN},
    {"pg", required_argument, NULL, OPT_PG},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"max-connections", required_argument, NULL, OPT_MAX_CONNS},
    {"max-connections-per-address", required_argument, NULL, OPT_MAX_CONNS_PER_ADDR},
    {"head-timeout-ms", required_argument, NULL, OPT_HEAD_TIMEOUT},
    {"body-timeout-ms", required_argument, NULL, OPT_BODY_TIMEOUT},
    {"delay-ms", required_argument, NULL, OPT_DELAY},
    {"group-max", required_argument, NULL, OPT_GROUP_MAX},
    {"group-wait-ms", required_argument, NULL, OPT_GROUP_WAIT},
    {"group-committers", required_argument, NULL, OPT_GROUP_COMMITTERS},
    {"error-rate", required_argument, NULL, OPT_ERROR_RATE},
    {"drop-after-commit-rate", required_argument, NULL, OPT_DROP_RATE},
    {"noop", no_argument, NULL, OPT_NOOP},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"migrate-only", no_argument, NULL, OPT_MIGRATE_ONLY},
    {"print-schema", no_argument, NULL, OPT_PRINT_SCHEMA},
    SINK_RETENTION_LONGOPTS,
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* Command-line settings beyond sink_opts. */
typedef struct cmdline {
	sink_opts opts;
	sink_faults faults;
	int log_level;
	bool migrate_only;
	bool print_schema;
	sink_retention_opts retention; /* retention.c */
	bool help;
	bool version;
} cmdline;

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "palisade-sink: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\ntry 'palisade-sink --help'\n");
	return PAL_EXIT_USAGE;
}

static bool parse_rate(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (*s == '\0' || *end != '\0' || !isfinite(v) || v < 0 || v > 1)
		return false;
	*out = v;
	return true;
}

/* Returns 0 or an exit code (usage error, message printed). */
static int parse_cmdline(int argc, char **argv, cmdline *cl)
{
	memset(cl, 0, sizeof *cl);
	cl->opts.threads = 32;
	cl->opts.max_conns = 1000;
	cl->opts.max_conns_per_addr = 0; /* as many as --max-connections */
	cl->opts.head_timeout_ms = 10000;
	cl->opts.body_timeout_ms = 30000;
	cl->opts.group_max = 64;
	cl->opts.group_wait_ms = 2;
	cl->opts.group_committers = 4;
	cl->opts.pg = getenv("PALISADE_PG");
	cl->log_level = PAL_LOG_INFO;
	pal__sink_retention_defaults(&cl->retention);
	int64_t v;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_LISTEN:
			cl->opts.listen = optarg;
			break;
		case OPT_ADMIN:
			cl->opts.admin = optarg;
			break;
		case OPT_PG:
			cl->opts.pg = optarg;
			break;
		case OPT_THREADS:
			if (pal__sink_parse_int(optarg, 1, SINK_THREADS_MAX, &v) != PAL_OK)
				return usage_error(
				    "--threads \"%s\": expected an integer in 1..256", optarg);
			cl->opts.threads = (int)v;
			break;
		case OPT_MAX_CONNS:
			if (pal__sink_parse_int(optarg, 1, 100000, &v) != PAL_OK)
				return usage_error(
				    "--max-connections \"%s\": expected an integer in 1..100000",
				    optarg);
			cl->opts.max_conns = (int)v;
			break;
		case OPT_MAX_CONNS_PER_ADDR:
			if (pal__sink_parse_int(optarg, 1, 100000, &v) != PAL_OK)
				return usage_error("--max-connections-per-address \"%s\": expected "
						   "an integer in 1..100000",
						   optarg);
			cl->opts.max_conns_per_addr = (int)v;
			break;
		case OPT_HEAD_TIMEOUT:
			if (pal__sink_parse_int(optarg, 100, 600000, &v) != PAL_OK)
				return usage_error("--head-timeout-ms \"%s\": expected "
						   "milliseconds in 100..600000",
						   optarg);
			cl->opts.head_timeout_ms = (int)v;
			break;
		case OPT_BODY_TIMEOUT:
			if (pal__sink_parse_int(optarg, 100, 600000, &v) != PAL_OK)
				return usage_error(
				    "--body-timeout-ms \"%s\": expected milliseconds in 100..600000",
				    optarg);
			cl->opts.body_timeout_ms = (int)v;
			break;
		case OPT_DELAY:
			if (pal__sink_parse_int(optarg, 0, SINK_DELAY_MAX_MS, &v) != PAL_OK)
				return usage_error(
				    "--delay-ms \"%s\": expected milliseconds in 0..3600000",
				    optarg);
			cl->faults.delay_ms = v;
			break;
		case OPT_GROUP_MAX:
			if (pal__sink_parse_int(optarg, 1, SINK_GROUP_MAX, &v) != PAL_OK)
				return usage_error("--group-max \"%s\": expected an integer in 1..1000",
						   optarg);
			cl->opts.group_max = (int)v;
			break;
		case OPT_GROUP_WAIT:
			if (pal__sink_parse_int(optarg, 0, SINK_GROUP_WAIT_MAX, &v) != PAL_OK)
				return usage_error(
				    "--group-wait-ms \"%s\": expected milliseconds in 0..1000", optarg);
			cl->opts.group_wait_ms = (int)v;
			break;
		case OPT_GROUP_COMMITTERS:
			if (pal__sink_parse_int(optarg, 1, SINK_THREADS_MAX, &v) != PAL_OK)
				return usage_error(
				    "--group-committers \"%s\": expected an integer in 1..256", optarg);
			cl->opts.group_committers = (int)v;
			break;
		case OPT_ERROR_RATE:
			if (!parse_rate(optarg, &cl->faults.error_rate))
				return usage_error("--error-rate \"%s\": expected a number in 0..1",
						   optarg);
			break;
		case OPT_DROP_RATE:
			if (!parse_rate(optarg, &cl->faults.drop_rate))
				return usage_error(
				    "--drop-after-commit-rate \"%s\": expected a number in 0..1",
				    optarg);
			break;
		case OPT_NOOP:
			cl->opts.noop = true;
			break;
		case OPT_LOG_LEVEL:
			cl->log_level = pal_log_level_parse(optarg);
			if (cl->log_level < 0)
				return usage_error(
				    "--log-level \"%s\": expected debug, info, warn or error",
				    optarg);
			break;
		case OPT_MIGRATE_ONLY:
			cl->migrate_only = true;
			break;
		case OPT_PRINT_SCHEMA:
			cl->print_schema = true;
			break;
		case 'h':
		case OPT_HELP:
			cl->help = true;
			break;
		case OPT_VERSION:
			cl->version = true;
			break;
		default:
			if ((v = pal__sink_retention_opt(&cl->retention, c, optarg)) <= 0) {
				if (v < 0)
					return PAL_EXIT_USAGE;
				break;
			}
			return usage_error("unknown or incomplete option \"%s\"", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument \"%s\"", argv[optind]);
	if (cl->help || cl->version || cl->print_schema)
		return 0;
	if (cl->migrate_only && cl->opts.noop)
		return usage_error("%s", "--migrate-only needs PostgreSQL; drop --noop");
	if (cl->retention.once && cl->opts.noop)
		return usage_error("%s", "--retention-once needs PostgreSQL; drop --noop");
	if (cl->opts.listen == NULL && !cl->migrate_only && !cl->retention.once)
		return usage_error("%s", "--listen ADDR is required");
	if (cl->opts.max_conns_per_addr == 0 || cl->opts.max_conns_per_addr > cl->opts.max_conns)
		cl->opts.max_conns_per_addr = cl->opts.max_conns;
	if (cl->opts.group_committers > cl->opts.threads)
		cl->opts.group_committers = cl->opts.threads; /* each needs a connection */
	if (!cl->opts.noop && (cl->opts.pg == NULL || cl->opts.pg[0] == '\0'))
		return usage_error("%s", "no PostgreSQL conninfo: set PALISADE_PG or pass --pg "
					 "(or run with --noop)");
	return 0;
}

static void declare_metrics(pal_metrics *m)
{
	pal_metric_declare(m, SINK_M_REQUESTS, PAL_METRIC_COUNTER,
			   "HTTP requests received on the effects listener.");
	pal_metric_declare(m, SINK_M_OUTCOMES, PAL_METRIC_COUNTER,
			   "Effects-listener requests by outcome (applied counts ledger rows).");
	pal_metric_declare(m, SINK_M_INFLIGHT, PAL_METRIC_GAUGE,
			   "Apply requests being processed (including paused ones).");
	pal_metric_declare(m, SINK_M_FAULT, PAL_METRIC_GAUGE,
			   "Current fault-injection settings (delay_ms, rates, paused).");
	pal_metric_inc(m, SINK_M_REQUESTS, NULL, 0);
	for (size_t i = 0; i < pal__sink_n_outcomes; i++) {
		char labels[64];
		snprintf(labels, sizeof labels, "outcome=\"%s\"", pal__sink_outcomes[i]);
		pal_metric_inc(m, SINK_M_OUTCOMES, labels, 0);
	}
	pal_metric_set(m, SINK_M_INFLIGHT, NULL, 0);
}

/* Apply the sink schema over one fresh connection.  Returns an exit code. */
static int prepare_schema(const char *conninfo)
{
	char err[512];
	PGconn *pg;
	if (pal__sink_connect(conninfo, &pg, err, sizeof err) != PAL_OK) {
		pal_log(PAL_LOG_ERROR, "sink.db_unavailable", "{s:s}", "message", err);
		fprintf(stderr, "palisade-sink: %s\n", err);
		return PAL_EXIT_UNAVAIL;
	}
	int applied = 0;
	int rc = pal__sink_schema_apply(pg, &applied, err, sizeof err);
	PQfinish(pg);
	if (rc != PAL_OK) {
		pal_log(PAL_LOG_ERROR, "sink.schema_failed", "{s:s}", "message", err);
		fprintf(stderr, "palisade-sink: %s\n", err);
		return rc == PAL_ESCHEMA ? PAL_EXIT_SOFTWARE : PAL_EXIT_UNAVAIL;
	}
	pal_log(PAL_LOG_INFO, "sink.schema", "{s:i}", "applied", applied);
	return PAL_EXIT_OK;
}

static int ctx_init(sink_ctx *ctx, const cmdline *cl)
{
	memset(ctx, 0, sizeof *ctx);
	ctx->opts = cl->opts;
	ctx->faults = cl->faults;
	pthread_mutex_init(&ctx->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* faults.c sleeps on it */
	pthread_cond_init(&ctx->cv, &ca);
	pthread_condattr_destroy(&ca);
	pal__sink_inflight_init(ctx);
	ctx->metrics = pal_metrics_new();
	if (ctx->metrics == NULL)
		return PAL_ENOMEM;
	declare_metrics(ctx->metrics);
	pal__sink_faults_publish(ctx, &ctx->faults);
	return PAL_OK;
}

/* Reverse of start-up; safe on a partly started context. */
static void ctx_stop(sink_ctx *ctx)
{
	pthread_mutex_lock(&ctx->mu);
	ctx->stopping = true;
	pthread_cond_broadcast(&ctx->cv);
	pthread_mutex_unlock(&ctx->mu);
	pal__sink_pool_interrupt(ctx->pool);
	/* every blocking point (pause, delay, pool) now returns at once: let the
	 * requests under way send their answers before connections are closed */
	pal__sink_listener_drain(ctx->admin, 0);
	pal__sink_listener_drain(ctx->http, DRAIN_MS);
	pal__sink_listener_stop(ctx->http);
	pal__sink_listener_stop(ctx->admin);
	ctx->http = ctx->admin = NULL;
	pal__sink_group_stop(ctx->group); /* no request waits on it any more */
	ctx->group = NULL;
	pal__sink_pool_free(ctx->pool);
	ctx->pool = NULL;
}

static void ctx_free(sink_ctx *ctx)
{
	pal_metrics_free(ctx->metrics);
	pal__sink_inflight_free(ctx);
	pthread_cond_destroy(&ctx->cv);
	pthread_mutex_destroy(&ctx->mu);
}

static json_t *final_counts(pal_metrics *m)
{
	static const char *const shown[] = {
	    "applied",	   "replayed",	       "stale",
	    "in_progress", "payload_mismatch", "dropped_after_commit",
	    "db_errors",   "commit_unknown"};
	json_t *j = json_object();
	json_object_set_new(j, "requests",
			    json_integer((json_int_t)pal_metric_get(m, SINK_M_REQUESTS, NULL)));
	for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
		char labels[64];
		snprintf(labels, sizeof labels, "outcome=\"%s\"", shown[i]);
		json_object_set_new(
		    j, shown[i],
		    json_integer((json_int_t)pal_metric_get(m, SINK_M_OUTCOMES, labels)));
	}
	return j;
}

/* Start pool and listeners, then wait for a stop signal.  Returns an exit code. */
static int run(sink_ctx *ctx, const sigset_t *stop_set)
{
	char err[512];
	if (!ctx->opts.noop &&
	    pal__sink_pool_new(ctx->opts.pg, ctx->opts.threads, &ctx->pool) != PAL_OK) {
		fprintf(stderr, "palisade-sink: out of memory\n");
		return PAL_EXIT_SOFTWARE;
	}
	if (!ctx->opts.noop && ctx->opts.group_max > 1 &&
	    pal__sink_group_start(ctx, ctx->opts.group_max, ctx->opts.group_wait_ms,
				  ctx->opts.group_committers, &ctx->group) != PAL_OK) {
		fprintf(stderr, "palisade-sink: out of memory\n");
		return PAL_EXIT_SOFTWARE;
	}
	if (pal__sink_listener_start(ctx, ctx->opts.listen, false, &ctx->http, err, sizeof err) !=
		PAL_OK ||
	    (ctx->opts.admin != NULL &&
	     pal__sink_listener_start(ctx, ctx->opts.admin, true, &ctx->admin, err, sizeof err) !=
		 PAL_OK)) {
		pal_log(PAL_LOG_ERROR, "sink.listen_failed", "{s:s}", "message", err);
		fprintf(stderr, "palisade-sink: %s\n", err);
		return PAL_EXIT_UNAVAIL;
	}
	pal_log(PAL_LOG_INFO, "sink.started",
		"{s:s, s:i, s:s?, s:i, s:i, s:i, s:i, s:i, s:b, s:I, s:f, s:f}", "listen",
		ctx->opts.listen, "port", pal__sink_listener_port(ctx->http), "admin",
		ctx->opts.admin, "admin_port", pal__sink_listener_port(ctx->admin), "threads",
		ctx->opts.threads, "group_max", ctx->opts.group_max, "group_wait_ms",
		ctx->opts.group_wait_ms, "group_committers", ctx->opts.group_committers, "noop",
		ctx->opts.noop, "delay_ms",
		(json_int_t)ctx->faults.delay_ms, "error_rate", ctx->faults.error_rate,
		"drop_after_commit_rate", ctx->faults.drop_rate);

	for (;;) {
		int sig = 0;
		if (sigwait(stop_set, &sig) != 0)
			continue;
		if (sig == SIGHUP) {
			pal_log(PAL_LOG_INFO, "sink.sighup_ignored", NULL);
			continue;
		}
		pal_log(PAL_LOG_INFO, "sink.stopping", "{s:s}", "signal", strsignal(sig));
		break;
	}
	/* a second SIGTERM while stopping ends the process (default action) */
	signal(SIGTERM, SIG_DFL);
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	pthread_sigmask(SIG_UNBLOCK, &term, NULL);
	return PAL_EXIT_OK;
}

int main(int argc, char **argv)
{
	cmdline cl;
	int rc = parse_cmdline(argc, argv, &cl);
	if (rc != 0)
		return rc;
	if (cl.help) {
		fputs(usage_text, stdout);
		return PAL_EXIT_OK;
	}
	if (cl.version) {
		printf("palisade-sink %s\n", PALISADE_VERSION);
		return PAL_EXIT_OK;
	}
	if (cl.print_schema) {
		pal__sink_schema_print();
		return PAL_EXIT_OK;
	}
	pal_log_init("sink", (pal_log_level)cl.log_level);

	signal(SIGPIPE, SIG_IGN);
	sigset_t stop_set;
	sigemptyset(&stop_set);
	sigaddset(&stop_set, SIGTERM);
	sigaddset(&stop_set, SIGINT);
	sigaddset(&stop_set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop_set, NULL);

	if (!cl.opts.noop) {
		rc = prepare_schema(cl.opts.pg);
		if (rc != PAL_EXIT_OK || cl.migrate_only)
			return rc;
		if (cl.retention.once)
			return pal__sink_retention_once(cl.opts.pg, &cl.retention);
	}
	sink_ctx ctx;
	if (ctx_init(&ctx, &cl) != PAL_OK) {
		fprintf(stderr, "palisade-sink: out of memory\n");
		return PAL_EXIT_SOFTWARE;
	}
	sink_retention *ret = NULL;
	if (!cl.opts.noop &&
	    pal__sink_retention_start(cl.opts.pg, &cl.retention, ctx.metrics, &ret) != PAL_OK)
		pal_log(PAL_LOG_WARN, "sink.retention_failed", "{s:s}", "message",
			"cannot start the key retention thread");
	rc = run(&ctx, &stop_set);
	pal__sink_retention_stop(ret);
	ctx_stop(&ctx);
	json_t *counts = final_counts(ctx.metrics);
	pal_log(PAL_LOG_INFO, "sink.stopped", "{s:o}", "counts", counts);
	ctx_free(&ctx);
	return rc;
}
