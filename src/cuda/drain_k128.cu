/*
 * drain_k128.cu — the step planner's drain on CUDA (rssm_plan_begin of a small-batch decode
 * step, rssm_plan_set_small_batch): in every layer of the pool, each live row's committed ring
 * entries are folded into its checkpoint and its ring bases set to 0; then its cursor is set to
 * 0 and its fold flag to 1. Every ring of the step's rows is then empty, so the layers run packed
 * decode's kernel (io.fold_every, decode_k128.cu) and the advance keeps the cursors at 0. Layers
 * of K = V = 128, the fast kernels' shape (rssm_cuda_drain_layer_ok).
 *
 * One CTA of 512 threads per (row, value head), as the decode kernels hold a head: warp w folds
 * state rows 8w .. 8w+7, lane l channels 4l .. 4l+3, with the same fold routine as their start
 * folds (k128_common.cuh), layer after layer. A row whose cursor is 0 (every small step after
 * its first) costs its CTAs a slot and a cursor load. The cursors are set by the last CTA to
 * arrive (a counter in the planner's memory, back to 0 after each launch), after every CTA has
 * read them.
 */
#include "k128_common.cuh"

extern "C" {
#include "core/layout.h"
}
#include "runtime/plan_rules.h"

#define DRAIN_NT 512

namespace
{

/* 16-byte copies of n bytes (n a multiple of 16) from global to shared memory by the CTA */
__device__ __forceinline__ void copy16(unsigned char *dst, const unsigned char *src, int n)
{
    for (int i = 16 * (int)threadIdx.x; i < n; i += 16 * DRAIN_NT)
        *(uint4 *)(dst + i) = __ldg((const uint4 *)(src + i));
}

/* Fold of head hv of slot s of one layer at cursor c: its h = c - base live entries (KDA ring
 * positions 0 .. h-1, GDN base .. c-1) into the checkpoint rows, then base = 0. Shared memory:
 * G (GDN G_i [h]; KDA G_{h-1} [K]), ring k [h][K] and u [h][V] as stored. */
template <bool KDA, bool SBF, bool KF>
__device__ void drain_head(const rssm_plan_layer &P, int s, int hv, int c, unsigned char *smem, int *err)
{
    const rssm_layer &l = P.layer;
    const rssm_state &st = P.state;
    const int64_t hb = rssm_base_off(&l, s, hv);
    const int base = st.ring_base[hb], h = c - base;
    /* a ring base outside the ring (corrupt state): counted, the head left as it is; its later
     * replay steps refuse the slot */
    if (base < 0 || h < 0) {
        if (threadIdx.x == 0) atomicAdd(err, 1);
        return;
    }
    if (h > 0) {
        const int rbf = l.ring_dtype == RSSM_DTYPE_BF16, rsz = rbf ? 2 : 4;
        const int p0 = rssm_ring_pos(&l, base, base), gk = KDA ? K128_DIM : 1;
        float *sG = (float *)smem;
        unsigned char *sK = smem + K128_DIM * sizeof(float), *sU = sK + (size_t)h * K128_DIM * rsz;
        const int bytes = h * K128_DIM * rsz;
        copy16(sK, (const unsigned char *)st.ring_k + rssm_ring_k_off(&l, s, hv, P.group, p0) * rsz, bytes);
        copy16(sU, (const unsigned char *)st.ring_u + rssm_ring_u_off(&l, s, hv, p0) * rsz, bytes);
        const float *rg = (const float *)st.ring_g + rssm_ring_g_off(&l, s, hv, p0, gk);
        if (KDA) {
            if (threadIdx.x < K128_DIM) sG[threadIdx.x] = rg[(h - 1) * K128_DIM + threadIdx.x];
        } else if ((int)threadIdx.x < h) {
            sG[threadIdx.x] = rg[threadIdx.x];
        }
        __syncthreads();
        const int lane = threadIdx.x & 31, c4 = 4 * lane, row0 = 8 * (threadIdx.x >> 5);
        const int64_t off = lane_state_off(rssm_ckpt_off(&l, s, hv), row0, c4, KF);
        float S[8][4], Gs[4];
        load_state_rows<SBF, K128_DIM, KF>(st.checkpoint, off, S);
#pragma unroll
        for (int e = 0; e < 4; e++)
            Gs[e] = KDA ? sG[c4 + e] : sG[h - 1];
        fold_ring_rows<KDA>(S, Gs, h, sK, sU, sG, rbf, c4, row0);
        store_checkpoint_rows<SBF>(
            st.checkpoint, [&](int r) { return off + r * K128_DIM; }, KF, S);
    }
    /* every thread has read the base (and the shared ring: the next layer's copies overwrite it) */
    __syncthreads();
    if (threadIdx.x == 0 && base != 0) st.ring_base[hb] = 0;
}

template <bool KDA>
__device__ void drain_layer(const rssm_plan_layer &P, int s, int hv, int c, unsigned char *smem, int *err)
{
    const bool sbf = P.layer.state_dtype == RSSM_DTYPE_BF16, kf = P.layer.state_layout == RSSM_LAYOUT_KV;
    if (sbf)
        kf ? drain_head<KDA, true, true>(P, s, hv, c, smem, err) : drain_head<KDA, true, false>(P, s, hv, c, smem, err);
    else
        kf ? drain_head<KDA, false, true>(P, s, hv, c, smem, err)
           : drain_head<KDA, false, false>(P, s, hv, c, smem, err);
}

__global__ void __launch_bounds__(DRAIN_NT, 2) drain_kernel(rssm_plan_params p, int *err)
{
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ int last;
    const int b = blockIdx.x, hv = blockIdx.y;
    const int s = p.slot[b];
    const bool live = s >= 0 && s < p.n_slots;
    if (hv == 0 && threadIdx.x == 0) p.fold[b] = rssm_rt_fold_rule(s, p.n_slots, p.seq_len[b], 0, p.track, 1);
    if (live) {
        const int c = p.layers[0].state.cursor[s];
        if (c < 0 || c > p.layers[0].layer.ring_len) {
            if (hv == 0 && threadIdx.x == 0) atomicAdd(err, 1);
        } else if (c > 0) {
            for (int i = 0; i < p.n_layers; i++) {
                const rssm_plan_layer &P = p.layers[i];
                if (hv >= P.layer.num_v_heads) continue;
                if (P.layer.gate == RSSM_GATE_KDA)
                    drain_layer<true>(P, s, hv, c, smem, err);
                else
                    drain_layer<false>(P, s, hv, c, smem, err);
            }
        }
    }
    /* the last CTA to arrive (every other has read its row's cursor) moves the cursors */
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(reinterpret_cast<unsigned *>(p.arrived), 1u) == gridDim.x * gridDim.y - 1u;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    int32_t *cursor = p.layers[0].state.cursor;
    const int L = p.layers[0].layer.ring_len;
    for (int i = threadIdx.x; i < p.batch; i += DRAIN_NT) {
        const int si = p.slot[i];
        if (si >= 0 && si < p.n_slots && cursor[si] > 0 && cursor[si] <= L) cursor[si] = 0;
    }
    if (threadIdx.x == 0) *p.arrived = 0;
}

/* the most dynamic shared memory of a layer: G (128 f32), k and u of a full f32 ring */
constexpr size_t drain_smem_max = K128_DIM * sizeof(float) + 2 * (size_t)RSSM_MAX_RING_LEN * K128_DIM * sizeof(float);

} // namespace

/* 1 when the drain takes the layer: the fast kernels' head shape and group (decode_k128.cu) */
int rssm_cuda_drain_layer_ok(const rssm_layer *l)
{
    return l->head_k_dim == K128_DIM && l->head_v_dim == K128_DIM && l->num_v_heads / l->num_k_heads <= 8;
}

cudaError_t rssm_cuda_drain_init(void)
{
    return cudaFuncSetAttribute(drain_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)drain_smem_max);
}

cudaError_t rssm_cuda_drain_launch(const rssm_plan_params *p, int *err, cudaStream_t stream)
{
    const dim3 grid((unsigned)p->batch, (unsigned)p->max_heads, 1);
    /* the pool's own rings (the most any ring needs is 64.5 KiB) */
    const size_t smem = K128_DIM * sizeof(float) + 2 * (size_t)p->ring_bytes;
    drain_kernel<<<grid, DRAIN_NT, smem, stream>>>(*p, err);
    return cudaGetLastError();
}
