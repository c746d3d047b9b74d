/*
 * retention.h - bounded storage: partition maintenance of triggers and
 * attempts (docs/schema.md, "Retention"; sql/010_partitioning.sql).
 *
 * One round creates the time ranges needed up to now + ahead and drops the
 * ranges that ended more than `keep` ago and hold no live trigger and no
 * trigger a dependent job still reads above its watermark (a range with one
 * is kept and reported, and looked at again next round).  A round
 * runs in one transaction under a cluster-wide advisory lock, so any number
 * of nodes and `palisade retention` runs may call it: one works at a time,
 * the others are told `busy`.
 */
#ifndef PALISADE_RETENTION_H
#define PALISADE_RETENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "palisade/err.h"
#include "palisade/store.h"

/* The longest a round's DDL waits for a lock: below PostgreSQL's default
 * deadlock_timeout (1 s), so that in a deadlock with a transaction that
 * holds one of the tables it locks and wants another (a console page, an
 * API read, a claim), the round's lock_timeout ends its wait before that
 * transaction's deadlock check picks a victim: the round gives way (busy,
 * tried again next round), never the page or the claim.  A migration's
 * tries wait the same way (src/store/migrate.c). */
#define PAL_RETENTION_LOCK_MS 500

typedef struct pal_retention_conf {
	int64_t keep_ms;     /* terminal triggers and their attempts */
	int64_t interval_ms; /* length of a new range */
	int64_t ahead_ms;    /* ranges exist up to now + ahead */
	int64_t lock_ms;     /* longest wait for a DDL lock */
	int64_t misfires_ms; /* misfire records whose range ended this long ago; 0: kept */
	int64_t audit_ms;    /* audit_log rows; 0: kept */
	/* request_ids rows used longer ago than this, but never less than
	 * keep_ms (sql/046_request_ids.sql); 0: kept */
	int64_t request_ids_ms;
	int32_t slice;       /* rows per delete transaction (0: 5000) */
	/* The node's worker only: where its part of the data backfills runs when
	 * its own connection goes through a transaction pooler (the jobs_ref
	 * build holds a session advisory lock across statements):
	 * postgres.direct_conninfo, connected for the round and closed after.
	 * NULL: the worker's own connection. */
	const char *direct_conninfo;
} pal_retention_conf;

typedef struct pal_retention_report {
	int created, dropped, kept, busy;
	int reshaped;          /* empty future ranges of another interval dropped */
	int64_t kept_live;     /* live triggers in the kept ranges */
	int kept_read;         /* kept ranges a dependent job still reads (palisade_partition_readers) */
	char first_reader[256]; /* the first such range's: "JOB decides the instants of UP here above ..." */
	int64_t dropped_bytes; /* what the dropped partitions held */
	char first_kept[128];  /* the oldest kept partition, "" if none */
	int64_t misfires_deleted, audit_deleted; /* pal_store_history_retention */
	int64_t request_ids_deleted;             /* likewise */
	int history_busy;      /* tables whose slice another round held */
	bool history_more;     /* the slice limit stopped it: rows older than the cutoff remain */
	char lines[32768];     /* one line per action (truncated past this), for the log */
} pal_retention_report;

/* Check C (interval >= 1 s, keep >= interval, ahead >= interval, misfires
 * 0 or >= keep); ERR names the problem.  PAL_EINVAL when refused. */
int pal_retention_check(const pal_retention_conf *c, char *err, size_t errlen);

/* One maintenance round; REP filled.  PAL_EDB with ERR on a database error. */
PAL_MUST_CHECK int pal_store_retention(pal_store *st, const pal_retention_conf *c,
				       pal_retention_report *rep, char *err, size_t errlen);

/* The history part of a round (sql/013_history_retention.sql): delete
 * misfire records whose whole range ended more than misfires_ms ago,
 * audit rows older than audit_ms and request ids used before
 * max(request_ids_ms, keep_ms), slice rows per transaction (each slice
 * its own statement, so no transaction holds many row locks or much WAL),
 * until a slice is not full or HISTORY_SLICES_MAX (100) slices per table.
 * Adds the counts and a line per table to REP (not cleared: call it after
 * pal_store_retention).  PAL_EDB with ERR on a database error. */
#define PAL_HISTORY_SLICES_MAX 100
PAL_MUST_CHECK int pal_store_history_retention(pal_store *st, const pal_retention_conf *c,
					       pal_retention_report *rep, char *err, size_t errlen);

/* The horizon: instants before *AT_MS (ms since the epoch) may have lost
 * their trigger (a dropped partition) or their misfire record (deleted);
 * *HAVE is false while neither happened. */
PAL_MUST_CHECK int pal_store_retention_horizon(pal_store *st, bool *have, int64_t *at_ms,
					       char *err, size_t errlen);

/* The node's worker: a thread that runs a round every CHECK_MS on a
 * connection of its own, logs what it did (retention.round; a range kept
 * past retention: retention.kept, a warning) and counts it in M
 * (palisade_retention_*).  Stop with pal_retention_stop (NULL is fine). */
typedef struct pal_retention_worker pal_retention_worker;
struct pal_metrics;
PAL_MUST_CHECK int pal_retention_start(const char *conninfo, const pal_retention_conf *conf,
				       int64_t check_ms, struct pal_metrics *m,
				       pal_retention_worker **out, char *err, size_t errlen);
void pal_retention_stop(pal_retention_worker *w);

/* `palisade retention` (src/cli/cmd_retention.c). */
int pal_cmd_retention(int argc, char **argv);

#endif
