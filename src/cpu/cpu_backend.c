/*
 * cpu_backend.c — the optimised CPU back end's function table: dispatches every op over
 * the thread pool in work items of one (row b, key head kh) = B * H items, static chunks.
 *
 * Rows are independent (core/ops.c rejects a slot used by two rows), and a work item owns a
 * whole key-head group, so a GDN group's shared ring_k is read before it is written
 * (cpu_kernels.c). Scratch comes from per-thread arenas made at init: nothing is
 * allocated on the hot path. The context's lock (core/ops.c) makes calls take turns.
 */
#include "core/host.h"
#include "cpu/cpu.h"
#include "cpu/cpu_internal.h"

typedef void (*item_fn)(const cpu_job *j, int b, int kh, cpu_arena *a);

typedef struct dispatch {
    cpu_job job;
    item_fn item;
    int heads_k; /* H */
} dispatch;

/* items [begin, end) of B * H: item = b * H + kh */
static void run_items(void *arg, int64_t begin, int64_t end, int thread)
{
    const dispatch *d = arg;
    cpu_arena *a = &d->job.arenas[thread];
    for (int64_t w = begin; w < end; w++) {
        a->used = 0;
        d->item(&d->job, (int)(w / d->heads_k), (int)(w % d->heads_k), a);
    }
}

static cpu_arena *arenas_of(rssm_context *ctx) { return ((cpu_impl *)ctx->impl)->arenas; }

static rssm_status cpu_step(rssm_context *ctx, const rssm_params *p, void *stream)
{
    (void)stream;
    dispatch d = {{p, NULL, rssm_cpu_vec_of(ctx), arenas_of(ctx)}, NULL, p->layer.num_k_heads};
    switch (p->op) {
    case RSSM_OP_DECODE_PACKED:
    case RSSM_OP_PREFILL:
        d.item = rssm_cpu_item_packed;
        break;
    case RSSM_OP_DECODE_REPLAY:
    case RSSM_OP_VERIFY:
        d.item = rssm_cpu_item_replay;
        break;
    default:
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "cpu: unknown op %d", (int)p->op);
    }
    rssm_cpu_parallel_for(ctx, (int64_t)p->io.batch * p->layer.num_k_heads, run_items, &d);
    return RSSM_OK;
}

static rssm_status cpu_materialize(rssm_context *ctx, const rssm_materialize_params *p, void *stream)
{
    (void)stream;
    dispatch d = {{NULL, p, rssm_cpu_vec_of(ctx), arenas_of(ctx)}, rssm_cpu_item_materialize, p->layer.num_k_heads};
    rssm_cpu_parallel_for(ctx, (int64_t)p->batch * p->layer.num_k_heads, run_items, &d);
    return RSSM_OK;
}

/* f32 and bf16 for state, ring and io; float64 is the reference's alone */
static rssm_status cpu_check_layer(const rssm_layer *l)
{
    if (l->state_dtype == RSSM_DTYPE_F64 || l->ring_dtype == RSSM_DTYPE_F64 || l->io_dtype == RSSM_DTYPE_F64)
        return rssm_fail(RSSM_ERROR_BAD_DTYPE, "f64 tensors are for the reference device only");
    return RSSM_OK;
}

const rssm_backend rssm_cpu_backend = {
    .name = "cpu",
    .init = rssm_cpu_init,
    .destroy = rssm_cpu_destroy,
    .info = rssm_cpu_info,
    .check_layer = cpu_check_layer,
    .step = cpu_step,
    .materialize = cpu_materialize,
    .parallel_for = rssm_cpu_parallel_for,
    RSSM_HOST_BACKEND_ENTRIES,
};
