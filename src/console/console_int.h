/*
 * console_int.h - what the files of the console module share (console.c
 * renders, session.c keeps who is logged in, act.c serves the login and
 * the actions).  Nothing outside src/console includes it.
 */
#ifndef PALISADE_CONSOLE_INT_H
#define PALISADE_CONSOLE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "palisade/console.h"
#include "palisade/store.h"
#include "palisade/tokens.h"

typedef struct pal__sessions pal__sessions;
typedef struct pal__history pal__history;

struct pal_console {
	char *conninfo, *zk_connect, *zk_root, *cluster, *node_id, *peer_token;
	int timeout_ms;
	pthread_mutex_t mu;
	pal_store *st; /* NULL until the first page, and after a failure */
	struct pal_coord_inspector *zk; /* the live-node list's session; NULL likewise */
	int64_t db_retry_at, zk_retry_at;
	char db_err[512], zk_err[512];
	pal__sessions *sessions; /* the logins of this node's console */
	pal__history *history;	 /* the pictures' samples; NULL: no metrics */
};

/* ---- sessions (session.c) ---------------------------------------------------
 *
 * A login of the console: a random id (the cookie's value) that maps, in
 * this node's memory only, to the API token it was opened with, the token's
 * identity and a CSRF token of its own.  The browser never holds the API
 * token.  A session ends at logout, after PAL__SESSION_IDLE_MS without a
 * request, PAL__SESSION_MAX_MS after login, when the node restarts, or when
 * the API refuses its token (revoked).  At most PAL__SESSIONS_MAX live at
 * once: a new login pushes out the one idle longest.  Every function is
 * thread-safe (one mutex).
 */
#define PAL__SESSION_IDLE_MS (30 * 60 * 1000)
#define PAL__SESSION_MAX_MS (12 * 3600 * 1000)
#define PAL__SESSIONS_MAX 1024
#define PAL__SESSION_ID_LEN 64 /* hex digits: 256 random bits */

/* A copy of a session, handed out so that no caller holds the table's lock. */
typedef struct pal__session {
	char id[PAL__SESSION_ID_LEN + 1];
	char csrf[PAL__SESSION_ID_LEN + 1];
	char token[PAL_TOKEN_LEN + 128]; /* the API token (or the node's admin token) */
	pal_token_identity who;
	char flash[600]; /* the last action's outcome, shown once */
	bool flash_bad;
} pal__session;

/* A new table (never NULL: aborts on out of memory, as GLib does); free
 * with pal__sessions_free(), which wipes every token it held. */
pal__sessions *pal__sessions_new(void);
void pal__sessions_free(pal__sessions *s);
/* Open a session for TOKEN, whose identity is WHO: its copy into OUT.
 * PAL_EIO when no random bytes could be read. */
PAL_MUST_CHECK int pal__session_open(pal__sessions *s, const char *token,
				     const pal_token_identity *who, pal__session *out);
/* The live session ID (NULL: none) into OUT, its idle clock restarted and,
 * with TAKE_FLASH, its flash message taken (shown once); false when there
 * is none (unknown, expired or ended). */
bool pal__session_get(pal__sessions *s, const char *id, bool take_flash, pal__session *out);
/* Leave MSG (an action's outcome) for the next page of session ID. */
void pal__session_flash(pal__sessions *s, const char *id, bool bad, const char *msg);
/* End session ID (logout, or its token was refused). */
void pal__session_end(pal__sessions *s, const char *id);

/* ---- the pictures (history.c) ------------------------------------------------
 *
 * A ring of the last hour of this node's own samples (fire count and fire
 * lateness buckets, due backlog by group, as /metrics exports them), taken
 * every PAL__HISTORY_STEP_MS by a thread of its own, drawn as inline SVG.
 */
#define PAL__HISTORY_STEP_MS 5000
#define PAL__HISTORY_LEN 720	/* an hour of samples */
#define PAL__HISTORY_WINDOW 6	/* samples a lateness quantile spans (30 s) */

/* Start sampling M (borrowed; NULL: no history, NULL returned); stop and
 * free with pal__history_stop(). */
pal__history *pal__history_start(struct pal_metrics *m);
void pal__history_stop(pal__history *h);
/* The series (a new reference): {step_s window_s t[] fires_per_s[]
 * lateness_p50_s[] lateness_p99_s[] backlog_due{group: []}}, one value per
 * time of t (unix seconds), null where there is none; json null when H is. */
json_t *pal__history_json(pal__history *h);
/* HIST (pal__history_json's object) as three charts. */
void pal__history_svg(GString *o, const json_t *hist);

/* ---- rendering helpers shared with act.c (console.c) ------------------------ */

void pal__console_page_begin(GString *o, const char *title, bool refresh);

/* ---- the writes (act.c) ------------------------------------------------------ */

/* Serve the login, logout and action paths; false when REQ is another path. */
bool pal__console_act(pal_console *c, const pal_console_request *req, pal_console_reply *out);

#endif
