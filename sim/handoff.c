/*
 * handoff.c — `replayssm handoff`: prefill/decode disaggregation of replay state.
 *
 * Requests are prefilled in one pool (the prefill rank) and decoded a few steps there (so the
 * ring holds entries), then handed to a decode pool in three forms and decoded further:
 *   ring          rssm_pool_export(RSSM_EXPORT_RING): checkpoint + ring + ring_base + cursor;
 *                 the continuation must equal, bit for bit, continuing in the prefill pool
 *   materialised  rssm_pool_export(RSSM_EXPORT_MATERIALIZED): the folded checkpoint only; must
 *                 equal continuing from the same fold in the prefill pool (rssm_pool_acquire_copy)
 *   packed state  the slot's raw checkpoint tensors, device to device, no export (what engines
 *                 send today); sent from the folded copy, so it must equal the materialised run
 * Transport: --device cpu, an in-process memcpy; --device cuda, NCCL send/recv (--ranks 1: to
 * self inside a group on one GPU; --ranks 2: rank 0 = prefill process on GPU 0 -> rank 1 =
 * decode process on GPU 1). rssm_pool_export writes a host buffer, so a blob goes
 * export (device -> pinned host) -> stage (host -> device) -> transfer (NCCL) -> unstage
 * (device -> pinned host) -> import (host -> device); the packed state is one NCCL transfer.
 * Reported per hand-off (one request), averaged over the requests: bytes and each phase's
 * time (wall clock around synchronised calls).
 *
 * Inputs are deterministic random per (layer, phase, step) and identical on every rank:
 *   q, k [rows][T][H][K], v [rows][T][HV][V], a [rows][T][HV*gk], b [rows][T][HV] (f32).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "handoff.h"
#include "harness.h"
#include "replayssm_runtime.h"
#include "sim_nccl.h"
#include "simulate.h"

enum { F_RING, F_MAT, F_PACKED, N_FORMS };
static const char *form_name[N_FORMS] = {"ring", "materialised", "packed"};

typedef struct ho_times {
    double bytes, export_us, stage_us, transfer_us, unstage_us, import_us;
} ho_times;

/* One process's view: its role(s), pools, device input buffers and transport. */
typedef struct ho {
    const handoff_config *c;
    rssm_context *ctx;
    sim_nccl *comm; /* NULL on the CPU (in-process memcpy) */
    int rank, nranks, prefill, decode;
    rssm_layer *layers;
    rssm_pool *P, *D; /* prefill pool (prefill rank), decode pool (decode rank) */
    rssm_plan *planP, *planD;
    float *q, *k, *v, *a, *b, *o, *A_log, *dt_bias; /* device; A_log/dt_bias [n_layers][pad] */
    int a_row, d_row, max_rows;
    int32_t *d_slot;
    float *hq, *hk, *hv, *ha, *hb; /* host staging of one call's inputs */
} ho;

#define HCHECK(call) SIM_TRY("handoff", call)
#define NCHECK(call)                                                                                                   \
    do {                                                                                                               \
        if (call) return fprintf(stderr, "handoff: rank %d: %s\n", h->rank, sim_nccl_error()), -1;                     \
    } while (0)

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int pad4(int n) { return (n + 3) / 4 * 4; }
static int gk_of(const rssm_layer *l) { return l->gate == RSSM_GATE_KDA ? l->head_k_dim : 1; }

/* ---- deterministic inputs -------------------------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fill(float *x, size_t n, uint64_t *s, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * (float)((mix64(*s += 0x9e3779b97f4a7c15ull) >> 40) * (1.0 / 16777216.0));
}

/* Uploads the inputs of (layer, phase, step) for rows x T tokens. */
static int make_inputs(ho *h, int layer, int phase, int step, int rows, int T)
{
    const rssm_layer *l = &h->c->layer;
    const size_t n = (size_t)rows * T, nk = n * l->num_k_heads * l->head_k_dim, nv = n * l->num_v_heads * l->head_v_dim;
    const size_t na = n * l->num_v_heads * gk_of(l), nb = n * l->num_v_heads;
    uint64_t s = mix64(h->c->seed ^ mix64(((uint64_t)layer << 40) ^ ((uint64_t)phase << 32) ^ (uint64_t)step));
    fill(h->hq, nk, &s, -1, 1), fill(h->hk, nk, &s, -1, 1), fill(h->hv, nv, &s, -1, 1);
    fill(h->ha, na, &s, -1, 2), fill(h->hb, nb, &s, -2, 2);
    HCHECK(rssm_mem_copy(h->ctx, h->q, h->hq, 4 * nk, RSSM_COPY_HOST_TO_DEVICE));
    HCHECK(rssm_mem_copy(h->ctx, h->k, h->hk, 4 * nk, RSSM_COPY_HOST_TO_DEVICE));
    HCHECK(rssm_mem_copy(h->ctx, h->v, h->hv, 4 * nv, RSSM_COPY_HOST_TO_DEVICE));
    HCHECK(rssm_mem_copy(h->ctx, h->a, h->ha, 4 * na, RSSM_COPY_HOST_TO_DEVICE));
    HCHECK(rssm_mem_copy(h->ctx, h->b, h->hb, 4 * nb, RSSM_COPY_HOST_TO_DEVICE));
    return 0;
}

static rssm_step_io io_of(const ho *h, int layer)
{
    rssm_step_io io;
    memset(&io, 0, sizeof io);
    io.q = h->q, io.k = h->k, io.v = h->v, io.a = h->a, io.b = h->b, io.o = h->o;
    io.A_log = h->A_log + (size_t)layer * h->a_row, io.dt_bias = h->dt_bias + (size_t)layer * h->d_row;
    return io;
}

/* ---- the runtime steps ------------------------------------------------------------------------ */

/* Fresh slot of P <- request i's prompt (prefill, cursor 0). */
static int prefill_request(ho *h, int i, int32_t *slot)
{
    HCHECK(rssm_pool_acquire(h->P, slot));
    HCHECK(rssm_mem_copy(h->ctx, h->d_slot, slot, sizeof(int32_t), RSSM_COPY_HOST_TO_DEVICE));
    for (int l = 0; l < h->c->n_layers; l++) {
        if (make_inputs(h, l, 0, i, 1, h->c->prompt)) return -1;
        rssm_step_io io = io_of(h, l);
        io.batch = 1, io.tokens = h->c->prompt, io.slot = h->d_slot;
        rssm_state st;
        HCHECK(rssm_pool_state(h->P, l, &st));
        HCHECK(rssm_prefill(h->ctx, &h->layers[l], &st, &io, rssm_context_stream(h->ctx)));
    }
    rssm_state st0;
    HCHECK(rssm_pool_state(h->P, 0, &st0));
    HCHECK(rssm_reset_cursors(h->ctx, &st0, 1, h->d_slot, rssm_context_stream(h->ctx)));
    return 0;
}

/* `steps` replay decode steps of the rows slot[0 .. R) through the planner; the outputs of step
 * g, layer l go to out[(g * n_layers + l) * R * HV * V ...] (host; NULL = discard). */
static int decode_steps(ho *h, rssm_pool *pool, rssm_plan *plan, const int32_t *slot, int phase, int steps, float *out)
{
    const rssm_layer *l0 = &h->c->layer;
    const int R = h->c->requests, nl = h->c->n_layers;
    const size_t orow = (size_t)R * l0->num_v_heads * l0->head_v_dim;
    HCHECK(rssm_plan_set(plan, R, slot, NULL));
    for (int g = 0; g < steps; g++) {
        HCHECK(rssm_plan_begin(plan, RSSM_PLAN_DECODE, 1, rssm_context_stream(h->ctx)));
        for (int l = 0; l < nl; l++) {
            if (make_inputs(h, l, phase, g, R, 1)) return -1;
            rssm_step_io io = io_of(h, l);
            HCHECK(rssm_plan_io(plan, &io));
            rssm_state st;
            HCHECK(rssm_pool_state(pool, l, &st));
            HCHECK(rssm_decode_replay(h->ctx, &h->layers[l], &st, &io, rssm_context_stream(h->ctx)));
            if (out)
                HCHECK(
                    rssm_mem_copy(h->ctx, out + ((size_t)g * nl + l) * orow, h->o, 4 * orow, RSSM_COPY_DEVICE_TO_HOST));
        }
        HCHECK(rssm_plan_end(plan, rssm_context_stream(h->ctx)));
    }
    HCHECK(rssm_context_synchronize(h->ctx));
    return 0;
}

/* ---- transport ----------------------------------------------------------------------------------- */

/* dst on rank `to` <- src on rank `from` (0 prefill, 1 decode; one process: both are this one),
 * `bytes` of device memory; synchronises. */
static int xfer(ho *h, int from, const void *src, void *dst, size_t bytes)
{
    if (!h->comm) {
        memcpy(dst, src, bytes);
        return 0;
    }
    void *s = rssm_context_stream(h->ctx);
    const int one = h->nranks == 1, to = one ? 0 : 1 - from;
    if (one) from = 0;
    NCHECK(sim_nccl_group_start());
    if (h->rank == from) NCHECK(sim_nccl_send(h->comm, src, bytes, to, s));
    if (h->rank == to) NCHECK(sim_nccl_recv(h->comm, dst, bytes, from, s));
    NCHECK(sim_nccl_group_end());
    NCHECK(sim_nccl_sync(s));
    return 0;
}

/* dst (decode rank) <- src (prefill rank) */
static int transfer(ho *h, const void *src, void *dst, size_t bytes) { return xfer(h, 0, src, dst, bytes); }

/* The packed state: each layer's checkpoint of slot `from` (P) into slot `to` (D), one group. */
static int transfer_packed(ho *h, int32_t from, int32_t to)
{
    const int nl = h->c->n_layers;
    if (h->comm) NCHECK(sim_nccl_group_start());
    for (int l = 0; l < nl; l++) {
        rssm_state_bytes sz;
        HCHECK(rssm_state_size(&h->layers[l], 1, &sz));
        rssm_state sp, sd;
        if (h->prefill) HCHECK(rssm_pool_state(h->P, l, &sp));
        if (h->decode) HCHECK(rssm_pool_state(h->D, l, &sd));
        const char *src = h->prefill ? (const char *)sp.checkpoint + (size_t)from * sz.checkpoint : NULL;
        char *dst = h->decode ? (char *)sd.checkpoint + (size_t)to * sz.checkpoint : NULL;
        if (!h->comm) {
            memcpy(dst, src, sz.checkpoint);
            continue;
        }
        if (h->prefill)
            NCHECK(sim_nccl_send(h->comm, src, sz.checkpoint, h->nranks == 1 ? 0 : 1, rssm_context_stream(h->ctx)));
        if (h->decode) NCHECK(sim_nccl_recv(h->comm, dst, sz.checkpoint, 0, rssm_context_stream(h->ctx)));
    }
    if (h->comm) {
        NCHECK(sim_nccl_group_end());
        NCHECK(sim_nccl_sync(rssm_context_stream(h->ctx)));
    }
    return 0;
}

/* A 1-byte send/recv so both ranks enter a timed transfer together (two processes only). */
static int rendezvous(ho *h, void *dev_byte)
{
    return h->comm && h->nranks == 2 ? transfer(h, dev_byte, dev_byte, 1) : 0;
}

/* ---- one process ------------------------------------------------------------------------------- */

typedef struct ho_result {
    ho_times t[N_FORMS];
    int same[N_FORMS];
    double mat_vs_ring; /* max relative difference of the materialised continuation vs the ring one */
} ho_result;

static int run(ho *h, ho_result *res)
{
    const handoff_config *c = h->c;
    const int R = c->requests, nl = c->n_layers;
    const size_t orow = (size_t)R * c->layer.num_v_heads * c->layer.head_v_dim, nout = (size_t)c->gen * nl * orow;
    int32_t *src = calloc(R, 4), *mat = calloc(R, 4), *dst[N_FORMS];
    float *out[2 * N_FORMS]; /* [form]: prefill reference, [N_FORMS + form]: decode rank */
    size_t cap[N_FORMS] = {0, 0, 0};
    memset(res, 0, sizeof *res);
    if (!src || !mat) return fprintf(stderr, "handoff: out of host memory\n"), -1;
    for (int f = 0; f < N_FORMS; f++) {
        dst[f] = calloc(R, 4), out[f] = calloc(nout, 4), out[N_FORMS + f] = calloc(nout, 4);
        if (!dst[f] || !out[f] || !out[N_FORMS + f]) return fprintf(stderr, "handoff: out of host memory\n"), -1;
    }
    unsigned char *blob[2] = {NULL, NULL}; /* one request's blob: pinned host on CUDA, else malloc */
    const int pinned = h->c->device == RSSM_DEVICE_CUDA;
    void *d_blob = NULL; /* device staging: [send | receive], separate even in one process */
    HCHECK(rssm_pool_export_size(h->prefill ? h->P : h->D, RSSM_EXPORT_RING, &cap[F_RING]));
    HCHECK(rssm_pool_export_size(h->prefill ? h->P : h->D, RSSM_EXPORT_MATERIALIZED, &cap[F_MAT]));
    for (int f = 0; f < 2; f++)
        if (!(blob[f] = pinned ? sim_host_alloc(cap[F_RING]) : malloc(cap[F_RING])))
            return fprintf(stderr, "handoff: out of %s host memory\n", pinned ? "pinned" : "ordinary"), -1;
    const size_t half = (cap[F_RING] + 255) / 256 * 256;
    HCHECK(rssm_mem_alloc(h->ctx, 2 * half + 256, &d_blob));
    unsigned char *d_send = d_blob, *d_recv = d_send + half, *d_sync = d_recv + half;

    /* prefill rank: prompts, a few decode steps (the ring then holds c->pre entries), a folded copy */
    if (h->prefill) {
        for (int i = 0; i < R; i++)
            if (prefill_request(h, i, &src[i])) return -1;
        if (decode_steps(h, h->P, h->planP, src, 1, c->pre, NULL)) return -1;
        for (int i = 0; i < R; i++)
            HCHECK(rssm_pool_acquire_copy(h->P, h->P, src[i], &mat[i]));
    }
    /* hand-offs, one request at a time */
    for (int f = 0; f < 2; f++) {
        const uint32_t form = f == F_RING ? RSSM_EXPORT_RING : RSSM_EXPORT_MATERIALIZED;
        ho_times *t = &res->t[f];
        t->bytes = (double)cap[f];
        for (int i = 0; i < R; i++) {
            size_t n = cap[f];
            double t0 = now_us();
            if (h->prefill) {
                HCHECK(rssm_pool_export(h->P, src[i], form, blob[0], cap[F_RING], &n));
                const double t1 = now_us();
                HCHECK(rssm_mem_copy(h->ctx, d_send, blob[0], n, RSSM_COPY_HOST_TO_DEVICE));
                HCHECK(rssm_context_synchronize(h->ctx));
                t->export_us += t1 - t0, t->stage_us += now_us() - t1;
            }
            if (rendezvous(h, d_sync)) return -1;
            t0 = now_us();
            if (transfer(h, d_send, d_recv, n)) return -1;
            t->transfer_us += now_us() - t0;
            if (h->decode) {
                t0 = now_us();
                HCHECK(rssm_mem_copy(h->ctx, blob[1], d_recv, n, RSSM_COPY_DEVICE_TO_HOST));
                const double t1 = now_us();
                HCHECK(rssm_pool_import(h->D, blob[1], n, &dst[f][i]));
                t->unstage_us += t1 - t0, t->import_us += now_us() - t1;
            }
        }
    }
    /* the packed state of the folded copy, into a fresh (zeroed) slot: checkpoint only */
    for (int i = 0; i < R; i++) {
        if (h->decode) HCHECK(rssm_pool_acquire(h->D, &dst[F_PACKED][i]));
        if (rendezvous(h, d_sync)) return -1;
        const double t0 = now_us();
        if (transfer_packed(h, mat[i], h->decode ? dst[F_PACKED][i] : 0)) return -1;
        res->t[F_PACKED].transfer_us += now_us() - t0;
    }
    for (int i = 0; i < c->n_layers; i++) {
        rssm_state_bytes sz;
        HCHECK(rssm_state_size(&h->layers[i], 1, &sz));
        res->t[F_PACKED].bytes += (double)sz.checkpoint;
    }
    /* continuations: in the prefill pool without a hand-off (ring: the original slots; folded:
     * the copies), and in the decode pool from each form */
    if (h->prefill) {
        if (decode_steps(h, h->P, h->planP, src, 2, c->gen, out[F_RING])) return -1;
        if (decode_steps(h, h->P, h->planP, mat, 2, c->gen, out[F_MAT])) return -1;
    }
    if (h->decode)
        for (int f = 0; f < N_FORMS; f++)
            if (decode_steps(h, h->D, h->planD, dst[f], 2, c->gen, out[N_FORMS + f])) return -1;
    if (h->comm && h->nranks == 2) {
        /* the decode rank's outputs and timings go to rank 0, which compares and reports */
        void *d_out = NULL;
        HCHECK(rssm_mem_alloc(h->ctx, 4 * nout, &d_out));
        for (int f = 0; f < N_FORMS; f++) {
            if (h->decode) HCHECK(rssm_mem_copy(h->ctx, d_out, out[N_FORMS + f], 4 * nout, RSSM_COPY_HOST_TO_DEVICE));
            if (xfer(h, 1, d_out, d_out, 4 * nout)) return -1;
            if (h->prefill) HCHECK(rssm_mem_copy(h->ctx, out[N_FORMS + f], d_out, 4 * nout, RSSM_COPY_DEVICE_TO_HOST));
        }
        const size_t tb = sizeof res->t;
        if (h->decode) HCHECK(rssm_mem_copy(h->ctx, d_out, res->t, tb, RSSM_COPY_HOST_TO_DEVICE));
        if (xfer(h, 1, d_out, d_out, tb)) return -1;
        if (h->prefill) {
            ho_times mine[N_FORMS];
            memcpy(mine, res->t, tb);
            HCHECK(rssm_mem_copy(h->ctx, res->t, d_out, tb, RSSM_COPY_DEVICE_TO_HOST));
            for (int f = 0; f < N_FORMS; f++) /* sender-side phases from rank 0 */
                res->t[f].export_us = mine[f].export_us, res->t[f].stage_us = mine[f].stage_us;
        }
        rssm_mem_free(h->ctx, d_out);
    }
    if (h->prefill) {
        memcpy(out[F_PACKED], out[F_MAT], 4 * nout); /* packed was sent from the folded copy */
        for (int f = 0; f < N_FORMS; f++)
            res->same[f] = !memcmp(out[f], out[N_FORMS + f], 4 * nout);
        double num = 0, den = 0;
        for (size_t j = 0; j < nout; j++)
            num = fmax(num, fabs((double)out[F_MAT][j] - out[F_RING][j])), den = fmax(den, fabs(out[F_RING][j]));
        res->mat_vs_ring = den > 0 ? num / den : num;
    }
    for (int f = 0; f < N_FORMS; f++) {
        ho_times *t = &res->t[f];
        t->export_us /= R, t->stage_us /= R, t->transfer_us /= R, t->unstage_us /= R, t->import_us /= R;
        free(dst[f]), free(out[f]), free(out[N_FORMS + f]);
    }
    for (int f = 0; f < 2; f++)
        pinned ? sim_host_free(blob[f]) : free(blob[f]);
    rssm_mem_free(h->ctx, d_blob);
    free(src), free(mat);
    return 0;
}

static const char *transport_name(const handoff_config *c)
{
    if (c->device != RSSM_DEVICE_CUDA) return "in-process memcpy (CPU)";
    return c->ranks == 1 ? "NCCL send/recv to self on one GPU (1-rank communicator)"
                         : "NCCL send/recv, prefill process on GPU 0 -> decode process on GPU 1";
}

static void report(const handoff_config *c, const ho_result *r)
{
    const rssm_layer *l = &c->layer;
    printf("replayssm handoff: model %s (%s H=%d HV=%d K=%d V=%d, %d layers, L=%d %s ring, %s state), device %s\n",
           c->model, l->gate == RSSM_GATE_GDN ? "GDN" : "KDA", l->num_k_heads, l->num_v_heads, l->head_k_dim,
           l->head_v_dim, c->n_layers, l->ring_len, l->ring_dtype == RSSM_DTYPE_BF16 ? "bf16" : "f32",
           l->state_dtype == RSSM_DTYPE_BF16 ? "bf16" : "f32", c->device == RSSM_DEVICE_CUDA ? "cuda" : "cpu");
    printf("transport: %s\n", transport_name(c));
    printf("%d requests: prompt %d tokens, %d decode steps before the hand-off (ring entries), %d after\n\n",
           c->requests, c->prompt, c->pre, c->gen);
    printf("%-14s %12s %8s %10s %9s %11s %10s %9s %9s %8s  %s\n", "form", "bytes", "x packed", "export us", "stage us",
           "transfer us", "unstage us", "import us", "total us", "GB/s", "continuation");
    for (int f = 0; f < N_FORMS; f++) {
        const ho_times *t = &r->t[f];
        const double total = t->export_us + t->stage_us + t->transfer_us + t->unstage_us + t->import_us;
        printf("%-14s %12.0f %7.3fx %10.1f %9.1f %11.1f %10.1f %9.1f %9.1f %8.2f  %s\n", form_name[f], t->bytes,
               t->bytes / r->t[F_PACKED].bytes, t->export_us, t->stage_us, t->transfer_us, t->unstage_us, t->import_us,
               total, t->bytes / (total * 1e3), r->same[f] ? "bit-identical" : "DIFFERENT");
    }
    printf("\nper hand-off of one request, mean over %d. export: rssm_pool_export into %s host memory (device to\n"
           "host copies, the checksum, and the fold for the materialised form); stage: host to device;\n"
           "transfer: %s; unstage: device to host; import: rssm_pool_import (checks, checksum, host to device).\n"
           "packed state: the checkpoint tensors of every layer, device to device in one transfer, no export\n"
           "(what engines send today; correct only for a folded slot, so it is sent from the folded copy).\n"
           "continuation: %d more decode steps after the hand-off vs the same steps without it (ring: the\n"
           "prefill slot itself; materialised and packed: the prefill slot folded by rssm_pool_acquire_copy).\n"
           "materialised vs ring continuation: max relative difference %.3g (a fold rounds differently).\n",
           c->requests, c->device == RSSM_DEVICE_CUDA ? "pinned" : "ordinary", transport_name(c), c->gen,
           r->mat_vs_ring);
}

static int write_csv(const handoff_config *c, const ho_result *r)
{
    FILE *f = fopen(c->csv, "w");
    if (!f) return fprintf(stderr, "handoff: cannot write %s\n", c->csv), -1;
    fprintf(f, "device,model,layers,transport,form,bytes,export_us,stage_us,transfer_us,unstage_us,import_us,"
               "total_us,identical\n");
    for (int i = 0; i < N_FORMS; i++) {
        const ho_times *t = &r->t[i];
        fprintf(f, "%s,%s,%d,%s,%s,%.0f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%d\n",
                c->device == RSSM_DEVICE_CUDA ? "cuda" : "cpu", c->model, c->n_layers,
                c->device != RSSM_DEVICE_CUDA ? "memcpy"
                : c->ranks == 1               ? "nccl-self"
                                              : "nccl-2gpu",
                form_name[i], t->bytes, t->export_us, t->stage_us, t->transfer_us, t->unstage_us, t->import_us,
                t->export_us + t->stage_us + t->transfer_us + t->unstage_us + t->import_us, r->same[i]);
    }
    fclose(f);
    return 0;
}

/* Sets up one rank (or the single in-process/one-GPU run), runs it, rank 0 reports. */
static int handoff_rank(int rank, int nranks, const unsigned char *id, void *arg)
{
    const handoff_config *c = arg;
    ho H, *h = &H;
    memset(h, 0, sizeof *h);
    h->c = c, h->rank = rank, h->nranks = nranks;
    h->prefill = rank == 0, h->decode = nranks == 1 || rank == 1;
    if (c->device == RSSM_DEVICE_CUDA && sim_nccl_init(nranks, rank, id, &h->comm))
        return fprintf(stderr, "handoff: rank %d: %s\n", rank, sim_nccl_error()), 1;
    rssm_context_params cp = c->params;
    cp.threads = c->threads;
    cp.device_ordinal = c->device == RSSM_DEVICE_CUDA ? rank : 0;
    const rssm_status st = rssm_context_create(c->device, &cp, &h->ctx);
    if (st != RSSM_OK) return fprintf(stderr, "handoff: %s\n", rh_context_error(c->device, st)), 1;
    const rssm_layer *l = &c->layer;
    const int R = c->requests, nl = c->n_layers, gk = gk_of(l);
    h->layers = malloc(sizeof(rssm_layer) * nl);
    if (!h->layers) return 1;
    for (int i = 0; i < nl; i++)
        h->layers[i] = *l;
    /* prefill pool: requests and their folded copies; decode pool: one slot per request and form */
    if (h->prefill) HCHECK(rssm_pool_create(h->ctx, h->layers, nl, 2 * R, &h->P));
    if (h->prefill) HCHECK(rssm_plan_create(h->P, R, 0, &h->planP));
    if (h->decode) HCHECK(rssm_pool_create(h->ctx, h->layers, nl, N_FORMS * R, &h->D));
    if (h->decode) HCHECK(rssm_plan_create(h->D, R, 0, &h->planD));
    h->max_rows = R > c->prompt ? R : c->prompt;
    const size_t n = (size_t)h->max_rows, nk = n * l->num_k_heads * l->head_k_dim,
                 nv = n * l->num_v_heads * l->head_v_dim;
    h->a_row = pad4(l->num_v_heads), h->d_row = pad4(l->num_v_heads * gk);
    float *hA = calloc((size_t)nl * h->a_row, 4), *hD = calloc((size_t)nl * h->d_row, 4);
    h->hq = malloc(4 * nk), h->hk = malloc(4 * nk), h->hv = malloc(4 * nv);
    h->ha = malloc(4 * n * l->num_v_heads * gk), h->hb = malloc(4 * n * l->num_v_heads);
    if (!hA || !hD || !h->hq || !h->hk || !h->hv || !h->ha || !h->hb) return 1;
    uint64_t s = c->seed * 7 + 3;
    for (int i = 0; i < nl; i++)
        fill(hA + (size_t)i * h->a_row, l->num_v_heads, &s, 0, 2.7f),
            fill(hD + (size_t)i * h->d_row, (size_t)l->num_v_heads * gk, &s, -4, -3);
    void **bufs[8] = {(void **)&h->q, (void **)&h->k, (void **)&h->v,     (void **)&h->a,
                      (void **)&h->b, (void **)&h->o, (void **)&h->A_log, (void **)&h->dt_bias};
    const size_t sizes[8] = {4 * nk,
                             4 * nk,
                             4 * nv,
                             4 * n * l->num_v_heads * gk,
                             4 * n * l->num_v_heads,
                             4 * nv,
                             4 * (size_t)nl * h->a_row,
                             4 * (size_t)nl * h->d_row};
    for (int i = 0; i < 8; i++)
        HCHECK(rssm_mem_alloc(h->ctx, sizes[i], bufs[i]));
    HCHECK(rssm_mem_alloc(h->ctx, 64, (void **)&h->d_slot));
    HCHECK(rssm_mem_copy(h->ctx, h->A_log, hA, sizes[6], RSSM_COPY_HOST_TO_DEVICE));
    HCHECK(rssm_mem_copy(h->ctx, h->dt_bias, hD, sizes[7], RSSM_COPY_HOST_TO_DEVICE));
    free(hA), free(hD);
    ho_result res;
    int rc = run(h, &res);
    int same = 1;
    for (int f = 0; f < N_FORMS; f++)
        same &= res.same[f];
    if (!rc && rank == 0) {
        report(c, &res);
        if (c->csv) rc = write_csv(c, &res);
        if (!same) rc = -1;
    }
    for (int i = 0; i < 8; i++)
        rssm_mem_free(h->ctx, *bufs[i]);
    rssm_mem_free(h->ctx, h->d_slot);
    rssm_plan_free(h->planP), rssm_plan_free(h->planD);
    rssm_pool_free(h->P), rssm_pool_free(h->D);
    rssm_context_free(h->ctx);
    sim_nccl_free(h->comm);
    free(h->layers), free(h->hq), free(h->hk), free(h->hv), free(h->ha), free(h->hb);
    return rc ? 1 : 0;
}

handoff_config handoff_config_default(void)
{
    handoff_config c;
    memset(&c, 0, sizeof c);
    c.params = rssm_context_params_default();
    c.device = RSSM_DEVICE_CPU, c.model = "demo", c.n_layers = 4, c.requests = 8, c.prompt = 64, c.pre = 5;
    c.gen = 24, c.ranks = 1, c.seed = 1;
    sim_model_config m;
    sim_model_preset(c.model, &m);
    c.layer = m.layer;
    return c;
}

int handoff_run(const handoff_config *c)
{
    if (c->device == RSSM_DEVICE_CUDA) {
        const char *absent = sim_cuda_absent();
        if (absent) return fprintf(stderr, "handoff: --device cuda: %s\n", absent), 1;
        if (sim_nccl_launch(c->ranks, handoff_rank, (void *)c))
            return fprintf(stderr, "handoff: %s\n", sim_nccl_error()), 1;
        return 0;
    }
    return handoff_rank(0, 1, NULL, (void *)c) ? 1 : 0;
}
