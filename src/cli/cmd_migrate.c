/*
 * cmd_migrate.c - `palisade migrate`: bring the schema up to this binary's
 * version.  Safe to run from any number of processes at once (G8).
 */
#include <stdio.h>
#include <string.h>
#include "palisade/cli.h"
#include "palisade/err.h"
#include "cli_int.h"

static void usage(FILE *fp)
{
	fprintf(fp, "usage: palisade migrate [--pg CONNINFO] [--config FILE]\n"
		    "Apply the schema migrations this binary carries (sql/NNN_*.sql) under an\n"
		    "advisory lock.  Refuses a database whose schema is newer than the binary.\n"
		    "Exit: 0 done, 69 database unreachable, 70 schema newer than this binary.\n");
}

int pal_cmd_migrate(int argc, char **argv)
{
	pal_cli_common c = { 0 };
	int ec = pal_cli_parse_common(argc, argv, &c, usage);
	if (ec >= 0)
		return ec;
	pal_store *st;
	ec = pal_cli_connect(&c, true, &st);
	if (ec)
		return ec;
	char err[1024];
	int applied = 0, version = 0;
	int rc = pal_store_migrate(st, &applied, err, sizeof err);
	if (!rc)
		rc = pal_store_schema_check(st, &version, err, sizeof err);
	pal_store_close(st);
	if (rc) {
		pal_cli_err("migrate", "%s", err);
		return rc == PAL_EDB ? PAL_EXIT_UNAVAIL : PAL_EXIT_SOFTWARE;
	}
	printf("migrate: applied %d migration%s; schema at version %d\n", applied,
	       applied == 1 ? "" : "s", version);
	return PAL_EXIT_OK;
}
