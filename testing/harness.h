/*
 * harness.h — device-generic test harness shared by `replayssm check` and tests/:
 * guarded device buffers, dtype packing, whole-state handling, one call per public op with
 * poisoned outputs and guard checks, random realistic inputs and error measures.
 *
 * Every device buffer has RH_GUARD bytes of a known pattern before and after it; every
 * harness call checks the guards of what the op may write. Memory goes through
 * the context memory calls of replayssm.h (rssm_mem_*), so the same code runs on the reference, the CPU and CUDA.
 *
 * Harness calls return RH_OK, RH_UNSUPPORTED (the device said RSSM_ERROR_UNSUPPORTED) or
 * RH_FAIL; rh_msg() holds the reason of the last non-OK result.
 */
#ifndef RSSM_HARNESS_H
#define RSSM_HARNESS_H

#include <stdint.h>
#include <stddef.h>

#include "replayssm_runtime.h"

enum { RH_OK = 0, RH_UNSUPPORTED = 1, RH_FAIL = 2 };

/* The exit status of a check or test program that ran nothing because its device is absent
 * (ctest's SKIP_RETURN_CODE; "N passed" then counts only what ran). */
#define RH_EXIT_SKIP 77

/* The ops of the step family, as rh_step runs them. */
typedef enum rh_op { RH_OP_DECODE_PACKED = 0, RH_OP_DECODE_REPLAY, RH_OP_VERIFY, RH_OP_PREFILL } rh_op;
#define RH_GUARD 64

const char *rh_msg(void);
int rh_set(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Turns a library status into RH_OK / RH_UNSUPPORTED / RH_FAIL (with the message). */
int rh_status(rssm_status st, const char *what);

/* ---- random numbers (xorshift64*, deterministic) ------------------------------------- */
typedef struct rh_rng {
    uint64_t s;
} rh_rng;
void rh_rng_seed(rh_rng *r, uint64_t seed);
double rh_uniform(rh_rng *r); /* [0, 1) */
/* perm[0 .. n-1] = 0 .. n-1 in a random order (Fisher-Yates) */
void rh_permutation(rh_rng *r, int32_t *perm, int n);
double rh_normal(rh_rng *r);

/* ---- dtypes ----------------------------------------------------------------------------- */
void rh_pack(const double *x, int64_t n, rssm_dtype dt, void *out);
void rh_unpack(const void *in, int64_t n, rssm_dtype dt, double *x);
double rh_round(double x, rssm_dtype dt);
/* Norm-relative error max|x - y| / max|y| (absolute when y is all zero); a NaN/inf in x or y
 * gives +inf. */
double rh_relerr(const double *x, const double *y, int64_t n);
/* check's tolerance for a rel. error against the float64 reference at these dtypes: all f32
 * 1e-5, bf16 io only 1e-2, bf16 state or ring 2e-2 (testing/check.c says why). */
double rh_tolerance(rssm_dtype state, rssm_dtype ring, rssm_dtype io);
/* 1 when every element is finite. */
int rh_finite(const double *x, int64_t n);

/* ---- guarded device buffers ------------------------------------------------------------- */
typedef struct rh_buf {
    void *base;   /* allocation (guard, data, guard) */
    void *p;      /* data, 64-byte aligned */
    size_t bytes; /* data bytes */
} rh_buf;
int rh_buf_alloc(rssm_context *ctx, size_t bytes, rh_buf *b); /* data zeroed, guards set */
void rh_buf_free(rssm_context *ctx, rh_buf *b);
int rh_buf_put(rssm_context *ctx, rh_buf *b, const void *host); /* whole data */
int rh_buf_get(rssm_context *ctx, const rh_buf *b, void *host); /* whole data */
int rh_buf_guard_ok(rssm_context *ctx, const rh_buf *b, const char *what);
/* A buffer holding a host array (NULL host: no buffer, p NULL). */
int rh_buf_from(rssm_context *ctx, const void *host, size_t bytes, rh_buf *b);

/* ---- state of one layer ----------------------------------------------------------------- */
enum { RH_CKPT = 0, RH_RING_U, RH_RING_K, RH_RING_G, RH_RING_BASE, RH_CURSOR, RH_NT };
typedef struct rh_state {
    rssm_layer layer;
    int32_t slots;
    rh_buf t[RH_NT];
    rssm_state st;
} rh_state;
int rh_state_create(rssm_context *ctx, const rssm_layer *layer, int32_t slots, rh_state *s); /* zeroed */
void rh_state_free(rssm_context *ctx, rh_state *s);
int rh_state_guards_ok(rssm_context *ctx, const rh_state *s);
/* Raw bytes of every tensor. */
typedef struct rh_snap {
    uint8_t *t[RH_NT];
    size_t n[RH_NT];
} rh_snap;
int rh_snap_take(rssm_context *ctx, const rh_state *s, rh_snap *out);
int rh_snap_put(rssm_context *ctx, rh_state *s, const rh_snap *in);
void rh_snap_free(rh_snap *s);
/* Slot s of every tensor of a and b bitwise equal; 1 if so. */
int rh_snap_slot_equal(const rh_state *s, const rh_snap *a, const rh_snap *b, int slot);
/* Writes S [HV, V, K] as the checkpoint of `slot`, in the layer's state layout (empty ring: cursor 0,
 * ring_base 0). */
int rh_state_set(rssm_context *ctx, rh_state *s, int slot, const double *S);
/* Random content in every tensor of every slot (checkpoint normal*0.3; ring values; cursors
 * and bases consistent: cursor in [0, L-1], base 0); with `empty` cursor 0. */
int rh_state_randomize(rssm_context *ctx, rh_state *s, rh_rng *r, int empty);
/* The cursors of all slots (host copy). */
int rh_state_cursors(rssm_context *ctx, const rh_state *s, int32_t *cursor);
/* The materialised state of `n` slots (rssm_materialize into a fresh state):
 * out [n, HV, V, K] as double. */
int rh_materialized(rssm_context *ctx, const rh_state *s, int n, const int32_t *slot, double *out);
/* Checkpoint of slots [n] as double [n, HV, V, K] (the state itself for packed decode), whatever
 * the layer's state layout. */
int rh_checkpoint(rssm_context *ctx, const rh_state *s, int n, const int32_t *slot, double *out);

/* ---- per-step inputs -------------------------------------------------------------------- */
typedef struct rh_inputs {
    int B, T, H, HV, K, V, gk;
    double *q, *k;  /* [B, T, H, K] */
    double *v;      /* [B, T, HV, V] */
    double *a;      /* [B, T, HV, gk] (raw gates) */
    double *b;      /* [B, T, HV] */
    float *g;       /* [B, T, HV, gk] precomputed, or NULL (then a, b, A_log, dt_bias) */
    float *beta;    /* [B, T, HV] */
    float *A_log;   /* [HV] */
    float *dt_bias; /* [HV, gk] */
    /* ragged prefill (rh_inputs_ragged): [B + 1] row offsets; the token arrays then hold
     * cu_seqlens[B] tokens, row b's at cu_seqlens[b] + t, and T is the longest row; else NULL */
    int32_t *cu_seqlens;
    int fold_every; /* replay decode: io.fold_every (every row folds, its ring empty: small-batch steps) */
} rh_inputs;
int rh_inputs_alloc(rh_inputs *in, const rssm_layer *l, int B, int T, int precomputed);
void rh_inputs_free(rh_inputs *in);
/* Realistic random inputs: q, k, v normal; raw gates with g in about [-20, 0) and beta
 * over (0, 1) (or the safe gate when layer.has_lower_bound); precomputed g log-uniform in
 * [-20, -1e-3], beta uniform. */
void rh_inputs_random(rh_inputs *in, const rssm_layer *l, rh_rng *r);
/* Clamps every gate so that g >= gmin (raw a lowered, or g raised): keeps a KDA verify window's
 * own decay above -80, the documented precondition of rssm_verify. */
void rh_inputs_bound_gates(rh_inputs *in, const rssm_layer *l, double gmin);
/* Tokens [t0, t0 + T) of `full` (same rows) into a new `out`. */
int rh_inputs_slice(const rh_inputs *full, int t0, int T, rh_inputs *out);
/* The first len[b] tokens of each row of `full` as ragged rows (len[b] <= full->T; 0 for a
 * row makes it empty): out->cu_seqlens set, out->T = the longest row. */
int rh_inputs_ragged(const rh_inputs *full, const int32_t *len, rh_inputs *out);
/* Token (rs, ts) of src into token (rd, td) of dst (same layer shapes, same gate form). */
void rh_inputs_copy_token(const rh_inputs *src, int rs, int ts, rh_inputs *dst, int rd, int td);

/* ---- calls ------------------------------------------------------------------------------ */
/* One step op (packed, replay, verify, prefill) with outputs poisoned by NaN, the inputs in
 * guarded buffers (strided views when `strided`), guards checked after; o_out [B, T, HV, V]
 * as double (ragged prefill inputs: [cu_seqlens[B], HV, V]; may be NULL). */
int rh_step(rssm_context *ctx, rh_state *s, rh_op op, const rh_inputs *in, const int32_t *slot, const int32_t *wslot,
            const uint8_t *fold, int strided, double *o_out);
int rh_advance(rssm_context *ctx, rh_state *s, int B, const int32_t *slot, const uint8_t *fold);
int rh_commit(rssm_context *ctx, rh_state *s, int B, int T, const int32_t *slot, const uint8_t *fold,
              const int32_t *accepted);
int rh_reset(rssm_context *ctx, rh_state *s, int B, const int32_t *slot);
/* Ragged prefill against each row's own prefill, from the same random state (live rings) and
 * inputs: B rows of len[b] tokens on slot[b] (-1: padding) in one call with cu_seqlens, then
 * each live row alone (one row of len[b] tokens) from the initial state. *same = 1 when every
 * output and every tensor of each row's slot are the same bits, the padding rows' outputs are
 * zero and the slots no row names are untouched. slots: the state's slots (> every slot[b]). */
int rh_prefill_ragged_check(rssm_context *ctx, const rssm_layer *l, int B, const int32_t *slot, const int32_t *len,
                            int slots, uint64_t seed, int precomputed, int *same);

/* Context on a device (CPU: threads = 0 = all). RH_UNSUPPORTED when absent (rh_msg() says
 * why, as rh_context_error does). */
int rh_context(rssm_device dev, rssm_context **out);
/* The same with creation parameters (NULL = the defaults). */
int rh_context_with(rssm_device dev, const rssm_context_params *params, rssm_context **out);
const char *rh_device_name(rssm_device dev);
/* Why rssm_context_create(dev) failed with st, for a tool's message: "no CUDA device was found
 * (the library's reason)" where CUDA is unavailable (no back end in this build, or no GPU),
 * else "STATUS: the library's message". Call it right after the failing call. */
const char *rh_context_error(rssm_device dev, rssm_status st);
const char *rh_dtype_name(rssm_dtype dt);

#endif /* RSSM_HARNESS_H */
