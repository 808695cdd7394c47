/*
 * cli.h — the subcommands of the `replayssm` command line (tools/main.c dispatches).
 * Each takes the arguments after the subcommand name (argv[0] is the subcommand) and
 * returns the process exit status.
 */
#ifndef RSSM_CLI_H
#define RSSM_CLI_H

int rssm_cli_check(int argc, char **argv);      /* tools/check.c */
int rssm_cli_bench(int argc, char **argv);      /* tools/bench.c */
int rssm_cli_simulate(int argc, char **argv);   /* tools/simulate.c */
int rssm_cli_bench_step(int argc, char **argv); /* tools/bench_step.c */
int rssm_cli_handoff(int argc, char **argv);    /* tools/handoff.c */

#endif /* RSSM_CLI_H */
