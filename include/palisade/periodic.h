/*
 * periodic.h - a thread that calls one function now and then every
 * interval until stopped: the shape of the background passes (partition
 * and history retention of the nodes, the sink's key retention).
 *
 * The function runs on the periodic's own thread, never two at a time; a
 * stop waits for a call under way to return, then joins the thread.  The
 * wait between calls is on CLOCK_MONOTONIC (a wall-clock step neither
 * shortens nor stretches it).
 */
#ifndef PALISADE_PERIODIC_H
#define PALISADE_PERIODIC_H

#include <stdint.h>
#include "palisade/err.h"

typedef struct pal_periodic pal_periodic;

/* Start a thread calling FN(ARG) at once, then every INTERVAL_MS after the
 * previous call returned.  ARG is borrowed (it must outlive the periodic).
 * Returns 0, PAL_ENOMEM or PAL_EIO (no thread); free with
 * pal_periodic_stop. */
PAL_MUST_CHECK int pal_periodic_start(void (*fn)(void *), void *arg, int64_t interval_ms,
				      pal_periodic **out);
/* Wake the thread, wait for a call under way, join and free P (NULL is a
 * no-op). */
void pal_periodic_stop(pal_periodic *p);

#endif
