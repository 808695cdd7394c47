/*
 * decode_k128.cu — the specialised step kernels for K = V = 128 (packed decode T = 1, replay
 * decode T = 1, verify T <= 8), f32/bf16 state, f32/bf16 ring, f32/bf16 io, GDN and KDA,
 * used by backend.cu wherever they apply (rssm_context_params.cuda_fast = 0 turns them off). Replay at
 * L = 1 equals this file's own packed decode bit for bit (packed runs through the same
 * end-fold routine with h = 0).
 *
 * One CTA of 512 threads (16 warps) per (row b, value head hv); warp w owns state rows
 * 8w .. 8w+7, lane l channels 4l .. 4l+3 of each (windows of 3-4 tokens: another lane layout,
 * see MMA in decode_k128_cta). Grids under one wave split a head's rows over A.split = 2 or 4
 * CTAs of 512 / split threads (part p owns rows p * R .. p * R + R - 1, R = 128 / split), in one
 * cluster with the other CTAs that read the same ring, so a small batch streams its state
 * through more SMs. Every CTA but the last wave's also L2-prefetches (one thread, TMA bulk
 * prefetch) the rows and committed ring entries of the CTA A.pf_ahead places later in launch
 * order, which starts about when this one ends. After the row dot products' butterfly (MMA:
 * their product's D fragment), each (row, token) value sits on one lane; that lane finishes u
 * and o of its row and token, the tokens of a row in order with one broadcast of u per token.
 * The memory traffic is ordered so that no global load waits on another after the cursor, and
 * the ring lives in shared memory:
 *   round 0 (kernel entry, before the slot is known): slot, write_slot, fold flag, v of the
 *     warp's rows and the token inputs of warp t < T: raw k_t, q_t (and A_log, dt_bias for raw
 *     gates) staged by cp.async in shared memory, a/g and b/beta in registers;
 *   round 1 (slot known): cursor, ring_base and the warp's 8 rows of S0 (all in flight at once);
 *   round 2 (cursor known): the h = cursor - base live ring entries (u of all rows, k, G: GDN
 *     G_i, KDA G_{h-1}) copied whole into shared memory with cp.async (no registers held), live
 *     entry i to shared entry i: KDA ring positions 0 .. h-1, GDN base .. cursor-1 (absolute
 *     positions, replayssm.h);
 *   while S0 and the ring are in flight, warps t < T normalise q_t, k_t and evaluate the gates.
 * Speculative ring read (kargs.spec, set by the back end for GDN replay, for verify on grids of
 * one wave, B * HV <= 2 * SMs, and for GDN verify windows of 3-4 tokens at any batch; L <= 32): all L
 * entries (u, k, G; KDA G of every entry) are copied in round 1 next to S0, without waiting
 * for the cursor; entries outside the live ones are never used (they may be written concurrently
 * by this step's CTAs: a harmless read of unused bytes; GDN's live entries then start at shared
 * entry base). Costs (L - h) entries of extra reads (KDA's gates of every entry: K floats each,
 * which is why KDA replay never reads ahead; cuda_ring_read forces it either way).
 * After that no global load depends on another: the start fold, the ring weights, the end
 * fold and the rows read the ring from shared memory. (Reading ring_k from global after two
 * barriers, the folds' u and k from global in a loop over i, and ring u held in 8 registers
 * per thread spilled 116-612 bytes per thread together with S, and measured slower:
 * bench/results/earlier/gpu-bench.txt.)
 * Verify T = 5..8 runs here (TC = 8): a lane holds v of two tokens (t and t + 4).
 * Small-batch replay steps (io.fold_every: every row folds, its ring drained by the planner)
 * run decode_k128_fold_every_kernel: packed's code, after a check of the row's fold flag and
 * cursor (CHK).
 * Verify T = 3..4 (TC = 4, "MMA") computes the rows' dot products on the FP64 tensor cores
 * instead of FFMA butterflies (the window was bound by issuing them: 1,645 of 2,609
 * instructions per warp); its lanes hold the state in that product's fragment layout (one row
 * per 4 lanes, see MMA below), and its start fold reads the ring's keys staged as f32.
 *
 * Races: ring reads complete (cp.async.wait_all, then a CTA barrier) before the fold decision;
 * GDN ring_k of a key head is shared by its group's value heads, which form a cluster, and on
 * steps with a shared start fold (overwriting positions 0..T-1; uniform over the row) every CTA
 * passes the cluster barrier after its cp.async reads and before the weight phase writes the
 * new keys (a GDN head's own early folds write only positions >= cursor, which no head reads as
 * live). KDA: one CTA holds a whole head unless split; split parts form a cluster, pass the same
 * barrier on any start fold (they decide alike), and part 0 writes ring_base only after a
 * cluster barrier (every part has read it). GDN heads split over parts (their bases differ
 * within the cluster): each CTA arrives on the cluster barrier once its reads are done and waits
 * for the others before the weight phase on every step; part 0 writes the head's ring base after
 * that wait (a one-token step in the weight phase, a verify window at the end).
 */
#include "k128_common.cuh"
#include "k128_trace.cuh"

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
struct fixed_smem {
    float kn[8][K128_DIM], qn[8][K128_DIM], xk[8][K128_DIM], xq[8][K128_DIM], ks[8][K128_DIM], G[8][K128_DIM],
        gt[8][K128_DIM];
    float wk[8][K128_LMAX], wq[8][K128_LMAX];
    float beta[8], kq[8];
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

/* fold_ring_rows for the window layout (the lane's one row srow, channels 16 j + sch + e in
 * S[j][e]) on the FP64 tensor cores: GDN S e^{Gs} (f32), then S += sum_i u_i (k_i e^{Gs - G_i});
 * KDA S += sum_i u_i k~_i, then S e^{Gs} per channel (gs: GDN Gs in gs[0], KDA Gs per channel).
 * The scaled keys and the decays are fold_ring_rows' f32 operations; the sums over entries run in
 * f64 and S is rounded once per round of 8 entries, so the bits are not fold_ring_rows' (the f32
 * chain rounds after every entry) and lie closer to float64. Why: a lane of this layout needs 32
 * channels of every key, which the f32 loop read from shared memory as 8 loads per 32 FMAs, and
 * the start fold took 7 us of a folding CTA's 18 (GDN T = 4, B = 128,
 * bench/results/verify-trace-2026-12-03/). A round stages its keys as f64 B fragments in kf:
 * kf[(16 ks + t) * 32 + l] is the key of entry 4 ks + l % 4 at channel 16 j + 4 (l / 8) + 2 hf +
 * (l / 4) % 2 for tile t = 2 j + hf, so that a warp's loads for one DMMA are 256 contiguous bytes
 * and tile t's accumulator (lane l: row l / 4, columns 2 (l % 4) and + 1) is the lane's S[j][2 hf],
 * S[j][2 hf + 1]. Entries past h are zero on both sides. Every thread of the CTA calls this (it
 * has barriers). */
#define K128_FOLD_ROUND 8 /* entries per round: 2 k-steps x 16 tiles x 32 lanes of f64 fit sXd */
template <bool KDA>
__device__ __forceinline__ void fold_ring_rows_mma(float (&S)[8][4], const float *gs, int h, const unsigned char *sK,
                                                   const unsigned char *sU, const float *sG, int rbf, int sch, int srow,
                                                   double *kf)
{
    const int lane = threadIdx.x & 31;
    if (!KDA) {
        const float eg = expf(gs[0]);
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                S[j][e] = S[j][e] * eg;
    }
#pragma unroll 1
    for (int i0 = 0; i0 < h; i0 += K128_FOLD_ROUND) {
        const int n = min(K128_FOLD_ROUND, h - i0);
#pragma unroll 1
        for (int x = threadIdx.x; x < K128_FOLD_ROUND * 16 * 8; x += blockDim.x) {
            const int l = x & 31, t = (x >> 5) & 15, i = 4 * (x >> 9) + (l & 3);
            const int ch = 16 * (t >> 1) + 4 * (l >> 3) + 2 * (t & 1) + ((l >> 2) & 1);
            float k = 0.0f;
            if (i < n) {
                k = ld1s(sK, rbf, (i0 + i) * K128_DIM + ch);
                if (!KDA) k = k * expf(gs[0] - sG[i0 + i]);
            }
            kf[x] = (double)k;
        }
        float a[K128_FOLD_ROUND / 4]; /* u of entry 4 ks + lane % 4, row srow */
#pragma unroll
        for (int ks = 0; ks < K128_FOLD_ROUND / 4; ks++) {
            const int i = 4 * ks + (lane & 3);
            a[ks] = i < n ? ld1s(sU, rbf, (i0 + i) * K128_DIM + srow) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int t = 0; t < 16; t++) {
            const int j = t >> 1, e = 2 * (t & 1);
            double d0 = S[j][e], d1 = S[j][e + 1];
#pragma unroll
            for (int ks = 0; ks < K128_FOLD_ROUND / 4; ks++)
                dmma_8x8x4(d0, d1, (double)a[ks], kf[(16 * ks + t) * 32 + lane]);
            S[j][e] = (float)d0, S[j][e + 1] = (float)d1;
        }
        __syncthreads(); /* kf is rewritten by the next round (or, after the fold, by the tokens' vectors) */
    }
    if (KDA) {
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                S[j][e] = S[j][e] * expf(gs[16 * j + sch + e]);
    }
}
static_assert(K128_FOLD_ROUND * 16 * 8 <= 8 * K128_XDS, "a fold round's key fragments fit the window's f64 area");

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

/* ---- the step of one CTA, phase by phase ----------------------------------------------------- */
/* The phases take the CTA's coordinates as plain values: packed in a struct (one copy per CTA,
 * passed by reference), they made the compiler emit different code for the same operations
 * (longer schedules, spills in the KDA kernels). */

/* The CTA's fixed shared memory, through the aligned symbol itself: its accesses keep the
 * known 16-byte alignment (four floats of a lane load as one vector) */
__device__ __forceinline__ fixed_smem &k128_smem()
{
    extern __shared__ __align__(16) unsigned char dsm[];
    return *reinterpret_cast<fixed_smem *>(dsm);
}

/* Round 0: raw k_t, q_t (io dtype) staged by cp.async in sm.xk[t], sm.xq[t] (each lane its own
 * 4 elements; 8-byte aligned for bf16 as the strides are multiples of 4) by the warps with kw,
 * qw (tp: the token this warp stages); the gate inputs (gw) a / g into ga, b / beta into braw,
 * and for raw gates A_log staged in sm.gt[t][c4], dt_bias in sm.G[t][c4..] (KDA) or
 * sm.gt[t][c4 + 1] (GDN), each lane its own copy. */
template <bool KDA>
__device__ __forceinline__ void stage_token_inputs(const kargs &A, int b, int T, int tp, int kh, int hv, int HV,
                                                   int lane, int iobf, bool kw, bool qw, bool gw, float (&ga)[4],
                                                   float &braw)
{
    fixed_smem &sm = k128_smem();
    const int c4 = lane * 4; /* the lane's first channel */
    const rssm_layer &l = A.l;
    {
        const int64_t bt = (int64_t)b * T + tp;
        const int64_t ko = bt * A.io.k_stride + (int64_t)kh * K128_DIM + c4,
                      qo = bt * A.io.q_stride + (int64_t)kh * K128_DIM + c4;
        if (kw) {
            if (iobf)
                cp8((uint16_t *)&sm.xk[tp][0] + c4, (const uint16_t *)A.io.k + ko);
            else
                cp16(&sm.xk[tp][c4], (const float *)A.io.k + ko);
        }
        if (qw) {
            if (iobf)
                cp8((uint16_t *)&sm.xq[tp][0] + c4, (const uint16_t *)A.io.q + qo);
            else
                cp16(&sm.xq[tp][c4], (const float *)A.io.q + qo);
        }
    }
    if (gw) {
        const int64_t bt = (int64_t)b * T + tp;
        if (A.io.g) { /* packed (rssm_cuda_decode_k128_ok): HV-based offsets cost the kernels no registers */
            if (KDA) {
                const float4 v = __ldg((const float4 *)(A.io.g + (bt * HV + hv) * K128_DIM + c4));
                ga[0] = v.x, ga[1] = v.y, ga[2] = v.z, ga[3] = v.w;
            } else {
                ga[0] = __ldg(A.io.g + bt * HV + hv);
            }
            braw = __ldg(A.io.beta + bt * HV + hv);
        } else {
            cp4(&sm.gt[tp][c4], A.io.A_log + hv);
            if (KDA) {
#pragma unroll
                for (int e = 0; e < 4; e++)
                    ga[e] = ld_dt(A.io.a, l.io_dtype, bt * A.io.a_stride + (int64_t)hv * K128_DIM + c4 + e);
                cp16(&sm.G[tp][c4], A.io.dt_bias + hv * K128_DIM + c4);
            } else {
                ga[0] = ld_dt(A.io.a, l.io_dtype, bt * A.io.a_stride + hv);
                cp4(&sm.gt[tp][c4 + 1], A.io.dt_bias + hv);
            }
            braw = ld_dt(A.io.b, l.io_dtype, bt * A.io.b_stride + hv);
        }
    }
}

/* v of (token (lane >> 3) + 4j, row row0 + lane % 8), for the row phase: raw bits (f32, or bf16
 * in the low half) so that nothing waits for them before the state loads are issued */
template <int TC>
__device__ __forceinline__ void load_v(const kargs &A, int b, int T, int hv, int row0, int lane, int iobf,
                                       uint32_t (&vraw)[2])
{
#pragma unroll
    for (int jj = 0; jj < (TC > 4 ? 2 : 1); jj++) {
        const int t = (lane >> 3) + 4 * jj;
        const int64_t vo = ((int64_t)b * T + t) * A.io.v_stride + (int64_t)hv * K128_DIM + row0 + (lane & 7);
        if (t < T)
            vraw[jj] = iobf ? (uint32_t)__ldg((const uint16_t *)A.io.v + vo) : __ldg((const uint32_t *)A.io.v + vo);
    }
}

/* padding (or a bad row): a zero output for the CTA's R rows of head hv, T tokens; no state,
 * ring or cursor touched */
__device__ __forceinline__ void zero_output(const kargs &A, int b, int T, int R, int nt, int tid, int HV, int hv,
                                            int part)
{
    cp_wait_all(); /* no copy may land after the CTA left */
    for (int i = tid; i < T * R; i += nt)
        st_dt(A.io.o, A.l.io_dtype, (((int64_t)b * T + i / R) * HV + hv) * K128_DIM + part * R + i % R, 0.0f);
}

/* L2 prefetch (one thread of the last warp, after its own loads are in flight) for the CTA
 * A.pf_ahead places later in launch order (by rule half a wave):
 * it starts soon after this one ends and finds its rows and ring in L2. Further ahead, the
 * prefetched lines are evicted before their CTA reads them, and DRAM reads them twice (launch_rules.h).
 * The launcher splits that distance into rows and CTAs of a row (pf_db, pf_dx): no division here. */
template <bool KDA, bool SBF, int MODE>
__device__ __forceinline__ void prefetch_ahead(const kargs &A, int b, int R, int group, int split, int split_log2)
{
    int pf_b = b + A.pf_db, pf_x = blockIdx.x + A.pf_dx;
    if (pf_x >= (int)gridDim.x) pf_x -= gridDim.x, pf_b++;
    const bool in_grid = pf_b < (int)gridDim.y;
    const int pf_hv = pf_x >> split_log2, pf_part = pf_x & (split - 1);
    const int pf_slot = in_grid ? A.io.slot[pf_b] : -1;
    if (pf_slot >= 0 && pf_slot < A.st.num_slots)
        prefetch_head<KDA, SBF, MODE>(A.st, A.l, pf_slot, pf_hv, pf_part, R, group);
}

/* 4 raw elements (channels c4 ..) of a staged k or q (io dtype) */
__device__ __forceinline__ void staged4(const float *row, int c4, int iobf, float *x)
{
    if (iobf) {
        const uint2 v = *((const uint2 *)((const uint16_t *)row + c4));
        unpack_bf2(v.x, x), unpack_bf2(v.y, x + 2);
    } else {
        const float4 v = *((const float4 *)(row + c4));
        x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
    }
}
/* 1 / ||x|| over the warp's 128 channels (1 without the l2 norm) */
__device__ __forceinline__ float inv_norm(const rssm_layer &l, const float *x)
{
    if (!l.qk_l2norm) return 1.0f;
    float n = x[0] * x[0];
#pragma unroll
    for (int e = 1; e < 4; e++)
        n = __fmaf_rn(x[e], x[e], n);
    n = warp_sum(n);
    return 1.0f / sqrtf(n + (float)RSSM_L2NORM_EPS);
}

/* Token preparation (the roles of round 0, token t), independent of the state, while S0 and
 * the ring are in flight: normalised k into sm.kn[t] (kw), normalised and scaled q into
 * sm.qn[t] (qw), the gates g into sm.gt[t] and beta (gw); verify also k q. FLOOR (GDN replay
 * and verify): g clamped at RSSM_GATE_FLOOR_F32 (params.h), whose e^g is 0 as any g below it;
 * packed decode keeps the raw gate. (KDA keeps it too: a KDA gate below the floor takes G past
 * -G_MAX, so the step folds and multiplies by e^G = 0 either way, and the key it would pre-decay
 * is never stored; a verify window's gates are clamped at their levels: clamp_window_gates.) */
template <bool KDA, bool ONE, bool FLOOR>
__device__ __forceinline__ void prepare_token(const kargs &A, int t, int lane, int iobf, bool kw, bool qw, bool gw,
                                              const float (&ga)[4], float braw)
{
    fixed_smem &sm = k128_smem();
    const int c4 = lane * 4; /* the lane's first channel */
    const rssm_layer &l = A.l;
    cp_wait_but1(); /* this lane's own staging has landed */
    float kv[4] = {0.0f, 0.0f, 0.0f, 0.0f}, qv[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (kw) {
        float kr[4];
        staged4(&sm.xk[t][0], c4, iobf, kr);
        const float sk = inv_norm(l, kr);
#pragma unroll
        for (int e = 0; e < 4; e++)
            kv[e] = kr[e] * sk, sm.kn[t][c4 + e] = kv[e];
    }
    if (qw) {
        float qr[4];
        staged4(&sm.xq[t][0], c4, iobf, qr);
        const float sq = inv_norm(l, qr);
#pragma unroll
        for (int e = 0; e < 4; e++)
            qv[e] = qr[e] * sq * l.scale, sm.qn[t][c4 + e] = qv[e];
    }
    if (gw) {
        float g[4];
        if (A.io.g) {
            const float x = FLOOR ? rssm_gate_floor_f32(ga[0]) : ga[0];
#pragma unroll
            for (int e = 0; e < 4; e++)
                g[e] = KDA ? ga[e] : x;
        } else if (KDA) {
            const float alog = sm.gt[t][c4];
#pragma unroll
            for (int e = 0; e < 4; e++)
                g[e] = rssm_gate_f32(ga[e], alog, sm.G[t][c4 + e], l.has_lower_bound, l.lower_bound);
        } else {
            float x = rssm_gate_f32(ga[0], sm.gt[t][c4], sm.gt[t][c4 + 1], l.has_lower_bound, l.lower_bound);
            if (FLOOR) x = rssm_gate_floor_f32(x);
            g[0] = g[1] = g[2] = g[3] = x;
        }
#pragma unroll
        for (int e = 0; e < 4; e++)
            sm.gt[t][c4 + e] = g[e];
        if (lane == 0) sm.beta[t] = A.io.g ? braw : rssm_sigmoid_f32(braw);
    }
    if (!ONE) { /* k q of the token (ONE: warp 0 forms it after the barrier) */
        float kq = 0.0f;
#pragma unroll
        for (int e = 0; e < 4; e++)
            kq = __fmaf_rn(kv[e], qv[e], kq);
        kq = warp_sum(kq);
        if (lane == 0) sm.kq[t] = kq;
    }
}

/* KDA verify, a deep window: its gates in sm.gt clamped at each channel's level (params.h,
 * RSSM_KDA_WINDOW_LEVEL), by one warp (a lane: its 4 channels); read after a barrier. */
__device__ __forceinline__ void clamp_window_gates(const kargs &A, int T, int lane)
{
    fixed_smem &sm = k128_smem();
    const int c4 = lane * 4; /* the lane's first channel */
    const float decay = rssm_kda_window_decay(&A.l);
#pragma unroll 1
    for (int e = 0; e < 4; e++) {
        float lvl;
        RSSM_KDA_WINDOW_LEVEL(sm.gt[t][c4 + e], T, decay, lvl);
        for (int t = 0; t < T; t++)
            sm.gt[t][c4 + e] = rssm_kda_clamp(sm.gt[t][c4 + e], lvl);
    }
}

/* Verify: the window's fold tests, alike in every warp (a lane reads its 4 channels; every warp
 * all 128): bit 0 when the window would take some channel's G below -G_MAX (the head's early
 * start fold: min over channels of G_{h-1} + the window's T gates, G_{h-1} per channel in Gl
 * (KDA) or in Gl[0] (GDN, whose gates sm.gt are the same on every channel)); bit 1 (KDA) when
 * some channel's window decays by more than the clamp allows (params.h, the sum of its gates'
 * negative parts: its gates are clamped and the head folds at the start). h = 0: no live entries
 * (no early fold). */
template <bool KDA> __device__ __forceinline__ int window_tests(const kargs &A, const float *Gl, int h, int T, int lane)
{
    fixed_smem &sm = k128_smem();
    if (!KDA) {
        float W = Gl[0];
        for (int t = 0; t < T; t++)
            W = W + sm.gt[t][0];
        return W < -A.l.fold_threshold;
    }
    const int c4 = lane * 4; /* the lane's first channel */
    float W[4], N[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int e = 0; e < 4; e++)
        W[e] = h > 0 ? Gl[c4 + e] : 0.0f;
    for (int t = 0; t < T; t++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const float g = sm.gt[t][c4 + e];
            W[e] = W[e] + g, N[e] = N[e] + fminf(g, 0.0f);
        }
    const float m = warp_min(fminf(fminf(W[0], W[1]), fminf(W[2], W[3])));
    const bool deep = fminf(fminf(N[0], N[1]), fminf(N[2], N[3])) < -rssm_kda_window_decay(&A.l);
    return (h > 0 && m < -A.l.fold_threshold) | (__any_sync(0xffffffffu, deep) << 1);
}

/* One token (ONE): every warp, in registers, for its lanes' 4 channels: G (G1: channel c4's; GDN:
 * the head's one G, its end-fold test) and (KDA replay) the smallest G for the end-fold test
 * (gmin1), and the vectors its ring weights
 * take (wa4, wb4: KDA x_k = e^G k and x_q = e^G q, GDN k and q); warp 0 also stores x_k, x_q and
 * k q for the rows (read after the next barrier). G4_of(e): G of channel c4 + e. */
template <bool KDA, int MODE>
__device__ __forceinline__ void gates_one_token(int w, int lane, int h, const float *Gl, const float *sG,
                                                float (&wa4)[4], float (&wb4)[4], float &G1, float &gmin1)
{
    fixed_smem &sm = k128_smem();
    const int c4 = lane * 4; /* the lane's first channel */
    float G4[4], xk4[4], xq4[4], kn4[4], qn4[4];
#pragma unroll
    for (int e = 0; e < 4; e++)
        kn4[e] = sm.kn[0][c4 + e], qn4[e] = sm.qn[0][c4 + e],
        G4[e] = (h > 0 ? (KDA ? Gl[c4 + e] : sG[h - 1]) : 0.0f) + sm.gt[0][c4 + e];
    G1 = G4[0];
    if (KDA && MODE == MODE_REPLAY) gmin1 = warp_min(fminf(fminf(G4[0], G4[1]), fminf(G4[2], G4[3])));
    const float eg0 = KDA ? 0.0f : expf(G4[0]);
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const float eg = KDA ? expf(G4[e]) : eg0;
        xk4[e] = eg * kn4[e], xq4[e] = eg * qn4[e];
        wa4[e] = KDA ? xk4[e] : kn4[e], wb4[e] = KDA ? xq4[e] : qn4[e];
    }
    if (w == 0) {
        float kq = 0.0f;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            sm.xk[0][c4 + e] = xk4[e], sm.xq[0][c4 + e] = xq4[e];
            kq = __fmaf_rn(kn4[e], qn4[e], kq);
        }
        kq = warp_sum(kq);
        if (lane == 0) sm.kq[0] = kq;
    }
}

/* Verify: warp t, token t: G_t (from G_{h-1}: Gl, KDA, or sG[h - 1], GDN), x_k, x_q, the entry's
 * key as stored (sm.ks) and G (sm.G); MMA: also x_k, x_q in f64 (columns 2t, 2t + 1 of the row
 * phase's B operand) */
template <bool KDA, bool MMA>
__device__ __forceinline__ void gates_window_token(const kargs &A, double *sXd, int t, int lane, int h, const float *Gl,
                                                   const float *sG)
{
    fixed_smem &sm = k128_smem();
    const int c4 = lane * 4; /* the lane's first channel */
    float G[4];
#pragma unroll
    for (int e = 0; e < 4; e++)
        G[e] = h > 0 ? (KDA ? Gl[c4 + e] : sG[h - 1]) : 0.0f;
    for (int tt = 0; tt <= t; tt++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            G[e] = G[e] + sm.gt[tt][c4 + e];
    const float eg0 = KDA ? 0.0f : expf(G[0]);
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const float kv = sm.kn[t][c4 + e], qv = sm.qn[t][c4 + e];
        const float eg = KDA ? expf(G[e]) : eg0;
        sm.xk[t][c4 + e] = eg * kv;
        sm.xq[t][c4 + e] = eg * qv;
        sm.ks[t][c4 + e] = round_dt(A.l.ring_dtype, KDA ? kv * expf(-G[e]) : kv);
        sm.G[t][c4 + e] = G[e];
        if (MMA) {
            sXd[2 * t * K128_XDS + c4 + e] = (double)sm.xk[t][c4 + e];
            sXd[(2 * t + 1) * K128_XDS + c4 + e] = (double)sm.xq[t][c4 + e];
        }
    }
}

/* Verify: ring weights w_{t,p}, p < h + t (the window's own entries from sm.ks, sm.G) into
 * sm.wk[t], sm.wq[t], by gate (window_ring_weights below). */

/* channels c4 .. c4 + 3 of entry p's key: a ring entry (p < h, as stored) or the window's own */
__device__ __forceinline__ void entry_key4(const unsigned char *sK, int rbf, int p, int h, int c4, float (&k4)[4])
{
    if (p < h)
        ld4(sK, rbf, p * K128_DIM + c4, k4);
    else
#pragma unroll
        for (int e = 0; e < 4; e++)
            k4[e] = k128_smem().ks[p - h][c4 + e];
}

/* GDN: a warp takes an entry p and a group of 4 tokens, the 8 dot products of k_p with their k and
 * q, summed over the warp by one reduce-scatter (RS: 9 shuffles in 5 dependent steps, where a warp
 * per (t, p) took 10 shuffles for 2 products). Its additions are warp_sum's, in its order: the
 * weights keep their bits. GDN T = 4 at B = 128: 176.4 -> 163.0 us
 * (bench/results/verify-weights-2026-12-03/). */
__device__ __forceinline__ void ring_weights_gdn(const unsigned char *sK, const float *sG, int rbf, int T, int h, int w,
                                                 int NW, int lane)
{
    fixed_smem &sm = k128_smem();
    const int c4 = lane * 4; /* the lane's first channel */
    const int E = h + T - 1, groups = (T + 3) >> 2;
    for (int pi = w; pi < E * groups; pi += NW) {
        const int p = pi % E, t0 = 4 * (pi / E);
        if (p - h >= t0 + 3) continue; /* no token of the group reads this entry */
        float k4[4];
        entry_key4(sK, rbf, p, h, c4, k4);
        /* v[2 j]: k_p . k of token t0 + j, v[2 j + 1]: k_p . q (past the window: unused) */
        float v[8];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const float4 a = *(const float4 *)(sm.kn[t0 + j] + c4), b = *(const float4 *)(sm.qn[t0 + j] + c4);
            float dk = 0.0f, dq = 0.0f;
            dk = __fmaf_rn(k4[0], a.x, dk), dq = __fmaf_rn(k4[0], b.x, dq);
            dk = __fmaf_rn(k4[1], a.y, dk), dq = __fmaf_rn(k4[1], b.y, dq);
            dk = __fmaf_rn(k4[2], a.z, dk), dq = __fmaf_rn(k4[2], b.z, dq);
            dk = __fmaf_rn(k4[3], a.w, dk), dq = __fmaf_rn(k4[3], b.w, dq);
            v[2 * j] = dk, v[2 * j + 1] = dq;
        }
        RS<8, 1, 16>::run(v, lane); /* lane l: product l / 4 in v[0] */
        const int j = lane >> 2, t = t0 + (j >> 1);
        if ((lane & 3) == 0 && t < T && p < h + t) {
            const float f = expf(sm.G[t][0] - (p < h ? sG[p] : sm.G[p - h][0]));
            (j & 1 ? sm.wq : sm.wk)[t][p] = v[0] * f;
        }
    }
}

/* KDA: one warp per (t, p), NW warps, k_p with x_k and x_q of token t. GDN's reduce-scatter
 * measured 1.0-1.4% slower here (3% with a bf16 state), where ptxas spilled more around it. */
__device__ __forceinline__ void ring_weights_kda(const unsigned char *sK, int rbf, int T, int h, int w, int NW,
                                                 int lane)
{
    fixed_smem &sm = k128_smem();
    const int c4 = lane * 4; /* the lane's first channel */
    const int P = T * h + T * (T - 1) / 2;
    for (int pi = w; pi < P; pi += NW) {
        int t = 0, p = pi;
        while (p >= h + t)
            p -= h + t, t++;
        float k4[4];
        entry_key4(sK, rbf, p, h, c4, k4);
        const float *xa = sm.xk[t], *xb = sm.xq[t];
        float dk = 0.0f, dq = 0.0f;
#pragma unroll
        for (int e = 0; e < 4; e++)
            dk = __fmaf_rn(k4[e], xa[c4 + e], dk), dq = __fmaf_rn(k4[e], xb[c4 + e], dq);
        dk = warp_sum(dk), dq = warp_sum(dq);
        if (lane == 0) {
            sm.wk[t][p] = dk;
            sm.wq[t][p] = dq;
        }
    }
}

template <bool KDA>
__device__ __forceinline__ void window_ring_weights(const unsigned char *sK, const float *sG, int rbf, int T, int h,
                                                    int w, int NW, int lane)
{
    if constexpr (KDA)
        ring_weights_kda(sK, rbf, T, h, w, NW, lane);
    else
        ring_weights_gdn(sK, sG, rbf, T, h, w, NW, lane);
}

/* End fold of a one-token step (packed decode, or replay when the ring is full or the fold is
 * forced or early): u of the warp's 8 rows, then S_n (the h ring entries and the new entry
 * folded into S at the token's G: G_{h-1} (Gl, KDA; sG[h - 1], GDN) + g) and o = S_n q, o_t of
 * row b; S_n is stored as the checkpoint of slot dst (its offset recomputed from an opaque copy
 * of the slot). vr: v of the lane's row (before the shuffle). */
template <bool KDA, bool SBF, bool KF, int MODE>
__device__ __forceinline__ void rows_end_fold(const kargs &A, float (&S)[8][4], const unsigned char *sK,
                                              const unsigned char *sU, const float *sG, const float *Gl, int rbf, int h,
                                              int lane, int row0, int b, int HV, int hv, int srow, int sch, float vr,
                                              int dst)
{
    fixed_smem &sm = k128_smem();
    const int c4 = lane * 4; /* the lane's first channel */
    /* only the k dots: RS<8> on them gives the bits RS<16> on (k, q) pairs would (the butterfly
     * adds each value over lane bits 16, 8, 4, 2, 1 in that order whatever N). Lane l ends with
     * row l / 4. */
    float v[8];
    end_fold_dots(
        v, S, [&](int e) { return sm.xk[0][c4 + e]; }, sU, rbf, h, sm.wk[0], lane, row0);
    RS<8, 1, 16>::run(v, lane);
    const float myu = sm.beta[0] * (__shfl_sync(FULL_MASK, vr, lane >> 2) - v[0]); /* u of row lane / 4 */
    float G4[4];
#pragma unroll
    for (int e = 0; e < 4; e++)
        G4[e] = (h > 0 ? (KDA ? Gl[c4 + e] : sG[h - 1]) : 0.0f) + sm.gt[0][c4 + e];
    constexpr bool STAGED = MODE == MODE_REPLAY && staged_end_fold(KDA, SBF, KF);
    if constexpr (STAGED)
        fold_ring_rows_staged(S, G4, h, sK, sU, sG, rbf, c4, row0, stage_offset(A), fold_stage_entries(A.l.ring_len),
                              blockDim.x, [] { __syncthreads(); });
    else
        fold_ring_rows<KDA>(S, G4, h, sK, sU, sG, rbf, c4, row0);
    float o[8];
    end_fold_update(
        S, o, myu, [&](int e) { return sm.kn[0][c4 + e]; }, [&](int e) { return sm.qn[0][c4 + e]; });
    auto store_rows = [&]() {
        const int64_t cw = lane_state_off(((int64_t)opaque(dst) * HV + hv) << 14, srow, sch, KF);
        if (KF) {
            store_state_kfirst<SBF, false>(A.st.checkpoint, cw, S);
        } else if (!SBF) {
#pragma unroll
            for (int r = 0; r < 8; r++)
                __stcs((float4 *)((float *)A.st.checkpoint + cw + r * K128_DIM),
                       make_float4(S[r][0], S[r][1], S[r][2], S[r][3]));
        } else {
#pragma unroll
            for (int r = 0; r < 8; r++)
                st4(A.st.checkpoint, 1, cw + r * K128_DIM, S[r]);
        }
    };
    /* STAGED: the rows leave before the output's butterfly, so that their stores drain meanwhile
     * (B = 16: 20.22 -> 20.10 us; the launch where every row folds 17.54 -> 16.90) */
    if constexpr (STAGED) store_rows();
    RS<8, 1, 16>::run(o, lane);
    if ((lane & 3) == 0) st_dt(A.io.o, A.l.io_dtype, (((int64_t)b * HV + hv) << 7) + row0 + (lane >> 2), o[0]);
    if constexpr (!STAGED) store_rows();
}

/* A window's lane finishes its (row, token t) in token order: u_t from the row's k dot dd, o_t
 * from its q dot o, with the earlier tokens' u (one broadcast per token, from lane src_of(s2));
 * lanes with live = 0 only take part in the shuffles. Same operations, in the same order, as a
 * sequential loop over the tokens. Returns u_t rounded to the ring dtype. */
template <int TC, class SRC>
__device__ __forceinline__ float window_token_chain(int rdt, int h, int t, bool live, float vr, float &dd, float &o,
                                                    SRC src_of)
{
    fixed_smem &sm = k128_smem();
    float uw = 0.0f;
#pragma unroll
    for (int s2 = 0; s2 < TC; s2++) {
        if (live && t == s2) {
            const float u = sm.beta[t] * (vr - dd);
            o = __fmaf_rn(u, sm.kq[t], o);
            uw = round_dt(rdt, u);
        }
        if (s2 + 1 < TC) {
            const float us = __shfl_sync(FULL_MASK, uw, src_of(s2));
            if (live && t > s2) dd = __fmaf_rn(us, sm.wk[t][h + s2], dd), o = __fmaf_rn(us, sm.wq[t][h + s2], o);
        }
    }
    return uw;
}

/* Windows of 3-4 tokens (MMA): D[row][2 t + type] = S0 row . (x_k,t | x_q,t) + sum_{i < h}
 * u_i[row] (wk | wq)[t][i] on the FP64 tensor cores: 32 tiles over the channels (lane l:
 * channels 16 j + 4 (l % 4) + e of its row srow, A from S, B from column l / 4 of sXd), two
 * accumulators, then the ring in tiles of 4 entries (entry i0 + l % 4). Lane 4 r + t ends with
 * row r's two values of token t and finishes that row and token (window_token_chain): o_t of
 * row b, u_t into the ring of slot s at position wpos + t. vb: v of that row and token as read
 * (io dtype bits). */
template <int TC>
__device__ __forceinline__ void rows_window_mma(const kargs &A, const float (&S)[8][4], const double *sXd,
                                                const unsigned char *sU, int rbf, int h, int wpos, int T, int lane,
                                                int srow, int sch, int b, int s, int HV, int hv, int L, uint32_t vb,
                                                int iobf)
{
    fixed_smem &sm = k128_smem();
    const rssm_layer &l = A.l;
    const int cq = lane & 3, n = lane >> 2;
    const double *xd = sXd + n * K128_XDS + sch;
    double d0 = 0.0, d1 = 0.0, e0 = 0.0, e1 = 0.0;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const double2 x01 = *(const double2 *)(xd + 16 * j), x23 = *(const double2 *)(xd + 16 * j + 2);
        dmma_8x8x4(d0, d1, (double)S[j][0], x01.x);
        dmma_8x8x4(e0, e1, (double)S[j][1], x01.y);
        dmma_8x8x4(d0, d1, (double)S[j][2], x23.x);
        dmma_8x8x4(e0, e1, (double)S[j][3], x23.y);
    }
    const float *wcol = (n & 1) ? sm.wq[n >> 1] : sm.wk[n >> 1];
    const bool wlive = (n >> 1) < T;
#pragma unroll 1
    for (int i0 = 0; i0 < h; i0 += 4) {
        const int i = i0 + cq;
        double a = 0.0, bw = 0.0;
        if (i < h) {
            a = (double)ld1s(sU, rbf, i * K128_DIM + srow);
            if (wlive) bw = (double)wcol[i];
        }
        dmma_8x8x4(d0, d1, a, bw);
    }
    const int t = cq;
    const bool live = t < T;
    const float vr = __uint_as_float(iobf ? vb << 16 : vb);
    float dd = (float)(d0 + e0), o = (float)(d1 + e1);
    const float uw =
        window_token_chain<TC>(l.ring_dtype, h, t, live, vr, dd, o, [&](int s2) { return (lane & ~3) + s2; });
    if (live) {
        st_dt(A.io.o, l.io_dtype, ((((int64_t)b * T + t) * HV + hv) << 7) + srow, o);
        st_dt(A.st.ring_u, l.ring_dtype, ((((int64_t)s * HV + hv) * L + wpos + t) << 7) + srow, uw);
    }
}

/* Windows of 1-2 and 5-8 tokens, and replay without a fold: per group of RJ = 8 / TC rows, the
 * row dot products with x_k and x_q plus the ring's weighted u, summed by the butterfly; value
 * (row g0 + rr, token t, type) then sits on lane 4 (rr TC + t) + 2 type, and lane 4 (rr TC + t)
 * finishes (row, token t) (window_token_chain): o_t of row b, u_t into the ring of slot s at
 * position wpos + t. vreg(jj): v of the lane's (token (lane >> 3) + 4 jj, row row0 + lane % 8). */
template <int TC>
__device__ __forceinline__ void rows_window(const kargs &A, const float (&S)[8][4], const unsigned char *sU, int rbf,
                                            int h, int wpos, int T, int lane, int row0, int b, int s, int HV, int hv,
                                            int L, const uint32_t (&vraw)[2], int iobf)
{
    fixed_smem &sm = k128_smem();
    const int c4 = lane * 4; /* the lane's first channel */
    auto vreg = [&](int jj) { return __uint_as_float(iobf ? vraw[jj] << 16 : vraw[jj]); };
    const rssm_layer &l = A.l;
    constexpr int RJ = 8 / TC; /* rows per group */
#pragma unroll
    for (int g0 = 0; g0 < 8; g0 += RJ) {
        float v[16]; /* (rr * TC + t) * 2 + type */
#pragma unroll
        for (int rr = 0; rr < RJ; rr++)
#pragma unroll
            for (int t = 0; t < TC; t++) {
                /* windows of 1-2 tokens have no slot past T; of 5..8, registers are short and
                 * the branch stays */
                float a = 0.0f, q = 0.0f;
                if (TC <= 4 || t < T) {
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        a = __fmaf_rn(S[g0 + rr][e], sm.xk[t][c4 + e], a),
                        q = __fmaf_rn(S[g0 + rr][e], sm.xq[t][c4 + e], q);
                }
                v[(rr * TC + t) * 2] = a, v[(rr * TC + t) * 2 + 1] = q;
            }
#pragma unroll 1
        for (int i = lane; i < h; i += 32) {
            float uu[8];
            ld8s(sU, rbf, i * K128_DIM + row0, uu);
#pragma unroll
            for (int t = 0; t < TC; t++) {
                if (t >= T) continue;
                const float a = sm.wk[t][i], q = sm.wq[t][i];
#pragma unroll
                for (int rr = 0; rr < RJ; rr++) {
                    v[(rr * TC + t) * 2] = __fmaf_rn(uu[g0 + rr], a, v[(rr * TC + t) * 2]);
                    v[(rr * TC + t) * 2 + 1] = __fmaf_rn(uu[g0 + rr], q, v[(rr * TC + t) * 2 + 1]);
                }
            }
        }
        RS<16, 1, 16>::run(v, lane);
        const int rr = (lane >> 2) / TC, t = (lane >> 2) % TC, src = (t & 3) * 8 + g0 + rr;
        const bool live = (lane & 3) == 0 && t < T;
        const float dq = __shfl_down_sync(FULL_MASK, v[0], 2);
        const float v0 = __shfl_sync(FULL_MASK, vreg(0), src);
        const float v1 = TC > 4 ? __shfl_sync(FULL_MASK, vreg(1), src) : 0.0f; /* every lane shuffles */
        const float vr = t < 4 ? v0 : v1;
        float dd = v[0], o = dq;
        const float uw =
            window_token_chain<TC>(l.ring_dtype, h, t, live, vr, dd, o, [&](int s2) { return 4 * (rr * TC + s2); });
        if (live) {
            const int jr = row0 + g0 + rr;
            st_dt(A.io.o, l.io_dtype, ((((int64_t)b * T + t) * HV + hv) << 7) + jr, o);
            st_dt(A.st.ring_u, l.ring_dtype, ((((int64_t)s * HV + hv) * L + wpos + t) << 7) + jr, uw);
        }
    }
}

/* Copies of ring positions p0 .. p0+n-1 into shared entries 0 .. n-1 (GDN G: all n; KDA G: entry
 * n - 1 into sG, or all n into sGall when speculative), cp.async by the CTA's nt threads: ring k
 * at element rk0 (position 0; ring dtype, rsz bytes), u of this part's R rows of head hd, G from
 * ringg (position 0) */
template <bool KDA>
__device__ __forceinline__ void copy_ring_entries(const kargs &A, unsigned char *sK, unsigned char *sU, float *sG,
                                                  float *sGall, const float *ringg, int64_t rk0, int64_t hd, int L,
                                                  int rsz, int R, int part, int tid, int nt, bool spec, int p0, int n)
{
    const unsigned char *gk_ = (const unsigned char *)A.st.ring_k + (rk0 + ((int64_t)p0 << 7)) * rsz;
    const unsigned char *gu_ = (const unsigned char *)A.st.ring_u + ((hd * L + p0) << 7) * rsz;
    ringg += p0 * (KDA ? K128_DIM : 1);
    /* 16-byte chunks: nch of k; uch (a power of two) of this part's rows of each u entry */
    const int nch = n * K128_DIM * rsz / 16, uch = R * rsz / 16, uch_log2 = 31 - __clz(uch);
    for (int i = tid; i < nch; i += nt)
        cp16(sK + 16 * i, gk_ + 16 * i);
    for (int i = tid; i < n * uch; i += nt) {
        const int off = (i >> uch_log2) * K128_DIM * rsz + part * R * rsz + 16 * (i & (uch - 1));
        cp16(sU + off, gu_ + off);
    }
    if (KDA) {
        if (spec) {
            for (int i = tid; i < n * (K128_DIM / 4); i += nt)
                cp16(sGall + 4 * i, ringg + 4 * i);
        } else if (tid < 32) {
            cp16(sG + 4 * tid, ringg + (int64_t)(n - 1) * K128_DIM + 4 * tid);
        }
    } else if (tid < n) {
        cp4(sG + tid, ringg + tid);
    }
}

/* One token: the new entry's key as stored and G (from the token's gates and G_{h-1}), by one
 * warp, at ring position pos: k into ring k at element rk0 + pos K (GDN: by the group's first
 * value head, first = 1), G into ringg (GDN: only with entry = 1; a head folding early stores
 * no entry, but its group's key) */
template <bool KDA>
__device__ __forceinline__ void write_new_entry(const kargs &A, int h, int pos, const float *Gl, const float *sG,
                                                int rbf, int lane, float *ringg, int64_t rk0, bool first, bool entry)
{
    fixed_smem &sm = k128_smem();
    const int c4 = lane * 4; /* the lane's first channel */
    const int gk = KDA ? K128_DIM : 1;
    float ks4[4], G4[4];
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const float kv = sm.kn[0][c4 + e];
        G4[e] = (h > 0 ? (KDA ? Gl[c4 + e] : sG[h - 1]) : 0.0f) + sm.gt[0][c4 + e];
        ks4[e] = round_dt(A.l.ring_dtype, KDA ? kv * expf(-G4[e]) : kv);
    }
    if (KDA || first) st4(A.st.ring_k, rbf, rk0 + (int64_t)pos * K128_DIM + c4, ks4);
    if (!KDA && !entry) return;
    float *rg = ringg + pos * gk;
    if (KDA)
        *((float4 *)(rg + c4)) = make_float4(G4[0], G4[1], G4[2], G4[3]);
    else if (lane == 0)
        rg[0] = G4[0];
}

/* A token slot w past the window (T = 3 on the MMA rows): zero vectors, so that the rows need
 * no branch */
template <bool MMA> __device__ __forceinline__ void zero_window_slot(double *sXd, int w, int lane)
{
    fixed_smem &sm = k128_smem();
    const int c4 = lane * 4; /* the lane's first channel */
    *((float4 *)&sm.xk[w][c4]) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    *((float4 *)&sm.xq[w][c4]) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (MMA)
#pragma unroll
        for (int e = 0; e < 4; e++)
            sXd[2 * w * K128_XDS + c4 + e] = 0.0, sXd[(2 * w + 1) * K128_XDS + c4 + e] = 0.0;
}

/* The step of one CTA. CHK (with MODE_PACKED, for small-batch steps, io.fold_every): packed
 * decode where the row folds this step and its ring is empty (cursor 0, hence ring base 0:
 * packed's instructions, so its time), else it returns false before it has written anything
 * (the caller reports the row). Returns true when the CTA is done.
 * Longer than the phases it calls: the coordinates, the slot checks, the ring copies, the start
 * fold and the window's new entries stay here, because moved into functions of their own they
 * changed the machine code of the KDA verify kernels (more spills; the SASS comparison of the
 * split, scratch/sass_compare.py, is in the commit message). */
template <bool KDA, bool SBF, int MODE, int TC, bool CHK, bool KF>
__device__ __forceinline__ bool decode_k128_cta(const kargs &A)
{
    extern __shared__ __align__(16) unsigned char dsm[];
    fixed_smem &sm = *reinterpret_cast<fixed_smem *>(dsm);
    const rssm_layer &l = A.l;
    const int L = l.ring_len, HV = l.num_v_heads, group = A.group;
    const int rbf = l.ring_dtype == RSSM_DTYPE_BF16, iobf = l.io_dtype == RSSM_DTYPE_BF16;
    const int rsz = rbf ? 2 : 4;
    float *sG = (float *)(dsm + sizeof(fixed_smem));
    unsigned char *sK = dsm + sizeof(fixed_smem) + 128 * sizeof(float);
    unsigned char *sU = sK + (size_t)L * K128_DIM * rsz;
    float *sGall = (float *)(sU + (size_t)L * K128_DIM * rsz); /* KDA speculative: G of every entry */
    /* spec: copy all L entries (u, k, G) as soon as the slot is known, in parallel with the
     * cursor, instead of h entries one round trip later (small grids: latency-bound) */
    const bool spec = MODE != MODE_PACKED && A.spec;
    /* split: the head's 128 rows over A.split CTAs (part `part` owns rows part * R .. +R) */
    const int split = A.split;
    const int nt = blockDim.x, NW = nt >> 5, R = NW * 8;
    const int tid = threadIdx.x, w = tid >> 5, lane = tid & 31;
    const int T = MODE == MODE_VERIFY ? A.io.tokens : 1;
    const int c4 = lane * 4;
    /* split is 1, 2 or 4; group (HV / H) is usually a power of two: shifts, not divisions, on
     * the path to the first loads */
    const int split_log2 = 31 - __clz(split);
    const int part = blockIdx.x & (split - 1), b = blockIdx.y, hv = blockIdx.x >> split_log2;
    const int kh = key_head(hv, group);
    const int row0 = part * R + w * 8;
    /* Windows of 3 or 4 tokens (MMA) run the row phase on the FP64 tensor cores and hold the
     * state as their fragments want it: lane l owns row row0 + l / 4 at channels 16 j + 4 (l % 4)
     * + e (S[j][e]); the other kernels' lane owns rows row0 .. row0 + 7 at channels c4 + e
     * (S[r][e]). srow, sch: row and channel of the lane's S[0][0]; SSTEP: element offset from
     * S[i][0] to S[i + 1][0]. */
    constexpr bool MMA = MODE == MODE_VERIFY && TC == 4;
    const int srow = MMA ? row0 + (lane >> 2) : row0, sch = MMA ? 4 * (lane & 3) : c4;
    constexpr int SSTEP = MMA ? 16 : K128_DIM;
    double *sXd = (double *)((unsigned char *)sGall + (KDA && spec ? (size_t)L * K128_DIM * sizeof(float) : 0));
    /* MMA: v. Held in a register from round 0 through the start fold, it was spilled, and the
     * spill's store waited for the load (a DRAM round trip per CTA): PARK_V loads it in round 0
     * and parks it in shared memory from the first barrier to the rows. GDN with a bf16 state or
     * the K-first layout loads it after the start fold instead, as ptxas and the H200 prefer
     * there (parked: GDN bf16 64 bytes of spills against 8 and 1.5% slower; K-first f32 203.6
     * against 199.0 us at T = 4, B = 128; bench/results/verify-spill-2026-12-02/) */
    constexpr bool PARK_V = MMA && (KDA || (!SBF && !KF));
    uint32_t *sV = (uint32_t *)(sXd + 8 * K128_XDS);

    /* ---- round 0: slot and everything that does not depend on it ---- */
    /* the step's metadata read evict-last in L2 (k128_common.cuh), except by verify windows
     * (there 0.3-0.5% slower at B = 128: bench/results/pipe-start-2026-12-03/) */
    const bool keep_meta = MODE != MODE_VERIFY;
    const uint64_t keep = keep_meta ? l2_keep_policy() : 0;
    auto ld_meta = [&](auto *p) { return keep_meta ? ld_keep(p, keep) : (int)*p; };
    int s = ld_meta(A.io.slot + b);
    const int ws = (MODE == MODE_PACKED && A.io.write_slot) ? ld_meta(A.io.write_slot + b) : 0;
    /* CHK reads its fold flag with the cursor in round 1: tested here, it held up round 0's
     * loads for its own round trip (0.26 us per layer at B = 1) */
    const int forced = !CHK && A.io.fold ? ld_meta(A.io.fold + b) != 0 : 0;
    /* Token preparation. Verify: warp t prepares token t whole. One token (ONE): warp 0
     * normalises k, warp 1 q, warp 2 evaluates the gates, each a short chain before the first
     * barrier; every warp then derives what it needs from them in its own registers. */
    constexpr bool ONE = MODE != MODE_VERIFY;
    const bool tw = !ONE && w < T;
    const bool kw = ONE ? w == 0 : tw, qw = ONE ? w == 1 : tw, gw = ONE ? w == 2 : tw;
    const int tp = ONE ? 0 : w; /* the token this warp stages */
    float ga[4], braw = 0.0f;   /* gate inputs: a or g, b or beta */
#pragma unroll
    for (int e = 0; e < 4; e++)
        ga[e] = 0.0f;
    stage_token_inputs<KDA>(A, b, T, tp, kh, hv, HV, lane, iobf, kw, qw, gw, ga, braw);
    cp_commit();                 /* group 0: token inputs */
    uint32_t vraw[2] = {0u, 0u}; /* v of the row phase (load_v) */
    if (!MMA || PARK_V) load_v<TC>(A, b, T, hv, row0, lane, iobf, vraw);
    auto vreg = [&](int jj) { return __uint_as_float(iobf ? vraw[jj] << 16 : vraw[jj]); };

    /* ---- round 1: cursor, ring base and the warp's 8 rows of S0 ---- */
    bool bad = false;
    if (s < -1 || s >= A.st.num_slots) bad = true, s = -1;
    int d = s;
    if (MODE == MODE_PACKED && s >= 0 && A.io.write_slot) {
        d = ws;
        if (d < -1 || d >= A.st.num_slots) bad = true, d = -1;
        if (d < 0) s = -1;
    }
    /* padding (or a bad row): a zero output, no state, ring or cursor touched */
    auto zero_exit = [&]() { zero_output(A, b, T, R, nt, tid, HV, hv, part); };
    if (s < 0) {
        if (bad && blockIdx.x == 0 && tid == 0) atomicAdd(A.err, 1);
        zero_exit();
        return true;
    }
    if (MODE != MODE_PACKED) K128_TRACE(A, K128_TR_SLOT);
    /* offsets for K = V = 128 (layout.h's, with the head sizes as constants); hd indexes
     * (slot, value head) */
    const int64_t hd = (int64_t)s * HV + hv;
    int c = 0, base = 0;
    if (MODE != MODE_PACKED) {
        c = ld_meta(A.st.cursor + s);
        base = ld_meta(A.st.ring_base + hd);
    }
    int chk_fold = 1;
    /* the warp's rows of S0; recomputed from an opaque copy of the slot where they are written
     * back, so that the compiler does not keep (and spill) the 64-bit offset meanwhile */
    auto rows_off = [&](int slot) { return lane_state_off(((int64_t)slot * HV + hv) << 14, srow, sch, KF); };
    const int64_t ck0 = rows_off(s);
    float S[8][4];
    load_state_rows<SBF, SSTEP, KF>(A.st.checkpoint, ck0, S);
    if (A.pf_ahead && tid == nt - 32) prefetch_ahead<KDA, SBF, MODE>(A, b, R, group, split, split_log2);
    if (CHK) { /* with the rows, which they arrive before */
        c = ld_meta(A.st.cursor + s);
        chk_fold = ld_meta(A.io.fold + b);
    }

    const int gk = KDA ? K128_DIM : 1;
    float *const ringg = MODE == MODE_PACKED ? nullptr : (float *)A.st.ring_g + hd * L * gk;
    const int64_t rk0 = MODE == MODE_PACKED ? 0 : ((KDA ? hd : (int64_t)s * l.num_k_heads + kh) * L) << 7;
    auto copy_ring = [&](int p0, int n) {
        copy_ring_entries<KDA>(A, sK, sU, sG, sGall, ringg, rk0, hd, L, rsz, R, part, tid, nt, spec, p0, n);
    };
    if (spec) copy_ring(0, L); /* needs only the slot */
    /* CHK: packed's step; c is tested below */
    int h = CHK ? 0 : c - base;
    if (MODE != MODE_PACKED && (c < 0 || c > L || base < 0 || h < 0)) { /* a bad cursor or ring base */
        if (blockIdx.x == 0 && tid == 0) atomicAdd(A.err, 1);
        zero_exit();
        return true;
    }

    /* ---- round 2: the live ring entries into shared memory (GDN from position base) ---- */
    if (!spec && MODE != MODE_PACKED && h > 0) copy_ring(KDA ? 0 : base, h);
    cp_commit(); /* group 1: the ring (possibly empty) */
    /* GDN, speculative: every position copied, the live entries from shared entry base on:
     * f32-state verify addresses them by an offset from the fixed shared base, formed where used,
     * the other kernels by shifted pointers. Chosen by ptxas -v: with shifted pointers the f32
     * windows spill more, and in the K-first window kernel a spill store waits for a global load;
     * with the offset, bf16 state and one-token kernels spill more */
    constexpr bool OFFSET = !KDA && !SBF && MODE == MODE_VERIFY;
    const int e0 = OFFSET && spec ? base : 0;
    if (!KDA && spec && !OFFSET) {
        sK += (size_t)base * K128_DIM * rsz, sU += (size_t)base * K128_DIM * rsz;
        sG += base;
    }
    auto lK = [&]() { return sK + (size_t)e0 * K128_DIM * rsz; };
    auto lU = [&]() { return sU + (size_t)e0 * K128_DIM * rsz; };
    auto lG = [&]() { return sG + e0; };
    /* KDA: G_{h-1} per channel (valid when h > 0) */
    const float *Gl = KDA ? (spec ? sGall + (h > 0 ? h - 1 : 0) * K128_DIM : sG) : sG; /* GDN: unused */

    /* token preparation, while S0 and the ring are in flight */
    if (kw || qw || gw) prepare_token<KDA, ONE, !KDA && MODE != MODE_PACKED>(A, tp, lane, iobf, kw, qw, gw, ga, braw);
    cp_wait_all();
    if (PARK_V) sV[tid] = vraw[0];
    if (KDA && tid == 0) sm.base = base; /* read at the end from here, not held (and spilled) */
    __syncthreads();                     /* ring in shared memory, token inputs prepared */
    if (MODE != MODE_PACKED) K128_TRACE(A, K128_TR_RING);
    /* CHK: a row that does not fold, or has ring entries (or a bad cursor). Its cursor and fold
     * flag came with the rows' loads, so testing them here, after the token's preparation, waits
     * for nothing, and from here on the step is packed's code; the ring base is not read (with
     * the cursor at 0 it is 0: 0 <= base <= cursor) */
    if (CHK && (c != 0 || !chk_fold)) return false;
    /* GDN heads split over parts: this CTA has read its ring and ring base (see Races) */
    const bool gdn_parts = !KDA && MODE != MODE_PACKED && split > 1;
    if (gdn_parts) cluster_arrive();

    /* ---- fold decision (shared cursor, fold flag, the head's window check) ---- */
    int uniform = 0, early = 0, c0 = c;
    if (MODE != MODE_PACKED) {
        uniform = rssm_start_fold(c, T, L, MODE == MODE_VERIFY && forced);
        c0 = uniform ? 0 : c;
        /* KDA: every window (a deep one clamps its gates and folds); GDN: with live entries */
        if (MODE == MODE_VERIFY && (KDA || (!uniform && h > 0))) {
            const int tests = window_tests<KDA>(A, KDA ? Gl : lG() + h - 1, uniform ? 0 : h, T, lane);
            early = !uniform && h > 0 && tests != 0;
            if (KDA && (tests & 2)) { /* rare, and alike in every warp */
                if (w == 0) clamp_window_gates(A, T, lane);
                __syncthreads();
            }
        }
    }
    const bool sfold = uniform || early;
    int new_base = -1; /* KDA: the head's ring base after the step's folds (-1: unchanged) */

    /* fold of the h committed entries (shared memory) into S (k128_common.cuh) */
    auto fold_ring = [&](const float(&Gs)[4]) { fold_ring_rows<KDA>(S, Gs, h, lK(), lU(), lG(), rbf, c4, row0); };

    if (MODE != MODE_PACKED && sfold) {
        if (h > 0) {
            if constexpr (MMA) {
                fold_ring_rows_mma<KDA>(S, KDA ? Gl : lG() + h - 1, h, lK(), lU(), lG(), rbf, sch, srow, sXd);
                K128_TRACE(A, K128_TR_FOLD);
            } else {
                float Gs[4];
#pragma unroll
                for (int e = 0; e < 4; e++)
                    Gs[e] = KDA ? Gl[c4 + e] : lG()[h - 1];
                fold_ring(Gs);
            }
            store_checkpoint_rows<SBF, MMA>(
                A.st.checkpoint, [&](int r) { return rows_off(opaque(s)) + r * SSTEP; }, KF, S);
            K128_TRACE(A, K128_TR_FOLDST);
        }
        h = 0;
        new_base = c0;
    }
    /* the ring position of the step's first new entry (cursor value c0): KDA c0 - base = h, GDN c0 */
    const int wpos = KDA ? h : c0;
    if (MMA && !PARK_V) load_v<TC>(A, b, T, hv, row0, lane, iobf, vraw);

    /* ---- cumulative gates and everything derived from them ---- */
    float wa4[4] = {0.0f, 0.0f, 0.0f, 0.0f}, wb4[4] = {0.0f, 0.0f, 0.0f, 0.0f}, G1 = 0.0f, gmin1 = 0.0f;
    if (ONE) {
        gates_one_token<KDA, MODE>(w, lane, h, Gl, lG(), wa4, wb4, G1, gmin1);
    } else if (tw) { /* verify: warp t, token t */
        gates_window_token<KDA, MMA>(A, sXd, w, lane, h, Gl, lG());
    } else if (!ONE && TC <= 4 && w < TC) { /* a token slot past the window (T = 3 on the MMA
                                             * rows): zero vectors, so that the rows need no branch */
        zero_window_slot<MMA>(sXd, w, lane);
    }
    /* a start fold overwrote nothing yet; new entries are written after this barrier (verify:
     * also the tokens' cumulative gates; ONE: each warp has them in registers, and warp 0 stores what the rows read
     * before the barrier after the ring weights). The cluster's CTAs decide alike: KDA's are one
     * head's parts, GDN's pass it on the shared start fold only (uniform over the row), except
     * that GDN heads split over parts always wait here (their ring base is written below). */
    if (gdn_parts) {
        cluster_wait();
        if (!ONE) __syncthreads();
    } else if (MODE != MODE_PACKED && (KDA ? sfold : uniform) && A.cs > 1) {
        cluster_sync_all();
    } else if (!ONE)
        __syncthreads();
    if (!ONE) K128_TRACE(A, K128_TR_GATES);

    int end = 0; /* 1: the shared end fold, 2: the head's early fold (min G past -G_MAX) */
    if (MODE == MODE_PACKED)
        end = 1;
    else if (MODE == MODE_REPLAY) {
        end = (c0 + 1 == L || forced) ? 1 : 0;
        if (!end && (KDA ? gmin1 : G1) < -l.fold_threshold) end = 2;
    }

    /* ---- ring weights w_{t,p}, p < h + t; new entries' k and G (not on an end fold) ---- */
    if (ONE) {
        ring_weights<KDA>(
            sm.wk[0], sm.wq[0], lK(), rbf, lG(), G1, h, w, NW, c4, lane, [&](int e) { return wa4[e]; },
            [&](int e) { return wb4[e]; });
        /* the new entry's k and G; GDN: the group's key also when this head folds early */
        if (MODE != MODE_PACKED && (KDA ? !end : end != 1) && part == 0 && w == NW - 1) {
            write_new_entry<KDA>(A, h, wpos, Gl, lG(), rbf, lane, ringg, rk0, hv == kh * group, !end);
        }
        /* GDN: the head's ring base after a fold (every part of the head has read it: one CTA,
         * or the cluster wait above), by the same warp (there, with its offset formed apart,
         * the end fold keeps the registers it had without it: ptxas -v) */
        if (!KDA && MODE != MODE_PACKED && (sfold || end) && part == 0 && w == NW - 1 && lane == 0)
            A.st.ring_base[(int64_t)opaque(s) * HV + hv] = end ? (end == 2 ? c0 + 1 : 0) : c0;
        __syncthreads();
    } else {
        window_ring_weights<KDA>(lK(), lG(), rbf, T, h, w, NW, lane);
        if (MODE != MODE_PACKED && !end && part == 0 &&
            w >= NW - T) { /* the last warps write the new entries' k and G */
            const int t = NW - 1 - w;
            const bool wk_ = KDA || hv == kh * group;
            if (wk_) st4(A.st.ring_k, rbf, rk0 + (int64_t)(wpos + t) * K128_DIM + c4, &sm.ks[t][c4]);
            float *rg = ringg + (wpos + t) * gk;
            if (KDA)
                *((float4 *)(rg + c4)) = *((const float4 *)&sm.G[t][c4]);
            else if (lane == 0)
                rg[0] = sm.G[t][0];
        }
        __syncthreads();
    }

    /* ---- rows ---- */
    if (MODE != MODE_PACKED) {
        K128_TRACE(A, K128_TR_ROWS);
        K128_TRACE_VALUE(A, K128_TR_END, end | (sfold ? 4 : 0)); /* 4: a start fold */
        K128_TRACE_ROWS(A, w, lane, S[7][3]);
    }
    if (end) {
        rows_end_fold<KDA, SBF, KF, MODE>(A, S, lK(), lU(), lG(), Gl, rbf, h, lane, row0, b, HV, hv, srow, sch, vreg(0),
                                          MODE == MODE_PACKED ? d : s);
        if (MODE == MODE_REPLAY) new_base = end == 2 ? c0 + 1 : 0;
    } else if constexpr (MMA) {
        /* v of the lane's token lane % 4 and row srow, as load_v's lane 8 (lane % 4) + lane / 4 read it */
        const int vl = 8 * (lane & 3) + (lane >> 2);
        const uint32_t vb = PARK_V ? sV[32 * w + vl] : __shfl_sync(FULL_MASK, vraw[0], vl);
        rows_window_mma<TC>(A, S, sXd, lU(), rbf, h, wpos, T, lane, srow, sch, b, s, HV, hv, L, vb, iobf);
    } else if (MODE != MODE_PACKED) {
        rows_window<TC>(A, S, lU(), rbf, h, wpos, T, lane, row0, b, s, HV, hv, L, vraw, iobf);
    }
    if (MODE != MODE_PACKED) K128_TRACE_STORED(A, w, lane);
    /* GDN verify: the head's ring base after a start fold (here rather than before the rows:
     * fewer registers held through them) */
    if (!KDA && !ONE && sfold && part == 0 && tid == 0) A.st.ring_base[(int64_t)s * HV + hv] = c0;
    if (KDA && MODE != MODE_PACKED && new_base >= 0 && new_base != sm.base) {
        if (A.cs > 1) cluster_sync_all(); /* every part of the head has read ring_base */
        if (part == 0 && tid == 0) A.st.ring_base[(int64_t)s * HV + hv] = new_base;
    }
    return true;
}

/* Programmatic dependent launch (A.pdl): the grid may start while the kernel before it on the
 * stream finishes, and until that kernel has finished it reads nothing that kernel may write.
 * Meanwhile one thread reads the row's slot through L2 (an L1 copy could go stale) and prefetches
 * the CTA's rows of the checkpoint into L2, a hint only: if the kernel before rewrites those bytes,
 * the loads after the wait read them from L2 as rewritten. Once the wait is over the next grid may
 * launch (not before: its own prefetches then overlap this grid's work, not an earlier one's). */
template <bool KDA, bool SBF> __device__ __forceinline__ void pdl_prologue(const kargs &A)
{
    if (threadIdx.x == 0) {
        const int split_log2 = 31 - __clz(A.split), b = blockIdx.y;
        const int s = __ldcg(A.io.slot + b);
        if (s >= 0 && s < A.st.num_slots)
            prefetch_head<KDA, SBF, MODE_PACKED>(A.st, A.l, s, blockIdx.x >> split_log2, blockIdx.x & (A.split - 1),
                                                 (int)blockDim.x / 4, A.group);
    }
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

template <bool KDA, bool SBF, int MODE, int TC, bool KF>
__global__ void __launch_bounds__(K128_NT, 2) decode_k128_kernel(const kargs A)
{
    if (MODE != MODE_PACKED) K128_TRACE_ENTRY(A);
    if (A.pdl) pdl_prologue<KDA, SBF>(A);
    decode_k128_cta<KDA, SBF, MODE, TC, false, KF>(A);
}

/* Replay decode of a small-batch step (io.fold_every: every row folds and its ring is empty, as
 * the planner's drain leaves them, drain_k128.cu): packed decode's code and launch shape. A row
 * found otherwise gets a zero output and a device error, and nothing of its state is written. */
template <bool KDA, bool SBF, bool KF>
__global__ void __launch_bounds__(K128_NT, 2) decode_k128_fold_every_kernel(const kargs A)
{
    if (A.pdl) pdl_prologue<KDA, SBF>(A);
    if (decode_k128_cta<KDA, SBF, MODE_PACKED, 1, true, KF>(A)) return;
    const int split_log2 = 31 - __clz(A.split), part = blockIdx.x & (A.split - 1), hv = blockIdx.x >> split_log2;
    if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(A.err, 1);
    zero_output(A, blockIdx.y, 1, blockDim.x / 4, blockDim.x, threadIdx.x, A.l.num_v_heads, hv, part);
}

/* KF: the K-first state layout (its own instantiations, so that the V-first code is what it was) */
template <bool KDA, bool SBF, bool KF> static void *kernel_of(int mode, int tc)
{
    if (mode == MODE_PACKED) return (void *)decode_k128_kernel<KDA, SBF, MODE_PACKED, 1, KF>;
    if (mode == MODE_REPLAY) return (void *)decode_k128_kernel<KDA, SBF, MODE_REPLAY, 1, KF>;
    switch (tc) {
    case 1:
        return (void *)decode_k128_kernel<KDA, SBF, MODE_VERIFY, 1, KF>;
    case 2:
        return (void *)decode_k128_kernel<KDA, SBF, MODE_VERIFY, 2, KF>;
    case 4:
        return (void *)decode_k128_kernel<KDA, SBF, MODE_VERIFY, 4, KF>;
    default:
        return (void *)decode_k128_kernel<KDA, SBF, MODE_VERIFY, 8, KF>;
    }
}

template <bool KF> static void *kernel_for(bool kda, bool sbf, int mode, int tc)
{
    return kda ? (sbf ? kernel_of<true, true, KF>(mode, tc) : kernel_of<true, false, KF>(mode, tc))
               : (sbf ? kernel_of<false, true, KF>(mode, tc) : kernel_of<false, false, KF>(mode, tc));
}

static void *kernel_for(bool kda, bool sbf, bool kf, int mode, int tc)
{
    return kf ? kernel_for<true>(kda, sbf, mode, tc) : kernel_for<false>(kda, sbf, mode, tc);
}

template <bool KF> static void *fold_every_kernel_for(bool kda, bool sbf)
{
    return kda ? (sbf ? (void *)decode_k128_fold_every_kernel<true, true, KF>
                      : (void *)decode_k128_fold_every_kernel<true, false, KF>)
               : (sbf ? (void *)decode_k128_fold_every_kernel<false, true, KF>
                      : (void *)decode_k128_fold_every_kernel<false, false, KF>);
}

static void *fold_every_kernel_for(bool kda, bool sbf, bool kf)
{
    return kf ? fold_every_kernel_for<true>(kda, sbf) : fold_every_kernel_for<false>(kda, sbf);
}

} // namespace rssm_decode_k128

/* ---- dispatch ---------------------------------------------------------------------------- */

/* 1 when a step can run on these kernels (same answer for packed and replay decode, so
 * that L = 1 replay stays bit-identical to packed). */
int rssm_cuda_decode_k128_ok(const kargs *A)
{
    const rssm_layer *l = &A->l;
    if (l->head_k_dim != K128_DIM || l->head_v_dim != K128_DIM || A->group > 8) return 0;
    if (A->mode != MODE_PACKED && A->mode != MODE_REPLAY && A->mode != MODE_VERIFY) return 0;
    const int T = A->io.tokens;
    if (A->mode == MODE_VERIFY ? (T < 1 || T > 8) : T != 1) return 0;
    if (A->io.q_stride % 4 || A->io.k_stride % 4) return 0;
    /* precomputed gates with token strides of their own run on the general kernel: reading the
     * strides here cost the KDA kernels registers (spills in replay decode) */
    const int64_t gk = l->gate == RSSM_GATE_KDA ? K128_DIM : 1;
    if (A->io.g && (A->io.g_stride != l->num_v_heads * gk || A->io.beta_stride != l->num_v_heads)) return 0;
    return 1;
}

/* Once per context: the ring lives in dynamic shared memory (up to ~105 KiB at L = 64 with an
 * f32 ring, windows of 3-4 tokens), above the 48 KiB default: allow what a block may opt in to. */
cudaError_t rssm_cuda_decode_k128_init(int device)
{
    using namespace rssm_decode_k128;
    int most = 0;
    const cudaError_t pe = cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    if (pe != cudaSuccess) return pe;
    for (int kf = 0; kf <= 1; kf++)
        for (int kda = 0; kda <= 1; kda++)
            for (int sbf = 0; sbf <= 1; sbf++) {
                for (int m = 0; m < 6; m++) {
                    const int mode = m == 0 ? MODE_PACKED : m == 1 ? MODE_REPLAY : MODE_VERIFY;
                    const int tc = m < 2 ? 1 : 1 << (m - 2);
                    cudaError_t e = cudaFuncSetAttribute(kernel_for(kda, sbf, kf, mode, tc),
                                                         cudaFuncAttributeMaxDynamicSharedMemorySize, most);
                    if (e != cudaSuccess) return e;
                }
                cudaError_t e = cudaFuncSetAttribute(fold_every_kernel_for(kda, sbf, kf),
                                                     cudaFuncAttributeMaxDynamicSharedMemorySize, most);
                if (e != cudaSuccess) return e;
            }
    return cudaSuccess;
}

cudaError_t rssm_cuda_decode_k128_launch(kargs A, int batch, cudaStream_t stream)
{
    using namespace rssm_decode_k128;
    const bool kda = A.l.gate == RSSM_GATE_KDA, sbf = A.l.state_dtype == RSSM_DTYPE_BF16;
    const bool kf = A.l.state_layout == RSSM_LAYOUT_KV;
    const int T = A.io.tokens;
    const int tc = A.mode != MODE_VERIFY ? 1 : T <= 1 ? 1 : T <= 2 ? 2 : T <= 4 ? 4 : 8;
    /* split: every CTA prepares the tokens (warp t token t), so T <= 16 / split; a cluster
     * (group x split for GDN) holds at most 8 CTAs */
    if (A.split < 1) A.split = 1;
    while (A.split > 1 && ((A.mode == MODE_VERIFY ? T : 1) > K128_NW / A.split || (kda ? 1 : A.group) * A.split > 8))
        A.split /= 2;
    /* a small-batch step (io.fold_every) runs packed decode */
    const bool fold_every = A.mode == MODE_REPLAY && A.io.fold_every;
    /* clusters: the CTAs that share ring data (GDN: the group's value heads; every split part) */
    A.cs = A.mode == MODE_PACKED || fold_every ? 1 : (kda ? 1 : A.group) * A.split;
    A.NS = 1;
    A.defer_k = 0;
#ifdef RSSM_PIPE_TRACE
    static int launches; /* diagnostic builds: the launch's index in the trace (k128_trace.cuh) */
    A.trace_launch = launches++;
#endif
    /* A.spec comes from the caller (small grids); only for rings up to K128_SPEC_LMAX */
    if (A.mode == MODE_PACKED || fold_every || A.l.ring_len > K128_SPEC_LMAX) A.spec = 0;
    const size_t stage = A.mode == MODE_REPLAY && !fold_every && staged_end_fold(kda, sbf, kf)
                             ? fold_stage_bytes(K128_NW / A.split, A.l.ring_len)
                             : 0;
    const size_t smem = smem_of(A.l.ring_len, A.l.ring_dtype == RSSM_DTYPE_BF16, kda && A.spec,
                                A.mode == MODE_VERIFY && tc == 4, stage);
    /* prefetch distance: the caller gives SMs / 2 x half waves; a wave is SMs x the resident
     * CTAs per SM (threads, the 64 registers per thread of __launch_bounds__(512, 2), shared memory) */
    if (A.pf_ahead > 0) {
        int per_sm = 2 * A.split;
        const int by_smem = (int)((size_t)A.smem_per_sm / (smem + 1024));
        if (by_smem < per_sm) per_sm = by_smem;
        A.pf_ahead *= per_sm > 0 ? per_sm : 1;
    }
    const int gx = A.l.num_v_heads * A.split; /* CTAs per row */
    A.pf_db = A.pf_ahead / gx, A.pf_dx = A.pf_ahead % gx;
    const void *kernel = fold_every ? fold_every_kernel_for(kda, sbf, kf) : kernel_for(kda, sbf, kf, A.mode, tc);
    return launch_clustered(kernel, A, (unsigned)gx, (unsigned)batch, K128_NT / A.split, smem, stream);
}

/* diagnostic builds (RSSM_PIPE_TRACE): the per-head kernel's last launches, to path.k128.csv */
void rssm_cuda_k128_trace_write(const char *path) { K128_TRACE_WRITE(path); }
