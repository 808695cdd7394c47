/*
 * step_kernel.cuh — the step kernel of the CUDA back end (packed decode, replay decode,
 * verify, prefill, materialise) and its small helpers.
 *
 * Work decomposition: one CTA of 256 threads = one (row b, value head hv, slice of VS rows of
 * the head's V x K state). A state row is owned by a group of LANES lanes, each holding C
 * channels (16 bytes for the fast decode configs); a thread holds RPT rows (4; 1 on prefill's
 * sliced wide lanes), prefetched into registers at the very start, so one read of S0 serves every
 * product of the step:
 *   S0 (e^G ⊙ k_t) and S0 (e^G ⊙ q_t) for every token t of the step, and the fold
 *   S_n = S0 e^{G_n} + sum_i u_i (k_i e^{G_n - G_i})^T + u_n k_n^T          (GDN)
 *   S_n = (S0 + sum_i u_i k~_i^T) diag(e^{G_n}) + u_n k_n^T                  (KDA)
 * Ring weights (h dot products of length K per token) are computed once per CTA into shared
 * memory; the ring part of every row is then a weighted sum of h stored u's.
 *
 * Races: the CTAs that share ring data (GDN: the group's value heads share ring_k; every
 * slice of a head shares ring_g and ring_base) form one thread-block cluster and pass a
 * cluster barrier after reading the committed entries and before anyone writes new ones (a
 * start fold overwrites positions 0..T-1) or a ring base. (GDN prefill writes no ring data
 * another CTA reads, so its sliced lanes run without a cluster: backend.cu, launch_step; there
 * the ring bases are reset by a second small kernel, gdn_reset_base_kernel, after it.) When a
 * GDN group does not fit one cluster (group * slices > 8), the step kernel writes no ring_k
 * and a second small kernel (gdn_write_k_kernel) writes the new keys after it.
 *
 * Ring positions (replayssm.h, rssm_ring_pos): a head's live entries are cursor values
 * base .. c-1, at positions p0 .. p0+h-1 (p0 = KDA 0, GDN base); they are staged as local
 * entries 0 .. h-1, and the step's new entries follow at local h + t, ring position p0 + h + t
 * (after a start fold h = 0 and p0 = KDA 0, GDN c0: the position of cursor value c0 + t).
 * Replay and verify clamp GDN's log-gates at RSSM_GATE_FLOOR_F32 (KDA keeps the raw gate: see
 * decode_k128.cu's prepare_token; a KDA verify window clamps at its levels: window_levels);
 * packed decode and prefill keep them raw.
 *
 * Packed decode runs the same code with an empty ring and an end fold on every token, so
 * replay at L = 1 (every step an end fold with h = 0) performs the same operations in the
 * same order and matches packed decode bit for bit. FMAs are explicit (__fmaf_rn); the
 * build uses --fmad=false.
 */
#ifndef RSSM_STEP_KERNEL_CUH
#define RSSM_STEP_KERNEL_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

extern "C" {
#include "core/layout.h"
#include "core/params.h"
}

#define RSSM_NT 256 /* threads per CTA */
#define RSSM_NW 8   /* warps per CTA */
#define RSSM_RPT 4  /* state rows per thread */

enum { MODE_PACKED = 0, MODE_REPLAY = 1, MODE_VERIFY = 2, MODE_PREFILL = 3, MODE_MAT = 4 };

/* Everything a launch needs, passed by value. */
typedef struct kargs {
    rssm_layer l; /* resolved */
    int mode;
    int group, NS, cs;                  /* HV/H, slices per head, cluster size */
    int defer_k;                        /* GDN: ring_k written by gdn_write_k_kernel */
    int defer_base;                     /* GDN prefill without a cluster: ring_base reset by gdn_reset_base_kernel */
    rssm_state st;                      /* the state read (and written, except by materialise) */
    rssm_state dst;                     /* materialise destination (== st otherwise) */
    rssm_step_io io;                    /* strides resolved; tokens = 0 for materialise */
    const int32_t *src_slot, *dst_slot; /* materialise */
    int *err;                           /* device error counter */
    int spec;                           /* decode_k128.cu only: read the whole ring before the cursor is known */
    int split;                          /* decode_k128.cu only: CTAs per head (rows split 128 / split) */
    int pf_ahead;                       /* decode_k128.cu only: L2 prefetch for the CTA this many ahead (0: off) */
    int pf_db, pf_dx;                   /* decode_k128.cu only: pf_ahead as rows and CTAs of a row */
    int smem_per_sm;                    /* decode_k128.cu only: the device's shared memory per SM (bytes) */
    int pdl;                            /* decode_k128.cu only: programmatic dependent launch, 1-3 where it triggers */
    int producers;                      /* replay_pipeline.cu only: producer warps that take items */
#ifdef RSSM_PIPE_TRACE
    int trace_launch; /* diagnostic builds, decode_k128.cu: the launch's index in its trace (k128_trace.cuh) */
#endif
} kargs;

/* Launches `kernel(A)` on a grid of (gx, gy) CTAs of `threads` threads with `smem` bytes of
 * dynamic shared memory, grouped in thread-block clusters of A.cs CTAs along x when A.cs > 1
 * (the CTAs that share ring data; see each kernel's race notes), as a programmatic dependent
 * launch when A.pdl (the kernel then waits for the grid before it: griddepcontrol.wait). */
static inline cudaError_t launch_clustered(const void *kernel, kargs A, unsigned gx, unsigned gy, unsigned threads,
                                           size_t smem, cudaStream_t stream)
{
    cudaLaunchConfig_t lc;
    memset(&lc, 0, sizeof lc);
    lc.gridDim = dim3(gx, gy, 1);
    lc.blockDim = dim3(threads, 1, 1);
    lc.dynamicSmemBytes = smem;
    lc.stream = stream;
    cudaLaunchAttribute attr[2];
    memset(attr, 0, sizeof attr);
    unsigned n = 0;
    if (A.cs > 1) {
        attr[n].id = cudaLaunchAttributeClusterDimension;
        attr[n].val.clusterDim.x = (unsigned)A.cs;
        attr[n].val.clusterDim.y = 1;
        attr[n].val.clusterDim.z = 1;
        n++;
    }
    if (A.pdl) {
        attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[n].val.programmaticStreamSerializationAllowed = 1;
        n++;
    }
    lc.attrs = n ? attr : NULL;
    lc.numAttrs = n;
    void *args[] = {&A};
    return cudaLaunchKernelExC(&lc, kernel, args);
}

/* ---- element access ----------------------------------------------------------------- */

__device__ __forceinline__ float ld_dt(const void *p, int dt, int64_t i)
{
    return dt == RSSM_DTYPE_F32 ? __ldg((const float *)p + i) : rssm_bf16_to_f32(__ldg((const unsigned short *)p + i));
}
/* for memory this grid itself writes (no read-only cache path) */
__device__ __forceinline__ float ld_dt_rw(const void *p, int dt, int64_t i)
{
    return dt == RSSM_DTYPE_F32 ? ((const float *)p)[i] : rssm_bf16_to_f32(((const uint16_t *)p)[i]);
}
__device__ __forceinline__ void st_dt(void *p, int dt, int64_t i, float x)
{
    if (dt == RSSM_DTYPE_F32)
        ((float *)p)[i] = x;
    else
        ((uint16_t *)p)[i] = rssm_f32_to_bf16(x);
}
__device__ __forceinline__ float round_dt(int dt, float x)
{
    return dt == RSSM_DTYPE_F32 ? x : rssm_bf16_to_f32(rssm_f32_to_bf16(x));
}

/* ---- thread layout of the state rows ------------------------------------------------------ */

/* C channels per lane, LANES lanes per row; STRIDED: lane li holds c = li + LANES*e (generic
 * head dims, scalar loads), else blocks of G channels (16 bytes of state: G = 4 f32 or 8 bf16),
 * lane li holding block li of every run of LANES blocks: c = (e/G)*G*LANES + li*G + e%G (one
 * 16-byte access per block; the lanes of a row read consecutive 16-byte blocks; C = G gives
 * c = li*C + e). BF16: state dtype. */
template <int C_, int LANES_, bool STRIDED_, bool BF16_, int RPT_ = RSSM_RPT> struct cfg {
    enum {
        C = C_,
        LANES = LANES_,
        RG = 32 / LANES_,
        RPT = RPT_,
        VS = RSSM_NW * (32 / LANES_) * RPT_,
        G = BF16_ ? 8 : 4
    };
    static constexpr bool STRIDED = STRIDED_, BF16 = BF16_;
    static_assert(STRIDED_ || C_ % (BF16_ ? 8 : 4) == 0, "whole 16-byte blocks per lane");
    static_assert(C_ % 4 == 0, "prefill_chunks walks a lane's channels four at a time");
    static_assert(LANES_ >= RPT_, "prefill_chunks: lane r of a row group stores row r's output");
};

template <class CF> __device__ __forceinline__ int chan(int li, int e)
{
    return CF::STRIDED ? li + CF::LANES * e : (e / CF::G) * CF::G * CF::LANES + li * CF::G + e % CF::G;
}

/* Loads channels of row `row` (a pointer to K elements) into x[C] (zeros outside K). */
template <class CF> __device__ __forceinline__ void load_row(const void *row, int li, int K, float *x)
{
    if (!CF::STRIDED && !CF::BF16) {
#pragma unroll
        for (int bl = 0; bl < CF::C / 4; bl++) {
            const float4 v = *((const float4 *)row + bl * CF::LANES + li);
            x[4 * bl] = v.x, x[4 * bl + 1] = v.y, x[4 * bl + 2] = v.z, x[4 * bl + 3] = v.w;
        }
    } else if (!CF::STRIDED && CF::BF16) {
#pragma unroll
        for (int bl = 0; bl < CF::C / 8; bl++) {
            const uint4 v = *((const uint4 *)row + bl * CF::LANES + li);
            const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int e = 0; e < 4; e++) {
                x[8 * bl + 2 * e] = __uint_as_float(w[e] << 16);
                x[8 * bl + 2 * e + 1] = __uint_as_float(w[e] & 0xffff0000u);
            }
        }
    } else {
#pragma unroll
        for (int e = 0; e < CF::C; e++) {
            const int c = chan<CF>(li, e);
            x[e] = c < K ? (CF::BF16 ? rssm_bf16_to_f32(((const uint16_t *)row)[c]) : ((const float *)row)[c]) : 0.0f;
        }
    }
}

template <class CF> __device__ __forceinline__ void store_row(void *row, int li, int K, const float *x)
{
    if (!CF::STRIDED && !CF::BF16) {
#pragma unroll
        for (int bl = 0; bl < CF::C / 4; bl++)
            *((float4 *)row + bl * CF::LANES + li) =
                make_float4(x[4 * bl], x[4 * bl + 1], x[4 * bl + 2], x[4 * bl + 3]);
    } else if (!CF::STRIDED && CF::BF16) {
#pragma unroll
        for (int bl = 0; bl < CF::C / 8; bl++) {
            uint32_t w[4];
#pragma unroll
            for (int e = 0; e < 4; e++)
                w[e] = (uint32_t)rssm_f32_to_bf16(x[8 * bl + 2 * e]) |
                       ((uint32_t)rssm_f32_to_bf16(x[8 * bl + 2 * e + 1]) << 16);
            *((uint4 *)row + bl * CF::LANES + li) = make_uint4(w[0], w[1], w[2], w[3]);
        }
    } else {
#pragma unroll
        for (int e = 0; e < CF::C; e++) {
            const int c = chan<CF>(li, e);
            if (c < K) {
                if (CF::BF16)
                    ((uint16_t *)row)[c] = rssm_f32_to_bf16(x[e]);
                else
                    ((float *)row)[c] = x[e];
            }
        }
    }
}

/* Row j of a head's state at element offset c0 of the checkpoint, in the layer's layout: V-first
 * the row's K contiguous elements (load_row / store_row); K-first its channels lie V apart, one
 * element each (a warp's rows at one channel are neighbours, so sectors are still read whole). */
template <class CF>
__device__ __forceinline__ void load_state_row(const void *ckpt, const rssm_layer &l, int64_t c0, int j, int li,
                                               float *x)
{
    const int K = l.head_k_dim;
    if (l.state_layout != RSSM_LAYOUT_KV) {
        load_row<CF>((const char *)ckpt + (c0 + (int64_t)j * K) * (CF::BF16 ? 2 : 4), li, K, x);
        return;
    }
#pragma unroll
    for (int e = 0; e < CF::C; e++) {
        const int c = chan<CF>(li, e);
        const int64_t i = c0 + (int64_t)c * l.head_v_dim + j;
        x[e] = c >= K ? 0.0f : CF::BF16 ? rssm_bf16_to_f32(((const uint16_t *)ckpt)[i]) : ((const float *)ckpt)[i];
    }
}

template <class CF>
__device__ __forceinline__ void store_state_row(void *ckpt, const rssm_layer &l, int64_t c0, int j, int li,
                                                const float *x)
{
    const int K = l.head_k_dim;
    if (l.state_layout != RSSM_LAYOUT_KV) {
        store_row<CF>((char *)ckpt + (c0 + (int64_t)j * K) * (CF::BF16 ? 2 : 4), li, K, x);
        return;
    }
#pragma unroll
    for (int e = 0; e < CF::C; e++) {
        const int c = chan<CF>(li, e);
        const int64_t i = c0 + (int64_t)c * l.head_v_dim + j;
        if (c >= K) continue;
        if (CF::BF16)
            ((uint16_t *)ckpt)[i] = rssm_f32_to_bf16(x[e]);
        else
            ((float *)ckpt)[i] = x[e];
    }
}

/* Sum over the LANES lanes of a row group; every lane gets the same bits (xor butterfly,
 * each addition commutative). */
template <int LANES> __device__ __forceinline__ float group_sum(float v)
{
#pragma unroll
    for (int m = LANES / 2; m >= 1; m >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, m);
    return v;
}

__device__ __forceinline__ float warp_sum(float v) { return group_sum<32>(v); }
__device__ __forceinline__ float warp_min(float v)
{
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1)
        v = fminf(v, __shfl_xor_sync(0xffffffffu, v, m));
    return v;
}

/* Deterministic block reduction of N <= 16 values per thread into out[0..N) (shared).
 * min_mask bit i: value i is reduced with min instead of sum. Contains two __syncthreads. */
template <int N>
__device__ __forceinline__ void block_reduce(const float (&v)[N], unsigned min_mask, float *red, float *out)
{
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
    for (int i = 0; i < N; i++) {
        const float r = (min_mask >> i) & 1 ? warp_min(v[i]) : warp_sum(v[i]);
        if (lane == 0) red[w * 16 + i] = r;
    }
    __syncthreads();
    if (threadIdx.x < N) {
        const int i = threadIdx.x;
        float r = red[i];
        for (int ww = 1; ww < RSSM_NW; ww++)
            r = (min_mask >> i) & 1 ? fminf(r, red[ww * 16 + i]) : r + red[ww * 16 + i];
        out[i] = r;
    }
    __syncthreads();
}

/* ---- per-token inputs -------------------------------------------------------------------- */

__device__ __forceinline__ float gate_of(const kargs &A, int64_t bt, int hv, int gk, int c)
{
    const rssm_step_io &io = A.io;
    if (io.g) return io.g[rssm_g_off(&io, bt, hv, gk) + c];
    const float a = ld_dt(io.a, A.l.io_dtype, bt * io.a_stride + (int64_t)hv * gk + c);
    return rssm_gate_f32(a, io.A_log[hv], io.dt_bias[hv * gk + c], A.l.has_lower_bound, A.l.lower_bound);
}
/* The log-gate as replay and verify take it: GDN's clamped at RSSM_GATE_FLOOR_F32 */
template <bool KDA> __device__ __forceinline__ float gate_replay(const kargs &A, int64_t bt, int hv, int gk, int c)
{
    const float g = gate_of(A, bt, hv, gk, c);
    return KDA ? g : rssm_gate_floor_f32(g);
}

__device__ __forceinline__ float beta_of(const kargs &A, int64_t bt, int hv)
{
    const rssm_step_io &io = A.io;
    if (io.g) return io.beta[rssm_beta_off(&io, bt, hv)];
    return rssm_sigmoid_f32(ld_dt(io.b, A.l.io_dtype, bt * io.b_stride + hv));
}

/* ---- shared-memory layout (floats), the same formula on host and device ----------------- */

typedef struct smem_layout {
    int ek, eG, ringu, xk, xq, kn, Gt, wk, wq, dec, rk, rq, vv, Gcur, lvl, beta, kq, nrm, misc, red, total;
} smem_layout;

__host__ __device__ __forceinline__ smem_layout make_smem_layout(int L, int K, int VS, int TC, int gk)
{
    smem_layout s;
    int o = 0;
    s.ek = o, o += L * K;     /* entry keys as stored, f32 [L][K] (KDA pre-decayed) */
    s.eG = o, o += L;         /* GDN entry G [L] */
    s.ringu = o, o += L * VS; /* entry u of this slice's rows, as stored [L][VS] */
    o = (o + 3) & ~3;         /* the per-token vectors start 16-byte aligned (load_chans) */
    s.xk = o, o += TC * K;    /* e^{G_t} k_t */
    s.xq = o, o += TC * K;    /* e^{G_t} q_t */
    s.kn = o, o += TC * K;    /* normalised k_t; during the norm pass: normalised q_t */
    s.Gt = o, o += TC * gk;   /* G_t */
    s.wk = o, o += TC * L;    /* ring weights for k_t, q_t per entry position */
    s.wq = o, o += TC * L;
    s.dec = o, o += TC * L; /* GDN e^{G_t - G_p} */
    s.rk = o, o += TC * VS; /* sum_p u_p w_p for entries before the chunk */
    s.rq = o, o += TC * VS;
    s.vv = o, o += TC * VS; /* v_t of this slice */
    s.Gcur = o, o += gk;    /* G after the entries so far */
    s.lvl = o, o += gk;     /* KDA verify: the window's clamp levels */
    s.beta = o, o += TC;
    s.kq = o, o += TC;
    s.nrm = o, o += 2 * TC + 2; /* 1/norm of k_t, q_t; min G; window min */
    o = (o + 3) & ~3;
    s.misc = o, o += TC * K; /* normalised, scaled q_t */
    s.red = o, o += RSSM_NW * 16;
    s.total = o;
    return s;
}

/* ---- the cluster barrier (sm_90) ---------------------------------------------------------- */

__device__ __forceinline__ void cluster_sync_all()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
/* cluster_sync_all in two halves: what a thread did before cluster_arrive happens before what
 * any thread of the cluster does after its cluster_wait; every thread calls both, in turn */
__device__ __forceinline__ void cluster_arrive()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory"); }

/* x[i] = v[chan(li, e + i)], i < 4 (0 outside K), from shared memory; e a multiple of 4. One
 * 16-byte access where a lane's channels come in 16-byte blocks (then K = C * LANES, a
 * multiple of 4, and v is 16-byte aligned: the layout aligns the per-token vectors); the lanes
 * of a row then read consecutive blocks, free of bank conflicts. */
template <class CF> __device__ __forceinline__ void load_chans4(const float *v, int li, int K, int e, float *x)
{
    if (!CF::STRIDED) {
        const float4 f = *reinterpret_cast<const float4 *>(v + chan<CF>(li, e));
        x[0] = f.x, x[1] = f.y, x[2] = f.z, x[3] = f.w;
    } else {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int cc = chan<CF>(li, e + i);
            x[i] = cc < K ? v[cc] : 0.0f;
        }
    }
}

/* ---- prefill's token loop ------------------------------------------------------------------ */

#define RSSM_PF_TC 16 /* prefill: tokens per chunk of prefill_chunks (the step kernel's TC) */

/* Prefill's tokens once phase 2 has folded the ring into the registers (h = 0, G = 0). Per
 * chunk of TC tokens: (1) every thread loads a share of the chunk's raw k, q, v, gates and
 * beta into shared memory (all loads in flight at once); (2) one warp per token normalises
 * k_t and q_t and forms the gated key; (3) each thread's rows walk the chunk's tokens with no
 * block barrier in between, its RPT rows side by side (their sums interleave):
 *   d = S (e^{g_t} k_t),  u = beta_t (v_t - d),  S = S e^{g_t} + u k_t^T  (KDA: S diag(e^{g_t})),
 *   o_t = S q_t
 * with k_t, q_t normalised (q_t scaled). These are the one-token loop's operations in its
 * order: the norms are summed in block_reduce's tree (a warp sum per 32 channels, then the
 * warps' sums in order), G_t = 0 + g_t, d + 0 for the empty ring's part, so the outputs and
 * the final state are the same bits as with TC = 1 on the same configuration (the wide lanes,
 * whole or sliced, prefill only, have no TC = 1 instantiation: their sums run in another order,
 * the same for both, as a row's sums do not depend on how many rows a thread or CTA holds).
 * Shared memory (the step layout at TC): kn, qn raw then normalised k_t, q_t [TC][K]; xk
 * e^{G_t} k_t; eg G_t then e^{G_t}, [TC][K] (KDA, in the layout's xq) or [TC] (GDN, in Gt);
 * vv v_t of the slice's rows [TC][VS]; sbeta [TC]. */
template <class CF, bool KDA, int TC>
__device__ __forceinline__ void prefill_chunks(const kargs &A, float (&sreg)[CF::RPT][CF::C], int b, int T, int hv,
                                               int j0, float *kn, float *qn, float *xk, float *eg, float *vv,
                                               float *sbeta)
{
    constexpr int C = CF::C, LANES = CF::LANES, RG = CF::RG, VS = CF::VS, RPT = CF::RPT;
    constexpr int NCH = (C * LANES + 31) / 32; /* blocks of 32 channels (block_reduce's warps) */
    const rssm_layer &l = A.l;
    const int K = l.head_k_dim, V = l.head_v_dim, gk = KDA ? K : 1, iodt = l.io_dtype;
    const int tid = threadIdx.x, w = tid >> 5, lane = tid & 31, rg = lane / LANES, li = lane % LANES;
    const int kh = hv / A.group;
    for (int cs = 0; cs < T; cs += TC) {
        const int nt = T - cs < TC ? T - cs : TC;
        const int64_t bt0 = rssm_bt(&A.io, b, cs);
        /* (1) raw inputs of the chunk */
        for (int i = tid; i < nt * K; i += RSSM_NT) {
            const int64_t bt = bt0 + i / K;
            const int cc = i % K;
            kn[i] = ld_dt(A.io.k, iodt, bt * A.io.k_stride + (int64_t)kh * K + cc);
            qn[i] = ld_dt(A.io.q, iodt, bt * A.io.q_stride + (int64_t)kh * K + cc);
            if (KDA) eg[i] = 0.0f + gate_of(A, bt, hv, gk, cc);
        }
        for (int i = tid; i < nt * VS; i += RSSM_NT) {
            const int j = j0 + i % VS;
            vv[i] = j < V ? ld_dt(A.io.v, iodt, (bt0 + i / VS) * A.io.v_stride + (int64_t)hv * V + j) : 0.0f;
        }
        if (tid < nt) sbeta[tid] = beta_of(A, bt0 + tid, hv);
        if (!KDA && tid >= 32 && tid < 32 + nt) eg[tid - 32] = 0.0f + gate_of(A, bt0 + tid - 32, hv, gk, 0);
        __syncthreads();
        /* (2) one warp per token: norms, normalised k and q, e^{G} and the gated key */
        for (int t = w; t < nt; t += RSSM_NW) {
            float kr[NCH], qr[NCH], nk = 0.0f, nq = 0.0f;
#pragma unroll
            for (int i = 0; i < NCH; i++) {
                const int cc = lane + 32 * i;
                kr[i] = cc < K ? kn[t * K + cc] : 0.0f;
                qr[i] = cc < K ? qn[t * K + cc] : 0.0f;
                /* (block_reduce also adds the idle warps' +0: no change to a sum of squares) */
                if (l.qk_l2norm && 32 * i < K) {
                    const float sk2 = warp_sum(kr[i] * kr[i]), sq2 = warp_sum(qr[i] * qr[i]);
                    nk = i ? nk + sk2 : sk2, nq = i ? nq + sq2 : sq2;
                }
            }
            const float sk = l.qk_l2norm ? 1.0f / sqrtf(nk + (float)RSSM_L2NORM_EPS) : 1.0f;
            const float sq = l.qk_l2norm ? 1.0f / sqrtf(nq + (float)RSSM_L2NORM_EPS) : 1.0f;
            const float egg = KDA ? 0.0f : expf(eg[t]);
#pragma unroll
            for (int i = 0; i < NCH; i++) {
                const int cc = lane + 32 * i;
                if (cc >= K) break;
                const float kv = kr[i] * sk, qv = qr[i] * sq * l.scale;
                float e = egg;
                if (KDA) e = expf(eg[t * K + cc]), eg[t * K + cc] = e;
                kn[t * K + cc] = kv;
                qn[t * K + cc] = qv;
                xk[t * K + cc] = e * kv;
            }
            __syncwarp();
            if (!KDA && lane == 0) eg[t] = egg;
        }
        __syncthreads();
        /* (3) the rows, token after token; each 16-byte block of the token's vectors at this
         * lane's channels is read once for all its rows (shared memory, not global stores, is
         * what bounds this loop), one block at a time so that wide lanes (C = 16) need no more
         * registers than narrow ones; each row's sums still run over e in order */
        for (int t = 0; t < nt; t++) {
            const float beta = sbeta[t], eg0 = KDA ? 0.0f : eg[t];
            float d[RPT], o[RPT];
#pragma unroll
            for (int r = 0; r < RPT; r++)
                d[r] = 0.0f, o[r] = 0.0f;
#pragma unroll
            for (int e = 0; e < C; e += 4) {
                float xkv[4];
                load_chans4<CF>(xk + t * K, li, K, e, xkv);
#pragma unroll
                for (int r = 0; r < RPT; r++)
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        d[r] = __fmaf_rn(sreg[r][e + i], xkv[i], d[r]);
            }
            float u[RPT];
#pragma unroll
            for (int r = 0; r < RPT; r++)
                u[r] = beta * (vv[t * VS + (w * RG + rg) * RPT + r] - (group_sum<LANES>(d[r]) + 0.0f));
#pragma unroll
            for (int e = 0; e < C; e += 4) {
                float knv[4], qnv[4], egv[4];
                load_chans4<CF>(kn + t * K, li, K, e, knv);
                load_chans4<CF>(qn + t * K, li, K, e, qnv);
                if (KDA) /* outside K the one-token loop multiplies by e^{G} of channel 0 */
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        const int cc = chan<CF>(li, e + i);
                        egv[i] = eg[t * K + (cc < K ? cc : 0)];
                    }
#pragma unroll
                for (int r = 0; r < RPT; r++)
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        float acc = KDA ? sreg[r][e + i] * egv[i] : sreg[r][e + i] * eg0;
                        acc = __fmaf_rn(u[r], knv[i], acc);
                        sreg[r][e + i] = acc;
                        o[r] = __fmaf_rn(acc, qnv[i], o[r]);
                    }
            }
            /* every lane of the group holds every row's o_t: lane r < RPT stores row r's (one
             * conversion and store per lane, not RPT in a row on lane 0) */
            float mine = 0.0f;
#pragma unroll
            for (int r = 0; r < RPT; r++) {
                o[r] = group_sum<LANES>(o[r]);
                mine = li == r ? o[r] : mine;
            }
            const int j = j0 + (w * RG + rg) * RPT + li;
            if (li < RPT && j < V) st_dt(A.io.o, iodt, rssm_o_off(&l, bt0 + t, hv) + j, mine);
        }
        __syncthreads();
    }
}

/* ---- the step kernel, phase by phase ------------------------------------------------------------ */

/* Where a CTA of the step kernel works: formed once at its entry, read by every phase. */
struct step_cta {
    int K, V, L, HV, gk;      /* head dims, ring length, value heads, gate width (KDA: K, GDN: 1) */
    int rdt, iodt;            /* ring and io dtypes */
    int tid, w, lane, rg, li; /* rg: the row group within the warp, li: lane within the row group */
    int b, hv, slice, kh, j0; /* row, value head, slice of VS rows starting at row j0, key head */
    int mode;
};

/* The CTA's shared memory (make_smem_layout; floats) */
struct step_smem {
    float *ek, *eG, *ringu;    /* committed and new entries: keys [L][K], GDN G [L], u [L][VS] */
    float *xk, *xq, *kn, *qn;  /* per token: e^G k, e^G q, normalised k, normalised scaled q */
    float *Gt, *wk, *wq, *dec; /* G_t; ring weights and GDN decays per (token, position) */
    float *rk, *rq, *vv;       /* ring parts of the rows per token, v of the slice's rows */
    float *Gcur, *lvl, *sbeta, *skq, *nrm, *red;
};

/* The row's slots (s read, d written; materialise: src_slot, dst_slot), its tokens T (ragged
 * prefill: cu_seqlens) and the head's cursor c, ring base and h = c - base committed entries.
 * Out-of-range values make the row padding (s = -1) and set *bad. */
template <bool KDA>
__device__ __forceinline__ void resolve_row(const kargs &A, const step_cta &C, int &s, int &d, int &T, int &c,
                                            int &base, int &h, bool &bad)
{
    const int b = C.b, mode = C.mode;
    if (mode == MODE_MAT) {
        s = A.src_slot[b], d = A.dst_slot[b];
        if (s < -1 || s >= A.st.num_slots) bad = true, s = -1;
        if (d < -1 || d >= A.dst.num_slots) bad = true, d = -1;
        if (d < 0) s = -1;
    } else {
        s = A.io.slot[b];
        if (s < -1 || s >= A.st.num_slots) bad = true, s = -1;
        d = s;
        if (s >= 0 && mode == MODE_PACKED && A.io.write_slot) {
            d = A.io.write_slot[b];
            if (d < -1 || d >= A.st.num_slots) bad = true, d = -1;
            if (d < 0) s = -1;
        }
    }
    /* ragged prefill: the row's own tokens [cu[b], cu[b+1]) inside [0, cu[batch]], with
     * cu[0] = 0 and cu[batch] <= batch * tokens (the inputs hold cu[batch] tokens); a bad row
     * is counted and skipped, writing no outputs */
    if (mode == MODE_PREFILL && A.io.cu_seqlens) {
        const int32_t *cu = A.io.cu_seqlens;
        const int64_t c0 = cu[b], c1 = cu[b + 1], total = cu[A.io.batch], n = c1 - c0;
        T = (int)n;
        if (cu[0] != 0 || c0 < 0 || n < (s >= 0 ? 1 : 0) || n > A.io.tokens || c1 > total ||
            total > (int64_t)A.io.batch * A.io.tokens)
            bad = true, s = -1, T = 0;
    }
    /* cursor and ring base (0 <= base <= c <= L), else the row is counted and padded */
    if (s >= 0 && mode != MODE_PACKED) {
        c = A.st.cursor[s];
        base = A.st.ring_base[(int64_t)s * C.HV + C.hv];
        h = c - base;
        if (c < 0 || c > C.L || base < 0 || h < 0) bad = true, s = -1;
        /* a small-batch step (io.fold_every): every row folds and has an empty ring */
        if (s >= 0 && A.io.fold_every && (c != 0 || !A.io.fold[b])) bad = true, s = -1;
    }
}

/* Phase 1: the h live entries (ring positions p0 .. p0+h-1) into shared memory as local entries
 * 0 .. h-1 (keys, this slice's u, GDN G; Gcur = G_{h-1}, or 0 on an empty ring) */
template <class CF, bool KDA>
__device__ __forceinline__ void stage_committed(const kargs &A, const step_cta &C, const step_smem &M, int s, int p0,
                                                int h)
{
    constexpr int VS = CF::VS;
    const rssm_layer &l = A.l;
    const int tid = C.tid, K = C.K, V = C.V, gk = C.gk, hv = C.hv, rdt = C.rdt;
    if (C.mode != MODE_PACKED && h > 0) {
        const int64_t rk0 = rssm_ring_k_off(&l, s, hv, A.group, p0);
        for (int i = tid; i < h * K; i += RSSM_NT)
            M.ek[i] = ld_dt_rw(A.st.ring_k, rdt, rk0 + i);
        const int64_t ru0 = rssm_ring_u_off(&l, s, hv, p0);
        for (int i = tid; i < h * VS; i += RSSM_NT) {
            const int p = i / VS, j = C.j0 + i % VS;
            M.ringu[i] = j < V ? ld_dt_rw(A.st.ring_u, rdt, ru0 + (int64_t)p * V + j) : 0.0f;
        }
        const float *rg0 = (const float *)A.st.ring_g + rssm_ring_g_off(&l, s, hv, p0, gk);
        if (!KDA)
            for (int p = tid; p < h; p += RSSM_NT)
                M.eG[p] = rg0[p];
        for (int i = tid; i < gk; i += RSSM_NT)
            M.Gcur[i] = rg0[(h - 1) * gk + i];
    } else {
        for (int i = tid; i < gk; i += RSSM_NT)
            M.Gcur[i] = 0.0f;
    }
}

/* KDA verify: each channel's clamp level for the window's log-gates (params.h,
 * RSSM_KDA_WINDOW_LEVEL; -inf: none) into M.lvl, one thread per channel (read after a barrier) */
template <bool KDA>
__device__ __forceinline__ void window_levels(const kargs &A, const step_cta &C, const step_smem &M, int T)
{
    const int tid = C.tid;
    if (tid >= C.K) return;
    float lvl; /* the gates read where they are, each pass (no per-thread array) */
    RSSM_KDA_WINDOW_LEVEL(gate_replay<KDA>(A, (int64_t)C.b * T + t, C.hv, C.gk, tid), T, rssm_kda_window_decay(&A.l),
                          lvl);
    M.lvl[tid] = lvl;
}

/* Verify: 1 when min_k (G_c + the window's sum of g) < -G_MAX (the head's early start fold), or
 * (KDA) when some channel clamps (a deep window starts from the head's checkpoint); G_c is the G
 * of the last live entry, ring position p0 + h - 1 (GDN: one channel) */
template <bool KDA, int TC>
__device__ __forceinline__ int window_early(const kargs &A, const step_cta &C, const step_smem &M, int s, int p0, int h,
                                            int T)
{
    const rssm_layer &l = A.l;
    const int tid = C.tid, K = C.K, gk = C.gk, hv = C.hv;
    float m = 3.0e38f;
    if (tid < (KDA ? K : 1)) {
        float W = ld_dt_rw(A.st.ring_g, RSSM_DTYPE_F32, rssm_ring_g_off(&l, s, hv, p0 + h - 1, gk) + tid);
        for (int t = 0; t < T; t++)
            W += gate_replay<KDA>(A, (int64_t)C.b * T + t, hv, gk, tid);
        m = KDA && M.lvl[tid] > -INFINITY ? -INFINITY : W;
    }
    float mv[1] = {m};
    block_reduce<1>(mv, 1u, M.red, M.nrm + 2 * TC + 1);
    return M.nrm[2 * TC + 1] < -l.fold_threshold;
}

/* Phase 2: the h committed entries folded into the thread's rows (start fold, materialise,
 * prefill): GDN S e^{G} + sum_p u_p (k_p e^{G - G_p}); KDA (S + sum_p u_p k~_p) e^{G} per channel */
template <class CF, bool KDA>
__device__ __forceinline__ void fold_committed(const step_cta &C, const step_smem &M, float (&sreg)[CF::RPT][CF::C],
                                               int h)
{
    constexpr int C_ = CF::C, RG = CF::RG, VS = CF::VS, RPT = CF::RPT;
    const int tid = C.tid, K = C.K, w = C.w, rg = C.rg, li = C.li;
    if (!KDA)
        for (int p = tid; p < h; p += RSSM_NT)
            M.dec[p] = expf(M.Gcur[0] - M.eG[p]);
    __syncthreads();
    const float eg0 = KDA ? 0.0f : expf(M.Gcur[0]);
#pragma unroll
    for (int r = 0; r < RPT; r++) {
        const int jl = (w * RG + rg) * RPT + r;
#pragma unroll
        for (int e = 0; e < C_; e++) {
            const int cc = chan<CF>(li, e);
            const int c1 = cc < K ? cc : 0;
            float acc = KDA ? sreg[r][e] : sreg[r][e] * eg0;
            for (int p = 0; p < h; p++)
                acc = __fmaf_rn(M.ringu[p * VS + jl], KDA ? M.ek[p * K + c1] : M.ek[p * K + c1] * M.dec[p], acc);
            if (KDA) acc = acc * expf(M.Gcur[c1]);
            sreg[r][e] = acc;
        }
    }
    __syncthreads();
}

/* The thread's rows into the head's checkpoint at element offset co of `ckpt` */
template <class CF>
__device__ __forceinline__ void store_rows(void *ckpt, const rssm_layer &l, int64_t co, const step_cta &C,
                                           const float (&sreg)[CF::RPT][CF::C])
{
#pragma unroll
    for (int r = 0; r < CF::RPT; r++) {
        const int j = C.j0 + (C.w * CF::RG + C.rg) * CF::RPT + r;
        if (j < C.V) store_state_row<CF>(ckpt, l, co, j, C.li, sreg[r]);
    }
}

/* P1: the chunk's raw q, k (this thread's channel tid of each token), gates, beta and v into
 * registers and shared memory; the norms' squares summed over the CTA into nrm (l2 norm) */
template <class CF, bool KDA, int TC>
__device__ __forceinline__ void chunk_inputs(const kargs &A, const step_cta &C, const step_smem &M, int64_t bt0, int nt,
                                             float (&qraw)[TC], float (&kraw)[TC])
{
    constexpr int VS = CF::VS;
    const rssm_layer &l = A.l;
    const int tid = C.tid, K = C.K, V = C.V, gk = C.gk, hv = C.hv, kh = C.kh, iodt = C.iodt;
    float part[2 * TC];
#pragma unroll
    for (int t = 0; t < TC; t++) {
        qraw[t] = kraw[t] = 0.0f;
        if (t < nt && tid < K) {
            qraw[t] = ld_dt(A.io.q, iodt, (bt0 + t) * A.io.q_stride + (int64_t)kh * K + tid);
            kraw[t] = ld_dt(A.io.k, iodt, (bt0 + t) * A.io.k_stride + (int64_t)kh * K + tid);
        }
        part[2 * t] = kraw[t] * kraw[t];
        part[2 * t + 1] = qraw[t] * qraw[t];
    }
    const bool replay = C.mode == MODE_REPLAY || C.mode == MODE_VERIFY; /* GDN: the gate floor */
    for (int i = tid; i < nt * gk; i += RSSM_NT) {
        const int t = i / gk, cc = i % gk;
        const float g = gate_of(A, bt0 + t, hv, gk, cc);
        /* g_t for now (G_t below): GDN replay at the floor, KDA verify at the window's levels */
        M.Gt[t * gk + cc] = !KDA && replay                 ? rssm_gate_floor_f32(g)
                            : KDA && C.mode == MODE_VERIFY ? rssm_kda_clamp(g, M.lvl[cc])
                                                           : g;
    }
    if (tid < nt) M.sbeta[tid] = beta_of(A, bt0 + tid, hv);
    for (int i = tid; i < nt * VS; i += RSSM_NT) {
        const int t = i / VS, j = C.j0 + i % VS;
        M.vv[i] = j < V ? ld_dt(A.io.v, iodt, (bt0 + t) * A.io.v_stride + (int64_t)hv * V + j) : 0.0f;
    }
    if (l.qk_l2norm)
        block_reduce<2 * TC>(part, 0u, M.red, M.nrm);
    else
        __syncthreads();
}

/* P2: normalised k, q; cumulative gates G_t (in Gt) and the gated vectors; the entries' keys as
 * stored at positions hp + t; k.q per token into skq[t] and (KDA) min G into skq[TC] */
template <bool KDA, int TC>
__device__ __forceinline__ void chunk_normalise(const kargs &A, const step_cta &C, const step_smem &M, int nt, int hp,
                                                float scale, const float (&qraw)[TC], const float (&kraw)[TC])
{
    const rssm_layer &l = A.l;
    const int tid = C.tid, K = C.K, gk = C.gk;
    if (tid == 0 && !KDA) { /* GDN: scalar G_t, one thread */
        float G = M.Gcur[0];
        for (int t = 0; t < nt; t++)
            G = G + M.Gt[t], M.Gt[t] = G;
    }
    float part2[TC + 1];
    float Gc = KDA && tid < K ? M.Gcur[tid] : 0.0f, Gend = 3.0e38f; /* GDN: G of the chunk's last token */
    __syncthreads();
#pragma unroll
    for (int t = 0; t < TC; t++) {
        part2[t] = 0.0f;
        if (t < nt && tid < K) {
            const float sk = l.qk_l2norm ? 1.0f / sqrtf(M.nrm[2 * t] + (float)RSSM_L2NORM_EPS) : 1.0f;
            const float sq = l.qk_l2norm ? 1.0f / sqrtf(M.nrm[2 * t + 1] + (float)RSSM_L2NORM_EPS) : 1.0f;
            const float kv = kraw[t] * sk, qv = qraw[t] * sq * scale;
            float G;
            if (KDA)
                Gc = Gc + M.Gt[t * gk + tid], G = Gc;
            else
                G = M.Gt[t], Gend = G;
            const float eg = expf(G);
            M.kn[t * K + tid] = kv;
            M.qn[t * K + tid] = qv;
            M.xk[t * K + tid] = eg * kv;
            M.xq[t * K + tid] = eg * qv;
            M.ek[(hp + t) * K + tid] = round_dt(C.rdt, KDA ? kv * expf(-G) : kv);
            part2[t] = kv * qv;
        }
    }
    part2[TC] = KDA ? (tid < K ? Gc : 3.0e38f) : Gend;
    __syncthreads(); /* all reads of Gt (GDN) and Gcur done */
    if (KDA && tid < K) {
        /* G_t per channel: recompute the running sum in the same order */
        float G = M.Gcur[tid];
        for (int t = 0; t < nt; t++)
            G = G + M.Gt[t * gk + tid], M.Gt[t * gk + tid] = G;
    }
    if (!KDA && tid < nt) M.eG[hp + tid] = M.Gt[tid];
    block_reduce<TC + 1>(part2, 1u << TC, M.red, M.skq); /* skq[0..TC) = k.q, skq[TC] = min G of the last token */
    /* note: skq has TC entries and nrm follows it; min G lands in nrm[0] (norms are consumed) */
}

/* P3: ring weights of every token for every earlier position (one warp per (token, position));
 * unless the chunk ends in a fold, slice 0 writes the new entries' keys and G to memory at ring
 * positions p0 + hp + t (GDN: the group's key also when this head folds early, end = 2: the
 * group's other heads may store that entry) */
template <bool KDA, int TC>
__device__ __forceinline__ void chunk_ring_weights(const kargs &A, const step_cta &C, const step_smem &M, int s, int nt,
                                                   int p0, int hp, int end)
{
    const rssm_layer &l = A.l;
    const int tid = C.tid, w = C.w, lane = C.lane, K = C.K, L = C.L, gk = C.gk, hv = C.hv;
    const int span = hp + TC;
    for (int pi = w; pi < nt * span; pi += RSSM_NW) {
        const int t = pi / span, p = pi % span;
        if (p >= hp + t) continue;
        float dk = 0.0f, dq = 0.0f;
        const float *xa = KDA ? M.xk + t * K : M.kn + t * K, *xb = KDA ? M.xq + t * K : M.qn + t * K;
        for (int cc = lane; cc < K; cc += 32) {
            dk = __fmaf_rn(M.ek[p * K + cc], xa[cc], dk);
            dq = __fmaf_rn(M.ek[p * K + cc], xb[cc], dq);
        }
        dk = warp_sum(dk), dq = warp_sum(dq);
        if (lane == 0) {
            float f = 1.0f;
            if (!KDA) f = expf(M.Gt[t] - M.eG[p]), M.dec[t * L + p] = f;
            M.wk[t * L + p] = dk * f;
            M.wq[t * L + p] = dq * f;
        }
    }
    if ((KDA ? !end : end != 1) && C.slice == 0) {
        const bool wk_ = KDA || (hv % A.group == 0 && !A.defer_k);
        const int64_t rk0 = rssm_ring_k_off(&l, s, hv, A.group, p0 + hp);
        const int64_t rg0 = rssm_ring_g_off(&l, s, hv, p0 + hp, gk);
        for (int i = tid; i < nt * K; i += RSSM_NT) {
            if (wk_) st_dt(A.st.ring_k, C.rdt, rk0 + i, M.ek[hp * K + i]);
            if (KDA) ((float *)A.st.ring_g)[rg0 + i] = M.Gt[i];
        }
        if (!KDA && !end && tid < nt) ((float *)A.st.ring_g)[rg0 + tid] = M.Gt[tid];
    }
}

/* P4: the ring part of every row of the slice for the entries before the chunk:
 * rk[t][row] = sum_p u_p[row] wk[t][p], rq likewise */
template <class CF, int TC>
__device__ __forceinline__ void chunk_ring_part(const step_cta &C, const step_smem &M, int nt, int hp)
{
    constexpr int VS = CF::VS;
    const int tid = C.tid, L = C.L;
    if (tid < VS) {
        float ak[TC], aq[TC];
#pragma unroll
        for (int t = 0; t < TC; t++)
            ak[t] = aq[t] = 0.0f;
        for (int p = 0; p < hp; p++) {
            const float u = M.ringu[p * VS + tid];
#pragma unroll
            for (int t = 0; t < TC; t++)
                if (t < nt) ak[t] = __fmaf_rn(u, M.wk[t * L + p], ak[t]), aq[t] = __fmaf_rn(u, M.wq[t * L + p], aq[t]);
        }
#pragma unroll
        for (int t = 0; t < TC; t++)
            if (t < nt) M.rk[t * VS + tid] = ak[t], M.rq[t * VS + tid] = aq[t];
    }
}

/* End fold of one row (local row jl) at token t: S_n = the ring folded with the new entry
 * (u on this row, key kn_t); the row's registers become S_n; returns this lane's share of
 * o = S_n q_t */
template <class CF, bool KDA>
__device__ __forceinline__ float end_fold_row(const step_cta &C, const step_smem &M, float (&row)[CF::C], int jl, int t,
                                              int hp, float u)
{
    constexpr int VS = CF::VS;
    const int K = C.K, L = C.L, gk = C.gk, li = C.li;
    const float eg0 = KDA ? 0.0f : expf(M.Gt[t]);
    float oo = 0.0f;
#pragma unroll
    for (int e = 0; e < CF::C; e++) {
        const int cc = chan<CF>(li, e);
        const int c1 = cc < K ? cc : 0;
        float acc;
        if (KDA) {
            acc = row[e];
            for (int p = 0; p < hp; p++)
                acc = __fmaf_rn(M.ringu[p * VS + jl], M.ek[p * K + c1], acc);
            acc = acc * expf(M.Gt[t * gk + c1]);
        } else {
            acc = row[e] * eg0;
            for (int p = 0; p < hp; p++)
                acc = __fmaf_rn(M.ringu[p * VS + jl], M.ek[p * K + c1] * M.dec[t * L + p], acc);
        }
        acc = __fmaf_rn(u, cc < K ? M.kn[t * K + cc] : 0.0f, acc);
        row[e] = acc;
        oo = __fmaf_rn(acc, cc < K ? M.qn[t * K + cc] : 0.0f, oo);
    }
    return oo;
}

/* P5: the thread's rows: S0 products, u_t and o_t of every token of the chunk, in order; the
 * new entries' u (no fold; ring positions p0 + hp + t) or the end fold (the row's registers
 * become S_n; replay stores it as the new checkpoint at element offset ck0) */
template <class CF, bool KDA, int TC>
__device__ __forceinline__ void chunk_rows(const kargs &A, const step_cta &C, const step_smem &M,
                                           float (&sreg)[CF::RPT][CF::C], int s, int64_t bt0, int nt, int p0, int hp,
                                           int end, bool seq, int64_t ck0)
{
    constexpr int C_ = CF::C, LANES = CF::LANES, RG = CF::RG, VS = CF::VS, RPT = CF::RPT;
    const rssm_layer &l = A.l;
    const int K = C.K, V = C.V, L = C.L, li = C.li, hv = C.hv, rdt = C.rdt;
    const int64_t ru0 = rssm_ring_u_off(&l, s, hv, p0);
#pragma unroll
    for (int r = 0; r < RPT; r++) {
        const int jl = (C.w * RG + C.rg) * RPT + r, j = C.j0 + jl;
        const bool valid = j < V;
        float dk[TC], dq[TC];
#pragma unroll
        for (int t = 0; t < TC; t++) {
            dk[t] = dq[t] = 0.0f;
            if (t < nt) {
#pragma unroll
                for (int e = 0; e < C_; e++) {
                    const int cc = chan<CF>(li, e);
                    const float a = cc < K ? M.xk[t * K + cc] : 0.0f, q = cc < K ? M.xq[t * K + cc] : 0.0f;
                    dk[t] = __fmaf_rn(sreg[r][e], a, dk[t]);
                    dq[t] = __fmaf_rn(sreg[r][e], q, dq[t]);
                }
                dk[t] = group_sum<LANES>(dk[t]);
                if (!end) dq[t] = group_sum<LANES>(dq[t]);
            }
        }
        float uw[TC];
#pragma unroll
        for (int t = 0; t < TC; t++) {
            uw[t] = 0.0f;
            if (t >= nt) continue;
            float dd = dk[t] + M.rk[t * VS + jl];
#pragma unroll
            for (int s2 = 0; s2 < t; s2++)
                dd = __fmaf_rn(uw[s2], M.wk[t * L + hp + s2], dd);
            const float u = M.sbeta[t] * (M.vv[t * VS + jl] - dd);
            float o;
            if (end) {
                o = group_sum<LANES>(end_fold_row<CF, KDA>(C, M, sreg[r], jl, t, hp, u));
            } else {
                o = dq[t] + M.rq[t * VS + jl];
#pragma unroll
                for (int s2 = 0; s2 < t; s2++)
                    o = __fmaf_rn(uw[s2], M.wq[t * L + hp + s2], o);
                o = __fmaf_rn(u, M.skq[t], o);
                uw[t] = round_dt(rdt, u);
                if (li == 0 && valid) {
                    st_dt(A.st.ring_u, rdt, ru0 + (int64_t)(hp + t) * V + j, uw[t]);
                    M.ringu[(hp + t) * VS + jl] = uw[t];
                }
            }
            if (li == 0 && valid) st_dt(A.io.o, C.iodt, rssm_o_off(&l, bt0 + t, hv) + j, o);
        }
        if (end && !seq && valid) /* replay end fold: the new checkpoint */
            store_state_row<CF>(A.st.checkpoint, l, ck0, j, li, sreg[r]);
    }
}

template <class CF, bool KDA, int TC> __global__ void __launch_bounds__(RSSM_NT, 2) step_kernel(const kargs A)
{
    extern __shared__ float sm[];
    constexpr int C_ = CF::C, LANES = CF::LANES, RG = CF::RG, VS = CF::VS, RPT = CF::RPT;
    const rssm_layer &l = A.l;
    const int K = l.head_k_dim, V = l.head_v_dim, L = l.ring_len, HV = l.num_v_heads, gk = KDA ? K : 1;
    const int rdt = l.ring_dtype, iodt = l.io_dtype;
    const int tid = threadIdx.x, w = tid >> 5, lane = tid & 31, rg = lane / LANES, li = lane % LANES;
    const int b = blockIdx.y, hv = blockIdx.x / A.NS, slice = blockIdx.x % A.NS, kh = hv / A.group;
    const int j0 = slice * VS;
    const int mode = A.mode;
    int T = mode == MODE_MAT ? 0 : A.io.tokens; /* this row's tokens */
    const smem_layout S = make_smem_layout(L, K, VS, TC, gk);
    const step_smem M = {sm + S.ek,   sm + S.eG,  sm + S.ringu, sm + S.xk,  sm + S.xq,  sm + S.kn, sm + S.misc,
                         sm + S.Gt,   sm + S.wk,  sm + S.wq,    sm + S.dec, sm + S.rk,  sm + S.rq, sm + S.vv,
                         sm + S.Gcur, sm + S.lvl, sm + S.beta,  sm + S.kq,  sm + S.nrm, sm + S.red};
    const step_cta C = {K, V, L, HV, gk, rdt, iodt, tid, w, lane, rg, li, b, hv, slice, kh, j0, mode};

    /* slots, tokens, cursor: out-of-range rows are padding, counted once per row */
    int s, d, c = 0, base = 0, h = 0;
    bool bad = false;
    resolve_row<KDA>(A, C, s, d, T, c, base, h, bad);
    if (bad && blockIdx.x == 0 && tid == 0) atomicAdd(A.err, 1);
    if (s < 0) {
        if (mode != MODE_MAT)
            for (int i = tid; i < T * VS; i += RSSM_NT) {
                const int t = i / VS, j = j0 + i % VS;
                if (j < V) st_dt(A.io.o, iodt, rssm_o_off(&l, rssm_bt(&A.io, b, t), hv) + j, 0.0f);
            }
        return;
    }

    /* KDA verify: the window's clamp levels, before the rows' registers are taken (read after phase 1's barrier) */
    if (KDA && mode == MODE_VERIFY) window_levels<KDA>(A, C, M, T);

    /* prefetch this thread's rows of S0 */
    const int64_t ck0 = rssm_ckpt_off(&l, s, hv);
    float sreg[RPT][C_];
#pragma unroll
    for (int r = 0; r < RPT; r++) {
        const int j = j0 + (w * RG + rg) * RPT + r;
        if (j < V)
            load_state_row<CF>(A.st.checkpoint, l, ck0, j, li, sreg[r]);
        else
#pragma unroll
            for (int e = 0; e < C_; e++)
                sreg[r][e] = 0.0f;
    }

    const int forced = (A.io.fold && (mode == MODE_REPLAY || mode == MODE_VERIFY)) ? A.io.fold[b] != 0 : 0;
    int uniform = 0, c0 = c;
    if (mode == MODE_REPLAY || mode == MODE_VERIFY) {
        uniform = rssm_start_fold(c, T, L, mode == MODE_VERIFY && forced);
        c0 = uniform ? 0 : c;
    }

    /* ---- phase 1: live entries into shared memory (before anyone writes) ---- */
    int p0 = KDA ? 0 : base; /* ring position of local entry 0 (the live entries, then the new ones) */
    stage_committed<CF, KDA>(A, C, M, s, p0, h);
    int early = 0; /* verify: the head's early start fold */
    if (mode == MODE_VERIFY && !uniform && h > 0) early = window_early<KDA, TC>(A, C, M, s, p0, h, T);
    __syncthreads();
    if (A.cs > 1) cluster_sync_all(); /* every CTA sharing ring data has read it (and the ring bases) */

    int new_base = base; /* KDA: this head's ring_base at the end of the step (GDN writes it at once) */

    /* ---- phase 2: fold the committed entries at the start (start fold, materialise, prefill) ---- */
    const bool form = (mode == MODE_MAT || mode == MODE_PREFILL || uniform || early);
    if (form && h > 0) fold_committed<CF, KDA>(C, M, sreg, h);
    if (mode == MODE_MAT || (form && mode != MODE_PREFILL)) {
        /* store the folded checkpoint (materialise: into dst) and continue from it as stored */
        const rssm_state &o = mode == MODE_MAT ? A.dst : A.st;
        const int slot_o = mode == MODE_MAT ? d : s;
        const int64_t co = rssm_ckpt_off(&l, slot_o, hv);
        if (h > 0 || mode == MODE_MAT) {
#pragma unroll
            for (int r = 0; r < RPT; r++) {
                const int j = j0 + (w * RG + rg) * RPT + r;
                if (j < V) store_state_row<CF>(o.checkpoint, l, co, j, li, sreg[r]);
#pragma unroll
                for (int e = 0; e < C_; e++)
                    sreg[r][e] = CF::BF16 ? round_dt(RSSM_DTYPE_BF16, sreg[r][e]) : sreg[r][e];
            }
        }
        if (mode == MODE_MAT) {
            if (slice == 0 && tid == 0 && A.dst.ring_base) A.dst.ring_base[(int64_t)d * HV + hv] = 0;
            return;
        }
        new_base = c0;
        /* GDN: the ring base written as soon as it is known (every slice has read it: the
         * cluster barrier above), unconditionally, so that nothing is held through the tokens
         * for it (ptxas -v) */
        if (!KDA && slice == 0 && tid == 0) A.st.ring_base[(int64_t)s * HV + hv] = c0;
    }
    if (form) {
        h = 0;
        if (!KDA) p0 = c0; /* the window's entries at the positions of cursor values c0 .. */
        for (int i = tid; i < gk; i += RSSM_NT)
            M.Gcur[i] = 0.0f;
    }
    if (mode == MODE_PACKED || mode == MODE_PREFILL) h = 0;
    __syncthreads();

    /* ---- phase 3: tokens, in chunks of TC (packed/prefill: one at a time, state in registers) ---- */
    /* (the prefill instantiation, TC = RSSM_PF_TC, runs prefill_chunks instead) */
    if constexpr (TC == RSSM_PF_TC)
        prefill_chunks<CF, KDA, TC>(A, sreg, b, T, hv, j0, M.kn, M.qn, M.xk, KDA ? M.xq : M.Gt, M.vv, M.sbeta);
    const bool seq = mode == MODE_PACKED || mode == MODE_PREFILL;
    const float scale = l.scale;
    int hp = h; /* positions filled before the chunk */
    for (int cs = 0; TC != RSSM_PF_TC && cs < T; cs += TC) {
        const int nt = T - cs < TC ? T - cs : TC;
        const int64_t bt0 = rssm_bt(&A.io, b, cs);
        float qraw[TC], kraw[TC];
        chunk_inputs<CF, KDA, TC>(A, C, M, bt0, nt, qraw, kraw);      /* P1 */
        chunk_normalise<KDA, TC>(A, C, M, nt, hp, scale, qraw, kraw); /* P2 */
        int end = 0; /* 1: the shared end fold, 2: the head's early fold (min G past -G_MAX) */
        if (seq)
            end = 1;
        else if (mode == MODE_REPLAY) {
            end = (c0 + 1 == L || forced) ? 1 : 0;
            if (!end && M.skq[TC] < -l.fold_threshold) end = 2;
        }
        if (!KDA && end && !seq && slice == 0 && tid == 0) /* GDN: the ring base after an end fold */
            A.st.ring_base[(int64_t)s * HV + hv] = end == 2 ? c0 + 1 : 0;
        chunk_ring_weights<KDA, TC>(A, C, M, s, nt, p0, hp, end); /* P3 */
        __syncthreads();
        chunk_ring_part<CF, TC>(C, M, nt, hp); /* P4 */
        __syncthreads();
        chunk_rows<CF, KDA, TC>(A, C, M, sreg, s, bt0, nt, p0, hp, end, seq, ck0); /* P5 */
        if (end && !seq) new_base = end == 2 ? c0 + 1 : 0;
        if (!seq) hp += nt; /* packed/prefill keep no ring: every token folds into the registers */
        __syncthreads();
        for (int i = tid; i < gk; i += RSSM_NT)
            M.Gcur[i] = seq ? 0.0f : M.Gt[(nt - 1) * gk + i];
        __syncthreads();
    }

    if (seq) { /* packed / prefill: the final state */
        store_rows<CF>(A.st.checkpoint, l, rssm_ckpt_off(&l, d, hv), C, sreg);
        if (mode == MODE_PREFILL) new_base = 0;
    }
    /* GDN prefill: the ring base back to 0, unconditionally (without a cluster,
     * gdn_reset_base_kernel does it) */
    if (!KDA && mode == MODE_PREFILL && slice == 0 && tid == 0 && !A.defer_base)
        A.st.ring_base[(int64_t)s * HV + hv] = 0;
    if (KDA && mode != MODE_PACKED && slice == 0 && tid == 0 && new_base != base)
        A.st.ring_base[(int64_t)s * HV + hv] = new_base;
}

/* GDN prefill of sliced heads without a cluster (backend.cu, launch_step): the slices of a head
 * read its ring base with no barrier before slice 0 could write it, so the bases go back to 0
 * here, after the step kernel: one thread per (row, value head) of every row the step kernel
 * prefilled (the same checks, resolve_row). */
static __global__ void __launch_bounds__(RSSM_NT) gdn_reset_base_kernel(const kargs A)
{
    step_cta C = {};
    C.L = A.l.ring_len, C.HV = A.l.num_v_heads, C.b = blockIdx.y, C.mode = MODE_PREFILL;
    for (int hv = threadIdx.x; hv < C.HV; hv += RSSM_NT) {
        C.hv = hv;
        int s, d, T = A.io.tokens, c = 0, base = 0, h = 0;
        bool bad = false;
        resolve_row<false>(A, C, s, d, T, c, base, h, bad);
        if (s >= 0 && base != 0) A.st.ring_base[(int64_t)s * C.HV + hv] = 0;
    }
}

/* Prefill's end (after the step kernel, which read the live ring): the ring entries of cursor
 * values 0 .. c-1 of every prefilled (row, value head) become neutral, u = 0 and G = 0, so that a
 * decode after prefill is right whether or not the cursors are reset (replayssm.h,
 * rssm_prefill; the host back ends: rssm_host_ring_clear). One CTA per (value head, row). */
static __global__ void __launch_bounds__(RSSM_NT) prefill_ring_clear_kernel(const kargs A)
{
    const rssm_layer &l = A.l;
    const int b = blockIdx.y, hv = blockIdx.x;
    const int s = A.io.slot[b];
    if (s < 0 || s >= A.st.num_slots) return;
    const int c = A.st.cursor[s];
    if (c <= 0 || c > l.ring_len) return;
    const int gk = l.gate == RSSM_GATE_KDA ? l.head_k_dim : 1;
    const int64_t u0 = rssm_ring_u_off(&l, s, hv, 0);
    for (int i = threadIdx.x; i < c * l.head_v_dim; i += RSSM_NT)
        st_dt(A.st.ring_u, l.ring_dtype, u0 + i, 0.0f);
    float *g = (float *)A.st.ring_g + rssm_ring_g_off(&l, s, hv, 0, gk);
    for (int i = threadIdx.x; i < c * gk; i += RSSM_NT)
        g[i] = 0.0f;
}

/* GDN keys when a group does not fit one cluster: after the step kernel, one CTA per
 * (row, key head) writes the normalised keys of the step's new entries, at the positions of
 * cursor values c0 + t, whenever the shared end fold does not happen (also where value heads
 * fold early: the group's others may store the entry). */
static __global__ void __launch_bounds__(RSSM_NT) gdn_write_k_kernel(const kargs A)
{
    __shared__ float red[RSSM_NW * 16];
    __shared__ float nrm[2];
    const rssm_layer &l = A.l;
    const int K = l.head_k_dim, L = l.ring_len, T = A.io.tokens, b = blockIdx.y, kh = blockIdx.x;
    const int s = A.io.slot[b];
    if (s < 0 || s >= A.st.num_slots) return;
    const int c = A.st.cursor[s];
    if (c < 0 || c > L) return;
    const int forced = A.io.fold ? A.io.fold[b] != 0 : 0;
    const int verify = A.mode == MODE_VERIFY;
    const int c0 = rssm_start_fold(c, T, L, verify && forced) ? 0 : c;
    if (!verify && (c0 + 1 == L || forced)) return; /* end fold: no entry */
    for (int t = 0; t < T; t++) {
        const int64_t bt = (int64_t)b * T + t;
        float kv =
            threadIdx.x < K ? ld_dt(A.io.k, l.io_dtype, bt * A.io.k_stride + (int64_t)kh * K + threadIdx.x) : 0.0f;
        float part[1] = {kv * kv};
        if (l.qk_l2norm) {
            block_reduce<1>(part, 0u, red, nrm);
            kv = kv * (1.0f / sqrtf(nrm[0] + (float)RSSM_L2NORM_EPS));
        }
        if (threadIdx.x < K)
            st_dt(A.st.ring_k, l.ring_dtype, rssm_ring_k_off(&l, s, kh * A.group, A.group, c0 + t) + threadIdx.x, kv);
    }
}

/* ---- configurations (one per fast head size and state dtype, plus a generic one) ---------- */

typedef cfg<4, 32, false, false> cfg_k128_f32; /* K=128, f32 state: 32 lanes x float4 */
typedef cfg<8, 16, false, true> cfg_k128_bf16; /* K=128, bf16 state: 16 lanes x 8 bf16 */
typedef cfg<4, 16, false, false> cfg_k64_f32;  /* K=64: 16 lanes x float4 */
typedef cfg<8, 8, false, true> cfg_k64_bf16;   /* K=64: 8 lanes x 8 bf16 */
typedef cfg<8, 32, true, false> cfg_gen_f32;   /* any K <= 256: c = lane + 32 e, scalar accesses */
typedef cfg<8, 32, true, true> cfg_gen_bf16;
/* prefill only (TC = RSSM_PF_TC), K=128: wide lanes (8 lanes of 16 channels per row, 3 shuffle
 * levels per 16 FMAs, not the f32 narrow lanes' 5 per 4), 4 rows per thread and a whole 128-row
 * head per CTA, or sliced: 1 row per thread and 32-row slices, 4 CTAs per head (where whole
 * heads would leave most SMs idle); the same bits */
typedef cfg<16, 8, false, false> cfg_k128w_f32;    /* 8 lanes x 4 float4 blocks */
typedef cfg<16, 8, false, true> cfg_k128w_bf16;    /* 8 lanes x 2 blocks of 8 bf16 */
typedef cfg<16, 8, false, false, 1> cfg_k128s_f32; /* the same lanes, 1 row per thread */
typedef cfg<16, 8, false, true, 1> cfg_k128s_bf16;

/* The step kernel of a configuration: tc = 1 (decode, prefill, materialise), 4 (verify) or
 * RSSM_PF_TC (prefill in chunks). */
template <class CF, bool KDA> static void *step_kernel_tc(int tc)
{
    return tc == 1   ? (void *)step_kernel<CF, KDA, 1>
           : tc == 4 ? (void *)step_kernel<CF, KDA, 4>
                     : (void *)step_kernel<CF, KDA, RSSM_PF_TC>;
}
template <class CF> static void *step_kernel_of(int kda, int tc)
{
    return kda ? step_kernel_tc<CF, true>(tc) : step_kernel_tc<CF, false>(tc);
}
void *rssm_cuda_kernel_k128(int bf16, int kda, int tc); /* step_k128.cu */
void *rssm_cuda_kernel_k64(int bf16, int kda, int tc);  /* step_k64.cu */
void *rssm_cuda_kernel_gen(int bf16, int kda, int tc);  /* step_generic.cu */
void *rssm_cuda_kernel_k128w(int bf16, int kda);        /* prefill_k128_wide.cu (TC = RSSM_PF_TC) */
void *rssm_cuda_kernel_k128s(int bf16, int kda);        /* prefill_k128_wide.cu (TC = RSSM_PF_TC) */

#endif /* RSSM_STEP_KERNEL_CUH */
