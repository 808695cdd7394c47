/*
 * pool.c — the state pool: library-owned checkpoint + ring tensors of every layer for
 * n slots, one shared cursor array, slot bookkeeping on the host, slot copy (materialise
 * on the way) and export/import of a slot as a versioned, checksummed blob.
 *
 * Memory layout: runtime.h. Slot s of a tensor is one contiguous range (slot is the
 * leading dimension), so zeroing, copying and exporting a slot are plain byte ranges.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/device.h"
#include "core/layer.h"
#include "core/layout.h"
#include "runtime/runtime.h"

static size_t align_up(size_t x) { return (x + RSSM_RT_ALIGN - 1) / RSSM_RT_ALIGN * RSSM_RT_ALIGN; }

/* ---- shape and layout ------------------------------------------------------------------ */

/* Validates the layer list; fills lm (may be NULL) and the offsets; *bytes = total. */
static rssm_status layout(const char *fn, const rssm_layer *layers, int32_t n_layers, int32_t n_slots,
                          rssm_pool_layer_mem *lm, size_t *off_cursor, size_t *off_idx, size_t *bytes,
                          size_t *slot_bytes)
{
    if (!layers) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: layers is NULL", fn);
    if (n_layers < 1 || n_layers > 4096)
        return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: n_layers %d outside [1, 4096]", fn, n_layers);
    if (n_slots < 1 || n_slots > (1 << 24))
        return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: n_slots %d outside [1, 2^24]", fn, n_slots);
    const int32_t total_slots = n_slots + 1;
    size_t off = 0, per_slot = 4; /* the slot's cursor */
    for (int32_t i = 0; i < n_layers; i++) {
        rssm_status st = rssm_layer_validate(&layers[i]);
        if (st != RSSM_OK) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", rssm_last_error());
            return rssm_fail(st, "%s: layer %d: %s", fn, i, msg);
        }
        if (layers[i].ring_len != layers[0].ring_len)
            return rssm_fail(RSSM_ERROR_BAD_RING_LEN,
                             "%s: layer %d has ring length %d but layer 0 has %d (the cursor is shared)", fn, i,
                             layers[i].ring_len, layers[0].ring_len);
        rssm_state_bytes all, one;
        rssm_state_size(&layers[i], total_slots, &all);
        rssm_state_size(&layers[i], 1, &one);
        if (lm) {
            lm[i].layer = layers[i];
            lm[i].per_slot = one;
        }
        size_t o[5];
        const size_t sz[5] = {all.checkpoint, all.ring_u, all.ring_k, all.ring_g, all.ring_base};
        for (int t = 0; t < 5; t++) {
            if (off > SIZE_MAX / 2 || sz[t] > SIZE_MAX / 2 - off)
                return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "%s: the pool would need more than 2^63 bytes", fn);
            off = align_up(off);
            o[t] = off;
            off += sz[t];
        }
        if (lm)
            lm[i].off_ckpt = o[0], lm[i].off_u = o[1], lm[i].off_k = o[2], lm[i].off_g = o[3], lm[i].off_base = o[4];
        per_slot += one.checkpoint + one.ring_u + one.ring_k + one.ring_g + one.ring_base;
    }
    off = align_up(off);
    if (off_cursor) *off_cursor = off;
    off += (size_t)total_slots * 4;
    off = align_up(off);
    if (off_idx) *off_idx = off;
    off += 8 * 4;
    *bytes = off;
    if (slot_bytes) *slot_bytes = per_slot;
    return RSSM_OK;
}

rssm_status rssm_pool_bytes(const rssm_layer *layers, int32_t n_layers, int32_t n_slots, size_t *bytes)
{
    if (!bytes) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_pool_bytes: bytes is NULL");
    size_t b;
    rssm_status st = layout("rssm_pool_bytes", layers, n_layers, n_slots, NULL, NULL, NULL, &b, NULL);
    if (st == RSSM_OK) *bytes = b;
    return st;
}

rssm_status rssm_pool_create(rssm_context *ctx, const rssm_layer *layers, int32_t n_layers, int32_t n_slots,
                             rssm_pool **out)
{
    const char *fn = "rssm_pool_create";
    if (!out) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: out is NULL", fn);
    *out = NULL;
    if (!ctx) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: ctx is NULL", fn);
    size_t bytes;
    rssm_status st = layout(fn, layers, n_layers, n_slots, NULL, NULL, NULL, &bytes, NULL);
    if (st != RSSM_OK) return st;
    for (int32_t i = 0; i < n_layers; i++)
        if ((st = ctx->backend->check_layer(&layers[i])) != RSSM_OK) {
            char why[256];
            snprintf(why, sizeof why, "%s", rssm_last_error());
            return rssm_fail(st, "%s: layer %d: %s", fn, i, why);
        }
    rssm_pool *p = calloc(1, sizeof *p);
    if (!p) return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    p->ctx = ctx;
    p->n_layers = n_layers;
    p->n_slots = n_slots;
    p->slots_total = n_slots + 1;
    p->lm = calloc((size_t)n_layers, sizeof *p->lm);
    p->held = calloc((size_t)n_slots, 1);
    p->free_stack = malloc(sizeof(int32_t) * (size_t)n_slots);
    if (!p->lm || !p->held || !p->free_stack) {
        rssm_pool_free(p);
        return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    }
    layout(fn, layers, n_layers, n_slots, p->lm, &p->off_cursor, &p->off_idx, &p->bytes, &p->slot_bytes);
    void *mem = NULL;
    if ((st = rssm_dev_alloc(ctx, p->bytes, &mem)) != RSSM_OK) {
        rssm_pool_free(p);
        return st;
    }
    p->mem = mem; /* zeroed; on host devices its pages are committed only as slots are used */
    p->cursor = (int32_t *)(p->mem + p->off_cursor);
    p->idx = (int32_t *)(p->mem + p->off_idx);
    /* slot 0 is handed out first */
    for (int32_t i = 0; i < n_slots; i++)
        p->free_stack[i] = n_slots - 1 - i;
    p->n_free = n_slots;
    *out = p;
    return RSSM_OK;
}

void rssm_pool_free(rssm_pool *pool)
{
    if (!pool) return;
    if (pool->mem) rssm_dev_free(pool->ctx, pool->mem);
    free(pool->lm);
    free(pool->held);
    free(pool->free_stack);
    free(pool);
}

size_t rssm_pool_memory(const rssm_pool *pool) { return pool ? pool->bytes : 0; }
size_t rssm_pool_slot_bytes(const rssm_pool *pool) { return pool ? pool->slot_bytes : 0; }
int32_t rssm_pool_num_slots(const rssm_pool *pool) { return pool ? pool->n_slots : 0; }
int32_t rssm_pool_num_free(const rssm_pool *pool) { return pool ? pool->n_free : 0; }
int32_t rssm_pool_num_layers(const rssm_pool *pool) { return pool ? pool->n_layers : 0; }
rssm_context *rssm_pool_context(const rssm_pool *pool) { return pool ? pool->ctx : NULL; }

int rssm_pool_is_held(const rssm_pool *pool, int32_t slot)
{
    return pool && slot >= 0 && slot < pool->n_slots && pool->held[slot];
}

rssm_state rssm_rt_state(const rssm_pool *pool, int32_t l)
{
    const rssm_pool_layer_mem *m = &pool->lm[l];
    rssm_state s;
    s.num_slots = pool->slots_total;
    s.checkpoint = pool->mem + m->off_ckpt;
    s.ring_u = pool->mem + m->off_u;
    s.ring_k = pool->mem + m->off_k;
    s.ring_g = pool->mem + m->off_g;
    s.ring_base = m->per_slot.ring_base ? (int32_t *)(pool->mem + m->off_base) : NULL;
    s.cursor = pool->cursor;
    rssm_state_bytes_of(&m->layer, pool->slots_total, &s.bytes);
    return s;
}

rssm_status rssm_pool_layer(const rssm_pool *pool, int32_t layer, rssm_layer *out)
{
    if (!pool || !out) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_pool_layer: pool or out is NULL");
    if (layer < 0 || layer >= pool->n_layers)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "rssm_pool_layer: layer %d outside [0, %d)", layer, pool->n_layers);
    *out = pool->lm[layer].layer;
    return RSSM_OK;
}

rssm_status rssm_pool_state(const rssm_pool *pool, int32_t layer, rssm_state *out)
{
    if (!pool || !out) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_pool_state: pool or out is NULL");
    if (layer < 0 || layer >= pool->n_layers)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "rssm_pool_state: layer %d outside [0, %d)", layer, pool->n_layers);
    *out = rssm_rt_state(pool, layer);
    return RSSM_OK;
}

rssm_status rssm_rt_check_held(const char *fn, const rssm_pool *pool, int32_t s, const char *what)
{
    if (s < 0 || s >= pool->n_slots)
        return rssm_fail(RSSM_ERROR_NOT_FOUND, "%s: %s %d is not a slot of this pool (it has slots 0..%d)", fn, what, s,
                         pool->n_slots - 1);
    if (!pool->held[s])
        return rssm_fail(RSSM_ERROR_NOT_FOUND, "%s: %s %d is not held (never acquired, or already released)", fn, what,
                         s);
    return RSSM_OK;
}

/* ---- slot ranges ------------------------------------------------------------------------- */

/* The byte range of slot s in tensor t (0 ckpt, 1 u, 2 k, 3 g, 4 base) of layer l. */
static void *slot_range(const rssm_pool *p, int32_t l, int t, int32_t s, size_t *n)
{
    const rssm_pool_layer_mem *m = &p->lm[l];
    const size_t sz[5] = {m->per_slot.checkpoint, m->per_slot.ring_u, m->per_slot.ring_k, m->per_slot.ring_g,
                          m->per_slot.ring_base};
    const size_t off[5] = {m->off_ckpt, m->off_u, m->off_k, m->off_g, m->off_base};
    *n = sz[t];
    return p->mem + off[t] + (size_t)s * sz[t];
}

/* Ends a call that enqueued work on the context stream: synchronises, also after a failure
 * (nothing queued may land after the call returned), keeping the first error's message. */
static rssm_status settle(rssm_context *ctx, rssm_status st)
{
    if (st == RSSM_OK) return rssm_dev_sync(ctx);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", rssm_last_error());
    (void)rssm_dev_sync(ctx);
    return rssm_fail(st, "%s", msg);
}

/* Zeroes every tensor of slot s (ring tensors only when `ring`; base and cursor always), enqueued
 * on the context stream: every caller synchronises before it returns. */
static rssm_status zero_slot(rssm_pool *p, int32_t s, int ckpt, int ring)
{
    rssm_status st = RSSM_OK;
    for (int32_t l = 0; l < p->n_layers && st == RSSM_OK; l++)
        for (int t = 0; t < 5 && st == RSSM_OK; t++) {
            if ((t == 0 && !ckpt) || (t >= 1 && t <= 3 && !ring)) continue;
            size_t n;
            void *d = slot_range(p, l, t, s, &n);
            if (n) st = rssm_dev_memset_async(p->ctx, d, 0, n);
        }
    if (st == RSSM_OK) st = rssm_dev_memset_async(p->ctx, p->cursor + s, 0, 4);
    return st;
}

static int32_t pop_free(rssm_pool *p)
{
    const int32_t s = p->free_stack[--p->n_free];
    p->held[s] = RSSM_RT_HELD_USER;
    return s;
}

static void push_free(rssm_pool *p, int32_t s)
{
    p->held[s] = 0;
    p->free_stack[p->n_free++] = s;
}

rssm_status rssm_pool_acquire(rssm_pool *pool, int32_t *slot)
{
    const char *fn = "rssm_pool_acquire";
    if (!pool || !slot) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: pool or slot is NULL", fn);
    if (pool->n_free == 0) return rssm_fail(RSSM_ERROR_POOL_FULL, "%s: all %d slots are held", fn, pool->n_slots);
    const int32_t s = pop_free(pool);
    rssm_status st = settle(pool->ctx, zero_slot(pool, s, 1, 1));
    if (st != RSSM_OK) {
        push_free(pool, s);
        return st;
    }
    *slot = s;
    return RSSM_OK;
}

rssm_status rssm_rt_check_user(const char *fn, const rssm_pool *pool, int32_t s, const char *what)
{
    rssm_status st = rssm_rt_check_held(fn, pool, s, what);
    if (st == RSSM_OK && pool->held[s] != RSSM_RT_HELD_USER)
        st = rssm_fail(RSSM_ERROR_NOT_FOUND, "%s: %s %d belongs to a prefix cache (a snapshot), not to the caller", fn,
                       what, s);
    return st;
}

rssm_status rssm_pool_release(rssm_pool *pool, int32_t slot)
{
    if (!pool) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_pool_release: pool is NULL");
    rssm_status st = rssm_rt_check_user("rssm_pool_release", pool, slot, "slot");
    if (st != RSSM_OK) return st;
    push_free(pool, slot);
    return RSSM_OK;
}

rssm_status rssm_pool_cursor(const rssm_pool *pool, int32_t slot, int32_t *cursor)
{
    if (!pool || !cursor) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_pool_cursor: pool or cursor is NULL");
    rssm_status st = rssm_rt_check_held("rssm_pool_cursor", pool, slot, "slot");
    if (st != RSSM_OK) return st;
    if ((st = rssm_dev_sync(pool->ctx)) != RSSM_OK) return st;
    return rssm_dev_download(pool->ctx, cursor, pool->cursor + slot, 4);
}

/* ---- copies ------------------------------------------------------------------------------ */

int rssm_rt_same_layers(const rssm_pool *a, const rssm_pool *b)
{
    if (a->n_layers != b->n_layers) return 0;
    for (int32_t l = 0; l < a->n_layers; l++)
        if (!rssm_layer_same(&a->lm[l].layer, &b->lm[l].layer)) return 0;
    return 1;
}

static rssm_status check_pair(const char *fn, rssm_pool *src, int32_t ss, rssm_pool *dst, int32_t ds)
{
    if (!src || !dst) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: a pool is NULL", fn);
    rssm_status st;
    if ((st = rssm_rt_check_held(fn, src, ss, "source slot")) != RSSM_OK) return st;
    if ((st = rssm_rt_check_user(fn, dst, ds, "destination slot")) != RSSM_OK) return st;
    if (src->ctx != dst->ctx)
        return rssm_fail(RSSM_ERROR_UNSUPPORTED, "%s: the pools live on different contexts (use export/import)", fn);
    if (!rssm_rt_same_layers(src, dst))
        return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: the pools have different layers", fn);
    return RSSM_OK;
}

/* Materialises (src, ss) into (dst, ds) for every layer and zeroes dst's cursor. Slots
 * may be the scratch slot; no held checks here. Synchronises first (the slot table is
 * uploaded), and again at the end when `wait` (see rssm_rt_copy). */
static rssm_status materialize_slot(rssm_pool *src, int32_t ss, rssm_pool *dst, int32_t ds, int wait)
{
    rssm_context *ctx = dst->ctx;
    void *stream = rssm_dev_stream(ctx);
    const int32_t idx[8] = {ss, 0, 0, 0, ds, 0, 0, 0};
    rssm_status st = rssm_dev_sync(ctx); /* the previous user of idx is done */
    if (st == RSSM_OK) st = rssm_dev_upload(ctx, dst->idx, idx, sizeof idx);
    for (int32_t l = 0; l < dst->n_layers && st == RSSM_OK; l++) {
        const rssm_state s = rssm_rt_state(src, l), d = rssm_rt_state(dst, l);
        st = rssm_materialize(ctx, &dst->lm[l].layer, &s, &d, 1, dst->idx, dst->idx + 4, stream);
        if (st != RSSM_OK && l > 0) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", rssm_last_error());
            st = rssm_fail(RSSM_ERROR_DEVICE, "slot copy failed at layer %d after earlier layers were written: %s", l,
                           msg);
        }
    }
    if (st == RSSM_OK) st = rssm_dev_memset_async(ctx, dst->cursor + ds, 0, 4);
    return st == RSSM_OK && !wait ? RSSM_OK : settle(ctx, st);
}

rssm_status rssm_pool_copy(rssm_pool *src_pool, int32_t src_slot, rssm_pool *dst_pool, int32_t dst_slot)
{
    rssm_status st = check_pair("rssm_pool_copy", src_pool, src_slot, dst_pool, dst_slot);
    if (st != RSSM_OK) return st;
    return materialize_slot(src_pool, src_slot, dst_pool, dst_slot, 1);
}

/* Internal (prefix cache): takes a free slot without touching the device; the caller
 * overwrites its checkpoint, ring bases and cursor (rssm_rt_copy does) before anything reads
 * it. The ring entries keep old bytes, never read behind a zero cursor. */
rssm_status rssm_rt_acquire_uninit(rssm_pool *pool, int32_t *slot)
{
    if (pool->n_free == 0)
        return rssm_fail(RSSM_ERROR_POOL_FULL, "rssm_pool_acquire: all %d slots are held", pool->n_slots);
    *slot = pop_free(pool);
    return RSSM_OK;
}

/* The distance in bytes from layer 0's checkpoint region to each next layer's when it is the
 * same for every layer of p and every layer's checkpoint slot has layer 0's size (layers of one
 * shape and state dtype: one strided copy of that size serves them all), else 0. */
static size_t layer_pitch(const rssm_pool *p)
{
    if (p->n_layers < 2) return 0;
    const size_t pitch = p->lm[1].off_ckpt - p->lm[0].off_ckpt;
    for (int32_t l = 1; l < p->n_layers; l++)
        if (p->lm[l].off_ckpt - p->lm[l - 1].off_ckpt != pitch ||
            p->lm[l].per_slot.checkpoint != p->lm[0].per_slot.checkpoint)
            return 0;
    return pitch;
}

/* Raw copy of checkpoints, zero bases and cursor. No held checks here. wait: as rssm_rt_copy.
 * When both pools space their layers evenly (the usual case) the layers' checkpoints go in one
 * strided copy: a snapshot costs a few calls whatever the number of layers. */
static rssm_status copy_checkpoint(rssm_pool *src, int32_t ss, rssm_pool *dst, int32_t ds, int wait)
{
    rssm_status st = RSSM_OK;
    const size_t sp = layer_pitch(src), dp = layer_pitch(dst);
    const size_t max_pitch = (size_t)1 << 31; /* below every CUDA device's limit on copy pitches */
    if (src == dst && ss == ds) {
        /* nothing to copy */
    } else if (sp && dp && sp < max_pitch && dp < max_pitch) {
        size_t n;
        const void *s = slot_range(src, 0, 0, ss, &n);
        void *d = slot_range(dst, 0, 0, ds, &n);
        st = rssm_dev_copy2d_async(dst->ctx, d, dp, s, sp, n, (size_t)dst->n_layers);
    } else {
        for (int32_t l = 0; l < dst->n_layers && st == RSSM_OK; l++) {
            size_t n;
            const void *s = slot_range(src, l, 0, ss, &n);
            void *d = slot_range(dst, l, 0, ds, &n);
            st = rssm_dev_copy_async(dst->ctx, d, s, n);
        }
    }
    if (st == RSSM_OK) st = zero_slot(dst, ds, 0, 0);
    return st == RSSM_OK && !wait ? RSSM_OK : settle(dst->ctx, st);
}

rssm_status rssm_pool_copy_checkpoint(rssm_pool *src_pool, int32_t src_slot, rssm_pool *dst_pool, int32_t dst_slot)
{
    rssm_status st = check_pair("rssm_pool_copy_checkpoint", src_pool, src_slot, dst_pool, dst_slot);
    if (st != RSSM_OK) return st;
    return copy_checkpoint(src_pool, src_slot, dst_pool, dst_slot, 1);
}

/* Internal (prefix cache): the same copies without the held checks' names. */
rssm_status rssm_rt_copy(rssm_pool *src, int32_t ss, rssm_pool *dst, int32_t ds, int materialize, int wait)
{
    return materialize ? materialize_slot(src, ss, dst, ds, wait) : copy_checkpoint(src, ss, dst, ds, wait);
}

rssm_status rssm_pool_acquire_copy(rssm_pool *pool, rssm_pool *src_pool, int32_t src_slot, int32_t *slot)
{
    const char *fn = "rssm_pool_acquire_copy";
    if (!pool || !src_pool || !slot) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: a pointer is NULL", fn);
    rssm_status st = rssm_rt_check_held(fn, src_pool, src_slot, "source slot");
    if (st != RSSM_OK) return st;
    if (src_pool->ctx != pool->ctx)
        return rssm_fail(RSSM_ERROR_UNSUPPORTED, "%s: the pools live on different contexts (use export/import)", fn);
    if (!rssm_rt_same_layers(src_pool, pool))
        return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: the pools have different layers", fn);
    if (pool->n_free == 0) return rssm_fail(RSSM_ERROR_POOL_FULL, "%s: all %d slots are held", fn, pool->n_slots);
    const int32_t s = pop_free(pool);
    st = zero_slot(pool, s, 1, 1);
    if (st == RSSM_OK) st = materialize_slot(src_pool, src_slot, pool, s, 1);
    if (st != RSSM_OK) {
        push_free(pool, s);
        return st;
    }
    *slot = s;
    return RSSM_OK;
}

/* ---- export / import ------------------------------------------------------------------------ */
/*
 * Blob (little-endian):
 *   0  magic "RSSMSNAP"        8 bytes
 *   8  format version          u32 (RSSM_EXPORT_FORMAT_VERSION)
 *  12  form                    u32 (RSSM_EXPORT_RING / RSSM_EXPORT_MATERIALIZED)
 *  16  n_layers                u32
 *  20  header bytes            u32 (48 + 64 n_layers)
 *  24  payload bytes           u64
 *  32  cursor                  i32 (0 in the materialised form)
 *  36  reserved                u32 (0)
 *  40  checksum                u64: blob_hash of the header (this field as 0) then the payload
 *  48  per layer 16 x u32: every property of the layer that gives the payload its meaning, as
 *      resolved (defaults filled in): H, HV, K, V, gate, L, state dtype, ring dtype, io dtype,
 *      scale (f32 bits), qk_l2norm, has_lower_bound, lower_bound (f32 bits),
 *      fold_threshold (f32 bits), state layout (0 V-first, 1 K-first; 0 in blobs of older libraries), 0
 * payload, per layer: checkpoint slot bytes, ring_base slot bytes ([HV] i32, both gates since
 * format 4), and in the ring form ring_u, ring_k, ring_g slot bytes (the stored bits, as on
 * the device).
 * Import trusts nothing of a blob: besides the checksum (which only catches corruption) it
 * requires the pool's layers exactly, a cursor and ring bases of a consistent ring, and finite
 * values wherever a later step reads: the checkpoint and the live ring entries.
 */
#define HDR_FIXED 48
#define HDR_LAYER 64

static const char magic[8] = {'R', 'S', 'S', 'M', 'S', 'N', 'A', 'P'};

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static uint32_t get32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* The blob checksum (format version 2): the bytes as little-endian 64-bit words, word i into
 * lane i % 4 as h = (h ^ w) * P (P the FNV-1a 64 prime, odd, so each step is a bijection of h:
 * any single changed word changes its lane), a trailing partial word zero-padded, then the
 * four lanes and the byte count folded by FNV-1a 64 over their bytes. Four independent
 * multiply chains run at several bytes per cycle where byte-serial FNV-1a (version 1) ran at
 * under one: it dominated export and import. Streamed in pieces of whole words (only the last
 * may end mid-word). */
#define HASH_PRIME 0x100000001b3ull
#define HASH_OFFSET 0xcbf29ce484222325ull
typedef struct blob_hash {
    uint64_t lane[4];
    uint64_t words, bytes;
} blob_hash;

static inline uint64_t le64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static void hash_init(blob_hash *b)
{
    for (int i = 0; i < 4; i++)
        b->lane[i] = HASH_OFFSET + (uint64_t)i;
    b->words = b->bytes = 0;
}

/* One word (or the zero-padded tail of fewer than 8 bytes) into its lane. */
static void hash_word(blob_hash *b, const unsigned char *p, size_t k)
{
    uint64_t w = 0;
    for (size_t j = 0; j < k; j++)
        w |= (uint64_t)p[j] << (8 * j);
    uint64_t *h = &b->lane[b->words++ % 4];
    *h = (*h ^ w) * HASH_PRIME;
}

static void hash_update(blob_hash *b, const unsigned char *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n && b->words % 4; i += 8) /* up to lane 0 */
        hash_word(b, p + i, 8);
    uint64_t h0 = b->lane[0], h1 = b->lane[1], h2 = b->lane[2], h3 = b->lane[3];
    for (; i + 32 <= n; i += 32) { /* four independent chains */
        h0 = (h0 ^ le64(p + i)) * HASH_PRIME, h1 = (h1 ^ le64(p + i + 8)) * HASH_PRIME;
        h2 = (h2 ^ le64(p + i + 16)) * HASH_PRIME, h3 = (h3 ^ le64(p + i + 24)) * HASH_PRIME;
        b->words += 4;
    }
    b->lane[0] = h0, b->lane[1] = h1, b->lane[2] = h2, b->lane[3] = h3;
    for (; i < n; i += 8)
        hash_word(b, p + i, n - i < 8 ? n - i : 8);
    b->bytes += n;
}

static uint64_t hash_final(const blob_hash *b)
{
    uint64_t h = HASH_OFFSET;
    const uint64_t v[5] = {b->lane[0], b->lane[1], b->lane[2], b->lane[3], b->bytes};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 8; j++)
            h = (h ^ ((v[i] >> (8 * j)) & 0xff)) * HASH_PRIME;
    return h;
}

/* Tensors of the payload for a form: 0 ckpt, 4 base, then 1 u, 2 k, 3 g (ring form). */
static const int payload_tensors[5] = {0, 4, 1, 2, 3};
static int n_payload_tensors(uint32_t form) { return form == RSSM_EXPORT_RING ? 5 : 2; }

static size_t payload_bytes(const rssm_pool *p, uint32_t form)
{
    size_t b = 0;
    for (int32_t l = 0; l < p->n_layers; l++)
        for (int t = 0; t < n_payload_tensors(form); t++) {
            size_t n;
            slot_range(p, l, payload_tensors[t], 0, &n);
            b += n;
        }
    return b;
}

static size_t header_bytes(const rssm_pool *p) { return HDR_FIXED + (size_t)HDR_LAYER * p->n_layers; }

rssm_status rssm_pool_export_size(const rssm_pool *pool, uint32_t flags, size_t *bytes)
{
    if (!pool || !bytes) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_pool_export_size: pool or bytes is NULL");
    if (flags != RSSM_EXPORT_RING && flags != RSSM_EXPORT_MATERIALIZED)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "rssm_pool_export_size: unknown form %u", flags);
    *bytes = header_bytes(pool) + payload_bytes(pool, flags);
    return RSSM_OK;
}

static void write_header(const rssm_pool *p, unsigned char *h, uint32_t form, int32_t cursor, size_t payload)
{
    memset(h, 0, header_bytes(p));
    memcpy(h, magic, 8);
    put32(h + 8, RSSM_EXPORT_FORMAT_VERSION);
    put32(h + 12, form);
    put32(h + 16, (uint32_t)p->n_layers);
    put32(h + 20, (uint32_t)header_bytes(p));
    put64(h + 24, payload);
    put32(h + 32, (uint32_t)cursor);
    for (int32_t l = 0; l < p->n_layers; l++) {
        const rssm_layer ly = rssm_layer_canonical(&p->lm[l].layer);
        unsigned char *d = h + HDR_FIXED + (size_t)HDR_LAYER * l;
        const uint32_t v[16] = {(uint32_t)ly.num_k_heads, (uint32_t)ly.num_v_heads,    (uint32_t)ly.head_k_dim,
                                (uint32_t)ly.head_v_dim,  (uint32_t)ly.gate,           (uint32_t)ly.ring_len,
                                (uint32_t)ly.state_dtype, (uint32_t)ly.ring_dtype,     (uint32_t)ly.io_dtype,
                                f32_bits(ly.scale),       (uint32_t)ly.qk_l2norm,      (uint32_t)ly.has_lower_bound,
                                f32_bits(ly.lower_bound), f32_bits(ly.fold_threshold), (uint32_t)ly.state_layout};
        for (int i = 0; i < 16; i++)
            put32(d + 4 * i, v[i]);
    }
}

rssm_status rssm_pool_export(rssm_pool *pool, int32_t slot, uint32_t flags, void *buf, size_t capacity, size_t *written)
{
    const char *fn = "rssm_pool_export";
    if (!pool || !buf || !written) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: pool, buf or written is NULL", fn);
    rssm_status st = rssm_rt_check_held(fn, pool, slot, "slot");
    if (st != RSSM_OK) return st;
    size_t need;
    if ((st = rssm_pool_export_size(pool, flags, &need)) != RSSM_OK) return st;
    if (capacity < need)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: buffer of %zu bytes, the blob needs %zu", fn, capacity, need);
    int32_t cursor = 0, from = slot;
    if (flags == RSSM_EXPORT_MATERIALIZED) {
        from = pool->n_slots; /* scratch */
        if ((st = materialize_slot(pool, slot, pool, from, 1)) != RSSM_OK) return st;
    } else if ((st = rssm_pool_cursor(pool, slot, &cursor)) != RSSM_OK) {
        return st;
    }
    unsigned char *out = buf;
    const size_t hb = header_bytes(pool);
    size_t pos = hb;
    for (int32_t l = 0; l < pool->n_layers && st == RSSM_OK; l++)
        for (int t = 0; t < n_payload_tensors(flags) && st == RSSM_OK; t++) {
            size_t n;
            const void *src = slot_range(pool, l, payload_tensors[t], from, &n);
            if (n) st = rssm_dev_download(pool->ctx, out + pos, src, n);
            pos += n;
        }
    if (st != RSSM_OK) return st;
    write_header(pool, out, flags, cursor, pos - hb);
    blob_hash bh;
    hash_init(&bh);
    hash_update(&bh, out, hb);
    hash_update(&bh, out + hb, pos - hb);
    put64(out + 40, hash_final(&bh));
    *written = pos;
    return RSSM_OK;
}

/* Element i of a payload tensor of dtype d is a finite number (bf16: exponent not all ones). */
static int finite_at(const unsigned char *p, rssm_dtype d, size_t i)
{
    if (d == RSSM_DTYPE_BF16) return ((p[2 * i] | p[2 * i + 1] << 8) & 0x7f80u) != 0x7f80u;
    if (d == RSSM_DTYPE_F64) {
        const uint64_t u = get64(p + 8 * i);
        return ((u >> 52) & 0x7ff) != 0x7ff;
    }
    return (get32(p + 4 * i) & 0x7f800000u) != 0x7f800000u;
}

static int all_finite(const unsigned char *p, rssm_dtype d, size_t first, size_t count)
{
    for (size_t i = first; i < first + count; i++)
        if (!finite_at(p, d, i)) return 0;
    return 1;
}

/* Finite values wherever a later step reads this layer's payload (at `pl`): the checkpoint and
 * each head's live ring entries, those of cursor values base .. cursor - 1 (at the positions of
 * rssm_ring_pos: GDN base .. cursor - 1, KDA 0 .. cursor - base - 1; a GDN key head's keys at
 * the live positions of any of its value heads). Bases are already within [0, cursor]. */
static rssm_status check_layer_payload(const char *fn, const rssm_pool *pool, int32_t l, uint32_t form,
                                       const unsigned char *pl, int32_t cursor)
{
    const rssm_pool_layer_mem *m = &pool->lm[l];
    const rssm_layer *ly = &m->layer;
    const int HV = ly->num_v_heads, K = ly->head_k_dim, V = ly->head_v_dim, L = ly->ring_len;
    const int kda = ly->gate == RSSM_GATE_KDA, group = HV / ly->num_k_heads, gk = kda ? K : 1;
    const rssm_dtype g_dtype = ly->ring_dtype == RSSM_DTYPE_F64 ? RSSM_DTYPE_F64 : RSSM_DTYPE_F32;
    if (!all_finite(pl, ly->state_dtype, 0, (size_t)HV * V * K))
        return rssm_fail(RSSM_ERROR_BAD_FORMAT, "%s: layer %d: the checkpoint holds a NaN or an infinity", fn, l);
    if (form != RSSM_EXPORT_RING) return RSSM_OK;
    const unsigned char *base = pl + m->per_slot.checkpoint, *u = base + m->per_slot.ring_base;
    const unsigned char *k = u + m->per_slot.ring_u, *g = k + m->per_slot.ring_k;
    for (int hv = 0; hv < HV; hv++) {
        const int32_t b = (int32_t)get32(base + 4 * (size_t)hv), h = cursor - b;
        const size_t kh = kda ? (size_t)hv : (size_t)(hv / group), p0 = (size_t)rssm_ring_pos(ly, b, b);
        if (!all_finite(u, ly->ring_dtype, ((size_t)hv * L + p0) * V, (size_t)h * V) ||
            !all_finite(k, ly->ring_dtype, (kh * L + p0) * K, (size_t)h * K) ||
            !all_finite(g, g_dtype, ((size_t)hv * L + p0) * gk, (size_t)h * gk))
            return rssm_fail(RSSM_ERROR_BAD_FORMAT,
                             "%s: layer %d head %d: a live ring entry holds a NaN or an infinity", fn, l, hv);
    }
    return RSSM_OK;
}

rssm_status rssm_pool_import(rssm_pool *pool, const void *buf, size_t bytes, int32_t *slot)
{
    const char *fn = "rssm_pool_import";
    if (!pool || !buf || !slot) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: pool, buf or slot is NULL", fn);
    const unsigned char *in = buf;
    if (bytes < HDR_FIXED)
        return rssm_fail(RSSM_ERROR_BAD_FORMAT, "%s: %zu bytes is shorter than a header (%d)", fn, bytes, HDR_FIXED);
    if (memcmp(in, magic, 8)) return rssm_fail(RSSM_ERROR_BAD_FORMAT, "%s: not a replayssm slot blob (magic)", fn);
    const uint32_t version = get32(in + 8), form = get32(in + 12), n_layers = get32(in + 16), hb = get32(in + 20);
    const uint64_t pb = get64(in + 24);
    const int32_t cursor = (int32_t)get32(in + 32);
    if (version != RSSM_EXPORT_FORMAT_VERSION)
        return rssm_fail(RSSM_ERROR_BAD_FORMAT, "%s: format version %u, this library reads version %u", fn, version,
                         RSSM_EXPORT_FORMAT_VERSION);
    if (form != RSSM_EXPORT_RING && form != RSSM_EXPORT_MATERIALIZED)
        return rssm_fail(RSSM_ERROR_BAD_FORMAT, "%s: unknown form %u", fn, form);
    if (n_layers != (uint32_t)pool->n_layers)
        return rssm_fail(RSSM_ERROR_BAD_FORMAT, "%s: the blob has %u layers, the pool %d", fn, n_layers,
                         pool->n_layers);
    if (hb != header_bytes(pool) || get32(in + 36) != 0)
        return rssm_fail(RSSM_ERROR_BAD_FORMAT, "%s: header size %u, expected %zu", fn, hb, header_bytes(pool));
    if (bytes < hb) return rssm_fail(RSSM_ERROR_BAD_FORMAT, "%s: blob truncated inside the header", fn);
    const size_t want = payload_bytes(pool, form);
    if (pb != want || bytes != hb + want)
        return rssm_fail(RSSM_ERROR_BAD_FORMAT,
                         "%s: payload of %llu bytes in a blob of %zu; this pool's shape needs %zu", fn,
                         (unsigned long long)pb, bytes, want);
    /* shape: compare with what this pool would write */
    unsigned char *mine = malloc(hb);
    if (!mine) return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    write_header(pool, mine, form, cursor, want);
    const int shape_ok = !memcmp(mine + HDR_FIXED, in + HDR_FIXED, hb - HDR_FIXED);
    int bad_layer = 0;
    for (int32_t l = 0; !shape_ok && l < pool->n_layers; l++)
        if (memcmp(mine + HDR_FIXED + HDR_LAYER * l, in + HDR_FIXED + HDR_LAYER * l, HDR_LAYER)) {
            bad_layer = l;
            break;
        }
    free(mine);
    if (!shape_ok)
        return rssm_fail(RSSM_ERROR_BAD_FORMAT,
                         "%s: layer %d of the blob differs from the pool's (shape, dtypes, scale, normalisation, "
                         "gate bound, fold threshold or state layout)",
                         fn, bad_layer);
    /* checksum over the header with its checksum field as 0, then the payload */
    unsigned char zero8[8] = {0};
    blob_hash bh;
    hash_init(&bh);
    hash_update(&bh, in, 40);
    hash_update(&bh, zero8, 8);
    hash_update(&bh, in + 48, hb - 48);
    hash_update(&bh, in + hb, want);
    if (hash_final(&bh) != get64(in + 40))
        return rssm_fail(RSSM_ERROR_CHECKSUM, "%s: checksum mismatch (corrupted blob)", fn);
    /* semantic checks: cursor and ring bases */
    const int32_t L = pool->lm[0].layer.ring_len;
    if (form == RSSM_EXPORT_MATERIALIZED ? cursor != 0 : (cursor < 0 || cursor > L))
        return rssm_fail(RSSM_ERROR_BAD_FORMAT, "%s: cursor %d outside [0, %d]", fn, cursor,
                         form == RSSM_EXPORT_RING ? L : 0);
    size_t pos = hb;
    for (int32_t l = 0; l < pool->n_layers; l++) {
        const size_t layer_pos = pos;
        for (int t = 0; t < n_payload_tensors(form); t++) {
            size_t n;
            slot_range(pool, l, payload_tensors[t], 0, &n);
            if (payload_tensors[t] == 4)
                for (size_t i = 0; i < n / 4; i++) {
                    const int32_t base = (int32_t)get32(in + pos + 4 * i);
                    if (base < 0 || base > cursor)
                        return rssm_fail(RSSM_ERROR_BAD_FORMAT, "%s: layer %d head %zu ring_base %d outside [0, %d]",
                                         fn, l, i, base, cursor);
                }
            pos += n;
        }
        rssm_status fst = check_layer_payload(fn, pool, l, form, in + layer_pos, cursor);
        if (fst != RSSM_OK) return fst;
    }
    if (pool->n_free == 0) return rssm_fail(RSSM_ERROR_POOL_FULL, "%s: all %d slots are held", fn, pool->n_slots);
    const int32_t s = pop_free(pool);
    rssm_status st = zero_slot(pool, s, 0, form != RSSM_EXPORT_RING);
    pos = hb;
    for (int32_t l = 0; l < pool->n_layers && st == RSSM_OK; l++)
        for (int t = 0; t < n_payload_tensors(form) && st == RSSM_OK; t++) {
            size_t n;
            void *dst = slot_range(pool, l, payload_tensors[t], s, &n);
            if (n) st = rssm_dev_upload(pool->ctx, dst, in + pos, n);
            pos += n;
        }
    if (st == RSSM_OK) st = rssm_dev_upload(pool->ctx, pool->cursor + s, &cursor, 4);
    st = settle(pool->ctx, st);
    if (st != RSSM_OK) {
        push_free(pool, s);
        return st;
    }
    *slot = s;
    return RSSM_OK;
}

/* ---- validation ----------------------------------------------------------------------------- */

rssm_status rssm_pool_validate(const rssm_pool *pool)
{
    const char *fn = "rssm_pool_validate";
    if (!pool) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: pool is NULL", fn);
    if (pool->n_free < 0 || pool->n_free > pool->n_slots)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: free count %d outside [0, %d]", fn, pool->n_free, pool->n_slots);
    int32_t held = 0;
    for (int32_t s = 0; s < pool->n_slots; s++)
        held += pool->held[s] != 0;
    if (held + pool->n_free != pool->n_slots)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: %d held + %d free != %d slots", fn, held, pool->n_free,
                         pool->n_slots);
    uint8_t *seen = calloc((size_t)pool->n_slots, 1);
    int32_t *cur = malloc(sizeof(int32_t) * (size_t)pool->slots_total);
    rssm_status st = RSSM_OK;
    if (!seen || !cur) st = rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    for (int32_t i = 0; i < pool->n_free && st == RSSM_OK; i++) {
        const int32_t s = pool->free_stack[i];
        if (s < 0 || s >= pool->n_slots || seen[s]++ || pool->held[s])
            st = rssm_fail(RSSM_ERROR_BAD_ARGUMENT,
                           "%s: free list entry %d (slot %d) is out of range, repeated or held", fn, i, s);
    }
    if (st == RSSM_OK) st = rssm_dev_sync(pool->ctx);
    if (st == RSSM_OK) st = rssm_dev_download(pool->ctx, cur, pool->cursor, sizeof(int32_t) * pool->slots_total);
    const int32_t L = pool->lm[0].layer.ring_len;
    for (int32_t s = 0; s < pool->n_slots && st == RSSM_OK; s++)
        if (pool->held[s] && (cur[s] < 0 || cur[s] > L))
            st = rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: held slot %d has cursor %d outside [0, %d]", fn, s, cur[s], L);
    free(seen);
    free(cur);
    return st;
}
