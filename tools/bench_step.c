/*
 * bench_step.c — `replayssm bench-step`: reads the command line into bench_step_options
 * (bench/bench_step.h) and runs it.
 */
#include "bench_step.h"
#include "cli.h"
#include "options.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: replayssm bench-step [--device cpu|cuda] [--model qwen3-next|kimi-linear] [--layers 36] "
               "[--batch 64] [--ring-len 16] [--phase staggered|inphase] [--state f32|bf16] [--io f32|bf16] "
               "[--reps 160] [--small-batch 0|1]\n"
               "  one decode step of a model of N linear-attention layers (qwen3-next: GDN H=16 HV=32, "
               "kimi-linear: KDA H=HV=32; K=V=128, f32 state, bf16 ring, f32 io by default) through the "
               "runtime, as one CUDA graph vs the sum of its parts, and against N packed layers; "
               "--small-batch 1 (default) also times the step with every row folded every step\n");
}

static const cli_command cmd = {"bench-step", usage};

int cli_bench_step(int argc, char **argv)
{
    static const cli_choice models[] = {{"qwen3-next", 0}, {"kimi-linear", 1}, {NULL, 0}};
    static const cli_choice phases[] = {{"staggered", 1}, {"inphase", 0}, {NULL, 0}};
    bench_step_options o = bench_step_options_default();
    int device = o.device, state = o.state, io = o.io;
    const cli_opt opts[] = {cli_choice_of("--device", &device, cli_run_devices),
                            cli_choice_of("--model", &o.kda, models),
                            cli_int("--layers", &o.layers, 1, 1024),
                            cli_int("--batch", &o.batch, 1, 1 << 16),
                            cli_int("--ring-len", &o.ring_len, 1, RSSM_MAX_RING_LEN),
                            cli_choice_of("--phase", &o.staggered, phases),
                            cli_choice_of("--state", &state, cli_dtypes),
                            cli_choice_of("--io", &io, cli_dtypes),
                            cli_int("--reps", &o.reps, 1, 1 << 20),
                            cli_int("--small-batch", &o.small_batch, 0, 1),
                            CLI_END};
    const int rc = cli_parse(&cmd, argc, argv, opts, &o.params);
    if (rc != CLI_CONTINUE) return rc;
    o.device = (rssm_device)device, o.state = (rssm_dtype)state, o.io = (rssm_dtype)io;
    return bench_step_run(&o);
}
