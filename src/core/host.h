/*
 * host.h — the back-end entries of devices whose memory is host memory (the reference and
 * the CPU back end): allocation, copies, cursor moves and the planner's rules as host loops.
 */
#ifndef RSSM_HOST_H
#define RSSM_HOST_H

#include "core/backend.h"

rssm_status rssm_host_alloc(rssm_context *ctx, size_t bytes, void **out);
void rssm_host_free(rssm_context *ctx, void *ptr);
rssm_status rssm_host_memset(rssm_context *ctx, void *dst, int byte, size_t bytes, int sync);
rssm_status rssm_host_memcpy(rssm_context *ctx, void *dst, const void *src, size_t bytes, rssm_copy_kind kind,
                             int sync);
rssm_status rssm_host_copy2d(rssm_context *ctx, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                             size_t rows);
rssm_status rssm_host_sync(rssm_context *ctx);
rssm_status rssm_host_stream_order(rssm_context *ctx, void *stream, int ctx_waits);
void *rssm_host_stream(rssm_context *ctx);
/* Applies the cursor rules of replayssm.h row by row on host memory. */
rssm_status rssm_host_cursor(rssm_context *ctx, const rssm_cursor_params *p, void *stream);
rssm_status rssm_host_plan_fold(rssm_context *ctx, const rssm_plan_params *p, void *stream);
rssm_status rssm_host_plan_seq(rssm_context *ctx, const rssm_plan_params *p, void *stream);

/* Prefill's end on one value head of slot s: the ring entries of cursor values 0 .. n-1 (n =
 * the cursor, ring base 0 after prefill) become neutral, u = 0 and G = 0 (all-zero bits are 0 in
 * every dtype), so that a decode after prefill is right whether or not the cursors are reset. */
void rssm_host_ring_clear(const rssm_layer *l, const rssm_state *st, int64_t s, int hv, int n);

/* The host entries of a back-end table, for designated initialisers. */
#define RSSM_HOST_BACKEND_ENTRIES                                                                                      \
    .host_memory = 1, .cursor = rssm_host_cursor, .plan_fold = rssm_host_plan_fold, .plan_seq = rssm_host_plan_seq,    \
    .alloc = rssm_host_alloc, .free = rssm_host_free, .memset = rssm_host_memset, .memcpy = rssm_host_memcpy,          \
    .copy2d = rssm_host_copy2d, .sync = rssm_host_sync, .stream_order = rssm_host_stream_order,                        \
    .stream = rssm_host_stream

#endif /* RSSM_HOST_H */
