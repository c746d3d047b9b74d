/*
 * clock.h - the one home of palisade's clock readings (src/util/clock.c).
 *
 * Durations, deadlines and timeouts use CLOCK_MONOTONIC: a wall clock that
 * steps (NTP, an operator, libfaketime in the drills) never moves them.
 * Only timestamps that leave the process (logs, the database's clock offset)
 * use CLOCK_REALTIME.
 */
#ifndef PALISADE_CLOCK_H
#define PALISADE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in milliseconds. */
int64_t pal_mono_ms(void);
/* CLOCK_MONOTONIC in microseconds (short waits that a sum of milliseconds
 * would round away). */
int64_t pal_mono_us(void);
/* CLOCK_REALTIME in milliseconds since the epoch. */
int64_t pal_wall_ms(void);
/* The CLOCK_MONOTONIC instant MS milliseconds from now, for waits on a
 * condition variable whose clock is CLOCK_MONOTONIC. */
struct timespec pal_mono_deadline(int64_t ms);
/* Sleeps MS milliseconds (a signal's interruption resumes the sleep). */
void pal_sleep_ms(int64_t ms);

#endif
