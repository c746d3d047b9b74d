/*
 * cmd_token.c - `palisade token create|list|revoke`: the API's tokens
 * (tokens.h, docs/api.md).  Runs against the database directly, as
 * `migrate` does: it is how the first admin token is made.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "palisade/tokens.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: palisade token create --name NAME --role viewer|operator|admin\n"
		"                             [--tenant T]... [--pg CONNINFO] [--config FILE]\n"
		"       palisade token list [--output table|json] [--pg CONNINFO] [--config FILE]\n"
		"       palisade token revoke NAME|ID [--reason TEXT] [--pg CONNINFO] [--config FILE]\n"
		"Tokens of the HTTP API (/api/v1 on every node's admin listener).  create\n"
		"prints the token once, alone on the last line of stdout: only a salted hash\n"
		"is stored, so it cannot be shown again.  Roles: viewer reads; operator also\n"
		"pauses, resumes, triggers, cancels, backfills and resolves tickets; admin\n"
		"also applies, deletes and drains.  --tenant (repeatable) limits the token to\n"
		"the jobs of those tenants.  revoke refuses the token at once on every node\n"
		"(--reason: why, kept in its audit row).\n"
		"Written to audit_log.  Needs the database's credentials (not the API).\n"
		"Exit: 0 done, 3 no such live token, 4 a live token has that name, 64 usage,\n"
		"69 database unreachable.\n");
}

/* token create: the secret into SECRET (PAL_TOKEN_LEN + 1 bytes) */
struct create_args {
	const char *name;
	pal_role role;
	const char *const *tenants;
	size_t n;
	char *secret;
};

static int create_call(pal_store *st, const void *ctx, json_t **out, char *err, size_t errlen)
{
	const struct create_args *a = ctx;
	return pal_token_create(st, a->name, a->role, a->tenants, a->n, pal_cli_actor(), a->secret,
				err, errlen);
}

static int list_call(pal_store *st, const void *ctx, json_t **out, char *err, size_t errlen)
{
	return pal_token_list_json(st, out, err, errlen);
}

/* token revoke: the token's name or id, and the reason (or NULL) */
struct revoke_args {
	const char *token;
	const char *reason;
};

static int revoke_call(pal_store *st, const void *ctx, json_t **out, char *err, size_t errlen)
{
	const struct revoke_args *a = ctx;
	return pal_token_revoke(st, a->token, pal_cli_actor(), a->reason, err, errlen);
}

static int token_create(int argc, char **argv)
{
	pal_cli_common c = {0};
	const char *name = NULL, *role_s = NULL;
	const char *tenants[PAL_TOKEN_TENANTS_MAX];
	size_t n = 0;
	static const struct option lo[] = {PAL_CLI_COMMON_LONGOPTS,
					   {"name", required_argument, NULL, 'n'},
					   {"role", required_argument, NULL, 'r'},
					   {"tenant", required_argument, NULL, 't'},
					   {"help", no_argument, NULL, 'h'},
					   {0}};
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "hn:r:t:", lo, NULL)) != -1) {
		switch (opt) {
		case 'n':
			name = optarg;
			break;
		case 'r':
			role_s = optarg;
			break;
		case 't':
			if (n == PAL_TOKEN_TENANTS_MAX) {
				pal_cli_err("token", "at most %d --tenant", PAL_TOKEN_TENANTS_MAX);
				return PAL_EXIT_USAGE;
			}
			if (!pal_cli_name("token", "tenant", optarg))
				return PAL_EXIT_USAGE;
			tenants[n++] = optarg;
			break;
		default:
			if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0)
				return ec;
		}
	}
	pal_role role;
	if (optind != argc || !name || !role_s) {
		pal_cli_err("token", "create needs --name and --role");
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	if (pal_role_parse(role_s, &role)) {
		pal_cli_err("token", "--role \"%s\": expected viewer, operator or admin", role_s);
		return PAL_EXIT_USAGE;
	}
	if (!pal_cli_name("token", "token", name))
		return PAL_EXIT_USAGE;
	char secret[PAL_TOKEN_LEN + 1];
	struct create_args ca = {name, role, tenants, n, secret};
	if ((ec = pal_cli_store_call(&c, "token", create_call, &ca, NULL)))
		return ec;
	printf("created token %s (role %s", name, pal_role_name(role));
	for (size_t i = 0; i < n; i++)
		printf("%s%s", i ? ", " : "; tenants ", tenants[i]);
	printf("); it is shown once, keep it now:\n%s\n", secret);
	return PAL_EXIT_OK;
}

static int token_list(int argc, char **argv)
{
	pal_cli_common c = {0};
	int ec = pal_cli_parse_common(argc, argv, &c, usage);
	if (ec >= 0)
		return ec;
	json_t *rows;
	if ((ec = pal_cli_store_call(&c, "token", list_call, NULL, &rows)))
		return ec;
	if (c.json) {
		json_dumpf(rows, stdout, JSON_INDENT(2));
		putchar('\n');
	} else {
		printf("%-16s %-24s %-8s %-20s %-26s %s\n", "ID", "NAME", "ROLE", "TENANTS",
		       "CREATED", "REVOKED");
		size_t i;
		json_t *t;
		json_array_foreach(rows, i, t)
		{
			char *ten = json_array_size(json_object_get(t, "tenants"))
					? json_dumps(json_object_get(t, "tenants"), JSON_COMPACT)
					: NULL;
			const char *rev = json_string_value(json_object_get(t, "revoked_at"));
			printf("%-16s %-24s %-8s %-20s %-26s %s\n",
			       json_string_value(json_object_get(t, "id")),
			       json_string_value(json_object_get(t, "name")),
			       json_string_value(json_object_get(t, "role")), ten ? ten : "(all)",
			       json_string_value(json_object_get(t, "created_at")),
			       rev ? rev : "-");
			free(ten);
		}
	}
	json_decref(rows);
	return PAL_EXIT_OK;
}

static int token_revoke(int argc, char **argv)
{
	pal_cli_common c = {0};
	static const struct option lo[] = {PAL_CLI_COMMON_LONGOPTS,
					   {"reason", required_argument, NULL, 'r'},
					   {"help", no_argument, NULL, 'h'},
					   {0}};
	struct revoke_args ra = {NULL, NULL};
	int opt, ec;
	while ((opt = getopt_long(argc, argv, "hr:", lo, NULL)) != -1) {
		if (opt == 'r')
			ra.reason = optarg;
		else if ((ec = pal_cli_opt_other(&c, opt, optarg, usage)) >= 0)
			return ec;
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	ra.token = argv[optind];
	if ((ec = pal_cli_store_call(&c, "token", revoke_call, &ra, NULL)))
		return ec;
	printf("revoked token %s\n", argv[optind]);
	return PAL_EXIT_OK;
}

int pal_cmd_token(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return PAL_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return PAL_EXIT_OK;
	}
	if (!strcmp(argv[1], "create"))
		return token_create(argc - 1, argv + 1);
	if (!strcmp(argv[1], "list"))
		return token_list(argc - 1, argv + 1);
	if (!strcmp(argv[1], "revoke"))
		return token_revoke(argc - 1, argv + 1);
	pal_cli_err("token", "unknown subcommand \"%s\" (expected create, list or revoke)",
		    argv[1]);
	return PAL_EXIT_USAGE;
}
