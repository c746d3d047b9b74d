/*
 * session.c - the console's logins (console_int.h): an in-memory table of
 * random session ids, each mapping to the API token it was opened with.
 *
 * Why the token stays here and not in the cookie: a cookie that carried
 * the token would hand a long-lived API credential (usable with curl, on
 * every node) to whoever reads the browser's cookie store; a session id is
 * worth one node's console until logout or PAL__SESSION_IDLE_MS, and ending
 * it here ends it everywhere it was copied.  The price is that a login is
 * per node and does not survive a restart (docs/observability.md).
 *
 * Threading: any thread; one mutex around the table.  Lookups copy the
 * session out, so nothing is used after the lock is dropped.
 */
#include <string.h>
#include "palisade/clock.h"
#include "palisade/random.h"
#include "console_int.h"

typedef struct entry {
	pal__session s;
	int64_t opened_ms, used_ms; /* CLOCK_MONOTONIC */
} entry;

struct pal__sessions {
	pthread_mutex_t mu;
	GHashTable *by_id; /* id -> entry* (the key is the entry's own id) */
};

static void entry_free(gpointer p)
{
	entry *e = p;
	explicit_bzero(e, sizeof *e);
	g_free(e);
}

pal__sessions *pal__sessions_new(void)
{
	pal__sessions *s = g_new0(pal__sessions, 1);
	pthread_mutex_init(&s->mu, NULL);
	s->by_id = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, entry_free);
	return s;
}

void pal__sessions_free(pal__sessions *s)
{
	if (!s)
		return;
	g_hash_table_destroy(s->by_id);
	pthread_mutex_destroy(&s->mu);
	g_free(s);
}

static bool expired(const entry *e, int64_t now)
{
	return now - e->used_ms > PAL__SESSION_IDLE_MS || now - e->opened_ms > PAL__SESSION_MAX_MS;
}

static gboolean drop_expired(gpointer k, gpointer v, gpointer now)
{
	(void)k;
	return expired(v, *(int64_t *)now);
}

/* Room for one more session: expired ones go, then the one idle longest. */
static void make_room(pal__sessions *s, int64_t now)
{
	g_hash_table_foreach_remove(s->by_id, drop_expired, &now);
	if (g_hash_table_size(s->by_id) < PAL__SESSIONS_MAX)
		return;
	GHashTableIter it;
	gpointer k, v;
	entry *oldest = NULL;
	g_hash_table_iter_init(&it, s->by_id);
	while (g_hash_table_iter_next(&it, &k, &v))
		if (!oldest || ((entry *)v)->used_ms < oldest->used_ms)
			oldest = v;
	if (oldest)
		g_hash_table_remove(s->by_id, oldest->s.id);
}

int pal__session_open(pal__sessions *s, const char *token, const pal_token_identity *who,
		      pal__session *out)
{
	entry *e = g_new0(entry, 1);
	if (pal_random_hex(e->s.id, PAL__SESSION_ID_LEN / 2) ||
	    pal_random_hex(e->s.csrf, PAL__SESSION_ID_LEN / 2)) {
		entry_free(e);
		return PAL_EIO;
	}
	g_strlcpy(e->s.token, token, sizeof e->s.token);
	e->s.who = *who;
	pthread_mutex_lock(&s->mu);
	e->opened_ms = e->used_ms = pal_mono_ms();
	make_room(s, e->opened_ms);
	g_hash_table_replace(s->by_id, e->s.id, e);
	*out = e->s;
	pthread_mutex_unlock(&s->mu);
	return PAL_OK;
}

/* Session IDs are hex of a fixed length; anything else is no session. */
static bool id_shape(const char *id)
{
	if (!id || strlen(id) != PAL__SESSION_ID_LEN)
		return false;
	for (const char *p = id; *p; p++)
		if (!g_ascii_isxdigit(*p))
			return false;
	return true;
}

bool pal__session_get(pal__sessions *s, const char *id, bool take_flash, pal__session *out)
{
	if (!id_shape(id))
		return false;
	pthread_mutex_lock(&s->mu);
	entry *e = g_hash_table_lookup(s->by_id, id);
	int64_t now = pal_mono_ms();
	if (e && expired(e, now)) {
		g_hash_table_remove(s->by_id, id);
		e = NULL;
	}
	if (e) {
		e->used_ms = now;
		*out = e->s;
		if (take_flash)
			e->s.flash[0] = '\0';
	}
	pthread_mutex_unlock(&s->mu);
	return e != NULL;
}

void pal__session_flash(pal__sessions *s, const char *id, bool bad, const char *msg)
{
	if (!id_shape(id))
		return;
	pthread_mutex_lock(&s->mu);
	entry *e = g_hash_table_lookup(s->by_id, id);
	if (e) {
		g_strlcpy(e->s.flash, msg, sizeof e->s.flash);
		e->s.flash_bad = bad;
	}
	pthread_mutex_unlock(&s->mu);
}

void pal__session_end(pal__sessions *s, const char *id)
{
	if (!id_shape(id))
		return;
	pthread_mutex_lock(&s->mu);
	g_hash_table_remove(s->by_id, id);
	pthread_mutex_unlock(&s->mu);
}
