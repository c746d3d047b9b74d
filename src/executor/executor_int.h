/* executor_int.h - what the files of src/executor share. */
#ifndef PALISADE_EXECUTOR_INT_H
#define PALISADE_EXECUTOR_INT_H

#include <glib.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include "palisade/executor.h"
#include "palisade/jobspec.h"
#include "palisade/store.h"
#include "palisade/tz.h"

int64_t pal__mono_ms(void);

/* ---- spec cache (specs.c): job versions are immutable, so cache forever --- */

typedef struct spec_entry {
	pal_job_spec spec;
	pal_tz *tz; /* the job's zone, for {scheduled_date} */
} spec_entry;

typedef struct spec_cache {
	GHashTable *map; /* "job#version" -> spec_entry* */
} spec_cache;

void pal__spec_cache_init(spec_cache *c);
void pal__spec_cache_free(spec_cache *c);
/* The spec of JOB version V, fetched through ST on a miss; NULL with err. */
const spec_entry *pal__spec_get(spec_cache *c, pal_store *st, const char *job, int v, char *err,
				size_t errlen);

/* ---- the lease table (lease.c), shared by the executor and lease threads --- */

typedef struct pal_lease_view {
	int64_t fence;
	int64_t sent_ms; /* monotonic time the last successful renewal (or the claim) was sent */
	bool lost;
	char state[16];
} pal_lease_view;

typedef struct pal_leases {
	pthread_mutex_t mu;
	GHashTable *map; /* int64 id -> pal_lease_view* */
	atomic_bool gate_open;
	atomic_int renew_failures; /* threshold that closes the gate (reloadable) */
	int failures;
	pal_metrics *m;
} pal_leases;

typedef struct pal_lease_thread pal_lease_thread;

int pal__leases_init(pal_leases *l, const pal_executor_config *cfg, pal_metrics *m);
void pal__leases_free(pal_leases *l);
void pal__leases_add(pal_leases *l, int64_t id, int64_t fence, int64_t sent_ms);
void pal__leases_set_sent(pal_leases *l, int64_t id, int64_t sent_ms);
void pal__leases_remove(pal_leases *l, int64_t id);
bool pal__leases_get(pal_leases *l, int64_t id, pal_lease_view *out);
bool pal__leases_gate_open(pal_leases *l);
int pal__leases_count(pal_leases *l);
/* Safety margin subtracted from the lease for the monotonic self-stop. */
int64_t pal__lease_margin(const pal_executor_config *cfg);

int pal__lease_thread_start(pal_leases *l, const pal_executor_config *cfg, pal_lease_thread **out,
			    char *err, size_t errlen);
void pal__lease_thread_stop(pal_lease_thread *t);

#endif
