/*
 * simulate.c — `replayssm simulate`: reads the command line into a sim_config
 * (sim/simulate.h) and runs it. The model is the --model preset's, then --layers, --ring-len
 * and --ring change it.
 */
#include "cli.h"
#include "options.h"
#include "replayssm_runtime.h"
#include "simulate.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: replayssm simulate [options]\n"
            "  --device cpu|cuda        where the model runs (default cpu; cuda: mixers and dense layers on the GPU)\n"
            "  --model NAME             demo (default) | demo-kda | qwen3-next | kimi-linear\n"
            "  --layers N               number of linear-attention layers (preset's default: 4; qwen3-next 36)\n"
            "  --requests N             requests in the workload (default 48)\n"
            "  --batch N                concurrent requests (default 16)\n"
            "  --ring-len L             replay ring length (default 16)\n"
            "  --ring f32|bf16          ring dtype (default f32)\n"
            "  --spec T                 speculative decoding, T tokens per verify window (default 1 = off)\n"
            "  --track-interval N       prefix snapshot interval in tokens (default 16)\n"
            "  --gen MIN,MAX            tokens to generate per request (default 24,48; N = N,N)\n"
            "  --arrival-gap N          decode steps between arrivals (default 2; 0 = all at once)\n"
            "  --seed N                 weights and workload seed (default 1)\n"
            "  --threads N              CPU threads (default: all cores)\n"
            "  --profile                time mixers and dense parts separately (synchronises; slower)\n"
            "  --repeat N               run the packed / replay pair N times, report the last (default 1)\n"
            "  --small-batch auto|N     replay: decode steps of at most N requests fold every row, as packed\n"
            "                           decode moves the state (default auto: by device; cpu never; 0 = off)\n"
            "  --tp N                   also run replay with the heads split over N ranks (tensor parallel)\n"
            "                           and check its token streams equal the unsharded run's; cpu: the N\n"
            "                           ranks in this process; cuda: one process per GPU over NCCL (N=1:\n"
            "                           the NCCL path with a 1-rank communicator)\n"
            "  --json                   one JSON object instead of the table\n");
}

static const cli_command cmd = {"simulate", usage};

/* What changes the preset's model: 0 keeps the preset's layer count. */
typedef struct model_flags {
    int model, layers, ring_len, ring;
    int gen[2], ngen;
} model_flags;

/* The preset, then the flags that change it; checks what spans options. */
static int set_model(sim_config *c, const model_flags *f)
{
    sim_config_preset(c, sim_model_names[f->model]);
    if (f->layers) c->model.n_layers = f->layers;
    c->model.layer.ring_len = f->ring_len;
    c->model.layer.ring_dtype = (rssm_dtype)f->ring;
    if (f->ngen) c->gen_min = f->gen[0], c->gen_max = f->gen[f->ngen - 1];
    if (c->gen_min > c->gen_max) return cli_error(&cmd, "--gen %d,%d: MIN exceeds MAX", c->gen_min, c->gen_max);
    if (c->spec > f->ring_len) return cli_error(&cmd, "--spec %d exceeds --ring-len %d", c->spec, f->ring_len);
    rssm_layer sl;
    if (c->tp > 0 && rssm_layer_shard(&c->model.layer, c->tp, 0, &sl, NULL, NULL) != RSSM_OK)
        return cli_error(&cmd, "--tp %d: %s", c->tp, rssm_last_error());
    return 0;
}

int cli_simulate(int argc, char **argv)
{
    static const cli_choice auto_word[] = {{"auto", RSSM_PLAN_SMALL_BATCH_AUTO}, {NULL, 0}};
    sim_config c = sim_config_default();
    cli_choice models[8];
    cli_choices_from_names(sim_model_names, models, 7);
    int device = c.device;
    model_flags f = {0, 0, 16, RSSM_DTYPE_F32, {0, 0}, 0};
    const cli_opt opts[] = {cli_choice_of("--device", &device, cli_run_devices),
                            cli_choice_of("--model", &f.model, models),
                            cli_int("--layers", &f.layers, 1, 1024),
                            cli_int("--requests", &c.requests, 1, 1000000),
                            cli_int("--batch", &c.max_batch, 1, 1 << 16),
                            cli_int("--ring-len", &f.ring_len, 1, RSSM_MAX_RING_LEN),
                            cli_choice_of("--ring", &f.ring, cli_dtypes),
                            cli_int("--spec", &c.spec, 1, RSSM_MAX_RING_LEN),
                            cli_int("--track-interval", &c.track_interval, 1, 1 << 20),
                            cli_list("--gen", f.gen, 2, &f.ngen, 1, 1 << 20),
                            cli_int("--arrival-gap", &c.arrival_gap, 0, 1 << 20),
                            cli_u64("--seed", &c.model.seed),
                            cli_int("--threads", &c.threads, 0, 4096),
                            cli_flag("--profile", &c.profile),
                            cli_int("--repeat", &c.repeat, 1, 1000),
                            cli_int_or("--small-batch", &c.small_batch, 0, 1 << 20, auto_word),
                            cli_int("--tp", &c.tp, 1, 64),
                            cli_flag("--json", &c.json),
                            CLI_END};
    int rc = cli_parse(&cmd, argc, argv, opts, &c.params);
    if (rc != CLI_CONTINUE) return rc;
    c.device = (rssm_device)device;
    if ((rc = set_model(&c, &f))) return rc;
    return sim_run(&c);
}
