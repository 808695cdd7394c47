/*
 * test_shard.c — tensor-parallel sharding (rssm_layer_shard) through the public API on the
 * CPU device: for every rank, the shard's packed decode, replay decode (with folds, forced
 * and ring-full), verify + commit (start folds included), materialise and the cursor moves,
 * run on the head slices of the inputs and of the state, give bit for bit the same outputs and
 * state as those heads of the unsharded calls. GDN (grouped, HV = 2H) and KDA (with and
 * without the safe gate), tp = 1, 2, 4. Plus the argument checks.
 *
 * Head slicing: a tensor [rows][heads][per_head] keeps heads [h0, h0 + n) of every row:
 *   q, k [B,T,H,K] and GDN ring_k [slots,H,L,K] from k_head0; v, a, b, o, A_log, dt_bias and
 *   checkpoint, ring_u, ring_g, KDA ring_k, ring_base from v_head0; cursor [slots] is copied.
 * Two decode steps give one value head a -inf gate: early folds (per-head ring bases) and the
 * gate floor are sharded too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm_runtime.h"

static int passed, failed;

static void check(int ok, const char *what)
{
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
    ok ? passed++ : failed++;
}

static uint64_t rng_state = 12345;
static float urand(float lo, float hi)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return lo + (hi - lo) * (float)((z >> 40) * (1.0 / 16777216.0));
}

static void *zalloc(size_t n)
{
    const size_t r = (n + 63) / 64 * 64;
    void *p = aligned_alloc(64, r ? r : 64);
    if (!p) {
        fprintf(stderr, "test_shard: out of memory\n");
        exit(2);
    }
    memset(p, 0, r ? r : 64);
    return p;
}

/* dst[rows][n][ph] = src[rows][heads][ph] restricted to heads [h0, h0 + n); ph in bytes */
static void slice(void *dst, const void *src, size_t rows, int heads, int h0, int n, size_t ph)
{
    for (size_t r = 0; r < rows; r++)
        memcpy((char *)dst + r * n * ph, (const char *)src + (r * heads + h0) * ph, n * ph);
}

/* 1 when shard[rows][n][ph] equals those heads of full[rows][heads][ph] bit for bit */
static int same_slice(const void *shard, const void *full, size_t rows, int heads, int h0, int n, size_t ph)
{
    for (size_t r = 0; r < rows; r++)
        if (memcmp((const char *)shard + r * n * ph, (const char *)full + (r * heads + h0) * ph, n * ph)) return 0;
    return 1;
}

enum { SLOTS = 3, B = 3, TV = 3 };

typedef struct tensors {
    rssm_state st; /* replay state */
    rssm_state pk; /* packed state (checkpoint only used) */
    rssm_state_bytes sz;
} tensors;

static void alloc_state(const rssm_layer *l, tensors *t)
{
    if (rssm_state_size(l, SLOTS, &t->sz) != RSSM_OK) exit(2);
    rssm_state *s[2] = {&t->st, &t->pk};
    for (int i = 0; i < 2; i++) {
        s[i]->num_slots = SLOTS;
        s[i]->checkpoint = zalloc(t->sz.checkpoint);
        s[i]->ring_u = zalloc(t->sz.ring_u);
        s[i]->ring_k = zalloc(t->sz.ring_k);
        s[i]->ring_g = zalloc(t->sz.ring_g);
        s[i]->ring_base = zalloc(t->sz.ring_base);
        s[i]->cursor = zalloc(t->sz.cursor);
        s[i]->bytes = t->sz;
    }
}

static void free_state(tensors *t)
{
    rssm_state *s[2] = {&t->st, &t->pk};
    for (int i = 0; i < 2; i++)
        free(s[i]->checkpoint), free(s[i]->ring_u), free(s[i]->ring_k), free(s[i]->ring_g), free(s[i]->ring_base),
            free(s[i]->cursor);
}

/* Per-head byte sizes of the tensors of layer l, and which head index (key/value) they use. */
typedef struct geom {
    int H, HV, K, V, L, gk, kda;
} geom;

static geom geom_of(const rssm_layer *l)
{
    geom g = {l->num_k_heads, l->num_v_heads, l->head_k_dim, l->head_v_dim, l->ring_len, 1, l->gate == RSSM_GATE_KDA};
    if (g.kda) g.gk = g.K;
    return g;
}

/* 1 when the shard state (geometry s) equals its heads of the full state (geometry f). */
static int same_state(const tensors *sh, const tensors *fu, geom s, geom f, int k0, int v0)
{
    const size_t E = 4;
    int ok = same_slice(sh->st.checkpoint, fu->st.checkpoint, SLOTS, f.HV, v0, s.HV, E * f.V * f.K);
    ok &= same_slice(sh->pk.checkpoint, fu->pk.checkpoint, SLOTS, f.HV, v0, s.HV, E * f.V * f.K);
    ok &= same_slice(sh->st.ring_u, fu->st.ring_u, SLOTS, f.HV, v0, s.HV, E * f.L * f.V);
    if (f.kda) {
        ok &= same_slice(sh->st.ring_k, fu->st.ring_k, SLOTS, f.HV, v0, s.HV, E * f.L * f.K);
        ok &= same_slice(sh->st.ring_g, fu->st.ring_g, SLOTS, f.HV, v0, s.HV, E * f.L * f.K);
    } else {
        ok &= same_slice(sh->st.ring_k, fu->st.ring_k, SLOTS, f.H, k0, s.H, E * f.L * f.K);
        ok &= same_slice(sh->st.ring_g, fu->st.ring_g, SLOTS, f.HV, v0, s.HV, E * f.L);
    }
    ok &= same_slice(sh->st.ring_base, fu->st.ring_base, SLOTS, f.HV, v0, s.HV, 4);
    ok &= !memcmp(sh->st.cursor, fu->st.cursor, 4 * SLOTS);
    return ok;
}

/* Inputs of one step for geometry g: full buffers, or a shard's slices of them. */
typedef struct inputs {
    float *q, *k, *v, *a, *b, *A_log, *dt_bias;
    float *o, *op; /* outputs of the replay/verify and of the packed decode */
} inputs;

static void inputs_alloc(inputs *in, geom g, int T)
{
    const size_t bt = (size_t)B * T;
    in->q = zalloc(4 * bt * g.H * g.K), in->k = zalloc(4 * bt * g.H * g.K), in->v = zalloc(4 * bt * g.HV * g.V);
    in->a = zalloc(4 * bt * g.HV * g.gk), in->b = zalloc(4 * bt * g.HV), in->o = zalloc(4 * bt * g.HV * g.V);
    in->op = zalloc(4 * bt * g.HV * g.V);
    in->A_log = zalloc(4 * g.HV), in->dt_bias = zalloc(4 * g.HV * g.gk);
}

static void inputs_free(inputs *in)
{
    free(in->q), free(in->k), free(in->v), free(in->a), free(in->b), free(in->o), free(in->op), free(in->A_log),
        free(in->dt_bias);
}

/* Random inputs; extreme >= 0 gives value head `extreme` A_log = 88.5 (its gate -inf in float32:
 * the head folds early, on every gate). */
static void inputs_random(inputs *in, geom g, int T, int extreme)
{
    const size_t bt = (size_t)B * T;
    for (size_t i = 0; i < bt * g.H * g.K; i++)
        in->q[i] = urand(-1, 1), in->k[i] = urand(-1, 1);
    for (size_t i = 0; i < bt * g.HV * g.V; i++)
        in->v[i] = urand(-1, 1);
    for (size_t i = 0; i < bt * g.HV * g.gk; i++)
        in->a[i] = urand(-1, 2);
    for (size_t i = 0; i < bt * g.HV; i++)
        in->b[i] = urand(-2, 2);
    for (int i = 0; i < g.HV; i++)
        in->A_log[i] = urand(0, 2.7f);
    for (int i = 0; i < g.HV * g.gk; i++)
        in->dt_bias[i] = urand(-4, -3);
    if (extreme >= 0) in->A_log[extreme % g.HV] = 88.5f;
}

static void inputs_slice(inputs *s, const inputs *f, geom sg, geom fg, int T, int k0, int v0)
{
    const size_t bt = (size_t)B * T;
    slice(s->q, f->q, bt, fg.H, k0, sg.H, 4 * fg.K);
    slice(s->k, f->k, bt, fg.H, k0, sg.H, 4 * fg.K);
    slice(s->v, f->v, bt, fg.HV, v0, sg.HV, 4 * fg.V);
    slice(s->a, f->a, bt, fg.HV, v0, sg.HV, 4 * fg.gk);
    slice(s->b, f->b, bt, fg.HV, v0, sg.HV, 4);
    slice(s->A_log, f->A_log, 1, fg.HV, v0, sg.HV, 4);
    slice(s->dt_bias, f->dt_bias, 1, fg.HV, v0, sg.HV, 4 * fg.gk);
}

static rssm_step_io io_of(const inputs *in, int T, const int32_t *slot, const uint8_t *fold)
{
    rssm_step_io io;
    memset(&io, 0, sizeof io);
    io.batch = B, io.tokens = T;
    io.q = in->q, io.k = in->k, io.v = in->v, io.a = in->a, io.b = in->b;
    io.A_log = in->A_log, io.dt_bias = in->dt_bias, io.o = in->o;
    io.slot = slot, io.fold = fold;
    return io;
}

/* One scenario: the full layer and all tp shards step side by side; returns 1 when identical. */
static int run_scenario(rssm_context *ctx, const rssm_layer *full, int tp, char *why, size_t why_n)
{
    rssm_layer sl[4];
    int32_t k0[4], v0[4];
    for (int r = 0; r < tp; r++)
        if (rssm_layer_shard(full, tp, r, &sl[r], &k0[r], &v0[r]) != RSSM_OK) {
            snprintf(why, why_n, "rssm_layer_shard: %s", rssm_last_error());
            return 0;
        }
    const geom fg = geom_of(full);
    tensors F, S[4];
    alloc_state(full, &F);
    /* random checkpoints (replay and packed alike), sliced into every shard */
    float *ck = F.st.checkpoint;
    for (size_t i = 0; i < F.sz.checkpoint / 4; i++)
        ck[i] = urand(-0.3f, 0.3f);
    memcpy(F.pk.checkpoint, ck, F.sz.checkpoint);
    for (int r = 0; r < tp; r++) {
        alloc_state(&sl[r], &S[r]);
        const geom sg = geom_of(&sl[r]);
        slice(S[r].st.checkpoint, ck, SLOTS, fg.HV, v0[r], sg.HV, 4 * (size_t)fg.V * fg.K);
        slice(S[r].pk.checkpoint, ck, SLOTS, fg.HV, v0[r], sg.HV, 4 * (size_t)fg.V * fg.K);
    }
    int32_t *slot = zalloc(4 * B), *acc = zalloc(4 * B), *src = zalloc(4 * B), *dst = zalloc(4 * B);
    uint8_t *fold = zalloc(B);
    slot[0] = 2, slot[1] = -1, slot[2] = 0;
    int ok = 1;
    const char *stage = "";
    /* steps: 0..9 decode (replay + packed), 10..11 verify T=3 + commit, 12 materialise 0 -> 1,
     * 13 decode */
    for (int step = 0; step < 14 && ok; step++) {
        const int verify = step == 10 || step == 11, T = verify ? TV : 1;
        inputs fi, si[4];
        memset(si, 0, sizeof si);
        inputs_alloc(&fi, fg, T);
        /* decode steps 3 and 7: one value head's gate is -inf (early folds; heads of a GDN key
         * head's group then have different ring bases) */
        inputs_random(&fi, fg, T, step == 3 || step == 7 ? step / 2 : -1);
        for (int b = 0; b < B; b++)
            fold[b] = urand(0, 1) < 0.2f, acc[b] = (int32_t)urand(0, T + 0.999f);
        rssm_status st = RSSM_OK;
        for (int r = -1; r < tp && st == RSSM_OK && ok; r++) {
            const rssm_layer *l = r < 0 ? full : &sl[r];
            tensors *t = r < 0 ? &F : &S[r];
            inputs *in = r < 0 ? &fi : &si[r];
            if (r >= 0) {
                inputs_alloc(in, geom_of(l), T);
                inputs_slice(in, &fi, geom_of(l), fg, T, k0[r], v0[r]);
            }
            rssm_step_io io = io_of(in, T, slot, fold);
            if (step == 12) {
                stage = "materialise";
                src[0] = 0, src[1] = -1, src[2] = 2, dst[0] = 1, dst[1] = -1, dst[2] = 2;
                st = rssm_materialize(ctx, l, &t->st, &t->st, B, src, dst, NULL);
                if (st == RSSM_OK) st = rssm_reset_cursors(ctx, &t->st, B, dst, NULL);
            } else if (verify) {
                stage = "verify";
                st = rssm_verify(ctx, l, &t->st, &io, NULL);
                if (st == RSSM_OK) st = rssm_commit(ctx, l, &t->st, B, T, slot, fold, acc, NULL);
            } else {
                stage = "replay decode";
                st = rssm_decode_replay(ctx, l, &t->st, &io, NULL);
                if (st == RSSM_OK) st = rssm_advance(ctx, l, &t->st, B, slot, fold, NULL);
            }
            if (r >= 0 && st == RSSM_OK && step != 12) {
                const geom sg = geom_of(l);
                if (!same_slice(in->o, fi.o, (size_t)B * T, fg.HV, v0[r], sg.HV, 4 * (size_t)fg.V)) ok = 0;
            }
            /* packed decode of the same token on the packed state (decode steps only) */
            if (st == RSSM_OK && !verify && step != 12) {
                stage = "packed decode";
                io.fold = NULL, io.o = in->op;
                st = rssm_decode_packed(ctx, l, &t->pk, &io, NULL);
                if (r >= 0 && st == RSSM_OK &&
                    !same_slice(in->op, fi.op, B, fg.HV, v0[r], geom_of(l).HV, 4 * (size_t)fg.V))
                    ok = 0;
            }
            if (r >= 0 && ok && st == RSSM_OK && !same_state(&S[r], &F, geom_of(l), fg, k0[r], v0[r])) ok = 0;
            if (!ok) snprintf(why, why_n, "rank %d differs after the %s of step %d", r, stage, step);
        }
        if (st != RSSM_OK) {
            snprintf(why, why_n, "%s at step %d: %s: %s", stage, step, rssm_status_name(st), rssm_last_error());
            ok = 0;
        }
        inputs_free(&fi);
        for (int r = 0; r < tp; r++)
            if (si[r].q) inputs_free(&si[r]);
    }
    free(slot), free(acc), free(src), free(dst), free(fold);
    free_state(&F);
    for (int r = 0; r < tp; r++)
        free_state(&S[r]);
    return ok;
}

static void test_errors(void)
{
    rssm_layer full = rssm_layer_default(RSSM_GATE_GDN, 2, 6, 32, 32, 4), out;
    int32_t k0 = -7, v0 = -7;
    check(rssm_layer_shard(NULL, 1, 0, &out, NULL, NULL) == RSSM_ERROR_NULL_POINTER, "errors: NULL full");
    check(rssm_layer_shard(&full, 1, 0, NULL, NULL, NULL) == RSSM_ERROR_NULL_POINTER, "errors: NULL out");
    check(rssm_layer_shard(&full, 0, 0, &out, NULL, NULL) == RSSM_ERROR_BAD_ARGUMENT, "errors: tp 0");
    check(rssm_layer_shard(&full, 2, 2, &out, NULL, NULL) == RSSM_ERROR_BAD_ARGUMENT, "errors: rank == tp");
    check(rssm_layer_shard(&full, 2, -1, &out, NULL, NULL) == RSSM_ERROR_BAD_ARGUMENT, "errors: rank < 0");
    check(rssm_layer_shard(&full, 3, 0, &out, &k0, &v0) == RSSM_ERROR_BAD_SHAPE && k0 == -7 && v0 == -7 &&
              strstr(rssm_last_error(), "H=2"),
          "errors: tp 3 does not divide H=2 (HV=6 would): nothing written, message names the heads");
    rssm_layer bad = full;
    bad.num_v_heads = 3;
    check(rssm_layer_shard(&bad, 1, 0, &out, NULL, NULL) == RSSM_ERROR_BAD_SHAPE, "errors: invalid full layer");
    check(rssm_layer_shard(&full, 2, 1, &out, &k0, &v0) == RSSM_OK && out.num_k_heads == 1 && out.num_v_heads == 3 &&
              k0 == 1 && v0 == 3 && out.head_k_dim == 32 && out.ring_len == 4,
          "shape: tp 2 rank 1 of H=2 HV=6 is H=1 HV=3 from key head 1, value head 3");
    check(rssm_layer_shard(&full, 1, 0, &out, &k0, &v0) == RSSM_OK && !memcmp(&out, &full, sizeof out) && k0 == 0 &&
              v0 == 0,
          "shape: tp 1 is the layer itself");
}

int main(void)
{
    rssm_context *ctx;
    if (rssm_context_create(RSSM_DEVICE_CPU, NULL, &ctx) != RSSM_OK) {
        fprintf(stderr, "test_shard: %s\n", rssm_last_error());
        return 1;
    }
    test_errors();
    static const struct {
        rssm_gate gate;
        int lb, H, HV, kv;
        const char *name;
    } cases[] = {
        {RSSM_GATE_GDN, 0, 4, 8, 0, "gdn H=4 HV=8"},         {RSSM_GATE_KDA, 0, 4, 4, 0, "kda H=4 HV=4"},
        {RSSM_GATE_KDA, 1, 2, 4, 0, "kda-lb H=2 HV=4"},      {RSSM_GATE_GDN, 0, 4, 8, 1, "gdn H=4 HV=8 K-first"},
        {RSSM_GATE_KDA, 0, 4, 4, 1, "kda H=4 HV=4 K-first"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int tp = 1; tp <= 4; tp *= 2) {
            rssm_layer l = rssm_layer_default(cases[c].gate, cases[c].H, cases[c].HV, 32, 16, 4);
            if (cases[c].lb) l.has_lower_bound = 1, l.lower_bound = -5.0f;
            if (cases[c].kv) l.state_layout = RSSM_LAYOUT_KV; /* a head's state is contiguous in either layout */
            if (l.num_k_heads % tp) { /* not shardable: rssm_layer_shard refuses it (test_errors) */
                printf("skip identity: %s tp=%d (H %% tp != 0)\n", cases[c].name, tp);
                continue;
            }
            char why[256] = "", name[640];
            const int ok = run_scenario(ctx, &l, tp, why, sizeof why);
            snprintf(name, sizeof name,
                     "identity: %s tp=%d: every rank's packed/replay decode, verify+commit, materialise equal the "
                     "unsharded heads bit for bit%s%s",
                     cases[c].name, tp, ok ? "" : ": ", why);
            check(ok, name);
        }
    rssm_context_free(ctx);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
