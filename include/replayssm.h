/*
 * replayssm.h — the stable public interface of replayssm: contexts, layers, state tensors,
 * the kernel-level ops, statuses and the version. The runtime (state pool, step planner,
 * prefix cache, sharding, export/import) is in replayssm_runtime.h.
 *
 * ReplaySSM decode for linear-attention layers (Gated DeltaNet, Kimi Delta Attention):
 * keep a checkpoint S0 plus a ring of the last steps' (k, u, G), rebuild what a step
 * needs on the fly, and write the full state only when the ring is folded.
 * The maths and the byte model are in docs/design.md (copied from the design reference).
 *
 * Conventions
 *  - Every call returns an rssm_status. On failure nothing was changed and
 *    rssm_last_error() (per thread) holds a sentence saying what was wrong.
 *  - The library never prints, exits or aborts on caller input.
 *  - Kernel-level calls work on caller-owned memory: raw pointers into tensors with the
 *    layouts documented below (row-major, last dimension contiguous). On the CUDA device
 *    every pointer is device memory and the call is enqueued on the caller's stream; it
 *    allocates nothing, synchronises nothing and reads nothing back, so it can be captured
 *    in a CUDA graph. On the CPU device the stream argument is ignored and the call
 *    returns when the work is done.
 *  - Every pointer (tensors and the slot, fold and accepted arrays) must be aligned to
 *    16 bytes (RSSM_ERROR_MISALIGNED otherwise).
 *  - Calls on one context from several host threads take turns (a lock per context: the CPU
 *    back end's scratch belongs to the context), so they are safe but not concurrent; for
 *    parallel host work create one context per thread. Pools, planners and prefix caches are
 *    owned by one host thread each (replayssm_runtime.h).
 *  - Every function declared with RSSM_API is exported from the shared library; nothing else is.
 *  - A row whose slot index is -1 is padding: its output is zero and it touches no state,
 *    ring or cursor.
 *
 * Shapes: H key heads, HV value heads (HV % H == 0, group = HV / H; value head hv reads
 * key head hv / group), head dims K (keys) and V (values), ring length L, B rows, T tokens.
 */
#ifndef REPLAYSSM_H
#define REPLAYSSM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RSSM_API __attribute__((visibility("default")))
#else
#define RSSM_API
#endif

/* Host and device inline helpers below compile as __host__ __device__ under nvcc. */
#ifdef __CUDACC__
#define RSSM_INLINE __host__ __device__ __forceinline__
#else
#define RSSM_INLINE static inline
#endif

/* RSSM_VERSION_MAJOR, _MINOR, _PATCH, written by the build from its one version number. */
#include "replayssm_version.h"
#define RSSM_VERSION_NUMBER (RSSM_VERSION_MAJOR * 10000 + RSSM_VERSION_MINOR * 100 + RSSM_VERSION_PATCH)

/* Runtime version: RSSM_VERSION_NUMBER of the library actually linked. */
RSSM_API unsigned rssm_version_number(void);
/* "major.minor.patch" of the library actually linked. */
RSSM_API const char *rssm_version_string(void);

/* ------------------------------------------------------------------------------------ */
/* Errors                                                                                 */

typedef enum rssm_status {
    RSSM_OK = 0,
    RSSM_ERROR_NULL_POINTER,  /* a required pointer is NULL */
    RSSM_ERROR_BAD_SHAPE,     /* head counts, dims, batch or token count out of range */
    RSSM_ERROR_BAD_DTYPE,     /* dtype unknown or not supported by this device/op */
    RSSM_ERROR_BAD_SLOT,      /* a slot index outside [-1, num_slots) */
    RSSM_ERROR_BAD_RING_LEN,  /* ring length < 1 or > RSSM_MAX_RING_LEN */
    RSSM_ERROR_BAD_TOKENS,    /* T < 1, T > L for verify, or accepted count outside [0, T] */
    RSSM_ERROR_MISALIGNED,    /* a pointer not aligned to 16 bytes */
    RSSM_ERROR_BAD_ARGUMENT,  /* any other invalid value (gate kind, scale, threshold) */
    RSSM_ERROR_UNSUPPORTED,   /* a valid request this device cannot do (e.g. CUDA absent) */
    RSSM_ERROR_DEVICE,        /* the device reported an error (CUDA error string in message) */
    RSSM_ERROR_OUT_OF_MEMORY, /* an allocation failed */
    RSSM_ERROR_POOL_FULL,     /* runtime: no free slot left; nothing changed */
    RSSM_ERROR_BAD_FORMAT,    /* runtime: import of a blob with wrong magic, version or shape */
    RSSM_ERROR_CHECKSUM,      /* runtime: import of a blob whose checksum does not match */
    RSSM_ERROR_NOT_FOUND,     /* runtime: a slot or entry that is not held */
    RSSM_STATUS_COUNT
} rssm_status;

/* Stable name of a status, e.g. "RSSM_ERROR_BAD_SLOT". Never NULL. */
RSSM_API const char *rssm_status_name(rssm_status status);
/* The message of the last failing call on this thread ("" when none). Never NULL. */
RSSM_API const char *rssm_last_error(void);

/* ------------------------------------------------------------------------------------ */
/* Devices                                                                                */

typedef enum rssm_device {
    RSSM_DEVICE_CPU = 0,       /* optimised CPU back end: threads + SIMD */
    RSSM_DEVICE_CUDA = 1,      /* CUDA back end (sm_90); RSSM_ERROR_UNSUPPORTED when not built */
    RSSM_DEVICE_REFERENCE = 2, /* float64 plain loops, single thread, host memory: the oracle */
} rssm_device;

typedef struct rssm_context rssm_context;

/* How a context is created. Start from rssm_context_params_default() and change what is
 * needed. The tuning switches exist to reproduce measured comparisons (bench/results); their
 * defaults are the measured best, and no switch changes a result's bits except where noted. */
typedef struct rssm_context_params {
    int32_t device_ordinal;          /* CUDA: which GPU (default 0) */
    int32_t threads;                 /* CPU: worker threads, 0 = every online core (default 0) */
    int32_t cpu_simd;                /* CPU: 1 = the SIMD kernels where the processor has them (default), 0 = the
                                        portable ones (other rounding of the dot products' partial sums) */
    int32_t cuda_fast;               /* CUDA: 1 = the K = V = 128 kernels where they apply (default), 0 = the general
                                        kernel everywhere */
    int32_t cuda_split;              /* CUDA fast kernels: CTAs per head, 1, 2 or 4; 0 = by batch size (default) */
    int32_t cuda_prefetch;           /* CUDA fast kernels: L2 prefetch distance in half waves (a wave: the
                                        CTAs all SMs hold at once), 0 (off) to 4; -1 = by mode and grid size
                                        (default: 1, 0 for replay below the pipeline's grids) */
    int32_t cuda_ring_read;          /* CUDA fast kernels: read the whole ring without waiting for the cursor:
                                        -1 = by mode and grid size (default), 0 = never, 1 = always */
    int32_t cuda_pipeline;           /* CUDA replay and packed decode on the persistent pipeline: -1 = by mode,
                                        gate, state dtype, layout and grid size (default: replay GDN from 2.75
                                        heads per SM, 3.75 with a bf16 state, KDA from 11.5, 6 with a bf16
                                        state, an f32 state's only up to 12.5 (GDN) or 7.5 (KDA) on a GPU
                                        with under 30 GB/s of DRAM per SM, as an H100; packed of a V-first
                                        state never; a K-first state's replay and
                                        packed decode from the batches measured faster there), 0 = never,
                                        1 = wherever it applies
                                        (also verify windows of 3-4 tokens on a V-first state, which the
                                        default keeps on the per-head kernel: the verify pipeline is slower) */
    int32_t cuda_pipeline_balance;   /* the pipeline deals folding rows first: -1 = where a CTA has at most
                                        40 heads (GDN, f32 state), 32 (bf16 state) or 16 (KDA) (default),
                                        0 = plain round robin, 1 = always */
    int32_t cuda_pipeline_producers; /* the pipeline's warps that read ahead for the others, 1 to 3 (at most
                                        its stages); -1 = by grid size (default). Same bits either way. */
    int32_t cuda_prefill;            /* CUDA prefill: -1 = chunks of 16 tokens, wide lanes whole or sliced by grid size
                                        (default); 0 = one token at a time; 1 = chunks on narrow lanes; 2 / 3 = chunks
                                        on wide lanes, whole heads / 32-row slices. All give the same bits. */
    int32_t cuda_pdl;                /* CUDA fast kernels: programmatic dependent launch (a step kernel may start
                                        while the kernel before it on the stream finishes, and reads nothing that
                                        kernel may write until it has finished): -1 = by mode and grid size
                                        (default), 0 = never, 1 = always; 2 / 3 = always, the per-head kernel
                                        letting the next grid launch after the token's preparation / before its
                                        rows' arithmetic rather than at once. Same bits either way. */
    int32_t cuda_stream;             /* CUDA packed decode (K = V = 128, V-first state) streamed a row at a time by
                                        warps of 4, 8, 16 or 32 rows instead of the per-head kernel: -1 = by state
                                        dtype, gate and grid size (default: with a bf16 state from 5.75 heads per SM,
                                        GDN, or 7.5, KDA, and where its grid fills most of one wave), 0 = never,
                                        4 / 8 / 16 / 32 = wherever the per-head kernel would run it (cuda_fast, not
                                        on the pipeline), with that many rows per warp. Same bits either way. */
    const char *pipeline_trace_file; /* diagnostic builds (RSSM_PIPE_TRACE) only: CSV of the replay
                                        pipeline's last launch, written when the context is freed
                                        (the string must live as long as the context) */
} rssm_context_params;

/* The defaults above. */
RSSM_API rssm_context_params rssm_context_params_default(void);
/* Creates a context on a device; `params` NULL means the defaults. RSSM_ERROR_UNSUPPORTED for
 * CUDA when the back end is not built or no sm_90 device is present; RSSM_ERROR_BAD_ARGUMENT
 * for a switch out of its range. */
RSSM_API rssm_status rssm_context_create(rssm_device device, const rssm_context_params *params, rssm_context **out);
/* Frees a context; accepts NULL. */
RSSM_API void rssm_context_free(rssm_context *ctx);
RSSM_API rssm_device rssm_context_device(const rssm_context *ctx);

typedef struct rssm_context_info {
    rssm_device device;
    int32_t device_ordinal;  /* CUDA: the GPU; 0 elsewhere */
    int32_t threads;         /* CPU: worker threads; 1 elsewhere */
    int32_t multiprocessors; /* CUDA: streaming multiprocessors of the GPU; 0 elsewhere */
} rssm_context_info;
RSSM_API rssm_status rssm_context_get_info(const rssm_context *ctx, rssm_context_info *out);

/* 1 when the CUDA back end was compiled in and a device is present, else 0. */
RSSM_API int rssm_cuda_available(void);
/* CUDA only: slot indices can live in device memory, so they are bounds-checked in the
 * kernels: an out-of-range row is treated as padding and counted. This call synchronises
 * the context's device, returns RSSM_ERROR_BAD_SLOT if any such row was seen since the
 * last call (and clears the count), RSSM_OK otherwise. On CPU/reference, slots are
 * checked on the host before any work and this returns RSSM_OK. Not for the hot path. */
RSSM_API rssm_status rssm_context_check_device_errors(rssm_context *ctx);

/* ---- memory of a context's device ----
 * For programs without an allocator of their own (tools, tests, C engines): device memory on
 * CUDA contexts (cudaMalloc), 64-byte aligned host memory on CPU and reference contexts, zeroed
 * either way (large host blocks are committed page by page as they are touched); more than the
 * machine's physical memory is RSSM_ERROR_OUT_OF_MEMORY at once. On CUDA the copies and sets
 * run on the context's own stream (rssm_context_stream) and return when they are done: they
 * follow the work enqueued on that stream, not work on other streams (synchronise those first).
 * Engines with their own memory and streams need none of it. */
typedef enum rssm_copy_kind {
    RSSM_COPY_HOST_TO_DEVICE = 0,
    RSSM_COPY_DEVICE_TO_HOST = 1,
    RSSM_COPY_DEVICE_TO_DEVICE = 2,
} rssm_copy_kind;
RSSM_API rssm_status rssm_mem_alloc(rssm_context *ctx, size_t bytes, void **out);
/* Accepts NULL. */
RSSM_API void rssm_mem_free(rssm_context *ctx, void *ptr);
RSSM_API rssm_status rssm_mem_copy(rssm_context *ctx, void *dst, const void *src, size_t bytes, rssm_copy_kind kind);
RSSM_API rssm_status rssm_mem_set(rssm_context *ctx, void *dst, int byte, size_t bytes);
/* Waits for the work enqueued on the context's own stream (CUDA; host contexts: nothing to wait
 * for). Work the caller enqueued on other streams is the caller's to wait for. */
RSSM_API rssm_status rssm_context_synchronize(rssm_context *ctx);
/* The context's own CUDA stream (cudaStream_t as void*; its pool and planner work runs there),
 * for callers without a stream of their own. NULL on host contexts. */
RSSM_API void *rssm_context_stream(rssm_context *ctx);

/* ------------------------------------------------------------------------------------ */
/* Layer shape                                                                            */

typedef enum rssm_dtype {
    RSSM_DTYPE_F32 = 0,
    RSSM_DTYPE_BF16 = 1,
    RSSM_DTYPE_F64 = 2, /* reference device only (the float64 oracle) */
} rssm_dtype;

typedef enum rssm_gate {
    RSSM_GATE_GDN = 0, /* scalar log-gate per value head  */
    RSSM_GATE_KDA = 1, /* log-gate per key channel, per value head */
} rssm_gate;

/* Element order of each head's state in the checkpoint (the layer's state_layout). */
typedef enum rssm_state_layout {
    RSSM_LAYOUT_VK = 0, /* [V, K], K contiguous: vLLM, SGLang, FlashInfer, ggml (the default) */
    RSSM_LAYOUT_KV = 1, /* [K, V], V contiguous: FLA, transformers */
} rssm_state_layout;

#define RSSM_MAX_HEAD_DIM 256
#define RSSM_MAX_RING_LEN 64

typedef struct rssm_layer {
    int32_t num_k_heads; /* H  */
    int32_t num_v_heads; /* HV, a multiple of H */
    int32_t head_k_dim;  /* K, 1..RSSM_MAX_HEAD_DIM */
    int32_t head_v_dim;  /* V, 1..RSSM_MAX_HEAD_DIM */
    rssm_gate gate;
    int32_t ring_len;               /* L, 1..RSSM_MAX_RING_LEN */
    rssm_dtype state_dtype;         /* checkpoint */
    rssm_dtype ring_dtype;          /* ring u and k (ring G is always f32, or f64 on the reference) */
    rssm_dtype io_dtype;            /* q, k, v, a, b and the output o */
    float scale;                    /* applied to q after normalisation; 0 means K^-0.5 */
    int32_t qk_l2norm;              /* 1: q and k are L2-normalised inside: x / sqrt(sum x^2 + 1e-6) */
    int32_t has_lower_bound;        /* KDA only: 1 selects the safe gate below */
    float lower_bound;              /* KDA safe gate: g = lower_bound * sigmoid(exp(A_log) * (a + dt_bias)) */
    float fold_threshold;           /* G_MAX of the per-head early folds (both gates): 0 means 60, else (0, 80] */
    rssm_state_layout state_layout; /* the checkpoint's element order; every op and device takes both, with the
                                       same bits */
} rssm_layer;

/* A layer with the common defaults filled in (scale 0 = K^-0.5, l2norm on, dtypes f32, V-first state). */
RSSM_API rssm_layer rssm_layer_default(rssm_gate gate, int32_t H, int32_t HV, int32_t K, int32_t V, int32_t L);
/* Validates a layer description; RSSM_OK or the reason. */
RSSM_API rssm_status rssm_layer_validate(const rssm_layer *layer);
/* Size in bytes of one dtype element (f32 4, bf16 2, f64 8). */
RSSM_API size_t rssm_dtype_size(rssm_dtype dtype);

/* ------------------------------------------------------------------------------------ */
/* State tensors of one layer                                                             */
/*
 * checkpoint  [slots, HV, V, K]   state dtype     S0 of each slot and value head (K contiguous);
 *             [slots, HV, K, V]                   with layer.state_layout RSSM_LAYOUT_KV (V contiguous)
 * ring_u      [slots, HV, L, V]   ring dtype      u_i = beta_i (v_i - S_{i-1} diag(alpha_i) k_i)
 * ring_k      GDN [slots, H, L, K]  ring dtype    normalised k_i, shared by the key head's group
 *             KDA [slots, HV, L, K] ring dtype    pre-decayed key k~_i = k_i * exp(-G_i)
 * ring_g      GDN [slots, HV, L]    f32           G_i, cumulative log-gate since the head's checkpoint
 *             KDA [slots, HV, L, K] f32           G_i per key channel
 * ring_base   [slots, HV]           i32           entries of the shared cursor already folded
 *                                                 into this head's checkpoint (both gates)
 * cursor      [slots]               i32           committed entries since the last shared fold;
 *                                                 shared by all layers, moved by rssm_advance and
 *                                                 rssm_commit once per forward.
 *
 * Ring positions (c = cursor, base = ring_base of the head, 0 <= base <= c <= L): the entry of
 * the token committed when the cursor went from p to p+1 (base <= p < c are a head's live
 * entries) is at position
 *   GDN  p         (absolute: ring_k is shared by the value heads of a key head, whose bases
 *                   may differ; a head's live entries are positions base .. c - 1)
 *   KDA  p - base  (relative: a head's live entries are positions 0 .. c - base - 1).
 * G_i is cumulative since the head's own checkpoint: it restarts at 0 after a fold, an early
 * fold of that head included. New entries go to the positions of their cursor values by the
 * same rule (after a shared start fold the cursor values start again from 0, base 0).
 * For packed decode only `checkpoint` is used (it is then simply the state).
 * On the reference device every dtype may also be RSSM_DTYPE_F64 and ring_g is double.
 */
/* Bytes of each state tensor for `num_slots` slots (for sizing caller-owned memory). */
typedef struct rssm_state_bytes {
    size_t checkpoint, ring_u, ring_k, ring_g, ring_base, cursor, total;
} rssm_state_bytes;
RSSM_API rssm_status rssm_state_size(const rssm_layer *layer, int32_t num_slots, rssm_state_bytes *out);

/* `bytes`: how many bytes lie behind each pointer (`total` is not read). Every call checks the
 * tensors it uses against what rssm_state_size gives for the layer and num_slots, and refuses a
 * smaller one with RSSM_ERROR_BAD_SHAPE (a state allocated for another layer shape or fewer
 * slots), before anything runs. Filling it from rssm_state_size where the memory was sized by it
 * is the usual way: rssm_state_size(&layer, n, &st.bytes). */
typedef struct rssm_state {
    int32_t num_slots;
    void *checkpoint;
    void *ring_u;
    void *ring_k;
    void *ring_g;
    int32_t *ring_base;
    int32_t *cursor;
    rssm_state_bytes bytes;
} rssm_state;

/* ------------------------------------------------------------------------------------ */
/* Per-step inputs and outputs                                                            */
/*
 * Per token (row b, token t):
 *   q, k   [B, T, H, K]   io dtype   raw (normalised inside when qk_l2norm)
 *   v      [B, T, HV, V]  io dtype
 *   gates, either raw:
 *     a    GDN [B, T, HV]; KDA [B, T, HV, K]   io dtype
 *     b    [B, T, HV]                           io dtype    beta = sigmoid(b)
 *     A_log [HV] f32;  dt_bias GDN [HV], KDA [HV, K] f32
 *       GDN g = -exp(A_log) * softplus(a + dt_bias)     (softplus threshold 20)
 *       KDA g likewise per channel, or the safe gate when layer.has_lower_bound
 *   or precomputed (as FLA's kernels take them; used when `g` is not NULL):
 *     g    GDN [B, T, HV]; KDA [B, T, HV, K]   f32   log-gate (<= 0)
 *     beta [B, T, HV]                           f32
 *   With the f64 io dtype (the reference device) g and beta are double as well.
 *   Gates outside (-inf, 0] get one behaviour in packed and replay decode on every device: a
 *   log-gate above 0 is applied as given (the state grows by e^g); a NaN makes that head's
 *   outputs and state NaN from its token on, as the recurrence does.
 *   o      [B, T, HV, V]  io dtype   output (written for every row; zero for padding rows)
 * Strides: q_stride, k_stride, v_stride, a_stride, b_stride, g_stride, beta_stride are the
 * element distance between consecutive tokens (b, t) -> (b, t+1) and (b, T-1) -> (b+1, 0); 0
 * means packed (H*K, H*K, HV*V, HV or HV*K, HV, HV or HV*K, HV). This lets a fused qkv projection
 * (and gates computed in one tensor) be passed as views. Strides of 16-byte vectors (q, k, v, a,
 * KDA's g) are multiples of 16 bytes.
 * On the reference device with io dtype f64 the pointers are double.
 *
 * slot     [B] i32   the state slot of each row, or -1 for padding
 * write_slot [B] i32 packed decode only: where the new state goes (NULL = same as slot);
 *                    a copy-on-write step reads `slot` and writes `write_slot`
 * fold     [B] u8    optional forced fold (NULL = none). decode: fold at the end of the step
 *                    (the checkpoint then includes this token; used for prefix snapshots).
 *                    verify: fold the committed entries at the start of the step.
 * fold_every  0 or 1 replay decode: 1 says every row with a slot folds (fold[b] != 0) and
 *                    its ring is empty (cursor 0), as rssm_plan_begin leaves the rows of a
 *                    small-batch step where rssm_plan_io sets it (rssm_plan_set_small_batch).
 *                    CUDA's K = V = 128 kernels then run packed decode's kernel. A row found
 *                    otherwise is refused: host devices fail the call (RSSM_ERROR_BAD_ARGUMENT)
 *                    before any work; on CUDA the row gets a zero output and a device error,
 *                    and nothing of its state is written.
 */
typedef struct rssm_step_io {
    int32_t batch;  /* B */
    int32_t tokens; /* T */
    const void *q, *k, *v, *a, *b;
    const float *A_log, *dt_bias;
    const float *g, *beta;
    int64_t q_stride, k_stride, v_stride, a_stride, b_stride;
    void *o;
    const int32_t *slot;
    const int32_t *write_slot;
    const uint8_t *fold;
    /* prefill only (NULL for the other ops): ragged rows, as FLA's cu_seqlens. Row b has the
     * n_b = cu_seqlens[b+1] - cu_seqlens[b] tokens at token indices cu_seqlens[b] + t of q, k,
     * v, a, b, g, beta and o, which hold cu_seqlens[batch] tokens ([batch + 1] entries,
     * cu_seqlens[0] = 0, 1 <= n_b <= tokens for a row with a slot, 0 <= n_b <= tokens for a
     * padding row, which zeroes its n_b outputs). NULL: every row has `tokens` tokens at
     * b * tokens + t. Host devices check it; on CUDA it lives in device memory and a row whose
     * range is not inside [0, cu_seqlens[batch]] (or a bad cu_seqlens[0] or total) is skipped
     * and counted as a device error. */
    const int32_t *cu_seqlens;
    int32_t fold_every;
    int64_t g_stride, beta_stride; /* token strides of g and beta (0 = packed), as above */
} rssm_step_io;

/* ------------------------------------------------------------------------------------ */
/* Kernel-level operations (one layer)                                                    */
/*
 * All take the context, the layer, the layer's state tensors, and a stream (cudaStream_t
 * as void*, NULL = default stream; ignored on CPU/reference).
 *
 * Fold rules (shared by all layers so that one cursor serves them; c = cursor[slot]):
 *   decode: start fold if c + 1 > L (only after a verify left the ring full);
 *           end fold if (entries after the step) == L or fold[b].
 *   verify: start fold if c + T > L or fold[b].
 * Both gates add per-head early folds that only move that head's ring_base (G_MAX =
 * layer.fold_threshold; min_k over the K channels for KDA, the one G for GDN):
 *   decode: end fold when min_k G_n < -G_MAX and the shared rule does not fold: the new entry
 *           is folded into the head's checkpoint, never stored, and base = the cursor after
 *           the step (c + 1, or 1 after a start fold); the shared end fold wins when the ring
 *           fills (base = 0);
 *   verify: start fold when min_k (G_c + window sum of g) < -G_MAX (G_c: the last G of the
 *           head's live entries; only a head with live entries): the committed entries are
 *           folded, base = c, and the window's G restart at 0.
 * Replay, verify and their folds clamp each per-token log-gate g below a floor (float32: -110,
 * float64: -1000) to the floor before it enters G. The floor's exponential is exactly 0 in the
 * arithmetic used, so no decay changes (and replay at L = 1 still equals packed decode), yet
 * no G is ever infinite: g = -inf, a running sum that would overflow, or -exp(A_log)
 * softplus(..) overflowing to -inf leave replay finite, and decode needs no bound on the gate.
 * What remains is the cancellation of float32 G values in e^{G_n - G_i}: stored G never pass
 * -G_MAX in decode (a weight's relative error stays below about (entries) G_MAX 2^-24), and
 * inside one verify window whose own decay passes -G_MAX (the window's entries are not folded
 * before the commit) a later token's weights carry about |G_t| 2^-24 per token, |G_t| up to
 * G_MAX + T |floor|.
 * KDA verify windows of any decay are taken on every device. Pre-decayed keys k e^{-G} would
 * overflow float32 past about -88, so in a channel whose window decays by more than 80 nats
 * (the sum of its log-gates' negative parts; float64 rings: 600) the window's gates are clamped
 * at the level F where it decays by exactly that much, and the head folds at the window's
 * start: a clamped gate lets e^F of what it multiplies through instead of less, F <= -80 / T
 * (2e-9 for T <= 4; far lower when one token carries the decay). GDN windows need no clamp.
 * Packed decode with write_slot: no row may write a slot that another row reads.
 * Every step: the rows' slots (padding -1 aside) are distinct; two rows on one slot would both
 * read and write it in the same launch (the device kernels do not detect this).
 */

/* The shared fold rules as code (c = cursor, T tokens, forced = fold[b]). */
/* 1 when a step of T tokens starts with a fold of the committed entries. */
RSSM_INLINE int32_t rssm_start_fold(int32_t cursor, int32_t tokens, int32_t L, int forced)
{
    return cursor + tokens > L || forced;
}
/* Cursor after a decode step (T = 1). */
RSSM_INLINE int32_t rssm_cursor_after_decode(int32_t c, int32_t L, int forced)
{
    c = (c + 1 > L ? 0 : c) + 1;
    return (c == L || forced) ? 0 : c;
}
/* Cursor after a verify of T tokens with `accepted` of them kept. */
RSSM_INLINE int32_t rssm_cursor_after_commit(int32_t c, int32_t T, int32_t L, int forced, int32_t accepted)
{
    return (c + T > L || forced ? 0 : c) + accepted;
}

/* Baseline: S = state[slot]; per token u = beta (v - S diag(alpha) k); S = S diag(alpha) + u k^T;
 * o = S q; state[write_slot] = S. T tokens in order (T >= 1). */
RSSM_API rssm_status rssm_decode_packed(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state,
                                        const rssm_step_io *io, void *stream);

/* ReplaySSM decode, T must be 1: reads the checkpoint and the live ring entries, writes the
 * new entry (u, k, G) at the position of cursor value c (see the state tensors: GDN c, KDA
 * c - base), and on a fold writes the checkpoint
 * S_n = S0 diag(e^{G_n}) + sum_i u_i (k_i * e^{G_n - G_i})^T instead (ring then empty).
 * Does not move the cursor: call rssm_advance once after the last layer. */
RSSM_API rssm_status rssm_decode_replay(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state,
                                        const rssm_step_io *io, void *stream);

/* Speculative verify of T tokens (1 <= T <= L) per row through the ring: outputs every
 * token's o, appends the T entries after the committed ones (after a start fold if needed),
 * writes no intermediate state. Call rssm_commit after the last layer. */
RSSM_API rssm_status rssm_verify(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state,
                                 const rssm_step_io *io, void *stream);

/* Cursor move after a decode step (T = 1): for every non-padding row applies the decode
 * fold rule: c = (c + 1 > L ? 0 : c) + 1; c = (c == L || fold[b]) ? 0 : c.
 * `fold` is the same array given to the decode step (NULL = none). Once per forward. */
RSSM_API rssm_status rssm_advance(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state, int32_t batch,
                                  const int32_t *slot, const uint8_t *fold, void *stream);

/* Cursor move after a verify of T tokens: c = (c + T > L || fold[b] ? 0 : c) + accepted[b],
 * accepted[b] in [0, T]. Rejected entries are never read again. Once per forward. */
RSSM_API rssm_status rssm_commit(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state, int32_t batch,
                                 int32_t tokens, const int32_t *slot, const uint8_t *fold, const int32_t *accepted,
                                 void *stream);

/* Folds the ring of src_slot[b] (at its committed position) into dst's checkpoint at
 * dst_slot[b] and resets dst's ring_base; src and dst may be the same state and slot.
 * Cursors are not touched: after the last layer, reset dst's cursors (rssm_reset_cursors).
 * Rows with src_slot or dst_slot -1 are skipped. */
RSSM_API rssm_status rssm_materialize(rssm_context *ctx, const rssm_layer *layer, const rssm_state *src,
                                      const rssm_state *dst, int32_t batch, const int32_t *src_slot,
                                      const int32_t *dst_slot, void *stream);

/* Prefill of T tokens per row with the recurrent form: starts from the slot's current state
 * (checkpoint with its live ring folded in; zero the slot first for a fresh sequence), writes
 * o for every token, the final state as the checkpoint, resets ring_base and makes the slot's
 * ring entries below its cursor neutral (u = 0, G = 0), so that a decode after prefill is right
 * whether or not the cursors are reset. After the last layer reset the cursors
 * (rssm_reset_cursors) so that the ring starts empty and holds a full L entries. */
RSSM_API rssm_status rssm_prefill(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state,
                                  const rssm_step_io *io, void *stream);

/* cursor[slot[b]] = 0 for every non-padding row. */
RSSM_API rssm_status rssm_reset_cursors(rssm_context *ctx, const rssm_state *state, int32_t batch, const int32_t *slot,
                                        void *stream);

/* ------------------------------------------------------------------------------------ */
/* bf16 on the host                                                                       */

/* float -> bf16 bits, rounded to nearest even as the library rounds (NaN stays NaN). */
RSSM_INLINE uint16_t rssm_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* bf16 bits -> float (exact). */
RSSM_INLINE float rssm_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#ifdef __cplusplus
}
#endif
#endif /* REPLAYSSM_H */
