/*
 * runtime_check.c — checks of the runtime on one device (`replayssm check --suite runtime`,
 * and the test programs of tests/runtime/).
 *
 * A tiny synthetic model drives the kernels through the pool and the planner: two layers of
 * the same shape whose per-token inputs (q, k, v, log-gate g, beta) are a hash of (token id,
 * layer), like an embedding, so two requests with the same tokens see the same inputs.
 * Device buffers come from the context's memory calls (rssm_mem_*), so the same code runs on
 * reference, CPU and CUDA.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "replayssm_runtime.h"
#include "runtime_check.h"

#define NL 2

void rt_case(rt_counts *c, int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "ok  " : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (ok)
        c->passed++;
    else
        c->failed++;
    fflush(stdout);
}

void rt_layers(rssm_gate gate, rssm_layer layers[2])
{
    for (int l = 0; l < NL; l++)
        layers[l] = rssm_layer_default(gate, 2, 4, 16, 8, 4); /* H HV K V L */
    layers[NL - 1].state_layout = RSSM_LAYOUT_KV;             /* a model may mix layouts */
}

/* multiprocessors of a CUDA context's GPU (0 on host devices) */
static int sm_count(rssm_context *ctx)
{
    rssm_context_info info;
    return rssm_context_get_info(ctx, &info) == RSSM_OK ? info.multiprocessors : 0;
}

/* ---- the synthetic model -------------------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Uniform in [0, 1) from (token, layer, kind, index). */
static float unit(int32_t tok, int l, int kind, int64_t i)
{
    const uint64_t h =
        mix(((uint64_t)(uint32_t)tok << 32) ^ ((uint64_t)l << 56) ^ ((uint64_t)kind << 48) ^ (uint64_t)i);
    return (float)((h >> 40) * (1.0 / 16777216.0));
}

typedef struct rt_model {
    rssm_context *ctx;
    rssm_pool *pool;
    rssm_layer ly[NL];
    int B, Tmax, H, HV, K, V, gk;
    void *d[6]; /* q k v g beta o on the device */
    float *h[6];
    size_t n[6]; /* elements per buffer */
} rt_model;

static int model_init(rt_model *m, rssm_context *ctx, rssm_pool *pool, int B, int Tmax)
{
    memset(m, 0, sizeof *m);
    m->ctx = ctx, m->pool = pool, m->B = B, m->Tmax = Tmax;
    for (int l = 0; l < NL; l++)
        rssm_pool_layer(pool, l, &m->ly[l]);
    const rssm_layer *y = &m->ly[0];
    m->H = y->num_k_heads, m->HV = y->num_v_heads, m->K = y->head_k_dim, m->V = y->head_v_dim;
    m->gk = y->gate == RSSM_GATE_KDA ? m->K : 1;
    const size_t bt = (size_t)B * Tmax;
    const size_t n[6] = {bt * m->H * m->K,   bt * m->H * m->K, bt * m->HV * m->V,
                         bt * m->HV * m->gk, bt * m->HV,       bt * m->HV * m->V};
    for (int i = 0; i < 6; i++) {
        m->n[i] = n[i];
        m->h[i] = calloc(n[i], sizeof(float));
        if (!m->h[i] || rssm_mem_alloc(ctx, n[i] * sizeof(float), &m->d[i]) != RSSM_OK) return 0;
    }
    return 1;
}

static void model_free(rt_model *m)
{
    for (int i = 0; i < 6; i++) {
        free(m->h[i]);
        rssm_mem_free(m->ctx, m->d[i]);
    }
}

/* Inputs of layer l for tokens tok[B*T]; junk rows (padding) get token 0. */
static void fill_inputs(rt_model *m, int l, int T, const int32_t *tok)
{
    const int HK = m->H * m->K, HVV = m->HV * m->V;
    const int kda = m->gk > 1;
    for (int bt = 0; bt < m->B * T; bt++) {
        const int32_t t = tok[bt];
        for (int i = 0; i < HK; i++) {
            m->h[0][(size_t)bt * HK + i] = 2 * unit(t, l, 0, i) - 1;
            m->h[1][(size_t)bt * HK + i] = 2 * unit(t, l, 1, i) - 1;
        }
        for (int i = 0; i < HVV; i++)
            m->h[2][(size_t)bt * HVV + i] = 2 * unit(t, l, 2, i) - 1;
        for (int i = 0; i < m->HV * m->gk; i++) {
            const float u = unit(t, l, 3, i);
            /* now and then a strongly decaying channel (KDA) or head (GDN), to exercise the
             * per-head early folds */
            m->h[3][(size_t)bt * m->HV * m->gk + i] = kda ? (u > 0.85f ? -12.0f - 8.0f * u : -(0.05f + 1.0f * u))
                                                      : u > 0.95f ? -40.0f - 20.0f * u
                                                                  : -(0.01f + 0.5f * u);
        }
        for (int i = 0; i < m->HV; i++)
            m->h[4][(size_t)bt * m->HV + i] = 0.1f + 0.8f * unit(t, l, 4, i);
    }
}

/* Layer l's inputs for tokens tok[B*T] uploaded, and io filled from the planner and the model's
 * device buffers (o included). */
static rssm_status layer_io(rt_model *m, rssm_plan *plan, int l, int T, const int32_t *tok, rssm_step_io *io)
{
    fill_inputs(m, l, T, tok);
    rssm_status st = RSSM_OK;
    for (int i = 0; i < 5 && st == RSSM_OK; i++)
        st = rssm_mem_copy(m->ctx, m->d[i], m->h[i], m->n[i] * sizeof(float), RSSM_COPY_HOST_TO_DEVICE);
    memset(io, 0, sizeof *io);
    rssm_plan_io(plan, io);
    io->q = m->d[0], io->k = m->d[1], io->v = m->d[2], io->g = m->d[3], io->beta = m->d[4], io->o = m->d[5];
    return st;
}

/* One step of every layer on the planner's rows (rssm_plan_set done by the caller): through
 * the planner (begin, rssm_decode_replay or rssm_verify per layer, end), or with packed = 1
 * one rssm_decode_packed per layer on its rows and nothing else (no cursor moves).
 * tok [B*T]; accepted [B] for verify (NULL for decode); out [NL][B*T*HV*V] or NULL. */
static rssm_status model_run(rt_model *m, rssm_plan *plan, rssm_plan_mode mode, int T, const int32_t *tok,
                             const int32_t *accepted, float *out, int packed)
{
    rssm_status st = RSSM_OK;
    void *stream = rssm_context_stream(m->ctx);
    if (mode == RSSM_PLAN_VERIFY && (st = rssm_plan_set_accepted(plan, m->B, accepted)) != RSSM_OK) return st;
    if (!packed && (st = rssm_plan_begin(plan, mode, T, stream)) != RSSM_OK) return st;
    const size_t no = (size_t)m->B * T * m->HV * m->V;
    for (int l = 0; l < NL && st == RSSM_OK; l++) {
        rssm_step_io io;
        st = layer_io(m, plan, l, T, tok, &io);
        rssm_state s;
        rssm_pool_state(m->pool, l, &s);
        if (packed) io.fold = NULL, io.fold_every = 0;
        if (st == RSSM_OK)
            st = packed                     ? rssm_decode_packed(m->ctx, &m->ly[l], &s, &io, stream)
                 : mode == RSSM_PLAN_DECODE ? rssm_decode_replay(m->ctx, &m->ly[l], &s, &io, stream)
                                            : rssm_verify(m->ctx, &m->ly[l], &s, &io, stream);
        if (st == RSSM_OK) st = rssm_context_synchronize(m->ctx);
        if (st == RSSM_OK && out)
            st = rssm_mem_copy(m->ctx, out + (size_t)l * no, m->d[5], no * sizeof(float), RSSM_COPY_DEVICE_TO_HOST);
    }
    if (st == RSSM_OK && !packed) st = rssm_plan_end(plan, stream);
    if (st == RSSM_OK) st = rssm_context_synchronize(m->ctx);
    return st;
}

static rssm_status model_step(rt_model *m, rssm_plan *plan, rssm_plan_mode mode, int T, const int32_t *tok,
                              const int32_t *accepted, float *out)
{
    return model_run(m, plan, mode, T, tok, accepted, out, 0);
}

/* ---- helpers ------------------------------------------------------------------------------- */

static unsigned char *export_blob(rssm_pool *p, int32_t slot, uint32_t form, size_t *n)
{
    size_t cap;
    if (rssm_pool_export_size(p, form, &cap) != RSSM_OK) return NULL;
    unsigned char *b = malloc(cap);
    if (b && rssm_pool_export(p, slot, form, b, cap, n) != RSSM_OK) {
        free(b);
        return NULL;
    }
    return b;
}

/* 1 if two slots export to the same bytes in `form` (cursor and ring included for the ring form). */
static int same_state(rssm_pool *pa, int32_t a, rssm_pool *pb, int32_t b, uint32_t form)
{
    size_t na = 0, nb = 0;
    unsigned char *x = export_blob(pa, a, form, &na), *y = export_blob(pb, b, form, &nb);
    const int same = x && y && na == nb && !memcmp(x, y, na);
    free(x), free(y);
    return same;
}

static const char *err(rssm_status st)
{
    static _Thread_local char buf[640];
    snprintf(buf, sizeof buf, "%s: %s", rssm_status_name(st), rssm_last_error());
    return buf;
}

static rssm_pool *make_pool(rssm_context *ctx, rssm_gate gate, int slots)
{
    rssm_layer ly[NL];
    rt_layers(gate, ly);
    rssm_pool *p = NULL;
    rssm_status st = rssm_pool_create(ctx, ly, NL, slots, &p);
    if (st != RSSM_OK) printf("note: rssm_pool_create: %s\n", err(st));
    return p;
}

/* Runs `steps` decode steps on one slot (row 0 of a batch-1 planner) with token ids from base. */
static rssm_status run_decode(rt_model *m, rssm_plan *plan, int32_t slot, int32_t seq0, int steps, int32_t base)
{
    rssm_status st = rssm_plan_set(plan, 1, &slot, &seq0);
    for (int i = 0; i < steps && st == RSSM_OK; i++) {
        int32_t tok[8] = {base + i, 0, 0, 0, 0, 0, 0, 0};
        st = model_step(m, plan, RSSM_PLAN_DECODE, 1, tok, NULL, NULL);
    }
    return st;
}

/* ---- pool ---------------------------------------------------------------------------------- */

/* Layers of different state dtypes (bf16 then f32 checkpoints, of different sizes): a raw
 * checkpoint copy (rssm_pool_copy_checkpoint, the prefix cache's snapshots) copies every layer
 * whole: the copy equals the source folded in place. */
static void pool_mixed_dtypes(rssm_context *ctx, rt_counts *c)
{
    rssm_layer ly[NL];
    rt_layers(RSSM_GATE_GDN, ly);
    ly[0].state_dtype = RSSM_DTYPE_BF16;
    rssm_pool *p = NULL;
    rt_model m;
    rssm_plan *plan = NULL;
    int32_t a = -1, b = -1;
    memset(&m, 0, sizeof m);
    rssm_status st = rssm_pool_create(ctx, ly, NL, 3, &p);
    if (st == RSSM_OK && (!model_init(&m, ctx, p, 1, 1) || rssm_plan_create(p, 1, 0, &plan) != RSSM_OK))
        st = RSSM_ERROR_OUT_OF_MEMORY;
    if (st == RSSM_OK) st = rssm_pool_acquire(p, &a);
    if (st == RSSM_OK) st = rssm_pool_acquire(p, &b);
    if (st == RSSM_OK) st = run_decode(&m, plan, a, 0, 3, 100);
    if (st == RSSM_OK) st = rssm_pool_copy(p, a, p, a); /* fold in place: the checkpoint is the state */
    if (st == RSSM_OK) st = rssm_pool_copy_checkpoint(p, a, p, b);
    rt_case(c, st == RSSM_OK && same_state(p, a, p, b, RSSM_EXPORT_MATERIALIZED),
            "pool/mixed state dtypes (bf16, f32): copy_checkpoint copies every layer whole%s%s", st ? " — " : "",
            st ? err(st) : "");
    rssm_plan_free(plan);
    model_free(&m);
    rssm_pool_free(p);
}

void rt_suite_pool(rssm_context *ctx, rt_counts *c)
{
    pool_mixed_dtypes(ctx, c);
    for (int gi = 0; gi < 2; gi++) {
        const rssm_gate gate = gi ? RSSM_GATE_KDA : RSSM_GATE_GDN;
        const char *gn = gi ? "kda" : "gdn";
        rssm_layer ly[NL];
        rt_layers(gate, ly);
        size_t want = 0;
        rssm_status st = rssm_pool_bytes(ly, NL, 5, &want);
        rssm_pool *p = make_pool(ctx, gate, 5);
        if (!p) {
            rt_case(c, 0, "pool/%s create", gn);
            continue;
        }
        rt_case(c, st == RSSM_OK && want == rssm_pool_memory(p), "pool/%s bytes: rssm_pool_bytes %zu == allocated %zu",
                gn, want, rssm_pool_memory(p));
        rssm_state_bytes sb;
        size_t tensors = 0;
        for (int l = 0; l < NL; l++) {
            rssm_state_size(&ly[l], 6, &sb);
            tensors += sb.total - sb.cursor;
        }
        rt_case(c, want >= tensors + 6 * 4, "pool/%s bytes count every tensor (%zu >= %zu)", gn, want, tensors + 6 * 4);
        int32_t s[6];
        int ok = 1;
        for (int i = 0; i < 5; i++)
            ok &= rssm_pool_acquire(p, &s[i]) == RSSM_OK;
        st = rssm_pool_acquire(p, &s[5]);
        rt_case(c, ok && st == RSSM_ERROR_POOL_FULL && rssm_pool_num_free(p) == 0 && rssm_pool_validate(p) == RSSM_OK,
                "pool/%s full: RSSM_ERROR_POOL_FULL, nothing lost", gn);
        ok = rssm_pool_release(p, s[2]) == RSSM_OK;
        st = rssm_pool_release(p, s[2]);
        rt_case(c, ok && st == RSSM_ERROR_NOT_FOUND && *rssm_last_error() && rssm_pool_num_free(p) == 1,
                "pool/%s double release: RSSM_ERROR_NOT_FOUND (%s)", gn, rssm_last_error());
        st = rssm_pool_release(p, 5);
        const rssm_status st2 = rssm_pool_release(p, -1);
        rt_case(c, st == RSSM_ERROR_NOT_FOUND && st2 == RSSM_ERROR_NOT_FOUND && rssm_pool_validate(p) == RSSM_OK,
                "pool/%s foreign slots 5 and -1: RSSM_ERROR_NOT_FOUND", gn);
        /* copy at every cursor position: the copy equals the source materialised, empty ring */
        rt_model m;
        rssm_plan *plan = NULL;
        if (!model_init(&m, ctx, p, 1, 1) || rssm_plan_create(p, 1, 0, &plan) != RSSM_OK) {
            rt_case(c, 0, "pool/%s model setup", gn);
            model_free(&m);
            rssm_pool_free(p);
            continue;
        }
        rssm_pool_acquire(p, &s[2]);
        for (int pos = 0; pos <= 4; pos++) {
            /* fresh source with `pos` decode steps: cursor pos (pos 4 = L folds to 0) */
            rssm_pool_release(p, s[0]);
            rssm_pool_acquire(p, &s[0]);
            st = run_decode(&m, plan, s[0], 0, pos, 100); /* pos 4: the ring filled and folded */
            int32_t cs = -1, cd = -1;
            if (st == RSSM_OK) st = rssm_pool_copy(p, s[0], p, s[1]);
            rssm_pool_cursor(p, s[0], &cs);
            rssm_pool_cursor(p, s[1], &cd);
            const int same = st == RSSM_OK && same_state(p, s[0], p, s[1], RSSM_EXPORT_MATERIALIZED);
            rt_case(c, same && cd == 0,
                    "pool/%s copy with source cursor %d: destination = source materialised, cursor 0%s%s", gn, cs,
                    st ? " — " : "", st ? err(st) : "");
        }
        /* a copy continues like the source folded in place: the same cursor and, bitwise, the
         * same materialised state (the ring form differs in dead entries: a head that folds
         * early stores no entry, and the in-place source keeps older bytes there) */
        st = rssm_pool_copy(p, s[0], p, s[0]);
        if (st == RSSM_OK) st = run_decode(&m, plan, s[0], 0, 3, 500);
        if (st == RSSM_OK) st = run_decode(&m, plan, s[1], 0, 3, 500);
        int32_t c0 = -1, c1 = -2;
        rssm_pool_cursor(p, s[0], &c0);
        rssm_pool_cursor(p, s[1], &c1);
        rt_case(c, st == RSSM_OK && c0 == c1 && same_state(p, s[0], p, s[1], RSSM_EXPORT_MATERIALIZED),
                "pool/%s copy then 3 steps == in-place fold then 3 steps (bitwise)%s", gn, st ? err(st) : "");
        int32_t a = -1;
        st = rssm_pool_acquire_copy(p, p, s[0], &a);
        rt_case(c, st == RSSM_ERROR_POOL_FULL, "pool/%s acquire_copy on a full pool: RSSM_ERROR_POOL_FULL", gn);
        rssm_pool_release(p, s[4]);
        st = rssm_pool_acquire_copy(p, p, s[0], &a);
        rt_case(c, st == RSSM_OK && same_state(p, s[0], p, a, RSSM_EXPORT_MATERIALIZED),
                "pool/%s acquire_copy gives the materialised source", gn);
        rt_case(c, rssm_pool_validate(p) == RSSM_OK, "pool/%s validate", gn);
        rssm_plan_free(plan);
        model_free(&m);
        rssm_pool_free(p);
    }
}

/* ---- planner ------------------------------------------------------------------------------- */

/* One replay decode of layer 0 on the planner's rows with io.fold = fold (device [B]) and
 * io.fold_every = every, synchronised, device errors collected; o downloaded to out [B*HV*V]. */
static rssm_status layer0_call(rt_model *m, rssm_plan *plan, const uint8_t *fold, int every, const int32_t *tok,
                               float *out)
{
    rssm_step_io io;
    rssm_status st = layer_io(m, plan, 0, 1, tok, &io);
    io.fold = fold, io.fold_every = every;
    rssm_state s;
    rssm_pool_state(m->pool, 0, &s);
    if (st == RSSM_OK) st = rssm_mem_set(m->ctx, m->d[5], 0x7f, m->n[5] * sizeof(float)); /* poison */
    if (st == RSSM_OK) st = rssm_decode_replay(m->ctx, &m->ly[0], &s, &io, rssm_context_stream(m->ctx));
    if (st == RSSM_OK) st = rssm_context_synchronize(m->ctx);
    if (st != RSSM_OK) return st;
    st = rssm_mem_copy(m->ctx, out, m->d[5], (size_t)m->B * m->HV * m->V * sizeof(float), RSSM_COPY_DEVICE_TO_HOST);
    const rssm_status de = rssm_context_check_device_errors(m->ctx);
    return st != RSSM_OK ? st : de;
}

/* max |x - y| / max |y| over n values */
static double rel_diff(const float *x, const float *y, size_t n)
{
    double d = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)x[i] - y[i]));
        s = fmax(s, fabs((double)y[i]));
    }
    return s > 0 ? d / s : d;
}

/* plan_small_batch's pool, model, planners (one with the small-batch folds at 1 row, one
 * plain), slots and output buffers. */
typedef struct sb_fixture {
    rssm_context *ctx;
    const char *gn; /* the case's name: gate, and -k128 (-bf16) */
    double tol;     /* outputs of a folded step against a plain one (max rel diff) */
    rssm_pool *p;
    rt_model m;
    rssm_plan *small, *plain;
    int32_t a, b, cs;
    float *oa, *ob; /* [NL][B = 2][HV*V] */
    size_t row;     /* HV*V */
} sb_fixture;

/* max over the layers of the relative difference of row 0 of oa and ob; *same &= bitwise equal */
static double sb_compare(const sb_fixture *f, int *same)
{
    double worst = 0;
    for (int l = 0; l < NL; l++) {
        *same &= !memcmp(f->oa + l * 2 * f->row, f->ob + l * 2 * f->row, f->row * sizeof(float));
        worst = fmax(worst, rel_diff(f->oa + l * 2 * f->row, f->ob + l * 2 * f->row, f->row));
    }
    return worst;
}

/* a and b: two plain replay steps as rows of one batch (ring 2 of L = 4); then one step with a
 * small (1 live row <= 1) and b plain: the same outputs, a folded. */
static rssm_status sb_fold_step(sb_fixture *f, rt_counts *c)
{
    const int32_t ab[2] = {f->a, f->b}, a_only[2] = {f->a, -1}, b_only[2] = {f->b, -1};
    rssm_status st = rssm_plan_set(f->plain, 2, ab, NULL);
    for (int i = 0; i < 2 && st == RSSM_OK; i++) {
        const int32_t tok[2] = {300 + i, 300 + i};
        st = model_step(&f->m, f->plain, RSSM_PLAN_DECODE, 1, tok, NULL, NULL);
    }
    const int32_t t0[2] = {400, 0};
    uint8_t fold_d[2] = {9, 9}, fold_h[2] = {9, 9};
    if (st == RSSM_OK) st = rssm_plan_set(f->small, 2, a_only, NULL);
    if (st == RSSM_OK) st = model_step(&f->m, f->small, RSSM_PLAN_DECODE, 1, t0, NULL, f->oa);
    if (st == RSSM_OK) st = rssm_mem_copy(f->ctx, fold_d, rssm_plan_fold_buffer(f->small), 2, RSSM_COPY_DEVICE_TO_HOST);
    if (st == RSSM_OK) st = rssm_plan_fold_rows(f->small, RSSM_PLAN_DECODE, fold_h);
    if (st == RSSM_OK) st = rssm_plan_set(f->plain, 2, b_only, NULL);
    if (st == RSSM_OK) st = model_step(&f->m, f->plain, RSSM_PLAN_DECODE, 1, t0, NULL, f->ob);
    int32_t ca = -1, cb = -1;
    rssm_pool_cursor(f->p, f->a, &ca), rssm_pool_cursor(f->p, f->b, &cb);
    int same = 1;
    const double first = sb_compare(f, &same);
    /* a folding step may compute its output from the folded state (the CPU back end does): the
     * same value, rounded in another order */
    rt_case(c, st == RSSM_OK && first <= f->tol && ca == 0 && cb == 3 && fold_d[0] == 1 && fold_d[1] == 0 && !fold_h[0],
            "plan/%s small batch: a row with 2 ring entries folds on the step (cursor %d, plain %d), the same outputs "
            "(%s, max rel diff %.3g); fold flags [%d %d], no snapshot point in the host mirror%s%s",
            f->gn, ca, cb, same ? "bit for bit" : "rounded apart", first, fold_d[0], fold_d[1], st ? " — " : "",
            st ? err(st) : "");
    return st;
}

/* From the folded a: c = its checkpoint; a small, c packed, 6 steps: the same outputs and
 * states (bit for bit where exact), a's cursor stays 0. */
static rssm_status sb_packed_steps(sb_fixture *f, rssm_status st, int exact, rt_counts *c)
{
    const int32_t c_only[2] = {f->cs, -1};
    if (st == RSSM_OK) st = rssm_pool_copy_checkpoint(f->p, f->a, f->p, f->cs);
    if (st == RSSM_OK) st = rssm_plan_set(f->plain, 2, c_only, NULL);
    double worst = 0;
    int cursor_ok = 1, same = 1;
    for (int i = 0; i < 6 && st == RSSM_OK; i++) {
        const int32_t tok[2] = {500 + i, 0};
        st = model_step(&f->m, f->small, RSSM_PLAN_DECODE, 1, tok, NULL, f->oa);
        if (st == RSSM_OK) st = model_run(&f->m, f->plain, RSSM_PLAN_DECODE, 1, tok, NULL, f->ob, 1);
        worst = fmax(worst, sb_compare(f, &same));
        int32_t ca = -1;
        rssm_pool_cursor(f->p, f->a, &ca);
        cursor_ok &= ca == 0;
    }
    const int states = st == RSSM_OK && same_state(f->p, f->a, f->p, f->cs, RSSM_EXPORT_MATERIALIZED);
    rt_case(c, st == RSSM_OK && cursor_ok && (exact ? same && states : worst <= 1e-6),
            "plan/%s small batch: 6 steps == packed decode (%s, max rel diff %.3g; checkpoints %s), cursor stays 0%s%s",
            f->gn, same ? "bit for bit" : "differ", worst, states ? "equal" : "differ", st ? " — " : "",
            st ? err(st) : "");
    return st;
}

/* 2 live rows > 1: a plain step, no fold, cursors move. */
static void sb_over_limit(sb_fixture *f, rssm_status st, rt_counts *c)
{
    const int32_t ac[2] = {f->a, f->cs}, t1[2] = {600, 601};
    uint8_t fold_d[2] = {9, 9};
    if (st == RSSM_OK) st = rssm_plan_set(f->small, 2, ac, NULL);
    if (st == RSSM_OK) st = model_step(&f->m, f->small, RSSM_PLAN_DECODE, 1, t1, NULL, NULL);
    if (st == RSSM_OK) st = rssm_mem_copy(f->ctx, fold_d, rssm_plan_fold_buffer(f->small), 2, RSSM_COPY_DEVICE_TO_HOST);
    int32_t ca = -1, cb = -1;
    rssm_pool_cursor(f->p, f->a, &ca), rssm_pool_cursor(f->p, f->cs, &cb);
    rt_case(c, st == RSSM_OK && ca == 1 && cb == 1 && !fold_d[0] && !fold_d[1],
            "plan/%s small batch: 2 live rows over the limit of 1 replay as usual (cursors %d %d)%s%s", f->gn, ca, cb,
            st ? " — " : "", st ? err(st) : "");
}

/* io.fold_every promises rows that fold and have an empty ring (as the planner's drain leaves
 * them): a row with a ring entry that folds, or an empty row that does not fold, is refused
 * (host devices: the call's status, before any work; CUDA: a device error and a zero output
 * for that row) and its state stays as it was. */
static void sb_refused(sb_fixture *f, rt_counts *c)
{
    rssm_context *ctx = f->ctx;
    rssm_pool *p = f->p;
    uint8_t *df = NULL;
    int32_t e = -1, ca = -1;
    rssm_pool_cursor(p, f->a, &ca);
    rssm_status hs = rssm_pool_acquire(p, &e);
    if (hs == RSSM_OK) hs = rssm_mem_alloc(ctx, 16, (void **)&df);
    const int32_t tk[2] = {800, 801};
    const struct {
        int32_t slot;
        uint8_t fold;
        const char *what;
    } bad[2] = {{f->a, 1, "a folding row with a ring entry"}, {e, 0, "an empty row that does not fold"}};
    for (int i = 0; i < 2; i++) {
        const uint8_t flags[16] = {bad[i].fold};
        const int32_t rows[2] = {bad[i].slot, -1};
        size_t n0 = 0, n1 = 0;
        rssm_status st = hs;
        if (st == RSSM_OK) st = rssm_mem_copy(ctx, df, flags, 16, RSSM_COPY_HOST_TO_DEVICE);
        if (st == RSSM_OK) st = rssm_plan_set(f->plain, 2, rows, NULL);
        unsigned char *x0 = st == RSSM_OK ? export_blob(p, bad[i].slot, RSSM_EXPORT_RING, &n0) : NULL;
        const rssm_status call = x0 ? layer0_call(&f->m, f->plain, df, 1, tk, f->oa) : RSSM_ERROR_OUT_OF_MEMORY;
        rssm_context_check_device_errors(ctx);
        unsigned char *x1 = export_blob(p, bad[i].slot, RSSM_EXPORT_RING, &n1);
        int zero = 1; /* CUDA: the row's output is zero (on host devices nothing ran) */
        for (size_t j = 0; j < f->row && rssm_context_device(ctx) == RSSM_DEVICE_CUDA; j++)
            zero &= f->oa[j] == 0.0f;
        const int kept = x0 && x1 && n0 == n1 && !memcmp(x0, x1, n0);
        rt_case(c, st == RSSM_OK && ca == 1 && call != RSSM_OK && call != RSSM_ERROR_OUT_OF_MEMORY && kept && zero,
                "plan/%s small batch: io.fold_every with %s refused (%s), its state kept%s%s", f->gn, bad[i].what,
                rssm_status_name(call), st ? " — " : "", st ? err(st) : "");
        free(x0), free(x1);
    }
    rssm_mem_free(ctx, df);
}

/* Another small step of a row with a ring entry, after earlier small steps (on CUDA the drain's
 * arrival counter must have come back to 0, or the row keeps its cursor and its layers refuse
 * it): no device error, cursor 0, and the outputs of a twin (an imported copy) stepped plainly. */
static void sb_second_drain(sb_fixture *f, rt_counts *c)
{
    rssm_pool *p = f->p;
    const int32_t tok[2] = {900, 0};
    int32_t twin = -1, ca = -1;
    size_t n = 0;
    unsigned char *blob = export_blob(p, f->a, RSSM_EXPORT_RING, &n);
    rssm_status st = blob ? rssm_pool_import(p, blob, n, &twin) : RSSM_ERROR_OUT_OF_MEMORY;
    free(blob);
    const int32_t a_only[2] = {f->a, -1}, t_only[2] = {twin, -1};
    rssm_pool_cursor(p, f->a, &ca);
    const int had = ca;
    if (st == RSSM_OK) st = rssm_plan_set(f->small, 2, a_only, NULL);
    if (st == RSSM_OK) st = model_step(&f->m, f->small, RSSM_PLAN_DECODE, 1, tok, NULL, f->oa);
    if (st == RSSM_OK) st = rssm_context_check_device_errors(f->ctx);
    if (st == RSSM_OK) st = rssm_plan_set(f->plain, 2, t_only, NULL);
    if (st == RSSM_OK) st = model_step(&f->m, f->plain, RSSM_PLAN_DECODE, 1, tok, NULL, f->ob);
    rssm_pool_cursor(p, f->a, &ca);
    int same = 1;
    const double d = st == RSSM_OK ? sb_compare(f, &same) : 1;
    rt_case(c, st == RSSM_OK && had > 0 && ca == 0 && d <= f->tol,
            "plan/%s small batch: a later small step of a row with %d ring entries folds them (cursor %d, no device "
            "error), a plain twin's outputs (max rel diff %.3g)%s%s",
            f->gn, had, ca, d, st ? " — " : "", st ? err(st) : "");
}

/* The limit: AUTO resolves by device (host devices: never), bad values are refused; inside a
 * step refused; rssm_plan_io's io.fold_every follows the step (2 live rows, then 1) where the
 * back end drains small steps (CUDA's fast kernels). */
static void sb_limit(sb_fixture *f, int k128, rt_counts *c)
{
    rssm_context *ctx = f->ctx;
    rssm_plan *small = f->small;
    const int32_t a_only[2] = {f->a, -1}, ac[2] = {f->a, f->cs};
    int lim_ok = rssm_plan_set_small_batch(small, RSSM_PLAN_SMALL_BATCH_AUTO) == RSSM_OK;
    const int32_t autolim = rssm_plan_small_batch(small);
    /* CUDA's fast kernels: AUTO's rule, and the drain that lets the layers run packed decode */
    const int auto_on = k128 && rssm_context_device(ctx) == RSSM_DEVICE_CUDA;
    lim_ok &= autolim == (auto_on ? 2 * sm_count(ctx) / f->m.HV : 0);
    lim_ok &= rssm_plan_set_small_batch(small, -2) == RSSM_ERROR_BAD_ARGUMENT && *rssm_last_error();
    lim_ok &= rssm_plan_set_small_batch(NULL, 1) == RSSM_ERROR_NULL_POINTER && rssm_plan_small_batch(NULL) == 0;
    lim_ok &= rssm_plan_small_batch(small) == autolim; /* a refused call changed nothing */
    rssm_step_io io;
    lim_ok &= rssm_plan_set_small_batch(small, 1) == RSSM_OK && rssm_plan_set(small, 2, ac, NULL) == RSSM_OK;
    lim_ok &= rssm_plan_begin(small, RSSM_PLAN_DECODE, 1, rssm_context_stream(ctx)) == RSSM_OK &&
              rssm_plan_io(small, &io) == RSSM_OK && io.fold_every == 0 &&
              rssm_plan_set_small_batch(small, 4) == RSSM_ERROR_BAD_ARGUMENT &&
              rssm_plan_end(small, rssm_context_stream(ctx)) == RSSM_OK && rssm_context_synchronize(ctx) == RSSM_OK;
    lim_ok &= rssm_plan_set(small, 2, a_only, NULL) == RSSM_OK &&
              rssm_plan_begin(small, RSSM_PLAN_DECODE, 1, rssm_context_stream(ctx)) == RSSM_OK &&
              rssm_plan_io(small, &io) == RSSM_OK && io.fold_every == auto_on &&
              rssm_plan_end(small, rssm_context_stream(ctx)) == RSSM_OK && rssm_context_synchronize(ctx) == RSSM_OK;
    rt_case(c, lim_ok,
            "plan/%s small batch: AUTO = %d rows here; -2, NULL and a call inside a step refused; io.fold_every "
            "follows the step",
            f->gn, autolim);
}

/* AUTO's value heads per SM by the pool's state dtypes (K = V = 128 on CUDA; host devices 0): every
 * layer's state bf16, 4 for GDN and 6 for KDA; one layer's f32, 2 (a pool takes its layers' least). */
static void sb_auto_rule(rssm_context *ctx, rssm_gate gate, rt_counts *c)
{
    const int cuda = rssm_context_device(ctx) == RSSM_DEVICE_CUDA;
    int ok = 1;
    int32_t got[2] = {-1, -1}, want[2] = {0, 0};
    for (int mixed = 0; mixed < 2; mixed++) {
        rssm_layer ly[NL];
        rt_layers(gate, ly);
        for (int l = 0; l < NL; l++) {
            ly[l].head_k_dim = ly[l].head_v_dim = 128;
            ly[l].state_dtype = mixed && l == NL - 1 ? RSSM_DTYPE_F32 : RSSM_DTYPE_BF16;
        }
        const int heads = mixed ? 2 : gate == RSSM_GATE_KDA ? 6 : 4;
        want[mixed] = cuda ? heads * sm_count(ctx) / ly[0].num_v_heads : 0;
        rssm_pool *p = NULL;
        rssm_plan *plan = NULL;
        ok &= rssm_pool_create(ctx, ly, NL, 2, &p) == RSSM_OK && rssm_plan_create(p, 2, 0, &plan) == RSSM_OK &&
              rssm_plan_set_small_batch(plan, RSSM_PLAN_SMALL_BATCH_AUTO) == RSSM_OK;
        got[mixed] = rssm_plan_small_batch(plan);
        ok &= got[mixed] == want[mixed];
        rssm_plan_free(plan);
        rssm_pool_free(p);
    }
    rt_case(c, ok, "plan/%s small batch: AUTO with bf16 states %d rows (expected %d), with one f32 layer %d (%d)",
            gate == RSSM_GATE_KDA ? "kda" : "gdn", got[0], want[0], got[1], want[1]);
}

/* rssm_plan_set_small_batch: a step of at most max_rows live rows folds every live row. Slot a
 * steps with the small-batch folds, b is a's twin stepped by a plain planner, c a's twin
 * stepped by packed decode. The first small step folds a's ring and gives b's outputs; from
 * there a's cursor stays at 0 and a reproduces packed decode (bit for bit on the CPU and CUDA
 * back ends; the reference rounds each op once from float64, so within 1e-6 there). variant 1:
 * heads of K = V = 128 (CUDA's fast kernels, which drain such steps and run them as packed
 * decode) instead of the suite's small ones; 2: the same with layer 0's state and ring in bf16
 * (CUDA's drain stores the folded checkpoint rounded to bf16 before the step: a folding step's
 * outputs within bf16 rounding of replay's). */
static void plan_small_batch(rssm_context *ctx, rssm_gate gate, int variant, rt_counts *c)
{
    static const char *names[2][3] = {{"gdn", "gdn-k128", "gdn-k128-bf16"}, {"kda", "kda-k128", "kda-k128-bf16"}};
    const int k128 = variant > 0;
    sb_fixture f;
    memset(&f, 0, sizeof f);
    f.ctx = ctx, f.a = f.b = f.cs = -1;
    f.gn = names[gate == RSSM_GATE_KDA][variant];
    f.tol = variant == 2 ? 2e-2 : 1e-6;
    rssm_layer ly[NL];
    rt_layers(gate, ly);
    for (int l = 0; l < NL && k128; l++)
        ly[l].head_k_dim = ly[l].head_v_dim = 128;
    if (variant == 2) ly[0].state_dtype = ly[0].ring_dtype = RSSM_DTYPE_BF16;
    /* layer 0's heads fold early often, so that the steps before a small one leave ring bases
     * above 0, with and without live entries above them */
    ly[0].fold_threshold = 0.3f;
    rssm_pool_create(ctx, ly, NL, 7, &f.p);
    if (!f.p || !model_init(&f.m, ctx, f.p, 2, 1) || rssm_plan_create(f.p, 2, 0, &f.small) != RSSM_OK ||
        rssm_plan_create(f.p, 2, 0, &f.plain) != RSSM_OK || rssm_plan_set_small_batch(f.small, 1) != RSSM_OK) {
        rt_case(c, 0, "plan/%s small-batch setup", f.gn);
    } else {
        rssm_pool_acquire(f.p, &f.a), rssm_pool_acquire(f.p, &f.b), rssm_pool_acquire(f.p, &f.cs);
        const size_t no = (size_t)NL * 2 * f.m.HV * f.m.V;
        f.row = (size_t)f.m.HV * f.m.V;
        f.oa = calloc(no, sizeof(float)), f.ob = calloc(no, sizeof(float));
        if (!f.oa || !f.ob) {
            rt_case(c, 0, "plan/%s small-batch: host memory", f.gn);
        } else {
            rssm_status st = sb_fold_step(&f, c);
            st = sb_packed_steps(&f, st, rssm_context_device(ctx) != RSSM_DEVICE_REFERENCE, c);
            sb_over_limit(&f, st, c);
            sb_refused(&f, c);
            sb_second_drain(&f, c);
            sb_limit(&f, k128, c);
        }
        free(f.oa), free(f.ob);
    }
    model_free(&f.m);
    rssm_plan_free(f.small), rssm_plan_free(f.plain);
    rssm_pool_free(f.p);
}

void rt_suite_plan(rssm_context *ctx, rt_counts *c)
{
    rssm_pool *p = make_pool(ctx, RSSM_GATE_GDN, 6);
    rt_model m;
    rssm_plan *plan = NULL;
    if (!p || !model_init(&m, ctx, p, 4, 1) || rssm_plan_create(p, 4, 8, &plan) != RSSM_OK) {
        rt_case(c, 0, "plan setup");
        rssm_pool_free(p);
        return;
    }
    int32_t s[6];
    for (int i = 0; i < 6; i++)
        rssm_pool_acquire(p, &s[i]);
    /* rows [s0, -1, s2]; row 3 padding via n = 3; s1, s3.. untouched */
    const int32_t slots[3] = {s[0], -1, s[2]};
    int32_t seq[3] = {5, 0, 14};
    int32_t cur[2] = {0, 0}, len[2] = {5, 14};
    rssm_status st = rssm_plan_set(p ? plan : NULL, 3, slots, seq);
    size_t nb = 0;
    unsigned char *before = export_blob(p, s[1], RSSM_EXPORT_RING, &nb);
    int ok = st == RSSM_OK, fold_ok = 1;
    for (int step = 0; step < 20 && ok; step++) {
        uint8_t fold_h[4], fold_d[4];
        rssm_plan_fold_rows(plan, RSSM_PLAN_DECODE, fold_h);
        int32_t tok[4] = {step, 7, step + 50, 9};
        st = model_step(&m, plan, RSSM_PLAN_DECODE, 1, tok, NULL, NULL);
        ok &= st == RSSM_OK;
        rssm_mem_copy(ctx, fold_d, rssm_plan_fold_buffer(plan), 4, RSSM_COPY_DEVICE_TO_HOST);
        for (int r = 0; r < 4; r++) {
            const int real = r == 0 || r == 2, i = r == 0 ? 0 : 1;
            const uint8_t want = real && (len[i] + 1) % 8 == 0;
            fold_ok &= fold_h[r] == want && fold_d[r] == want;
        }
        for (int i = 0; i < 2; i++) {
            const int forced = (len[i] + 1) % 8 == 0;
            int32_t x = (cur[i] + 1 > 4 ? 0 : cur[i]) + 1;
            cur[i] = (x == 4 || forced) ? 0 : x;
            len[i]++;
        }
        int32_t c0 = -1, c2 = -1;
        rssm_pool_cursor(p, s[0], &c0);
        rssm_pool_cursor(p, s[2], &c2);
        ok &= c0 == cur[0] && c2 == cur[1];
        /* host mirror follows the device after a re-set */
        seq[0] = len[0], seq[2] = len[1];
        rssm_plan_set(plan, 3, slots, seq);
    }
    int32_t dseq[4];
    rssm_mem_copy(ctx, dseq, rssm_plan_seq_len_buffer(plan), 16, RSSM_COPY_DEVICE_TO_HOST);
    rt_case(c, ok, "plan decode: cursors follow the fold rules over 20 steps (forced folds at seq %% 8 == 0)%s%s",
            st ? " — " : "", st ? err(st) : "");
    rt_case(c, fold_ok, "plan decode: device fold flags == host mirror == (seq_len + 1) %% 8 == 0");
    rt_case(c, dseq[0] == len[0] && dseq[1] == 0 && dseq[2] == len[1] && dseq[3] == 0,
            "plan decode: sequence lengths advanced on the device, padding rows unchanged");
    size_t na = 0;
    unsigned char *after = export_blob(p, s[1], RSSM_EXPORT_RING, &na);
    rt_case(c, before && after && na == nb && !memcmp(before, after, na),
            "plan: a slot outside the batch is untouched");
    free(before), free(after);
    /* verify: commit with accepted counts; a padding row with accepted > 0 moves nothing */
    rssm_plan_free(plan);
    model_free(&m);
    plan = NULL;
    if (!model_init(&m, ctx, p, 4, 3) || rssm_plan_create(p, 4, 8, &plan) != RSSM_OK) {
        rt_case(c, 0, "plan verify setup");
    } else {
        const int32_t vs[4] = {s[3], -1, s[4], -1};
        int32_t vq[4] = {0, 0, 8, 0}, vc[2] = {0, 0};
        st = rssm_plan_set(plan, 4, vs, vq);
        ok = st == RSSM_OK;
        fold_ok = 1;
        for (int step = 0; step < 12 && ok; step++) {
            const int32_t acc[4] = {1 + step % 3, 3, 3 - step % 3, 2};
            int32_t tok[12];
            for (int i = 0; i < 12; i++)
                tok[i] = 1000 + step * 12 + i;
            uint8_t fold_h[4];
            rssm_plan_fold_rows(plan, RSSM_PLAN_VERIFY, fold_h);
            st = model_step(&m, plan, RSSM_PLAN_VERIFY, 3, tok, acc, NULL);
            ok &= st == RSSM_OK;
            for (int i = 0; i < 2; i++) {
                const int r = i ? 2 : 0;
                const int forced = vq[r] > 0 && vq[r] % 8 == 0;
                fold_ok &= fold_h[r] == forced && !fold_h[1] && !fold_h[3];
                vc[i] = (vc[i] + 3 > 4 || forced ? 0 : vc[i]) + acc[r];
                vq[r] += acc[r];
            }
            int32_t c3 = -1, c4 = -1;
            rssm_pool_cursor(p, s[3], &c3);
            rssm_pool_cursor(p, s[4], &c4);
            ok &= c3 == vc[0] && c4 == vc[1];
            rssm_plan_set(plan, 4, vs, vq);
        }
        rt_case(c, ok && fold_ok, "plan verify: commit with accepted counts, forced start folds at seq %% 8 == 0%s%s",
                st ? " — " : "", st ? err(st) : "");
        rt_case(c, rssm_pool_validate(p) == RSSM_OK, "plan: pool valid after the steps");
    }
    rssm_plan_free(plan);
    model_free(&m);
    /* rssm_plan_set's duplicate check: earlier calls (good or refused) never count as duplicates,
     * a repeat anywhere in the batch does, and the message names both rows */
    plan = NULL;
    if (rssm_plan_create(p, 6, 8, &plan) != RSSM_OK) {
        rt_case(c, 0, "plan duplicate-check setup");
    } else {
        const int32_t all6[6] = {s[5], s[4], s[3], s[2], s[1], s[0]}, rep[5] = {s[2], -1, s[4], -1, s[2]};
        const int32_t two[2] = {s[2], s[4]}, late[5] = {s[5], s[3], s[1], s[0], s[3]};
        int dup_ok = rssm_plan_set(plan, 6, all6, NULL) == RSSM_OK && rssm_plan_set(plan, 6, all6, NULL) == RSSM_OK;
        dup_ok &= rssm_plan_set(plan, 5, rep, NULL) == RSSM_ERROR_BAD_SLOT &&
                  strstr(rssm_last_error(), "rows 0 and 4") != NULL;
        dup_ok &= rssm_plan_set(plan, 2, two, NULL) == RSSM_OK;
        dup_ok &= rssm_plan_set(plan, 5, late, NULL) == RSSM_ERROR_BAD_SLOT &&
                  strstr(rssm_last_error(), "rows 1 and 4") != NULL;
        dup_ok &= rssm_plan_set(plan, 6, all6, NULL) == RSSM_OK;
        rt_case(c, dup_ok, "plan_set: repeated slots refused naming both rows; earlier calls never count");
    }
    rssm_plan_free(plan);
    rssm_pool_free(p);
    for (int variant = 0; variant < 3; variant++) {
        plan_small_batch(ctx, RSSM_GATE_GDN, variant, c);
        plan_small_batch(ctx, RSSM_GATE_KDA, variant, c);
    }
    sb_auto_rule(ctx, RSSM_GATE_GDN, c);
    sb_auto_rule(ctx, RSSM_GATE_KDA, c);
}

/* ---- export / import ------------------------------------------------------------------------ */

void rt_suite_export(rssm_context *ctx, rt_counts *c)
{
    for (int gi = 0; gi < 2; gi++) {
        const rssm_gate gate = gi ? RSSM_GATE_KDA : RSSM_GATE_GDN;
        const char *gn = gi ? "kda" : "gdn";
        rssm_pool *p1 = make_pool(ctx, gate, 4), *p2 = make_pool(ctx, gate, 3);
        rssm_pool *other = make_pool(ctx, gi ? RSSM_GATE_GDN : RSSM_GATE_KDA, 2);
        rt_model m1, m2;
        rssm_plan *pl1 = NULL, *pl2 = NULL;
        if (!p1 || !p2 || !other || !model_init(&m1, ctx, p1, 1, 1) || !model_init(&m2, ctx, p2, 1, 1) ||
            rssm_plan_create(p1, 1, 0, &pl1) != RSSM_OK || rssm_plan_create(p2, 1, 0, &pl2) != RSSM_OK) {
            rt_case(c, 0, "export/%s setup", gn);
            continue;
        }
        int32_t x, y = -1, xm = -1, ym = -1;
        rssm_pool_acquire(p1, &x);
        rssm_status st = run_decode(&m1, pl1, x, 0, 6, 300); /* cursor 2 of L 4 */
        size_t n = 0, nm = 0;
        unsigned char *blob = export_blob(p1, x, RSSM_EXPORT_RING, &n);
        unsigned char *mblob = export_blob(p1, x, RSSM_EXPORT_MATERIALIZED, &nm);
        int32_t cx = -1;
        rssm_pool_cursor(p1, x, &cx);
        rt_case(c, st == RSSM_OK && blob && mblob && nm < n && cx == 2,
                "export/%s ring form %zu bytes, materialised form %zu bytes (cursor %d)", gn, n, nm, cx);
        if (!blob || !mblob) continue;
        /* corruptions: nothing imported, nothing changed */
        const int32_t free0 = rssm_pool_num_free(p2);
        unsigned char *bad = malloc(n);
        struct {
            const char *what;
            size_t at;
            rssm_status want;
        } cases[] = {{"payload byte", n - 3, RSSM_ERROR_CHECKSUM},
                     {"checksum", 41, RSSM_ERROR_CHECKSUM},
                     {"magic", 0, RSSM_ERROR_BAD_FORMAT},
                     {"version", 8, RSSM_ERROR_BAD_FORMAT},
                     {"layer shape", 48 + 8, RSSM_ERROR_BAD_FORMAT},
                     {"payload size", 24, RSSM_ERROR_BAD_FORMAT}};
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            memcpy(bad, blob, n);
            bad[cases[i].at] ^= 0x5a;
            st = rssm_pool_import(p2, bad, n, &y);
            rt_case(c, st == cases[i].want && rssm_pool_num_free(p2) == free0 && *rssm_last_error(),
                    "export/%s import of a blob with a bad %s: %s", gn, cases[i].what, rssm_status_name(st));
        }
        st = rssm_pool_import(p2, blob, n - 1, &y);
        rt_case(c, st == RSSM_ERROR_BAD_FORMAT && rssm_pool_num_free(p2) == free0, "export/%s truncated blob: %s", gn,
                rssm_status_name(st));
        st = rssm_pool_import(other, blob, n, &y);
        rt_case(c, st == RSSM_ERROR_BAD_FORMAT && rssm_pool_num_free(other) == 2,
                "export/%s import into a pool of another shape: %s", gn, rssm_status_name(st));
        free(bad);
        /* ring form continues bit-identically */
        st = rssm_pool_import(p2, blob, n, &y);
        int32_t cy = -1;
        rssm_pool_cursor(p2, y, &cy);
        const int same0 = st == RSSM_OK && same_state(p1, x, p2, y, RSSM_EXPORT_RING);
        float *o1 = malloc(sizeof(float) * 4096), *o2 = malloc(sizeof(float) * 4096);
        int ident = 1;
        int32_t s1 = 6, s2 = 6;
        rssm_plan_set(pl1, 1, &x, &s1);
        rssm_plan_set(pl2, 1, &y, &s2);
        for (int i = 0; i < 9 && st == RSSM_OK; i++) {
            int32_t tok = 900 + i;
            st = model_step(&m1, pl1, RSSM_PLAN_DECODE, 1, &tok, NULL, o1);
            if (st == RSSM_OK) st = model_step(&m2, pl2, RSSM_PLAN_DECODE, 1, &tok, NULL, o2);
            ident &= !memcmp(o1, o2, sizeof(float) * NL * m1.HV * m1.V);
        }
        rt_case(c, same0 && cy == 2 && st == RSSM_OK && ident && same_state(p1, x, p2, y, RSSM_EXPORT_RING),
                "export/%s ring form: import then 9 steps bit-identical to the source%s%s", gn, st ? " — " : "",
                st ? err(st) : "");
        /* materialised form continues like an in-pool copy */
        st = rssm_pool_import(p2, mblob, nm, &ym);
        if (st == RSSM_OK) st = rssm_pool_release(p1, x);
        rssm_pool_acquire(p1, &x);
        if (st == RSSM_OK) st = rssm_pool_import(p1, blob, n, &xm); /* the exported state again */
        int32_t xc = -1;
        if (st == RSSM_OK) st = rssm_pool_acquire_copy(p1, p1, xm, &xc);
        ident = st == RSSM_OK;
        if (ident) {
            rssm_plan_set(pl1, 1, &xc, &s1);
            rssm_plan_set(pl2, 1, &ym, &s2);
        }
        for (int i = 0; i < 7 && st == RSSM_OK; i++) {
            int32_t tok = 700 + i;
            st = model_step(&m1, pl1, RSSM_PLAN_DECODE, 1, &tok, NULL, o1);
            if (st == RSSM_OK) st = model_step(&m2, pl2, RSSM_PLAN_DECODE, 1, &tok, NULL, o2);
            ident &= !memcmp(o1, o2, sizeof(float) * NL * m1.HV * m1.V);
        }
        rt_case(c, st == RSSM_OK && ident && same_state(p1, xc, p2, ym, RSSM_EXPORT_RING),
                "export/%s materialised form: import then 7 steps bit-identical to rssm_pool_copy then 7 steps%s%s", gn,
                st ? " — " : "", st ? err(st) : "");
        /* full pool */
        int32_t t;
        while (rssm_pool_num_free(p2) > 0)
            rssm_pool_acquire(p2, &t);
        st = rssm_pool_import(p2, blob, n, &t);
        rt_case(c, st == RSSM_ERROR_POOL_FULL && rssm_pool_validate(p2) == RSSM_OK,
                "export/%s import into a full pool: RSSM_ERROR_POOL_FULL", gn);
        free(o1), free(o2), free(blob), free(mblob);
        rssm_plan_free(pl1), rssm_plan_free(pl2);
        model_free(&m1), model_free(&m2);
        rssm_pool_free(p1), rssm_pool_free(p2), rssm_pool_free(other);
    }
}

/* ---- prefix cache: hit vs cold ------------------------------------------------------------------ */
/*
 * Request A runs N tokens and snapshots its state at every forced fold (track interval 8).
 * Request B shares A's first D tokens, then differs. B cold runs from scratch next to A (same
 * planner, same forced folds); B warm acquires a slot, matches the cache (longest snapshot
 * P <= D), and continues from P. With an f32 state "identical" needs the cold run's checkpoint
 * at P to be the same bits as the snapshot: it is, because the cold run folds at P too (the
 * forced fold), so both continue from the same checkpoint and an empty ring, running the same
 * operations. Without the forced fold the cold run would carry a ring across P and round its
 * checkpoint at other points: equal to ~1e-6, not bitwise.
 *
 * Verify: windows of T = 3 tokens, the first `accepted` of them the request's tokens, the rest
 * rejected drafts whose ids depend only on their position (so A's and B's windows before P
 * are the same); accepted counts follow a fixed pattern indexed by the step.
 */
#define PC_N 48
#define PC_D 29
#define PC_TRACK 8
#define PC_T 3

static int32_t tokA(int i) { return 10 + (int32_t)(mix((uint64_t)i) % 5000); }
static int32_t tokB(int i) { return i < PC_D ? tokA(i) : 6000 + (int32_t)(mix((uint64_t)i + 77) % 5000); }
static int32_t junk(int pos) { return 20000 + pos; }
static int32_t acc_pattern(int step) { return 1 + (int32_t)(mix((uint64_t)step + 999) % PC_T); }

void rt_suite_prefix(rssm_context *ctx, rssm_gate gate, int verify, rt_counts *c)
{
    const char *gn = gate == RSSM_GATE_KDA ? "kda" : "gdn";
    const char *mn = verify ? "verify" : "decode";
    const int T = verify ? PC_T : 1;
    const rssm_plan_mode mode = verify ? RSSM_PLAN_VERIFY : RSSM_PLAN_DECODE;
    rssm_pool *p = make_pool(ctx, gate, 10);
    rssm_prefix_cache *cache = NULL;
    rt_model m;
    rssm_plan *plan = NULL;
    if (!p || rssm_prefix_cache_create(p, 0, 5, &cache) != RSSM_OK || !model_init(&m, ctx, p, 3, T) ||
        rssm_plan_create(p, 3, PC_TRACK, &plan) != RSSM_OK) {
        rt_case(c, 0, "prefix/%s/%s setup: %s", gn, mn, rssm_last_error());
        rssm_pool_free(p);
        return;
    }
    const size_t per_tok = (size_t)m.HV * m.V, per_row = (size_t)T * per_tok, per_layer = 3 * per_row;
    /* cold outputs of B, per committed position (decode) or per step (verify) */
    float *cold = calloc((size_t)(PC_N + 8) * NL * per_row, sizeof(float));
    float *out = calloc(NL * per_layer, sizeof(float));
    int step_at[PC_N + 8];
    for (int i = 0; i < PC_N + 8; i++)
        step_at[i] = -1;
    int32_t a, bc;
    rssm_pool_acquire(p, &a);
    rssm_pool_acquire(p, &bc);
    int32_t seq[3] = {0, 0, 0};
    const int32_t rows[3] = {a, -1, bc};
    rssm_status st = RSSM_OK;
    int inserts = 0, snaps_at[PC_N + 8] = {0};
    for (int step = 0; seq[0] < PC_N && st == RSSM_OK; step++) {
        st = rssm_plan_set(plan, 3, rows, seq);
        uint8_t fold[3];
        rssm_plan_fold_rows(plan, mode, fold);
        int32_t tok[3 * PC_T], acc[3];
        const int32_t k = verify ? acc_pattern(step) : 1;
        for (int t = 0; t < T; t++) {
            tok[0 * T + t] = t < k ? tokA(seq[0] + t) : junk(seq[0] + t);
            tok[1 * T + t] = 0;
            tok[2 * T + t] = t < k ? tokB(seq[2] + t) : junk(seq[2] + t);
        }
        acc[0] = acc[2] = k, acc[1] = 0;
        step_at[seq[2]] = step;
        if (st == RSSM_OK) st = model_step(&m, plan, mode, T, tok, verify ? acc : NULL, out);
        for (int l = 0; l < NL && st == RSSM_OK; l++)
            memcpy(cold + ((size_t)seq[2] * NL + l) * per_row, out + l * per_layer + 2 * per_row,
                   per_row * sizeof(float));
        /* snapshot point of row 0 (A): decode -> after the step at seq + 1; verify -> at seq */
        if (st == RSSM_OK && fold[0]) {
            int32_t tks[PC_N + 8];
            const int32_t at = verify ? seq[0] : seq[0] + 1;
            for (int i = 0; i < at; i++)
                tks[i] = tokA(i);
            /* decode inserts stream-ordered on the default stream (on CUDA another stream than
             * the context's, so the event ordering is what keeps the snapshot right); verify
             * inserts synchronised */
            st = verify ? rssm_prefix_cache_insert(cache, tks, at, p, a, RSSM_SNAPSHOT_CHECKPOINT)
                        : rssm_prefix_cache_insert_async(cache, tks, at, p, a, RSSM_SNAPSHOT_CHECKPOINT, NULL);
            inserts += st == RSSM_OK;
            snaps_at[at] = 1;
        }
        seq[0] += k, seq[2] += k;
    }
    rt_case(c, st == RSSM_OK && inserts > 0 && rssm_prefix_cache_validate(cache) == RSSM_OK,
            "prefix/%s/%s request A ran %d tokens, %d snapshots inserted (%s)%s%s", gn, mn, seq[0], inserts,
            verify ? "synchronised" : "stream-ordered", st ? " — " : "", st ? err(st) : "");
    int P = 0;
    for (int i = 1; i <= PC_D; i++)
        if (snaps_at[i] && step_at[i] >= 0) P = i;
    /* B warm */
    int32_t bw, matched = -1;
    uint64_t lock = 0;
    int32_t tb[PC_N + 8];
    for (int i = 0; i < PC_N; i++)
        tb[i] = tokB(i);
    rssm_pool_acquire(p, &bw);
    if (st == RSSM_OK) st = rssm_prefix_cache_match(cache, tb, PC_N, p, bw, &matched, &lock);
    rt_case(c, st == RSSM_OK && matched == P && P > 0 && lock != 0,
            "prefix/%s/%s B matches the longest cached prefix %d (expected %d, divergence at %d)", gn, mn, matched, P,
            PC_D);
    /* a locked snapshot survives eviction */
    int32_t ev = 0;
    rssm_prefix_cache_evict(cache, 100, &ev);
    int32_t m2 = -1;
    rssm_prefix_cache_match(cache, tb, PC_N, NULL, -1, &m2, NULL);
    rt_case(c, m2 == P && rssm_prefix_cache_validate(cache) == RSSM_OK,
            "prefix/%s/%s evicting everything (%d evicted) keeps the locked prefix", gn, mn, ev);
    int ident = st == RSSM_OK && matched > 0, compared = 0;
    int32_t wseq[3] = {-0, 0, 0};
    const int32_t wrows[3] = {-1, bw, -1};
    wseq[1] = matched;
    int step = step_at[matched >= 0 ? matched : 0];
    while (ident && wseq[1] < PC_N && step >= 0) {
        st = rssm_plan_set(plan, 3, wrows, wseq);
        int32_t tok[3 * PC_T] = {0}, acc[3] = {0, 0, 0};
        const int32_t k = verify ? acc_pattern(step) : 1;
        for (int t = 0; t < T; t++)
            tok[1 * T + t] = t < k ? tokB(wseq[1] + t) : junk(wseq[1] + t);
        acc[1] = k;
        if (st == RSSM_OK) st = model_step(&m, plan, mode, T, tok, verify ? acc : NULL, out);
        if (st != RSSM_OK || step_at[wseq[1]] != step) {
            ident = 0;
            break;
        }
        for (int l = 0; l < NL; l++)
            ident &= !memcmp(cold + ((size_t)wseq[1] * NL + l) * per_row, out + l * per_layer + 1 * per_row,
                             per_row * sizeof(float));
        compared++;
        wseq[1] += k;
        step++;
    }
    rt_case(c, ident && compared > 0 && same_state(p, bw, p, bc, RSSM_EXPORT_MATERIALIZED),
            "prefix/%s/%s warm B (from the snapshot at %d) == cold B bit for bit over %d steps, final states equal%s%s",
            gn, mn, matched, compared, st ? " — " : "", st ? err(st) : "");
    rt_case(c,
            rssm_prefix_cache_unlock(cache, lock) == RSSM_OK &&
                rssm_prefix_cache_unlock(cache, lock) == RSSM_ERROR_NOT_FOUND,
            "prefix/%s/%s unlock, then a second unlock: RSSM_ERROR_NOT_FOUND", gn, mn);
    rssm_prefix_cache_evict(cache, 100, &ev);
    rssm_prefix_cache_stats stt;
    rssm_prefix_cache_get_stats(cache, &stt);
    rt_case(c, stt.snapshots == 0 && stt.nodes == 0 && rssm_pool_num_free(p) == 7 && rssm_pool_validate(p) == RSSM_OK,
            "prefix/%s/%s unlocked entries evicted: empty tree, slots back in the pool", gn, mn);
    free(cold), free(out);
    rssm_prefix_cache_free(cache);
    rssm_plan_free(plan);
    model_free(&m);
    rssm_pool_free(p);
}

/* ---- bad input ------------------------------------------------------------------------------------ */

void rt_suite_bad_input(rssm_context *ctx, rt_counts *c)
{
    rssm_layer ly[NL];
    rt_layers(RSSM_GATE_KDA, ly);
    rssm_pool *p = make_pool(ctx, RSSM_GATE_KDA, 3);
    if (!p) {
        rt_case(c, 0, "bad input setup");
        return;
    }
    int32_t s, t = -1;
    rssm_pool_acquire(p, &s);
    size_t n0 = 0;
    unsigned char *before = export_blob(p, s, RSSM_EXPORT_RING, &n0);
    size_t sz;
    rssm_pool *q = NULL;
    rssm_plan *plan = NULL;
    rssm_prefix_cache *cache = NULL;
    rssm_layer bad = ly[1];
    bad.ring_len = 5;
    rssm_layer mixed[2] = {ly[0], bad};
    const int32_t toks[2] = {1, 2};
    int32_t matched;
    rssm_state stt;
    unsigned char buf[64] = {0};
    size_t wrote;
    struct {
        const char *what;
        rssm_status st;
    } r[] = {
        {"pool_bytes(NULL layers)", rssm_pool_bytes(NULL, 2, 3, &sz)},
        {"pool_bytes(0 slots)", rssm_pool_bytes(ly, 2, 0, &sz)},
        {"pool_bytes(ring lengths differ)", rssm_pool_bytes(mixed, 2, 3, &sz)},
        {"pool_create(NULL ctx)", rssm_pool_create(NULL, ly, 2, 3, &q)},
        {"pool_create(0 layers)", rssm_pool_create(ctx, ly, 0, 3, &q)},
        {"pool_state(layer 2)", rssm_pool_state(p, 2, &stt)},
        {"pool_acquire(NULL)", rssm_pool_acquire(p, NULL)},
        {"pool_release(99)", rssm_pool_release(p, 99)},
        {"pool_copy(free src)", rssm_pool_copy(p, 1, p, s)},
        {"pool_copy(NULL dst)", rssm_pool_copy(p, s, NULL, s)},
        {"pool_copy_checkpoint(free dst)", rssm_pool_copy_checkpoint(p, s, p, 2)},
        {"pool_cursor(free)", rssm_pool_cursor(p, 1, &t)},
        {"pool_export(form 7)", rssm_pool_export(p, s, 7, buf, sizeof buf, &wrote)},
        {"pool_export(small buffer)", rssm_pool_export(p, s, RSSM_EXPORT_RING, buf, sizeof buf, &wrote)},
        {"pool_export(free slot)", rssm_pool_export(p, 2, RSSM_EXPORT_RING, buf, sizeof buf, &wrote)},
        {"pool_import(zeros)", rssm_pool_import(p, buf, sizeof buf, &t)},
        {"pool_import(NULL)", rssm_pool_import(p, NULL, 10, &t)},
        {"plan_create(batch 0)", rssm_plan_create(p, 0, 8, &plan)},
        {"plan_create(track -1)", rssm_plan_create(p, 2, -1, &plan)},
        {"prefix_cache_create(budget of 1 byte)", rssm_prefix_cache_create(p, 1, 0, &cache)},
        {"prefix_cache_create(NULL pool)", rssm_prefix_cache_create(NULL, 0, 0, &cache)},
    };
    int all = 1;
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
        const int ok = r[i].st != RSSM_OK;
        all &= ok;
        if (!ok) rt_case(c, 0, "bad input %s returned RSSM_OK", r[i].what);
    }
    rt_case(c, all && !q && !plan && !cache, "bad input: %zu pool/plan/cache calls refused with a status",
            sizeof r / sizeof r[0]);
    /* planner and cache on valid objects */
    rssm_plan_create(p, 2, 8, &plan);
    rssm_prefix_cache_create(p, 0, 0, &cache);
    const int32_t dup[2] = {s, s}, freed[1] = {2}, neg[1] = {-4}, seqbad[1] = {-1}, accbad[1] = {99};
    uint8_t f[2];
    rssm_step_io io;
    struct {
        const char *what;
        rssm_status st;
    } r2[] = {
        {"plan_set(duplicate slot)", rssm_plan_set(plan, 2, dup, NULL)},
        {"plan_set(free slot)", rssm_plan_set(plan, 1, freed, NULL)},
        {"plan_set(slot -4)", rssm_plan_set(plan, 1, neg, NULL)},
        {"plan_set(n 3 > batch)", rssm_plan_set(plan, 3, dup, NULL)},
        {"plan_set(seq -1)", rssm_plan_set(plan, 1, &s, seqbad)},
        {"plan_set_accepted(99)", rssm_plan_set_accepted(plan, 1, accbad)},
        {"plan_begin(before set)", rssm_plan_begin(plan, RSSM_PLAN_DECODE, 1, NULL)},
        {"plan_begin(decode T 2)", rssm_plan_begin(plan, RSSM_PLAN_DECODE, 2, NULL)},
        {"plan_begin(verify T 9)", rssm_plan_begin(plan, RSSM_PLAN_VERIFY, 9, NULL)},
        {"plan_begin(mode 5)", rssm_plan_begin(plan, (rssm_plan_mode)5, 1, NULL)},
        {"plan_end(no begin)", rssm_plan_end(plan, NULL)},
        {"plan_io(NULL)", rssm_plan_io(plan, NULL)},
        {"plan_fold_rows(NULL)", rssm_plan_fold_rows(plan, RSSM_PLAN_DECODE, NULL)},
        {"plan_io(NULL plan)", rssm_plan_io(NULL, &io)},
        {"prefix_insert(n 0)", rssm_prefix_cache_insert(cache, toks, 0, p, s, RSSM_SNAPSHOT_CHECKPOINT)},
        {"prefix_insert(source 9)", rssm_prefix_cache_insert(cache, toks, 2, p, s, 9)},
        {"prefix_insert(free slot)", rssm_prefix_cache_insert(cache, toks, 2, p, 2, RSSM_SNAPSHOT_CHECKPOINT)},
        {"prefix_insert(NULL tokens)", rssm_prefix_cache_insert(cache, NULL, 2, p, s, RSSM_SNAPSHOT_CHECKPOINT)},
        {"prefix_insert_async(free slot)",
         rssm_prefix_cache_insert_async(cache, toks, 2, p, 2, RSSM_SNAPSHOT_CHECKPOINT, NULL)},
        {"prefix_insert_async(NULL cache)",
         rssm_prefix_cache_insert_async(NULL, toks, 2, p, s, RSSM_SNAPSHOT_CHECKPOINT, NULL)},
        {"prefix_match(free dst)", rssm_prefix_cache_match(cache, toks, 2, p, 2, &matched, NULL)},
        {"prefix_match(NULL matched)", rssm_prefix_cache_match(cache, toks, 2, NULL, -1, NULL, NULL)},
        {"prefix_unlock(bogus)", rssm_prefix_cache_unlock(cache, 0x123456789ull)},
        {"prefix_evict(-1)", rssm_prefix_cache_evict(cache, -1, NULL)},
    };
    all = 1;
    for (size_t i = 0; i < sizeof r2 / sizeof r2[0]; i++) {
        const int ok = r2[i].st != RSSM_OK;
        all &= ok;
        if (!ok) rt_case(c, 0, "bad input %s returned RSSM_OK", r2[i].what);
    }
    (void)f;
    rt_case(c, all, "bad input: %zu planner/cache calls refused with a status", sizeof r2 / sizeof r2[0]);
    size_t n1 = 0;
    unsigned char *after = export_blob(p, s, RSSM_EXPORT_RING, &n1);
    rssm_prefix_cache_stats cs;
    rssm_prefix_cache_get_stats(cache, &cs);
    rt_case(c,
            before && after && n0 == n1 && !memcmp(before, after, n0) && rssm_pool_num_free(p) == 2 &&
                rssm_pool_validate(p) == RSSM_OK && cs.nodes == 0 && rssm_prefix_cache_validate(cache) == RSSM_OK,
            "bad input changed nothing (held slot bits, free count, empty cache)");
    /* a cache snapshot is not the caller's slot */
    int32_t two[2] = {5, 6};
    rssm_status st = rssm_prefix_cache_insert(cache, two, 2, p, s, RSSM_SNAPSHOT_MATERIALIZE);
    int32_t snap = -1;
    for (int32_t i = 0; i < 3; i++)
        if (i != s && rssm_pool_is_held(p, i)) snap = i;
    rt_case(c,
            st == RSSM_OK && snap >= 0 && rssm_pool_release(p, snap) == RSSM_ERROR_NOT_FOUND &&
                rssm_plan_set(plan, 1, &snap, NULL) == RSSM_ERROR_NOT_FOUND &&
                rssm_prefix_cache_match(cache, two, 2, p, snap, &matched, NULL) == RSSM_ERROR_NOT_FOUND,
            "a snapshot slot cannot be released, stepped or overwritten by the caller (%s)", rssm_last_error());
    free(before), free(after);
    rssm_prefix_cache_free(cache);
    rssm_plan_free(plan);
    rssm_pool_free(p);
}

/* ---- every suite on one device ------------------------------------------------------------------ */

int rt_check_run(rssm_device dev, const rssm_context_params *params)
{
    const char *dn = dev == RSSM_DEVICE_CPU ? "cpu" : dev == RSSM_DEVICE_CUDA ? "cuda" : "reference";
    rssm_context *ctx = NULL;
    rssm_status st = rssm_context_create(dev, params, &ctx);
    if (st != RSSM_OK) {
        const int absent = st == RSSM_ERROR_UNSUPPORTED && dev == RSSM_DEVICE_CUDA;
        printf("runtime suite on %s: %s: %s\n0 passed, %d failed\n", dn, absent ? "skipped" : "FAIL",
               rh_context_error(dev, st), absent ? 0 : 1);
        return absent ? RH_EXIT_SKIP : 1;
    }
    rt_counts c = {0, 0};
    printf("runtime suite on %s\n", dn);
    rt_suite_pool(ctx, &c);
    rt_suite_plan(ctx, &c);
    rt_suite_export(ctx, &c);
    for (int g = 0; g < 2; g++)
        for (int v = 0; v < 2; v++)
            rt_suite_prefix(ctx, g ? RSSM_GATE_KDA : RSSM_GATE_GDN, v, &c);
    rt_suite_bad_input(ctx, &c);
    printf("%d passed, %d failed\n", c.passed, c.failed);
    rssm_context_free(ctx);
    return c.failed ? 1 : 0;
}
