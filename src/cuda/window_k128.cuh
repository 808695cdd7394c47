/*
 * window_k128.cuh — the phases of a verify window (T > 1) in decode_k128.cu's per-head kernels,
 * in the order a CTA runs them: the start fold on the FP64 tensor cores (windows of 3-4 tokens),
 * the window's decay tests and gates, its ring weights, and the rows (FP64 tensor cores for 3-4
 * tokens, FFMA butterflies up to 8) with the token chain each (row, token) ends in. Like the
 * one-token phases they take the CTA's coordinates as plain values (decode_k128.cu says why).
 */
#ifndef RSSM_WINDOW_K128_CUH
#define RSSM_WINDOW_K128_CUH

#include "decode_k128.cuh"

namespace rssm_decode_k128
{

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
 * S[j][2 hf + 1]. Entries past h are zero on both sides. Every thread tid of the nt that hold the
 * head's rows calls this; sync() is their barrier. */
#define K128_FOLD_ROUND 8 /* entries per round: 2 k-steps x 16 tiles x 32 lanes of f64 fit sXd */
template <bool KDA, class SYNC>
__device__ __forceinline__ void fold_ring_rows_mma(float (&S)[8][4], const float *gs, int h, const unsigned char *sK,
                                                   const unsigned char *sU, const float *sG, int rbf, int sch, int srow,
                                                   double *kf, int tid, int nt, SYNC sync)
{
    const int lane = threadIdx.x & 31;
    if (!KDA) fold_gate<false>(S, {gs[0], gs[0], gs[0], gs[0]}); /* one G for every channel */
#pragma unroll 1
    for (int i0 = 0; i0 < h; i0 += K128_FOLD_ROUND) {
        const int n = min(K128_FOLD_ROUND, h - i0);
#pragma unroll 1
        for (int x = tid; x < K128_FOLD_ROUND * 16 * 8; x += nt) {
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
        sync();
#pragma unroll
        for (int t = 0; t < 16; t++) {
            const int j = t >> 1, e = 2 * (t & 1);
            double d0 = S[j][e], d1 = S[j][e + 1];
#pragma unroll
            for (int ks = 0; ks < K128_FOLD_ROUND / 4; ks++)
                dmma_8x8x4(d0, d1, (double)a[ks], kf[(16 * ks + t) * 32 + lane]);
            S[j][e] = (float)d0, S[j][e + 1] = (float)d1;
        }
        sync(); /* kf is rewritten by the next round (or, after the fold, by the tokens' vectors) */
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

/* KDA verify, a deep window: its gates gt[t] (shared memory) clamped at each channel's level (params.h,
 * RSSM_KDA_WINDOW_LEVEL), by one warp (a lane: its 4 channels); read after a barrier. */
__device__ __forceinline__ void clamp_window_gates(const kargs &A, int T, int lane, float (*gt)[K128_DIM])
{
    const int c4 = lane * 4; /* the lane's first channel */
    const float decay = rssm_kda_window_decay(&A.l);
#pragma unroll 1
    for (int e = 0; e < 4; e++) {
        float lvl;
        RSSM_KDA_WINDOW_LEVEL(gt[t][c4 + e], T, decay, lvl);
        for (int t = 0; t < T; t++)
            gt[t][c4 + e] = rssm_kda_clamp(gt[t][c4 + e], lvl);
    }
}

/* Verify: the window's fold tests on its gates gt[t] (shared memory), alike in every warp (a lane reads
 * its 4 channels; every warp all 128): bit 0 when the window would take some channel's G below -G_MAX (the
 * head's early start fold: min over channels of G_{h-1} + the window's T gates, G_{h-1} per channel in Gl
 * (KDA) or in Gl[0] (GDN, whose gates are the same on every channel)); bit 1 (KDA) when
 * some channel's window decays by more than the clamp allows (params.h, the sum of its gates'
 * negative parts: its gates are clamped and the head folds at the start). h = 0: no live entries
 * (no early fold). */
template <bool KDA>
__device__ __forceinline__ int window_tests(const kargs &A, const float *Gl, int h, int T, int lane,
                                            const float (*gt)[K128_DIM])
{
    if (!KDA) {
        float W = Gl[0];
        for (int t = 0; t < T; t++)
            W = W + gt[t][0];
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
            const float g = gt[t][c4 + e];
            W[e] = W[e] + g, N[e] = N[e] + fminf(g, 0.0f);
        }
    const float m = warp_min(fminf(fminf(W[0], W[1]), fminf(W[2], W[3])));
    const bool deep = fminf(fminf(N[0], N[1]), fminf(N[2], N[3])) < -rssm_kda_window_decay(&A.l);
    return (h > 0 && m < -A.l.fold_threshold) | (__any_sync(0xffffffffu, deep) << 1);
}

/* Verify: whether the window folds at its start although the cursor does not say so (uniform: it
 * does), by window_tests on G_{h-1} (Gl) and the gates gt; a deep KDA window also gets its gates
 * clamped, by warp w == 0 of the group whose barrier sync() is, once every warp has read them. The
 * per-head kernel and the verify pipeline's producers decide alike. */
template <bool KDA, class SYNC>
__device__ __forceinline__ int window_early_fold(const kargs &A, const float *Gl, int h, int uniform, int T, int w,
                                                 int lane, float (*gt)[K128_DIM], SYNC sync)
{
    const int tests = window_tests<KDA>(A, Gl, uniform ? 0 : h, T, lane, gt);
    const int early = !uniform && h > 0 && tests != 0;
    if (KDA && (tests & 2)) { /* rare, and alike in every warp */
        sync();               /* every warp has read the gates */
        if (w == 0) clamp_window_gates(A, T, lane, gt);
        sync();
    }
    return early;
}

/* Verify: the window's gates, spread over the CTA's NW warps: WPT = min(4, NW / TC) warps per
 * token slot, a lane CPL = 4 / WPT channels c. Token t: G_t (from G_{h-1}: Gl, KDA, or sG[h - 1],
 * GDN), x_k, x_q, the entry's key as stored (sm.ks) and G (sm.G); MMA: also x_k, x_q in f64
 * (columns 2t, 2t + 1 of the row phase's B operand). A slot past the window (T = 3 on the MMA
 * rows, TC <= 4) gets zero vectors, so that the rows need no branch. Each element gets the
 * operations it got when warp t took token t and 12 of 16 warps waited at the next barrier (GDN's
 * gate is one value per head, stored in every channel): the same bits, and T = 4 at B = 128 GDN
 * 163.0 -> 159.8 us, KDA 191.7 -> 187.9 (bench/results/verify-gates-2026-12-03/). */
template <bool KDA, bool MMA, int TC>
__device__ __forceinline__ void gates_window(const kargs &A, double *sXd, int T, int w, int NW, int lane, int h,
                                             const float *Gl, const float *sG)
{
    fixed_smem &sm = k128_smem();
    const int WPT = NW >= 4 * TC ? 4 : NW >= 2 * TC ? 2 : 1, CPL = 4 / WPT;
    const int t = w / WPT, c0 = (w % WPT) * 32 * CPL + lane * CPL;
    if (t >= TC) return;
    if (t >= T) {
        if (TC <= 4)
#pragma unroll
            for (int e = 0; e < 4; e++)
                if (e < CPL) {
                    sm.xk[t][c0 + e] = 0.0f, sm.xq[t][c0 + e] = 0.0f;
                    if (MMA) sXd[2 * t * K128_XDS + c0 + e] = 0.0, sXd[(2 * t + 1) * K128_XDS + c0 + e] = 0.0;
                }
        return;
    }
#pragma unroll
    for (int e = 0; e < 4; e++) {
        if (e >= CPL) break;
        const int c = c0 + e;
        float G = h > 0 ? (KDA ? Gl[c] : sG[h - 1]) : 0.0f;
        for (int tt = 0; tt <= t; tt++)
            G = G + sm.gt[tt][c];
        const float kv = sm.kn[t][c], qv = sm.qn[t][c];
        const float eg = expf(G);
        sm.xk[t][c] = eg * kv;
        sm.xq[t][c] = eg * qv;
        sm.ks[t][c] = round_dt(A.l.ring_dtype, KDA ? kv * expf(-G) : kv);
        sm.G[t][c] = G;
        if (MMA) {
            sXd[2 * t * K128_XDS + c] = (double)sm.xk[t][c];
            sXd[(2 * t + 1) * K128_XDS + c] = (double)sm.xq[t][c];
        }
    }
}

/* Verify: ring weights w_{t,p}, p < h + t, into ww.wk[t], ww.wq[t], by gate (window_ring_weights
 * below), from the tokens' vectors in shared memory: xa[t], xb[t] (GDN k and q, KDA x_k and x_q), the
 * window's own entries' keys as stored ks[t] and (GDN) their G in G[t][0]. */

/* channels c4 .. c4 + 3 of entry p's key: a ring entry (p < h, as stored) or the window's own */
__device__ __forceinline__ void entry_key4(const unsigned char *sK, int rbf, int p, int h, int c4,
                                           const float (*ks)[K128_DIM], float (&k4)[4])
{
    if (p < h)
        ld4(sK, rbf, p * K128_DIM + c4, k4);
    else
#pragma unroll
        for (int e = 0; e < 4; e++)
            k4[e] = ks[p - h][c4 + e];
}

/* GDN: a warp takes an entry p and a group of 4 tokens, the 8 dot products of k_p with their k and
 * q, summed over the warp by one reduce-scatter (RS: 9 shuffles in 5 dependent steps, where a warp
 * per (t, p) took 10 shuffles for 2 products). Its additions are warp_sum's, in its order: the
 * weights keep their bits. GDN T = 4 at B = 128: 176.4 -> 163.0 us
 * (bench/results/verify-weights-2026-12-03/). */
__device__ __forceinline__ void ring_weights_gdn(const unsigned char *sK, const float *sG, int rbf, int T, int h, int w,
                                                 int NW, int lane, const float (*kn)[K128_DIM],
                                                 const float (*qn)[K128_DIM], const float (*ks)[K128_DIM],
                                                 const float (*G)[K128_DIM], window_weights &ww)
{
    const int c4 = lane * 4; /* the lane's first channel */
    const int E = h + T - 1, groups = (T + 3) >> 2;
    for (int pi = w; pi < E * groups; pi += NW) {
        const int p = pi % E, t0 = 4 * (pi / E);
        if (p - h >= t0 + 3) continue; /* no token of the group reads this entry */
        float k4[4];
        entry_key4(sK, rbf, p, h, c4, ks, k4);
        /* v[2 j]: k_p . k of token t0 + j, v[2 j + 1]: k_p . q (past the window: unused) */
        float v[8];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const float4 a = *(const float4 *)(kn[t0 + j] + c4), b = *(const float4 *)(qn[t0 + j] + c4);
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
            const float f = expf(G[t][0] - (p < h ? sG[p] : G[p - h][0]));
            (j & 1 ? ww.wq : ww.wk)[t][p] = v[0] * f;
        }
    }
}

/* KDA: one warp per (t, p), NW warps, k_p with x_k and x_q of token t. GDN's reduce-scatter
 * measured 1.0-1.4% slower here (3% with a bf16 state), where ptxas spilled more around it. */
__device__ __forceinline__ void ring_weights_kda(const unsigned char *sK, int rbf, int T, int h, int w, int NW,
                                                 int lane, const float (*xk)[K128_DIM], const float (*xq)[K128_DIM],
                                                 const float (*ks)[K128_DIM], window_weights &ww)
{
    const int c4 = lane * 4; /* the lane's first channel */
    const int P = T * h + T * (T - 1) / 2;
    for (int pi = w; pi < P; pi += NW) {
        int t = 0, p = pi;
        while (p >= h + t)
            p -= h + t, t++;
        float k4[4];
        entry_key4(sK, rbf, p, h, c4, ks, k4);
        const float *xa = xk[t], *xb = xq[t];
        float dk = 0.0f, dq = 0.0f;
#pragma unroll
        for (int e = 0; e < 4; e++)
            dk = __fmaf_rn(k4[e], xa[c4 + e], dk), dq = __fmaf_rn(k4[e], xb[c4 + e], dq);
        dk = warp_sum(dk), dq = warp_sum(dq);
        if (lane == 0) {
            ww.wk[t][p] = dk;
            ww.wq[t][p] = dq;
        }
    }
}

/* xa, xb: GDN the tokens' k and q, KDA their x_k and x_q; G: GDN the window's G (unused by KDA) */
template <bool KDA>
__device__ __forceinline__ void window_ring_weights(const unsigned char *sK, const float *sG, int rbf, int T, int h,
                                                    int w, int NW, int lane, const float (*xa)[K128_DIM],
                                                    const float (*xb)[K128_DIM], const float (*ks)[K128_DIM],
                                                    const float (*G)[K128_DIM], window_weights &ww)
{
    if constexpr (KDA)
        ring_weights_kda(sK, rbf, T, h, w, NW, lane, xa, xb, ks, ww);
    else
        ring_weights_gdn(sK, sG, rbf, T, h, w, NW, lane, xa, xb, ks, G, ww);
}

/* A window's lane finishes its (row, token t) in token order: u_t from the row's k dot dd, o_t
 * from its q dot o, with the earlier tokens' u (one broadcast per token, from lane src_of(s2));
 * lanes with live = 0 only take part in the shuffles. Same operations, in the same order, as a
 * sequential loop over the tokens. Returns u_t rounded to the ring dtype. */
template <int TC, class SRC>
__device__ __forceinline__ float window_token_chain(const window_weights &ww, int rdt, int h, int t, bool live,
                                                    float vr, float &dd, float &o, SRC src_of)
{
    float uw = 0.0f;
#pragma unroll
    for (int s2 = 0; s2 < TC; s2++) {
        if (live && t == s2) {
            const float u = ww.beta[t] * (vr - dd);
            o = __fmaf_rn(u, ww.kq[t], o);
            uw = round_dt(rdt, u);
        }
        if (s2 + 1 < TC) {
            const float us = __shfl_sync(FULL_MASK, uw, src_of(s2));
            if (live && t > s2) dd = __fmaf_rn(us, ww.wk[t][h + s2], dd), o = __fmaf_rn(us, ww.wq[t][h + s2], o);
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
                                                int iobf, const window_weights &ww)
{
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
    const float *wcol = (n & 1) ? ww.wq[n >> 1] : ww.wk[n >> 1];
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
        window_token_chain<TC>(ww, l.ring_dtype, h, t, live, vr, dd, o, [&](int s2) { return (lane & ~3) + s2; });
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
                const float a = sm.ww.wk[t][i], q = sm.ww.wq[t][i];
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
        const float uw = window_token_chain<TC>(sm.ww, l.ring_dtype, h, t, live, vr, dd, o,
                                                [&](int s2) { return 4 * (rr * TC + s2); });
        if (live) {
            const int jr = row0 + g0 + rr;
            st_dt(A.io.o, l.io_dtype, ((((int64_t)b * T + t) * HV + hv) << 7) + jr, o);
            st_dt(A.st.ring_u, l.ring_dtype, ((((int64_t)s * HV + hv) * L + wpos + t) << 7) + jr, uw);
        }
    }
}

} // namespace rssm_decode_k128

#endif /* RSSM_WINDOW_K128_CUH */
