/*
 * pgcopy.c - the binary COPY encoder of the store (pgcopy.h).
 *
 * The format (PostgreSQL's COPY documentation, "Binary Format"): an 11-byte
 * signature, a 32-bit flags word and a 32-bit header-extension length (both
 * 0), then per row a 16-bit field count and per field a 32-bit length (-1
 * for NULL) and the bytes, and a 16-bit -1 as the trailer.  All integers
 * are big-endian.
 *
 * The rows go to libpq in pieces of PAL_PGCOPY_FLUSH bytes (a CopyData
 * message need not hold whole rows): the connection is blocking, so
 * PQputCopyData returns once libpq took the piece, sending what the socket
 * accepts and reading what the server sends meanwhile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pgcopy.h"
#include "palisade/err.h"

static void flush(pal_pgcopy *c)
{
	if (c->len && !c->failed && PQputCopyData(c->st->conn, c->buf, (int)c->len) != 1)
		c->failed = true;
	c->len = 0;
}

static inline void put(pal_pgcopy *c, const void *p, size_t n)
{
	if (c->len + n > PAL_PGCOPY_FLUSH) {
		flush(c);
		if (n >= PAL_PGCOPY_FLUSH) { /* a large value goes as it is */
			if (!c->failed && PQputCopyData(c->st->conn, p, (int)n) != 1)
				c->failed = true;
			return;
		}
	}
	memcpy(c->buf + c->len, p, n);
	c->len += n;
}

static inline void put_u16(pal_pgcopy *c, uint16_t v)
{
	unsigned char b[2] = { (unsigned char)(v >> 8), (unsigned char)v };
	put(c, b, 2);
}

static inline void put_u32(pal_pgcopy *c, uint32_t v)
{
	unsigned char b[4] = { (unsigned char)(v >> 24), (unsigned char)(v >> 16),
			       (unsigned char)(v >> 8), (unsigned char)v };
	put(c, b, 4);
}

int pal__pgcopy_begin(pal_store *st, pal_pgcopy *c, const char *sql, const char *what, char *err,
		      size_t errlen)
{
	*c = (pal_pgcopy){ .st = st, .what = what, .buf = malloc(PAL_PGCOPY_FLUSH) };
	if (!c->buf) {
		snprintf(err, errlen, "%s: out of memory", what);
		return PAL_ENOMEM;
	}
	PGresult *r = PQexec(st->conn, sql);
	if (PQresultStatus(r) != PGRES_COPY_IN) {
		pal__store_errmsg(st, r, what, err, errlen);
		PQclear(r);
		/* a COPY that did start in another mode is not ours to finish */
		while ((r = PQgetResult(st->conn)))
			PQclear(r);
		free(c->buf);
		c->buf = NULL;
		return PAL_EDB;
	}
	PQclear(r);
	put(c, "PGCOPY\n\377\r\n\0", 11);
	put_u32(c, 0); /* flags: no OIDs */
	put_u32(c, 0); /* no header extension */
	return PAL_OK;
}

void pal__pgcopy_row(pal_pgcopy *c, int nfields)
{
	put_u16(c, (uint16_t)nfields);
	c->rows++;
}

void pal__pgcopy_text_len(pal_pgcopy *c, const char *v, size_t n)
{
	put_u32(c, (uint32_t)n);
	put(c, v, n);
}

void pal__pgcopy_text(pal_pgcopy *c, const char *v)
{
	if (!v)
		put_u32(c, UINT32_MAX); /* -1: NULL */
	else
		pal__pgcopy_text_len(c, v, strlen(v));
}

void pal__pgcopy_jsonb_len(pal_pgcopy *c, const char *json, size_t n)
{
	put_u32(c, (uint32_t)n + 1);
	put(c, "\1", 1); /* jsonb's binary format version */
	put(c, json, n);
}

void pal__pgcopy_i32(pal_pgcopy *c, int32_t v)
{
	put_u32(c, 4);
	put_u32(c, (uint32_t)v);
}

void pal__pgcopy_i64(pal_pgcopy *c, int64_t v)
{
	put_u32(c, 8);
	put_u32(c, (uint32_t)((uint64_t)v >> 32));
	put_u32(c, (uint32_t)v);
}

int pal__pgcopy_end(pal_pgcopy *c, bool wait, char *err, size_t errlen)
{
	put_u16(c, UINT16_MAX); /* trailer: -1 */
	flush(c);
	free(c->buf);
	c->buf = NULL;
	int rc = PAL_OK;
	if (c->failed || PQputCopyEnd(c->st->conn, NULL) != 1) {
		pal__store_errmsg(c->st, NULL, c->what, err, errlen);
		rc = PAL_EDB;
	}
	if (rc || !wait)
		return rc;
	PGresult *r;
	while ((r = PQgetResult(c->st->conn))) {
		if (rc == PAL_OK && PQresultStatus(r) != PGRES_COMMAND_OK) {
			pal__store_errmsg(c->st, r, c->what, err, errlen);
			rc = PAL_EDB;
		}
		PQclear(r);
	}
	return rc;
}

void pal__pgcopy_abort(pal_pgcopy *c)
{
	free(c->buf);
	c->buf = NULL;
	PGresult *r;
	if (PQputCopyEnd(c->st->conn, "abandoned by the client") == 1)
		while ((r = PQgetResult(c->st->conn)))
			PQclear(r);
}
