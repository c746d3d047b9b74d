/*
 * inflight.c - the apply requests this sink process is working on, and
 * their keys: what the status query needs to know about a request that
 * has no transaction yet (docs/sink.md, "Query").
 *
 * An apply request is in flight from the moment its headers are valid
 * until its answer is handed to libmicrohttpd (or its connection dropped).
 * Most of that time it may spend outside any transaction: paused, queued
 * for a group's committer, waiting for a pool connection.  The advisory
 * lock of the apply's step 0 (effect.c), the status query's other source,
 * is only taken once its transaction has started, so without this set a
 * status query would answer 404 for a request that commits a moment
 * later.  The set covers this process only: sinks sharing one database
 * see each other's requests from the lock on, not before.
 *
 * Threading: ctx->inflight and ctx->inflight_keys live under ctx->mu; each
 * function takes it for a few hash operations, never across I/O.
 * Ownership: the table (made by pal__sink_inflight_init(), freed by
 * pal__sink_inflight_free()) owns copies of its keys; a key's entry holds
 * the number of requests for it in flight and goes with the last of them.
 *
 * The keys whose COMMIT's fate was lost (ctx->lost_keys, also under
 * ctx->mu, ctx->n_lost its size for a read without the lock): the request
 * got no answer, and a client that sends it again - libcurl does so by
 * itself when the connection was a reused one - while PostgreSQL is still
 * away must not hear 503 "not applied" for an effect that may have
 * committed.
 */
#include <glib.h>
#include "sink_int.h"

void pal__sink_inflight_init(sink_ctx *ctx)
{
	ctx->inflight_keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	ctx->lost_keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	atomic_init(&ctx->n_lost, 0);
}

void pal__sink_inflight_free(sink_ctx *ctx)
{
	if (ctx->inflight_keys != NULL)
		g_hash_table_destroy(ctx->inflight_keys);
	ctx->inflight_keys = NULL;
	if (ctx->lost_keys != NULL)
		g_hash_table_destroy(ctx->lost_keys);
	ctx->lost_keys = NULL;
}

int pal__sink_inflight_enter(sink_ctx *ctx, const char *key)
{
	pthread_mutex_lock(&ctx->mu);
	gpointer n = g_hash_table_lookup(ctx->inflight_keys, key);
	if (n == NULL)
		g_hash_table_insert(ctx->inflight_keys, g_strdup(key), GINT_TO_POINTER(1));
	else
		g_hash_table_replace(ctx->inflight_keys, g_strdup(key),
				     GINT_TO_POINTER(GPOINTER_TO_INT(n) + 1));
	int all = ++ctx->inflight;
	pthread_mutex_unlock(&ctx->mu);
	return all;
}

int pal__sink_inflight_leave(sink_ctx *ctx, const char *key)
{
	pthread_mutex_lock(&ctx->mu);
	int n = GPOINTER_TO_INT(g_hash_table_lookup(ctx->inflight_keys, key));
	if (n <= 1)
		g_hash_table_remove(ctx->inflight_keys, key);
	else
		g_hash_table_replace(ctx->inflight_keys, g_strdup(key), GINT_TO_POINTER(n - 1));
	int all = --ctx->inflight;
	pthread_mutex_unlock(&ctx->mu);
	return all;
}

bool pal__sink_inflight_has(sink_ctx *ctx, const char *key)
{
	pthread_mutex_lock(&ctx->mu);
	bool has = g_hash_table_contains(ctx->inflight_keys, key);
	pthread_mutex_unlock(&ctx->mu);
	return has;
}

void pal__sink_lost(sink_ctx *ctx, const char *key)
{
	pthread_mutex_lock(&ctx->mu);
	if (g_hash_table_size(ctx->lost_keys) >= SINK_LOST_MAX)
		g_hash_table_remove_all(ctx->lost_keys);
	g_hash_table_add(ctx->lost_keys, g_strdup(key));
	atomic_store(&ctx->n_lost, (int)g_hash_table_size(ctx->lost_keys));
	pthread_mutex_unlock(&ctx->mu);
}

bool pal__sink_lost_has(sink_ctx *ctx, const char *key)
{
	if (atomic_load(&ctx->n_lost) == 0)
		return false;
	pthread_mutex_lock(&ctx->mu);
	bool has = g_hash_table_contains(ctx->lost_keys, key);
	pthread_mutex_unlock(&ctx->mu);
	return has;
}

void pal__sink_found(sink_ctx *ctx, const char *key)
{
	if (atomic_load(&ctx->n_lost) == 0)
		return;
	pthread_mutex_lock(&ctx->mu);
	g_hash_table_remove(ctx->lost_keys, key);
	atomic_store(&ctx->n_lost, (int)g_hash_table_size(ctx->lost_keys));
	pthread_mutex_unlock(&ctx->mu);
}
