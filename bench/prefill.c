/*
 * prefill.c — time of one rssm_prefill call (one layer, K = V = 128, bf16 io, f32 state) for
 * Qwen3-Next's GDN heads (H=16, HV=32) and Kimi-Linear's KDA heads (H=HV=32), per rows x tokens:
 * uniform rows, and ragged rows (cu_seqlens) whose lengths alternate T and T/4. On CUDA it also
 * times, in the same run, each loop on its own context: chunks on the narrow lanes
 * (rssm_context_params.cuda_prefill = 1), on wide lanes with a whole head per CTA (2), the same
 * lanes sliced (3, 32 rows per CTA; the same bits as 2) and the one-token loop (0; the narrow
 * lanes' bits); the default slices the wide lanes while the sliced grid has at most one CTA
 * per SM.
 * Built as build/bench_prefill [cpu|cuda] [ROWS T [REPS]]; prints a table, then the same rows as
 * CSV (ROWS T: that shape only, uniform rows, e.g. for a profiler; REPS: calls per timing, e.g. 1
 * under compute-sanitizer).
 * Wall time around `reps` calls and one synchronisation (the calls are tens of µs and more).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "replayssm_runtime.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define TRY(call)                                                                                                      \
    do {                                                                                                               \
        if ((call) != RSSM_OK) {                                                                                       \
            fprintf(stderr, "bench_prefill: %s\n", rssm_last_error());                                                 \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

/* n random bf16 values (normal-ish, scaled) uploaded to a new device buffer */
static void *random_bf16(rssm_context *ctx, size_t n, float scale, unsigned *seed)
{
    uint16_t *h = malloc(sizeof(uint16_t) * n);
    if (!h) exit(1);
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        h[i] = rssm_f32_to_bf16(scale * ((float)(*seed >> 8) / (float)(1u << 24) * 2.0f - 1.0f));
    }
    void *d = NULL;
    TRY(rssm_mem_alloc(ctx, sizeof(uint16_t) * n + 64, &d));
    TRY(rssm_mem_copy(ctx, d, h, sizeof(uint16_t) * n, RSSM_COPY_HOST_TO_DEVICE));
    free(h);
    return d;
}

static void *upload(rssm_context *ctx, const void *h, size_t bytes)
{
    void *d = NULL;
    TRY(rssm_mem_alloc(ctx, bytes + 64, &d));
    TRY(rssm_mem_copy(ctx, d, h, bytes, RSSM_COPY_HOST_TO_DEVICE));
    return d;
}

/* µs per rssm_prefill call: rows of len[b] tokens (ragged when `ragged`, else all T) */
static double time_prefill(rssm_context *ctx, const rssm_layer *l, int B, int T, int ragged, int reps)
{
    const int gk = l->gate == RSSM_GATE_KDA ? l->head_k_dim : 1, HV = l->num_v_heads;
    int32_t *cu = malloc(sizeof(int32_t) * (B + 1)), *slot = malloc(sizeof(int32_t) * B);
    float *alog = malloc(sizeof(float) * HV), *dtb = malloc(sizeof(float) * HV * gk);
    if (!cu || !slot || !alog || !dtb) exit(1);
    cu[0] = 0;
    for (int b = 0; b < B; b++)
        cu[b + 1] = cu[b] + (ragged && b % 2 ? (T / 4 > 0 ? T / 4 : 1) : T);
    const size_t n = ragged ? (size_t)cu[B] : (size_t)B * T;
    for (int h = 0; h < HV; h++)
        alog[h] = 0.5f;
    for (int i = 0; i < HV * gk; i++)
        dtb[i] = 0.0f;
    rssm_pool *pool = NULL;
    TRY(rssm_pool_create(ctx, l, 1, B, &pool));
    for (int b = 0; b < B; b++)
        TRY(rssm_pool_acquire(pool, &slot[b]));
    rssm_state st;
    TRY(rssm_pool_state(pool, 0, &st));
    unsigned seed = 12345u + (unsigned)(B * 977 + T);
    rssm_step_io io;
    memset(&io, 0, sizeof io);
    io.batch = B, io.tokens = T;
    io.q = random_bf16(ctx, n * l->num_k_heads * l->head_k_dim, 1.0f, &seed);
    io.k = random_bf16(ctx, n * l->num_k_heads * l->head_k_dim, 1.0f, &seed);
    io.v = random_bf16(ctx, n * HV * l->head_v_dim, 1.0f, &seed);
    io.a = random_bf16(ctx, n * HV * gk, 1.0f, &seed);
    io.b = random_bf16(ctx, n * HV, 2.0f, &seed);
    io.A_log = upload(ctx, alog, sizeof(float) * HV);
    io.dt_bias = upload(ctx, dtb, sizeof(float) * HV * gk);
    void *o = NULL;
    TRY(rssm_mem_alloc(ctx, sizeof(uint16_t) * n * HV * l->head_v_dim + 64, &o));
    io.o = o;
    io.slot = upload(ctx, slot, sizeof(int32_t) * B);
    io.cu_seqlens = ragged ? upload(ctx, cu, sizeof(int32_t) * (B + 1)) : NULL;
    void *stream = rssm_context_stream(ctx);
    for (int r = 0; r < (reps < 2 ? reps : 2); r++) /* warm-up */
        TRY(rssm_prefill(ctx, l, &st, &io, stream));
    TRY(rssm_context_synchronize(ctx));
    const double t0 = now_s();
    for (int r = 0; r < reps; r++)
        TRY(rssm_prefill(ctx, l, &st, &io, stream));
    TRY(rssm_context_synchronize(ctx));
    const double us = (now_s() - t0) / reps * 1e6;
    TRY(rssm_context_check_device_errors(ctx));
    void *bufs[] = {(void *)io.q,    (void *)io.k,         (void *)io.v,       (void *)io.a,
                    (void *)io.b,    (void *)io.A_log,     (void *)io.dt_bias, o,
                    (void *)io.slot, (void *)io.cu_seqlens};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        rssm_mem_free(ctx, bufs[i]);
    rssm_pool_free(pool);
    free(cu), free(slot), free(alog), free(dtb);
    return us;
}

int main(int argc, char **argv)
{
    const int cuda = argc > 1 && !strcmp(argv[1], "cuda");
    /* ctx[0]: the default; on CUDA ctx[1..4]: params.cuda_prefill = 1, 2, 3, 0 */
    rssm_context *ctx[5] = {NULL, NULL, NULL, NULL, NULL};
    if (rssm_context_create(cuda ? RSSM_DEVICE_CUDA : RSSM_DEVICE_CPU, NULL, &ctx[0]) != RSSM_OK) {
        printf("bench_prefill: no %s context (%s); skipped\n", cuda ? "CUDA" : "CPU", rssm_last_error());
        return 0;
    }
    static const int mode[5] = {-1, 1, 2, 3, 0};
    const int nctx = cuda ? 5 : 1;
    for (int i = 1; i < nctx; i++) {
        rssm_context_params p = rssm_context_params_default();
        p.cuda_prefill = mode[i];
        TRY(rssm_context_create(RSSM_DEVICE_CUDA, &p, &ctx[i]));
    }
    static const int rows_cuda[5] = {1, 2, 8, 64, 256}, toks_cuda[3] = {16, 64, 256};
    static const int rows_cpu[2] = {1, 4}, toks_cpu[2] = {16, 64};
    const int *rows = cuda ? rows_cuda : rows_cpu, *toks = cuda ? toks_cuda : toks_cpu;
    int nr = cuda ? 5 : 2, nt = cuda ? 3 : 2, one_shape[2];
    const int reps_arg = argc > 4 ? atoi(argv[4]) : 0; /* calls per timing (1 under compute-sanitizer) */
    if (argc > 3) {                                    /* one shape */
        one_shape[0] = atoi(argv[2]), one_shape[1] = atoi(argv[3]);
        if (one_shape[0] < 1 || one_shape[1] < 1 || (argc > 4 && reps_arg < 1)) {
            printf("bench_prefill: ROWS, T and REPS must be positive\n");
            return 1;
        }
        rows = &one_shape[0], toks = &one_shape[1], nr = nt = 1;
    }
    char csv[64][200];
    int nc = 0;
    printf("%-5s %5s %5s %-7s %12s %14s", "model", "rows", "T", "rows", "us / call", "tokens / s");
    if (cuda) printf(" %12s %12s %12s %12s", "narrow us", "wide us", "sliced us", "one-token us");
    printf("\n");
    for (int m = 0; m < 2; m++) {
        rssm_layer l = m ? rssm_layer_default(RSSM_GATE_KDA, 32, 32, 128, 128, 16)
                         : rssm_layer_default(RSSM_GATE_GDN, 16, 32, 128, 128, 16);
        l.io_dtype = RSSM_DTYPE_BF16;
        for (int bi = 0; bi < nr; bi++)
            for (int ti = 0; ti < nt; ti++)
                for (int ragged = 0; ragged < 2; ragged++) {
                    const int B = rows[bi], T = toks[ti];
                    if (ragged && (B == 1 || argc > 3)) continue;
                    const int reps = reps_arg ? reps_arg : cuda ? (B * T >= 16384 ? 5 : 20) : 2;
                    double us[5] = {0, 0, 0, 0, 0};
                    for (int i = 0; i < nctx; i++)
                        us[i] = time_prefill(ctx[i], &l, B, T, ragged, i == 4 && B * T >= 16384 && reps > 2 ? 2 : reps);
                    const long tokens =
                        ragged ? (long)(B / 2) * (T / 4 > 0 ? T / 4 : 1) + (long)(B - B / 2) * T : (long)B * T;
                    const char *model = m ? "kda" : "gdn", *shape = ragged ? "ragged" : "uniform";
                    printf("%-5s %5d %5d %-7s %12.1f %14.0f", model, B, T, shape, us[0], tokens / (us[0] * 1e-6));
                    if (cuda) printf(" %12.1f %12.1f %12.1f %12.1f", us[1], us[2], us[3], us[4]);
                    printf("\n");
                    snprintf(csv[nc++], sizeof csv[0], "%s,%d,%d,%s,%.2f,%.0f,%.2f,%.2f,%.2f,%.2f", model, B, T, shape,
                             us[0], tokens / (us[0] * 1e-6), us[1], us[2], us[3], us[4]);
                }
    }
    printf("\nmodel,rows,T,rows_kind,us_per_call,tokens_per_s,narrow_us,wide_us,sliced_us,one_token_us\n");
    for (int i = 0; i < nc; i++)
        printf("%s\n", csv[i]);
    for (int i = 0; i < nctx; i++)
        rssm_context_free(ctx[i]);
    return 0;
}
