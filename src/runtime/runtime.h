/*
 * runtime.h — private structures of the runtime (state pool, step planner, prefix cache).
 *
 * Pool memory is one device allocation laid out as, per layer l:
 *   checkpoint_l, ring_u_l, ring_k_l, ring_g_l, ring_base_l   each [slots_total, ...]
 * then cursor [slots_total] i32 and idx [8] i32 (slot indices for the pool's own kernel
 * calls: idx[0] source, idx[4] destination). Every tensor starts on a 256-byte boundary.
 * slots_total = n_slots + 1: the last slot is scratch (materialised export).
 */
#ifndef RSSM_RUNTIME_H
#define RSSM_RUNTIME_H

#include "core/backend.h"
#include "runtime/plan_rules.h"

#define RSSM_RT_ALIGN 256

typedef struct rssm_pool_layer_mem {
    rssm_layer layer;
    rssm_state_bytes per_slot;                      /* bytes of one slot of each tensor (cursor field unused) */
    size_t off_ckpt, off_u, off_k, off_g, off_base; /* byte offsets into the pool memory */
} rssm_pool_layer_mem;

struct rssm_pool {
    rssm_context *ctx;
    int32_t n_layers, n_slots, slots_total;
    rssm_pool_layer_mem *lm; /* [n_layers] */
    unsigned char *mem;      /* device */
    size_t bytes, off_cursor, off_idx, slot_bytes;
    int32_t *cursor;     /* device [slots_total] */
    int32_t *idx;        /* device [8] */
    uint8_t *held;       /* host [n_slots]: RSSM_RT_FREE / _HELD_USER / _HELD_CACHE */
    int32_t *free_stack; /* host [n_slots]; free_stack[0 .. n_free) */
    int32_t n_free;
};

/* The device state of layer `l` (pointers into the pool memory). */
rssm_state rssm_rt_state(const rssm_pool *pool, int32_t l);
/* The pools' layers mean the same state (rssm_layer_same, layer by layer). */
int rssm_rt_same_layers(const rssm_pool *a, const rssm_pool *b);
/* Slot `s` is held: RSSM_OK, else RSSM_ERROR_NOT_FOUND with a message naming fn. */
rssm_status rssm_rt_check_held(const char *fn, const rssm_pool *pool, int32_t s, const char *what);

/* held[] values: a slot is free, held by the caller, or held by a prefix cache (a snapshot:
 * readable as a copy source, never released, stepped or written by the caller). */
#define RSSM_RT_FREE 0
#define RSSM_RT_HELD_USER 1
#define RSSM_RT_HELD_CACHE 2
/* Slot `s` is held by the caller (not a snapshot): RSSM_OK, else RSSM_ERROR_NOT_FOUND. */
rssm_status rssm_rt_check_user(const char *fn, const rssm_pool *pool, int32_t s, const char *what);

/* Copies (src, ss) into (dst, ds): materialise (1) or raw checkpoint (0); empty ring and
 * cursor 0 in dst, on the context's stream. No held checks (callers check). wait = 1:
 * synchronises before it returns; 0: only enqueued (a raw copy never blocks the host then; a
 * materialise still synchronises once before it uploads its slot table), except on failure. */
rssm_status rssm_rt_copy(rssm_pool *src, int32_t ss, rssm_pool *dst, int32_t ds, int materialize, int wait);
/* A free slot taken without device work (held by the user until the caller marks it); its
 * checkpoint, bases and cursor must be overwritten (rssm_rt_copy) before use. POOL_FULL when
 * none is free. */
rssm_status rssm_rt_acquire_uninit(rssm_pool *pool, int32_t *slot);

#endif /* RSSM_RUNTIME_H */
