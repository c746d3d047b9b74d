/*
 * retention.h - the sink's key retention (src/sink/retention.c): the key
 * rows and ledger rows of keys whose last request is older than
 * --key-retention are deleted in bounded slices by a thread of the sink, or
 * once by `palisade-sink --retention-once`; each pass first moves the keys
 * of the tables of before sink schema 6 into the new ones.
 */
#ifndef PALISADE_SINK_RETENTION_H
#define PALISADE_SINK_RETENTION_H

#include <stdbool.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/metrics.h"

/* The floor of --key-retention: the sink refuses to start below it. */
#define SINK_KEY_RETENTION_MIN_MS (24LL * 3600 * 1000)
#define SINK_KEY_RETENTION_DEFAULT "7d"

typedef struct sink_retention_opts {
	int64_t keep_ms;     /* --key-retention; 0 = keep every key forever */
	int64_t interval_ms; /* --retention-interval: between passes */
	int slice;	     /* --retention-slice: keys per transaction */
	bool once;	     /* --retention-once: one pass, then exit */
} sink_retention_opts;

/* Option ids (above main.c's) and their long options, for getopt_long. */
enum {
	SINK_OPT_KEY_RETENTION = 512,
	SINK_OPT_RETENTION_INTERVAL,
	SINK_OPT_RETENTION_SLICE,
	SINK_OPT_RETENTION_ONCE,
};
#define SINK_RETENTION_LONGOPTS                                                                    \
	{"key-retention", required_argument, NULL, SINK_OPT_KEY_RETENTION},                        \
	    {"retention-interval", required_argument, NULL, SINK_OPT_RETENTION_INTERVAL},          \
	    {"retention-slice", required_argument, NULL, SINK_OPT_RETENTION_SLICE},                \
	{                                                                                          \
		"retention-once", no_argument, NULL, SINK_OPT_RETENTION_ONCE                       \
	}
#define SINK_RETENTION_USAGE                                                                       \
	"  --key-retention DUR          forget a key (fence, effect, ledger rows) once its\n"      \
	"                               last request is older (default 7d, at least 1d;\n"         \
	"                               0 = keep forever); must exceed every job's retry\n"        \
	"                               and catch-up horizon (palisade's sink.key_retention)\n"    \
	"  --retention-interval DUR     between two retention passes (default 1m)\n"               \
	"  --retention-slice N          keys deleted per transaction (default 1000)\n"             \
	"  --retention-once             apply the schema, run one full retention pass, exit\n"

/* Defaults into O. */
void pal__sink_retention_defaults(sink_retention_opts *o);
/* Parse option OPT (one of SINK_OPT_*) with ARG into O.  Returns 1 when
 * OPT is not a retention option, 0 when parsed, -1 when ARG is invalid
 * (message on stderr). */
int pal__sink_retention_opt(sink_retention_opts *o, int opt, const char *arg);

/* One full pass on a fresh connection to CONNINFO: the keys of the tables
 * of before sink schema 6 adopted, then (keep_ms above 0) slices until one
 * is not full.  Counts into *KEYS (sink_keys rows deleted), *ADOPTED,
 * *LEDGER (sink_applies rows deleted).  PAL_EDB with ERR on failure. */
PAL_MUST_CHECK int pal__sink_retention_pass(const char *conninfo, const sink_retention_opts *o,
					    int64_t *keys, int64_t *adopted, int64_t *ledger,
					    char *err, size_t errlen);

/* --retention-once: one pass, its counts on stdout and in the log
 * (sink.retention); returns an exit code (0, or 69 when PostgreSQL fails). */
int pal__sink_retention_once(const char *conninfo, const sink_retention_opts *o);

/* The periodic pass: a thread with a connection of its own, one pass every
 * interval_ms, logged (sink.retention) and counted in M
 * (palisade_sink_retention_deleted_total{table=...}).  Nothing is started
 * when keep_ms is 0 (*OUT = NULL).  Stop with pal__sink_retention_stop
 * (NULL is fine), which waits for a slice under way. */
typedef struct sink_retention sink_retention;
PAL_MUST_CHECK int pal__sink_retention_start(const char *conninfo, const sink_retention_opts *o,
					     pal_metrics *m, sink_retention **out);
void pal__sink_retention_stop(sink_retention *r);

#endif
