/*
 * ops.c — the kernel-level calls: validate everything, fill one params struct, dispatch to
 * the context's back end.
 *
 * Validation happens before any work, so a failing call changes nothing. On host devices
 * (CPU, reference) slot indices, cursors and accepted counts are host memory and are checked
 * here too; on CUDA they live on the device and the kernels bound-check them instead.
 */
#include <stdlib.h>

#include "core/layer.h"
#include "core/layout.h"

/* ---- argument checks --------------------------------------------------------------------- */

#define NEED(ptr, what)                                                                                                \
    do {                                                                                                               \
        if (!(ptr)) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: %s is NULL", fn, what);                             \
    } while (0)

#define ALIGNED(ptr, what)                                                                                             \
    do {                                                                                                               \
        if ((ptr) && ((uintptr_t)(ptr)&15u))                                                                           \
            return rssm_fail(RSSM_ERROR_MISALIGNED, "%s: %s is not 16-byte aligned", fn, what);                        \
    } while (0)

/* slots, cursors and accepted counts are host memory and checked here (else the kernels check) */
static int host_device(const rssm_context *ctx) { return ctx->backend->host_memory; }

/* The state tensors an op needs are present and aligned. `ring`: replay tensors needed. */
/* The state's tensors that a call uses */
enum { USES_CHECKPOINT = 1, USES_RING = 2, USES_RING_BASE = 4, USES_CURSOR = 8, USES_ALL = 15 };

/* The bytes behind the used tensors of state `name` against what the layer needs for its
 * num_slots (rssm_state_size): a state sized for another shape or fewer slots is refused before
 * a kernel reads past its end. */
static rssm_status check_bytes(const char *fn, const char *name, const rssm_layer *l, const rssm_state *s, int uses)
{
    rssm_state_bytes need; /* l is resolved, num_slots checked by the caller */
    rssm_state_bytes_of(l, s->num_slots, &need);
    const rssm_state_bytes *have = &s->bytes;
    const struct {
        int use;
        const char *what;
        size_t have, need;
    } t[] = {{USES_CHECKPOINT, "checkpoint", have->checkpoint, need.checkpoint},
             {USES_RING, "ring_u", have->ring_u, need.ring_u},
             {USES_RING, "ring_k", have->ring_k, need.ring_k},
             {USES_RING, "ring_g", have->ring_g, need.ring_g},
             {USES_RING_BASE, "ring_base", have->ring_base, need.ring_base},
             {USES_CURSOR, "cursor", have->cursor, need.cursor}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if ((uses & t[i].use) && t[i].have < t[i].need)
            return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: %s.bytes.%s is %zu; the layer needs %zu for %d slots", fn, name,
                             t[i].what, t[i].have, t[i].need, s->num_slots);
    return RSSM_OK;
}

static rssm_status check_state(const char *fn, const rssm_layer *l, const rssm_state *s, int ring)
{
    NEED(s, "state");
    if (s->num_slots < 1) return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: state.num_slots %d < 1", fn, s->num_slots);
    NEED(s->checkpoint, "state.checkpoint");
    ALIGNED(s->checkpoint, "state.checkpoint");
    if (!ring) return check_bytes(fn, "state", l, s, USES_CHECKPOINT);
    NEED(s->ring_u, "state.ring_u");
    NEED(s->ring_k, "state.ring_k");
    NEED(s->ring_g, "state.ring_g");
    NEED(s->cursor, "state.cursor");
    NEED(s->ring_base, "state.ring_base");
    ALIGNED(s->ring_u, "state.ring_u");
    ALIGNED(s->ring_k, "state.ring_k");
    ALIGNED(s->ring_g, "state.ring_g");
    ALIGNED(s->ring_base, "state.ring_base");
    ALIGNED(s->cursor, "state.cursor");
    return check_bytes(fn, "state", l, s, USES_ALL);
}

/* A bitmap of num_slots bits in the context's scratch, all clear; grown (the only allocation)
 * when a state with more slots than before arrives. NULL when it cannot grow. */
static uint64_t *slot_bits(rssm_context *ctx, int32_t num_slots)
{
    const size_t words = ((size_t)num_slots + 63) / 64;
    if (words > ctx->slot_bits_words) {
        uint64_t *b = calloc(words, sizeof *b);
        if (!b) return NULL;
        free(ctx->slot_bits);
        ctx->slot_bits = b;
        ctx->slot_bits_words = words;
    }
    return ctx->slot_bits;
}

/* Slot indices in [-1, num_slots); with `unique`, no slot used twice among non-padding rows. */
static rssm_status check_slots_unique(rssm_context *ctx, const char *fn, const char *what, const int32_t *slot,
                                      int32_t batch, int32_t num_slots, int unique)
{
    for (int32_t b = 0; b < batch; b++)
        if (slot[b] < -1 || slot[b] >= num_slots)
            return rssm_fail(RSSM_ERROR_BAD_SLOT, "%s: %s[%d] = %d is outside [-1, %d)", fn, what, b, slot[b],
                             num_slots);
    if (!unique) return RSSM_OK;
    uint64_t *seen = slot_bits(ctx, num_slots);
    if (!seen) return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    int32_t b = 0, twice = -1;
    for (; b < batch; b++) {
        const int32_t s = slot[b];
        if (s < 0) continue;
        if (seen[s / 64] >> (s % 64) & 1u) {
            twice = b;
            break;
        }
        seen[s / 64] |= (uint64_t)1 << (s % 64);
    }
    for (int32_t c = 0; c < b; c++) /* leave the scratch clear */
        if (slot[c] >= 0) seen[slot[c] / 64] = 0;
    if (twice >= 0)
        return rssm_fail(RSSM_ERROR_BAD_SLOT, "%s: %s[%d] = %d is used by two rows", fn, what, twice, slot[twice]);
    return RSSM_OK;
}

/* Slot indices in [-1, num_slots); no slot used twice among non-padding rows. */
static rssm_status check_slots(rssm_context *ctx, const char *fn, const char *what, const int32_t *slot, int32_t batch,
                               int32_t num_slots)
{
    return check_slots_unique(ctx, fn, what, slot, batch, num_slots, 1);
}

/* Cursors and ring bases of the rows' slots are a consistent ring (0 <= base <= c <= L). */
static rssm_status check_cursors(const char *fn, const rssm_layer *l, const rssm_state *s, const int32_t *slot,
                                 int32_t batch)
{
    for (int32_t b = 0; b < batch; b++) {
        if (slot[b] < 0) continue;
        const int32_t c = s->cursor[slot[b]];
        if (c < 0 || c > l->ring_len)
            return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: cursor of slot %d is %d, outside [0, L=%d]", fn, slot[b], c,
                             l->ring_len);
        for (int hv = 0; hv < l->num_v_heads; hv++) {
            const int32_t base = s->ring_base[rssm_base_off(l, slot[b], hv)];
            if (base < 0 || base > c)
                return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: ring_base of slot %d head %d is %d, outside [0, %d]", fn,
                                 slot[b], hv, base, c);
        }
    }
    return RSSM_OK;
}

/* io.fold_every (host devices): every row with a slot folds and its ring is empty (cursor 0) */
static rssm_status check_fold_every(const char *fn, const rssm_state *s, const rssm_step_io *io)
{
    for (int32_t b = 0; b < io->batch; b++) {
        if (io->slot[b] < 0) continue;
        if (!io->fold[b]) return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: fold_every, but row %d does not fold", fn, b);
        const int32_t c = s->cursor[io->slot[b]];
        if (c != 0)
            return rssm_fail(RSSM_ERROR_BAD_ARGUMENT,
                             "%s: fold_every, but row %d (slot %d) has %d ring entries (fold them first: "
                             "rssm_plan_begin does on small-batch steps)",
                             fn, b, io->slot[b], c);
    }
    return RSSM_OK;
}

/* Token stride: 0 -> packed `dense`; else >= dense and (elem > 0, data read in 16-byte vectors) a
 * 16-byte multiple. */
static rssm_status resolve_stride(const char *fn, const char *what, int64_t *stride, int64_t dense, size_t elem)
{
    if (*stride == 0) {
        *stride = dense;
        return RSSM_OK;
    }
    if (*stride < dense)
        return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: %s %lld is smaller than one token (%lld)", fn, what,
                         (long long)*stride, (long long)dense);
    if (elem && (*stride * (int64_t)elem) % 16)
        return rssm_fail(RSSM_ERROR_MISALIGNED, "%s: %s %lld is not a multiple of 16 bytes", fn, what,
                         (long long)*stride);
    return RSSM_OK;
}

static rssm_status check_io(const char *fn, rssm_op op, const rssm_layer *l, const rssm_step_io *in, rssm_step_io *io)
{
    NEED(in, "io");
    *io = *in;
    if (io->batch < 0 || io->batch > (1 << 24))
        return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: batch %d outside [0, 2^24]", fn, io->batch);
    if (io->tokens < 1 || io->tokens > 65536)
        return rssm_fail(RSSM_ERROR_BAD_TOKENS, "%s: tokens %d outside [1, 65536]", fn, io->tokens);
    if (op == RSSM_OP_DECODE_REPLAY && io->tokens != 1)
        return rssm_fail(RSSM_ERROR_BAD_TOKENS, "%s: replay decode takes one token per row (T=%d); use rssm_verify", fn,
                         io->tokens);
    if (op == RSSM_OP_VERIFY && io->tokens > l->ring_len)
        return rssm_fail(RSSM_ERROR_BAD_TOKENS, "%s: T=%d tokens do not fit a ring of L=%d", fn, io->tokens,
                         l->ring_len);
    NEED(io->q, "io.q");
    NEED(io->k, "io.k");
    NEED(io->v, "io.v");
    NEED(io->o, "io.o");
    NEED(io->slot, "io.slot");
    if (io->g) {
        NEED(io->beta, "io.beta (with io.g)");
    } else {
        NEED(io->a, "io.a (or io.g)");
        NEED(io->b, "io.b (or io.beta)");
        NEED(io->A_log, "io.A_log");
        NEED(io->dt_bias, "io.dt_bias");
    }
    ALIGNED(io->q, "io.q");
    ALIGNED(io->k, "io.k");
    ALIGNED(io->v, "io.v");
    ALIGNED(io->a, "io.a");
    ALIGNED(io->b, "io.b");
    ALIGNED(io->A_log, "io.A_log");
    ALIGNED(io->dt_bias, "io.dt_bias");
    ALIGNED(io->g, "io.g");
    ALIGNED(io->beta, "io.beta");
    ALIGNED(io->o, "io.o");
    ALIGNED(io->slot, "io.slot");
    ALIGNED(io->write_slot, "io.write_slot");
    ALIGNED(io->fold, "io.fold");
    const size_t e = rssm_dtype_size(l->io_dtype);
    const int64_t hk = (int64_t)l->num_k_heads * l->head_k_dim, hvv = (int64_t)l->num_v_heads * l->head_v_dim;
    const int64_t na = (int64_t)l->num_v_heads * rssm_layer_gk(l);
    rssm_status st;
    if ((st = resolve_stride(fn, "q_stride", &io->q_stride, hk, e)) != RSSM_OK) return st;
    if ((st = resolve_stride(fn, "k_stride", &io->k_stride, hk, e)) != RSSM_OK) return st;
    if ((st = resolve_stride(fn, "v_stride", &io->v_stride, hvv, e)) != RSSM_OK) return st;
    if ((st = resolve_stride(fn, "a_stride", &io->a_stride, na, e)) != RSSM_OK) return st;
    if ((st = resolve_stride(fn, "b_stride", &io->b_stride, l->num_v_heads, 0)) != RSSM_OK) return st;
    /* precomputed gates: float (double with the f64 io dtype); KDA's g is read in 16-byte vectors */
    const size_t ge = l->io_dtype == RSSM_DTYPE_F64 ? 8 : 4;
    if ((st = resolve_stride(fn, "g_stride", &io->g_stride, na, l->gate == RSSM_GATE_KDA ? ge : 0)) != RSSM_OK)
        return st;
    if ((st = resolve_stride(fn, "beta_stride", &io->beta_stride, l->num_v_heads, 0)) != RSSM_OK) return st;
    if (op != RSSM_OP_DECODE_PACKED && io->write_slot)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: write_slot is for packed decode only", fn);
    if (op != RSSM_OP_PREFILL && io->cu_seqlens)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: cu_seqlens is for prefill only", fn);
    if (io->fold_every != 0 && (io->fold_every != 1 || op != RSSM_OP_DECODE_REPLAY || !io->fold))
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: fold_every %d (0, or 1 for replay decode with a fold array)", fn,
                         io->fold_every);
    ALIGNED(io->cu_seqlens, "io.cu_seqlens");
    return RSSM_OK;
}

/* Ragged prefill rows (host devices): cu_seqlens[0] = 0, every row's length within [1, T]
 * (a padding row's within [0, T]). */
static rssm_status check_cu_seqlens(const char *fn, const rssm_step_io *io)
{
    if (io->cu_seqlens[0] != 0)
        return rssm_fail(RSSM_ERROR_BAD_TOKENS, "%s: cu_seqlens[0] is %d, not 0", fn, io->cu_seqlens[0]);
    for (int32_t b = 0; b < io->batch; b++) {
        const int64_t n = (int64_t)io->cu_seqlens[b + 1] - io->cu_seqlens[b], lo = io->slot[b] < 0 ? 0 : 1;
        if (n < lo || n > io->tokens)
            return rssm_fail(RSSM_ERROR_BAD_TOKENS, "%s: row %d has %lld tokens (cu_seqlens), outside [%lld, %d]", fn,
                             b, (long long)n, (long long)lo, io->tokens);
    }
    return RSSM_OK;
}

static rssm_status check_ctx(const char *fn, rssm_context *ctx)
{
    if (!ctx) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: ctx is NULL", fn);
    return RSSM_OK;
}

static rssm_status step_locked(const char *fn, rssm_op op, rssm_context *ctx, const rssm_layer *layer,
                               const rssm_state *state, const rssm_step_io *io, void *stream)
{
    rssm_params p;
    rssm_status st;
    memset(&p, 0, sizeof p);
    p.op = op;
    if ((st = rssm_layer_resolve(ctx, layer, &p.layer)) != RSSM_OK) return st;
    if ((st = check_state(fn, &p.layer, state, op != RSSM_OP_DECODE_PACKED)) != RSSM_OK) return st;
    p.state = *state;
    if ((st = check_io(fn, op, &p.layer, io, &p.io)) != RSSM_OK) return st;
    p.group = p.layer.num_v_heads / p.layer.num_k_heads;
    p.gk = rssm_layer_gk(&p.layer);
    if (host_device(ctx)) {
        /* copy-on-write packed decode may fork one slot into several rows: reads may repeat */
        const int fork = op == RSSM_OP_DECODE_PACKED && p.io.write_slot;
        if ((st = check_slots_unique(ctx, fn, "slot", p.io.slot, p.io.batch, state->num_slots, !fork)) != RSSM_OK)
            return st;
        if (p.io.write_slot) {
            if ((st = check_slots(ctx, fn, "write_slot", p.io.write_slot, p.io.batch, state->num_slots)) != RSSM_OK)
                return st;
            for (int32_t b = 0; b < p.io.batch; b++) {
                if ((p.io.slot[b] < 0) != (p.io.write_slot[b] < 0))
                    return rssm_fail(RSSM_ERROR_BAD_SLOT, "%s: row %d pads only one of slot/write_slot", fn, b);
                for (int32_t j = 0; j < p.io.batch; j++)
                    if (j != b && p.io.write_slot[b] >= 0 && p.io.write_slot[b] == p.io.slot[j])
                        return rssm_fail(RSSM_ERROR_BAD_SLOT, "%s: slot %d is written by row %d and read by row %d", fn,
                                         p.io.write_slot[b], b, j);
            }
        }
        if (op != RSSM_OP_DECODE_PACKED && (st = check_cursors(fn, &p.layer, state, p.io.slot, p.io.batch)) != RSSM_OK)
            return st;
        if (p.io.fold_every && (st = check_fold_every(fn, state, &p.io)) != RSSM_OK) return st;
        if (p.io.cu_seqlens && (st = check_cu_seqlens(fn, &p.io)) != RSSM_OK) return st;
    }
    if (p.io.batch == 0) return RSSM_OK;
    if (!ctx->backend->step)
        return rssm_fail(RSSM_ERROR_UNSUPPORTED, "%s: the %s back end has no step", fn, ctx->backend->name);
    return ctx->backend->step(ctx, &p, stream);
}

/* One call at a time per context: its checks' scratch and the CPU back end's per-thread
 * scratch belong to the context. */
static rssm_status run_step(const char *fn, rssm_op op, rssm_context *ctx, const rssm_layer *layer,
                            const rssm_state *state, const rssm_step_io *io, void *stream)
{
    rssm_status st = check_ctx(fn, ctx);
    if (st != RSSM_OK) return st;
    pthread_mutex_lock(&ctx->lock);
    st = step_locked(fn, op, ctx, layer, state, io, stream);
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

rssm_status rssm_decode_packed(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state,
                               const rssm_step_io *io, void *stream)
{
    return run_step("rssm_decode_packed", RSSM_OP_DECODE_PACKED, ctx, layer, state, io, stream);
}

rssm_status rssm_decode_replay(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state,
                               const rssm_step_io *io, void *stream)
{
    return run_step("rssm_decode_replay", RSSM_OP_DECODE_REPLAY, ctx, layer, state, io, stream);
}

rssm_status rssm_verify(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state, const rssm_step_io *io,
                        void *stream)
{
    return run_step("rssm_verify", RSSM_OP_VERIFY, ctx, layer, state, io, stream);
}

rssm_status rssm_prefill(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state, const rssm_step_io *io,
                         void *stream)
{
    return run_step("rssm_prefill", RSSM_OP_PREFILL, ctx, layer, state, io, stream);
}

/* ---- materialise ------------------------------------------------------------------------- */

static rssm_status materialize_locked(rssm_context *ctx, const rssm_layer *layer, const rssm_state *src,
                                      const rssm_state *dst, int32_t batch, const int32_t *src_slot,
                                      const int32_t *dst_slot, void *stream)
{
    const char *fn = "rssm_materialize";
    rssm_materialize_params p;
    rssm_status st;
    memset(&p, 0, sizeof p);
    if ((st = rssm_layer_resolve(ctx, layer, &p.layer)) != RSSM_OK) return st;
    if ((st = check_state(fn, &p.layer, src, 1)) != RSSM_OK) return st;
    NEED(dst, "dst");
    NEED(dst->checkpoint, "dst.checkpoint");
    ALIGNED(dst->checkpoint, "dst.checkpoint");
    if (dst->num_slots < 1) return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: dst.num_slots %d < 1", fn, dst->num_slots);
    NEED(dst->ring_base, "dst.ring_base");
    ALIGNED(dst->ring_base, "dst.ring_base");
    if ((st = check_bytes(fn, "dst", &p.layer, dst, USES_CHECKPOINT | USES_RING_BASE)) != RSSM_OK) return st;
    if (batch < 0) return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: batch %d < 0", fn, batch);
    NEED(src_slot, "src_slot");
    NEED(dst_slot, "dst_slot");
    ALIGNED(src_slot, "src_slot");
    ALIGNED(dst_slot, "dst_slot");
    if (host_device(ctx)) {
        /* a source may feed several destinations; destinations are distinct */
        for (int32_t b = 0; b < batch; b++)
            if (src_slot[b] < -1 || src_slot[b] >= src->num_slots)
                return rssm_fail(RSSM_ERROR_BAD_SLOT, "%s: src_slot[%d] = %d is outside [-1, %d)", fn, b, src_slot[b],
                                 src->num_slots);
        if ((st = check_slots(ctx, fn, "dst_slot", dst_slot, batch, dst->num_slots)) != RSSM_OK) return st;
        if ((st = check_cursors(fn, &p.layer, src, src_slot, batch)) != RSSM_OK) return st;
        if (src->checkpoint == dst->checkpoint)
            for (int32_t b = 0; b < batch; b++)
                for (int32_t j = 0; j < batch; j++)
                    if (dst_slot[b] >= 0 && dst_slot[b] == src_slot[j] && j != b)
                        return rssm_fail(RSSM_ERROR_BAD_SLOT,
                                         "%s: slot %d is a destination of row %d and a source of row %d", fn,
                                         dst_slot[b], b, j);
    }
    p.src = *src;
    p.dst = *dst;
    p.batch = batch;
    p.src_slot = src_slot;
    p.dst_slot = dst_slot;
    p.group = p.layer.num_v_heads / p.layer.num_k_heads;
    p.gk = rssm_layer_gk(&p.layer);
    if (batch == 0) return RSSM_OK;
    if (!ctx->backend->materialize)
        return rssm_fail(RSSM_ERROR_UNSUPPORTED, "%s: the %s back end cannot materialise", fn, ctx->backend->name);
    return ctx->backend->materialize(ctx, &p, stream);
}

rssm_status rssm_materialize(rssm_context *ctx, const rssm_layer *layer, const rssm_state *src, const rssm_state *dst,
                             int32_t batch, const int32_t *src_slot, const int32_t *dst_slot, void *stream)
{
    rssm_status st = check_ctx("rssm_materialize", ctx);
    if (st != RSSM_OK) return st;
    pthread_mutex_lock(&ctx->lock);
    st = materialize_locked(ctx, layer, src, dst, batch, src_slot, dst_slot, stream);
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

/* ---- cursors ----------------------------------------------------------------------------- */

static rssm_status cursor_locked(const char *fn, rssm_cursor_op op, rssm_context *ctx, int32_t L,
                                 const rssm_state *state, int32_t batch, int32_t tokens, const int32_t *slot,
                                 const uint8_t *fold, const int32_t *accepted, void *stream)
{
    rssm_cursor_params p;
    rssm_status st;
    NEED(state, "state");
    NEED(state->cursor, "state.cursor");
    ALIGNED(state->cursor, "state.cursor");
    NEED(slot, "slot");
    ALIGNED(slot, "slot");
    ALIGNED(fold, "fold");
    if (state->num_slots < 1)
        return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: state.num_slots %d < 1", fn, state->num_slots);
    if (state->bytes.cursor < (size_t)state->num_slots * sizeof(int32_t))
        return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: state.bytes.cursor is %zu; %d slots need %zu", fn,
                         state->bytes.cursor, state->num_slots, (size_t)state->num_slots * sizeof(int32_t));
    if (batch < 0) return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: batch %d < 0", fn, batch);
    if (op == RSSM_CURSOR_COMMIT) {
        NEED(accepted, "accepted");
        ALIGNED(accepted, "accepted");
        if (tokens < 1 || tokens > L)
            return rssm_fail(RSSM_ERROR_BAD_TOKENS, "%s: T=%d outside [1, L=%d]", fn, tokens, L);
    }
    if (host_device(ctx)) {
        if ((st = check_slots(ctx, fn, "slot", slot, batch, state->num_slots)) != RSSM_OK) return st;
        for (int32_t b = 0; b < batch; b++) {
            if (slot[b] < 0) continue;
            const int32_t c = state->cursor[slot[b]];
            if (op != RSSM_CURSOR_RESET && (c < 0 || c > L))
                return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: cursor of slot %d is %d, outside [0, L=%d]", fn, slot[b],
                                 c, L);
            if (op == RSSM_CURSOR_COMMIT && (accepted[b] < 0 || accepted[b] > tokens))
                return rssm_fail(RSSM_ERROR_BAD_TOKENS, "%s: accepted[%d] = %d outside [0, T=%d]", fn, b, accepted[b],
                                 tokens);
        }
    }
    p.op = op;
    p.ring_len = L;
    p.batch = batch;
    p.tokens = tokens;
    p.num_slots = state->num_slots;
    p.cursor = state->cursor;
    p.slot = slot;
    p.fold = fold;
    p.accepted = accepted;
    if (batch == 0) return RSSM_OK;
    if (!ctx->backend->cursor)
        return rssm_fail(RSSM_ERROR_UNSUPPORTED, "%s: the %s back end cannot move cursors", fn, ctx->backend->name);
    return ctx->backend->cursor(ctx, &p, stream);
}

static rssm_status run_cursor(const char *fn, rssm_cursor_op op, rssm_context *ctx, int32_t L, const rssm_state *state,
                              int32_t batch, int32_t tokens, const int32_t *slot, const uint8_t *fold,
                              const int32_t *accepted, void *stream)
{
    rssm_status st = check_ctx(fn, ctx);
    if (st != RSSM_OK) return st;
    pthread_mutex_lock(&ctx->lock);
    st = cursor_locked(fn, op, ctx, L, state, batch, tokens, slot, fold, accepted, stream);
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

rssm_status rssm_advance(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state, int32_t batch,
                         const int32_t *slot, const uint8_t *fold, void *stream)
{
    rssm_status st = rssm_layer_validate(layer);
    if (st != RSSM_OK) return st;
    return run_cursor("rssm_advance", RSSM_CURSOR_ADVANCE, ctx, layer->ring_len, state, batch, 1, slot, fold, NULL,
                      stream);
}

rssm_status rssm_commit(rssm_context *ctx, const rssm_layer *layer, const rssm_state *state, int32_t batch,
                        int32_t tokens, const int32_t *slot, const uint8_t *fold, const int32_t *accepted, void *stream)
{
    rssm_status st = rssm_layer_validate(layer);
    if (st != RSSM_OK) return st;
    return run_cursor("rssm_commit", RSSM_CURSOR_COMMIT, ctx, layer->ring_len, state, batch, tokens, slot, fold,
                      accepted, stream);
}

rssm_status rssm_reset_cursors(rssm_context *ctx, const rssm_state *state, int32_t batch, const int32_t *slot,
                               void *stream)
{
    return run_cursor("rssm_reset_cursors", RSSM_CURSOR_RESET, ctx, RSSM_MAX_RING_LEN, state, batch, 1, slot, NULL,
                      NULL, stream);
}
