/*
 * harness.c — see harness.h.
 */
#include "harness.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- messages ------------------------------------------------------------------------- */

static _Thread_local char msg[1024];

const char *rh_msg(void) { return msg; }

int rh_set(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return code;
}

int rh_status(rssm_status st, const char *what)
{
    if (st == RSSM_OK) return RH_OK;
    return rh_set(st == RSSM_ERROR_UNSUPPORTED ? RH_UNSUPPORTED : RH_FAIL, "%s: %s: %s", what, rssm_status_name(st),
                  rssm_last_error());
}

#define TRY(expr)                                                                                                      \
    do {                                                                                                               \
        int rc_ = (expr);                                                                                              \
        if (rc_ != RH_OK) return rc_;                                                                                  \
    } while (0)

/* ---- random ----------------------------------------------------------------------------- */

void rh_rng_seed(rh_rng *r, uint64_t seed) { r->s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull; }

double rh_uniform(rh_rng *r)
{
    r->s ^= r->s >> 12, r->s ^= r->s << 25, r->s ^= r->s >> 27;
    return (double)((r->s * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53;
}

void rh_permutation(rh_rng *r, int32_t *perm, int n)
{
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        const int j = (int)(rh_uniform(r) * (i + 1));
        const int32_t t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
}

double rh_normal(rh_rng *r)
{
    double u1 = rh_uniform(r), u2 = rh_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ---- dtypes ----------------------------------------------------------------------------- */

void rh_pack(const double *x, int64_t n, rssm_dtype dt, void *out)
{
    for (int64_t i = 0; i < n; i++) {
        if (dt == RSSM_DTYPE_F32)
            ((float *)out)[i] = (float)x[i];
        else if (dt == RSSM_DTYPE_BF16)
            ((uint16_t *)out)[i] = rssm_f32_to_bf16((float)x[i]);
        else
            ((double *)out)[i] = x[i];
    }
}

void rh_unpack(const void *in, int64_t n, rssm_dtype dt, double *x)
{
    for (int64_t i = 0; i < n; i++) {
        if (dt == RSSM_DTYPE_F32)
            x[i] = ((const float *)in)[i];
        else if (dt == RSSM_DTYPE_BF16)
            x[i] = rssm_bf16_to_f32(((const uint16_t *)in)[i]);
        else
            x[i] = ((const double *)in)[i];
    }
}

double rh_round(double x, rssm_dtype dt)
{
    if (dt == RSSM_DTYPE_F32) return (float)x;
    if (dt == RSSM_DTYPE_BF16) return rssm_bf16_to_f32(rssm_f32_to_bf16((float)x));
    return x;
}

double rh_relerr(const double *x, const double *y, int64_t n)
{
    double d = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i])) return INFINITY;
        double e = fabs(x[i] - y[i]);
        if (e > d) d = e;
        if (fabs(y[i]) > m) m = fabs(y[i]);
    }
    return m > 0 ? d / m : d;
}

double rh_tolerance(rssm_dtype state, rssm_dtype ring, rssm_dtype io)
{
    if (state == RSSM_DTYPE_BF16 || ring == RSSM_DTYPE_BF16) return 2e-2;
    if (io == RSSM_DTYPE_BF16) return 1e-2;
    return 1e-5;
}

int rh_finite(const double *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* ---- guarded buffers --------------------------------------------------------------------- */

static void guard_pattern(uint8_t *g, size_t off)
{
    for (size_t i = 0; i < RH_GUARD; i++)
        g[i] = (uint8_t)(0xA5 ^ ((off + i) * 37));
}

int rh_buf_alloc(rssm_context *ctx, size_t bytes, rh_buf *b)
{
    memset(b, 0, sizeof *b);
    void *base;
    TRY(rh_status(rssm_mem_alloc(ctx, bytes + 2 * RH_GUARD, &base), "alloc"));
    b->base = base, b->p = (uint8_t *)base + RH_GUARD, b->bytes = bytes;
    uint8_t g[RH_GUARD];
    guard_pattern(g, 0);
    TRY(rh_status(rssm_mem_copy(ctx, base, g, RH_GUARD, RSSM_COPY_HOST_TO_DEVICE), "upload"));
    guard_pattern(g, 1);
    TRY(rh_status(rssm_mem_copy(ctx, (uint8_t *)b->p + bytes, g, RH_GUARD, RSSM_COPY_HOST_TO_DEVICE), "upload"));
    if (bytes) TRY(rh_status(rssm_mem_set(ctx, b->p, 0, bytes), "memset"));
    return RH_OK;
}

void rh_buf_free(rssm_context *ctx, rh_buf *b)
{
    if (b->base) rssm_mem_free(ctx, b->base);
    memset(b, 0, sizeof *b);
}

int rh_buf_put(rssm_context *ctx, rh_buf *b, const void *host)
{
    if (!b->bytes) return RH_OK;
    return rh_status(rssm_mem_copy(ctx, b->p, host, b->bytes, RSSM_COPY_HOST_TO_DEVICE), "upload");
}

int rh_buf_get(rssm_context *ctx, const rh_buf *b, void *host)
{
    if (!b->bytes) return RH_OK;
    TRY(rh_status(rssm_context_synchronize(ctx), "sync"));
    return rh_status(rssm_mem_copy(ctx, host, b->p, b->bytes, RSSM_COPY_DEVICE_TO_HOST), "download");
}

int rh_buf_guard_ok(rssm_context *ctx, const rh_buf *b, const char *what)
{
    if (!b->base) return RH_OK;
    uint8_t want[RH_GUARD], got[RH_GUARD];
    TRY(rh_status(rssm_context_synchronize(ctx), "sync"));
    for (int side = 0; side < 2; side++) {
        guard_pattern(want, (size_t)side);
        const uint8_t *at = side ? (const uint8_t *)b->p + b->bytes : (const uint8_t *)b->base;
        TRY(rh_status(rssm_mem_copy(ctx, got, at, RH_GUARD, RSSM_COPY_DEVICE_TO_HOST), "download"));
        if (memcmp(want, got, RH_GUARD))
            return rh_set(RH_FAIL, "guard bytes %s %s were overwritten", side ? "after" : "before", what);
    }
    return RH_OK;
}

int rh_buf_from(rssm_context *ctx, const void *host, size_t bytes, rh_buf *b)
{
    memset(b, 0, sizeof *b);
    if (!host) return RH_OK;
    TRY(rh_buf_alloc(ctx, bytes, b));
    return rh_buf_put(ctx, b, host);
}

/* ---- states ------------------------------------------------------------------------------- */

static const char *tensor_name[RH_NT] = {"checkpoint", "ring_u", "ring_k", "ring_g", "ring_base", "cursor"};

int rh_state_create(rssm_context *ctx, const rssm_layer *layer, int32_t slots, rh_state *s)
{
    memset(s, 0, sizeof *s);
    rssm_state_bytes sz;
    TRY(rh_status(rssm_state_size(layer, slots, &sz), "rssm_state_size"));
    s->layer = *layer, s->slots = slots;
    size_t n[RH_NT] = {sz.checkpoint, sz.ring_u, sz.ring_k, sz.ring_g, sz.ring_base, sz.cursor};
    for (int i = 0; i < RH_NT; i++) {
        int rc = rh_buf_alloc(ctx, n[i], &s->t[i]);
        if (rc) {
            rh_state_free(ctx, s);
            return rc;
        }
    }
    s->st.num_slots = slots;
    s->st.checkpoint = s->t[RH_CKPT].p;
    s->st.ring_u = s->t[RH_RING_U].p;
    s->st.ring_k = s->t[RH_RING_K].p;
    s->st.ring_g = s->t[RH_RING_G].p;
    s->st.ring_base = n[RH_RING_BASE] ? s->t[RH_RING_BASE].p : NULL;
    s->st.cursor = s->t[RH_CURSOR].p;
    s->st.bytes = sz;
    return RH_OK;
}

void rh_state_free(rssm_context *ctx, rh_state *s)
{
    for (int i = 0; i < RH_NT; i++)
        rh_buf_free(ctx, &s->t[i]);
}

int rh_state_guards_ok(rssm_context *ctx, const rh_state *s)
{
    for (int i = 0; i < RH_NT; i++)
        TRY(rh_buf_guard_ok(ctx, &s->t[i], tensor_name[i]));
    return RH_OK;
}

int rh_snap_take(rssm_context *ctx, const rh_state *s, rh_snap *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < RH_NT; i++) {
        out->n[i] = s->t[i].bytes;
        out->t[i] = malloc(out->n[i] + 1);
        if (!out->t[i]) return rh_set(RH_FAIL, "out of host memory");
        TRY(rh_buf_get(ctx, &s->t[i], out->t[i]));
    }
    return RH_OK;
}

int rh_snap_put(rssm_context *ctx, rh_state *s, const rh_snap *in)
{
    for (int i = 0; i < RH_NT; i++)
        TRY(rh_buf_put(ctx, &s->t[i], in->t[i]));
    return RH_OK;
}

void rh_snap_free(rh_snap *s)
{
    for (int i = 0; i < RH_NT; i++)
        free(s->t[i]);
    memset(s, 0, sizeof *s);
}

int rh_snap_slot_equal(const rh_state *s, const rh_snap *a, const rh_snap *b, int slot)
{
    for (int i = 0; i < RH_NT; i++) {
        if (!a->n[i]) continue;
        const size_t per = a->n[i] / (size_t)s->slots;
        if (memcmp(a->t[i] + per * slot, b->t[i] + per * slot, per)) return 0;
    }
    return 1;
}

static int64_t head_elems(const rssm_layer *l) { return (int64_t)l->num_v_heads * l->head_v_dim * l->head_k_dim; }

/* One slot's states between [HV][V][K] (what the harness takes and returns, whatever the layer's
 * layout) and the layer's layout: to_layer 1 for VK -> layer, 0 for layer -> VK. */
static void slot_reorder(const rssm_layer *l, const double *in, double *out, int to_layer)
{
    const int V = l->head_v_dim, K = l->head_k_dim;
    const int64_t per = (int64_t)V * K;
    for (int hv = 0; hv < l->num_v_heads; hv++)
        for (int r = 0; r < V; r++)
            for (int c = 0; c < K; c++) {
                const int64_t vk = hv * per + (int64_t)r * K + c;
                const int64_t lay = hv * per + (l->state_layout == RSSM_LAYOUT_KV ? (int64_t)c * V + r : vk - hv * per);
                if (to_layer)
                    out[lay] = in[vk];
                else
                    out[vk] = in[lay];
            }
}

int rh_state_set(rssm_context *ctx, rh_state *s, int slot, const double *S)
{
    const rssm_layer *l = &s->layer;
    const int64_t n = head_elems(l);
    const size_t e = rssm_dtype_size(l->state_dtype);
    void *tmp = malloc((size_t)n * e);
    double *ordered = malloc(sizeof(double) * (size_t)n);
    if (!tmp || !ordered) {
        free(tmp), free(ordered);
        return rh_set(RH_FAIL, "out of host memory");
    }
    slot_reorder(l, S, ordered, 1);
    rh_pack(ordered, n, l->state_dtype, tmp);
    free(ordered);
    int rc = rh_status(rssm_mem_copy(ctx, (uint8_t *)s->t[RH_CKPT].p + (size_t)slot * n * e, tmp, (size_t)n * e,
                                     RSSM_COPY_HOST_TO_DEVICE),
                       "upload");
    free(tmp);
    TRY(rc);
    int32_t zero[4096] = {0};
    TRY(rh_status(rssm_mem_copy(ctx, (int32_t *)s->t[RH_CURSOR].p + slot, zero, 4, RSSM_COPY_HOST_TO_DEVICE),
                  "upload"));
    if (s->t[RH_RING_BASE].bytes)
        TRY(rh_status(rssm_mem_copy(ctx, (int32_t *)s->t[RH_RING_BASE].p + (size_t)slot * l->num_v_heads, zero,
                                    4 * (size_t)l->num_v_heads, RSSM_COPY_HOST_TO_DEVICE),
                      "upload"));
    return RH_OK;
}

int rh_state_randomize(rssm_context *ctx, rh_state *s, rh_rng *r, int empty)
{
    const rssm_layer *l = &s->layer;
    const int L = l->ring_len, gk = l->gate == RSSM_GATE_KDA ? l->head_k_dim : 1;
    rh_snap sn;
    int rc = RH_OK;
    memset(&sn, 0, sizeof sn);
    for (int i = 0; i < RH_NT && !rc; i++) {
        sn.n[i] = s->t[i].bytes;
        sn.t[i] = malloc(sn.n[i] + 1);
        if (!sn.t[i]) rc = rh_set(RH_FAIL, "out of host memory");
    }
    if (rc) {
        rh_snap_free(&sn);
        return rc;
    }
    const rssm_dtype gdt = l->ring_dtype == RSSM_DTYPE_F64 ? RSSM_DTYPE_F64 : RSSM_DTYPE_F32;
    const size_t es = rssm_dtype_size(l->state_dtype), er = rssm_dtype_size(l->ring_dtype);
    const size_t eg = rssm_dtype_size(gdt);
    for (size_t i = 0; i < sn.n[RH_CKPT] / es; i++) {
        double x = 0.3 * rh_normal(r);
        rh_pack(&x, 1, l->state_dtype, sn.t[RH_CKPT] + i * es);
    }
    for (size_t i = 0; i < sn.n[RH_RING_U] / er; i++) {
        double x = 0.5 * rh_normal(r);
        rh_pack(&x, 1, l->ring_dtype, sn.t[RH_RING_U] + i * er);
    }
    for (size_t i = 0; i < sn.n[RH_RING_K] / er; i++) {
        double x = 0.15 * rh_normal(r);
        rh_pack(&x, 1, l->ring_dtype, sn.t[RH_RING_K] + i * er);
    }
    /* G decreasing along the ring, in (-3 L, 0] */
    const int64_t heads = (int64_t)s->slots * l->num_v_heads;
    for (int64_t h = 0; h < heads; h++)
        for (int c = 0; c < gk; c++) {
            double G = 0;
            for (int p = 0; p < L; p++) {
                G -= 3.0 * rh_uniform(r);
                rh_pack(&G, 1, gdt, sn.t[RH_RING_G] + ((h * L + p) * gk + c) * eg);
            }
        }
    int32_t *cur = (int32_t *)sn.t[RH_CURSOR];
    for (int i = 0; i < s->slots; i++)
        cur[i] = empty ? 0 : (int32_t)(rh_uniform(r) * L);
    if (sn.n[RH_RING_BASE]) memset(sn.t[RH_RING_BASE], 0, sn.n[RH_RING_BASE]);
    rc = rh_snap_put(ctx, s, &sn);
    rh_snap_free(&sn);
    return rc;
}

int rh_state_cursors(rssm_context *ctx, const rh_state *s, int32_t *cursor)
{
    return rh_buf_get(ctx, &s->t[RH_CURSOR], cursor);
}

int rh_checkpoint(rssm_context *ctx, const rh_state *s, int n, const int32_t *slot, double *out)
{
    const rssm_layer *l = &s->layer;
    const int64_t per = head_elems(l);
    const size_t e = rssm_dtype_size(l->state_dtype);
    uint8_t *tmp = malloc(s->t[RH_CKPT].bytes);
    double *raw = malloc(sizeof(double) * (size_t)per);
    int rc = tmp && raw ? rh_buf_get(ctx, &s->t[RH_CKPT], tmp) : rh_set(RH_FAIL, "out of host memory");
    for (int i = 0; i < n && !rc; i++) {
        rh_unpack(tmp + (size_t)slot[i] * per * e, per, l->state_dtype, raw);
        slot_reorder(l, raw, out + i * per, 0);
    }
    free(tmp), free(raw);
    return rc;
}

int rh_materialized(rssm_context *ctx, const rh_state *s, int n, const int32_t *slot, double *out)
{
    rh_state d;
    TRY(rh_state_create(ctx, &s->layer, n, &d));
    int32_t dst[1024];
    for (int i = 0; i < n; i++)
        dst[i] = i;
    rh_buf bs, bd;
    int rc = rh_buf_from(ctx, slot, 4 * (size_t)n, &bs);
    if (!rc) rc = rh_buf_from(ctx, dst, 4 * (size_t)n, &bd);
    if (!rc)
        rc = rh_status(rssm_materialize(ctx, &s->layer, &s->st, &d.st, n, bs.p, bd.p, rssm_context_stream(ctx)),
                       "rssm_materialize");
    if (!rc) rc = rh_state_guards_ok(ctx, &d);
    if (!rc) rc = rh_state_guards_ok(ctx, s);
    if (!rc) rc = rh_checkpoint(ctx, &d, n, dst, out);
    rh_buf_free(ctx, &bs);
    rh_buf_free(ctx, &bd);
    rh_state_free(ctx, &d);
    return rc;
}

/* ---- inputs --------------------------------------------------------------------------------- */

int rh_inputs_alloc(rh_inputs *in, const rssm_layer *l, int B, int T, int precomputed)
{
    memset(in, 0, sizeof *in);
    in->B = B, in->T = T, in->H = l->num_k_heads, in->HV = l->num_v_heads;
    in->K = l->head_k_dim, in->V = l->head_v_dim, in->gk = l->gate == RSSM_GATE_KDA ? l->head_k_dim : 1;
    const int64_t bt = (int64_t)B * T;
    in->q = calloc((size_t)(bt * in->H * in->K) + 1, sizeof(double));
    in->k = calloc((size_t)(bt * in->H * in->K) + 1, sizeof(double));
    in->v = calloc((size_t)(bt * in->HV * in->V) + 1, sizeof(double));
    in->A_log = calloc((size_t)in->HV, sizeof(float));
    in->dt_bias = calloc((size_t)in->HV * in->gk, sizeof(float));
    in->a = calloc((size_t)(bt * in->HV * in->gk) + 1, sizeof(double));
    in->b = calloc((size_t)(bt * in->HV) + 1, sizeof(double));
    if (precomputed) {
        in->g = calloc((size_t)(bt * in->HV * in->gk) + 1, sizeof(float));
        in->beta = calloc((size_t)(bt * in->HV) + 1, sizeof(float));
        if (!in->g || !in->beta) return rh_set(RH_FAIL, "out of host memory");
    }
    if (!in->q || !in->k || !in->v || !in->A_log || !in->dt_bias || !in->a || !in->b)
        return rh_set(RH_FAIL, "out of host memory");
    return RH_OK;
}

void rh_inputs_free(rh_inputs *in)
{
    free(in->q), free(in->k), free(in->v), free(in->a), free(in->b), free(in->g), free(in->beta);
    free(in->A_log), free(in->dt_bias), free(in->cu_seqlens);
    memset(in, 0, sizeof *in);
}

void rh_inputs_random(rh_inputs *in, const rssm_layer *l, rh_rng *r)
{
    const int64_t bt = (int64_t)in->B * in->T;
    for (int64_t i = 0; i < bt * in->H * in->K; i++)
        in->q[i] = rh_normal(r), in->k[i] = rh_normal(r);
    for (int64_t i = 0; i < bt * in->HV * in->V; i++)
        in->v[i] = rh_normal(r);
    for (int h = 0; h < in->HV; h++) {
        /* exp(A_log) in [0.37, 4.5]; softplus(a + dt_bias) up to about 4.5: g in about [-20, 0) */
        in->A_log[h] = (float)(-1.0 + 2.5 * rh_uniform(r));
        for (int c = 0; c < in->gk; c++)
            in->dt_bias[h * in->gk + c] = (float)(rh_normal(r) * 0.5);
    }
    for (int64_t i = 0; i < bt * in->HV * in->gk; i++)
        in->a[i] = 1.5 * rh_normal(r);
    for (int64_t i = 0; i < bt * in->HV; i++)
        in->b[i] = 2.5 * rh_normal(r);
    if (l->has_lower_bound)
        for (int64_t i = 0; i < bt * in->HV * in->gk; i++)
            in->a[i] = 3.0 * rh_normal(r);
    if (in->g) {
        for (int64_t i = 0; i < bt * in->HV * in->gk; i++)
            in->g[i] = (float)-exp(log(1e-3) + (log(20.0) - log(1e-3)) * rh_uniform(r));
        for (int64_t i = 0; i < bt * in->HV; i++)
            in->beta[i] = (float)rh_uniform(r);
    }
}

void rh_inputs_bound_gates(rh_inputs *in, const rssm_layer *l, double gmin)
{
    const int64_t n = (int64_t)in->B * in->T * in->HV;
    for (int64_t i = 0; i < n; i++) {
        const int hv = (int)(i % in->HV);
        for (int c = 0; c < in->gk; c++) {
            const int64_t j = i * in->gk + c;
            if (in->g) {
                if (in->g[j] < gmin) in->g[j] = (float)gmin;
                continue;
            }
            const double A = exp((double)in->A_log[hv]), dt = in->dt_bias[hv * in->gk + c];
            const double y = -gmin * 0.999; /* the largest decay allowed */
            double xmax;
            if (l->has_lower_bound) {
                const double s = y / -l->lower_bound;
                if (s >= 1) continue;
                xmax = log(s / (1 - s)) / A - dt; /* sigmoid(A (a + dt)) <= s */
            } else {
                xmax = log(expm1(y / A)) - dt; /* softplus(a + dt) <= y / A */
            }
            if (in->a[j] > xmax) in->a[j] = xmax;
        }
    }
}

/* out: inputs of full's heads and gate kind for B rows of T tokens, with full's A_log and dt_bias */
static int inputs_like(const rh_inputs *full, int B, int T, rh_inputs *out)
{
    memset(out, 0, sizeof *out);
    rssm_layer l;
    memset(&l, 0, sizeof l);
    l.num_k_heads = full->H, l.num_v_heads = full->HV, l.head_k_dim = full->K, l.head_v_dim = full->V;
    l.gate = full->gk > 1 ? RSSM_GATE_KDA : RSSM_GATE_GDN;
    TRY(rh_inputs_alloc(out, &l, B, T, full->g != NULL));
    memcpy(out->A_log, full->A_log, sizeof(float) * full->HV);
    memcpy(out->dt_bias, full->dt_bias, sizeof(float) * full->HV * full->gk);
    return RH_OK;
}

int rh_inputs_slice(const rh_inputs *full, int t0, int T, rh_inputs *out)
{
    TRY(inputs_like(full, full->B, T, out));
#define SLICE(f, w, type)                                                                                              \
    for (int b = 0; b < full->B; b++)                                                                                  \
        memcpy(out->f + ((int64_t)b * T) * (w), full->f + ((int64_t)b * full->T + t0) * (w), sizeof(type) * T * (w));
    SLICE(q, full->H * full->K, double)
    SLICE(k, full->H * full->K, double)
    SLICE(v, full->HV * full->V, double)
    SLICE(a, full->HV * full->gk, double)
    SLICE(b, full->HV, double)
    if (full->g) {
        SLICE(g, full->HV * full->gk, float)
        SLICE(beta, full->HV, float)
    }
#undef SLICE
    return RH_OK;
}

int rh_inputs_ragged(const rh_inputs *full, const int32_t *len, rh_inputs *out)
{
    int32_t *cu = malloc(sizeof(int32_t) * ((size_t)full->B + 1));
    if (!cu) return rh_set(RH_FAIL, "out of host memory");
    int tmax = 1;
    cu[0] = 0;
    for (int b = 0; b < full->B; b++) {
        cu[b + 1] = cu[b] + len[b];
        if (len[b] > tmax) tmax = len[b];
    }
    const int rc = inputs_like(full, 1, cu[full->B] > 0 ? cu[full->B] : 1, out);
    if (rc) {
        free(cu);
        return rc;
    }
    for (int b = 0; b < full->B; b++)
        for (int t = 0; t < len[b]; t++)
            rh_inputs_copy_token(full, b, t, out, 0, cu[b] + t);
    out->B = full->B, out->T = tmax, out->cu_seqlens = cu;
    return RH_OK;
}

void rh_inputs_copy_token(const rh_inputs *src, int rs, int ts, rh_inputs *dst, int rd, int td)
{
    const int64_t i = (int64_t)rs * src->T + ts, o = (int64_t)rd * dst->T + td;
    const int nq = src->H * src->K, nv = src->HV * src->V, na = src->HV * src->gk;
    memcpy(dst->q + o * nq, src->q + i * nq, sizeof(double) * nq);
    memcpy(dst->k + o * nq, src->k + i * nq, sizeof(double) * nq);
    memcpy(dst->v + o * nv, src->v + i * nv, sizeof(double) * nv);
    memcpy(dst->a + o * na, src->a + i * na, sizeof(double) * na);
    memcpy(dst->b + o * src->HV, src->b + i * src->HV, sizeof(double) * src->HV);
    if (src->g && dst->g) {
        memcpy(dst->g + o * na, src->g + i * na, sizeof(float) * na);
        memcpy(dst->beta + o * src->HV, src->beta + i * src->HV, sizeof(float) * src->HV);
    }
    memcpy(dst->A_log, src->A_log, sizeof(float) * src->HV);
    memcpy(dst->dt_bias, src->dt_bias, sizeof(float) * na);
}

/* ---- calls ------------------------------------------------------------------------------------ */

/* Token-major tensor [B*T, w] into a guarded buffer with token stride `stride` (>= w). */
static int put_tokens(rssm_context *ctx, const double *x, int64_t bt, int64_t w, int64_t stride, rssm_dtype dt,
                      rh_buf *b)
{
    const size_t e = rssm_dtype_size(dt);
    const size_t bytes = (size_t)(bt * stride) * e;
    uint8_t *tmp = calloc(bytes + 1, 1);
    if (!tmp) return rh_set(RH_FAIL, "out of host memory");
    /* padding between tokens: a NaN-like pattern that the op must not read */
    memset(tmp, 0xFF, bytes);
    for (int64_t i = 0; i < bt; i++)
        rh_pack(x + i * w, w, dt, tmp + (size_t)(i * stride) * e);
    int rc = rh_buf_alloc(ctx, bytes, b);
    if (!rc) rc = rh_buf_put(ctx, b, tmp);
    free(tmp);
    return rc;
}

static int64_t stride_of(int64_t w, int strided) { return strided ? (w + 7) / 8 * 8 + 8 : w; }

/* Precomputed gates g or beta [B*T, w] as the step takes them (float, or double with the f64 io
 * dtype), with token stride `stride` (>= w; the gaps hold NaN, which the op must not read). */
static int put_gates(rssm_context *ctx, const float *x, int64_t bt, int64_t w, int64_t stride, rssm_dtype io,
                     rh_buf *out)
{
    const size_t e = io == RSSM_DTYPE_F64 ? 8 : 4, n = (size_t)(bt * stride);
    uint8_t *d = malloc(n * e + 1);
    if (!d) return rh_set(RH_FAIL, "out of host memory");
    for (size_t i = 0; i < n; i++) {
        const int64_t t = (int64_t)i / stride, c = (int64_t)i % stride;
        const double x64 = c < w ? x[t * w + c] : NAN;
        const float x32 = (float)x64;
        memcpy(d + i * e, e == 8 ? (const void *)&x64 : (const void *)&x32, e);
    }
    const int rc = rh_buf_from(ctx, d, n * e, out);
    free(d);
    return rc;
}

int rh_step(rssm_context *ctx, rh_state *s, rh_op op, const rh_inputs *in, const int32_t *slot, const int32_t *wslot,
            const uint8_t *fold, int strided, double *o_out)
{
    const rssm_layer *l = &s->layer;
    const rssm_dtype io = l->io_dtype;
    /* token rows: B * T, or the ragged rows' total */
    const int64_t bt = in->cu_seqlens ? in->cu_seqlens[in->B] : (int64_t)in->B * in->T;
    const int64_t nq = in->H * in->K, nv = in->HV * in->V, na = in->HV * in->gk;
    enum { Q, K_, V_, A, B_, G, BETA, ALOG, DTB, O, SLOT, WSLOT, FOLD, CU, NB };
    rh_buf b[NB];
    memset(b, 0, sizeof b);
    rssm_step_io sio;
    memset(&sio, 0, sizeof sio);
    sio.batch = in->B, sio.tokens = in->T;
    const size_t e = rssm_dtype_size(io);
    uint8_t *otmp = malloc((size_t)(bt * nv) * e + 1);
    int rc = otmp ? RH_OK : rh_set(RH_FAIL, "out of host memory");
    if (!rc) rc = put_tokens(ctx, in->q, bt, nq, stride_of(nq, strided), io, &b[Q]);
    if (!rc) rc = put_tokens(ctx, in->k, bt, nq, stride_of(nq, strided), io, &b[K_]);
    if (!rc) rc = put_tokens(ctx, in->v, bt, nv, stride_of(nv, strided), io, &b[V_]);
    if (in->g) {
        if (!rc) rc = put_gates(ctx, in->g, bt, na, stride_of(na, strided), io, &b[G]);
        if (!rc) rc = put_gates(ctx, in->beta, bt, in->HV, stride_of(in->HV, strided), io, &b[BETA]);
    } else {
        if (!rc) rc = put_tokens(ctx, in->a, bt, na, stride_of(na, strided), io, &b[A]);
        if (!rc) rc = put_tokens(ctx, in->b, bt, in->HV, stride_of(in->HV, strided), io, &b[B_]);
        if (!rc) rc = rh_buf_from(ctx, in->A_log, sizeof(float) * in->HV, &b[ALOG]);
        if (!rc) rc = rh_buf_from(ctx, in->dt_bias, sizeof(float) * in->HV * in->gk, &b[DTB]);
    }
    if (!rc) rc = rh_buf_alloc(ctx, (size_t)(bt * nv) * e, &b[O]);
    if (!rc) { /* poison the output with NaN */
        double nan = NAN;
        for (int64_t i = 0; i < bt * nv; i++)
            rh_pack(&nan, 1, io, otmp + (size_t)i * e);
        rc = rh_buf_put(ctx, &b[O], otmp);
    }
    if (!rc) rc = rh_buf_from(ctx, slot, 4 * (size_t)in->B, &b[SLOT]);
    if (!rc) rc = rh_buf_from(ctx, wslot, 4 * (size_t)in->B, &b[WSLOT]);
    if (!rc) rc = rh_buf_from(ctx, fold, (size_t)in->B, &b[FOLD]);
    if (!rc && in->cu_seqlens) rc = rh_buf_from(ctx, in->cu_seqlens, 4 * ((size_t)in->B + 1), &b[CU]);
    if (!rc) {
        sio.q = b[Q].p, sio.k = b[K_].p, sio.v = b[V_].p, sio.a = b[A].p, sio.b = b[B_].p;
        sio.g = b[G].p, sio.beta = b[BETA].p, sio.A_log = b[ALOG].p, sio.dt_bias = b[DTB].p;
        sio.o = b[O].p, sio.slot = b[SLOT].p, sio.write_slot = b[WSLOT].p, sio.fold = b[FOLD].p;
        sio.cu_seqlens = b[CU].p, sio.fold_every = in->fold_every;
        if (strided) {
            sio.q_stride = stride_of(nq, 1), sio.k_stride = stride_of(nq, 1), sio.v_stride = stride_of(nv, 1);
            if (in->g)
                sio.g_stride = stride_of(na, 1), sio.beta_stride = stride_of(in->HV, 1);
            else
                sio.a_stride = stride_of(na, 1), sio.b_stride = stride_of(in->HV, 1);
        }
        rssm_status st;
        const char *name;
        void *stream = rssm_context_stream(ctx);
        switch (op) {
        case RH_OP_DECODE_PACKED:
            st = rssm_decode_packed(ctx, l, &s->st, &sio, stream), name = "rssm_decode_packed";
            break;
        case RH_OP_DECODE_REPLAY:
            st = rssm_decode_replay(ctx, l, &s->st, &sio, stream), name = "rssm_decode_replay";
            break;
        case RH_OP_VERIFY:
            st = rssm_verify(ctx, l, &s->st, &sio, stream), name = "rssm_verify";
            break;
        default:
            st = rssm_prefill(ctx, l, &s->st, &sio, stream), name = "rssm_prefill";
            break;
        }
        rc = rh_status(st, name);
        if (!rc && ctx && rssm_context_device(ctx) == RSSM_DEVICE_CUDA)
            rc = rh_status(rssm_context_check_device_errors(ctx), "rssm_context_check_device_errors");
    }
    static const char *bn[NB] = {"q",     "k",       "v", "a",    "b",          "g",    "beta",
                                 "A_log", "dt_bias", "o", "slot", "write_slot", "fold", "cu_seqlens"};
    for (int i = 0; i < NB && !rc; i++)
        rc = rh_buf_guard_ok(ctx, &b[i], bn[i]);
    if (!rc) rc = rh_state_guards_ok(ctx, s);
    if (!rc && o_out) {
        rc = rh_buf_get(ctx, &b[O], otmp);
        if (!rc) rh_unpack(otmp, bt * nv, io, o_out);
    }
    for (int i = 0; i < NB; i++)
        rh_buf_free(ctx, &b[i]);
    free(otmp);
    return rc;
}

int rh_prefill_ragged_check(rssm_context *ctx, const rssm_layer *l, int B, const int32_t *slot, const int32_t *len,
                            int slots, uint64_t seed, int precomputed, int *same)
{
    rh_rng rng;
    rh_rng_seed(&rng, seed);
    int tmax = 1;
    for (int b = 0; b < B; b++)
        tmax = len[b] > tmax ? len[b] : tmax;
    const int64_t nv = (int64_t)l->num_v_heads * l->head_v_dim;
    rh_state s;
    rh_snap init = {0}, after = {0}, one_after = {0};
    rh_inputs full = {0}, rg = {0}, one = {0};
    double *o = NULL, *o1 = NULL;
    *same = 1;
    int rc = rh_state_create(ctx, l, slots, &s);
    if (rc) return rc;
    rc = rh_state_randomize(ctx, &s, &rng, 0);
    if (!rc) rc = rh_snap_take(ctx, &s, &init);
    if (!rc) rc = rh_inputs_alloc(&full, l, B, tmax, precomputed);
    if (!rc) rh_inputs_random(&full, l, &rng);
    if (!rc) rc = rh_inputs_ragged(&full, len, &rg);
    if (!rc) {
        o = malloc(sizeof(double) * (size_t)((rg.cu_seqlens[B] + 1) * nv));
        o1 = malloc(sizeof(double) * (size_t)(tmax * nv));
        if (!o || !o1) rc = rh_set(RH_FAIL, "out of host memory");
    }
    if (!rc) rc = rh_step(ctx, &s, RH_OP_PREFILL, &rg, slot, NULL, NULL, 0, o);
    if (!rc) rc = rh_snap_take(ctx, &s, &after);
    for (int sl = 0; sl < slots && !rc; sl++) { /* slots no row names: untouched */
        int named = 0;
        for (int b = 0; b < B; b++)
            named |= slot[b] == sl;
        if (!named) *same &= rh_snap_slot_equal(&s, &after, &init, sl);
    }
    for (int b = 0; b < B && !rc; b++) {
        const double *ob = o + (int64_t)rg.cu_seqlens[b] * nv;
        if (slot[b] < 0) {
            for (int64_t i = 0; i < len[b] * nv; i++)
                *same &= ob[i] == 0.0;
            continue;
        }
        rc = rh_snap_put(ctx, &s, &init);
        if (!rc) rc = rh_inputs_alloc(&one, l, 1, len[b], precomputed);
        for (int t = 0; t < len[b] && !rc; t++)
            rh_inputs_copy_token(&full, b, t, &one, 0, t);
        if (!rc) rc = rh_step(ctx, &s, RH_OP_PREFILL, &one, &slot[b], NULL, NULL, 0, o1);
        if (!rc) rc = rh_snap_take(ctx, &s, &one_after);
        if (!rc) *same &= !memcmp(o1, ob, sizeof(double) * (size_t)(len[b] * nv));
        if (!rc) *same &= rh_snap_slot_equal(&s, &after, &one_after, slot[b]);
        rh_inputs_free(&one);
        rh_snap_free(&one_after);
    }
    free(o), free(o1);
    rh_inputs_free(&full), rh_inputs_free(&rg);
    rh_snap_free(&init), rh_snap_free(&after);
    rh_state_free(ctx, &s);
    return rc;
}

static int cursor_call(rssm_context *ctx, rh_state *s, int op, int B, int T, const int32_t *slot, const uint8_t *fold,
                       const int32_t *accepted)
{
    rh_buf bs, bf, ba;
    int rc = rh_buf_from(ctx, slot, 4 * (size_t)B, &bs);
    if (!rc) rc = rh_buf_from(ctx, fold, (size_t)B, &bf);
    if (!rc) rc = rh_buf_from(ctx, accepted, 4 * (size_t)B, &ba);
    void *stream = rssm_context_stream(ctx);
    if (!rc) {
        if (op == 0)
            rc = rh_status(rssm_advance(ctx, &s->layer, &s->st, B, bs.p, bf.p, stream), "rssm_advance");
        else if (op == 1)
            rc = rh_status(rssm_commit(ctx, &s->layer, &s->st, B, T, bs.p, bf.p, ba.p, stream), "rssm_commit");
        else
            rc = rh_status(rssm_reset_cursors(ctx, &s->st, B, bs.p, stream), "rssm_reset_cursors");
    }
    if (!rc) rc = rh_state_guards_ok(ctx, s);
    rh_buf_free(ctx, &bs), rh_buf_free(ctx, &bf), rh_buf_free(ctx, &ba);
    return rc;
}

int rh_advance(rssm_context *ctx, rh_state *s, int B, const int32_t *slot, const uint8_t *fold)
{
    return cursor_call(ctx, s, 0, B, 1, slot, fold, NULL);
}

int rh_commit(rssm_context *ctx, rh_state *s, int B, int T, const int32_t *slot, const uint8_t *fold,
              const int32_t *accepted)
{
    return cursor_call(ctx, s, 1, B, T, slot, fold, accepted);
}

int rh_reset(rssm_context *ctx, rh_state *s, int B, const int32_t *slot)
{
    return cursor_call(ctx, s, 2, B, 1, slot, NULL, NULL);
}

int rh_context_with(rssm_device dev, const rssm_context_params *params, rssm_context **out)
{
    *out = NULL;
    const rssm_status st = rssm_context_create(dev, params, out);
    if (st == RSSM_ERROR_UNSUPPORTED && dev == RSSM_DEVICE_CUDA)
        return rh_set(RH_UNSUPPORTED, "%s", rh_context_error(dev, st));
    return rh_status(st, "rssm_context_create");
}

const char *rh_context_error(rssm_device dev, rssm_status st)
{
    static char msg[640];
    static const char prefix[] = "no CUDA device: "; /* the CUDA back end's words for "none found" */
    char why[512];
    snprintf(why, sizeof why, "%s", rssm_last_error());
    if (dev == RSSM_DEVICE_CUDA && st == RSSM_ERROR_UNSUPPORTED && !rssm_cuda_available()) {
        const int skip = strncmp(why, prefix, sizeof prefix - 1) ? 0 : (int)sizeof prefix - 1;
        snprintf(msg, sizeof msg, "no CUDA device was found (%s)", why + skip);
    } else {
        snprintf(msg, sizeof msg, "%s: %s", rssm_status_name(st), why);
    }
    return msg;
}

int rh_context(rssm_device dev, rssm_context **out) { return rh_context_with(dev, NULL, out); }

const char *rh_device_name(rssm_device dev)
{
    return dev == RSSM_DEVICE_CPU ? "cpu" : dev == RSSM_DEVICE_CUDA ? "cuda" : "reference";
}

const char *rh_dtype_name(rssm_dtype dt)
{
    return dt == RSSM_DTYPE_F32 ? "f32" : dt == RSSM_DTYPE_BF16 ? "bf16" : "f64";
}
