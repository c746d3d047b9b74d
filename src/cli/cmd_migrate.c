/* placeholder until the module lands; replaced by its owner */
#include <stdio.h>
#include "palisade/cli.h"
#include "palisade/err.h"
int pal_cmd_migrate(int argc, char **argv)
{
	(void)argc; (void)argv;
	fprintf(stderr, "palisade: migrate: not built yet\n");
	return PAL_EXIT_SOFTWARE;
}
