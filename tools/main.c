/*
 * main.c — the `replayssm` command: dispatches to a subcommand.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "replayssm.h"

static void usage(FILE *f)
{
    fprintf(f,
            "replayssm %s: ReplaySSM decode for linear-attention layers\n"
            "\n"
            "usage: replayssm <command> [options]\n"
            "  simulate   serve a workload end to end, packed vs replay (the main job)\n"
            "  check      run the equivalence matrix against the float64 reference\n"
            "  bench      time packed vs replay decode on this machine\n"
            "  bench-step time a whole N-layer decode step through the runtime (one CUDA graph)\n"
            "  handoff    prefill/decode hand-off of replay state (export/import, NCCL on cuda)\n"
            "  version    print the library version\n"
            "Run `replayssm <command> --help` for a command's options.\n",
            rssm_version_string());
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "check")) return rssm_cli_check(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return rssm_cli_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "simulate")) return rssm_cli_simulate(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench-step")) return rssm_cli_bench_step(argc - 1, argv + 1);
    if (!strcmp(cmd, "handoff")) return rssm_cli_handoff(argc - 1, argv + 1);
    if (!strcmp(cmd, "version")) {
        printf("replayssm %s (cuda: %s)\n", rssm_version_string(), rssm_cuda_available() ? "available" : "absent");
        return 0;
    }
    fprintf(stderr, "replayssm: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
