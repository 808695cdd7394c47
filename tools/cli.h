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

/* In a tool's int-returning helper: a failed library call prints "TOOL: CALL failed: STATUS:
 * message" on stderr and returns -1. */
#define RSSM_CLI_TRY(tool, call)                                                                                       \
    do {                                                                                                               \
        rssm_status st_ = (call);                                                                                      \
        if (st_ != RSSM_OK) {                                                                                          \
            fprintf(stderr, "%s: %s failed: %s: %s\n", tool, #call, rssm_status_name(st_), rssm_last_error());         \
            return -1;                                                                                                 \
        }                                                                                                              \
    } while (0)

#endif /* RSSM_CLI_H */
