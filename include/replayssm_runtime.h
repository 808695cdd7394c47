/*
 * replayssm_runtime.h — the runtime of replayssm: library-owned state for an engine (state
 * pool, step planner, radix prefix cache), tensor-parallel sharding, export and import of a
 * slot, and host work on a context's threads.
 *
 * Younger than replayssm.h: these calls may still change between minor versions (the version
 * macros of replayssm.h say which one is built). The conventions of replayssm.h hold here too.
 */
#ifndef REPLAYSSM_RUNTIME_H
#define REPLAYSSM_RUNTIME_H

#include "replayssm.h"

#ifdef __cplusplus
extern "C" {
#endif

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
RSSM_API rssm_status rssm_pool_bytes(const rssm_layer *layers, int32_t n_layers, int32_t n_slots, size_t *bytes);
/* Creates a pool on ctx's device; every slot starts free. `layers` is copied.
 * RSSM_ERROR_OUT_OF_MEMORY when the device cannot hold it (on host devices: more than the
 * machine's physical memory; below that, the pages of a slot are committed when it is used). */
RSSM_API rssm_status rssm_pool_create(rssm_context *ctx, const rssm_layer *layers, int32_t n_layers, int32_t n_slots,
                                      rssm_pool **out);
/* Frees the pool and its device memory; accepts NULL. */
RSSM_API void rssm_pool_free(rssm_pool *pool);
/* Device bytes this pool allocated (= rssm_pool_bytes of its shape); 0 for NULL. */
RSSM_API size_t rssm_pool_memory(const rssm_pool *pool);
/* Device bytes of one slot over all layers (checkpoint, ring, ring_base and its cursor). */
RSSM_API size_t rssm_pool_slot_bytes(const rssm_pool *pool);
RSSM_API int32_t rssm_pool_num_slots(const rssm_pool *pool); /* usable slots (n_slots) */
RSSM_API int32_t rssm_pool_num_free(const rssm_pool *pool);  /* slots not held */
RSSM_API int32_t rssm_pool_num_layers(const rssm_pool *pool);
RSSM_API rssm_context *rssm_pool_context(const rssm_pool *pool);
/* 1 if `slot` is a held slot of this pool, else 0. */
RSSM_API int rssm_pool_is_held(const rssm_pool *pool, int32_t slot);
/* The layer description of layer `layer` (a copy). */
RSSM_API rssm_status rssm_pool_layer(const rssm_pool *pool, int32_t layer, rssm_layer *out);
/* The state tensors of layer `layer`, for kernel calls on held slots. Its num_slots is
 * n_slots + 1: the last slot is the pool's scratch slot; leave it alone. The cursor pointer is
 * the same for every layer. */
RSSM_API rssm_status rssm_pool_state(const rssm_pool *pool, int32_t layer, rssm_state *out);

/* Takes a free slot and zeroes it (checkpoint, ring, ring_base, cursor 0).
 * RSSM_ERROR_POOL_FULL when none is free (nothing changed). */
RSSM_API rssm_status rssm_pool_acquire(rssm_pool *pool, int32_t *slot);
/* Takes a free slot initialised with the state of a held slot of `src_pool` (same context
 * and layers; may be `pool` itself) at its committed position: rssm_pool_copy into it. */
RSSM_API rssm_status rssm_pool_acquire_copy(rssm_pool *pool, rssm_pool *src_pool, int32_t src_slot, int32_t *slot);
/* Gives a held slot back. RSSM_ERROR_NOT_FOUND for a slot that is not held (double release,
 * never acquired, or out of this pool's range); nothing changes then. */
RSSM_API rssm_status rssm_pool_release(rssm_pool *pool, int32_t slot);
/* dst_slot <- the state of src_slot at its committed position, whatever its ring holds:
 * rssm_materialize for every layer, then the destination's cursor is 0 (empty ring, bases 0).
 * Pools must share the context and layers; both slots must be held. src == dst (same pool and
 * slot) folds the slot's ring in place. */
RSSM_API rssm_status rssm_pool_copy(rssm_pool *src_pool, int32_t src_slot, rssm_pool *dst_pool, int32_t dst_slot);
/* dst_slot <- src_slot's checkpoint bytes as they are (no fold), empty ring, cursor 0. Exact
 * (bitwise) when the source's checkpoint is its state at the point wanted: right after a
 * forced-fold decode step, during/after a verify step that forced a start fold, or a snapshot. */
RSSM_API rssm_status rssm_pool_copy_checkpoint(rssm_pool *src_pool, int32_t src_slot, rssm_pool *dst_pool,
                                               int32_t dst_slot);
/* Reads back the cursor of a held slot (synchronises). */
RSSM_API rssm_status rssm_pool_cursor(const rssm_pool *pool, int32_t slot, int32_t *cursor);

/* Export forms: the ring form carries checkpoint + ring + ring_base + cursor and continues
 * bit-identically after import; the materialised form carries the folded checkpoint only
 * (smaller; the importer starts with an empty ring, as after rssm_pool_copy). */
#define RSSM_EXPORT_RING 0u
#define RSSM_EXPORT_MATERIALIZED 1u
#define RSSM_EXPORT_FORMAT_VERSION 4u
/* Bytes of an exported blob of this pool's shape in form `flags`. */
RSSM_API rssm_status rssm_pool_export_size(const rssm_pool *pool, uint32_t flags, size_t *bytes);
/* Writes held `slot` into the host buffer `buf` (capacity bytes): a little-endian header
 * (magic "RSSMSNAP", format version, form, layer shapes, cursor, payload size, a 64-bit
 * checksum of header and payload: four multiply-xor lanes over 64-bit words, src/runtime/pool.c)
 * and the payload. `*written` gets the size. The slot is not
 * changed (the materialised form folds into the pool's scratch slot). */
RSSM_API rssm_status rssm_pool_export(rssm_pool *pool, int32_t slot, uint32_t flags, void *buf, size_t capacity,
                                      size_t *written);
/* Takes a free slot and loads a blob into it (any pool of the same layers, on any device: the
 * header carries every layer property that gives the payload its meaning, and all must equal
 * the pool's, defaults resolved). A blob is untrusted input: RSSM_ERROR_BAD_FORMAT for a wrong
 * magic, version, form, size or layer, a cursor or ring base outside a consistent ring, or a NaN
 * or infinity in the checkpoint or a live ring entry; RSSM_ERROR_CHECKSUM when the checksum (a
 * guard against corruption, not against forgery) does not match; RSSM_ERROR_POOL_FULL when no
 * slot is free. On any failure nothing changed. */
RSSM_API rssm_status rssm_pool_import(rssm_pool *pool, const void *buf, size_t bytes, int32_t *slot);
/* Checks the pool's bookkeeping (free list, held flags, cursors of held slots in [0, L]);
 * RSSM_OK or a message saying what is inconsistent. Synchronises; for tests and debugging. */
RSSM_API rssm_status rssm_pool_validate(const rssm_pool *pool);

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
RSSM_API rssm_status rssm_layer_shard(const rssm_layer *full, int32_t tp, int32_t rank, rssm_layer *out,
                                      int32_t *k_head0, int32_t *v_head0);

/* ---- step planner ---- */
typedef struct rssm_plan rssm_plan;
typedef enum rssm_plan_mode {
    RSSM_PLAN_DECODE = 0, /* rssm_decode_replay per layer, then rssm_advance (not needed after a drain) */
    RSSM_PLAN_VERIFY = 1, /* rssm_verify per layer, then rssm_commit with the accepted counts */
} rssm_plan_mode;

/* A planner for steps of exactly `batch` rows over `pool` (the batch size of a captured graph;
 * unused rows are padding). `track_interval` > 0: forced folds for prefix snapshots (a row
 * folds when its sequence length reaches a multiple of it, see rssm_plan_begin); 0: none.
 * All device buffers are allocated here: no step call allocates. */
RSSM_API rssm_status rssm_plan_create(rssm_pool *pool, int32_t batch, int32_t track_interval, rssm_plan **out);
RSSM_API void rssm_plan_free(rssm_plan *plan);           /* accepts NULL */
RSSM_API size_t rssm_plan_memory(const rssm_plan *plan); /* device bytes it allocated */
RSSM_API int32_t rssm_plan_batch(const rssm_plan *plan);
/* Host: rows [0, n) get `slot[i]` (a held slot of the pool or -1) and `seq_len[i]` (tokens
 * already committed for that row, >= 0; NULL = all 0); rows [n, batch) become padding.
 * One upload; not capturable; host work linear in n. Slots must be distinct and held by the
 * caller (not snapshots).
 * The planner keeps these slots until the next rssm_plan_set: do not step it after releasing
 * one of them. */
RSSM_API rssm_status rssm_plan_set(rssm_plan *plan, int32_t n, const int32_t *slot, const int32_t *seq_len);
/* Host: uploads accepted counts of rows [0, n) for a verify step (rows >= n get 0). An engine
 * whose sampler runs on the device may instead write rssm_plan_accepted_buffer directly. */
RSSM_API rssm_status rssm_plan_set_accepted(rssm_plan *plan, int32_t n, const int32_t *accepted);
/* Capturable. Computes the fold flags on the device from the planner's sequence lengths:
 *   decode: fold[b] = (seq_len[b] + 1) % track_interval == 0   (post-increment length:
 *           the checkpoint after this step's end fold is the state at that length)
 *   verify: fold[b] = seq_len[b] > 0 && seq_len[b] % track_interval == 0   (the start fold
 *           makes the checkpoint the state at the committed length, as the previous step's
 *           post-increment length). Padding rows get 0. `tokens`: 1 for decode, 1..L verify.
 * A small-batch decode step (below) sets every live row's flag, and on CUDA drains its rows. */
RSSM_API rssm_status rssm_plan_begin(rssm_plan *plan, rssm_plan_mode mode, int32_t tokens, void *stream);
/* Small batches (decode steps). A step of few rows is too small a grid to be bound by memory
 * bandwidth: it is bound by latency, which replay's ring work (and for KDA its clusters)
 * lengthens, so there replay decode is slower than packed decode. With max_rows > 0, a decode
 * step whose rssm_plan_set named 1 to max_rows live rows folds every live row: the rings stay
 * empty, the cursors at 0, and each layer does packed decode's work. On CUDA, for pools whose
 * layers are all K = V = 128 (the fast kernels), rssm_plan_begin then drains the step's rows
 * (folds every layer's ring entries into the checkpoints, cursors to 0; a row without entries
 * costs a cursor read) and rssm_plan_io sets io.fold_every, so that the layers run packed
 * decode's kernels; elsewhere the layers fold through replay's. The outputs are replay's (where
 * the drain folds a ring before the step, on a row's first such step, within the rounding of that
 * separate fold, and one more bf16 rounding with a bf16 state); with an empty ring, packed
 * decode's, bit for bit on the CPU and CUDA back ends. Larger steps replay as
 * before, so an engine may leave it on, and a CUDA graph captured on a small step stays right on
 * any step (its drain folds whatever rows the step has). rssm_plan_fold_rows still reports only
 * prefix-snapshot points.
 * max_rows: 0 = never (the default); RSSM_PLAN_SMALL_BATCH_AUTO = the rule of the devices where
 * folded steps measured faster than replay's (CUDA, layers of K = V = 128: B * HV <= 2 * SMs with
 * f32 states, 4 * SMs (GDN) or 6 * SMs (KDA) with bf16 states, a pool's layers taking the least;
 * other layers and host devices: never). Takes effect from the next rssm_plan_set; not inside a
 * step. */
#define RSSM_PLAN_SMALL_BATCH_AUTO (-1)
RSSM_API rssm_status rssm_plan_set_small_batch(rssm_plan *plan, int32_t max_rows);
/* The live-row limit in force (AUTO resolved); 0 when off or plan is NULL. */
RSSM_API int32_t rssm_plan_small_batch(const rssm_plan *plan);
/* Fills io->batch, io->tokens, io->slot and io->fold with the planner's device buffers
 * (io->write_slot = NULL) and io->fold_every for a small-batch decode step whose rows the begin
 * drained; the caller sets the per-token tensors. */
RSSM_API rssm_status rssm_plan_io(const rssm_plan *plan, rssm_step_io *io);
/* Capturable. After the last layer: decode -> rssm_advance (none on a step the begin drained:
 * its rows folded from cursor 0, where the advance would leave them), verify -> rssm_commit
 * with the accepted buffer, on the device; then seq_len[b] += 1 (decode) or accepted[b]
 * (verify). Padding rows never move a cursor. */
RSSM_API rssm_status rssm_plan_end(rssm_plan *plan, void *stream);
/* Host mirror of the fold flags of the sequence lengths last given to rssm_plan_set:
 * fold[0 .. batch) (the rows that give a prefix snapshot point this step). */
RSSM_API rssm_status rssm_plan_fold_rows(const rssm_plan *plan, rssm_plan_mode mode, uint8_t *fold);
/* Device buffers, [batch] each (for engines that fill or read them on the device). */
RSSM_API const int32_t *rssm_plan_slot_buffer(const rssm_plan *plan);
RSSM_API const uint8_t *rssm_plan_fold_buffer(const rssm_plan *plan);
RSSM_API int32_t *rssm_plan_seq_len_buffer(const rssm_plan *plan);
RSSM_API int32_t *rssm_plan_accepted_buffer(const rssm_plan *plan);

/* ---- prefix cache ---- */
typedef struct rssm_prefix_cache rssm_prefix_cache;

/* A radix tree over token ids whose snapshots are slots of `snapshot_pool` (it may be the
 * request pool itself). Budget: at most `max_bytes` of snapshot slots (0 = no byte limit)
 * and at most `max_snapshots` (0 = as many as the pool has); least recently used unlocked
 * snapshots are evicted to stay within it or when the pool is full. */
RSSM_API rssm_status rssm_prefix_cache_create(rssm_pool *snapshot_pool, size_t max_bytes, int32_t max_snapshots,
                                              rssm_prefix_cache **out);
/* Frees the tree and releases every snapshot slot to its pool; accepts NULL. */
RSSM_API void rssm_prefix_cache_free(rssm_prefix_cache *cache);

/* Snapshot sources for insert. */
#define RSSM_SNAPSHOT_CHECKPOINT 0u  /* the slot's checkpoint is the state after tokens[0..n) */
#define RSSM_SNAPSHOT_MATERIALIZE 1u /* the slot's committed position is after tokens[0..n) */
/* Caches the state after tokens[0..n) (n >= 1), read from held `src_slot` of `src_pool`
 * (same context and layers as the snapshot pool), into a new snapshot slot; evicts LRU
 * unlocked snapshots if needed. Already cached: refreshes its recency, copies nothing.
 * RSSM_ERROR_POOL_FULL when no room can be made (every snapshot locked); nothing changed then.
 * (A copy that fails on the device after room was made leaves those evictions done.) */
RSSM_API rssm_status rssm_prefix_cache_insert(rssm_prefix_cache *cache, const int32_t *tokens, int32_t n,
                                              rssm_pool *src_pool, int32_t src_slot, uint32_t source);
/* The same, stream-ordered instead of synchronised: the snapshot copy is ordered after the
 * work enqueued on `stream` so far (the step that made the source's checkpoint), and `stream`'s
 * later work after the copy (so a next step may overwrite the source), by device-side event
 * waits; the host never waits for a checkpoint snapshot (a materialised one still synchronises
 * once). For engines that snapshot every few steps without stalling their step loop. Later
 * pool and cache calls are ordered after the copy. A device error in the copy surfaces at the
 * next synchronising call. CPU and reference contexts: the same as rssm_prefix_cache_insert. */
RSSM_API rssm_status rssm_prefix_cache_insert_async(rssm_prefix_cache *cache, const int32_t *tokens, int32_t n,
                                                    rssm_pool *src_pool, int32_t src_slot, uint32_t source,
                                                    void *stream);
/* Longest cached prefix of tokens[0..n): *matched gets its length (0 = none). When matched > 0
 * and dst_pool is not NULL, copies the snapshot into held dst_slot (checkpoint, empty ring,
 * cursor 0). When lock is not NULL and matched > 0 the entry is locked (never evicted) until
 * rssm_prefix_cache_unlock(*lock); *lock is 0 when nothing was locked. */
RSSM_API rssm_status rssm_prefix_cache_match(rssm_prefix_cache *cache, const int32_t *tokens, int32_t n,
                                             rssm_pool *dst_pool, int32_t dst_slot, int32_t *matched, uint64_t *lock);
/* Drops one lock. RSSM_ERROR_NOT_FOUND for a handle that is not locked. */
RSSM_API rssm_status rssm_prefix_cache_unlock(rssm_prefix_cache *cache, uint64_t lock);
/* Evicts up to `count` least recently used unlocked snapshots; *evicted (may be NULL) gets how many. */
RSSM_API rssm_status rssm_prefix_cache_evict(rssm_prefix_cache *cache, int32_t count, int32_t *evicted);

typedef struct rssm_prefix_cache_stats {
    int32_t nodes;     /* tree nodes, root excluded */
    int32_t snapshots; /* nodes holding a snapshot slot */
    int32_t locked;    /* snapshots with a lock count > 0 */
    int32_t locks;     /* sum of lock counts */
    size_t bytes;      /* snapshots * rssm_pool_slot_bytes */
    int64_t hits, misses, inserts, evictions;
} rssm_prefix_cache_stats;
RSSM_API rssm_status rssm_prefix_cache_get_stats(const rssm_prefix_cache *cache, rssm_prefix_cache_stats *out);
/* Checks the tree (compressed, non-empty edges, distinct first tokens, depths, parent links,
 * LRU list, lock counts, snapshot slots held and distinct, budget); for tests and debugging. */
RSSM_API rssm_status rssm_prefix_cache_validate(const rssm_prefix_cache *cache);

/* ---- host work on a context's threads ---- */
/* fn(arg, begin, end, thread) over [0, n), split into one contiguous chunk per thread of a CPU
 * context (thread = 0 .. threads - 1; returns when all are done). Other contexts, and calls made
 * from inside fn, run fn(arg, 0, n, 0) on the calling thread. For a tool's host work beside the
 * kernels (its dense layers, a bandwidth probe) without a second thread pool. */
typedef void (*rssm_task_fn)(void *arg, int64_t begin, int64_t end, int thread);
RSSM_API void rssm_parallel_for(rssm_context *ctx, int64_t n, rssm_task_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* REPLAYSSM_RUNTIME_H */
