/*
 * plan.c — the step planner: static per-batch-size device buffers and the per-step calls
 * around the layers' kernel calls.
 *
 *   rssm_plan_set    (host, once per step, outside a graph)  slots + seq lens: one upload
 *   rssm_plan_begin  (capturable)  fold[b] from seq_len[b]   (plan_rules.h); a small-batch step
 *                    where the back end can: the drain (every live row's rings folded, cursor 0)
 *   ... every layer: rssm_decode_replay / rssm_verify with rssm_plan_io's slot and fold ...
 *   rssm_plan_end    (capturable)  rssm_advance (not after the drain) / rssm_commit, then
 *                    seq_len[b] += 1 / accepted[b]
 *
 * Device memory (one allocation, each buffer on a 256-byte boundary):
 *   slot [batch] i32 | seq_len [batch] i32 | every [1] i32 | accepted [batch] i32 | fold [batch] u8 |
 *   arrived [1] i32 | layers [n_layers] rssm_plan_layer (the drain's: counter and layer table)
 * `every` is 1 when the step is a small batch that folds every live row (rssm_plan_set_small_batch).
 * The host keeps a staging copy of slot, seq_len and every with the same layout, so that the
 * three go up in one upload. On CUDA the fold and seq_len updates are kernels (src/cuda/plan_kernels.cu);
 * on host devices the same rules run as loops here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "runtime/runtime.h"

struct rssm_plan {
    rssm_pool *pool;
    int32_t batch, track;
    unsigned char *mem;  /* device */
    unsigned char *host; /* staging: [slot | seq_len | every] as on the device */
    size_t bytes, off_seq, off_every, off_acc, off_fold;
    int32_t *slot, *seq, *every, *acc, *arrived; /* device */
    uint8_t *fold;                               /* device */
    rssm_plan_layer *layers;                     /* device: the pool's layers, for the drain */
    int32_t max_heads, ring_bytes;               /* the most value heads, ring bytes of a head */
    int32_t fold_heads; /* RSSM_PLAN_SMALL_BATCH_AUTO: value heads per SM (small_batch_heads) */
    /* the back end drains small-batch steps for every layer of the pool (plan_drain), so that
     * they run packed decode's kernels (io.fold_every) */
    int drain;
    /* rssm_plan_set's duplicate check in O(n): mark[s] = (call << 32) | row of the first row that
     * named slot s in call number `call` (host [pool n_slots]; stale entries have an older call) */
    uint64_t *mark;
    uint32_t call;
    /* small batches: a decode step of at most small_rows live rows folds every row (0: never;
     * resolved from RSSM_PLAN_SMALL_BATCH_AUTO at the call that set it) */
    int32_t small_rows;
    int set;     /* rssm_plan_set was called */
    int begun;   /* between begin and end */
    int drained; /* this step began with the drain */
    rssm_plan_mode mode;
    int32_t tokens;
};

static size_t al(size_t x) { return (x + RSSM_RT_ALIGN - 1) / RSSM_RT_ALIGN * RSSM_RT_ALIGN; }

/* the planner's buffers as the back end's per-row kernels take them */
static rssm_plan_params plan_params(const rssm_plan *p, rssm_plan_mode mode)
{
    rssm_plan_params pp = {p->batch,      p->pool->n_slots,  (int32_t)mode,
                           p->track,      p->slot,           p->seq,
                           p->every,      p->fold,           mode == RSSM_PLAN_VERIFY ? p->acc : NULL,
                           p->layers,     p->pool->n_layers, p->max_heads,
                           p->ring_bytes, p->arrived};
    return pp;
}

/* the host staging copy of the `every` word (what the last rssm_plan_set uploaded) */
static int32_t *staged_every(const rssm_plan *p) { return (int32_t *)(p->host + p->off_every); }

/* the drain's layer table: the pool's layers and their device states */
static rssm_status upload_layers(rssm_plan *p)
{
    const rssm_pool *pool = p->pool;
    rssm_plan_layer *t = calloc((size_t)pool->n_layers, sizeof *t);
    if (!t) return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "rssm_plan_create: out of host memory");
    for (int32_t l = 0; l < pool->n_layers; l++) {
        t[l].layer = pool->lm[l].layer;
        t[l].state = rssm_rt_state(pool, l);
        t[l].group = t[l].layer.num_v_heads / t[l].layer.num_k_heads;
    }
    rssm_status st = rssm_dev_upload(pool->ctx, p->layers, t, sizeof *t * (size_t)pool->n_layers);
    if (st == RSSM_OK) st = rssm_dev_sync(pool->ctx);
    free(t);
    return st;
}

/* RSSM_PLAN_SMALL_BATCH_AUTO on CUDA, layers of K = V = 128 (the fast kernels' shape, the one
 * measured): fold every row while the step has at most this many value heads per multiprocessor
 * (a pool takes its layers' least). There bench-step measured the drained step (packed decode's
 * kernels) faster than replay's (bench/results/README.md, "Small batches"):
 * - f32 state, 2 (8 rows of 32 heads on 132 SMs): on an H200 GDN 26%, 28%, 9% and 8% at 1, 2, 4
 *   and 8 rows, KDA 25%, 27%, 15% and 7%; from 10 rows replay's step is as fast or faster;
 * - bf16 state, GDN 4 (16 rows), KDA 6 (24 rows): on an H100 (36 layers, the streaming kernel
 *   taking the folded steps where it takes packed decode), GDN 21% faster at 8 rows, 9% at 16
 *   (503.2 against 553.5 us), 8% slower at 20 and more above; KDA 32% faster at 8 rows, 26% at 16,
 *   5% at 24, level at 28 and 3.5% faster at 32, where packed decode itself leads replay by only 5%
 *   (bench/results/small-batch-bf16-2026-12-05/, calls S2 and S3).
 * Host devices: never (the caller checks plan->drain). */
static int32_t small_batch_heads(const rssm_layer *ly)
{
    if (ly->state_dtype != RSSM_DTYPE_BF16) return 2;
    return ly->gate == RSSM_GATE_KDA ? 6 : 4;
}

rssm_status rssm_plan_create(rssm_pool *pool, int32_t batch, int32_t track_interval, rssm_plan **out)
{
    const char *fn = "rssm_plan_create";
    if (!out) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: out is NULL", fn);
    *out = NULL;
    if (!pool) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: pool is NULL", fn);
    if (batch < 1 || batch > (1 << 20))
        return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: batch %d outside [1, 2^20]", fn, batch);
    if (track_interval < 0)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: track_interval %d < 0 (0 = no forced folds)", fn,
                         track_interval);
    rssm_plan *p = calloc(1, sizeof *p);
    if (!p) return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    p->pool = pool;
    p->batch = batch;
    p->track = track_interval;
    const size_t n4 = al((size_t)batch * 4);
    p->off_seq = n4;
    p->off_every = 2 * n4;
    p->off_acc = p->off_every + RSSM_RT_ALIGN;
    p->off_fold = p->off_acc + n4;
    const size_t off_arrived = p->off_fold + al((size_t)batch), off_layers = off_arrived + RSSM_RT_ALIGN;
    p->bytes = off_layers + al(sizeof(rssm_plan_layer) * (size_t)pool->n_layers);
    p->drain = pool->ctx->backend->drain_ok != NULL;
    for (int32_t l = 0; l < pool->n_layers; l++) {
        const rssm_layer *ly = &pool->lm[l].layer;
        p->drain = p->drain && pool->ctx->backend->drain_ok(pool->ctx, ly);
        const int32_t rb = ly->ring_len * ly->head_k_dim * (int32_t)rssm_dtype_size(ly->ring_dtype);
        if (ly->num_v_heads > p->max_heads) p->max_heads = ly->num_v_heads;
        if (rb > p->ring_bytes) p->ring_bytes = rb;
        const int32_t fh = small_batch_heads(ly);
        if (l == 0 || fh < p->fold_heads) p->fold_heads = fh;
    }
    p->host = calloc(1, p->off_acc);
    p->mark = calloc((size_t)pool->n_slots, sizeof *p->mark);
    if (!p->host || !p->mark) {
        free(p->host), free(p->mark);
        free(p);
        return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    }
    void *mem = NULL;
    rssm_status st = rssm_dev_alloc(pool->ctx, p->bytes, &mem);
    if (st != RSSM_OK) {
        free(p->host), free(p->mark);
        free(p);
        return st;
    }
    p->mem = mem;
    p->slot = (int32_t *)p->mem;
    p->seq = (int32_t *)(p->mem + p->off_seq);
    p->every = (int32_t *)(p->mem + p->off_every);
    p->acc = (int32_t *)(p->mem + p->off_acc);
    p->fold = p->mem + p->off_fold;
    p->arrived = (int32_t *)(p->mem + off_arrived);
    p->layers = (rssm_plan_layer *)(p->mem + off_layers);
    /* every row padding, seq 0, accepted 0, no fold */
    int32_t *hs = (int32_t *)p->host;
    for (int32_t b = 0; b < batch; b++)
        hs[b] = -1;
    st = rssm_dev_memset(pool->ctx, p->mem, 0, p->bytes);
    if (st == RSSM_OK) st = rssm_dev_upload(pool->ctx, p->mem, p->host, p->off_acc);
    if (st == RSSM_OK && p->drain) st = upload_layers(p);
    if (st == RSSM_OK) st = rssm_dev_sync(pool->ctx);
    if (st != RSSM_OK) {
        rssm_plan_free(p);
        return st;
    }
    *out = p;
    return RSSM_OK;
}

void rssm_plan_free(rssm_plan *plan)
{
    if (!plan) return;
    rssm_dev_free(plan->pool->ctx, plan->mem);
    free(plan->host), free(plan->mark);
    free(plan);
}

size_t rssm_plan_memory(const rssm_plan *plan) { return plan ? plan->bytes : 0; }
int32_t rssm_plan_batch(const rssm_plan *plan) { return plan ? plan->batch : 0; }
const int32_t *rssm_plan_slot_buffer(const rssm_plan *plan) { return plan ? plan->slot : NULL; }
const uint8_t *rssm_plan_fold_buffer(const rssm_plan *plan) { return plan ? plan->fold : NULL; }
int32_t *rssm_plan_seq_len_buffer(const rssm_plan *plan) { return plan ? plan->seq : NULL; }
int32_t *rssm_plan_accepted_buffer(const rssm_plan *plan) { return plan ? plan->acc : NULL; }

rssm_status rssm_plan_set(rssm_plan *plan, int32_t n, const int32_t *slot, const int32_t *seq_len)
{
    const char *fn = "rssm_plan_set";
    if (!plan) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: plan is NULL", fn);
    if (n < 0 || n > plan->batch)
        return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: n %d outside [0, batch %d]", fn, n, plan->batch);
    if (n > 0 && !slot) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: slot is NULL", fn);
    if (plan->begun) return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: a step is in progress (begin without end)", fn);
    const rssm_pool *pool = plan->pool;
    if (++plan->call == 0) { /* 2^32 calls: every mark would look current again */
        memset(plan->mark, 0, sizeof *plan->mark * (size_t)pool->n_slots);
        plan->call = 1;
    }
    const uint64_t now = (uint64_t)plan->call << 32;
    for (int32_t i = 0; i < n; i++) {
        if (slot[i] == -1) continue;
        rssm_status st = rssm_rt_check_user(fn, pool, slot[i], "slot");
        if (st != RSSM_OK) return st;
        uint64_t *m = &plan->mark[slot[i]];
        if ((*m & ~0xffffffffull) == now)
            return rssm_fail(RSSM_ERROR_BAD_SLOT, "%s: slot %d is given to rows %d and %d", fn, slot[i],
                             (int32_t)(*m & 0xffffffffu), i);
        *m = now | (uint32_t)i;
        if (seq_len && seq_len[i] < 0)
            return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: seq_len[%d] = %d < 0", fn, i, seq_len[i]);
    }
    int32_t *hs = (int32_t *)plan->host, *hq = (int32_t *)(plan->host + plan->off_seq);
    int32_t live = 0;
    for (int32_t b = 0; b < plan->batch; b++) {
        hs[b] = b < n ? slot[b] : -1;
        hq[b] = (b < n && seq_len && slot[b] >= 0) ? seq_len[b] : 0;
        live += hs[b] >= 0;
    }
    *staged_every(plan) = live > 0 && live <= plan->small_rows;
    rssm_context *ctx = pool->ctx;
    rssm_status st = rssm_dev_sync(ctx); /* the previous step no longer reads the buffers */
    if (st == RSSM_OK) st = rssm_dev_upload(ctx, plan->mem, plan->host, plan->off_acc);
    if (st == RSSM_OK) plan->set = 1;
    return st;
}

rssm_status rssm_plan_set_accepted(rssm_plan *plan, int32_t n, const int32_t *accepted)
{
    const char *fn = "rssm_plan_set_accepted";
    if (!plan) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: plan is NULL", fn);
    if (n < 0 || n > plan->batch)
        return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: n %d outside [0, batch %d]", fn, n, plan->batch);
    if (n > 0 && !accepted) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: accepted is NULL", fn);
    const int32_t L = plan->pool->lm[0].layer.ring_len; /* a verify window holds at most L tokens */
    for (int32_t i = 0; i < n; i++)
        if (accepted[i] < 0 || accepted[i] > L)
            return rssm_fail(RSSM_ERROR_BAD_TOKENS, "%s: accepted[%d] = %d outside [0, L=%d]", fn, i, accepted[i], L);
    int32_t *tmp = calloc((size_t)plan->batch, 4);
    if (!tmp) return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    if (n > 0) memcpy(tmp, accepted, (size_t)n * 4);
    rssm_status st = rssm_dev_sync(plan->pool->ctx);
    if (st == RSSM_OK) st = rssm_dev_upload(plan->pool->ctx, plan->acc, tmp, (size_t)plan->batch * 4);
    if (st == RSSM_OK) st = rssm_dev_sync(plan->pool->ctx);
    free(tmp);
    return st;
}

rssm_status rssm_plan_set_small_batch(rssm_plan *plan, int32_t max_rows)
{
    const char *fn = "rssm_plan_set_small_batch";
    if (!plan) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: plan is NULL", fn);
    if (max_rows < RSSM_PLAN_SMALL_BATCH_AUTO)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT,
                         "%s: max_rows %d < 0 (0 = never, RSSM_PLAN_SMALL_BATCH_AUTO = by device)", fn, max_rows);
    if (plan->begun) return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: a step is in progress (begin without end)", fn);
    if (max_rows == RSSM_PLAN_SMALL_BATCH_AUTO) {
        /* measured where the back end drains (CUDA's fast kernels, every layer K = V = 128) */
        rssm_context_info info;
        rssm_context_get_info(plan->pool->ctx, &info);
        const int sms = plan->drain ? info.multiprocessors : 0;
        max_rows = sms * plan->fold_heads / plan->max_heads;
    }
    plan->small_rows = max_rows;
    return RSSM_OK;
}

int32_t rssm_plan_small_batch(const rssm_plan *plan) { return plan ? plan->small_rows : 0; }

rssm_status rssm_plan_begin(rssm_plan *plan, rssm_plan_mode mode, int32_t tokens, void *stream)
{
    const char *fn = "rssm_plan_begin";
    if (!plan) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: plan is NULL", fn);
    if (mode != RSSM_PLAN_DECODE && mode != RSSM_PLAN_VERIFY)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: unknown mode %d", fn, (int)mode);
    const int32_t L = plan->pool->lm[0].layer.ring_len;
    if (mode == RSSM_PLAN_DECODE && tokens != 1)
        return rssm_fail(RSSM_ERROR_BAD_TOKENS, "%s: decode takes one token per row (got %d)", fn, tokens);
    if (mode == RSSM_PLAN_VERIFY && (tokens < 1 || tokens > L))
        return rssm_fail(RSSM_ERROR_BAD_TOKENS, "%s: verify of %d tokens outside [1, L=%d]", fn, tokens, L);
    if (!plan->set) return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: rssm_plan_set was never called", fn);
    if (plan->begun) return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: the previous step was not ended", fn);
    const rssm_plan_params pp = plan_params(plan, mode);
    rssm_context *ctx = plan->pool->ctx;
    const int drain = plan->drain && mode == RSSM_PLAN_DECODE && *staged_every(plan);
    rssm_status st = drain ? ctx->backend->plan_drain(ctx, &pp, stream) : ctx->backend->plan_fold(ctx, &pp, stream);
    if (st != RSSM_OK) return st;
    plan->drained = drain;
    plan->mode = mode;
    plan->tokens = tokens;
    plan->begun = 1;
    return RSSM_OK;
}

rssm_status rssm_plan_io(const rssm_plan *plan, rssm_step_io *io)
{
    if (!plan || !io) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_plan_io: plan or io is NULL");
    io->batch = plan->batch;
    io->tokens = plan->begun ? plan->tokens : 1;
    io->slot = plan->slot;
    io->write_slot = NULL;
    io->cu_seqlens = NULL;
    io->fold = plan->fold;
    /* a small-batch step whose rows the begin drained: the layers run packed decode's kernels */
    io->fold_every = plan->begun && plan->drained;
    return RSSM_OK;
}

rssm_status rssm_plan_end(rssm_plan *plan, void *stream)
{
    const char *fn = "rssm_plan_end";
    if (!plan) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: plan is NULL", fn);
    if (!plan->begun) return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: no step in progress (call rssm_plan_begin)", fn);
    rssm_pool *pool = plan->pool;
    const rssm_state s0 = rssm_rt_state(pool, 0);
    const rssm_layer *l0 = &pool->lm[0].layer;
    rssm_status st = RSSM_OK;
    if (plan->mode == RSSM_PLAN_VERIFY)
        st = rssm_commit(pool->ctx, l0, &s0, plan->batch, plan->tokens, plan->slot, plan->fold, plan->acc, stream);
    else if (!plan->drained) /* a drained step's rows all folded from cursor 0: the advance leaves them there */
        st = rssm_advance(pool->ctx, l0, &s0, plan->batch, plan->slot, plan->fold, stream);
    if (st != RSSM_OK) return st;
    const rssm_plan_params pp = plan_params(plan, plan->mode);
    st = pool->ctx->backend->plan_seq(pool->ctx, &pp, stream);
    plan->begun = 0;
    return st;
}

rssm_status rssm_plan_fold_rows(const rssm_plan *plan, rssm_plan_mode mode, uint8_t *fold)
{
    if (!plan || !fold) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_plan_fold_rows: plan or fold is NULL");
    if (mode != RSSM_PLAN_DECODE && mode != RSSM_PLAN_VERIFY)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "rssm_plan_fold_rows: unknown mode %d", (int)mode);
    const int32_t *hs = (const int32_t *)plan->host, *hq = (const int32_t *)(plan->host + plan->off_seq);
    for (int32_t b = 0; b < plan->batch; b++)
        fold[b] = rssm_rt_fold_rule(hs[b], plan->pool->n_slots, hq[b], (int32_t)mode, plan->track, 0);
    return RSSM_OK;
}
