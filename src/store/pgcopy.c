/*
 * pgcopy.c - the binary COPY encoder of the store (pgcopy.h).
 *
 * The format (PostgreSQL's COPY documentation, "Binary Format"): an 11-byte
 * signature, a 32-bit flags word and a 32-bit header-extension length (both
 * 0), then per row a 16-bit field count and per field a 32-bit length (-1
 * for NULL) and the bytes, and a 16-bit -1 as the trailer.  All integers
 * are big-endian.
 */
#include <stdio.h>
#include <string.h>
#include "pgcopy.h"
#include "palisade/err.h"

static void put_u16(GString *s, uint16_t v)
{
	unsigned char b[2] = { (unsigned char)(v >> 8), (unsigned char)v };
	g_string_append_len(s, (const char *)b, 2);
}

static void put_u32(GString *s, uint32_t v)
{
	unsigned char b[4] = { (unsigned char)(v >> 24), (unsigned char)(v >> 16),
			       (unsigned char)(v >> 8), (unsigned char)v };
	g_string_append_len(s, (const char *)b, 4);
}

void pal__pgcopy_init(pal_pgcopy *c)
{
	c->s = g_string_sized_new(1 << 16);
	c->rows = 0;
	g_string_append_len(c->s, "PGCOPY\n\377\r\n\0", 11);
	put_u32(c->s, 0); /* flags: no OIDs */
	put_u32(c->s, 0); /* no header extension */
}

void pal__pgcopy_free(pal_pgcopy *c)
{
	if (c->s)
		g_string_free(c->s, TRUE);
	c->s = NULL;
}

void pal__pgcopy_row(pal_pgcopy *c, int nfields)
{
	put_u16(c->s, (uint16_t)nfields);
	c->rows++;
}

void pal__pgcopy_text_len(pal_pgcopy *c, const char *v, size_t n)
{
	put_u32(c->s, (uint32_t)n);
	g_string_append_len(c->s, v, (gssize)n);
}

void pal__pgcopy_text(pal_pgcopy *c, const char *v)
{
	if (!v)
		put_u32(c->s, UINT32_MAX); /* -1: NULL */
	else
		pal__pgcopy_text_len(c, v, strlen(v));
}

void pal__pgcopy_jsonb_len(pal_pgcopy *c, const char *json, size_t n)
{
	put_u32(c->s, (uint32_t)n + 1);
	g_string_append_c(c->s, 1); /* jsonb's binary format version */
	g_string_append_len(c->s, json, (gssize)n);
}

void pal__pgcopy_i32(pal_pgcopy *c, int32_t v)
{
	put_u32(c->s, 4);
	put_u32(c->s, (uint32_t)v);
}

void pal__pgcopy_i64(pal_pgcopy *c, int64_t v)
{
	put_u32(c->s, 8);
	put_u32(c->s, (uint32_t)((uint64_t)v >> 32));
	put_u32(c->s, (uint32_t)v);
}

int pal__pgcopy_send(pal_store *st, pal_pgcopy *c, const char *sql, bool wait, const char *what,
		     char *err, size_t errlen)
{
	put_u16(c->s, UINT16_MAX); /* trailer: -1 */
	int rc = PAL_OK;
	PGresult *r = PQexec(st->conn, sql);
	if (PQresultStatus(r) != PGRES_COPY_IN) {
		pal__store_errmsg(st, r, what, err, errlen);
		rc = PAL_EDB;
	}
	PQclear(r);
	if (!rc && (PQputCopyData(st->conn, c->s->str, (int)c->s->len) != 1 ||
		    PQputCopyEnd(st->conn, NULL) != 1)) {
		pal__store_errmsg(st, NULL, what, err, errlen);
		rc = PAL_EDB;
	}
	pal__pgcopy_free(c);
	if (rc || !wait)
		return rc;
	while ((r = PQgetResult(st->conn))) {
		if (rc == PAL_OK && PQresultStatus(r) != PGRES_COMMAND_OK) {
			pal__store_errmsg(st, r, what, err, errlen);
			rc = PAL_EDB;
		}
		PQclear(r);
	}
	return rc;
}
