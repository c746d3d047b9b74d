/*
 * health.h - per-thread heartbeats for /healthz and the systemd watchdog.
 *
 * A long-running thread calls pal_health_beat(NAME, STALL_MS) at the top of
 * every pass of its loop: the first call registers NAME, each call stamps
 * the monotonic time.  pal_health_check() reports every registered thread
 * whose last beat is older than its STALL_MS (a deadlock, an endless loop,
 * a call that never returns).  A thread that ends calls pal_health_forget()
 * so that a clean stop is not reported as stuck.
 *
 * Process-wide and thread-safe (a small fixed table under a mutex; a beat
 * costs one lock and one clock read).
 */
#ifndef PALISADE_HEALTH_H
#define PALISADE_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PAL_HEALTH_MAX 16 /* threads tracked; later names are ignored */

void pal_health_beat(const char *name, int64_t stall_ms);
void pal_health_forget(const char *name);
/* true when no registered thread is late; otherwise false and WHY lists
 * "name silent for N ms (limit M)" of each late one. */
bool pal_health_check(char *why, size_t whylen);
/* Registered threads as JSON-ready triples: fills up to MAX entries of
 * NAMES (copied into the caller's 32-byte slots), AGE_MS and LIMIT_MS;
 * returns how many. */
size_t pal_health_list(char names[][32], int64_t *age_ms, int64_t *limit_ms, size_t max);

#endif
