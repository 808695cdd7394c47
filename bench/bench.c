/*
 * bench.c — `replayssm bench`: packed vs ReplaySSM decode (or speculative verify) of one layer,
 * timed on the chosen device, with bytes from the byte model (bytemodel.c) and the
 * achieved bandwidth set against the copy (and, on CPU, STREAM triad) bandwidth measured in
 * the same run. bench/README.md explains every column.
 *
 * How a measurement is set up, per batch B and ring length L:
 *  - Working set: M banks of B slots each (slot of row i in bank m = m*B + i, or with
 *    --slot-order random the (m*B + i)-th entry of a random permutation of all M*B slots, as a
 *    pool hands slots out), so that the checkpoints of all banks are at least
 *    --working-set-mib (default 1 GiB), far more than the last-level cache. M is rounded up
 *    to a multiple of L.
 *  - One timed unit = M steps, step m running bank m: every slot is visited once per unit,
 *    so states always come from memory. On CUDA the unit is captured as one CUDA graph.
 *  - Replay: each step is rssm_decode_replay + rssm_advance. A slot's cursor moves by one per
 *    unit; initial cursors are (i + m) mod L ("staggered": row i starts at i mod L, so each
 *    step has ~B/L rows folding) or m mod L ("inphase": all rows of a step fold together).
 *    Because M is a multiple of L, every unit contains exactly M/L folds per row: a unit is a
 *    whole number of L-step cycles, fold steps included, for either phase.
 *  - Verify (--verify T): replay = rssm_verify of T tokens + rssm_commit with T-1 or T
 *    accepted (deterministic pseudo-random per row and bank); packed baseline = T calls of
 *    rssm_decode_packed, token j reading bank m+j and writing bank m+j+1, i.e. every
 *    intermediate state is written for rollback, each read by the next token.
 *  - Inputs are realistic random data: q, k, v normal; b normal (beta = sigmoid(b));
 *    a normal clipped to [-3, 3] with A = exp(A_log) in [1, 16] and softplus(dt_bias) in
 *    [1e-3, 0.1], so g = -A softplus(a + dt_bias) lies in about [-17.6, 0).
 *    Input sets rotate with the banks (up to 128 MiB of them).
 *  - Any failing call stops the bench before its numbers are printed.
 */
#include <ctype.h>
#include <glob.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "bytemodel.h"
#include "replayssm_runtime.h"
#include "harness.h"
#include "timing.h"

#define MIB (1024.0 * 1024.0)

/* ---- small helpers ------------------------------------------------------------------------ */

static int threads_of(const rssm_context *ctx)
{
    rssm_context_info info;
    return rssm_context_get_info(ctx, &info) == RSSM_OK ? info.threads : 0;
}

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

static const char *dtype_name(rssm_dtype d)
{
    return d == RSSM_DTYPE_BF16 ? "bf16" : d == RSSM_DTYPE_F64 ? "f64" : "f32";
}

/* xorshift64* and a Box-Muller normal: deterministic random data. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}
static double rng_uniform(uint64_t *s) { return ((rng_next(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
static double rng_normal(uint64_t *s)
{
    const double u1 = rng_uniform(s), u2 = rng_uniform(s);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Writes element i of a host array of dtype d. */
static void put(void *dst, rssm_dtype d, size_t i, double x)
{
    if (d == RSSM_DTYPE_BF16)
        ((uint16_t *)dst)[i] = rssm_f32_to_bf16((float)x);
    else
        ((float *)dst)[i] = (float)x;
}

/* ---- machine description ------------------------------------------------------------------- */

static void read_line_field(const char *path_glob, const char *key, char *out, size_t n)
{
    glob_t g;
    if (glob(path_glob, 0, NULL, &g) != 0) return;
    for (size_t p = 0; p < g.gl_pathc && !out[0]; p++) {
        FILE *f = fopen(g.gl_pathv[p], "r");
        if (!f) continue;
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, key, strlen(key))) continue;
            const char *v = strchr(line, ':');
            if (!v) continue;
            for (v++; *v == ' ' || *v == '\t'; v++) {
            }
            snprintf(out, n, "%s", v);
            out[strcspn(out, "\n")] = 0;
            break;
        }
        fclose(f);
    }
    globfree(&g);
}

static void machine_name(rssm_device dev, char *out, size_t n)
{
    out[0] = 0;
    if (dev == RSSM_DEVICE_CUDA) {
        /* no device-name call in device.h: the driver's /proc entry (first GPU listed) */
        read_line_field("/proc/driver/nvidia/gpus/*/information", "Model", out, n);
        if (!out[0]) snprintf(out, n, "CUDA device (name unknown)");
    } else {
        read_line_field("/proc/cpuinfo", "model name", out, n);
        if (!out[0]) snprintf(out, n, "unknown CPU");
    }
}

static void git_commit(char *out, size_t n)
{
#ifdef RSSM_GIT_COMMIT
    snprintf(out, n, "%s", RSSM_GIT_COMMIT);
    return;
#else
    snprintf(out, n, "unknown");
    const char *env = getenv("RSSM_COMMIT"); /* set by bench/run_gpu.sh where the tree has no .git */
    if (env && env[0]) {
        snprintf(out, n, "%s", env);
        return;
    }
    FILE *p = popen("git rev-parse --short HEAD 2>/dev/null", "r");
    if (!p) return;
    char buf[64] = {0};
    if (fgets(buf, sizeof buf, p)) {
        buf[strcspn(buf, "\n")] = 0;
        if (buf[0]) snprintf(out, n, "%s", buf);
    }
    pclose(p);
    p = popen("git status --porcelain --untracked-files=no 2>/dev/null | head -c 1", "r");
    if (!p) return;
    if (fgetc(p) != EOF && strcmp(out, "unknown")) strncat(out, "+dirty", n - strlen(out) - 1);
    pclose(p);
#endif
}

/* Last-level cache from sysfs (0 when unknown). */
static double llc_bytes(void)
{
    char buf[64] = {0};
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    if (!f) return 0;
    double v = 0;
    if (fgets(buf, sizeof buf, f)) {
        v = atof(buf);
        if (strchr(buf, 'K'))
            v *= 1024;
        else if (strchr(buf, 'M'))
            v *= MIB;
    }
    fclose(f);
    return v;
}

/* ---- one configuration's buffers -------------------------------------------------------- */

typedef struct config_run {
    rssm_context *ctx;
    rssm_layer layer;
    int B, M, T, NI;        /* rows, banks, tokens per input set, input sets */
    int Bs;                 /* stride of a bank's row in the slot tables: B rounded up to 16
                               (pointers passed to the library must be 16-byte aligned) */
    rssm_state st;          /* num_slots = M*B */
    int32_t *slots;         /* [M][Bs] device: bank m, row i -> slot perm[m*B + i] */
    int32_t *perm;          /* [M*B] host: the slot of logical row m*B + i (identity unless random) */
    int32_t *accepted;      /* [M][Bs] device (verify) */
    int32_t *cursor0;       /* [M*B] host: initial cursors of the phase, by logical row m*B + i */
    int32_t *accepted_host; /* [M][Bs] host copy */
    /* inputs: NI sets; a set holds T blocks of B tokens (each block 64-byte aligned), also
     * read as one packed [B, T, ...] tensor by verify */
    void *q, *k, *v, *a, *b, *o;
    size_t blk_q, blk_v, blk_a, blk_b; /* bytes of one block of B tokens (o uses blk_v) */
    float *A_log, *dt_bias;
    size_t ckpt_bytes, state_bytes, input_bytes;
    rssm_status err;
    char msg[768];
} config_run;

static int call_failed(config_run *r, rssm_status st, const char *what)
{
    if (st == RSSM_OK) return 0;
    if (r->err == RSSM_OK) {
        r->err = st;
        snprintf(r->msg, sizeof r->msg, "%s failed: %s: %s", what, rssm_status_name(st), rssm_last_error());
    }
    return 1;
}

static void run_free(config_run *r)
{
    rssm_context *c = r->ctx;
    rssm_mem_free(c, r->st.checkpoint), rssm_mem_free(c, r->st.ring_u), rssm_mem_free(c, r->st.ring_k);
    rssm_mem_free(c, r->st.ring_g), rssm_mem_free(c, r->st.ring_base), rssm_mem_free(c, r->st.cursor);
    rssm_mem_free(c, r->slots), rssm_mem_free(c, r->accepted);
    rssm_mem_free(c, r->q), rssm_mem_free(c, r->k), rssm_mem_free(c, r->v);
    rssm_mem_free(c, r->a), rssm_mem_free(c, r->b), rssm_mem_free(c, r->o);
    rssm_mem_free(c, r->A_log), rssm_mem_free(c, r->dt_bias);
    free(r->cursor0), free(r->accepted_host), free(r->perm);
    memset(&r->st, 0, sizeof r->st);
    r->slots = r->accepted = NULL;
    r->q = r->k = r->v = r->a = r->b = r->o = NULL;
    r->A_log = r->dt_bias = NULL;
    r->cursor0 = r->accepted_host = r->perm = NULL;
}

/* Fills `bytes` of device memory with normal(0, sigma) values of dtype d (or zeros when
 * sigma is 0) by uploading one 8 MiB random pattern over and over. */
static int fill_tiled(config_run *r, void *dst, size_t bytes, rssm_dtype d, double sigma, uint64_t seed)
{
    if (!bytes) return 0;
    if (sigma == 0) return call_failed(r, rssm_mem_set(r->ctx, dst, 0, bytes), "rssm_mem_set");
    const size_t es = rssm_dtype_size(d), tile = bytes < (8u << 20) ? bytes : (8u << 20);
    unsigned char *host = malloc(tile);
    if (!host) return call_failed(r, RSSM_ERROR_OUT_OF_MEMORY, "host pattern");
    for (size_t i = 0; i < tile / es; i++)
        put(host, d, i, sigma * rng_normal(&seed));
    int bad = 0;
    for (size_t off = 0; off < bytes && !bad; off += tile) {
        const size_t n = bytes - off < tile ? bytes - off : tile;
        bad = call_failed(r, rssm_mem_copy(r->ctx, (char *)dst + off, host, n, RSSM_COPY_HOST_TO_DEVICE),
                          "rssm_mem_copy");
    }
    free(host);
    return bad;
}

typedef enum { IN_NORMAL, IN_GATE_A } input_kind;

/* Fills `sets` input sets of `blocks` blocks, each `blk` bytes holding `n` elements. */
static int fill_inputs(config_run *r, void *dst, size_t blk, size_t n, input_kind kind, uint64_t seed)
{
    const size_t sets_blocks = (size_t)r->NI * r->T, total = sets_blocks * blk;
    unsigned char *host = calloc(1, total);
    if (!host) return call_failed(r, RSSM_ERROR_OUT_OF_MEMORY, "host inputs");
    for (size_t bl = 0; bl < sets_blocks; bl++)
        for (size_t i = 0; i < n; i++) {
            double x = rng_normal(&seed);
            if (kind == IN_GATE_A) x = x < -3 ? -3 : x > 3 ? 3 : x;
            put(host + bl * blk, r->layer.io_dtype, i, x);
        }
    const int bad = call_failed(r, rssm_mem_copy(r->ctx, dst, host, total, RSSM_COPY_HOST_TO_DEVICE), "rssm_mem_copy");
    free(host);
    return bad;
}

static int alloc_dev(config_run *r, size_t bytes, void **out)
{
    return call_failed(r, rssm_mem_alloc(r->ctx, bytes ? bytes : 64, out), "rssm_mem_alloc");
}

/* Sizes and allocates everything for B rows, the layer's L, T tokens (1 for decode). */
static int run_setup(config_run *r, const bench_options *o)
{
    const rssm_layer *l = &r->layer;
    const int B = r->B, L = l->ring_len, T = r->T;
    rssm_state_bytes one;
    if (call_failed(r, rssm_state_size(l, 1, &one), "rssm_state_size")) return 1;
    /* banks: checkpoints of all banks >= the working set; a multiple of L; >= T + 1 banks */
    const double bank_ckpt = (double)one.checkpoint * B;
    int M = (int)ceil(o->ws_mib * MIB / bank_ckpt);
    if (M < T + 1) M = T + 1;
    if (M < 2) M = 2;
    M = (int)round_up((size_t)M, (size_t)L);
    if ((double)M * B > 2e9) return call_failed(r, RSSM_ERROR_BAD_SHAPE, "working set (too many slots)");
    r->M = M;
    rssm_state_bytes sb;
    if (call_failed(r, rssm_state_size(l, M * B, &sb), "rssm_state_size")) return 1;
    r->ckpt_bytes = sb.checkpoint;
    r->state_bytes = sb.total;
    r->st.num_slots = M * B;
    r->st.bytes = sb;
    if (alloc_dev(r, sb.checkpoint, &r->st.checkpoint) || alloc_dev(r, sb.ring_u, &r->st.ring_u) ||
        alloc_dev(r, sb.ring_k, &r->st.ring_k) || alloc_dev(r, sb.ring_g, &r->st.ring_g) ||
        alloc_dev(r, sb.cursor, (void **)&r->st.cursor))
        return 1;
    if (alloc_dev(r, sb.ring_base, (void **)&r->st.ring_base)) return 1;
    /* states: checkpoint ~ N(0, 0.1), ring u ~ N(0, 0.5), ring k ~ N(0, K^-1/2), G = 0 (valid
     * for any cursor), ring_base 0; cursors are set per phase */
    if (fill_tiled(r, r->st.checkpoint, sb.checkpoint, l->state_dtype, 0.1, 11) ||
        fill_tiled(r, r->st.ring_u, sb.ring_u, l->ring_dtype, 0.5, 12) ||
        fill_tiled(r, r->st.ring_k, sb.ring_k, l->ring_dtype, 1.0 / sqrt(l->head_k_dim), 13) ||
        fill_tiled(r, r->st.ring_g, sb.ring_g, RSSM_DTYPE_F32, 0, 0) ||
        (r->st.ring_base && fill_tiled(r, r->st.ring_base, sb.ring_base, RSSM_DTYPE_F32, 0, 0)))
        return 1;

    /* slot indices and accepted counts per bank */
    const int Bs = r->Bs = (int)round_up((size_t)B, 16);
    const size_t tab = sizeof(int32_t) * (size_t)M * Bs;
    int32_t *slots = malloc(tab);
    r->accepted_host = calloc(1, tab);
    r->cursor0 = malloc(sizeof(int32_t) * M * B);
    r->perm = malloc(sizeof(int32_t) * M * B);
    if (!slots || !r->accepted_host || !r->cursor0 || !r->perm) {
        free(slots);
        return call_failed(r, RSSM_ERROR_OUT_OF_MEMORY, "host slot tables");
    }
    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    for (int s = 0; s < M * B; s++)
        r->perm[s] = s;
    for (int s = M * B - 1; o->random_slots && s > 0; s--) { /* Fisher-Yates */
        const int j = (int)(rng_next(&seed) % (uint64_t)(s + 1)), t = r->perm[s];
        r->perm[s] = r->perm[j], r->perm[j] = t;
    }
    for (int m = 0; m < M; m++)
        for (int i = 0; i < Bs; i++) {
            slots[m * Bs + i] = i < B ? r->perm[m * B + i] : -1;
            r->accepted_host[m * Bs + i] = T - (T > 1 ? (int)(rng_next(&seed) >> 63) : 0); /* T-1 or T */
        }
    int bad = alloc_dev(r, tab, (void **)&r->slots) || alloc_dev(r, tab, (void **)&r->accepted) ||
              call_failed(r, rssm_mem_copy(r->ctx, r->slots, slots, tab, RSSM_COPY_HOST_TO_DEVICE), "rssm_mem_copy") ||
              call_failed(r, rssm_mem_copy(r->ctx, r->accepted, r->accepted_host, tab, RSSM_COPY_HOST_TO_DEVICE),
                          "rssm_mem_copy");
    free(slots);
    if (bad) return 1;

    /* inputs */
    const size_t e = rssm_dtype_size(l->io_dtype);
    const size_t H = l->num_k_heads, HV = l->num_v_heads, K = l->head_k_dim, V = l->head_v_dim;
    const size_t gk = l->gate == RSSM_GATE_KDA ? K : 1;
    r->blk_q = round_up(B * H * K * e, 64);
    r->blk_v = round_up(B * HV * V * e, 64);
    r->blk_a = round_up(B * HV * gk * e, 64);
    r->blk_b = round_up(B * HV * e, 64);
    const size_t set_bytes = T * (2 * r->blk_q + 2 * r->blk_v + r->blk_a + r->blk_b);
    r->NI = (int)((128.0 * MIB) / set_bytes);
    if (r->NI > M) r->NI = M;
    if (r->NI < 1) r->NI = 1;
    r->input_bytes = set_bytes * r->NI;
    const size_t sb_T = (size_t)r->NI * T;
    if (alloc_dev(r, sb_T * r->blk_q, &r->q) || alloc_dev(r, sb_T * r->blk_q, &r->k) ||
        alloc_dev(r, sb_T * r->blk_v, &r->v) || alloc_dev(r, sb_T * r->blk_a, &r->a) ||
        alloc_dev(r, sb_T * r->blk_b, &r->b) || alloc_dev(r, sb_T * r->blk_v, &r->o) ||
        alloc_dev(r, HV * 4, (void **)&r->A_log) || alloc_dev(r, HV * gk * 4, (void **)&r->dt_bias))
        return 1;
    if (fill_inputs(r, r->q, r->blk_q, B * H * K, IN_NORMAL, 21) ||
        fill_inputs(r, r->k, r->blk_q, B * H * K, IN_NORMAL, 22) ||
        fill_inputs(r, r->v, r->blk_v, B * HV * V, IN_NORMAL, 23) ||
        fill_inputs(r, r->a, r->blk_a, B * HV * gk, IN_GATE_A, 24) ||
        fill_inputs(r, r->b, r->blk_b, B * HV, IN_NORMAL, 25) ||
        call_failed(r, rssm_mem_set(r->ctx, r->o, 0, sb_T * r->blk_v), "rssm_mem_set"))
        return 1;
    float *A_log = malloc(HV * 4), *dt_bias = malloc(HV * gk * 4);
    if (!A_log || !dt_bias) {
        free(A_log), free(dt_bias);
        return call_failed(r, RSSM_ERROR_OUT_OF_MEMORY, "host gates");
    }
    seed = 31;
    for (size_t h = 0; h < HV; h++)
        A_log[h] = (float)log(1.0 + 15.0 * rng_uniform(&seed)); /* A in [1, 16] */
    for (size_t i = 0; i < HV * gk; i++) {
        const double dt0 = exp(log(1e-3) + rng_uniform(&seed) * (log(1e-1) - log(1e-3))); /* softplus(dt_bias) */
        dt_bias[i] = (float)log(expm1(dt0));
    }
    bad = call_failed(r, rssm_mem_copy(r->ctx, r->A_log, A_log, HV * 4, RSSM_COPY_HOST_TO_DEVICE), "rssm_mem_copy") ||
          call_failed(r, rssm_mem_copy(r->ctx, r->dt_bias, dt_bias, HV * gk * 4, RSSM_COPY_HOST_TO_DEVICE),
                      "rssm_mem_copy");
    free(A_log), free(dt_bias);
    return bad;
}

/* Sets the cursors of the phase (staggered: (i + m) mod L; inphase: m mod L) and zeroes
 * KDA ring bases. */
static int run_reset(config_run *r, int phase)
{
    const int L = r->layer.ring_len, n = r->M * r->B;
    int32_t *by_slot = malloc(sizeof(int32_t) * n);
    if (!by_slot) return call_failed(r, RSSM_ERROR_OUT_OF_MEMORY, "host cursors");
    for (int m = 0; m < r->M; m++)
        for (int i = 0; i < r->B; i++) {
            r->cursor0[m * r->B + i] = (phase == BENCH_PHASE_INPHASE ? m : i + m) % L;
            by_slot[r->perm[m * r->B + i]] = r->cursor0[m * r->B + i];
        }
    const int bad =
        call_failed(r, rssm_mem_copy(r->ctx, r->st.cursor, by_slot, sizeof(int32_t) * n, RSSM_COPY_HOST_TO_DEVICE),
                    "rssm_mem_copy");
    free(by_slot);
    if (bad) return 1;
    if (r->st.ring_base) {
        rssm_state_bytes sb;
        rssm_state_size(&r->layer, r->M * r->B, &sb);
        if (call_failed(r, rssm_mem_set(r->ctx, r->st.ring_base, 0, sb.ring_base), "rssm_mem_set")) return 1;
    }
    return call_failed(r, rssm_context_synchronize(r->ctx), "rssm_context_synchronize");
}

/* io of bank m: `tokens` tokens per row starting at block `blk0` of the bank's input set. */
static rssm_step_io io_for(const config_run *r, int m, int tokens, int blk0)
{
    rssm_step_io io;
    memset(&io, 0, sizeof io);
    const size_t b = (size_t)(m % r->NI) * r->T + blk0; /* block index */
    io.batch = r->B;
    io.tokens = tokens;
    io.q = (const char *)r->q + b * r->blk_q;
    io.k = (const char *)r->k + b * r->blk_q;
    io.v = (const char *)r->v + b * r->blk_v;
    io.a = (const char *)r->a + b * r->blk_a;
    io.b = (const char *)r->b + b * r->blk_b;
    io.o = (char *)r->o + b * r->blk_v;
    io.A_log = r->A_log;
    io.dt_bias = r->dt_bias;
    io.slot = r->slots + (size_t)m * r->Bs;
    return io;
}

/* ---- the timed units (M steps each) ------------------------------------------------------ */

static int unit_packed(void *arg, void *stream)
{
    config_run *r = arg;
    for (int m = 0; m < r->M; m++) {
        rssm_step_io io = io_for(r, m, 1, 0);
        if (call_failed(r, rssm_decode_packed(r->ctx, &r->layer, &r->st, &io, stream), "rssm_decode_packed")) return 1;
    }
    return 0;
}

static int unit_replay(void *arg, void *stream)
{
    config_run *r = arg;
    for (int m = 0; m < r->M; m++) {
        rssm_step_io io = io_for(r, m, 1, 0);
        if (call_failed(r, rssm_decode_replay(r->ctx, &r->layer, &r->st, &io, stream), "rssm_decode_replay") ||
            call_failed(r, rssm_advance(r->ctx, &r->layer, &r->st, r->B, io.slot, NULL, stream), "rssm_advance"))
            return 1;
    }
    return 0;
}

/* Packed verify baseline: token j reads bank m+j, writes bank m+j+1 (mod M). */
static int unit_verify_packed(void *arg, void *stream)
{
    config_run *r = arg;
    for (int m = 0; m < r->M; m++)
        for (int j = 0; j < r->T; j++) {
            rssm_step_io io = io_for(r, m, 1, j);
            io.slot = r->slots + (size_t)((m + j) % r->M) * r->Bs;
            io.write_slot = r->slots + (size_t)((m + j + 1) % r->M) * r->Bs;
            if (call_failed(r, rssm_decode_packed(r->ctx, &r->layer, &r->st, &io, stream), "rssm_decode_packed"))
                return 1;
        }
    return 0;
}

static int unit_verify_replay(void *arg, void *stream)
{
    config_run *r = arg;
    for (int m = 0; m < r->M; m++) {
        rssm_step_io io = io_for(r, m, r->T, 0);
        if (call_failed(r, rssm_verify(r->ctx, &r->layer, &r->st, &io, stream), "rssm_verify") ||
            call_failed(r,
                        rssm_commit(r->ctx, &r->layer, &r->st, r->B, r->T, io.slot, NULL,
                                    r->accepted + (size_t)m * r->Bs, stream),
                        "rssm_commit"))
            return 1;
    }
    return 0;
}

/* Times the packed and the replay unit: a short untimed estimate of each, then `repeat`
 * rounds that time packed then replay (interleaved, so load from other processes hits both
 * alike), each measurement running enough units to last min_time; keeps the best of each.
 * units[i] counts every unit executed (for the verify byte simulation), reps[i] the units of
 * the last measurement. Returns 0, or 1 on failure (r->msg says why). */
static int time_pair(config_run *r, const bench_options *o, bench_work work[2], double best[2], long units[2],
                     int reps[2])
{
    const int graph = 1, warm = o->device == RSSM_DEVICE_CUDA ? 2 : 0;
    for (int k = 0; k < 2; k++) {
        double est;
        if (call_failed(r, bench_time(r->ctx, work[k], r, graph, 1, 1, &est), "bench_time (warm-up)") ||
            call_failed(r, rssm_context_check_device_errors(r->ctx), "rssm_context_check_device_errors"))
            return 1;
        units[k] = 2;
        reps[k] = (int)ceil(o->min_time * 1e6 / (est > 1 ? est : 1));
        if (reps[k] < 1) reps[k] = 1;
        if (reps[k] > 10000) reps[k] = 10000;
        best[k] = 1e300;
    }
    for (int i = 0; i < o->repeat; i++)
        for (int k = 0; k < 2; k++) {
            double us;
            if (call_failed(r, bench_time(r->ctx, work[k], r, graph, warm, reps[k], &us), "bench_time") ||
                call_failed(r, rssm_context_check_device_errors(r->ctx), "rssm_context_check_device_errors"))
                return 1;
            units[k] += warm + reps[k];
            if (us < best[k]) best[k] = us;
        }
    return 0;
}

/* Replay verify bytes per row-step: the cursors simulated on the host over `units` units
 * from the phase's initial cursors, averaged over the last `last` units. */
static double verify_bytes_sim(const config_run *r, long units, long last, double *mean_acc)
{
    const int M = r->M, B = r->B, T = r->T, L = r->layer.ring_len;
    int32_t *c = malloc(sizeof(int32_t) * M * B);
    if (!c) return -1;
    memcpy(c, r->cursor0, sizeof(int32_t) * M * B);
    double bytes = 0, acc = 0, n = 0;
    for (long u = 0; u < units; u++)
        for (int m = 0; m < M; m++)
            for (int i = 0; i < B; i++) {
                const int s = m * B + i, h = c[s], sf = rssm_start_fold(h, T, L, 0);
                const int a = r->accepted_host[m * r->Bs + i];
                if (u >= units - last) {
                    bytes += rssm_bm_verify_replay(&r->layer, h, T, sf);
                    acc += a;
                    n += 1;
                }
                c[s] = rssm_cursor_after_commit(h, T, L, 0, a);
            }
    free(c);
    *mean_acc = acc / n;
    return bytes / n;
}

/* Outputs are finite (a guard against degenerate runs, not a correctness check). */
static int outputs_finite(config_run *r)
{
    const size_t n = (size_t)r->B * r->layer.num_v_heads * r->layer.head_v_dim;
    const size_t bytes = r->blk_v;
    unsigned char *h = malloc(bytes);
    if (!h) return call_failed(r, RSSM_ERROR_OUT_OF_MEMORY, "host output"), 0;
    if (call_failed(r, rssm_mem_copy(r->ctx, h, r->o, bytes, RSSM_COPY_DEVICE_TO_HOST), "rssm_mem_copy")) {
        free(h);
        return 0;
    }
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        const float x = r->layer.io_dtype == RSSM_DTYPE_BF16 ? rssm_bf16_to_f32(((uint16_t *)h)[i]) : ((float *)h)[i];
        ok = isfinite(x);
    }
    free(h);
    if (!ok) {
        r->err = RSSM_ERROR_DEVICE;
        snprintf(r->msg, sizeof r->msg, "an output is not finite (NaN or Inf): refusing to report this run");
    }
    return ok;
}

/* ---- results ------------------------------------------------------------------------------ */

typedef struct bench_result {
    int B, L, T, phase, M, reps_p, reps_r;
    double mean_acc;
    double us_p, us_r;       /* per step (decode) or per verify step */
    double bytes_p, bytes_r; /* per step, all rows */
    double gbps_p, gbps_r;
} bench_result;

static const char *phase_name(int p) { return p == BENCH_PHASE_INPHASE ? "inphase" : "staggered"; }

static void print_table_header(const bench_options *o, int cpu)
{
    if (o->verify)
        printf("\n%5s %3s %2s %-9s %4s | %10s %10s %7s | %9s %9s %7s | %8s %8s | %6s %6s", "B", "L", "T", "phase",
               "acc", "pk_us/vst", "rp_us/vst", "speedup", "pk_MB/vst", "rp_MB/vst", "model_x", "pk_GB/s", "rp_GB/s",
               "pk%cp", "rp%cp");
    else
        printf("\n%5s %3s %-9s | %10s %10s %7s | %9s %9s %7s | %8s %8s | %6s %6s", "B", "L", "phase", "pk_us/st",
               "rp_us/st", "speedup", "pk_MB/st", "rp_MB/st", "model_x", "pk_GB/s", "rp_GB/s", "pk%cp", "rp%cp");
    if (cpu) printf(" %6s %6s", "pk%tri", "rp%tri");
    printf("\n");
}

static void print_row(const bench_options *o, const bench_result *x, double copy, double triad, int cpu)
{
    if (o->verify)
        printf("%5d %3d %2d %-9s %4.2f | %10.2f %10.2f %6.3fx | %9.3f %9.3f %6.3fx | %8.1f %8.1f | %5.1f%% %5.1f%%",
               x->B, x->L, x->T, phase_name(x->phase), x->mean_acc, x->us_p, x->us_r, x->us_p / x->us_r,
               x->bytes_p / 1e6, x->bytes_r / 1e6, x->bytes_p / x->bytes_r, x->gbps_p, x->gbps_r,
               100 * x->gbps_p / copy, 100 * x->gbps_r / copy);
    else
        printf("%5d %3d %-9s | %10.2f %10.2f %6.3fx | %9.3f %9.3f %6.3fx | %8.1f %8.1f | %5.1f%% %5.1f%%", x->B, x->L,
               phase_name(x->phase), x->us_p, x->us_r, x->us_p / x->us_r, x->bytes_p / 1e6, x->bytes_r / 1e6,
               x->bytes_p / x->bytes_r, x->gbps_p, x->gbps_r, 100 * x->gbps_p / copy, 100 * x->gbps_r / copy);
    if (cpu) printf(" %5.1f%% %5.1f%%", 100 * x->gbps_p / triad, 100 * x->gbps_r / triad);
    printf("\n");
    fflush(stdout);
}

/* ---- options -------------------------------------------------------------------------------- */

const char *const bench_models[] = {"qwen3-next", "qwen3.5-122b", "kimi-linear", NULL};

int bench_model_layer(const char *model, rssm_layer *out)
{
    rssm_gate g = RSSM_GATE_GDN;
    int H = 16, HV = 32;
    if (!strcmp(model, "qwen3.5-122b"))
        HV = 64;
    else if (!strcmp(model, "kimi-linear"))
        g = RSSM_GATE_KDA, H = 32, HV = 32;
    else if (strcmp(model, "qwen3-next"))
        return -1;
    *out = rssm_layer_default(g, H, HV, 128, 128, 16);
    out->io_dtype = RSSM_DTYPE_BF16;
    return 0;
}

bench_options bench_options_default(void)
{
    bench_options o;
    memset(&o, 0, sizeof o);
    o.device = rssm_cuda_available() ? RSSM_DEVICE_CUDA : RSSM_DEVICE_CPU;
    o.params = rssm_context_params_default();
    o.model = "qwen3-next";
    bench_model_layer(o.model, &o.layer);
    o.batch[0] = 1, o.batch[1] = 8, o.batch[2] = 64, o.nbatch = 3;
    o.ring_len[0] = 16, o.nring = 1;
    o.phase = BENCH_PHASE_STAGGERED;
    o.ws_mib = 1024;
    o.min_time = 0.3;
    o.repeat = 3;
    return o;
}

static int shape_is_preset(const bench_options *o)
{
    rssm_layer p;
    const rssm_layer *l = &o->layer;
    return bench_model_layer(o->model, &p) == 0 && l->gate == p.gate && l->num_k_heads == p.num_k_heads &&
           l->num_v_heads == p.num_v_heads && l->head_k_dim == p.head_k_dim && l->head_v_dim == p.head_v_dim;
}

static const char *device_name(rssm_device d)
{
    return d == RSSM_DEVICE_CUDA ? "cuda" : d == RSSM_DEVICE_CPU ? "cpu" : "reference";
}

/* The command line that reproduces one row. */
static void row_command(const bench_options *o, const bench_result *x, char *out, size_t n)
{
    const rssm_layer *l = &o->layer;
    int w = snprintf(out, n, "replayssm bench --device %s --model %s", device_name(o->device), o->model);
    if (!shape_is_preset(o))
        w += snprintf(out + w, n - w, " --gate %s --heads %d --v-heads %d --k-dim %d --v-dim %d",
                      l->gate == RSSM_GATE_KDA ? "kda" : "gdn", l->num_k_heads, l->num_v_heads, l->head_k_dim,
                      l->head_v_dim);
    w += snprintf(out + w, n - w, " --batch %d --ring-len %d --state %s --ring %s --io %s --phase %s", x->B, x->L,
                  dtype_name(l->state_dtype), dtype_name(l->ring_dtype), dtype_name(l->io_dtype), phase_name(x->phase));
    if (l->state_layout == RSSM_LAYOUT_KV) w += snprintf(out + w, n - w, " --state-layout kv");
    if (o->threads) w += snprintf(out + w, n - w, " --threads %d", o->threads);
    if (o->verify) w += snprintf(out + w, n - w, " --verify %d", o->verify);
    if (o->random_slots) w += snprintf(out + w, n - w, " --slot-order random");
    if (o->ws_mib != 1024) snprintf(out + w, n - w, " --working-set-mib %g", o->ws_mib);
}

/* ---- the run ---------------------------------------------------------------------------------- */

/* What every configuration of one run shares: the context, the header's facts, the bandwidth
 * measured at the start and the CSV rows (written at the end when every configuration ran). */
typedef struct bench_session {
    const bench_options *o;
    rssm_context *ctx;
    int cpu;
    char machine[256], commit[80], date[64];
    double copy, triad;
    char *csv;
    size_t csv_cap, csv_len;
    int printed_table_header;
} bench_session;

static void print_header(bench_session *bs)
{
    const bench_options *o = bs->o;
    machine_name(o->device, bs->machine, sizeof bs->machine);
    git_commit(bs->commit, sizeof bs->commit);
    time_t now = time(NULL);
    strftime(bs->date, sizeof bs->date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    const rssm_layer *l0 = &o->layer;
    printf("# replayssm %s bench\n", rssm_version_string());
    printf("# command : replayssm");
    for (int i = 0; i < o->argc; i++)
        printf(" %s", o->argv[i]);
    printf("\n# device  : %s — %s\n", device_name(o->device), bs->machine);
    if (bs->cpu)
        printf("# threads : %d\n", threads_of(bs->ctx));
    else
        printf("# threads : -\n");
    printf("# date    : %s\n# commit  : %s\n", bs->date, bs->commit);
    printf("# layer   : %s %s H=%d HV=%d K=%d V=%d  state %s %s, ring %s (G f32), io %s, gates raw (a, b)\n", o->model,
           l0->gate == RSSM_GATE_KDA ? "KDA" : "GDN", l0->num_k_heads, l0->num_v_heads, l0->head_k_dim, l0->head_v_dim,
           dtype_name(l0->state_dtype), l0->state_layout == RSSM_LAYOUT_KV ? "[K, V]" : "[V, K]",
           dtype_name(l0->ring_dtype), dtype_name(l0->io_dtype));
    printf("# slots   : %s\n", o->random_slots ? "random order over the working set" : "consecutive");
    if (!strcmp(o->model, "qwen3.5-122b") && shape_is_preset(o))
        printf("# note    : qwen3.5-122b shape H=16 HV=64 K=V=128 is our assumption\n");
}

/* The copy (and CPU triad) bandwidth of this device, measured in this run; 0, or 1 on failure. */
static int measure_bandwidth(bench_session *bs)
{
    const bench_options *o = bs->o;
    double bw_bytes = o->bw_mib * MIB;
    if (bw_bytes <= 0) {
        if (o->device == RSSM_DEVICE_CUDA)
            bw_bytes = 1024 * MIB;
        else {
            bw_bytes = 2 * llc_bytes();
            if (bw_bytes < 256 * MIB) bw_bytes = 256 * MIB;
            if (bw_bytes > 1024 * MIB) bw_bytes = 1024 * MIB;
        }
    }
    rssm_status st = bench_bandwidth(bs->ctx, (size_t)bw_bytes, &bs->copy, &bs->triad);
    if (st != RSSM_OK || !(bs->copy > 0)) {
        fprintf(stderr, "bench: bandwidth measurement failed: %s: %s\n", rssm_status_name(st), rssm_last_error());
        return 1;
    }
    printf("# memory  : copy %.1f GB/s (read + write)", bs->copy);
    if (bs->cpu) printf(", STREAM triad %.1f GB/s", bs->triad);
    printf(" over %.0f MiB arrays; GB = 1e9 B, MB = 1e6 B\n", bw_bytes / MIB);
    printf("# timing  : best of %d measurements of >= %.2f s; one unit = M steps over M banks of B slots\n", o->repeat,
           o->min_time);
    if (bs->cpu)
        printf("# note    : CPU timings on a shared machine are noisy; compare the ratio, measured in the same run\n");
    return 0;
}

/* Appends the CSV row of x; 0, or 1 out of host memory. */
static int csv_add(bench_session *bs, const config_run *r, const bench_result *x)
{
    const bench_options *o = bs->o;
    const int cpu = bs->cpu;
    char cmd[1024];
    row_command(o, x, cmd, sizeof cmd);
    if (bs->csv_cap - bs->csv_len < 4096) {
        char *n = realloc(bs->csv, bs->csv_cap * 2);
        if (!n) {
            fprintf(stderr, "bench: out of host memory\n");
            return 1;
        }
        bs->csv = n, bs->csv_cap *= 2;
    }
    const rssm_layer *l = &r->layer;
    const double copy = bs->copy, triad = bs->triad;
    bs->csv_len += snprintf(
        bs->csv + bs->csv_len, bs->csv_cap - bs->csv_len,
        "%s,\"%s\",%d,%s,%s,%s,%s,%d,%d,%d,%d,%s,%s,%s,%s,%d,%d,%d,%s,%.3f,%d,%d,%zu,%d,%d,%.4f,%.4f,"
        "%.4f,%.0f,%.0f,%.4f,%.3f,%.3f,%.3f,%.3f,%.2f,%.2f,%.2f,%.2f,\"%s\"\n",
        device_name(o->device), bs->machine, cpu ? threads_of(bs->ctx) : 0, bs->date, bs->commit, o->model,
        l->gate == RSSM_GATE_KDA ? "kda" : "gdn", l->num_k_heads, l->num_v_heads, l->head_k_dim, l->head_v_dim,
        dtype_name(l->state_dtype), dtype_name(l->ring_dtype), dtype_name(l->io_dtype), o->verify ? "verify" : "decode",
        x->B, x->L, x->T, phase_name(x->phase), o->verify ? x->mean_acc : 1.0, r->M, r->M * r->B, r->state_bytes,
        x->reps_p, x->reps_r, x->us_p, x->us_r, x->us_p / x->us_r, x->bytes_p, x->bytes_r, x->bytes_p / x->bytes_r,
        x->gbps_p, x->gbps_r, copy, cpu ? triad : 0.0, 100 * x->gbps_p / copy, 100 * x->gbps_r / copy,
        cpu ? 100 * x->gbps_p / triad : 0.0, cpu ? 100 * x->gbps_r / triad : 0.0, cmd);
    return 0;
}

/* Times one phase of a set-up configuration, prints its row (and keeps its CSV row); 0, or 1
 * when it failed (nothing printed). */
static int bench_phase(bench_session *bs, config_run *r, int ph)
{
    const bench_options *o = bs->o;
    bench_result x;
    memset(&x, 0, sizeof x);
    x.B = r->B, x.L = r->layer.ring_len, x.T = r->T, x.phase = ph, x.M = r->M;
    bench_work work[2] = {o->verify ? unit_verify_packed : unit_packed, o->verify ? unit_verify_replay : unit_replay};
    double unit_us[2] = {-1, -1};
    long units[2] = {0, 0};
    int reps[2] = {0, 0};
    /* packed decode never reads or moves cursors: one reset serves both paths */
    const int failed = run_reset(r, ph) || time_pair(r, o, work, unit_us, units, reps);
    const double unit_p = failed ? -1 : unit_us[0], unit_r = failed ? -1 : unit_us[1];
    x.reps_p = reps[0], x.reps_r = reps[1];
    if (unit_p < 0 || unit_r < 0 || r->err != RSSM_OK || !outputs_finite(r)) {
        fprintf(stderr, "bench: B=%d L=%d %s: %s\nbench: no numbers reported for this configuration\n", r->B, x.L,
                phase_name(ph), r->msg[0] ? r->msg : "failed");
        return 1;
    }
    x.us_p = unit_p / r->M;
    x.us_r = unit_r / r->M;
    if (o->verify) {
        x.bytes_p = r->B * rssm_bm_verify_packed(&r->layer, r->T);
        x.bytes_r = r->B * verify_bytes_sim(r, units[1], x.reps_r, &x.mean_acc);
    } else {
        x.bytes_p = r->B * rssm_bm_packed_token(&r->layer);
        x.bytes_r = r->B * rssm_bm_replay_cycle(&r->layer); /* exact: a unit is M/L whole cycles */
    }
    x.gbps_p = x.bytes_p / (x.us_p * 1e3);
    x.gbps_r = x.bytes_r / (x.us_r * 1e3);
    print_row(o, &x, bs->copy, bs->triad, bs->cpu);
    return bs->csv ? csv_add(bs, r, &x) : 0;
}

/* One configuration: ring length L, batch B, every phase asked for; 0, or 1 on failure. */
static int bench_config(bench_session *bs, int L, int B)
{
    const bench_options *o = bs->o;
    config_run r;
    memset(&r, 0, sizeof r);
    r.ctx = bs->ctx;
    r.layer = o->layer;
    r.layer.ring_len = L;
    r.B = B;
    r.T = o->verify ? o->verify : 1;
    int rc = 0;
    if (run_setup(&r, o)) {
        fprintf(stderr, "bench: B=%d L=%d: %s\n", r.B, L, r.msg);
        rc = 1;
    }
    if (!rc && !bs->printed_table_header) {
        printf("# working : B=%d L=%d: %d banks x %d slots, checkpoints %.0f MiB, all state %.0f MiB, inputs "
               "%.0f MiB (%d sets)\n",
               r.B, r.layer.ring_len, r.M, r.B, r.ckpt_bytes / MIB, r.state_bytes / MIB, r.input_bytes / MIB, r.NI);
        print_table_header(o, bs->cpu);
        bs->printed_table_header = 1;
    }
    const int p0 = o->phase == BENCH_PHASE_BOTH ? BENCH_PHASE_STAGGERED : o->phase;
    const int p1 = o->phase == BENCH_PHASE_BOTH ? BENCH_PHASE_INPHASE : o->phase;
    for (int ph = p0; ph <= p1 && !rc; ph++)
        rc = bench_phase(bs, &r, ph);
    run_free(&r);
    return rc;
}

static int write_csv(const bench_session *bs)
{
    FILE *f = fopen(bs->o->csv, "w");
    int rc = 0;
    if (!f || fwrite(bs->csv, 1, bs->csv_len, f) != bs->csv_len) {
        fprintf(stderr, "bench: cannot write %s\n", bs->o->csv);
        rc = 1;
    }
    if (f) fclose(f);
    return rc;
}

int bench_run(const bench_options *o)
{
    bench_session bs;
    memset(&bs, 0, sizeof bs);
    bs.o = o;
    bs.cpu = o->device == RSSM_DEVICE_CPU;
    rssm_context_params cp = o->params;
    cp.threads = o->threads;
    rssm_status st = rssm_context_create(o->device, &cp, &bs.ctx);
    if (st != RSSM_OK) {
        fprintf(stderr, "bench: cannot create the context: %s\n", rh_context_error(o->device, st));
        return 1;
    }
    print_header(&bs);
    int rc = measure_bandwidth(&bs);
    /* CSV rows are kept and written only when every run succeeded */
    bs.csv_cap = 1 << 16;
    bs.csv = !rc && o->csv ? malloc(bs.csv_cap) : NULL;
    if (!rc && o->csv && !bs.csv) {
        fprintf(stderr, "bench: out of host memory\n");
        rc = 1;
    }
    if (bs.csv)
        bs.csv_len +=
            snprintf(bs.csv, bs.csv_cap,
                     "device,machine,threads,date,commit,model,gate,H,HV,K,V,state,ring,io,mode,B,L,T,phase,"
                     "mean_accepted,banks,slots,working_set_bytes,reps_packed,reps_replay,packed_us,replay_us,"
                     "speedup,packed_bytes,replay_bytes,model_speedup,packed_gbps,replay_gbps,copy_gbps,"
                     "triad_gbps,packed_pct_copy,replay_pct_copy,packed_pct_triad,replay_pct_triad,command\n");
    for (int ri = 0; ri < o->nring && !rc; ri++)
        for (int bi = 0; bi < o->nbatch && !rc; bi++)
            rc = bench_config(&bs, o->ring_len[ri], o->batch[bi]);
    if (!rc && bs.csv) rc = write_csv(&bs);
    free(bs.csv);
    rssm_context_free(bs.ctx);
    return rc;
}
