/*
 * pgcopy.h - rows for COPY ... FROM STDIN (FORMAT binary), streamed to the
 * server as they are written (private to the store; src/store/pgcopy.c).
 *
 * Binary COPY is the cheapest way to hand PostgreSQL many rows: no array
 * literal to quote and re-parse, no per-statement tuplestore, and the
 * server inserts them in multi-row batches.  A value is written in its
 * type's binary wire form: text as its bytes, int4/int8 big-endian, jsonb
 * as a version byte (1) and the JSON text (the server still parses it).
 *
 * The COPY statement is sent by pal__pgcopy_begin; rows are then collected
 * in a buffer of PAL_PGCOPY_FLUSH bytes that is handed to libpq each time
 * it fills, so the server parses and inserts the first rows while the
 * caller is still writing the last ones, and neither side holds the whole
 * set of rows (5,000 job versions are ~6 MiB).  Nothing else may be sent on
 * the connection until pal__pgcopy_end or pal__pgcopy_abort.
 *
 *   pal_pgcopy c;
 *   if (pal__pgcopy_begin(st, &c, "COPY t (a, b, c) FROM STDIN (FORMAT binary)",
 *                         "storing t", err, errlen)) ... (nothing to free)
 *   pal__pgcopy_row(&c, 3); pal__pgcopy_text(&c, "a"); ... (3 fields)
 *   rc = pal__pgcopy_end(&c, true, err, errlen);
 *
 * A failure to send (the connection lost) is remembered and reported by
 * pal__pgcopy_end; a row the server refuses (a key, a constraint) is
 * reported in the COPY's result.
 */
#ifndef PAL_STORE_PGCOPY_H
#define PAL_STORE_PGCOPY_H
#include <stdbool.h>
#include <stdint.h>
#include "store_int.h"

/* Bytes collected before they are handed to libpq. */
#define PAL_PGCOPY_FLUSH (128 * 1024)

typedef struct pal_pgcopy {
	pal_store *st;
	const char *what; /* for messages: "storing jobs" */
	char *buf;	  /* PAL_PGCOPY_FLUSH bytes plus room for one value's header */
	size_t len;
	size_t rows;
	bool failed; /* PQputCopyData failed: the COPY is lost */
} pal_pgcopy;

/*
 * Send SQL (a COPY ... FROM STDIN (FORMAT binary)) on ST and start the
 * data.  Returns PAL_OK, PAL_EDB (err filled with WHAT and the server's
 * message; nothing to end) or PAL_ENOMEM.  WHAT must outlive C.
 */
PAL_MUST_CHECK int pal__pgcopy_begin(pal_store *st, pal_pgcopy *c, const char *sql,
				     const char *what, char *err, size_t errlen);
/* Start a row of NFIELDS values (each written by one call below). */
void pal__pgcopy_row(pal_pgcopy *c, int nfields);
void pal__pgcopy_text(pal_pgcopy *c, const char *v);			 /* NULL: SQL NULL */
void pal__pgcopy_text_len(pal_pgcopy *c, const char *v, size_t n); /* text, N bytes */
void pal__pgcopy_jsonb_len(pal_pgcopy *c, const char *json, size_t n);
void pal__pgcopy_i32(pal_pgcopy *c, int32_t v);
void pal__pgcopy_i64(pal_pgcopy *c, int64_t v);
/*
 * Send the rest and end the COPY.  With WAIT false the result is left for
 * the caller's PQgetResult loop (the server inserts while the caller works
 * on); with WAIT true it is read here.  Returns PAL_OK or PAL_EDB (err
 * filled).  Frees C's buffer either way.
 */
PAL_MUST_CHECK int pal__pgcopy_end(pal_pgcopy *c, bool wait, char *err, size_t errlen);
/* End the COPY as failed (the server rolls the statement back), read its
 * result and free C's buffer. */
void pal__pgcopy_abort(pal_pgcopy *c);
#endif
