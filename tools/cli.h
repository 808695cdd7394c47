/*
 * cli.h — the subcommands of the `replayssm` command line (main.c dispatches). Each reads the
 * arguments after the subcommand's name (argv[0] is the name) with cli_parse (options.h),
 * fills its library's options and runs it; it returns the process's exit status (options.h:
 * 0 ok, 1 a run failed, 2 a bad command line, 77 nothing ran for want of a device).
 */
#ifndef RSSM_CLI_H
#define RSSM_CLI_H

int cli_check(int argc, char **argv);      /* check.c: testing/check.h, testing/runtime_check.h */
int cli_bench(int argc, char **argv);      /* bench.c: bench/bench.h */
int cli_bench_step(int argc, char **argv); /* bench_step.c: bench/bench_step.h */
int cli_simulate(int argc, char **argv);   /* simulate.c: sim/simulate.h */
int cli_handoff(int argc, char **argv);    /* handoff.c: sim/handoff.h */

#endif /* RSSM_CLI_H */
