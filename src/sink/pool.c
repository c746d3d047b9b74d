/*
 * pool.c - a fixed pool of PostgreSQL connections for the sink.
 *
 * The effects listener runs one thread per HTTP connection; a request that
 * needs PostgreSQL takes a connection from this pool for the length of its
 * transaction and gives it back.  The pool size (--threads) therefore bounds
 * how many transactions run at once; further requests wait on the condition
 * variable.  Connections are opened lazily by the thread that acquires an
 * empty slot (outside the lock, so a slow connect does not stall others)
 * and reopened when PostgreSQL dropped them.
 *
 * Ownership: the pool owns every PGconn; a sink_conn handed out by
 * pal__sink_pool_acquire() is borrowed until pal__sink_pool_release().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sink_int.h"

struct sink_pool {
	char *conninfo;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* signalled when a slot frees up or on interrupt */
	bool interrupted;
	int n;
	sink_conn *slots;
};

int pal__sink_pool_new(const char *conninfo, int n, sink_pool **out)
{
	*out = NULL;
	sink_pool *p = calloc(1, sizeof *p);
	if (p == NULL)
		return PAL_ENOMEM;
	p->conninfo = strdup(conninfo);
	p->slots = calloc((size_t)n, sizeof *p->slots);
	if (p->conninfo == NULL || p->slots == NULL) {
		free(p->conninfo);
		free(p->slots);
		free(p);
		return PAL_ENOMEM;
	}
	p->n = n;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	*out = p;
	return PAL_OK;
}

int pal__sink_connect(const char *conninfo, PGconn **out, char *err, size_t errlen)
{
	static const char *const keys[] = {"dbname", "fallback_application_name", NULL};
	const char *vals[] = {conninfo, "palisade-sink", NULL};
	PGconn *pg = PQconnectdbParams(keys, vals, 1);
	*out = NULL;
	if (pg == NULL) {
		snprintf(err, errlen, "cannot connect to PostgreSQL: out of memory");
		return PAL_ENOMEM;
	}
	if (PQstatus(pg) != CONNECTION_OK) {
		char msg[256];
		snprintf(msg, sizeof msg, "%s", PQerrorMessage(pg));
		msg[strcspn(msg, "\n")] = '\0';
		snprintf(err, errlen, "cannot connect to PostgreSQL: %s", msg);
		PQfinish(pg);
		return PAL_EDB;
	}
	*out = pg;
	return PAL_OK;
}

int pal__sink_pool_acquire(sink_pool *p, sink_conn **out, char *err, size_t errlen)
{
	*out = NULL;
	sink_conn *c = NULL;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		if (p->interrupted)
			break;
		/* prefer a slot with an open connection */
		for (int i = 0; i < p->n; i++) {
			if (!p->slots[i].busy && (c == NULL || (c->pg == NULL && p->slots[i].pg)))
				c = &p->slots[i];
		}
		if (c != NULL)
			break;
		pthread_cond_wait(&p->cv, &p->mu);
	}
	if (c != NULL)
		c->busy = true;
	pthread_mutex_unlock(&p->mu);
	if (c == NULL) {
		snprintf(err, errlen, "the sink is shutting down");
		return PAL_EBUSY;
	}

	if (c->pg != NULL && PQstatus(c->pg) != CONNECTION_OK) {
		PQfinish(c->pg);
		c->pg = NULL;
	}
	if (c->pg == NULL) {
		c->prepared = false;
		int rc = pal__sink_connect(p->conninfo, &c->pg, err, errlen);
		if (rc != PAL_OK) {
			pal__sink_pool_release(p, c);
			return rc;
		}
	}
	*out = c;
	return PAL_OK;
}

void pal__sink_pool_release(sink_pool *p, sink_conn *c)
{
	if (c == NULL)
		return;
	/* never hand on a connection in an unknown state: close it instead */
	if (c->pg != NULL &&
	    (PQstatus(c->pg) != CONNECTION_OK || PQtransactionStatus(c->pg) != PQTRANS_IDLE)) {
		PQfinish(c->pg);
		c->pg = NULL;
		c->prepared = false;
	}
	pthread_mutex_lock(&p->mu);
	c->busy = false;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void pal__sink_pool_interrupt(sink_pool *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->interrupted = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void pal__sink_pool_free(sink_pool *p)
{
	if (p == NULL)
		return;
	for (int i = 0; i < p->n; i++)
		if (p->slots[i].pg != NULL)
			PQfinish(p->slots[i].pg);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->slots);
	free(p->conninfo);
	free(p);
}
