/*
 * cli.h — the subcommands of the `replayssm` command line (tools/main.c dispatches).
 * Each takes the arguments after the subcommand name (argv[0] is the subcommand), the context
 * parameters given by the common options (tuning switches; a subcommand sets the thread count
 * and device ordinal itself) and returns the process exit status.
 */
#ifndef RSSM_CLI_H
#define RSSM_CLI_H

#include <stdio.h>

#include "replayssm.h"

int rssm_cli_check(int argc, char **argv, const rssm_context_params *params);         /* testing/check.c */
int rssm_cli_check_runtime(int argc, char **argv, const rssm_context_params *params); /* testing/runtime_check.c */
int rssm_cli_bench(int argc, char **argv, const rssm_context_params *params);         /* bench/bench.c */
int rssm_cli_bench_step(int argc, char **argv, const rssm_context_params *params);    /* bench/bench_step.c */
int rssm_cli_simulate(int argc, char **argv, const rssm_context_params *params);      /* sim/simulate.c */
int rssm_cli_handoff(int argc, char **argv, const rssm_context_params *params);       /* sim/handoff.c */

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
