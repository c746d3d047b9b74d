/*
 * cli.h - subcommands of bin/palisade.  Each takes the argv that follows the
 * subcommand name (argv[0] is the subcommand itself, getopt-ready) and
 * returns a process exit code (PAL_EXIT_*).
 */
#ifndef PALISADE_CLI_H
#define PALISADE_CLI_H

int pal_cmd_cron(int argc, char **argv);     /* cron next EXPR ... */
int pal_cmd_validate(int argc, char **argv); /* validate FILE... */
int pal_cmd_migrate(int argc, char **argv);
int pal_cmd_apply(int argc, char **argv);
int pal_cmd_jobs(int argc, char **argv);
int pal_cmd_plan(int argc, char **argv);     /* plan diff FILE... */
int pal_cmd_verify(int argc, char **argv);
int pal_cmd_status(int argc, char **argv);
int pal_cmd_node(int argc, char **argv);
int pal_cmd_drain(int argc, char **argv);

#endif
