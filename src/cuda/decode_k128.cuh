/*
 * decode_k128.cuh — what the per-head K = V = 128 kernels (decode_k128.cu) and the phases of
 * their verify windows (window_k128.cuh) share: the launch shape, the CTA's shared-memory layout
 * (fixed_smem, smem_of, k128_smem), the cp.async helpers and the L2 prefetch of a head.
 */
#ifndef RSSM_DECODE_K128_CUH
#define RSSM_DECODE_K128_CUH

#include "k128_common.cuh"

namespace rssm_decode_k128
{

#define K128_NT 512
#define K128_NW 16
#define K128_LMAX (RSSM_MAX_RING_LEN + 8)
/* row stride (doubles) of the windows' f64 token vectors: 16 bytes past 1 KiB, so that the two
 * columns of a quarter-warp's 16-byte loads fall in different banks */
#define K128_XDS 130
static_assert(K128_DIM == RSSM_RING_WEIGHTS_K, "ring_weights reads k rows of 128 channels");

__device__ __forceinline__ void cp16(void *dst, const void *src)
{
    const unsigned sa = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(src) : "memory");
}
__device__ __forceinline__ void cp4(void *dst, const void *src)
{
    const unsigned sa = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(sa), "l"(src) : "memory");
}
__device__ __forceinline__ void cp8(void *dst, const void *src)
{
    const unsigned sa = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(sa), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_wait_but1() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }
__device__ __forceinline__ void cp_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

/* x, through an asm the compiler cannot see into: what derives from it is recomputed, not kept */
__device__ __forceinline__ int opaque(int x)
{
    int y;
    asm("mov.b32 %0, %1;" : "=r"(y) : "r"(x));
    return y;
}

/* the key head of value head hv: a shift when the group size is a power of two */
__device__ __forceinline__ int key_head(int hv, int group)
{
    return (group & (group - 1)) == 0 ? hv >> (31 - __clz(group)) : hv / group;
}

/* L2 prefetch of what the CTA of (slot, value head hv, part) will read: its R rows of the
 * checkpoint (K-first, where a part's rows are not contiguous: the part-th 1/split of the head,
 * so that the head's parts together cover it) and (replay, verify) the live ring entries (the
 * cursor and ring base are read here, off every critical path, so DRAM moves only the bytes of
 * the byte model). */
template <bool KDA, bool SBF, int MODE>
__device__ __forceinline__ void prefetch_head(const rssm_state &st, const rssm_layer &l, int slot, int hv, int part,
                                              int R, int group)
{
    const int ssz = SBF ? 2 : 4, rsz = l.ring_dtype == RSSM_DTYPE_BF16 ? 2 : 4;
    prefetch_l2((const unsigned char *)st.checkpoint +
                    (rssm_ckpt_off(&l, slot, hv) + (int64_t)part * R * K128_DIM) * ssz,
                (unsigned)(R * K128_DIM * ssz));
    if (MODE != MODE_PACKED) {
        /* the live entries: KDA positions 0 .. h-1, GDN p0 = base .. cursor-1 */
        const int base = st.ring_base[(int64_t)slot * l.num_v_heads + hv];
        const int h = st.cursor[slot] - base, p0 = KDA ? 0 : base;
        if (h <= 0 || h > l.ring_len || (!KDA && (base < 0 || base + h > l.ring_len))) return;
        const unsigned entries = (unsigned)(h * K128_DIM * rsz);
        prefetch_l2((const unsigned char *)st.ring_u + rssm_ring_u_off(&l, slot, hv, p0) * rsz, entries);
        const int64_t k0 =
            ((KDA ? (int64_t)slot * l.num_v_heads + hv : (int64_t)slot * l.num_k_heads + key_head(hv, group)) *
                 l.ring_len +
             p0)
            << 7;
        prefetch_l2((const unsigned char *)st.ring_k + k0 * rsz, entries);
        if (KDA)
            prefetch_l2((const float *)st.ring_g + rssm_ring_g_off(&l, slot, hv, h - 1, K128_DIM),
                        (unsigned)(K128_DIM * 4));
        else { /* G of positions p0 .. p0+h-1: 4 h bytes, widened to 16-byte alignment */
            const uintptr_t g0 = (uintptr_t)((const float *)st.ring_g + rssm_ring_g_off(&l, slot, hv, p0, 1));
            const uintptr_t lo = g0 & ~(uintptr_t)15, hi = (g0 + 4 * (uintptr_t)h + 15) & ~(uintptr_t)15;
            prefetch_l2((const void *)lo, (unsigned)(hi - lo));
        }
    }
}

/* fixed part of the dynamic shared memory; followed by ring G (128 f32: GDN G_i [h],
 * KDA G_{h-1} [K]), ring k [L][K] and ring u [L][V] as stored (ring dtype), and what smem_of
 * adds (KDA speculative G of every entry, the windows' f64 token vectors) */
/* what a window's rows read besides the state, the ring and the tokens' vectors: the ring weights
 * w_{t,p} of token t's x_k (wk) and x_q (wq), and each token's beta and k q (the verify pipeline
 * hands one over with each item) */
struct window_weights {
    float wk[8][K128_LMAX], wq[8][K128_LMAX];
    float beta[8], kq[8];
};
struct fixed_smem {
    float kn[8][K128_DIM], qn[8][K128_DIM], xk[8][K128_DIM], xq[8][K128_DIM], ks[8][K128_DIM], G[8][K128_DIM],
        gt[8][K128_DIM];
    window_weights ww;
    int base; /* the head's ring base as read, parked for KDA's test at the end */
    int pad_[7];
};
static_assert(sizeof(fixed_smem) % 16 == 0, "ring arrays must stay 16-byte aligned");

/* speculative KDA launches also hold every entry's G [L][K] f32 after ring u; windows of 3 or 4
 * tokens then the tokens' x_k, x_q in f64 [8][K128_XDS] (the row phase's B operand; before it, the
 * start fold's scaled keys); replay decode there the end fold's staged ring (stage bytes,
 * fold_ring_rows_staged) */
__host__ __device__ __forceinline__ size_t smem_of(int L, int ring_bf16, int kda_spec, int window_mma, size_t stage)
{
    return sizeof(fixed_smem) + 128 * sizeof(float) + 2 * (size_t)L * K128_DIM * (ring_bf16 ? 2 : 4) +
           (kda_spec ? (size_t)L * K128_DIM * sizeof(float) : 0) +
           (window_mma ? 8 * K128_XDS * sizeof(double) + K128_NT * sizeof(uint32_t) : 0) + stage;
}
#define K128_SPEC_LMAX 32 /* speculative ring reads only up to this ring length */

/* one element (f32 or bf16) from shared memory */
__device__ __forceinline__ float ld1s(const unsigned char *p, int bf, int off)
{
    return bf ? __uint_as_float((uint32_t)((const uint16_t *)p)[off] << 16) : ((const float *)p)[off];
}

/* where the staging area starts in a replay launch's dynamic shared memory (smem_of's end without
 * it), from the kernel's parameters: formed where used, it holds no register through the step */
__device__ __forceinline__ int stage_offset(const kargs &A)
{
    return (int)smem_of(A.l.ring_len, A.l.ring_dtype == RSSM_DTYPE_BF16, 0, 0, 0);
}
/* the replay kernels whose end fold runs fold_ring_rows_staged: GDN with an f32 state in the
 * V-first layout, where it measured faster (B = 12 / 20: 17.46 / 24.15 us before, 16.96 / 23.44
 * staging 8 entries a round, 16.86 / 23.28 staging 16); with a bf16 state GDN lost 2% with it and
 * KDA 2-5% (bench/results/fold-2026-12-02/) */
__host__ __device__ constexpr bool staged_end_fold(bool kda, bool sbf, bool kf) { return !kda && !sbf && !kf; }
/* the staging area's size: kf, then uf of each of nw warps */
static size_t fold_stage_bytes(int nw, int L)
{
    return ((size_t)fold_stage_entries(L) * K128_DIM + (size_t)nw * fold_stage_entries(L) * 8) * 4;
}

/* The CTA's fixed shared memory, through the aligned symbol itself: its accesses keep the
 * known 16-byte alignment (four floats of a lane load as one vector) */
__device__ __forceinline__ fixed_smem &k128_smem()
{
    extern __shared__ __align__(16) unsigned char dsm[];
    return *reinterpret_cast<fixed_smem *>(dsm);
}

/* Precomputed gates, read packed (io.g [B T][HV] (KDA: x K), io.beta [B T][HV]; HV-based offsets
 * cost the kernels no registers): token row bt's g at the lane's channels c4 .. c4 + 3 (GDN: g[0])
 * and beta as read */
template <bool KDA>
__device__ __forceinline__ void load_packed_gates(const kargs &A, int64_t bt, int HV, int hv, int c4, float (&g)[4],
                                                  float &braw)
{
    if (KDA) {
        const float4 v = __ldg((const float4 *)(A.io.g + (bt * HV + hv) * K128_DIM + c4));
        g[0] = v.x, g[1] = v.y, g[2] = v.z, g[3] = v.w;
    } else {
        g[0] = __ldg(A.io.g + bt * HV + hv);
    }
    braw = __ldg(A.io.beta + bt * HV + hv);
}

} // namespace rssm_decode_k128

#endif /* RSSM_DECODE_K128_CUH */
