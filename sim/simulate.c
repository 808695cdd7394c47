/*
 * simulate.c — `replayssm simulate`: a serving workload end to end through the runtime.
 *
 * A small hybrid model (sim_model.h) serves requests that share a system prompt and come
 * back as multi-turn follow-ups. Continuous batching admits requests as slots free up; the
 * requests admitted in one step prefill together (admit_wave), each from the longest prefix
 * the prefix cache holds (radix tree of state snapshots, inserted every track_interval
 * tokens); decode runs the replay path (or the packed baseline); optional
 * speculative decoding drafts by n-gram lookup and verifies through the ring, rolling back by
 * cursor (packed: one state copy per draft token, the accepted one copied back).
 * The same workload runs once with packed decode and once with replay; the report compares
 * tokens/s, state bytes moved per token (byte model), memory held, prefix hit rate,
 * acceptance rate, and whether the generated token streams are identical.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bytemodel.h"
#include "harness.h"
#include "replayssm_runtime.h"
#include "sim_model.h"
#include "simulate.h"
#include "sim_tp.h"

/* ---- configuration ------------------------------------------------------------------------ */

const char *const sim_model_names[] = {"demo", "demo-kda", "qwen3-next", "kimi-linear", NULL};

int sim_model_preset(const char *name, sim_model_config *m)
{
    if (!strcmp(name, "demo")) {
        m->vocab = 512, m->d_model = 256, m->n_layers = 4;
        m->layer = rssm_layer_default(RSSM_GATE_GDN, 2, 4, 64, 64, 16);
    } else if (!strcmp(name, "demo-kda")) {
        m->vocab = 512, m->d_model = 256, m->n_layers = 4;
        m->layer = rssm_layer_default(RSSM_GATE_KDA, 4, 4, 64, 64, 16);
    } else if (!strcmp(name, "qwen3-next")) { /* Qwen3-Next-80B: its 36 Gated DeltaNet layers' shapes */
        m->vocab = 2048, m->d_model = 2048, m->n_layers = 36;
        m->layer = rssm_layer_default(RSSM_GATE_GDN, 16, 32, 128, 128, 16);
    } else if (!strcmp(name, "kimi-linear")) { /* Kimi-Linear KDA layer shapes */
        m->vocab = 2048, m->d_model = 2048, m->n_layers = 4;
        m->layer = rssm_layer_default(RSSM_GATE_KDA, 32, 32, 128, 128, 16);
    } else {
        return -1;
    }
    return 0;
}

int sim_config_preset(sim_config *c, const char *name)
{
    if (sim_model_preset(name, &c->model)) return -1;
    c->preset = name;
    c->model.layer.io_dtype = RSSM_DTYPE_BF16; /* the model's activations (sim_model.h) */
    return 0;
}

sim_config sim_config_default(void)
{
    sim_config c;
    memset(&c, 0, sizeof c);
    c.params = rssm_context_params_default();
    c.device = RSSM_DEVICE_CPU;
    sim_config_preset(&c, "demo");
    c.model.seed = 1;
    c.requests = 48, c.max_batch = 16, c.system_len = 48, c.user_min = 8, c.user_max = 24;
    c.gen_min = 24, c.gen_max = 48, c.arrival_gap = 2, c.spec = 1, c.track_interval = 16, c.snapshots = 64;
    c.followup = 0.4, c.repeat = 1, c.small_batch = RSSM_PLAN_SMALL_BATCH_AUTO;
    return c;
}

/* ---- one run ------------------------------------------------------------------------------- */

typedef struct engine {
    const sim_config *cfg;
    rssm_context *ctx;
    const sim_model *model;
    int replay, T;
    /* the ranks whose heads this process runs (sim_tp.h): one (the whole layer, or this GPU's
     * shard under NCCL) or all tp ranks of a CPU run, each with its pool, planner and cache;
     * their bookkeeping is identical (slots, cursors, prefix-cache decisions depend only on
     * tokens), which the host calls check */
    sim_shard *sh;
    int nsh;
    sim_nccl *comm;    /* NCCL all-gather of the mixer outputs (CUDA --tp), else NULL */
    sim_bf16 *d_stage; /* [tp][rows][HV/tp*V] all-gather staging (NCCL) */
    /* device buffers: activations [rows][d_model], fused projections [rows][proj], mixer
     * outputs [rows][HV*V] (all heads), slot tables */
    float *d_x;
    sim_bf16 *d_proj, *d_mix; /* bf16, the layers' io dtype (sim_model.h) */
    int32_t *d_slot;
    /* host buffers: the step's input tokens and the greedy next tokens */
    int32_t *tokens, *next;
    int max_rows; /* max_batch * T */
    int pf_rows;  /* prefill: requests in the forward (ragged rows, d_cu) */
    int pf_tmax;  /* prefill: the forward's longest row */
    /* admit_wave's scratch, [max_batch] each: a forward's requests, their positions, chunk
     * lengths and whether a chunk's end is a snapshot point; every admitted request's position,
     * chunk end, state (0 not started, 1 running, 2 done), snapshot point and whether this
     * round's chunk ends there; the forward's row offsets [max_batch + 1] (host and device) */
    request **pf_grp;
    int *pf_gpos, *pf_glen, *pf_gsnap, *pf_pos, *pf_end, *pf_state, *pf_cut, *pf_snap;
    int32_t *pf_cu, *d_cu;
    request *rq; /* the workload */
    /* --profile: where forward charges its mixer and dense seconds (NULL: not timed) */
    double *prof_mixer, *prof_dense;
    /* the step loop: the request of each row [max_batch] (NULL: free), the step's admissions
     * [max_batch], slots, sequence lengths, accepted tokens and fold flags [max_batch], a
     * row's drafts [T + 1]; packed verify's scratch slots [max_batch * T] (`scratch` of them)
     * and the host side of its slot tables in d_slot [max_batch * (T + 1)] */
    request **rows, **wave;
    int32_t *slot, *seq, *acc, *drafts, *scratch_slot, *slot_tab;
    uint8_t *fold;
    int scratch;
    int32_t *system; /* the workload's system prompt */
    int finished;    /* requests done */
} engine;

#define CHECK(call) SIM_TRY("simulate", call)

/* The ranks' host bookkeeping must agree: a slot or a prefix match that differs between ranks
 * would be a runtime bug (they depend only on the order of calls and on tokens). */
static int agree(const char *what, int32_t first, int32_t got)
{
    if (first == got) return 0;
    fprintf(stderr, "simulate: ranks disagree on %s (%d vs %d)\n", what, first, got);
    return -1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int upload(engine *e, void *dst, const void *src, size_t n)
{
    return rssm_mem_copy(e->ctx, dst, src, n, RSSM_COPY_HOST_TO_DEVICE) == RSSM_OK ? 0 : -1;
}

/* Row of token t of batch row `row` in the step's activations: [B][T] for the kernels' verify,
 * [T][B] for the packed baseline (its T calls then see contiguous rows). */
static int tok_index(const engine *e, int row, int t)
{
    return (!e->replay && e->T > 1) ? t * e->cfg->max_batch + row : row * e->T + t;
}

/* Fills io's per-token tensors from a shard's fused projection rows ([rows][h->proj], device). */
static void io_from_proj(const engine *e, const sim_shard *h, int layer, const sim_bf16 *proj, rssm_step_io *io)
{
    io->q = proj + h->off_q, io->k = proj + h->off_k, io->v = proj + h->off_v;
    io->a = proj + h->off_a, io->b = proj + h->off_b;
    io->q_stride = io->k_stride = io->v_stride = io->a_stride = io->b_stride = h->proj;
    io->A_log = sim_shard_A_log(h, e->model, layer);
    io->dt_bias = sim_shard_dt_bias(h, e->model, layer);
    io->g = io->beta = NULL;
}

/* Runs the layers over rows already embedded in e->d_x ([n][d_model]) with `mixer` per layer;
 * the residual stream stays in e->d_x. */
typedef int (*mixer_fn)(engine *e, sim_shard *h, int layer, int n, const rssm_state *st);

static int forward(engine *e, int n, mixer_fn mixer)
{
    const sim_model *m = e->model;
    const int prof = e->prof_mixer != NULL;
    double t = prof ? now_s() : 0;
    /* --profile: synchronise after each part and charge it to the dense or mixer time */
#define PROFILE_MARK(field)                                                                                            \
    do {                                                                                                               \
        if (prof) {                                                                                                    \
            CHECK(rssm_context_synchronize(e->ctx));                                                                   \
            const double t1_ = now_s();                                                                                \
            *e->field += t1_ - t, t = t1_;                                                                             \
        }                                                                                                              \
    } while (0)
    for (int layer = 0; layer < m->cfg.n_layers; layer++) {
        if (sim_project_in(e->ctx, m, layer, e->d_x, n, e->d_proj)) return -1;
        PROFILE_MARK(prof_dense);
        /* each rank: its heads of the projection, its mixer; then every rank's outputs */
        for (int s = 0; s < e->nsh; s++) {
            sim_shard *h = &e->sh[s];
            rssm_state st;
            CHECK(rssm_pool_state(h->pool, layer, &st));
            if (sim_shard_slice(e->ctx, m, h, e->d_proj, n)) return -1;
            if (mixer(e, h, layer, n, &st)) return -1;
        }
        if (e->comm) {
            if (sim_tp_gather_nccl(e->ctx, m, &e->sh[0], e->comm, e->d_stage, n, e->d_mix)) return -1;
        } else if (e->sh[0].sliced) {
            if (sim_tp_gather_local(e->ctx, m, e->sh, n, e->d_mix)) return -1;
        }
        PROFILE_MARK(prof_mixer);
        if (sim_project_out(e->ctx, m, layer, e->d_mix, n, e->d_x)) return -1;
        PROFILE_MARK(prof_dense);
    }
#undef PROFILE_MARK
    return 0;
}

/* prefill: pf_rows requests (slots in d_slot) of ragged lengths (offsets in d_cu), their n
 * tokens packed row after row */
static int mixer_prefill(engine *e, sim_shard *h, int layer, int n, const rssm_state *st)
{
    (void)n;
    rssm_step_io io = {0};
    io.batch = e->pf_rows, io.tokens = e->pf_tmax, io.cu_seqlens = e->d_cu;
    io_from_proj(e, h, layer, h->d_proj, &io);
    io.o = h->d_mix;
    io.slot = e->d_slot;
    CHECK(rssm_prefill(e->ctx, &h->layers[layer], st, &io, rssm_context_stream(e->ctx)));
    return 0;
}

/* decode: the planner's rows, one token each */
static int mixer_decode(engine *e, sim_shard *h, int layer, int n, const rssm_state *st)
{
    rssm_step_io io = {0};
    CHECK(rssm_plan_io(h->plan, &io));
    io_from_proj(e, h, layer, h->d_proj, &io);
    io.o = h->d_mix;
    if (e->replay)
        CHECK(rssm_decode_replay(e->ctx, &h->layers[layer], st, &io, rssm_context_stream(e->ctx)));
    else
        CHECK(rssm_decode_packed(e->ctx, &h->layers[layer], st, &io, rssm_context_stream(e->ctx)));
    return 0;
}

/* verify through the ring: the planner's rows, T tokens each */
static int mixer_verify(engine *e, sim_shard *h, int layer, int n, const rssm_state *st)
{
    rssm_step_io io = {0};
    CHECK(rssm_plan_io(h->plan, &io));
    io.tokens = e->T;
    io_from_proj(e, h, layer, h->d_proj, &io);
    io.o = h->d_mix;
    CHECK(rssm_verify(e->ctx, &h->layers[layer], st, &io, rssm_context_stream(e->ctx)));
    return 0;
}

/* packed verify: T packed steps per row, token t reading the state of token t-1 and writing
 * its own scratch slot (d_slot holds [T+1][batch] slot tables: request slots, then scratch);
 * rows are token-major ([T][B], tok_index) */
static int mixer_verify_packed(engine *e, sim_shard *h, int layer, int n, const rssm_state *st)
{
    const rssm_layer *l = &h->layers[layer];
    const int B = e->cfg->max_batch, T = e->T;
    const size_t mix_row = (size_t)l->num_v_heads * l->head_v_dim;
    for (int t = 0; t < T; t++) {
        rssm_step_io io = {0};
        io.batch = B, io.tokens = 1;
        io_from_proj(e, h, layer, h->d_proj + (size_t)t * B * h->proj, &io);
        io.o = h->d_mix + (size_t)t * B * mix_row;
        io.slot = e->d_slot + (size_t)t * B;
        io.write_slot = e->d_slot + (size_t)(t + 1) * B;
        CHECK(rssm_decode_packed(e->ctx, l, st, &io, rssm_context_stream(e->ctx)));
    }
    return 0;
}

/* Token rows of the activation buffers: a verify step's B * T, or a prefill round's chunks of
 * every row (B * track interval, at most 4096), and at least 256. */
static int max_rows(const sim_config *c)
{
    int n = c->max_batch * c->track_interval < 4096 ? c->max_batch * c->track_interval : 4096;
    if (n < c->max_batch * c->spec) n = c->max_batch * c->spec;
    return n > 256 ? n : 256;
}

static double state_bytes_token(const rssm_layer *l) { return rssm_bm_packed_token(l) - rssm_bm_io_token(l); }

/* Prefix match of r into its slot (every rank); sets r->matched. */
static int match_prefix(engine *e, request *r)
{
    int32_t matched = 0;
    for (sim_shard *h = e->sh; h < e->sh + e->nsh; h++) {
        int32_t mh = 0;
        CHECK(rssm_prefix_cache_match(h->cache, r->hist, r->prompt_len - 1, h->pool, r->slot, &mh, NULL));
        if (h == e->sh) matched = mh;
        if (agree("a prefix match", matched, mh)) return -1;
    }
    r->matched = matched;
    return 0;
}

/* Prefills chunk [pos[i], pos[i] + len[i]) of each of the k requests in grp (one forward, the
 * chunks as ragged rows), then resets their cursors, snapshots the chunks whose end is a
 * snapshot point (snap[i]; a multiple of the interval before the prompt's end), and takes the
 * first generated token of the prompts it completes. */
static int prefill_group(engine *e, sim_result *res, request **grp, const int *pos, const int *len, const int *snap,
                         int k)
{
    const sim_config *c = e->cfg;
    const int D = e->model->cfg.d_model;
    int32_t *cu = e->pf_cu;
    cu[0] = 0, e->pf_tmax = 1;
    for (int i = 0; i < k; i++) {
        memcpy(e->tokens + cu[i], grp[i]->hist + pos[i], sizeof(int32_t) * len[i]);
        cu[i + 1] = cu[i] + len[i];
        if (len[i] > e->pf_tmax) e->pf_tmax = len[i];
        e->next[i] = grp[i]->slot; /* the slot table, staged in the next-token buffer */
    }
    const int n = cu[k];
    if (upload(e, e->d_slot, e->next, sizeof(int32_t) * k)) return -1;
    if (upload(e, e->d_cu, cu, sizeof(int32_t) * (k + 1))) return -1;
    if (sim_embed(e->ctx, e->model, e->tokens, n, e->d_x)) return -1;
    e->pf_rows = k;
    if (c->profile) e->prof_mixer = &res->pf_mixer, e->prof_dense = &res->pf_dense;
    const int fw = forward(e, n, mixer_prefill);
    e->prof_mixer = e->prof_dense = NULL;
    if (fw) return -1;
    res->prefill_forwards++;
    res->prefill_tokens += n;
    res->prefill_rows += k;
    res->prefill_longest += e->pf_tmax;
    for (sim_shard *h = e->sh; h < e->sh + e->nsh; h++) {
        rssm_state st0;
        CHECK(rssm_pool_state(h->pool, 0, &st0));
        CHECK(rssm_reset_cursors(e->ctx, &st0, k, e->d_slot, rssm_context_stream(e->ctx)));
    }
    for (int i = 0; i < k; i++) {
        request *r = grp[i];
        const int end = pos[i] + len[i];
        r->cursor = 0;
        if (snap[i] && end < r->prompt_len)
            for (sim_shard *h = e->sh; h < e->sh + e->nsh; h++)
                CHECK(rssm_prefix_cache_insert_async(h->cache, r->hist, end, h->pool, r->slot, RSSM_SNAPSHOT_CHECKPOINT,
                                                     rssm_context_stream(e->ctx)));
        if (end == r->prompt_len) {
            int32_t next;
            if (sim_next_tokens(e->ctx, e->model, e->d_x + (size_t)(cu[i + 1] - 1) * D, 1, &next)) return -1;
            if (sim_hist_push(r, next)) return -1;
            r->generated = 1;
            r->seq_len = r->prompt_len;
            res->generated++;
        }
    }
    return 0;
}

/* Longest prefix of r's prompt (short of its last token) that another request's tokens share:
 * what an engine's radix tree over every sequence it holds (its attention KV cache) knows. */
static int shared_prefix(const engine *e, const request *r)
{
    const int cap = r->prompt_len - 1;
    int best = 0;
    for (int j = 0; j < e->cfg->requests && best < cap; j++) {
        const request *o = &e->rq[j];
        if (o == r || o->hist_len == 0) continue;
        const int n = o->hist_len < cap ? o->hist_len : cap;
        int m = 0;
        while (m < n && o->hist[m] == r->hist[m])
            m++;
        if (m > best) best = m;
    }
    return best;
}

/* Admits the k requests of wave (rows already chosen) as an engine batches prefill: each gets a
 * slot and its longest cached prefix, then all prefill together in rounds. A request's prefill
 * stops (and snapshots) at its snapshot point only: the last snapshot boundary (a multiple of
 * the track interval) inside the prefix it shares with another request, the point a later
 * request can reuse; the rest of its prompt is its own (decode snapshots its conversation on).
 * In a round every running request advances to its snapshot point or its prompt's end, all of
 * them as ragged rows of one forward (of at most max_rows tokens). A request that has not
 * started waits while an earlier running request computes the prefix up to its snapshot point
 * (stopping and snapshotting there too when that point is shorter than its own), then matches
 * the cache again: a shared prefix is computed once. */
static int admit_wave(engine *e, sim_result *res, request **wave, int k)
{
    const sim_config *c = e->cfg;
    request **grp = e->pf_grp;
    int *gpos = e->pf_gpos, *glen = e->pf_glen, *pos = e->pf_pos, *end = e->pf_end, *state = e->pf_state;
    int *cut = e->pf_cut, *snap = e->pf_snap, *gsnap = e->pf_gsnap;
    memset(state, 0, sizeof(int) * (size_t)k);
    for (int i = 0; i < k; i++) {
        request *r = wave[i];
        cut[i] = shared_prefix(e, r) / c->track_interval * c->track_interval;
        for (sim_shard *h = e->sh; h < e->sh + e->nsh; h++) {
            int32_t slot;
            CHECK(rssm_pool_acquire(h->pool, &slot));
            if (h == e->sh) r->slot = slot;
            if (agree("a slot", r->slot, slot)) return -1;
        }
        res->prompt_tokens += r->prompt_len;
        res->admitted++;
    }
    for (int left = k; left > 0;) {
        /* requests that have not started match again (earlier rounds may have cached more) */
        double tm = 0;
        if (c->profile) {
            CHECK(rssm_context_synchronize(e->ctx));
            tm = now_s();
        }
        for (int i = 0; i < k; i++) {
            if (state[i] != 0) continue;
            if (match_prefix(e, wave[i])) return -1;
            pos[i] = wave[i]->matched;
        }
        if (c->profile) {
            CHECK(rssm_context_synchronize(e->ctx));
            res->pf_match += now_s() - tm;
        }
        /* this round's chunk of each request, up to its snapshot point or prompt end */
        int running = 0;
        for (int i = 0; i < k; i++) {
            if (state[i] == 2) continue;
            const request *r = wave[i];
            const int target = pos[i] < cut[i] ? cut[i] : r->prompt_len;
            end[i] = target - pos[i] > e->max_rows ? pos[i] + e->max_rows : target;
            snap[i] = end[i] == cut[i];
            /* not started, and an earlier running request computes the prefix up to this one's
             * snapshot point: that one stops and snapshots there (when it would pass it in this
             * round), this one waits and then matches the cache again */
            int wait = 0;
            if (state[i] == 0 && target == cut[i])
                for (int j = 0; j < i && !wait; j++) {
                    wait = state[j] == 1 && end[j] >= 0 && pos[j] < cut[i] && cut[i] < wave[j]->prompt_len &&
                           !memcmp(wave[j]->hist, r->hist, sizeof(int32_t) * cut[i]);
                    if (wait && end[j] >= cut[i]) end[j] = cut[i], snap[j] = 1;
                }
            if (wait) {
                end[i] = -1;
                continue;
            }
            if (state[i] == 0) {
                res->reused_tokens += r->matched;
                res->hits += r->matched > 0;
                state[i] = 1;
            }
            running++;
        }
        /* every running request advances to its chunk's end, in forwards of at most max_rows tokens */
        for (int i = 0; i < k && running > 0;) {
            int g = 0, n = 0;
            for (; i < k; i++) {
                if (state[i] != 1 || end[i] < 0) continue;
                if (n + end[i] - pos[i] > e->max_rows) break;
                grp[g] = wave[i], gpos[g] = pos[i], glen[g] = end[i] - pos[i], gsnap[g] = snap[i], n += glen[g], g++;
                pos[i] = end[i];
                if (pos[i] == wave[i]->prompt_len) state[i] = 2, left--;
            }
            if (g && prefill_group(e, res, grp, gpos, glen, gsnap, g)) return -1;
            running -= g;
        }
    }
    return 0;
}

/* ---- one run: setup ----------------------------------------------------------------------------- */

/* Each shard's pools (requests, snapshots), prefix cache and planner. Packed keeps no ring: its
 * pools' layers have L = 1 (one entry, never used). */
static int engine_shards(engine *e, int tp)
{
    const sim_config *c = e->cfg;
    const int B = c->max_batch, nl = e->model->cfg.n_layers;
    rssm_context *ctx = e->ctx;
    e->nsh = tp > 0 && !e->comm ? tp : 1;
    e->sh = calloc(e->nsh, sizeof *e->sh);
    if (!e->sh) return -1;
    for (int s = 0; s < e->nsh; s++) {
        sim_shard *h = &e->sh[s];
        if (sim_shard_init(h, ctx, e->model, tp, e->comm ? sim_nccl_rank(e->comm) : s, e->max_rows, e->d_proj,
                           e->d_mix))
            return -1;
        h->layers = malloc(sizeof(rssm_layer) * nl);
        if (!h->layers) return -1;
        for (int i = 0; i < nl; i++) {
            h->layers[i] = h->layer;
            if (!e->replay) h->layers[i].ring_len = 1;
        }
        CHECK(rssm_pool_create(ctx, h->layers, nl, B + e->scratch, &h->pool));
        CHECK(rssm_pool_create(ctx, h->layers, nl, c->snapshots, &h->snap_pool));
        CHECK(rssm_prefix_cache_create(h->snap_pool, 0, 0, &h->cache));
        CHECK(rssm_plan_create(h->pool, B, c->track_interval, &h->plan));
        if (e->replay) CHECK(rssm_plan_set_small_batch(h->plan, c->small_batch));
    }
    return 0;
}

/* The host tables of admissions and of the step loop, and packed verify's scratch slots. */
static int engine_tables(engine *e)
{
    const int B = e->cfg->max_batch, T = e->T;
    e->pf_grp = calloc(B, sizeof *e->pf_grp);
    e->pf_gpos = calloc(B, sizeof(int)), e->pf_pos = calloc(B, sizeof(int));
    e->pf_end = calloc(B, sizeof(int)), e->pf_state = calloc(B, sizeof(int)), e->pf_glen = calloc(B, sizeof(int));
    e->pf_cut = calloc(B, sizeof(int)), e->pf_snap = calloc(B, sizeof(int)), e->pf_gsnap = calloc(B, sizeof(int));
    e->pf_cu = calloc((size_t)B + 1, sizeof(int32_t));
    if (!e->pf_grp || !e->pf_gpos || !e->pf_pos || !e->pf_end || !e->pf_state || !e->pf_glen || !e->pf_cut ||
        !e->pf_snap || !e->pf_gsnap || !e->pf_cu)
        return -1;
    CHECK(rssm_mem_alloc(e->ctx, sizeof(int32_t) * ((size_t)B + 1), (void **)&e->d_cu));
    e->rows = calloc(B, sizeof *e->rows), e->wave = calloc(B, sizeof *e->wave);
    e->slot = malloc(sizeof(int32_t) * B), e->seq = malloc(sizeof(int32_t) * B), e->acc = malloc(sizeof(int32_t) * B);
    e->fold = malloc(B);
    e->drafts = malloc(sizeof(int32_t) * (T + 1));
    e->scratch_slot = malloc(sizeof(int32_t) * (e->scratch + 1));
    e->slot_tab = malloc(sizeof(int32_t) * (size_t)B * (T + 1));
    if (!e->rows || !e->wave || !e->slot || !e->seq || !e->acc || !e->fold || !e->drafts || !e->scratch_slot ||
        !e->slot_tab)
        return -1;
    for (int i = 0; i < e->scratch; i++)
        for (sim_shard *h = e->sh; h < e->sh + e->nsh; h++) {
            int32_t sl;
            CHECK(rssm_pool_acquire(h->pool, &sl));
            if (h == e->sh) e->scratch_slot[i] = sl;
            if (agree("a scratch slot", e->scratch_slot[i], sl)) return -1;
        }
    return 0;
}

/* Everything a run needs, for the workload rq. tp 0: the whole layer (packed or replay);
 * tp >= 1: the heads split over tp ranks (sim_tp.h), all of them in this process when comm is
 * NULL, else this GPU's rank with the mixer outputs all-gathered over NCCL. */
static int engine_init(engine *e, sim_result *res, int tp)
{
    rssm_context *ctx = e->ctx;
    const sim_model *model = e->model;
    const rssm_layer *ml = &model->cfg.layer;
    const int B = e->cfg->max_batch, T = e->T;
    const size_t mix_row = (size_t)ml->num_v_heads * ml->head_v_dim;
    e->max_rows = max_rows(e->cfg); /* as sim_model_init's scratch */
    e->scratch = (!e->replay && T > 1) ? B * T : 0;
    CHECK(rssm_mem_alloc(ctx, sizeof(float) * (size_t)e->max_rows * model->cfg.d_model, (void **)&e->d_x));
    CHECK(rssm_mem_alloc(ctx, sizeof(sim_bf16) * (size_t)e->max_rows * model->proj, (void **)&e->d_proj));
    CHECK(rssm_mem_alloc(ctx, sizeof(sim_bf16) * (size_t)e->max_rows * mix_row, (void **)&e->d_mix));
    if (e->comm) CHECK(rssm_mem_alloc(ctx, sizeof(sim_bf16) * (size_t)e->max_rows * mix_row, (void **)&e->d_stage));
    if (engine_shards(e, tp)) return -1;
    res->small_rows = rssm_plan_small_batch(e->sh[0].plan);
    res->memory =
        rssm_pool_memory(e->sh[0].pool) + rssm_pool_memory(e->sh[0].snap_pool) + rssm_plan_memory(e->sh[0].plan);
    CHECK(rssm_mem_alloc(ctx, sizeof(int32_t) * (size_t)B * (T + 1) + 64, (void **)&e->d_slot));
    e->tokens = malloc(sizeof(int32_t) * e->max_rows);
    e->next = malloc(sizeof(int32_t) * e->max_rows);
    if (!e->tokens || !e->next) return -1;
    if (engine_tables(e)) return -1;
    /* NCCL connects its peers on the first collectives: warm the all-gather up at the smallest
     * and largest sizes before the clock starts, as an engine does before it serves */
    if (e->comm) {
        const int rows_of[4] = {1, e->max_rows, 1, e->max_rows};
        for (int i = 0; i < 4; i++)
            if (sim_tp_gather_nccl(ctx, model, &e->sh[0], e->comm, e->d_stage, rows_of[i], e->d_mix)) return -1;
        CHECK(rssm_context_synchronize(ctx));
    }
    return 0;
}

static void engine_free(engine *e)
{
    rssm_context *ctx = e->ctx;
    free(e->pf_grp), free(e->pf_gpos), free(e->pf_glen), free(e->pf_pos), free(e->pf_end), free(e->pf_state);
    free(e->pf_cut), free(e->pf_snap), free(e->pf_gsnap);
    free(e->pf_cu);
    rssm_mem_free(ctx, e->d_cu);
    free(e->rows), free(e->wave), free(e->slot), free(e->seq), free(e->acc), free(e->fold), free(e->drafts);
    free(e->system), free(e->scratch_slot), free(e->slot_tab);
    for (sim_shard *h = e->sh; h && h < e->sh + e->nsh; h++) {
        rssm_prefix_cache_free(h->cache);
        rssm_plan_free(h->plan);
        rssm_pool_free(h->snap_pool);
        rssm_pool_free(h->pool);
        free(h->layers);
        sim_shard_free(h, ctx);
    }
    free(e->sh);
    rssm_mem_free(ctx, e->d_stage);
    rssm_mem_free(ctx, e->d_x), rssm_mem_free(ctx, e->d_proj), rssm_mem_free(ctx, e->d_mix);
    rssm_mem_free(ctx, e->d_slot);
    free(e->tokens), free(e->next);
}

/* ---- one run: the step loop ------------------------------------------------------------------------- */

/* Admits arrivals in order while rows are free (a follow-up waits for the request it continues
 * without holding back the ones behind it; *next_req: the first not admitted) and prefills them
 * together. 0, or -1 on failure. */
static int admit(engine *e, sim_result *res, int step, int *next_req)
{
    const sim_config *c = e->cfg;
    request *rq = e->rq;
    int k = 0;
    for (int row = 0; row < c->max_batch; row++) {
        if (e->rows[row]) continue;
        while (*next_req < c->requests && rq[*next_req].row >= 0)
            (*next_req)++;
        request *r = NULL;
        for (int i = *next_req; !r && i < c->requests && rq[i].arrival <= step; i++)
            if (rq[i].row < 0 && (rq[i].parent < 0 || rq[rq[i].parent].done)) r = &rq[i];
        if (!r) break;
        if (sim_build_prompt(r, rq, e->system, c->system_len)) return -1;
        r->row = row;
        e->rows[row] = e->wave[k++] = r;
    }
    if (k) {
        const double ta = now_s();
        if (admit_wave(e, res, e->wave, k)) return -1;
        res->prefill_seconds += now_s() - ta;
    }
    return 0;
}

/* The step's input tokens: each row's next token, then its n-gram drafts (T > 1). */
static void step_tokens(engine *e)
{
    const int T = e->T;
    for (int row = 0; row < e->cfg->max_batch; row++) {
        request *r = e->rows[row];
        for (int t = 0; t < T; t++)
            e->tokens[tok_index(e, row, t)] = 0;
        if (!r) continue;
        e->tokens[tok_index(e, row, 0)] = r->hist[r->seq_len];
        if (T > 1) {
            sim_draft(r->hist, r->seq_len + 1, T - 1, e->drafts);
            for (int t = 1; t < T; t++)
                e->tokens[tok_index(e, row, t)] = e->drafts[t - 1];
        }
    }
}

/* The forward of one decode (T = 1) or verify (T > 1) step over all rows; the greedy next
 * tokens in e->next. */
static int step_forward(engine *e)
{
    const int B = e->cfg->max_batch, T = e->T;
    if (sim_embed(e->ctx, e->model, e->tokens, B * T, e->d_x)) return -1;
    if (!e->replay && T > 1) {
        /* slot tables: [0] request slots, [t+1] scratch slots of token t */
        int32_t *tab = e->slot_tab;
        for (int row = 0; row < B; row++) {
            tab[row] = e->slot[row];
            for (int t = 0; t < T; t++)
                tab[(size_t)(t + 1) * B + row] = e->rows[row] ? e->scratch_slot[row * T + t] : -1;
        }
        if (upload(e, e->d_slot, tab, sizeof(int32_t) * (size_t)B * (T + 1))) return -1;
        if (forward(e, B * T, mixer_verify_packed)) return -1;
    } else {
        if (e->replay)
            for (sim_shard *h = e->sh; h < e->sh + e->nsh; h++)
                CHECK(rssm_plan_begin(h->plan, T > 1 ? RSSM_PLAN_VERIFY : RSSM_PLAN_DECODE, T,
                                      rssm_context_stream(e->ctx)));
        if (forward(e, B * T, T > 1 ? mixer_verify : mixer_decode)) return -1;
    }
    return sim_next_tokens(e->ctx, e->model, e->d_x, B * T, e->next);
}

/* Acceptance: token t's prediction must equal draft t+1 for the next to count; then the
 * replay planner's commit (verify) and the step's end. */
static int step_accept(engine *e)
{
    const int B = e->cfg->max_batch, T = e->T;
    for (int row = 0; row < B; row++) {
        request *r = e->rows[row];
        e->acc[row] = 0;
        if (!r) continue;
        int a = 1;
        while (a < T && e->tokens[tok_index(e, row, a)] == e->next[tok_index(e, row, a - 1)])
            a++;
        const int left = r->max_new - r->generated;
        if (a > left) a = left > 0 ? left : 1;
        e->acc[row] = a;
    }
    if (e->replay && T > 1)
        for (sim_shard *h = e->sh; h < e->sh + e->nsh; h++)
            CHECK(rssm_plan_set_accepted(h->plan, B, e->acc));
    if (e->replay)
        for (sim_shard *h = e->sh; h < e->sh + e->nsh; h++)
            CHECK(rssm_plan_end(h->plan, rssm_context_stream(e->ctx)));
    return 0;
}

/* The byte model of request r's step in row `row` (every: the step folded every row), and
 * the host mirror of its cursor. */
static void row_bytes(engine *e, sim_result *res, request *r, int row, int every)
{
    const rssm_layer *l = &e->model->cfg.layer;
    const int T = e->T, nl = e->model->cfg.n_layers, a = e->acc[row];
    const double io = rssm_bm_io_token(l);
    if (e->replay && T == 1) {
        const int h = r->cursor; /* decode-only runs never start-fold */
        const int fold_end = h + 1 == l->ring_len || e->fold[row] || every;
        res->state_bytes += nl * (rssm_bm_replay_step(l, h, fold_end) - io);
        r->cursor = rssm_cursor_after_decode(r->cursor, l->ring_len, e->fold[row] || every);
    } else if (e->replay) {
        const int start = rssm_start_fold(r->cursor, T, l->ring_len, e->fold[row]);
        res->state_bytes += nl * (rssm_bm_verify_replay(l, r->cursor, T, start) - T * io);
        r->cursor = rssm_cursor_after_commit(r->cursor, T, l->ring_len, e->fold[row], a);
    } else if (T > 1) {
        /* T intermediate states, then the accepted one copied back (read + write) */
        res->state_bytes += nl * (rssm_bm_verify_packed(l, T) - T * io + state_bytes_token(l));
    } else {
        res->state_bytes += nl * state_bytes_token(l);
    }
}

/* Packed verify's commit as the engines do it: every row's accepted state (its scratch slot of
 * token a - 1) goes into the request's slot in one scatter on the device per layer (a
 * materialise of slots whose rings are empty: a copy; the slot tables of the forward in d_slot
 * are spent by now), not a copy call per row and layer. */
static int accept_packed(engine *e)
{
    const int B = e->cfg->max_batch, T = e->T;
    int32_t *tab = e->slot_tab; /* T >= 2: room for the two tables */
    for (int row = 0; row < B; row++) {
        const request *r = e->rows[row];
        tab[row] = r ? e->scratch_slot[row * T + e->acc[row] - 1] : -1;
        tab[B + row] = r ? r->slot : -1;
    }
    if (upload(e, e->d_slot, tab, sizeof(int32_t) * 2 * (size_t)B)) return -1;
    void *stream = rssm_context_stream(e->ctx);
    for (sim_shard *h = e->sh; h < e->sh + e->nsh; h++)
        for (int l = 0; l < e->model->cfg.n_layers; l++) {
            rssm_state st;
            CHECK(rssm_pool_state(h->pool, l, &st));
            CHECK(rssm_materialize(e->ctx, &h->layers[l], &st, &st, B, e->d_slot, e->d_slot + B, stream));
        }
    return 0;
}

/* Snapshots of request r's step in row `row`: packed verify's accepted state (in the slot since
 * accept_packed) is snapshotted on a track boundary; a step that made the checkpoint the state
 * after a multiple of the interval snapshots it. */
static int row_snapshots(engine *e, request *r, int row)
{
    const int T = e->T, a = e->acc[row];
    void *stream = rssm_context_stream(e->ctx);
    if (!e->replay && T > 1) {
        if ((r->seq_len + a) % e->cfg->track_interval == 0) {
            for (int t = 0; t < a; t++)
                if (sim_hist_push(r, e->next[tok_index(e, row, t)])) return -1;
            r->hist_len -= a; /* pushed again by the caller */
            for (sim_shard *h = e->sh; h < e->sh + e->nsh; h++)
                CHECK(rssm_prefix_cache_insert_async(h->cache, r->hist, r->seq_len + a, h->pool, r->slot,
                                                     RSSM_SNAPSHOT_CHECKPOINT, stream));
        }
    }
    if (e->fold[row]) {
        const int at = T > 1 ? r->seq_len : r->seq_len + 1;
        if (at > 0 && (T == 1 || e->replay))
            for (sim_shard *h = e->sh; h < e->sh + e->nsh; h++)
                CHECK(rssm_prefix_cache_insert_async(h->cache, r->hist, at, h->pool, r->slot, RSSM_SNAPSHOT_CHECKPOINT,
                                                     stream));
    }
    return 0;
}

/* After the step: every row's bytes, snapshots, accepted tokens, and the requests that are
 * done leave (their slots released). */
static int step_book(engine *e, sim_result *res, int every)
{
    if (!e->replay && e->T > 1 && accept_packed(e)) return -1;
    for (int row = 0; row < e->cfg->max_batch; row++) {
        request *r = e->rows[row];
        if (!r) continue;
        const int a = e->acc[row];
        row_bytes(e, res, r, row, every);
        if (row_snapshots(e, r, row)) return -1;
        for (int t = 0; t < a; t++)
            if (sim_hist_push(r, e->next[tok_index(e, row, t)])) return -1;
        r->seq_len += a;
        r->generated += a;
        res->generated += a;
        res->decode_tokens += a;
        if (e->T > 1) res->drafted += e->T - 1, res->accepted += a - 1;
        if (r->generated >= r->max_new) {
            r->done = 1;
            for (sim_shard *h = e->sh; h < e->sh + e->nsh; h++)
                CHECK(rssm_pool_release(h->pool, r->slot));
            r->slot = -1;
            e->rows[row] = NULL;
            e->finished++;
        }
    }
    return 0;
}

/* One decode or verify step over the n live rows, timed by part. 0, or -1 on failure. */
static int decode_step(engine *e, sim_result *res, int n)
{
    const sim_config *c = e->cfg;
    const int B = c->max_batch, T = e->T;
    res->active_rows += n;
    const double td = now_s();
    step_tokens(e);
    for (sim_shard *h = e->sh; h < e->sh + e->nsh; h++)
        CHECK(rssm_plan_set(h->plan, B, e->slot, e->seq));
    CHECK(rssm_plan_fold_rows(e->sh[0].plan, T > 1 ? RSSM_PLAN_VERIFY : RSSM_PLAN_DECODE, e->fold));
    /* a small decode step folds every row (fold[] keeps the prefix snapshot points) */
    const int every = e->replay && T == 1 && n <= res->small_rows;
    res->small_steps += every;
    const double tf = now_s();
    res->t_prep += tf - td;
    if (c->profile) e->prof_mixer = &res->t_mixer, e->prof_dense = &res->t_dense;
    if (step_forward(e)) return -1;
    e->prof_mixer = e->prof_dense = NULL;
    const double tb = now_s();
    res->t_forward += tb - tf;
    if (step_accept(e) || step_book(e, res, every)) return -1;
    res->decode_steps++;
    const double te = now_s();
    res->t_book += te - tb;
    res->decode_seconds += te - td;
    return 0;
}

static void show_progress(const engine *e, const sim_result *res)
{
    const int w = 30, done = e->finished * w / e->cfg->requests;
    fprintf(stderr, "\r  %-7s [%.*s%*s] %d/%d requests, %lld tokens", e->replay ? "replay" : "packed", done,
            "##############################", w - done, "", e->finished, e->cfg->requests, res->generated);
}

/* One run of the workload (engine_init says what tp and comm choose). */
static int run_once(const sim_config *c, rssm_context *ctx, const sim_model *model, int replay, int tp, sim_nccl *comm,
                    sim_result *res)
{
    memset(res, 0, sizeof *res);
    res->replay = replay, res->tp = tp;
    engine E, *e = &E;
    memset(e, 0, sizeof E);
    request *rq = sim_make_workload(c, &e->system);
    if (!rq) return -1;
    res->rq = rq;
    e->cfg = c, e->ctx = ctx, e->model = model, e->replay = replay, e->T = c->spec, e->rq = rq, e->comm = comm;
    int rc = engine_init(e, res, tp);
    const double t0 = now_s();
    int next_req = 0;
    for (int step = 0; !rc && e->finished < c->requests; step++) {
        rc = admit(e, res, step, &next_req);
        int n = 0;
        for (int row = 0; row < c->max_batch; row++) {
            e->slot[row] = e->rows[row] ? e->rows[row]->slot : -1;
            e->seq[row] = e->rows[row] ? e->rows[row]->seq_len : 0;
            n += e->rows[row] != NULL;
        }
        if (rc || n == 0) continue;
        rc = decode_step(e, res, n);
        if (c->progress) show_progress(e, res);
    }
    res->seconds = now_s() - t0;
    if (c->progress && !rc) fprintf(stderr, "\n");
    engine_free(e);
    return rc;
}

/* Everything one process runs: packed and replay on the whole layer, then with --tp replay
 * over the ranks. Under NCCL (cuda --tp) this is rank `rank` on GPU `rank`; every rank runs the
 * same workload (the dense parts replicated) and rank 0 reports. Returns 0 when every compared
 * pair of token streams is identical. */
static int simulate_rank(int rank, int nranks, const unsigned char *id, void *arg)
{
    sim_config *c = arg;
    sim_nccl *comm = NULL;
    const int nccl = c->tp > 0 && c->device == RSSM_DEVICE_CUDA;
    if (rank > 0) c->progress = 0;
    if (nccl && sim_nccl_init(nranks, rank, id, &comm))
        return fprintf(stderr, "simulate: rank %d: %s\n", rank, sim_nccl_error()), 1;
    rssm_context *ctx = NULL;
    rssm_context_params cp = c->params;
    cp.threads = c->threads;
    cp.device_ordinal = c->device == RSSM_DEVICE_CUDA ? rank : 0;
    rssm_status st = rssm_context_create(c->device, &cp, &ctx);
    if (st != RSSM_OK) {
        sim_nccl_free(comm);
        return fprintf(stderr, "simulate: %s\n", rh_context_error(c->device, st)), 1;
    }
    sim_model model;
    const int rows = max_rows(c);
    int rc = 1;
    if (sim_model_init(&model, &c->model, ctx, rows) || sim_model_warm(ctx, &model)) {
        fprintf(stderr, "simulate: could not build the model on this device\n");
        sim_model_free(&model);
        rssm_context_free(ctx);
        sim_nccl_free(comm);
        return 1;
    }
    sim_result pk, rp, tr;
    memset(&pk, 0, sizeof pk), memset(&rp, 0, sizeof rp), memset(&tr, 0, sizeof tr);
    int ran = 1;
    for (int i = 0; i < c->repeat && ran; i++) { /* earlier pairs warm up whatever the first run would pay */
        sim_free_workload(pk.rq, c->requests), sim_free_workload(rp.rq, c->requests);
        pk.rq = rp.rq = NULL;
        ran = run_once(c, ctx, &model, 0, 0, NULL, &pk) == 0 && run_once(c, ctx, &model, 1, 0, NULL, &rp) == 0;
    }
    /* the ranks fold the steps the unsharded run folded (AUTO resolves by the heads of a pool,
     * and a shard has fewer), so that their streams can be compared bit for bit */
    sim_config ctp = *c;
    ctp.small_batch = rp.small_rows;
    if (ran && (c->tp == 0 || run_once(&ctp, ctx, &model, 1, c->tp, comm, &tr) == 0)) {
        int diff;
        const int same = sim_same_streams(&pk, &rp, c->requests, &diff);
        tp_report t = {&tr, 1, -1, 1, nccl};
        if (c->tp) t.same = sim_same_streams(&rp, &tr, c->requests, &t.diff);
        if (comm) {
            /* every rank's stream hash, all-gathered: the ranks must have generated the same tokens */
            uint64_t mine = sim_stream_hash(&tr, c->requests), *all = calloc(nranks, sizeof *all);
            void *d = NULL;
            t.agree = all && rssm_mem_alloc(ctx, 8 * (size_t)(nranks + 1), &d) == RSSM_OK &&
                      rssm_mem_copy(ctx, d, &mine, 8, RSSM_COPY_HOST_TO_DEVICE) == RSSM_OK &&
                      sim_nccl_allgather(comm, d, (char *)d + 8, 8, rssm_context_stream(ctx)) == 0 &&
                      rssm_mem_copy(ctx, all, (char *)d + 8, 8 * (size_t)nranks, RSSM_COPY_DEVICE_TO_HOST) == RSSM_OK;
            for (int i = 0; t.agree && i < nranks; i++)
                t.agree = all[i] == mine;
            rssm_mem_free(ctx, d), free(all);
        }
        if (rank == 0) {
            if (c->json) {
                sim_print_json(c, &pk, &rp, same, c->tp ? &t : NULL);
            } else {
                sim_print_table(c, &model, &pk, &rp, same, diff);
                if (c->tp) sim_print_tp(c, &rp, &t);
            }
        }
        rc = same && t.same && t.agree ? 0 : 1;
    }
    sim_free_workload(pk.rq, c->requests), sim_free_workload(rp.rq, c->requests), sim_free_workload(tr.rq, c->requests);
    sim_model_free(&model);
    rssm_context_free(ctx);
    sim_nccl_free(comm);
    return rc;
}

int sim_run(const sim_config *config)
{
    sim_config c = *config;
    c.progress = !c.json && isatty(2);
    if (c.tp > 0 && c.device == RSSM_DEVICE_CUDA) {
        /* one process per GPU, forked before any CUDA call; rank 0 reports */
        const char *absent = sim_cuda_absent();
        if (absent) return fprintf(stderr, "simulate: --device cuda: %s\n", absent), 1;
        if (sim_nccl_launch(c.tp, simulate_rank, &c))
            return fprintf(stderr, "simulate: --tp %d on cuda: %s\n", c.tp, sim_nccl_error()), 1;
        return 0;
    }
    return simulate_rank(0, 1, NULL, &c) ? 1 : 0;
}
