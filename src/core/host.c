/*
 * host.c — the back-end entries shared by the devices whose memory is host memory (the
 * reference and the CPU back end): 64-byte aligned allocations, copies done on return, no
 * stream, and the cursor and planner rules applied row by row.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/host.h"
#include "core/layer.h"
#include "core/layout.h"
#include "runtime/plan_rules.h"

/* Host memory is handed out zeroed. Large blocks are mapped pages, zero and committed only as
 * they are touched (a pool of many slots costs what its used slots hold), with their size in a
 * 64-byte header before the block; small ones come from the heap, zeroed, with 0 in the header. */
enum { HOST_HEADER = 64, HOST_MAP_MIN = 1 << 16 };

static size_t physical_bytes(void)
{
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : SIZE_MAX;
}

rssm_status rssm_host_alloc(rssm_context *ctx, size_t bytes, void **out)
{
    (void)ctx;
    *out = NULL;
    /* a whole 64-byte line past the end: SIMD tails may read it */
    const size_t total = bytes < SIZE_MAX / 2 ? HOST_HEADER + (bytes + 63) / 64 * 64 + 64 : SIZE_MAX;
    if (total > physical_bytes())
        return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "%zu bytes of host memory: more than this machine has (%zu)", bytes,
                         physical_bytes());
    unsigned char *base;
    if (total >= HOST_MAP_MIN) {
        base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED) base = NULL;
        if (base) memcpy(base, &total, sizeof total);
    } else {
        base = aligned_alloc(64, total);
        if (base) memset(base, 0, total);
    }
    if (!base) return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "%zu bytes of host memory", bytes);
    *out = base + HOST_HEADER;
    return RSSM_OK;
}

void rssm_host_free(rssm_context *ctx, void *ptr)
{
    (void)ctx;
    if (!ptr) return;
    unsigned char *base = (unsigned char *)ptr - HOST_HEADER;
    size_t mapped;
    memcpy(&mapped, base, sizeof mapped);
    if (mapped)
        munmap(base, mapped);
    else
        free(base);
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

void rssm_host_ring_clear(const rssm_layer *l, const rssm_state *st, int64_t s, int hv, int n)
{
    if (n <= 0) return;
    const size_t r = rssm_dtype_size(l->ring_dtype), g = l->ring_dtype == RSSM_DTYPE_F64 ? 8 : 4;
    const int gk = rssm_layer_gk(l);
    memset((char *)st->ring_u + rssm_ring_u_off(l, s, hv, 0) * r, 0, (size_t)n * l->head_v_dim * r);
    memset((char *)st->ring_g + rssm_ring_g_off(l, s, hv, 0, gk) * g, 0, (size_t)n * gk * g);
}
