/*
 * params.h — the parameter structs every back end receives, and the small maths shared by
 * C and CUDA (gates; the fold rules and bf16 conversion are replayssm.h's).
 *
 * The public call validates its arguments once, fills one of these structs, and hands it
 * unchanged to the reference, the CPU back end or the CUDA launcher (by value into kernels).
 */
#ifndef RSSM_PARAMS_H
#define RSSM_PARAMS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "replayssm.h"
#include "replayssm_runtime.h"

#ifdef __CUDACC__
#define RSSM_HD __host__ __device__ __forceinline__
#else
#define RSSM_HD static inline
#endif

/* Which op of the step family a params struct describes. */
typedef enum rssm_op {
    RSSM_OP_DECODE_PACKED = 0,
    RSSM_OP_DECODE_REPLAY,
    RSSM_OP_VERIFY,
    RSSM_OP_PREFILL,
} rssm_op;

/* Step family: packed decode, replay decode, verify, prefill. */
typedef struct rssm_params {
    rssm_op op;
    rssm_layer layer; /* validated; scale and fold_threshold resolved (never 0) */
    rssm_state state;
    rssm_step_io io; /* strides resolved (never 0) */
    int32_t group;   /* HV / H */
    int32_t gk;      /* entries of one G: 1 (GDN) or K (KDA) */
} rssm_params;

/* Materialise: fold src rings into dst checkpoints. */
typedef struct rssm_materialize_params {
    rssm_layer layer;
    rssm_state src, dst;
    int32_t batch;
    const int32_t *src_slot; /* [B] */
    const int32_t *dst_slot; /* [B] */
    int32_t group, gk;
} rssm_materialize_params;

/* Cursor moves: advance after decode, commit after verify, reset. */
typedef enum rssm_cursor_op { RSSM_CURSOR_ADVANCE = 0, RSSM_CURSOR_COMMIT, RSSM_CURSOR_RESET } rssm_cursor_op;

typedef struct rssm_cursor_params {
    rssm_cursor_op op;
    int32_t ring_len; /* L */
    int32_t batch, tokens;
    int32_t num_slots;
    int32_t *cursor;         /* [slots] */
    const int32_t *slot;     /* [B] */
    const uint8_t *fold;     /* [B] or NULL */
    const int32_t *accepted; /* [B], commit only */
} rssm_cursor_params;

/* One layer of a pool as the planner's drain reads it (a device table, rssm_plan_create). */
typedef struct rssm_plan_layer {
    rssm_layer layer; /* as the pool holds it */
    rssm_state state;
    int32_t group; /* HV / H */
} rssm_plan_layer;

/* The step planner's per-row kernels (src/runtime/plan.c; rules in runtime/plan_rules.h):
 *   fold:  fold[b] = rssm_rt_fold_rule(slot[b], n_slots, seq_len[b], mode, track, *every)
 *   seq:   seq_len[b] += 1 (decode) or accepted[b] (verify); padding rows unchanged
 *   drain: (a small-batch decode step) every live row's ring entries folded into its
 *          checkpoint in every layer, its ring bases and cursor set to 0, fold[b] as the fold
 *          rule with every = 1. */
typedef struct rssm_plan_params {
    int32_t batch, n_slots;
    int32_t mode;            /* 0 decode, 1 verify */
    int32_t track;           /* prefix-snapshot interval, 0 = none */
    const int32_t *slot;     /* [B] */
    int32_t *seq_len;        /* [B] */
    const int32_t *every;    /* [1]: the step folds every live row (decode) */
    uint8_t *fold;           /* [B] */
    const int32_t *accepted; /* [B], verify only; NULL = 1 per row */
    /* drain only */
    const rssm_plan_layer *layers; /* [n_layers], device */
    int32_t n_layers, max_heads;   /* the most value heads of a layer */
    int32_t ring_bytes;            /* the most bytes of one head's ring k (or u) in a layer */
    int32_t *arrived;              /* [1]: the drain's arrival counter, 0 between launches */
} rssm_plan_params;

/* ---- gates (float64 versions for the reference; float versions for back ends) -------- */

/* softplus with threshold 20, as in FLA/PyTorch: x > 20 -> x. */
RSSM_HD double rssm_softplus_f64(double x) { return x > 20.0 ? x : log1p(exp(x)); }
RSSM_HD double rssm_sigmoid_f64(double x) { return 1.0 / (1.0 + exp(-x)); }

RSSM_HD float rssm_softplus_f32(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
RSSM_HD float rssm_sigmoid_f32(float x) { return 1.0f / (1.0f + expf(-x)); }

/* The log-gate of one channel from raw inputs:
 *   plain: g = -exp(A_log) * softplus(a + dt_bias)
 *   safe (KDA with lower bound): g = lower_bound * sigmoid(exp(A_log) * (a + dt_bias)) */
RSSM_HD double rssm_gate_f64(double a, double A_log, double dt_bias, int safe, double lower_bound)
{
    if (safe) return lower_bound * rssm_sigmoid_f64(exp(A_log) * (a + dt_bias));
    return -exp(A_log) * rssm_softplus_f64(a + dt_bias);
}

RSSM_HD float rssm_gate_f32(float a, float A_log, float dt_bias, int safe, float lower_bound)
{
    if (safe) return lower_bound * rssm_sigmoid_f32(expf(A_log) * (a + dt_bias));
    return -expf(A_log) * rssm_softplus_f32(a + dt_bias);
}

/* L2-normalisation epsilon (inside the square root), as FLA. */
#define RSSM_L2NORM_EPS 1e-6

/* ---- KDA verify windows of any decay ----------------------------------------------------
 * A KDA window stores its entries' keys pre-decayed, k e^{-G}, with G counted from the head's
 * checkpoint; a window whose own decay passes -G_MAX starts with the head's fold, so from 0. A
 * decay past about -88 nats in one channel would overflow float32 (and bf16). So in a channel
 * whose window decays by more than RSSM_KDA_WINDOW_DECAY (the sum of its log-gates' negative
 * parts) the window's log-gates are clamped at the level F where that sum becomes exactly
 * -RSSM_KDA_WINDOW_DECAY (water filling: only gates below F change, to F), and the head folds
 * at the start of the window. A clamped gate lets e^F of what it multiplies through instead of
 * less. F <= -DECAY / T always (2e-9 for windows of up to 4 tokens, below float32's resolution
 * 2^-24 = e^{-16.6}), and far lower when few tokens carry the decay: one spike in an 8-token
 * window of ordinary gates leaves F near -80 + the others' decay. float64 rings (the reference
 * device) take RSSM_KDA_WINDOW_DECAY_F64. */
#define RSSM_KDA_WINDOW_DECAY 80.0f
#define RSSM_KDA_WINDOW_DECAY_F64 600.0f

/* The clamp level of one channel of a KDA verify window into `out`, GATE(t) its log-gate of token
 * t < T: -inf when their negative parts sum to -decay or more, else F with sum_t min(0, max(g_t,
 * F)) = -decay, by Newton steps from -decay / T (the sum is convex and piecewise linear in F, so
 * the steps stay above the root and reach it in at most T). NaN gates count as 0 here and stay
 * NaN. A macro over the gate's source (an expression in the loop variable t), so that every
 * device runs this one definition where its gates are: an array, shared memory, or read per use. */
#define RSSM_KDA_WINDOW_LEVEL(GATE, T, decay, out)                                                                     \
    do {                                                                                                               \
        float sum_ = 0.0f;                                                                                             \
        for (int t = 0; t < (T); t++) {                                                                                \
            const float g_ = (GATE);                                                                                   \
            sum_ += g_ < 0.0f ? g_ : 0.0f;                                                                             \
        }                                                                                                              \
        float F_ = -INFINITY;                                                                                          \
        if (sum_ < -(decay)) {                                                                                         \
            F_ = -(decay) / (T);                                                                                       \
            for (int it_ = 0; it_ < (T); it_++) {                                                                      \
                float above_ = 0.0f;                                                                                   \
                int below_ = 0;                                                                                        \
                for (int t = 0; t < (T); t++) {                                                                        \
                    const float g_ = (GATE), n_ = g_ < 0.0f ? g_ : 0.0f;                                               \
                    if (n_ < F_)                                                                                       \
                        below_++;                                                                                      \
                    else                                                                                               \
                        above_ += n_;                                                                                  \
                }                                                                                                      \
                const float next_ = (-(decay)-above_) / below_;                                                        \
                if (!(next_ < F_)) break;                                                                              \
                F_ = next_;                                                                                            \
            }                                                                                                          \
        }                                                                                                              \
        (out) = F_;                                                                                                    \
    } while (0)

/* The level of gates g[t * stride]. */
RSSM_HD float rssm_kda_window_level(const float *g, int stride, int T, float decay)
{
    float F;
    RSSM_KDA_WINDOW_LEVEL(g[t * stride], T, decay, F);
    return F;
}

/* The window decay of a layer: its stored keys' dtype decides. */
RSSM_HD float rssm_kda_window_decay(const rssm_layer *l)
{
    return l->ring_dtype == RSSM_DTYPE_F64 ? RSSM_KDA_WINDOW_DECAY_F64 : RSSM_KDA_WINDOW_DECAY;
}

/* A log-gate under a window's clamp level (NaN stays NaN). */
RSSM_HD float rssm_kda_clamp(float g, float level) { return g < level ? level : g; }

/* Default early-fold threshold G_MAX (both gates). */
#define RSSM_DEFAULT_FOLD_THRESHOLD 60.0f

/* ---- the gate floor of replay's arithmetic ---------------------------------------------
 * Replay, verify and their folds clamp every per-token log-gate below the floor to the floor
 * before it enters a cumulative G: e^{floor} is exactly 0 in the arithmetic that uses it, so
 * the clamp changes no decay (e^g = 0 = e^{floor} for g < floor; a gate above it is kept as
 * is), but G stays finite: no -inf - (-inf) = NaN, no overflow of a running sum.
 *   float32 (CPU, CUDA): expf(-110) = 0 (the smallest float32 subnormal is e^{-103.28}, and
 *     anything below half of it, e^{-103.97}, rounds to 0), so replay at L = 1 (e^{floor})
 *     still equals packed decode (e^{g}) bit for bit.
 *   float64 (the reference): exp(-1000) = 0 (the smallest double subnormal is e^{-744.44}).
 * Packed decode and prefill keep the raw gate. A NaN gate is not a clamped one: it stays NaN,
 * as in packed decode. */
#define RSSM_GATE_FLOOR_F32 (-110.0f)
#define RSSM_GATE_FLOOR_F64 (-1000.0)

RSSM_HD float rssm_gate_floor_f32(float g) { return g < RSSM_GATE_FLOOR_F32 ? RSSM_GATE_FLOOR_F32 : g; }
RSSM_HD double rssm_gate_floor_f64(double g) { return g < RSSM_GATE_FLOOR_F64 ? RSSM_GATE_FLOOR_F64 : g; }

#endif /* RSSM_PARAMS_H */
