/*
 * main.c — the `replayssm` command: the options common to every subcommand (the context's
 * tuning switches), then dispatch to a subcommand.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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
            "Run `replayssm <command> --help` for a command's options.\n"
            "\n"
            "Tuning switches, for every command (rssm_context_params in replayssm.h; defaults are the\n"
            "measured best):\n"
            "  --cpu-simd 0|1              CPU: SIMD kernels (1) or the portable ones (0)\n"
            "  --cuda-fast 0|1             CUDA: the K = V = 128 kernels where they apply (1) or the general one\n"
            "  --cuda-split 0|1|2|4        CUDA fast kernels: CTAs per head (0 = by batch size)\n"
            "  --cuda-prefetch 0..4        CUDA fast kernels: L2 prefetch distance in waves (0 = off)\n"
            "  --cuda-ring-read -1|0|1     CUDA fast kernels: read the whole ring ahead of the cursor\n"
            "  --cuda-pipeline -1|0|1      CUDA replay decode on the persistent pipeline\n"
            "  --cuda-pipeline-balance -1|0|1  the pipeline deals folding rows first\n"
            "  --cuda-prefill -1..3        CUDA prefill lanes (0 one token at a time, 1 narrow, 2 wide, 3 sliced)\n"
            "(-1 = by the measured rule)\n",
            rssm_version_string());
}

typedef struct switch_opt {
    const char *name;
    size_t offset; /* of the int32_t field in rssm_context_params */
} switch_opt;

static const switch_opt switches[] = {
    {"--cpu-simd", offsetof(rssm_context_params, cpu_simd)},
    {"--cuda-fast", offsetof(rssm_context_params, cuda_fast)},
    {"--cuda-split", offsetof(rssm_context_params, cuda_split)},
    {"--cuda-prefetch", offsetof(rssm_context_params, cuda_prefetch)},
    {"--cuda-ring-read", offsetof(rssm_context_params, cuda_ring_read)},
    {"--cuda-pipeline", offsetof(rssm_context_params, cuda_pipeline)},
    {"--cuda-pipeline-balance", offsetof(rssm_context_params, cuda_pipeline_balance)},
    {"--cuda-prefill", offsetof(rssm_context_params, cuda_prefill)},
};

/* Takes the tuning switches out of argv (argc shrinks); 0, or 2 after printing what was wrong.
 * The range of each value is checked by rssm_context_create. */
static int take_switches(int *argc, char **argv, rssm_context_params *p)
{
    int n = 1;
    for (int i = 1; i < *argc; i++) {
        const switch_opt *s = NULL;
        for (size_t k = 0; k < sizeof switches / sizeof switches[0]; k++)
            if (!strcmp(argv[i], switches[k].name)) s = &switches[k];
        if (!s) {
            argv[n++] = argv[i];
            continue;
        }
        if (i + 1 >= *argc) return fprintf(stderr, "replayssm: %s needs a value\n", argv[i]), 2;
        const char *v = argv[++i];
        char *end;
        errno = 0;
        const long x = strtol(v, &end, 10);
        if (end == v || *end || errno || x < -1 || x > 1024)
            return fprintf(stderr, "replayssm: %s: '%s' is not an integer in [-1, 1024]\n", s->name, v), 2;
        *(int32_t *)((char *)p + s->offset) = (int32_t)x;
    }
    *argc = n;
    argv[n] = NULL;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("replayssm %s (cuda: %s)\n", rssm_version_string(), rssm_cuda_available() ? "available" : "absent");
        return 0;
    }
    rssm_context_params params = rssm_context_params_default();
    int n = argc - 1;
    if (take_switches(&n, argv + 1, &params)) return 2;
    char **args = argv + 1;
    if (!strcmp(cmd, "check")) {
        for (int i = 1; i + 1 < n; i++)
            if (!strcmp(args[i], "--suite") && !strcmp(args[i + 1], "runtime"))
                return rssm_cli_check_runtime(n, args, &params);
        return rssm_cli_check(n, args, &params);
    }
    if (!strcmp(cmd, "bench")) return rssm_cli_bench(n, args, &params);
    if (!strcmp(cmd, "simulate")) return rssm_cli_simulate(n, args, &params);
    if (!strcmp(cmd, "bench-step")) return rssm_cli_bench_step(n, args, &params);
    if (!strcmp(cmd, "handoff")) return rssm_cli_handoff(n, args, &params);
    fprintf(stderr, "replayssm: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
