/* store_int.h - what the files of src/store share and nobody else needs. */
#ifndef PALISADE_STORE_INT_H
#define PALISADE_STORE_INT_H

#include <glib.h>
#include <stdint.h>
#include "palisade/store.h"

struct pal_store {
	PGconn *conn;
	char sqlstate[6]; /* of the last failed query, "" when none */
};

/* Execute SQL returning no rows; PAL_EDB with err filled on failure. */
int pal__store_exec(pal_store *st, const char *sql, char *err, size_t errlen);
/* Best-effort ROLLBACK after a failure. */
void pal__store_rollback(pal_store *st);
/* Fill err with "WHAT: <server message>". */
void pal__store_errmsg(pal_store *st, const PGresult *r, const char *what, char *err, size_t errlen);

/* An array parameter being built (pgarray.c): init, add elements, end.
 * Text elements are always quoted, so every value round-trips; a NULL
 * pointer is an SQL NULL.  pal__pgarr_end returns the literal ("{...}"),
 * g_free'd by the caller, and leaves A empty. */
typedef struct pal_pgarr {
	GString *s;
	int n;
} pal_pgarr;
void pal__pgarr_init(pal_pgarr *a);
void pal__pgarr_text(pal_pgarr *a, const char *v);
void pal__pgarr_i64(pal_pgarr *a, int64_t v);
char *pal__pgarr_end(pal_pgarr *a);

/* pg_advisory_lock key of the migration lock ("palisade" as 8 bytes). */
#define PAL_MIGRATE_LOCK_KEY "7075283591402447205"

#endif
