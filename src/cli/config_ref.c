/*
 * config_ref.c - read the connection settings of a node config file for the
 * CLI (precedence: flag > config file > environment).
 */
#include <stdio.h>
#include <stdlib.h>
#include "palisade/err.h"
#include "cli_int.h"

const char *pal__cli_config_pg(const char *path)
{
	fprintf(stderr, "palisade: --config %s: node config loading is not available yet\n", path);
	exit(PAL_EXIT_SOFTWARE);
}

const char *pal__cli_config_zk(const char *path)
{
	return pal__cli_config_pg(path);
}

int pal__cli_config_shards(const pal_cli_common *c)
{
	if (c->config)
		(void)pal__cli_config_pg(c->config);
	return 16;
}
