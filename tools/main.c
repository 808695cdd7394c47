/*
 * main.c — the `replayssm` command: `--version`, `help [COMMAND]`, and dispatch to a
 * subcommand (cli.h), which reads its own options and the tuning switches (options.h).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "options.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *what;
} command;

static const command commands[] = {
    {"simulate", cli_simulate, "serve a workload end to end, packed vs replay (the main job)"},
    {"check", cli_check, "run the equivalence matrix against the float64 reference"},
    {"bench", cli_bench, "time packed vs replay decode on this machine"},
    {"bench-step", cli_bench_step, "time a whole N-layer decode step through the runtime (one CUDA graph)"},
    {"handoff", cli_handoff, "prefill/decode hand-off of replay state (export/import, NCCL on cuda)"},
};
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

static void usage(FILE *f)
{
    fprintf(f, "replayssm %s: ReplaySSM decode for linear-attention layers\n\nusage: replayssm <command> [options]\n",
            rssm_version_string());
    for (int i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].what);
    fprintf(f, "  version    print the library version (also --version)\n"
               "  help       this text; `replayssm help <command>` (or `<command> --help`): its options\n"
               "\n"
               "Tuning switches, for every command (rssm_context_params in replayssm.h; defaults are the\n"
               "measured best):\n");
    cli_switches_usage(f);
    fprintf(f, "Exit status: 0 ok, 1 a run or check failed, 2 a bad command line, 77 nothing ran because\n"
               "the device is absent (check).\n");
}

static const command *find(const char *name)
{
    for (int i = 0; i < N_COMMANDS; i++)
        if (!strcmp(commands[i].name, name)) return &commands[i];
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "version") || !strcmp(name, "--version")) {
        printf("replayssm %s (cuda: %s)\n", rssm_version_string(), rssm_cuda_available() ? "available" : "absent");
        return CLI_EXIT_OK;
    }
    if (!strcmp(name, "help") || !strcmp(name, "--help") || !strcmp(name, "-h")) {
        if (argc < 3) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        const command *c = find(argv[2]);
        char *help_argv[3] = {argv[2], "--help", NULL};
        if (c) return c->run(2, help_argv);
        fprintf(stderr, "replayssm: unknown command '%s' (replayssm help lists them)\n", argv[2]);
        return CLI_EXIT_USAGE;
    }
    const command *c = find(name);
    if (c) return c->run(argc - 1, argv + 1);
    fprintf(stderr, "replayssm: unknown command '%s' (replayssm help lists them)\n", name);
    return CLI_EXIT_USAGE;
}
