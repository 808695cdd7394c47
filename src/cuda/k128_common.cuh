/*
 * k128_common.cuh — device code shared by the K = V = 128 kernels (decode_k128.cu,
 * replay_pipeline.cu): the reduce-scatter butterfly of the row dot products, 4- and
 * 8-element loads and stores of f32 or bf16 data (bf16 widened exactly by a shift), and the
 * phases both compute on a lane's 8 rows x 4 channels of the state: the fold of the ring into
 * the rows, the ring weights, the end fold's two halves, the checkpoint stores; the FP64
 * tensor-core tile of the verify windows.
 */
#ifndef RSSM_K128_COMMON_CUH
#define RSSM_K128_COMMON_CUH

#include "step_kernel.cuh"

#define FULL_MASK 0xffffffffu
#define K128_DIM 128 /* K = V: a head's state is 128 x 128 */

/* reduce-scatter butterfly: N values per lane, summed over the lanes, end with KEEP values per
 * lane (lane bits M, M/2, .. 1 select which); every value is summed over lane bits M, M/2, .. 1
 * in that order, whatever N */
template <int N, int KEEP, int M> struct RS {
    static __device__ __forceinline__ void run(float *v, int lane)
    {
        if constexpr (M == 0) {
            return;
        } else if constexpr (N > KEEP) {
            constexpr int H = N / 2;
            const bool up = (lane & M) != 0;
#pragma unroll
            for (int i = 0; i < H; i++) {
                const float send = up ? v[i] : v[i + H];
                const float keep = up ? v[i + H] : v[i];
                v[i] = keep + __shfl_xor_sync(FULL_MASK, send, M);
            }
            RS<H, KEEP, M / 2>::run(v, lane);
        } else {
#pragma unroll
            for (int i = 0; i < N; i++)
                v[i] = v[i] + __shfl_xor_sync(FULL_MASK, v[i], M);
            RS<N, KEEP, M / 2>::run(v, lane);
        }
    }
};

#ifdef RSSM_PIPE_TRACE
/* diagnostic builds: the global timer (ns) of the kernels' traces (pipeline_trace.cuh, k128_trace.cuh) */
__device__ __forceinline__ unsigned long long trace_now()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#endif

/* A step's metadata (slots, fold flags, cursors, ring bases) is read by every layer's launch,
 * and between two launches the states stream through L2 (from GDN B = 16 more than its 50 MB):
 * read with an evict-last policy it stays there, and the chain slot -> cursor before the first
 * copies is two L2 round trips instead of two DRAM ones. */
__device__ __forceinline__ uint64_t l2_keep_policy()
{
    uint64_t pol;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(pol));
    return pol;
}
__device__ __forceinline__ int ld_keep(const int32_t *p, uint64_t pol)
{
    int v;
    asm volatile("ld.global.L2::cache_hint.b32 %0, [%1], %2;\n" : "=r"(v) : "l"(p), "l"(pol));
    return v;
}
__device__ __forceinline__ int ld_keep(const uint8_t *p, uint64_t pol)
{
    unsigned v;
    asm volatile("ld.global.L2::cache_hint.u8 %0, [%1], %2;\n" : "=r"(v) : "l"(p), "l"(pol));
    return (int)v;
}
/* L2 prefetch of `bytes` (multiple of 16) at a 16-byte aligned address (TMA, one thread) */
__device__ __forceinline__ void prefetch_l2(const void *p, unsigned bytes)
{
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"(bytes) : "memory");
}

__device__ __forceinline__ void unpack_bf2(uint32_t w, float *x)
{
    x[0] = __uint_as_float(w << 16), x[1] = __uint_as_float(w & 0xffff0000u);
}
/* A token's k and q over the warp's 128 channels (the lane's 4 in kr, qr): k l2-normalised, q
 * l2-normalised and scaled (decode_k128.cu's prepare_token, operation for operation) */
__device__ __forceinline__ void normalise_kq(const rssm_layer &l, const float (&kr)[4], const float (&qr)[4],
                                             float (&kn)[4], float (&qn)[4])
{
    float nk = kr[0] * kr[0], nq = qr[0] * qr[0];
#pragma unroll
    for (int e = 1; e < 4; e++)
        nk = __fmaf_rn(kr[e], kr[e], nk), nq = __fmaf_rn(qr[e], qr[e], nq);
    nk = warp_sum(nk), nq = warp_sum(nq);
    const float sk = l.qk_l2norm ? 1.0f / sqrtf(nk + (float)RSSM_L2NORM_EPS) : 1.0f;
    const float sq = l.qk_l2norm ? 1.0f / sqrtf(nq + (float)RSSM_L2NORM_EPS) : 1.0f;
#pragma unroll
    for (int e = 0; e < 4; e++)
        kn[e] = kr[e] * sk, qn[e] = qr[e] * sq * l.scale;
}

/* 4 consecutive elements (f32 or bf16) at element offset off */
__device__ __forceinline__ void ld4(const void *p, int bf, int64_t off, float *x)
{
    if (!bf) {
        const float4 v = *((const float4 *)((const float *)p + off));
        x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
    } else {
        const uint2 v = *((const uint2 *)((const uint16_t *)p + off));
        unpack_bf2(v.x, x), unpack_bf2(v.y, x + 2);
    }
}
__device__ __forceinline__ void ld4g(const void *p, int bf, int64_t off, float *x)
{
    if (!bf) {
        const float4 v = __ldg((const float4 *)((const float *)p + off));
        x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
    } else {
        const uint2 v = __ldg((const uint2 *)((const uint16_t *)p + off));
        unpack_bf2(v.x, x), unpack_bf2(v.y, x + 2);
    }
}
__device__ __forceinline__ void st4(void *p, int bf, int64_t off, const float *x)
{
    if (!bf) {
        *((float4 *)((float *)p + off)) = make_float4(x[0], x[1], x[2], x[3]);
    } else {
        const uint32_t a = (uint32_t)rssm_f32_to_bf16(x[0]) | ((uint32_t)rssm_f32_to_bf16(x[1]) << 16);
        const uint32_t c = (uint32_t)rssm_f32_to_bf16(x[2]) | ((uint32_t)rssm_f32_to_bf16(x[3]) << 16);
        *((uint2 *)((uint16_t *)p + off)) = make_uint2(a, c);
    }
}
/* bf16 store of 4 elements; x becomes the stored (rounded) values: round_dt(BF16, x) */
__device__ __forceinline__ void st4_bf16_round(void *p, int64_t off, float *x)
{
    const uint32_t a = (uint32_t)rssm_f32_to_bf16(x[0]) | ((uint32_t)rssm_f32_to_bf16(x[1]) << 16);
    const uint32_t c = (uint32_t)rssm_f32_to_bf16(x[2]) | ((uint32_t)rssm_f32_to_bf16(x[3]) << 16);
    *((uint2 *)((uint16_t *)p + off)) = make_uint2(a, c);
    unpack_bf2(a, x), unpack_bf2(c, x + 2);
}
/* 8 consecutive elements from shared memory (16-byte aligned offsets) */
__device__ __forceinline__ void ld8s(const unsigned char *p, int bf, int off, float *x)
{
    if (!bf) {
        const float4 a = *((const float4 *)((const float *)p + off)),
                     c = *((const float4 *)((const float *)p + off) + 1);
        x[0] = a.x, x[1] = a.y, x[2] = a.z, x[3] = a.w, x[4] = c.x, x[5] = c.y, x[6] = c.z, x[7] = c.w;
    } else {
        const uint4 v = *((const uint4 *)((const uint16_t *)p + off));
        unpack_bf2(v.x, x), unpack_bf2(v.y, x + 2), unpack_bf2(v.z, x + 4), unpack_bf2(v.w, x + 6);
    }
}

/* The fold's gate factor on S: GDN e^{Gs} on every channel (Gs[0], before the entries), KDA
 * e^{Gs} per channel (after them) */
template <bool KDA> __device__ __forceinline__ void fold_gate(float (&S)[8][4], const float (&Gs)[4])
{
    if (!KDA) {
        const float eg = expf(Gs[0]);
#pragma unroll
        for (int r = 0; r < 8; r++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                S[r][e] = S[r][e] * eg;
    } else {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const float eg = expf(Gs[e]);
#pragma unroll
            for (int r = 0; r < 8; r++)
                S[r][e] = S[r][e] * eg;
        }
    }
}
/* one ring entry into half the lane's rows: S[4 hf + r] += u4[r] k4 */
__device__ __forceinline__ void fold_entry_half(float (&S)[8][4], int hf, const float (&u4)[4], const float (&k4)[4])
{
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            S[4 * hf + r][e] = __fmaf_rn(u4[r], k4[e], S[4 * hf + r][e]);
}

/* Fold of the h committed ring entries into the lane's 8 rows x 4 channels S (rows row0 ..
 * row0 + 7, channels c4 .. c4 + 3), at cumulative gate Gs (GDN: Gs[0]):
 *   GDN  S e^{Gs} + sum_i u_i k_i e^{Gs - G_i}        KDA  (S + sum_i u_i k~_i) e^{Gs} per channel
 * The ring sits in shared memory: k [h][128] and u [h][128] in the ring dtype (rbf: bf16), GDN
 * G_i in sG [h]. Shared by the per-head and the pipelined kernels (same operations, same bits). */
template <bool KDA>
__device__ __forceinline__ void fold_ring_rows(float (&S)[8][4], const float (&Gs)[4], int h, const unsigned char *sK,
                                               const unsigned char *sU, const float *sG, int rbf, int c4, int row0)
{
    if (!KDA) fold_gate<false>(S, Gs);
#pragma unroll 1
    for (int i = 0; i < h; i++) {
        float k4[4];
        ld4(sK, rbf, i * 128 + c4, k4);
        if (!KDA) {
            const float f = expf(Gs[0] - sG[i]);
#pragma unroll
            for (int e = 0; e < 4; e++)
                k4[e] = k4[e] * f;
        }
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            float u4[4];
            ld4(sU, rbf, i * 128 + row0 + 4 * hf, u4);
            fold_entry_half(S, hf, u4, k4);
        }
    }
    if (KDA) fold_gate<true>(S, Gs);
}

/* GDN's fold_ring_rows with each entry's factor e^{Gs - G_i} evaluated once per warp, on lane
 * i % 32, and shuffled to the others: the same operations on every element in the same order, so
 * the same bits, and 57 instructions per entry and warp (two entries a round, UNROLL = 2) where
 * fold_ring_rows' loop issues 70. The replay pipeline folds GDN rows this way: V-first 0.5-2.3%
 * faster at B = 16-32, level from 64. The per-head kernel keeps fold_ring_rows: there this form
 * lost 3-5%, and on a K-first state it spilled and lost 6-10% with two entries a round
 * (bench/results/fold-bc-2026-12-04/). Every lane of the warp calls it. */
template <int UNROLL = 2>
__device__ __forceinline__ void fold_ring_rows_bc(float (&S)[8][4], const float (&Gs)[4], int h,
                                                  const unsigned char *sK, const unsigned char *sU, const float *sG,
                                                  int rbf, int c4, int row0)
{
    const int lane = threadIdx.x & 31;
    fold_gate<false>(S, Gs);
#pragma unroll 1
    for (int i0 = 0; i0 < h; i0 += 32) {
        const int n = min(32, h - i0);
        const float f = lane < n ? expf(Gs[0] - sG[i0 + lane]) : 1.0f;
#pragma unroll UNROLL
        for (int i = 0; i < n; i++) {
            float k4[4], u8[8];
            ld4(sK, rbf, (i0 + i) * 128 + c4, k4);
            const float fi = __shfl_sync(FULL_MASK, f, i);
#pragma unroll
            for (int e = 0; e < 4; e++)
                k4[e] = k4[e] * fi;
            ld8s(sU, rbf, (i0 + i) * 128 + row0, u8);
            fold_entry_half(S, 0, {u8[0], u8[1], u8[2], u8[3]}, k4);
            fold_entry_half(S, 1, {u8[4], u8[5], u8[6], u8[7]}, k4);
        }
    }
}

/* fold_ring_rows_staged's keys of entries i0 .. i0 + n - 1 as f32 into kf, each scaled by its
 * factor e^{gs - G_i} */
template <bool RBF>
__device__ __forceinline__ void stage_keys(float *kf, const unsigned char *sK, const float *sG, float gs, int i0, int n,
                                           int tid, int nt)
{
#pragma unroll 1
    for (int x = tid; x < n * (K128_DIM / 4); x += nt) {
        const int i = x >> 5, c = (x & 31) * 4;
        float k4[4];
        ld4(sK, RBF, (i0 + i) * K128_DIM + c, k4);
        const float f = expf(gs - sG[i0 + i]);
#pragma unroll
        for (int e = 0; e < 4; e++)
            k4[e] = k4[e] * f;
        *(float4 *)(kf + i * K128_DIM + c) = make_float4(k4[0], k4[1], k4[2], k4[3]);
    }
}

/* entries staged at a time: 16 (one round on rings of up to 17 entries) up to L = 32, 8 beyond,
 * where the ring leaves less room in shared memory (L = 64 with an f32 ring: 2 CTAs per SM) */
__host__ __device__ constexpr int fold_stage_entries(int L) { return L <= 32 ? 16 : 8; }

/* GDN's fold_ring_rows from f32 copies of the ring in shared memory, C entries at a time: kf
 * [n][128] the keys as the fold multiplies them (k_i e^{Gs - G_i}), staged by the whole CTA by
 * quads of channels, and uf [n][8] the warp's u of its 8 rows, staged by the warp. Every element
 * gets the same operations in the same order as in fold_ring_rows, so the same bits. Per entry
 * the loop issues 43 instructions, three shared loads and the 32 FMAs among them, where
 * fold_ring_rows' loop issues 81: it unpacks bf16 and evaluates the entry's exponential in every
 * lane. A replay launch where every row folds was mostly issue-bound in that loop (B = 8 in
 * phase: 18.5 us against 10.1 for a launch without folds, 35% of its warp samples in the loop,
 * most "not selected"; bench/results/fold-2026-12-02/). Threads 0 .. nt - 1 call this (warp w
 * owns rows 8 w .. 8 w + 7), and sync() is their barrier. */
template <typename Sync>
__device__ __forceinline__ void fold_ring_rows_staged(float (&S)[8][4], const float (&Gs)[4], int h,
                                                      const unsigned char *sK, const unsigned char *sU, const float *sG,
                                                      int rbf, int c4, int row0, int stage, int C, int nt, Sync sync)
{
    /* through the shared symbol: 32-bit shared addresses, not generic pointers held in registers */
    extern __shared__ __align__(16) unsigned char dsm[];
    float *const kf = (float *)(dsm + stage), *const uf = kf + C * K128_DIM + (threadIdx.x >> 5) * C * 8;
    fold_gate<false>(S, Gs);
    const int tid = threadIdx.x, lane = tid & 31;
#pragma unroll 1
    for (int i0 = 0; i0 < h; i0 += C) {
        const int n = min(C, h - i0);
        if (i0 > 0) sync(); /* every warp is done with the round before */
        /* the keys by quads of channels (thread: one entry's 4 channels), the warp's u by
         * entries (lane i: entry i0 + i, the warp's 8 rows) */
        if (rbf)
            stage_keys<true>(kf, sK, sG, Gs[0], i0, n, tid, nt);
        else
            stage_keys<false>(kf, sK, sG, Gs[0], i0, n, tid, nt);
        if (lane < n) {
            float u8[8];
            ld8s(sU, rbf, (i0 + lane) * K128_DIM + row0, u8);
            *(float4 *)(uf + 8 * lane) = make_float4(u8[0], u8[1], u8[2], u8[3]);
            *(float4 *)(uf + 8 * lane + 4) = make_float4(u8[4], u8[5], u8[6], u8[7]);
        }
        sync();
#pragma unroll 1
        for (int i = 0; i < n; i++) {
            const float4 k4 = *(const float4 *)(kf + i * K128_DIM + c4);
            const float kk[4] = {k4.x, k4.y, k4.z, k4.w};
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const float4 u4 = *(const float4 *)(uf + 8 * i + 4 * hf);
                const float uu[4] = {u4.x, u4.y, u4.z, u4.w};
                fold_entry_half(S, hf, uu, kk);
            }
        }
    }
}
/* D += A B on the FP64 tensor cores, one 8 x 8 x 4 tile (mma m8n8k4): lane l holds A[l / 4][l % 4],
 * B[l % 4][l / 4] and D[l / 4][2 (l % 4) + i] in d_i. f32 operands widen exactly and their
 * products are exact in f64, so a dot product summed here and rounded once to f32 is at least as
 * accurate as any f32 FMA chain (no TF32 anywhere). */
__device__ __forceinline__ void dmma_8x8x4(double &d0, double &d1, double a, double b)
{
    asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
        : "+d"(d0), "+d"(d1)
        : "d"(a), "d"(b));
}

/* Ring weights of entries p = w, w + nw, .. < h (warp w of nw warps), over the warp's 128 channels
 * (lane: c4 .. c4 + 3; a(e), b(e) the lane's channels of the two vectors):
 *   wk[p] = (k_p . a) f_p,  wq[p] = (k_p . b) f_p,  f_p = 1 (KDA) or e^{G - G_p} (GDN, G_p = sG[p])
 * ring k [h][128] in shared memory (rbf: bf16); lanes 0 and 16 write. */
#define RSSM_RING_WEIGHTS_K 128 /* the head dim ring_weights assumes (static_assert at each caller) */
template <bool KDA, class AV, class BV>
__device__ __forceinline__ void ring_weights(float *wk, float *wq, const unsigned char *sK, int rbf, const float *sG,
                                             float G, int h, int w, int nw, int c4, int lane, AV a, BV b)
{
    for (int p = w; p < h; p += nw) {
        float k4[4];
        ld4(sK, rbf, p * 128 + c4, k4);
        float dk = 0.0f, dq = 0.0f;
#pragma unroll
        for (int e = 0; e < 4; e++)
            dk = __fmaf_rn(k4[e], a(e), dk), dq = __fmaf_rn(k4[e], b(e), dq);
        /* both sums by one reduce-scatter (5 shuffles for warp_sum's 10, its additions in its
         * order): lane 0 ends with dk, lane 16 with dq */
        float v[2] = {dk, dq};
        RS<2, 1, 16>::run(v, lane);
        if ((lane & 15) == 0) {
            const float f = KDA ? 1.0f : expf(G - sG[p]);
            (lane ? wq : wk)[p] = v[0] * f;
        }
    }
}

/* The lane's S[r][e] is the head's element (row, channel) = (srow + r, sch + e), or on the
 * verify windows' FP64 fragments (MMA) (srow, sch + 16 r + e). The offset of S[0][0] from the
 * head's first element in the layer's layout: row * 128 + channel V-first, channel * 128 + row
 * K-first (where the lane's rows at one channel are consecutive). */
__device__ __forceinline__ int64_t lane_state_off(int64_t head, int srow, int sch, bool kfirst)
{
    return head + (kfirst ? sch * K128_DIM + srow : srow * K128_DIM + sch);
}

/* K-first checkpoint loads ask L2 to fetch 128 bytes around a miss (.L2::128B): the 32 bytes a
 * warp reads of a channel row share their line with three other warps' rows. The same values as
 * __ldg / __ldcs; 2.6-3.5% faster at B = 8, 0.1-1.2% at 64-512, verify 0.5%; 256 bytes gained
 * less (bench/results/kfirst-l2-2026-12-03/) */
__device__ __forceinline__ float4 ld_kf_f4(const float *p)
{
    float4 v;
    asm("ld.global.nc.L2::128B.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}
__device__ __forceinline__ uint2 ld_kf_u2(const uint16_t *p)
{
    uint2 v;
    asm("ld.global.nc.L2::128B.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
}
__device__ __forceinline__ float ld_kf_f1(const float *p)
{
    float v;
    asm("ld.global.cs.L2::128B.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ unsigned short ld_kf_h1(const unsigned short *p)
{
    unsigned short v;
    asm("ld.global.cs.L2::128B.u16 %0, [%1];" : "=h"(v) : "l"(p));
    return v;
}

/* K-first without MMA, by lane pairs: lanes 2m and 2m + 1 access the two 16-byte halves of one
 * channel's 32 bytes in one instruction (first 2m's channel, then 2m + 1's) and swap halves by
 * shuffles, so that a warp-wide access touches 16 lines, not 32. Every caller's lane owns channels
 * 4 lane .. 4 lane + 3 (off: its first, lane_state_off), so the partner's first channel is 4 away.
 * p: the lane's parity; first, second: its element offsets in 2m's and in 2m + 1's channel (rows 4p ..). */
struct kf_pair {
    int p;
    int64_t first, second;
};
__device__ __forceinline__ kf_pair kf_pair_of(int64_t off)
{
    const int p = threadIdx.x & 1;
    const int64_t first = off - p * 4 * K128_DIM + 4 * p;
    return {p, first, first + 4 * K128_DIM};
}

/* K-first: the lane's S from element offset off (lane_state_off): without MMA two runs of 4 rows
 * per channel (L1-allocating loads: the runs share 32-byte sectors; measured 5-7% faster than
 * streaming ones at B >= 64), with MMA one element per (row, channel). A warp's 8 rows are 32 bytes
 * of each 512-byte channel row. A warp-wide load of one run per lane touched 32 lines (V-first: 4)
 * and the layout ran at about half the V-first speed where DRAM bound (bench/results/layout-*);
 * loaded by lane pairs, 16 lines, and packed decode takes 35-42% less time
 * (bench/results/kfirst-pairs-2026-12-03/). */
template <bool SBF, bool MMA>
__device__ __forceinline__ void load_state_kfirst(const void *ckpt, int64_t off, float (&S)[8][4])
{
    if constexpr (MMA) {
#pragma unroll
        for (int r = 0; r < 8; r++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int64_t i = off + (16 * r + e) * K128_DIM;
                S[r][e] = SBF ? __uint_as_float((uint32_t)ld_kf_h1((const unsigned short *)ckpt + i) << 16)
                              : ld_kf_f1((const float *)ckpt + i);
            }
    } else {
        const auto [p, first, second] = kf_pair_of(off); /* by lane pairs */
        float x[4][2][4];
#pragma unroll
        for (int e = 0; e < 4; e++) {
            float a[4], b[4]; /* this lane's half of its own channel, its partner's */
            if (!SBF) {
                const float4 v = ld_kf_f4((const float *)ckpt + first + e * K128_DIM),
                             w = ld_kf_f4((const float *)ckpt + second + e * K128_DIM);
                const float4 own = p ? w : v, oth = p ? v : w;
                a[0] = own.x, a[1] = own.y, a[2] = own.z, a[3] = own.w;
                b[0] = __shfl_xor_sync(FULL_MASK, oth.x, 1), b[1] = __shfl_xor_sync(FULL_MASK, oth.y, 1);
                b[2] = __shfl_xor_sync(FULL_MASK, oth.z, 1), b[3] = __shfl_xor_sync(FULL_MASK, oth.w, 1);
            } else {
                const uint2 v = ld_kf_u2((const uint16_t *)ckpt + first + e * K128_DIM),
                            w = ld_kf_u2((const uint16_t *)ckpt + second + e * K128_DIM);
                const uint2 own = p ? w : v, oth = p ? v : w;
                unpack_bf2(own.x, a), unpack_bf2(own.y, a + 2);
                unpack_bf2(__shfl_xor_sync(FULL_MASK, oth.x, 1), b),
                    unpack_bf2(__shfl_xor_sync(FULL_MASK, oth.y, 1), b + 2);
            }
#pragma unroll
            for (int j = 0; j < 4; j++)
                x[e][0][j] = p ? b[j] : a[j], x[e][1][j] = p ? a[j] : b[j];
        }
#pragma unroll
        for (int r = 0; r < 8; r++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                S[r][e] = x[e][r / 4][r % 4];
    }
}

/* K-first: the lane's S to element offset off (lane_state_off); a bf16 state rounds S to the
 * stored values. Without MMA every lane of the warp takes part (kf_pair_of). */
template <bool SBF, bool MMA>
__device__ __forceinline__ void store_state_kfirst(void *ckpt, int64_t off, float (&S)[8][4])
{
#pragma unroll
    for (int r = 0; r < 8; r++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            if (SBF) S[r][e] = round_dt(RSSM_DTYPE_BF16, S[r][e]);
    if constexpr (MMA) {
#pragma unroll
        for (int r = 0; r < 8; r++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int64_t i = off + (16 * r + e) * K128_DIM;
                if (SBF)
                    ((uint16_t *)ckpt)[i] = rssm_f32_to_bf16(S[r][e]);
                else
                    ((float *)ckpt)[i] = S[r][e];
            }
    } else {
        const auto [p, first, second] = kf_pair_of(off); /* by lane pairs */
#pragma unroll
        for (int e = 0; e < 4; e++) {
            float f[4], s[4]; /* rows 4p.. of channel 2m's, of 2m + 1's (one of them the partner's) */
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const float own = p ? S[4 + j][e] : S[j][e];
                const float oth = __shfl_xor_sync(FULL_MASK, p ? S[j][e] : S[4 + j][e], 1);
                f[j] = p ? oth : own, s[j] = p ? own : oth;
            }
            st4(ckpt, SBF, first + e * K128_DIM, f);
            st4(ckpt, SBF, second + e * K128_DIM, s);
        }
    }
}

/* The lane's S from the checkpoint at element offset ck0 (lane_state_off), streamed (read
 * once); V-first, SSTEP: elements from S[i][0] to S[i + 1][0]; KF: the K-first layout */
template <bool SBF, int SSTEP, bool KF>
__device__ __forceinline__ void load_state_rows(const void *ckpt, int64_t ck0, float (&S)[8][4])
{
    if (KF) {
        load_state_kfirst<SBF, SSTEP != K128_DIM>(ckpt, ck0, S);
    } else if (!SBF) {
        float4 raw[8];
#pragma unroll
        for (int r = 0; r < 8; r++)
            raw[r] = __ldcs((const float4 *)((const float *)ckpt + ck0 + r * SSTEP));
#pragma unroll
        for (int r = 0; r < 8; r++)
            S[r][0] = raw[r].x, S[r][1] = raw[r].y, S[r][2] = raw[r].z, S[r][3] = raw[r].w;
    } else {
        uint2 raw[8];
#pragma unroll
        for (int r = 0; r < 8; r++)
            raw[r] = __ldcs((const uint2 *)((const uint16_t *)ckpt + ck0 + r * SSTEP));
#pragma unroll
        for (int r = 0; r < 8; r++)
            unpack_bf2(raw[r].x, S[r]), unpack_bf2(raw[r].y, S[r] + 2);
    }
}

/* The lane's 8 rows of S into the checkpoint, V-first row r at element offset off(r), K-first
 * from off(0) (lane_state_off); a bf16 state rounds them, and S becomes the stored values (the
 * fold continues from them). */
template <bool SBF, bool MMA = false, class OFF>
__device__ __forceinline__ void store_checkpoint_rows(void *ckpt, OFF off, bool kfirst, float (&S)[8][4])
{
    if (kfirst) {
        store_state_kfirst<SBF, MMA>(ckpt, off(0), S);
        return;
    }
#pragma unroll
    for (int r = 0; r < 8; r++) {
        if (SBF)
            st4_bf16_round(ckpt, off(r), S[r]);
        else
            st4(ckpt, 0, off(r), S[r]);
    }
}

/* End fold, first half: the row dot products of the lane's 8 rows with x (x(e): channel
 * c4 + e) plus the ring's share, sum over entries i = lane, lane + 32, .. < h of u_i[row] w[i];
 * v is then summed over the lanes by the caller's butterfly. */
template <class X>
__device__ __forceinline__ void end_fold_dots(float (&v)[8], const float (&S)[8][4], X x, const unsigned char *sU,
                                              int rbf, int h, const float *w, int lane, int row0)
{
#pragma unroll
    for (int r = 0; r < 8; r++) {
        float a = 0.0f;
#pragma unroll
        for (int e = 0; e < 4; e++)
            a = __fmaf_rn(S[r][e], x(e), a);
        v[r] = a;
    }
#pragma unroll 1
    for (int i = lane; i < h; i += 32) {
        float uu[8];
        ld8s(sU, rbf, i * 128 + row0, uu);
        const float a = w[i];
#pragma unroll
        for (int r = 0; r < 8; r++)
            v[r] = __fmaf_rn(uu[r], a, v[r]);
    }
}

/* End fold, second half: S_r += u_r k (u_r on lane 4 r) and o_r = S_r q over the lane's channels
 * (k(e), q(e): channel c4 + e), before the butterfly */
template <class KV, class QV>
__device__ __forceinline__ void end_fold_update(float (&S)[8][4], float (&o)[8], float myu, KV k, QV q)
{
#pragma unroll
    for (int r = 0; r < 8; r++) {
        const float u = __shfl_sync(FULL_MASK, myu, 4 * r);
        float oo = 0.0f;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            S[r][e] = __fmaf_rn(u, k(e), S[r][e]);
            oo = __fmaf_rn(S[r][e], q(e), oo);
        }
        o[r] = oo;
    }
}

#endif
