/*
 * tokens.c - API tokens (tokens.h): creation, listing, revocation and the
 * per-request check, against sql/024_api_tokens.sql.
 *
 * The secret is compared as HMAC-SHA-256(salt, secret) in constant time;
 * the salt and the hash are hex text.  Every function is one statement
 * (create and revoke: one statement that writes the row and its audit row
 * together), so nothing here opens a transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "palisade/name.h"
#include "palisade/random.h"
#include "palisade/secret.h"
#include "palisade/tokens.h"
#include "store_int.h"

static const char *const role_names[] = {"none", "viewer", "operator", "admin"};

const char *pal_role_name(pal_role r)
{
	return (unsigned)r < G_N_ELEMENTS(role_names) ? role_names[r] : "none";
}

int pal_role_parse(const char *name, pal_role *out)
{
	for (unsigned i = PAL_ROLE_VIEWER; i < G_N_ELEMENTS(role_names); i++)
		if (name && !strcmp(name, role_names[i])) {
			*out = (pal_role)i;
			return PAL_OK;
		}
	return PAL_EINVAL;
}

bool pal_role_allows(pal_role have, pal_role need)
{
	return have != PAL_ROLE_NONE && have >= need;
}

bool pal_token_sees_tenant(const pal_token_identity *id, const char *tenant)
{
	if (id->n_tenants == 0)
		return true;
	for (size_t i = 0; tenant && i < id->n_tenants; i++)
		if (!strcmp(id->tenants[i], tenant))
			return true;
	return false;
}

/* HMAC-SHA-256(SALT, SECRET) as hex, g_free'd by the caller. */
static char *token_hash(const char *salt, const char *secret)
{
	return g_compute_hmac_for_string(G_CHECKSUM_SHA256, (const guchar *)salt, strlen(salt),
					 secret, -1);
}

int pal_token_create(pal_store *st, const char *name, pal_role role, const char *const *tenants,
		     size_t n, const char *actor, char secret[PAL_TOKEN_LEN + 1], char *err,
		     size_t errlen)
{
	secret[0] = '\0';
	if (!pal_name_ok(name, 64)) {
		snprintf(err, errlen,
			 "token name \"%.64s\": expected 1-64 characters of a-z 0-9 . _ - starting "
			 "with a letter or digit",
			 name ? name : "");
		return PAL_EINVAL;
	}
	if (!strcmp(name, PAL_ADMIN_TOKEN_NAME)) {
		snprintf(err, errlen,
			 "token name \"%s\" is the node admin token's (the actor of its audit rows, "
			 "the prefix of its request ids): choose another",
			 name);
		return PAL_EINVAL;
	}
	if (role == PAL_ROLE_NONE || (unsigned)role >= G_N_ELEMENTS(role_names)) {
		snprintf(err, errlen, "token role: expected viewer, operator or admin");
		return PAL_EINVAL;
	}
	if (n > PAL_TOKEN_TENANTS_MAX) {
		snprintf(err, errlen, "token tenants: at most %d", PAL_TOKEN_TENANTS_MAX);
		return PAL_EINVAL;
	}
	pal_pgarr a;
	pal__pgarr_init(&a);
	for (size_t i = 0; i < n; i++) {
		if (!pal_name_ok(tenants[i], 64)) {
			g_free(pal__pgarr_end(&a));
			snprintf(err, errlen,
				 "tenant \"%.64s\": expected 1-64 characters of a-z 0-9 . _ -",
				 tenants[i]);
			return PAL_EINVAL;
		}
		pal__pgarr_text(&a, tenants[i]);
	}
	char *arr = pal__pgarr_end(&a);
	char id[17], sec[65], salt[33];
	if (pal_random_hex(id, 8) || pal_random_hex(sec, 32) || pal_random_hex(salt, 16)) {
		g_free(arr);
		snprintf(err, errlen, "cannot read random bytes for the token");
		return PAL_EIO;
	}
	char *hash = token_hash(salt, sec);
	const char *p[] = {id, name, pal_role_name(role), arr, salt, hash, actor};
	/* The row and its audit row in one statement: both or neither. */
	PGresult *r = pal__store_query(
	    st,
	    "WITH t AS (INSERT INTO api_tokens (id, name, role, tenants, salt, hash, created_by)"
	    " VALUES ($1, $2, $3, $4::text[], $5, $6, $7) RETURNING id, name, role, tenants)"
	    " INSERT INTO audit_log (actor, action, scope, reason, details)"
	    " SELECT $7, 'token.create', 'token:' || t.name, NULL,"
	    " jsonb_build_object('id', t.id, 'role', t.role, 'tenants', to_jsonb(t.tenants))"
	    " FROM t",
	    7, p, err, errlen);
	g_free(arr);
	g_free(hash);
	if (!r) {
		if (!strcmp(st->sqlstate, "23505")) {
			snprintf(
			    err, errlen,
			    "a live token is already named \"%s\"; hint: `palisade token revoke "
			    "%s` first, or choose another name",
			    name, name);
			return PAL_ESTALE;
		}
		return PAL_EDB;
	}
	PQclear(r);
	snprintf(secret, PAL_TOKEN_LEN + 1, "pal_%s_%s", id, sec);
	return PAL_OK;
}

int pal__store_tokens_query(pal_store *st, const char *after, int limit, json_t **out, char *err,
			    size_t errlen)
{
	int revoked = 0, n = 0;
	long long us = 0;
	char id[17] = "", r[16], u[24], l[16];
	bool bad = after && (sscanf(after, "%1d_%lld_%16[0-9a-f]%n", &revoked, &us, id, &n) != 3 ||
			     after[n] || revoked > 1);
	if (bad || us > PAL__CURSOR_US_MAX || us < -PAL__CURSOR_US_MAX) {
		snprintf(err, errlen, "cursor \"%.40s\" is not one this API gave", after);
		return PAL_EINVAL;
	}
	snprintf(r, sizeof r, "%d", revoked);
	snprintf(u, sizeof u, "%lld", us);
	snprintf(l, sizeof l, "%d", limit);
	const char *p[] = {after ? r : NULL, u, id, limit > 0 ? l : NULL};
	/* live ones first, newest first; the cursor is the three keys */
	return pal__store_query_json(
	    st,
	    "SELECT coalesce(json_agg(json_build_object('id', id, 'name', name, 'role', role,"
	    " 'tenants', tenants, 'created_by', created_by, 'created_at', created_at,"
	    " 'revoked_at', revoked_at, 'revoked_by', revoked_by, '_c', (revoked_at IS NOT "
	    "NULL)::int"
	    "  || '_' || (extract(epoch FROM created_at) * 1000000)::bigint || '_' || id)"
	    " ORDER BY revoked_at IS NOT NULL, created_at DESC, id DESC), '[]')::text"
	    " FROM (SELECT * FROM api_tokens WHERE $1::int IS NULL"
	    "  OR (revoked_at IS NOT NULL)::int > $1::int OR ((revoked_at IS NOT NULL)::int = "
	    "$1::int"
	    "   AND (created_at, id) < ('epoch'::timestamptz + $2::bigint * interval '1 "
	    "microsecond',"
	    "   $3::text))"
	    "  ORDER BY revoked_at IS NOT NULL, created_at DESC, id DESC LIMIT $4::int) t",
	    4, p, out, err, errlen);
}

int pal_token_list_json(pal_store *st, json_t **out, char *err, size_t errlen)
{
	return pal__store_whole_list(pal__store_tokens_query(st, NULL, 0, out, err, errlen), out);
}

/* S holds N lower-case hex digits, then its end or "_". */
static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!g_ascii_isxdigit(s[i]) || g_ascii_isupper(s[i]))
			return false;
	return s[n] == '\0' || s[n] == '_';
}

int pal_token_revoke(pal_store *st, const char *name_or_id, const char *actor, const char *reason,
		     char *err, size_t errlen)
{
	/* The id is matched only for an argument of its form (16 hex digits);
	 * a name can have that form too, and then both would match: refuse
	 * rather than revoke two. */
	bool id_form = name_or_id && strlen(name_or_id) == 16 && all_hex(name_or_id, 16);
	const char *p[] = {name_or_id, actor, id_form ? "t" : "f", reason && *reason ? reason : NULL};
	PGresult *r = pal__store_query(
	    st,
	    "WITH c AS (SELECT id FROM api_tokens WHERE revoked_at IS NULL"
	    "  AND (name = $1 OR ($3::boolean AND id = $1))),"
	    " t AS (UPDATE api_tokens SET revoked_at = clock_timestamp(), revoked_by = $2"
	    "  WHERE id IN (SELECT id FROM c) AND (SELECT count(*) FROM c) = 1"
	    "  RETURNING id, name, role),"
	    " a AS (INSERT INTO audit_log (actor, action, scope, reason, details)"
	    "  SELECT $2, 'token.revoke', 'token:' || t.name, $4,"
	    "  jsonb_build_object('id', t.id, 'role', t.role) FROM t RETURNING 1)"
	    " SELECT (SELECT count(*) FROM c), (SELECT count(*) FROM a)",
	    4, p, err, errlen);
	if (!r)
		return PAL_EDB;
	int n = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	if (n > 1) {
		snprintf(err, errlen,
			 "\"%s\" is the name of one live token and the id of another; nothing "
			 "revoked (revoke by the other token's name, or by the first one's id: "
			 "`palisade token list`)",
			 name_or_id);
		return PAL_EINVAL;
	}
	if (n == 0) {
		snprintf(err, errlen,
			 "no live token has the name or id \"%s\" (`palisade token list`)",
			 name_or_id);
		return PAL_ENOENT;
	}
	return PAL_OK;
}

int pal_token_verify(pal_store *st, const char *token, pal_token_identity *out, char *err,
		     size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (!token || strlen(token) != PAL_TOKEN_LEN || strncmp(token, "pal_", 4) != 0 ||
	    !all_hex(token + 4, 16) || token[20] != '_' || !all_hex(token + 21, 64)) {
		snprintf(err, errlen, "not a palisade API token");
		return PAL_ENOENT;
	}
	char id[17];
	memcpy(id, token + 4, 16);
	id[16] = '\0';
	const char *p[] = {id};
	PGresult *r = pal__store_query(st,
				       "SELECT name, role, salt, hash, array_to_json(tenants)::text"
				       " FROM api_tokens WHERE id = $1 AND revoked_at IS NULL",
				       1, p, err, errlen);
	if (!r)
		return PAL_EDB;
	if (PQntuples(r) != 1) {
		PQclear(r);
		snprintf(err, errlen, "unknown or revoked token");
		return PAL_ENOENT;
	}
	char *hash = token_hash(PQgetvalue(r, 0, 2), token + 21);
	bool ok = pal_secret_equal(hash, PQgetvalue(r, 0, 3));
	g_free(hash);
	int rc = ok ? pal_role_parse(PQgetvalue(r, 0, 1), &out->role) : PAL_ENOENT;
	if (rc == PAL_OK) {
		memcpy(out->id, id, sizeof out->id);
		snprintf(out->name, sizeof out->name, "%s", PQgetvalue(r, 0, 0));
		json_t *t = json_loads(PQgetvalue(r, 0, 4), 0, NULL);
		size_t i;
		json_t *v;
		json_array_foreach(t, i, v)
		{
			if (out->n_tenants < PAL_TOKEN_TENANTS_MAX)
				snprintf(out->tenants[out->n_tenants++], sizeof out->tenants[0],
					 "%s", json_string_value(v));
		}
		json_decref(t);
	}
	PQclear(r);
	if (rc) {
		memset(out, 0, sizeof *out);
		snprintf(err, errlen, "unknown or revoked token");
		return PAL_ENOENT;
	}
	return PAL_OK;
}
