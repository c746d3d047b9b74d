/*
 * pgcopy.h - rows for COPY ... FROM STDIN (FORMAT binary), built in memory
 * (private to the store; src/store/pgcopy.c).
 *
 * Binary COPY is the cheapest way to hand PostgreSQL many rows: no array
 * literal to quote and re-parse, no per-statement tuplestore, and the
 * server inserts them in multi-row batches.  A value is written in its
 * type's binary wire form: text as its bytes, int4/int8 big-endian, jsonb
 * as a version byte (1) and the JSON text (the server still parses it).
 *
 *   pal_pgcopy c;
 *   pal__pgcopy_init(&c);
 *   pal__pgcopy_row(&c, 3); pal__pgcopy_text(&c, "a"); ... (3 fields)
 *   rc = pal__pgcopy_send(st, &c, "COPY t (a, b, c) FROM STDIN (FORMAT binary)", ...);
 *
 * pal__pgcopy_send always frees the buffer (pal__pgcopy_free frees one that
 * is not sent).
 */
#ifndef PAL_STORE_PGCOPY_H
#define PAL_STORE_PGCOPY_H
#include <glib.h>
#include <stdint.h>
#include "store_int.h"

typedef struct pal_pgcopy {
	GString *s;
	size_t rows;
} pal_pgcopy;

void pal__pgcopy_init(pal_pgcopy *c);
void pal__pgcopy_free(pal_pgcopy *c);
/* Start a row of NFIELDS values (each written by one call below). */
void pal__pgcopy_row(pal_pgcopy *c, int nfields);
void pal__pgcopy_text(pal_pgcopy *c, const char *v);			 /* NULL: SQL NULL */
void pal__pgcopy_text_len(pal_pgcopy *c, const char *v, size_t n); /* text, N bytes */
void pal__pgcopy_jsonb_len(pal_pgcopy *c, const char *json, size_t n);
void pal__pgcopy_i32(pal_pgcopy *c, int32_t v);
void pal__pgcopy_i64(pal_pgcopy *c, int64_t v);

/*
 * Run SQL (a COPY ... FROM STDIN (FORMAT binary)) and send C's rows.  With
 * WAIT false the result is left for the caller's PQgetResult loop (the
 * server inserts while the caller works on); with WAIT true it is read
 * here.  Returns PAL_OK or PAL_EDB (err filled with WHAT and the server's
 * message).  Frees C's buffer either way.
 */
PAL_MUST_CHECK int pal__pgcopy_send(pal_store *st, pal_pgcopy *c, const char *sql, bool wait,
				    const char *what, char *err, size_t errlen);
#endif
