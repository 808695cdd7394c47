/*
 * bench.c — `replayssm bench`: reads the command line into bench_options (bench/bench.h) and
 * runs it. The layer is the --model preset's, then each explicit shape flag overrides its field.
 */
#include "bench.h"
#include "cli.h"
#include "options.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: replayssm bench [options]\n"
               "\n"
               "Times packed decode against ReplaySSM decode (or, with --verify, speculative verify)\n"
               "of one layer and reports time, byte-model traffic and achieved bandwidth.\n"
               "\n"
               "  --device cpu|cuda|reference  device (default: cuda when available, else cpu;\n"
               "                               reference is the float64 oracle, for tiny smoke runs)\n"
               "  --threads N                  CPU threads (default 0 = all cores)\n"
               "  --model NAME                 shape preset (default qwen3-next):\n"
               "      qwen3-next     GDN  H=16 HV=32 K=V=128\n"
               "      qwen3.5-122b   GDN  H=16 HV=64 K=V=128  (our assumption for its linear-attention layers)\n"
               "      kimi-linear    KDA  H=HV=32    K=V=128\n"
               "  --gate gdn|kda --heads H --v-heads HV --k-dim K --v-dim V\n"
               "                               explicit shape; overrides the preset field by field\n"
               "  --batch LIST                 rows per step, e.g. 1,8,64 (default 1,8,64)\n"
               "  --ring-len LIST              ring lengths L, e.g. 16,32 (default 16)\n"
               "  --state f32|bf16             checkpoint dtype (default f32)\n"
               "  --ring f32|bf16              ring u,k dtype (default: the state dtype; G is f32)\n"
               "  --io f32|bf16                q,k,v,a,b,o dtype (default bf16)\n"
               "  --state-layout vk|kv         each head's state [V, K] (default) or [K, V] (FLA's order)\n"
               "  --phase staggered|inphase|both\n"
               "                               ring phases of the rows (default staggered: row i starts\n"
               "                               at cursor i mod L; inphase: all rows of a step fold together)\n"
               "  --slot-order seq|random      rows name consecutive slots (default) or the working set's\n"
               "                               slots in a random order, as a pool hands them out\n"
               "  --verify T                   verify mode: replay verify of T tokens + commit (T-1 or T\n"
               "                               accepted) vs T packed steps writing T intermediate states\n"
               "  --working-set-mib N          checkpoints the slots rotate over (default 1024)\n"
               "  --min-time S                 seconds per timed measurement (default 0.3)\n"
               "  --repeat N                   best of N measurements per path (default 3)\n"
               "  --bw-mib N                   MiB per array of the copy/triad measurement (default: CPU\n"
               "                               2x the last-level cache, 256..1024; CUDA 1024)\n"
               "  --csv FILE                   also write the rows as CSV (written only if every run succeeded)\n"
               "  --help                       this text\n"
               "\n"
               "Columns are described in bench/README.md. Any failing call stops the bench without\n"
               "printing numbers for that configuration.\n");
}

static const cli_command cmd = {"bench", usage};

/* The explicit shape flags (0 / -1: the preset's) and dtypes applied to o's preset layer. */
typedef struct shape_flags {
    int gate, H, HV, K, V, state, ring, io, layout;
} shape_flags;

static int set_layer(bench_options *o, const shape_flags *f)
{
    rssm_layer *l = &o->layer;
    bench_model_layer(o->model, l);
    if (f->gate >= 0) l->gate = (rssm_gate)f->gate;
    if (f->H) l->num_k_heads = f->H;
    if (f->HV) l->num_v_heads = f->HV;
    if (f->K) l->head_k_dim = f->K;
    if (f->V) l->head_v_dim = f->V;
    l->ring_len = o->ring_len[0];
    l->state_dtype = (rssm_dtype)f->state;
    l->ring_dtype = (rssm_dtype)(f->ring >= 0 ? f->ring : f->state);
    l->io_dtype = (rssm_dtype)f->io;
    l->state_layout = (rssm_state_layout)f->layout;
    for (int i = 0; i < o->nring; i++)
        if (o->verify > o->ring_len[i])
            return cli_error(&cmd, "--verify %d does not fit --ring-len %d", o->verify, o->ring_len[i]);
    if (rssm_layer_validate(l) != RSSM_OK)
        return cli_error(&cmd, "--model %s with --gate/--heads/--v-heads/--k-dim/--v-dim: not a valid layer: %s",
                         o->model, rssm_last_error());
    return 0;
}

int cli_bench(int argc, char **argv)
{
    static const cli_choice gates[] = {{"gdn", RSSM_GATE_GDN}, {"kda", RSSM_GATE_KDA}, {NULL, 0}};
    static const cli_choice phases[] = {
        {"staggered", BENCH_PHASE_STAGGERED}, {"inphase", BENCH_PHASE_INPHASE}, {"both", BENCH_PHASE_BOTH}, {NULL, 0}};
    bench_options o = bench_options_default();
    cli_choice models[8];
    cli_choices_from_names(bench_models, models, 7);
    int device = o.device, model = 0;
    static const cli_choice layouts[] = {{"vk", RSSM_LAYOUT_VK}, {"kv", RSSM_LAYOUT_KV}, {NULL, 0}};
    static const cli_choice orders[] = {{"seq", 0}, {"random", 1}, {NULL, 0}};
    shape_flags f = {-1, 0, 0, 0, 0, RSSM_DTYPE_F32, -1, RSSM_DTYPE_BF16, RSSM_LAYOUT_VK};
    const cli_opt opts[] = {cli_choice_of("--device", &device, cli_devices),
                            cli_int("--threads", &o.threads, 0, 4096),
                            cli_choice_of("--model", &model, models),
                            cli_choice_of("--gate", &f.gate, gates),
                            cli_int("--heads", &f.H, 1, 4096),
                            cli_int("--v-heads", &f.HV, 1, 4096),
                            cli_int("--k-dim", &f.K, 1, RSSM_MAX_HEAD_DIM),
                            cli_int("--v-dim", &f.V, 1, RSSM_MAX_HEAD_DIM),
                            cli_list("--batch", o.batch, BENCH_MAX_LIST, &o.nbatch, 1, 1 << 20),
                            cli_list("--ring-len", o.ring_len, BENCH_MAX_LIST, &o.nring, 1, RSSM_MAX_RING_LEN),
                            cli_choice_of("--state", &f.state, cli_dtypes),
                            cli_choice_of("--ring", &f.ring, cli_dtypes),
                            cli_choice_of("--io", &f.io, cli_dtypes),
                            cli_choice_of("--state-layout", &f.layout, layouts),
                            cli_choice_of("--phase", &o.phase, phases),
                            cli_choice_of("--slot-order", &o.random_slots, orders),
                            cli_int("--verify", &o.verify, 1, RSSM_MAX_RING_LEN),
                            cli_num("--working-set-mib", &o.ws_mib, 1 << 20),
                            cli_num("--min-time", &o.min_time, 3600),
                            cli_int("--repeat", &o.repeat, 1, 100),
                            cli_num("--bw-mib", &o.bw_mib, 1 << 20),
                            cli_str("--csv", &o.csv),
                            CLI_END};
    int rc = cli_parse(&cmd, argc, argv, opts, &o.params);
    if (rc != CLI_CONTINUE) return rc;
    o.device = (rssm_device)device;
    o.model = bench_models[model];
    if ((rc = set_layer(&o, &f))) return rc;
    o.argc = argc, o.argv = argv;
    return bench_run(&o);
}
