/*
 * handoff.c — `replayssm handoff`: reads the command line into a handoff_config
 * (sim/handoff.h) and runs it. The layer is the --model preset's with --ring-len and --ring.
 */
#include "cli.h"
#include "handoff.h"
#include "options.h"
#include "simulate.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: replayssm handoff [options]\n"
               "  --device cpu|cuda      cpu: in-process transport; cuda: NCCL (default cpu)\n"
               "  --ranks 1|2            cuda: 1 = send to self on one GPU, 2 = prefill GPU 0 -> decode GPU 1\n"
               "  --model NAME           demo (default) | demo-kda | qwen3-next | kimi-linear\n"
               "  --layers N             linear-attention layers (default 4)\n"
               "  --requests N           requests handed off (default 8)\n"
               "  --prompt N             prompt tokens per request (default 64)\n"
               "  --pre N                decode steps before the hand-off (ring entries, at most L; default 5)\n"
               "  --gen N                decode steps after it, compared bit for bit (default 24)\n"
               "  --ring-len L           ring length (default 16)\n"
               "  --ring f32|bf16        ring dtype (default f32)\n"
               "  --seed N               input seed (default 1)\n"
               "  --threads N            CPU threads (default: all cores)\n"
               "  --csv FILE             also write the table as CSV\n");
}

static const cli_command cmd = {"handoff", usage};

int cli_handoff(int argc, char **argv)
{
    handoff_config c = handoff_config_default();
    cli_choice models[8];
    cli_choices_from_names(sim_model_names, models, 7);
    int device = c.device, model = 0, ring_len = 16, ring = RSSM_DTYPE_F32;
    const cli_opt opts[] = {cli_choice_of("--device", &device, cli_run_devices),
                            cli_int("--ranks", &c.ranks, 1, 2),
                            cli_choice_of("--model", &model, models),
                            cli_int("--layers", &c.n_layers, 1, 1024),
                            cli_int("--requests", &c.requests, 1, 1 << 16),
                            cli_int("--prompt", &c.prompt, 1, 1 << 16),
                            cli_int("--pre", &c.pre, 0, RSSM_MAX_RING_LEN),
                            cli_int("--gen", &c.gen, 1, 1 << 16),
                            cli_int("--ring-len", &ring_len, 1, RSSM_MAX_RING_LEN),
                            cli_choice_of("--ring", &ring, cli_dtypes),
                            cli_u64("--seed", &c.seed),
                            cli_int("--threads", &c.threads, 0, 4096),
                            cli_str("--csv", &c.csv),
                            CLI_END};
    const int rc = cli_parse(&cmd, argc, argv, opts, &c.params);
    if (rc != CLI_CONTINUE) return rc;
    c.device = (rssm_device)device;
    c.model = sim_model_names[model];
    sim_model_config m;
    sim_model_preset(c.model, &m);
    c.layer = m.layer;
    c.layer.ring_len = ring_len;
    c.layer.ring_dtype = (rssm_dtype)ring;
    if (c.pre > ring_len) return cli_error(&cmd, "--pre %d exceeds --ring-len %d", c.pre, ring_len);
    if (c.ranks == 2 && c.device != RSSM_DEVICE_CUDA) return cli_error(&cmd, "--ranks 2 needs --device cuda");
    return handoff_run(&c);
}
