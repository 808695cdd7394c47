/*
 * host.c — the back-end entries shared by the devices whose memory is host memory (the
 * reference and the CPU back end): 64-byte aligned allocations, copies done on return, no
 * stream, and the cursor and planner rules applied row by row.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/host.h"
#include "runtime/plan_rules.h"

rssm_status rssm_host_alloc(rssm_context *ctx, size_t bytes, void **out)
{
    (void)ctx;
    /* rounded up to whole 64-byte lines, plus one */
    *out = bytes < SIZE_MAX - 128 ? aligned_alloc(64, (bytes + 63) / 64 * 64 + 64) : NULL;
    if (!*out) return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "%zu bytes of host memory", bytes);
    return RSSM_OK;
}

void rssm_host_free(rssm_context *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

rssm_status rssm_host_memset(rssm_context *ctx, void *dst, int byte, size_t bytes, int sync)
{
    (void)ctx, (void)sync;
    memset(dst, byte, bytes);
    return RSSM_OK;
}

rssm_status rssm_host_memcpy(rssm_context *ctx, void *dst, const void *src, size_t bytes, rssm_copy_kind kind, int sync)
{
    (void)ctx, (void)kind, (void)sync;
    memmove(dst, src, bytes);
    return RSSM_OK;
}

rssm_status rssm_host_copy2d(rssm_context *ctx, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                             size_t rows)
{
    (void)ctx;
    for (size_t r = 0; r < rows; r++)
        memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    return RSSM_OK;
}

rssm_status rssm_host_sync(rssm_context *ctx)
{
    (void)ctx;
    return RSSM_OK;
}

rssm_status rssm_host_stream_order(rssm_context *ctx, void *stream, int ctx_waits)
{
    (void)ctx, (void)stream, (void)ctx_waits;
    return RSSM_OK;
}

void *rssm_host_stream(rssm_context *ctx)
{
    (void)ctx;
    return NULL;
}

rssm_status rssm_host_cursor(rssm_context *ctx, const rssm_cursor_params *p, void *stream)
{
    (void)ctx, (void)stream;
    for (int b = 0; b < p->batch; b++) {
        const int s = p->slot[b];
        if (s < 0) continue;
        const int forced = p->fold ? p->fold[b] != 0 : 0;
        int32_t *c = &p->cursor[s];
        switch (p->op) {
        case RSSM_CURSOR_ADVANCE:
            *c = rssm_cursor_after_decode(*c, p->ring_len, forced);
            break;
        case RSSM_CURSOR_COMMIT:
            *c = rssm_cursor_after_commit(*c, p->tokens, p->ring_len, forced, p->accepted[b]);
            break;
        case RSSM_CURSOR_RESET:
            *c = 0;
            break;
        }
    }
    return RSSM_OK;
}

rssm_status rssm_host_plan_fold(rssm_context *ctx, const rssm_plan_params *p, void *stream)
{
    (void)ctx, (void)stream;
    for (int32_t b = 0; b < p->batch; b++)
        p->fold[b] = rssm_rt_fold_rule(p->slot[b], p->n_slots, p->seq_len[b], p->mode, p->track, *p->every);
    return RSSM_OK;
}

rssm_status rssm_host_plan_seq(rssm_context *ctx, const rssm_plan_params *p, void *stream)
{
    (void)ctx, (void)stream;
    for (int32_t b = 0; b < p->batch; b++)
        p->seq_len[b] = rssm_rt_seq_rule(p->slot[b], p->n_slots, p->seq_len[b], p->accepted ? p->accepted[b] : 1);
    return RSSM_OK;
}
