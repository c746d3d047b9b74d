/*
 * tokens.h - API tokens: who may call the HTTP API, with which role and for
 * which tenants (docs/api.md).  The SQL is in src/store/tokens.c; the table
 * in sql/024_api_tokens.sql.
 *
 * A token is "pal_<id>_<secret>": ID (16 hex digits) names the row, SECRET
 * (64 hex digits, 256 random bits) is shown once by pal_token_create() and
 * never stored; the row keeps HMAC-SHA-256 keyed by a per-token salt.  A
 * high-entropy secret needs no slow hash: guessing it is hopeless whatever
 * the hash costs.
 *
 * Roles are ordered: viewer < operator < admin; each may do what the ones
 * below it may (pal_role_allows).
 */
#ifndef PALISADE_TOKENS_H
#define PALISADE_TOKENS_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include "palisade/err.h"
#include "palisade/store.h"

typedef enum {
	PAL_ROLE_NONE = 0, /* not authenticated */
	PAL_ROLE_VIEWER,   /* reads */
	PAL_ROLE_OPERATOR, /* + pause, resume, trigger, cancel, backfill, tickets */
	PAL_ROLE_ADMIN,	   /* + apply, delete, drain, tokens */
} pal_role;

/* "viewer", "operator", "admin" ("none" for PAL_ROLE_NONE); never NULL. */
const char *pal_role_name(pal_role r);
/* The role named NAME; PAL_EINVAL when it is none of the three. */
PAL_MUST_CHECK int pal_role_parse(const char *name, pal_role *out);
/* HAVE may do what NEED may. */
bool pal_role_allows(pal_role have, pal_role need);

#define PAL_TOKEN_TENANTS_MAX 32

/* The name (and id) under which the node's admin token acts on the API: its
 * audit rows' actor and the prefix of its trigger request ids.  No API
 * token may take it. */
#define PAL_ADMIN_TOKEN_NAME "admin-token"

/* Who a verified token is. */
typedef struct pal_token_identity {
	char id[17];
	char name[65];
	pal_role role;
	size_t n_tenants; /* 0: every tenant */
	char tenants[PAL_TOKEN_TENANTS_MAX][65];
} pal_token_identity;

/* ID may see and act on tenant TENANT (every tenant when unscoped). */
bool pal_token_sees_tenant(const pal_token_identity *id, const char *tenant);

/*
 * Create token NAME (1-64 bytes of [a-z0-9._-]) with ROLE and TENANTS[0..n)
 * (none: every tenant), written with an audit row by ACTOR.  The whole
 * token ("pal_<id>_<secret>", 85 bytes) goes to SECRET: it exists nowhere
 * else.  PAL_EINVAL for a bad name (PAL_ADMIN_TOKEN_NAME included), role
 * or tenant list; PAL_ESTALE when a live token already has NAME.
 */
#define PAL_TOKEN_LEN 85
PAL_MUST_CHECK int pal_token_create(pal_store *st, const char *name, pal_role role,
				    const char *const *tenants, size_t n, const char *actor,
				    char secret[PAL_TOKEN_LEN + 1], char *err, size_t errlen);

/* Every token, live ones first, newest first: [{id name role tenants
 * created_by created_at revoked_at revoked_by}] (json_decref). */
PAL_MUST_CHECK int pal_token_list_json(pal_store *st, json_t **out, char *err, size_t errlen);

/* Revoke the live token named NAME_OR_ID (its name or its id), with an
 * audit row by ACTOR giving REASON (NULL or empty: none).  PAL_ENOENT when
 * no live token has it. */
PAL_MUST_CHECK int pal_token_revoke(pal_store *st, const char *name_or_id, const char *actor,
				    const char *reason, char *err, size_t errlen);

/*
 * Check TOKEN as presented by a client against the database (one indexed
 * read; nothing is cached, so a revoked token is refused by the next
 * request on every node).  PAL_ENOENT when it is malformed, unknown,
 * revoked or its secret is wrong (one answer for all: a caller learns
 * nothing about which); PAL_EDB when the database failed.
 */
PAL_MUST_CHECK int pal_token_verify(pal_store *st, const char *token, pal_token_identity *out,
				    char *err, size_t errlen);

#endif
