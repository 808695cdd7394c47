/*
 * replayssm.h — the one public header of replayssm.
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
 *  - A context may be used by one host thread at a time (the CPU back end keeps per-thread
 *    scratch in it); create one context per calling thread.
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

#ifdef __cplusplus
extern "C" {
#endif

/* 0.2.0: rssm_step_io gained cu_seqlens (ragged prefill rows); its size changed.
 * 0.3.0: rssm_step_io gained fold_every (the small-batch launch hint); its size changed. */
#define RSSM_VERSION_MAJOR 0
#define RSSM_VERSION_MINOR 3
#define RSSM_VERSION_PATCH 0
#define RSSM_VERSION_NUMBER (RSSM_VERSION_MAJOR * 10000 + RSSM_VERSION_MINOR * 100 + RSSM_VERSION_PATCH)

/* Runtime version: RSSM_VERSION_NUMBER of the library actually linked. */
unsigned rssm_version_number(void);
/* "major.minor.patch" of the library actually linked. */
const char *rssm_version_string(void);

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
const char *rssm_status_name(rssm_status status);
/* The message of the last failing call on this thread ("" when none). Never NULL. */
const char *rssm_last_error(void);

/* ------------------------------------------------------------------------------------ */
/* Devices                                                                                */

typedef enum rssm_device {
    RSSM_DEVICE_CPU = 0,       /* optimised CPU back end: threads + SIMD */
    RSSM_DEVICE_CUDA = 1,      /* CUDA back end (sm_90); RSSM_ERROR_UNSUPPORTED when not built */
    RSSM_DEVICE_REFERENCE = 2, /* float64 plain loops, single thread, host memory: the oracle */
} rssm_device;

typedef struct rssm_context rssm_context;

/* Creates a context on a device. For CPU, `index` is the thread count (0 = all cores);
 * for CUDA it is the device ordinal; ignored for the reference. */
rssm_status rssm_context_create(rssm_device device, int index, rssm_context **out);
/* Frees a context; accepts NULL. */
void rssm_context_free(rssm_context *ctx);
rssm_device rssm_context_device(const rssm_context *ctx);
/* 1 when the CUDA back end was compiled in and a device is present, else 0. */
int rssm_cuda_available(void);
/* CUDA only: slot indices can live in device memory, so they are bounds-checked in the
 * kernels: an out-of-range row is treated as padding and counted. This call synchronises
 * the context's device, returns RSSM_ERROR_BAD_SLOT if any such row was seen since the
 * last call (and clears the count), RSSM_OK otherwise. On CPU/reference, slots are
 * checked on the host before any work and this returns RSSM_OK. Not for the hot path. */
rssm_status rssm_context_check_device_errors(rssm_context *ctx);

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

#define RSSM_MAX_HEAD_DIM 256
#define RSSM_MAX_RING_LEN 64

typedef struct rssm_layer {
    int32_t num_k_heads; /* H  */
    int32_t num_v_heads; /* HV, a multiple of H */
    int32_t head_k_dim;  /* K, 1..RSSM_MAX_HEAD_DIM */
    int32_t head_v_dim;  /* V, 1..RSSM_MAX_HEAD_DIM */
    rssm_gate gate;
    int32_t ring_len;         /* L, 1..RSSM_MAX_RING_LEN */
    rssm_dtype state_dtype;   /* checkpoint */
    rssm_dtype ring_dtype;    /* ring u and k (ring G is always f32, or f64 on the reference) */
    rssm_dtype io_dtype;      /* q, k, v, a, b and the output o */
    float scale;              /* applied to q after normalisation; 0 means K^-0.5 */
    int32_t qk_l2norm;        /* 1: q and k are L2-normalised inside: x / sqrt(sum x^2 + 1e-6) */
    int32_t has_lower_bound;  /* KDA only: 1 selects the safe gate below */
    float lower_bound;        /* KDA safe gate: g = lower_bound * sigmoid(exp(A_log) * (a + dt_bias)) */
    float kda_fold_threshold; /* KDA only: G_MAX, fold early when min(G) < -G_MAX; 0 means 60 */
} rssm_layer;

/* A layer with the common defaults filled in (scale 0 = K^-0.5, l2norm on, dtypes f32). */
rssm_layer rssm_layer_default(rssm_gate gate, int32_t H, int32_t HV, int32_t K, int32_t V, int32_t L);
/* Validates a layer description; RSSM_OK or the reason. */
rssm_status rssm_layer_validate(const rssm_layer *layer);
/* Size in bytes of one dtype element (f32 4, bf16 2, f64 8). */
size_t rssm_dtype_size(rssm_dtype dtype);

/* ------------------------------------------------------------------------------------ */
/* State tensors of one layer                                                             */
/*
 * checkpoint  [slots, HV, V, K]   state dtype     S0 of each slot and value head (K contiguous)
 * ring_u      [slots, HV, L, V]   ring dtype      u_i = beta_i (v_i - S_{i-1} diag(alpha_i) k_i)
 * ring_k      GDN [slots, H, L, K]  ring dtype    normalised k_i, shared by the key head's group
 *             KDA [slots, HV, L, K] ring dtype    pre-decayed key k~_i = k_i * exp(-G_i)
 * ring_g      GDN [slots, HV, L]    f32           G_i, cumulative log-gate since the checkpoint
 *             KDA [slots, HV, L, K] f32           G_i per key channel
 * ring_base   KDA [slots, HV]       i32           entries of the shared cursor already folded
 *                                                 into this head's checkpoint (GDN: unused, may be NULL)
 * cursor      [slots]               i32           committed entries since the last shared fold;
 *                                                 shared by all layers, moved by rssm_advance and
 *                                                 rssm_commit once per forward.
 *
 * Entry position p of a head's ring (0-based) holds the token committed when the cursor went
 * from base+p to base+p+1; a head's live entries are 0 .. cursor - base - 1.
 * For packed decode only `checkpoint` is used (it is then simply the state).
 * On the reference device every dtype may also be RSSM_DTYPE_F64 and ring_g is double.
 */
typedef struct rssm_state {
    int32_t num_slots;
    void *checkpoint;
    void *ring_u;
    void *ring_k;
    void *ring_g;
    int32_t *ring_base;
    int32_t *cursor;
} rssm_state;

/* Bytes of each state tensor for `num_slots` slots (for sizing caller-owned memory). */
typedef struct rssm_state_bytes {
    size_t checkpoint, ring_u, ring_k, ring_g, ring_base, cursor, total;
} rssm_state_bytes;
rssm_status rssm_state_size(const rssm_layer *layer, int32_t num_slots, rssm_state_bytes *out);

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
 *   o      [B, T, HV, V]  io dtype   output (written for every row; zero for padding rows)
 * Strides: q_stride, k_stride, v_stride, a_stride, b_stride are the element distance
 * between consecutive tokens (b, t) -> (b, t+1) and (b, T-1) -> (b+1, 0); 0 means packed
 * (H*K, H*K, HV*V, HV or HV*K, HV). This lets a fused qkv projection be passed as views.
 * On the reference device with io dtype f64 the pointers are double.
 *
 * slot     [B] i32   the state slot of each row, or -1 for padding
 * write_slot [B] i32 packed decode only: where the new state goes (NULL = same as slot);
 *                    a copy-on-write step reads `slot` and writes `write_slot`
 * fold     [B] u8    optional forced fold (NULL = none). decode: fold at the end of the step
 *                    (the checkpoint then includes this token; used for prefix snapshots).
 *                    verify: fold the committed entries at the start of the step.
 * fold_every  0 or 1 replay decode: 1 says fold[b] = 1 is expected for every row with a
 *                    slot (a small-batch step, rssm_plan_set_small_batch; rssm_plan_io sets
 *                    it). A launch hint: CUDA's K = V = 128 kernels then run packed decode's
 *                    code for a folding row whose ring is empty and replay's for any other
 *                    row, with packed's launch shape. Results never depend on it (a graph
 *                    captured on a small-batch step stays right on larger ones).
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
 * KDA adds per-head early folds that only move that head's ring_base:
 *   decode: end fold when min_k G_n < -G_MAX (the new entry is folded, never stored);
 *   verify: start fold when min_k (G_c + window sum of g) < -G_MAX.
 *   Decode then needs no bound on the gate. A KDA verify window's own decay (the sum of its
 *   T log-gates) must stay above -80 per channel: host devices refuse such a window with
 *   RSSM_ERROR_BAD_ARGUMENT; on CUDA it is the caller's precondition (split the window).
 * Packed decode with write_slot: no row may write a slot that another row reads.
 * Every step: the rows' slots (padding -1 aside) are distinct; two rows on one slot would both
 * read and write it in the same launch (the device kernels do not detect this).
 */

/* Baseline: S = state[slot]; per token u = beta (v - S diag(alpha) k); S = S diag(alpha) + u k^T;
 * o = S q; state[write_slot] = S. T tokens in order (T >= 1). */
rssm_status rssm_decode_packed(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state,
                               const rssm_step_io *io, void *stream);

/* ReplaySSM decode, T must be 1: reads the checkpoint and the live ring entries, writes the
 * new entry (u, k, G) at position cursor - base, and on a fold writes the checkpoint
 * S_n = S0 diag(e^{G_n}) + sum_i u_i (k_i * e^{G_n - G_i})^T instead (ring then empty).
 * Does not move the cursor: call rssm_advance once after the last layer. */
rssm_status rssm_decode_replay(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state,
                               const rssm_step_io *io, void *stream);

/* Speculative verify of T tokens (1 <= T <= L) per row through the ring: outputs every
 * token's o, appends the T entries after the committed ones (after a start fold if needed),
 * writes no intermediate state. Call rssm_commit after the last layer. */
rssm_status rssm_verify(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state, const rssm_step_io *io,
                        void *stream);

/* Cursor move after a decode step (T = 1): for every non-padding row applies the decode
 * fold rule: c = (c + 1 > L ? 0 : c) + 1; c = (c == L || fold[b]) ? 0 : c.
 * `fold` is the same array given to the decode step (NULL = none). Once per forward. */
rssm_status rssm_advance(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state, int32_t batch,
                         const int32_t *slot, const uint8_t *fold, void *stream);

/* Cursor move after a verify of T tokens: c = (c + T > L || fold[b] ? 0 : c) + accepted[b],
 * accepted[b] in [0, T]. Rejected entries are never read again. Once per forward. */
rssm_status rssm_commit(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state, int32_t batch,
                        int32_t tokens, const int32_t *slot, const uint8_t *fold, const int32_t *accepted,
                        void *stream);

/* Folds the ring of src_slot[b] (at its committed position) into dst's checkpoint at
 * dst_slot[b] and resets dst's ring_base; src and dst may be the same state and slot.
 * Cursors are not touched: after the last layer, reset dst's cursors (rssm_reset_cursors).
 * Rows with src_slot or dst_slot -1 are skipped. */
rssm_status rssm_materialize(rssm_context *ctx, const rssm_layer *layer, const rssm_state *src, const rssm_state *dst,
                             int32_t batch, const int32_t *src_slot, const int32_t *dst_slot, void *stream);

/* Prefill of T tokens per row with the recurrent form: starts from the slot's current state
 * (checkpoint with its live ring folded in; zero the slot first for a fresh sequence), writes
 * o for every token, the final state as the checkpoint and resets ring_base. After the last
 * layer reset the cursors (rssm_reset_cursors) so the ring starts empty. */
rssm_status rssm_prefill(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state, const rssm_step_io *io,
                         void *stream);

/* cursor[slot[b]] = 0 for every non-padding row. */
rssm_status rssm_reset_cursors(rssm_context *ctx, const rssm_state *state, int32_t batch, const int32_t *slot,
                               void *stream);

/* ------------------------------------------------------------------------------------ */
/* Runtime                                                                                */
/*
 * Library-owned state for an engine, on a context's device:
 *  - a state pool: every layer's checkpoint and ring for n slots plus one cursor array
 *    shared by all layers (all layers of a pool share one ring length);
 *  - a step planner: static per-batch-size buffers (slots, fold flags, sequence lengths,
 *    accepted counts) and the cursor move after the last layer, on the device, so a whole
 *    decode step can be captured in one CUDA graph;
 *  - a radix prefix cache over token ids whose nodes hold state snapshots (slots of a pool
 *    with an empty ring), with lock/unlock and LRU eviction under a budget.
 * Pool, planner and cache objects are owned by one host thread (no internal locking).
 * Calls not marked "capturable" may synchronise the device; on failure they change nothing
 * (two exceptions: a device error in the middle of a multi-layer copy, reported as
 * RSSM_ERROR_DEVICE, after which the destination slot's contents are unspecified; and a prefix
 * cache insert that evicted snapshots to make room and then failed (device error or host out
 * of memory): the evicted snapshots stay evicted).
 */
typedef struct rssm_pool rssm_pool;

/* Device bytes rssm_pool_create allocates for `n_slots` slots of these layers, exactly (the
 * layers' state tensors, one scratch slot used by materialised export, the shared cursors and
 * a small index buffer, each tensor aligned to 256 bytes). Equals rssm_pool_memory of the pool.
 * All layers must have the same ring length. */
rssm_status rssm_pool_bytes(const rssm_layer *layers, int32_t n_layers, int32_t n_slots, size_t *bytes);
/* Creates a pool on ctx's device; every slot starts free. `layers` is copied. */
rssm_status rssm_pool_create(rssm_context *ctx, const rssm_layer *layers, int32_t n_layers, int32_t n_slots,
                             rssm_pool **out);
/* Frees the pool and its device memory; accepts NULL. */
void rssm_pool_free(rssm_pool *pool);
/* Device bytes this pool allocated (= rssm_pool_bytes of its shape); 0 for NULL. */
size_t rssm_pool_memory(const rssm_pool *pool);
/* Device bytes of one slot over all layers (checkpoint, ring, ring_base and its cursor). */
size_t rssm_pool_slot_bytes(const rssm_pool *pool);
int32_t rssm_pool_num_slots(const rssm_pool *pool); /* usable slots (n_slots) */
int32_t rssm_pool_num_free(const rssm_pool *pool);  /* slots not held */
int32_t rssm_pool_num_layers(const rssm_pool *pool);
rssm_context *rssm_pool_context(const rssm_pool *pool);
/* 1 if `slot` is a held slot of this pool, else 0. */
int rssm_pool_is_held(const rssm_pool *pool, int32_t slot);
/* The layer description of layer `layer` (a copy). */
rssm_status rssm_pool_layer(const rssm_pool *pool, int32_t layer, rssm_layer *out);
/* The state tensors of layer `layer`, for kernel calls on held slots. Its num_slots is
 * n_slots + 1: the last slot is the pool's scratch slot; leave it alone. The cursor pointer is
 * the same for every layer. */
rssm_status rssm_pool_state(const rssm_pool *pool, int32_t layer, rssm_state *out);

/* Takes a free slot and zeroes it (checkpoint, ring, ring_base, cursor 0).
 * RSSM_ERROR_POOL_FULL when none is free (nothing changed). */
rssm_status rssm_pool_acquire(rssm_pool *pool, int32_t *slot);
/* Takes a free slot initialised with the state of a held slot of `src_pool` (same context
 * and layers; may be `pool` itself) at its committed position: rssm_pool_copy into it. */
rssm_status rssm_pool_acquire_copy(rssm_pool *pool, rssm_pool *src_pool, int32_t src_slot, int32_t *slot);
/* Gives a held slot back. RSSM_ERROR_NOT_FOUND for a slot that is not held (double release,
 * never acquired, or out of this pool's range); nothing changes then. */
rssm_status rssm_pool_release(rssm_pool *pool, int32_t slot);
/* dst_slot <- the state of src_slot at its committed position, whatever its ring holds:
 * rssm_materialize for every layer, then the destination's cursor is 0 (empty ring, bases 0).
 * Pools must share the context and layers; both slots must be held. src == dst (same pool and
 * slot) folds the slot's ring in place. */
rssm_status rssm_pool_copy(rssm_pool *src_pool, int32_t src_slot, rssm_pool *dst_pool, int32_t dst_slot);
/* dst_slot <- src_slot's checkpoint bytes as they are (no fold), empty ring, cursor 0. Exact
 * (bitwise) when the source's checkpoint is its state at the point wanted: right after a
 * forced-fold decode step, during/after a verify step that forced a start fold, or a snapshot. */
rssm_status rssm_pool_copy_checkpoint(rssm_pool *src_pool, int32_t src_slot, rssm_pool *dst_pool, int32_t dst_slot);
/* Reads back the cursor of a held slot (synchronises). */
rssm_status rssm_pool_cursor(const rssm_pool *pool, int32_t slot, int32_t *cursor);

/* Export forms: the ring form carries checkpoint + ring + ring_base + cursor and continues
 * bit-identically after import; the materialised form carries the folded checkpoint only
 * (smaller; the importer starts with an empty ring, as after rssm_pool_copy). */
#define RSSM_EXPORT_RING 0u
#define RSSM_EXPORT_MATERIALIZED 1u
#define RSSM_EXPORT_FORMAT_VERSION 2u
/* Bytes of an exported blob of this pool's shape in form `flags`. */
rssm_status rssm_pool_export_size(const rssm_pool *pool, uint32_t flags, size_t *bytes);
/* Writes held `slot` into the host buffer `buf` (capacity bytes): a little-endian header
 * (magic "RSSMSNAP", format version, form, layer shapes, cursor, payload size, a 64-bit
 * checksum of header and payload: four multiply-xor lanes over 64-bit words, src/runtime/pool.c)
 * and the payload. `*written` gets the size. The slot is not
 * changed (the materialised form folds into the pool's scratch slot). */
rssm_status rssm_pool_export(rssm_pool *pool, int32_t slot, uint32_t flags, void *buf, size_t capacity,
                             size_t *written);
/* Takes a free slot and loads a blob into it (any pool of the same layer shapes and state/ring
 * dtypes, on any device). RSSM_ERROR_BAD_FORMAT for a wrong magic, version, form, size or
 * shape, or an inconsistent cursor; RSSM_ERROR_CHECKSUM when the checksum does not match;
 * RSSM_ERROR_POOL_FULL when no slot is free. On any failure nothing changed. */
rssm_status rssm_pool_import(rssm_pool *pool, const void *buf, size_t bytes, int32_t *slot);
/* Checks the pool's bookkeeping (free list, held flags, cursors of held slots in [0, L]);
 * RSSM_OK or a message saying what is inconsistent. Synchronises; for tests and debugging. */
rssm_status rssm_pool_validate(const rssm_pool *pool);

/* ---- tensor parallelism ---- */
/* The layer held by rank `rank` (0 <= rank < tp) when the heads are split over tp ranks: key heads
 * [k_head0, k_head0 + H/tp) and value heads [v_head0, v_head0 + HV/tp) of `full` (k_head0 =
 * rank*H/tp, v_head0 = rank*HV/tp; k_head0 and v_head0 may be NULL, out may not). Both H and HV must divide
 * by tp (RSSM_ERROR_BAD_SHAPE otherwise), so that shard value head j still reads shard key head
 * j/group, as globally. Head dims, gate, ring, dtypes, scale and l2norm are unchanged.
 * A rank's decode, replay, verify and materialise on the head slices of the inputs (q, k from
 * k_head0; v, a, b, o and A_log, dt_bias from v_head0) and of the state give exactly (bitwise)
 * those heads of the unsharded call: every head's recurrence is independent. Each rank keeps its
 * own pool over its shard (the cursor array is per pool, moved identically on every rank). */
rssm_status rssm_layer_shard(const rssm_layer *full, int32_t tp, int32_t rank, rssm_layer *out, int32_t *k_head0,
                             int32_t *v_head0);

/* ---- step planner ---- */
typedef struct rssm_plan rssm_plan;
typedef enum rssm_plan_mode {
    RSSM_PLAN_DECODE = 0, /* rssm_decode_replay per layer, then rssm_advance */
    RSSM_PLAN_VERIFY = 1, /* rssm_verify per layer, then rssm_commit with the accepted counts */
} rssm_plan_mode;

/* A planner for steps of exactly `batch` rows over `pool` (the batch size of a captured graph;
 * unused rows are padding). `track_interval` > 0: forced folds for prefix snapshots (a row
 * folds when its sequence length reaches a multiple of it, see rssm_plan_begin); 0: none.
 * All device buffers are allocated here: no step call allocates. */
rssm_status rssm_plan_create(rssm_pool *pool, int32_t batch, int32_t track_interval, rssm_plan **out);
void rssm_plan_free(rssm_plan *plan);           /* accepts NULL */
size_t rssm_plan_memory(const rssm_plan *plan); /* device bytes it allocated */
int32_t rssm_plan_batch(const rssm_plan *plan);
/* Host: rows [0, n) get `slot[i]` (a held slot of the pool or -1) and `seq_len[i]` (tokens
 * already committed for that row, >= 0; NULL = all 0); rows [n, batch) become padding.
 * One upload; not capturable; host work linear in n. Slots must be distinct and held by the
 * caller (not snapshots).
 * The planner keeps these slots until the next rssm_plan_set: do not step it after releasing
 * one of them. */
rssm_status rssm_plan_set(rssm_plan *plan, int32_t n, const int32_t *slot, const int32_t *seq_len);
/* Host: uploads accepted counts of rows [0, n) for a verify step (rows >= n get 0). An engine
 * whose sampler runs on the device may instead write rssm_plan_accepted_buffer directly. */
rssm_status rssm_plan_set_accepted(rssm_plan *plan, int32_t n, const int32_t *accepted);
/* Capturable. Computes the fold flags on the device from the planner's sequence lengths:
 *   decode: fold[b] = (seq_len[b] + 1) % track_interval == 0   (post-increment length:
 *           the checkpoint after this step's end fold is the state at that length)
 *   verify: fold[b] = seq_len[b] > 0 && seq_len[b] % track_interval == 0   (the start fold
 *           makes the checkpoint the state at the committed length, as the previous step's
 *           post-increment length). Padding rows get 0. `tokens`: 1 for decode, 1..L verify. */
rssm_status rssm_plan_begin(rssm_plan *plan, rssm_plan_mode mode, int32_t tokens, void *stream);
/* Small batches (decode steps). A step of few rows is too small a grid to be bound by memory
 * bandwidth: it is bound by latency, which replay's ring work (and for KDA its clusters)
 * lengthens, so there replay decode is slower than packed decode. With max_rows > 0, a decode
 * step whose rssm_plan_set named 1 to max_rows live rows folds every live row: the rings stay
 * empty, the cursors at 0, and each layer does packed decode's work (on CUDA's K = V = 128
 * kernels, packed's code path; a row that still has entries folds them on its first such
 * step). The outputs are replay's; with an empty ring, packed decode's, bit for bit on the CPU
 * and CUDA back ends. Larger steps replay as before, so an engine may leave it on.
 * rssm_plan_io sets io.fold_every on such steps; rssm_plan_fold_rows still reports only
 * prefix-snapshot points.
 * max_rows: 0 = never (the default); RSSM_PLAN_SMALL_BATCH_AUTO = where folded steps measured
 * faster than replay's (CUDA, KDA layers of K = V = 128: B * HV <= 3 * SMs, 12 rows of 32 heads
 * on an H200; other layers and host devices: never). Takes effect from the next rssm_plan_set; not inside
 * a step. */
#define RSSM_PLAN_SMALL_BATCH_AUTO (-1)
rssm_status rssm_plan_set_small_batch(rssm_plan *plan, int32_t max_rows);
/* The live-row limit in force (AUTO resolved); 0 when off or plan is NULL. */
int32_t rssm_plan_small_batch(const rssm_plan *plan);
/* Fills io->batch, io->tokens, io->slot and io->fold with the planner's device buffers
 * (io->write_slot = NULL) and io->fold_every for a small-batch decode step; the caller sets
 * the per-token tensors. */
rssm_status rssm_plan_io(const rssm_plan *plan, rssm_step_io *io);
/* Capturable. After the last layer: decode -> rssm_advance, verify -> rssm_commit with the
 * accepted buffer, on the device; then seq_len[b] += 1 (decode) or accepted[b] (verify).
 * Padding rows never move a cursor. */
rssm_status rssm_plan_end(rssm_plan *plan, void *stream);
/* Host mirror of the fold flags of the sequence lengths last given to rssm_plan_set:
 * fold[0 .. batch) (the rows that give a prefix snapshot point this step). */
rssm_status rssm_plan_fold_rows(const rssm_plan *plan, rssm_plan_mode mode, uint8_t *fold);
/* Device buffers, [batch] each (for engines that fill or read them on the device). */
const int32_t *rssm_plan_slot_buffer(const rssm_plan *plan);
const uint8_t *rssm_plan_fold_buffer(const rssm_plan *plan);
int32_t *rssm_plan_seq_len_buffer(const rssm_plan *plan);
int32_t *rssm_plan_accepted_buffer(const rssm_plan *plan);

/* ---- prefix cache ---- */
typedef struct rssm_prefix_cache rssm_prefix_cache;

/* A radix tree over token ids whose snapshots are slots of `snapshot_pool` (it may be the
 * request pool itself). Budget: at most `max_bytes` of snapshot slots (0 = no byte limit)
 * and at most `max_snapshots` (0 = as many as the pool has); least recently used unlocked
 * snapshots are evicted to stay within it or when the pool is full. */
rssm_status rssm_prefix_cache_create(rssm_pool *snapshot_pool, size_t max_bytes, int32_t max_snapshots,
                                     rssm_prefix_cache **out);
/* Frees the tree and releases every snapshot slot to its pool; accepts NULL. */
void rssm_prefix_cache_free(rssm_prefix_cache *cache);

/* Snapshot sources for insert. */
#define RSSM_SNAPSHOT_CHECKPOINT 0u  /* the slot's checkpoint is the state after tokens[0..n) */
#define RSSM_SNAPSHOT_MATERIALIZE 1u /* the slot's committed position is after tokens[0..n) */
/* Caches the state after tokens[0..n) (n >= 1), read from held `src_slot` of `src_pool`
 * (same context and layers as the snapshot pool), into a new snapshot slot; evicts LRU
 * unlocked snapshots if needed. Already cached: refreshes its recency, copies nothing.
 * RSSM_ERROR_POOL_FULL when no room can be made (every snapshot locked); nothing changed then.
 * (A copy that fails on the device after room was made leaves those evictions done.) */
rssm_status rssm_prefix_cache_insert(rssm_prefix_cache *cache, const int32_t *tokens, int32_t n, rssm_pool *src_pool,
                                     int32_t src_slot, uint32_t source);
/* The same, stream-ordered instead of synchronised: the snapshot copy is ordered after the
 * work enqueued on `stream` so far (the step that made the source's checkpoint), and `stream`'s
 * later work after the copy (so a next step may overwrite the source), by device-side event
 * waits; the host never waits for a checkpoint snapshot (a materialised one still synchronises
 * once). For engines that snapshot every few steps without stalling their step loop. Later
 * pool and cache calls are ordered after the copy. A device error in the copy surfaces at the
 * next synchronising call. CPU and reference contexts: the same as rssm_prefix_cache_insert. */
rssm_status rssm_prefix_cache_insert_async(rssm_prefix_cache *cache, const int32_t *tokens, int32_t n,
                                           rssm_pool *src_pool, int32_t src_slot, uint32_t source, void *stream);
/* Longest cached prefix of tokens[0..n): *matched gets its length (0 = none). When matched > 0
 * and dst_pool is not NULL, copies the snapshot into held dst_slot (checkpoint, empty ring,
 * cursor 0). When lock is not NULL and matched > 0 the entry is locked (never evicted) until
 * rssm_prefix_cache_unlock(*lock); *lock is 0 when nothing was locked. */
rssm_status rssm_prefix_cache_match(rssm_prefix_cache *cache, const int32_t *tokens, int32_t n, rssm_pool *dst_pool,
                                    int32_t dst_slot, int32_t *matched, uint64_t *lock);
/* Drops one lock. RSSM_ERROR_NOT_FOUND for a handle that is not locked. */
rssm_status rssm_prefix_cache_unlock(rssm_prefix_cache *cache, uint64_t lock);
/* Evicts up to `count` least recently used unlocked snapshots; *evicted (may be NULL) gets how many. */
rssm_status rssm_prefix_cache_evict(rssm_prefix_cache *cache, int32_t count, int32_t *evicted);

typedef struct rssm_prefix_cache_stats {
    int32_t nodes;     /* tree nodes, root excluded */
    int32_t snapshots; /* nodes holding a snapshot slot */
    int32_t locked;    /* snapshots with a lock count > 0 */
    int32_t locks;     /* sum of lock counts */
    size_t bytes;      /* snapshots * rssm_pool_slot_bytes */
    int64_t hits, misses, inserts, evictions;
} rssm_prefix_cache_stats;
rssm_status rssm_prefix_cache_get_stats(const rssm_prefix_cache *cache, rssm_prefix_cache_stats *out);
/* Checks the tree (compressed, non-empty edges, distinct first tokens, depths, parent links,
 * LRU list, lock counts, snapshot slots held and distinct, budget); for tests and debugging. */
rssm_status rssm_prefix_cache_validate(const rssm_prefix_cache *cache);

#ifdef __cplusplus
}
#endif
#endif /* REPLAYSSM_H */
