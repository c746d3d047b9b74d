/*
 * log.c - structured logs: one JSON object per line (log.h).
 *
 * A line is {"ts","level","node","event", fields...}: ts is RFC 3339 UTC with
 * milliseconds, the fields come from a jansson pack format.  The whole line,
 * newline included, is built in memory first and handed to one write(2), so
 * a reader (journald, a pipe, a file) never sees half a line.
 *
 * Threading: any thread may call pal_log().  The JSON is built without a
 * lock; the process-wide state below is read under LOG.mu (node id) or
 * atomically (level, fd), and the write itself happens under LOG.mu so
 * lines larger than PIPE_BUF, or a short write that has to be resumed, still
 * never interleave with another thread's line.
 *
 * Formats: JSON (the default) or --log-format text, one human line
 * "ts level node event key=value...".  Under systemd (JOURNAL_STREAM names
 * our output) each line starts with "<N>", the syslog priority journald
 * reads and strips.  Noisy events (the libraries' own messages) can be
 * limited to a burst per window; the first line after a window that
 * dropped some carries "suppressed": N.
 *
 * Global state: the logger is the one process-wide object of palisade (there
 * is one stdout).  It is the static LOG below; nothing is allocated, so
 * there is nothing to free.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>
#include "palisade/log.h"

#define NODE_MAX 128	/* node ids are short; longer ones are truncated */
#define LINE_STACK 2048 /* lines up to this size need no allocation */
#define LIMITS_MAX 8

typedef struct {
	char event[48];
	int burst;
	int64_t window_ms;
	int64_t window_start;
	int count;
	int suppressed;
} log_limit;

static struct {
	pthread_mutex_t mu;
	char node[NODE_MAX]; /* "" until pal_log_init(): written as null */
	atomic_int min_level;
	atomic_int fd;
	atomic_int format;  /* pal_log_format */
	atomic_int journal; /* prefix "<N>" */
	log_limit limits[LIMITS_MAX];
	int n_limits;
} LOG = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .node = "",
    .min_level = PAL_LOG_INFO,
    .fd = 1,
};

static const char *const level_names[] = {"debug", "info", "warn", "error"};

static const char *const reserved_keys[] = {"ts", "level", "node", "event"};

const char *pal_log_level_name(pal_log_level lvl)
{
	if ((int)lvl < PAL_LOG_DEBUG || lvl > PAL_LOG_ERROR)
		return "unknown";
	return level_names[lvl];
}

int pal_log_level_parse(const char *s)
{
	if (s == NULL)
		return -1;
	for (int i = PAL_LOG_DEBUG; i <= PAL_LOG_ERROR; i++)
		if (strcasecmp(s, level_names[i]) == 0)
			return i;
	if (strcasecmp(s, "warning") == 0)
		return PAL_LOG_WARN;
	return -1;
}

void pal_log_init(const char *node_id, pal_log_level min_level)
{
	pthread_mutex_lock(&LOG.mu);
	snprintf(LOG.node, sizeof LOG.node, "%s", node_id ? node_id : "");
	pthread_mutex_unlock(&LOG.mu);
	pal_log_set_level(min_level);
}

void pal_log_set_level(pal_log_level min_level)
{
	atomic_store(&LOG.min_level, (int)min_level);
}

int pal_log_enabled(pal_log_level lvl)
{
	return (int)lvl >= atomic_load(&LOG.min_level);
}

void pal_log_set_fd(int fd)
{
	atomic_store(&LOG.fd, fd);
}

int pal_log_format_parse(const char *s)
{
	if (s && !strcasecmp(s, "json"))
		return PAL_LOG_JSON;
	if (s && !strcasecmp(s, "text"))
		return PAL_LOG_TEXT;
	return -1;
}

void pal_log_set_format(pal_log_format f)
{
	atomic_store(&LOG.format, (int)f);
}

int pal_log_journal_detect(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat sb;
	int on = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 &&
		 fstat(atomic_load(&LOG.fd), &sb) == 0 && (unsigned long long)sb.st_dev == dev &&
		 (unsigned long long)sb.st_ino == ino;
	atomic_store(&LOG.journal, on);
	return on;
}

void pal_log_limit(const char *event, int burst, int window_ms)
{
	pthread_mutex_lock(&LOG.mu);
	if (LOG.n_limits < LIMITS_MAX) {
		log_limit *l = &LOG.limits[LOG.n_limits++];
		snprintf(l->event, sizeof l->event, "%s", event);
		l->burst = burst;
		l->window_ms = window_ms;
		l->window_start = -1;
	}
	pthread_mutex_unlock(&LOG.mu);
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* -1: drop the line; otherwise how many lines of EVENT were dropped before
 * it (0 usually). */
static int limit_pass(const char *event)
{
	int r = 0;
	pthread_mutex_lock(&LOG.mu);
	for (int i = 0; i < LOG.n_limits; i++) {
		log_limit *l = &LOG.limits[i];
		if (strcmp(l->event, event))
			continue;
		int64_t now = mono_ms();
		if (l->window_start < 0 || now - l->window_start >= l->window_ms) {
			l->window_start = now;
			l->count = 0;
		}
		if (l->count >= l->burst) {
			l->suppressed++;
			r = -1;
		} else {
			l->count++;
			r = l->suppressed;
			l->suppressed = 0;
		}
		break;
	}
	pthread_mutex_unlock(&LOG.mu);
	return r;
}

/* The syslog priority of LVL (sd-daemon.h's SD_DEBUG..SD_ERR). */
static int journal_priority(pal_log_level lvl)
{
	static const int prio[] = {7, 6, 4, 3};
	return prio[lvl];
}

/* "ts level node event k=v ..." of LINE (already built as JSON). */
static char *text_line(json_t *line)
{
	size_t cap = 256, n = 0;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	const char *key;
	json_t *val;
	int i = 0;
	json_object_foreach(line, key, val)
	{
		char *v = json_is_string(val) ? strdup(json_string_value(val))
					      : json_dumps(val, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!v)
			continue;
		bool std = i < 4; /* ts, level, node, event: values only */
		bool quote = !std && json_is_string(val) && (strpbrk(v, " \"=") || !*v);
		size_t need = strlen(key) + strlen(v) * 2 + 8;
		if (n + need + 2 > cap) {
			cap = (n + need + 2) * 2;
			char *bigger = realloc(out, cap);
			if (!bigger) {
				free(v);
				free(out);
				return NULL;
			}
			out = bigger;
		}
		if (i)
			out[n++] = ' ';
		if (std && i == 1) {
			n += (size_t)sprintf(out + n, "%-5s", v);
		} else if (std) {
			n += (size_t)sprintf(out + n, "%s", v);
		} else {
			n += (size_t)sprintf(out + n, "%s=", key);
			if (quote)
				out[n++] = '"';
			for (const char *p = v; *p; p++) {
				if (quote && (*p == '"' || *p == '\\'))
					out[n++] = '\\';
				out[n++] = *p == '\n' ? ' ' : *p;
			}
			if (quote)
				out[n++] = '"';
		}
		free(v);
		i++;
	}
	out[n] = '\0';
	return out;
}

/* "2026-11-30T08:00:00.123Z" into BUF (32 bytes are enough). */
static void format_now(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03dZ", (int)(ts.tv_nsec / 1000000L));
}

static int is_reserved(const char *key)
{
	for (size_t i = 0; i < sizeof reserved_keys / sizeof reserved_keys[0]; i++)
		if (strcmp(key, reserved_keys[i]) == 0)
			return 1;
	return 0;
}

/* Copy the packed FIELDS after the standard keys of LINE, renaming keys that
 * would overwrite a standard one. */
static void merge_fields(json_t *line, json_t *fields)
{
	const char *key;
	json_t *val;
	json_object_foreach(fields, key, val)
	{
		if (is_reserved(key)) {
			char renamed[64];
			snprintf(renamed, sizeof renamed, "field_%s", key);
			json_object_set(line, renamed, val);
		} else {
			json_object_set(line, key, val);
		}
	}
}

/* Write all of BUF under the lock: normally one write(2); resumed only after
 * a signal or a short write.  A failing fd loses the line (nowhere to say so). */
static void write_line(const char *buf, size_t len)
{
	int fd = atomic_load(&LOG.fd);
	pthread_mutex_lock(&LOG.mu);
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		buf += n;
		len -= (size_t)n;
	}
	pthread_mutex_unlock(&LOG.mu);
}

void pal_log(pal_log_level lvl, const char *event, const char *fmt, ...)
{
	int enabled = pal_log_enabled(lvl);
	/* An "o" argument hands us a reference: pack even a filtered line so the
	 * reference is released rather than leaked. */
	if (!enabled && (fmt == NULL || strchr(fmt, 'o') == NULL))
		return;

	json_t *fields = NULL;
	char log_error[JSON_ERROR_TEXT_LENGTH + 64] = "";
	if (fmt != NULL) {
		json_error_t jerr;
		va_list ap;
		va_start(ap, fmt);
		fields = json_vpack_ex(&jerr, 0, fmt, ap);
		va_end(ap);
		if (fields == NULL) {
			snprintf(log_error, sizeof log_error, "bad fields format \"%.32s\": %s",
				 fmt, jerr.text);
		} else if (!json_is_object(fields)) {
			snprintf(log_error, sizeof log_error,
				 "fields format \"%.32s\" does not build an object", fmt);
			json_decref(fields);
			fields = NULL;
		}
	}
	int suppressed = enabled && event ? limit_pass(event) : 0;
	if (!enabled || suppressed < 0) {
		json_decref(fields);
		return;
	}

	char ts[32], node[NODE_MAX];
	format_now(ts, sizeof ts);
	pthread_mutex_lock(&LOG.mu);
	memcpy(node, LOG.node, sizeof node);
	pthread_mutex_unlock(&LOG.mu);

	json_t *line = json_object();
	if (line == NULL) {
		json_decref(fields);
		return;
	}
	json_object_set_new(line, "ts", json_string(ts));
	json_object_set_new(line, "level", json_string(pal_log_level_name(lvl)));
	/* the node id is set by the program; if it is not UTF-8 json_string()
	 * returns NULL and the key is simply absent */
	json_object_set_new(line, "node", node[0] ? json_string(node) : json_null());
	json_object_set_new(line, "event", json_string(event ? event : "(null)"));
	if (fields != NULL)
		merge_fields(line, fields);
	if (log_error[0])
		json_object_set_new(line, "log_error", json_string(log_error));
	if (suppressed > 0)
		json_object_set_new(line, "suppressed", json_integer(suppressed));
	json_decref(fields);

	/* Dump into a stack buffer, or a heap one when the line is long; keep
	 * four bytes for the journal prefix and one for the newline. */
	char stack[LINE_STACK];
	char *buf = stack, *text = NULL;
	size_t pre = atomic_load(&LOG.journal) ? 3 : 0;
	size_t n;
	if (atomic_load(&LOG.format) == PAL_LOG_TEXT && (text = text_line(line)) != NULL) {
		n = strlen(text);
		buf = n + pre + 1 <= sizeof stack ? stack : malloc(n + pre + 1);
		if (buf != NULL)
			memcpy(buf + pre, text, n);
		free(text);
	} else {
		n = json_dumpb(line, stack + pre, sizeof stack - 1 - pre, JSON_COMPACT);
		if (n > sizeof stack - 1 - pre) {
			buf = malloc(n + pre + 1);
			if (buf != NULL)
				n = json_dumpb(line, buf + pre, n, JSON_COMPACT);
		}
	}
	json_decref(line);
	if (buf == NULL || n == 0)
		return;
	if (pre) {
		buf[0] = '<';
		buf[1] = (char)('0' + journal_priority(lvl));
		buf[2] = '>';
	}
	buf[pre + n] = '\n';
	write_line(buf, pre + n + 1);
	if (buf != stack)
		free(buf);
}
