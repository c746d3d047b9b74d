/*
 * log.h - structured logs: one JSON object per line on stdout
 * (journald-friendly), never secrets.
 *
 *   pal_log(PAL_LOG_INFO, "election.won", "{s:i, s:I}", "shard", 3, "epoch", e);
 * prints
 *   {"ts":"2026-11-30T08:00:00.123Z","level":"info","node":"n1",
 *    "event":"election.won","shard":3,"epoch":4294967299}
 *
 * FMT is a jansson json_pack() format for an object (NULL for no fields).
 * The logger is process-wide (one stdout), thread-safe, and each line is
 * written with a single write(2) so lines of threads never interleave.
 *
 * A format that jansson rejects (syntax, a NULL "s" argument, invalid UTF-8,
 * not an object) never crashes: the line is still written with the standard
 * keys and a "log_error" field naming the problem.  A field whose key is one
 * of ts, level, node, event is written as "field_<key>" so it cannot forge
 * them.  Arguments must still match the format's types (C cannot check that).
 * An "o" argument's reference is stolen even when the level is filtered out.
 * Writing to a closed pipe raises SIGPIPE: the daemon ignores that signal.
 *
 * --log-format text writes "ts level node event key=value..." instead, for
 * a human at a terminal.  Under systemd, pal_log_journal_detect() turns on
 * the "<N>" priority prefix journald understands (3 error, 4 warn, 6 info,
 * 7 debug).  pal_log_limit() caps a noisy event (the ZooKeeper client's and
 * libpq's own messages).
 */
#ifndef PALISADE_LOG_H
#define PALISADE_LOG_H

typedef enum { PAL_LOG_DEBUG, PAL_LOG_INFO, PAL_LOG_WARN, PAL_LOG_ERROR } pal_log_level;

/* Set the node id stamped on every line and the minimum level.  Call once at
 * start-up before threads exist; NODE_ID is copied. */
void pal_log_init(const char *node_id, pal_log_level min_level);
/* Parse "debug|info|warn|error" (case-insensitive, "warning" too); returns
 * -1 when unknown or NULL. */
int pal_log_level_parse(const char *s);
/* "debug", "info", "warn", "error"; static string, never NULL. */
const char *pal_log_level_name(pal_log_level lvl);
/* Change the minimum level at run time (e.g. on SIGHUP reload). */
void pal_log_set_level(pal_log_level min_level);
/* True when a line at LVL would be written: guard expensive field values. */
int pal_log_enabled(pal_log_level lvl);
/* Redirect output to FD (default 1); for tests. */
void pal_log_set_fd(int fd);

typedef enum { PAL_LOG_JSON, PAL_LOG_TEXT } pal_log_format;
/* "json" | "text" -> the format, or -1. */
int pal_log_format_parse(const char *s);
void pal_log_set_format(pal_log_format f);
/* Prefix lines with "<N>" when $JOURNAL_STREAM names the output fd (the
 * service's stdout is journald's stream); returns whether it does. */
int pal_log_journal_detect(void);
/* At most BURST lines of EVENT per WINDOW_MS; the next line let through
 * carries "suppressed": how many were dropped.  Call before threads start
 * (up to 8 events). */
void pal_log_limit(const char *event, int burst, int window_ms);

void pal_log(pal_log_level lvl, const char *event, const char *fmt, ...);

#endif
