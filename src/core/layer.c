/*
 * layer.c — layer descriptions: defaults, validation, the resolved form the back ends get,
 * and the sizes of a layer's state tensors.
 */
#include <math.h>

#include "core/layer.h"

size_t rssm_dtype_size(rssm_dtype dtype)
{
    switch (dtype) {
    case RSSM_DTYPE_F32:
        return 4;
    case RSSM_DTYPE_BF16:
        return 2;
    case RSSM_DTYPE_F64:
        return 8;
    }
    return 0;
}

rssm_layer rssm_layer_default(rssm_gate gate, int32_t H, int32_t HV, int32_t K, int32_t V, int32_t L)
{
    rssm_layer l;
    memset(&l, 0, sizeof l);
    l.num_k_heads = H, l.num_v_heads = HV, l.head_k_dim = K, l.head_v_dim = V;
    l.gate = gate, l.ring_len = L;
    l.state_dtype = l.ring_dtype = l.io_dtype = RSSM_DTYPE_F32;
    l.qk_l2norm = 1;
    return l;
}

static int dtype_ok(rssm_dtype d) { return d == RSSM_DTYPE_F32 || d == RSSM_DTYPE_BF16 || d == RSSM_DTYPE_F64; }

rssm_status rssm_layer_validate(const rssm_layer *l)
{
    if (!l) return rssm_fail(RSSM_ERROR_NULL_POINTER, "layer is NULL");
    if (l->num_k_heads < 1 || l->num_v_heads < 1 || l->num_v_heads % l->num_k_heads != 0)
        return rssm_fail(RSSM_ERROR_BAD_SHAPE, "heads: H=%d HV=%d (need H >= 1 and HV a multiple of H)", l->num_k_heads,
                         l->num_v_heads);
    if (l->num_v_heads > 4096) return rssm_fail(RSSM_ERROR_BAD_SHAPE, "heads: HV=%d is more than 4096", l->num_v_heads);
    if (l->head_k_dim < 1 || l->head_k_dim > RSSM_MAX_HEAD_DIM || l->head_v_dim < 1 ||
        l->head_v_dim > RSSM_MAX_HEAD_DIM)
        return rssm_fail(RSSM_ERROR_BAD_SHAPE, "head dims K=%d V=%d (need 1..%d)", l->head_k_dim, l->head_v_dim,
                         RSSM_MAX_HEAD_DIM);
    if (l->gate != RSSM_GATE_GDN && l->gate != RSSM_GATE_KDA)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "gate kind %d is neither GDN nor KDA", (int)l->gate);
    if (l->ring_len < 1 || l->ring_len > RSSM_MAX_RING_LEN)
        return rssm_fail(RSSM_ERROR_BAD_RING_LEN, "ring length L=%d (need 1..%d)", l->ring_len, RSSM_MAX_RING_LEN);
    if (!dtype_ok(l->state_dtype) || !dtype_ok(l->ring_dtype) || !dtype_ok(l->io_dtype))
        return rssm_fail(RSSM_ERROR_BAD_DTYPE, "dtypes state=%d ring=%d io=%d: one is not f32, bf16 or f64",
                         (int)l->state_dtype, (int)l->ring_dtype, (int)l->io_dtype);
    if (!isfinite(l->scale) || l->scale < 0)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "scale %g is not a finite number >= 0", (double)l->scale);
    if (l->qk_l2norm != 0 && l->qk_l2norm != 1)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "qk_l2norm is %d (need 0 or 1)", l->qk_l2norm);
    if (l->has_lower_bound != 0 && l->has_lower_bound != 1)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "has_lower_bound is %d (need 0 or 1)", l->has_lower_bound);
    if (l->has_lower_bound && (l->gate != RSSM_GATE_KDA || !isfinite(l->lower_bound) || l->lower_bound >= 0))
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "the safe gate needs KDA and a finite lower bound < 0 (got %g)",
                         (double)l->lower_bound);
    if (l->state_layout != RSSM_LAYOUT_VK && l->state_layout != RSSM_LAYOUT_KV)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "state_layout %d is neither RSSM_LAYOUT_VK nor RSSM_LAYOUT_KV",
                         (int)l->state_layout);
    if (!isfinite(l->fold_threshold) || l->fold_threshold < 0 || l->fold_threshold > 80)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "fold_threshold %g (need 0 for the default, or up to 80)",
                         (double)l->fold_threshold);
    return RSSM_OK;
}

rssm_status rssm_layer_resolve(const rssm_context *ctx, const rssm_layer *in, rssm_layer *out)
{
    rssm_status st = rssm_layer_validate(in);
    if (st != RSSM_OK) return st;
    *out = *in;
    if (out->scale == 0) out->scale = 1.0f / sqrtf((float)out->head_k_dim);
    if (out->fold_threshold == 0) out->fold_threshold = RSSM_DEFAULT_FOLD_THRESHOLD;
    return ctx ? ctx->backend->check_layer(out) : RSSM_OK;
}

rssm_layer rssm_layer_canonical(const rssm_layer *l)
{
    rssm_layer c;
    memset(&c, 0, sizeof c); /* padding bytes too: compared with memcmp */
    if (rssm_layer_resolve(NULL, l, &c) != RSSM_OK) return *l;
    if (!c.has_lower_bound) c.lower_bound = 0.0f;
    return c;
}

int rssm_layer_same(const rssm_layer *a, const rssm_layer *b)
{
    const rssm_layer ca = rssm_layer_canonical(a), cb = rssm_layer_canonical(b);
    return !memcmp(&ca, &cb, sizeof ca);
}

int rssm_layer_gk(const rssm_layer *l) { return l->gate == RSSM_GATE_KDA ? l->head_k_dim : 1; }

rssm_status rssm_state_size(const rssm_layer *layer, int32_t num_slots, rssm_state_bytes *out)
{
    if (!out) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_state_size: out is NULL");
    rssm_status st = rssm_layer_validate(layer);
    if (st != RSSM_OK) return st;
    if (num_slots < 1) return rssm_fail(RSSM_ERROR_BAD_SHAPE, "num_slots %d < 1", num_slots);
    rssm_state_bytes_of(layer, num_slots, out);
    return RSSM_OK;
}

void rssm_state_bytes_of(const rssm_layer *l, int32_t num_slots, rssm_state_bytes *out)
{
    const size_t n = (size_t)num_slots, s = rssm_dtype_size(l->state_dtype), r = rssm_dtype_size(l->ring_dtype);
    const size_t g = l->ring_dtype == RSSM_DTYPE_F64 ? 8 : 4;
    const size_t heads_k = l->gate == RSSM_GATE_GDN ? l->num_k_heads : l->num_v_heads;
    memset(out, 0, sizeof *out);
    out->checkpoint = n * l->num_v_heads * l->head_v_dim * l->head_k_dim * s;
    out->ring_u = n * l->num_v_heads * l->ring_len * l->head_v_dim * r;
    out->ring_k = n * heads_k * l->ring_len * l->head_k_dim * r;
    out->ring_g = n * l->num_v_heads * l->ring_len * rssm_layer_gk(l) * g;
    out->ring_base = n * l->num_v_heads * 4;
    out->cursor = n * 4;
    out->total = out->checkpoint + out->ring_u + out->ring_k + out->ring_g + out->ring_base + out->cursor;
}
