/*
 * console_int.h - what the files of the console module share (console.c
 * serves the read paths, model.c gathers the model, html.c, page_cluster.c
 * and page_job.c render it, session.c keeps who is logged in, act.c serves
 * the login and the actions).  Nothing outside src/console includes it.
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
	char *conninfo, *zk_connect, *zk_root, *cluster, *node_id, *peer_cacert;
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

/* ---- the model (model.c) ----------------------------------------------------
 *
 * The sources (the console's database connection and ZooKeeper session,
 * each peer's /status) and the JSON model a page or its JSON is made of.
 * Called with c->mu held.
 */
/* The tenants a page or its JSON shows: a login's token limited to tenants
 * sees theirs only, as the API shows them to it (n == 0: every tenant).
 * The pointers borrow the session copy. */
typedef struct pal__scope {
	const char *t[PAL_TOKEN_TENANTS_MAX];
	size_t n;
} pal__scope;

/* The scope of session S (NULL: nobody logged in, every tenant). */
pal__scope pal__console_scope_of(const pal__session *s);
/* The whole cluster model (a new reference) of SC's tenants: SELF is this
 * node's own /status; Q and AFTER (may be NULL) search and page the jobs. */
json_t *pal__console_cluster_model(pal_console *c, const json_t *self, const char *q,
				   const char *after, const pal__scope *sc);
/* The model of job ID (a new reference) and its HTTP STATUS: 400 without an
 * id, 404 for no job (or another tenant's than SC's), 503 without the
 * database; a model with "error" then. */
json_t *pal__console_job_model(pal_console *c, const char *id, const pal__scope *sc,
			       unsigned *status);
/* DST[DKEY] = SRC[SKEY] (a new reference) when SRC has SKEY. */
void pal__console_set_from(json_t *dst, const char *dkey, json_t *src, const char *skey);

/* ---- HTML parts (html.c) -----------------------------------------------------
 *
 * What every page is made of, appended to a GString; every value escaped.
 */
/* What a page knows of who looks at it: the session (NULL when nobody is
 * logged in) and the page's own path, where its forms come back to. */
typedef struct pal__viewer {
	const pal__session *s;
	const char *back;
	const char *tenant; /* the job page's job's tenant; NULL elsewhere */
} pal__viewer;

/* Column kinds of a table. */
enum { C_TEXT, C_NUM, C_SECS, C_JOB, C_LIST, C_BOOL, C_TICKET, C_TRIGGER, C_DIGEST };

typedef struct pal__col {
	const char *key, *label;
	int kind;
} pal__col;

typedef const char *(*pal__row_class_fn)(const json_t *row);
/* The action forms of ROW for V (nothing when V may do none of them). */
typedef void (*pal__row_act_fn)(GString *o, const pal__viewer *v, const json_t *row);

/* The page's head (TITLE; a 15 s refresh with REFRESH) and its style. */
void pal__console_page_begin(GString *o, const char *title, bool refresh);
/* V may act on TENANT's jobs (NULL: on something of every tenant). */
bool pal__console_may(const pal__viewer *v, const char *tenant);
/* A form asking the API for OP on TARGET (NULL: none), labelled LABEL;
 * CHOICES (may be NULL) a ticket's allowed actions. */
void pal__console_act_form(GString *o, const pal__viewer *v, const char *op, const char *target,
			   const char *label, const json_t *choices);
/* The header bar of model M (API: its JSON's path) with V's login. */
void pal__console_header_bar(GString *o, const json_t *m, const char *api, const pal__viewer *v);
/* A banner per source of M that failed. */
void pal__console_banners(GString *o, const json_t *m);
/* "<section id=ID><h2>TITLE</h2>" and where its rows come from: CLI (may
 * be NULL) and JSON_HREF. */
void pal__console_section_begin(GString *o, const char *id, const char *title, const char *cli,
				const char *json_href);
/* S seconds, in the largest two units that fit. */
void pal__console_fmt_secs(GString *o, double s);
/* V linked to HREF, with CLI (may be NULL) as its title. */
void pal__console_num_link(GString *o, const json_t *v, const char *href, const char *cli);
/* The cell of column K of ROW. */
void pal__console_cell(GString *o, const json_t *row, const pal__col *k, const char *href,
		       const char *cli);
/* ROWS as a table of the N columns COLS; CLS (may be NULL) classes a row. */
void pal__console_table(GString *o, const json_t *rows, const pal__col *cols, size_t n,
			const char *href, const char *cli, pal__row_class_fn cls);
/* pal__console_table with a last column of ACT's forms, when V may act. */
void pal__console_table_act(GString *o, const json_t *rows, const pal__col *cols, size_t n,
			    const char *href, const char *cli, pal__row_class_fn cls,
			    const pal__viewer *v, pal__row_act_fn act);
/* A figure on a card, linked as pal__console_num_link; BAD marks it. */
void pal__console_card(GString *o, const char *id, const char *label, const json_t *v,
		       const char *href, const char *cli, bool bad);
/* The sum of KEY over ROWS. */
int64_t pal__console_sum_key(const json_t *rows, const char *key);
/* The forms of a row (pal__row_act_fn): a paused scope's, a group's or a
 * tenant's backlog row, an open ticket, a live trigger. */
void pal__console_gate_acts(GString *o, const pal__viewer *v, const json_t *row);
void pal__console_group_acts(GString *o, const pal__viewer *v, const json_t *row);
void pal__console_tenant_acts(GString *o, const pal__viewer *v, const json_t *row);
void pal__console_ticket_acts(GString *o, const pal__viewer *v, const json_t *row);
void pal__console_trigger_acts(GString *o, const pal__viewer *v, const json_t *row);

/* ---- the pages (page_cluster.c, page_job.c) ----------------------------------- */

/* The cluster page of model M for VW. */
void pal__console_render_cluster(GString *o, const json_t *m, const pal__viewer *vw);
/* The page of job ID of model M (pal__console_job_model's) for PV. */
void pal__console_render_job(GString *o, const json_t *m, const char *id, const pal__viewer *pv);

/* ---- the writes (act.c) ------------------------------------------------------ */

/* Serve the login, logout and action paths; false when REQ is another path. */
bool pal__console_act(pal_console *c, const pal_console_request *req, pal_console_reply *out);

#endif
