/*
 * cli.h - subcommands of bin/palisade.  Each takes the argv that follows the
 * subcommand name (argv[0] is the subcommand itself, getopt-ready) and
 * returns a process exit code (PAL_EXIT_*).
 */
#ifndef PALISADE_CLI_H
#define PALISADE_CLI_H

int pal_cmd_cron(int argc, char **argv);     /* cron next EXPR ... */
int pal_cmd_validate(int argc, char **argv); /* validate FILE... */
int pal_cmd_import(int argc, char **argv);   /* import crontab|kubernetes FILE... */
int pal_cmd_migrate(int argc, char **argv);
int pal_cmd_apply(int argc, char **argv);
int pal_cmd_jobs(int argc, char **argv);
int pal_cmd_calendars(int argc, char **argv);
int pal_cmd_notify_rules(int argc, char **argv);
int pal_cmd_plan(int argc, char **argv);     /* plan diff FILE... */
int pal_cmd_verify(int argc, char **argv);
int pal_cmd_status(int argc, char **argv);
int pal_cmd_node(int argc, char **argv);
int pal_cmd_drain(int argc, char **argv);
int pal_cmd_triggers(int argc, char **argv);
int pal_cmd_pause(int argc, char **argv);
int pal_cmd_resume(int argc, char **argv);
int pal_cmd_cancel(int argc, char **argv);
int pal_cmd_trigger(int argc, char **argv);  /* run now (manual) */
int pal_cmd_backfill(int argc, char **argv);
int pal_cmd_tickets(int argc, char **argv);  /* tickets list|show|resolve */
int pal_cmd_token(int argc, char **argv);    /* token create|list|revoke */
int pal_cmd_report(int argc, char **argv);   /* report cost */
int pal_cmd_shadow(int argc, char **argv);   /* shadow SCOPE|list|diff */
int pal_cmd_cutover(int argc, char **argv);  /* cutover a scope from shadow to live */
int pal_cmd_rollback(int argc, char **argv); /* rollback a scope to shadow */

#endif
