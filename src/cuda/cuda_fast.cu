/*
 * cuda_fast.cu — specialised step kernels for K = V = 128 (packed decode T = 1, replay decode
 * T = 1, verify T <= 4; T = 5..8 stays on the general kernel), f32/bf16 state, f32/bf16 ring, f32/bf16 io, GDN and KDA.
 * Everything else stays on the general step kernel (cuda_kernels.cuh).
 *
 * One CTA of 512 threads (16 warps) per (row b, value head hv); warp w owns state rows
 * 8w .. 8w+7, lane l holds channels 4l .. 4l+3 of each (f32: one float4, bf16: 8 bytes).
 * The warp's 8 rows of S0 are loaded at kernel entry, before anything else.
 *   1. fold decision (shared cursor, fold flag, KDA window check), optional start fold of
 *      the committed entries in registers (checkpoint written, continued from as stored);
 *   2. warps 0..T-1 prepare token t (normalised q, k, gates, e^G products, stored key) in
 *      shared memory;
 *   3. the ring weights w_{t,p} (p < h + t) are computed once per CTA, spread over warps;
 *   4. rows: per group of 8/TC rows, all (row, token) dot products of S0 and the ring part
 *      (lane i adds u_i[row] w_{t,i}) in 16 partial sums per lane, reduced by one
 *      reduce-scatter butterfly (16 shuffles) and gathered back (16 shuffles); then the
 *      in-window recurrence per row; or the end fold S_n and o = S_n q.
 * Packed decode runs the replay decode path with an empty ring and an end fold ("end fold
 * with h = 0"), so replay at L = 1 equals packed bit for bit. FMAs explicit (__fmaf_rn).
 *
 * Races: GDN ring_k of a key head is shared by its group's value heads; the group forms a
 * thread-block cluster and, on steps with a start fold (which overwrites positions 0..T-1),
 * passes a cluster barrier between reading committed entries and writing new ones. KDA: one
 * CTA holds a whole head.
 */
#include "cuda_kernels.cuh"

#define FNT 512
#define FNW 16
#define FK 128
#define FLMAX (RSSM_MAX_RING_LEN + 8)
#define FULLM 0xffffffffu

/* ---- small helpers ------------------------------------------------------------------------- */

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
                v[i] = keep + __shfl_xor_sync(FULLM, send, M);
            }
            RS<H, KEEP, M / 2>::run(v, lane);
        } else {
#pragma unroll
            for (int i = 0; i < N; i++)
                v[i] = v[i] + __shfl_xor_sync(FULLM, v[i], M);
            RS<N, KEEP, M / 2>::run(v, lane);
        }
    }
};

/* 4 consecutive elements at element offset off (16-byte aligned for f32, 8 for bf16) */
__device__ __forceinline__ void ld4(const void *p, int bf, int64_t off, float *x)
{
    if (!bf) {
        const float4 v = *((const float4 *)((const float *)p + off));
        x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
    } else {
        const uint2 v = *((const uint2 *)((const uint16_t *)p + off));
        x[0] = __uint_as_float(v.x << 16), x[1] = __uint_as_float(v.x & 0xffff0000u);
        x[2] = __uint_as_float(v.y << 16), x[3] = __uint_as_float(v.y & 0xffff0000u);
    }
}
__device__ __forceinline__ void ld4g(const void *p, int bf, int64_t off, float *x)
{
    if (!bf) {
        const float4 v = __ldg((const float4 *)((const float *)p + off));
        x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
    } else {
        const uint2 v = __ldg((const uint2 *)((const uint16_t *)p + off));
        x[0] = __uint_as_float(v.x << 16), x[1] = __uint_as_float(v.x & 0xffff0000u);
        x[2] = __uint_as_float(v.y << 16), x[3] = __uint_as_float(v.y & 0xffff0000u);
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
/* 8 consecutive elements (16-byte aligned offsets) */
__device__ __forceinline__ void ld8(const void *p, int bf, int64_t off, float *x)
{
    if (!bf) {
        const float4 a = *((const float4 *)((const float *)p + off)),
                     c = *((const float4 *)((const float *)p + off) + 1);
        x[0] = a.x, x[1] = a.y, x[2] = a.z, x[3] = a.w, x[4] = c.x, x[5] = c.y, x[6] = c.z, x[7] = c.w;
    } else {
        const uint4 v = *((const uint4 *)((const uint16_t *)p + off));
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int e = 0; e < 4; e++)
            x[2 * e] = __uint_as_float(w[e] << 16), x[2 * e + 1] = __uint_as_float(w[e] & 0xffff0000u);
    }
}

/* ---- the kernel ---------------------------------------------------------------------------- */

struct fast_smem {
    float kn[8][FK], qn[8][FK], xk[8][FK], xq[8][FK], ks[8][FK], G[8][FK];
    float wk[8][FLMAX], wq[8][FLMAX];
    float beta[8], kq[8], gmin[8];
};

template <bool KDA, bool SBF, int MODE, int TC> __global__ void __launch_bounds__(FNT, 2) fast_kernel(const kargs A)
{
    __shared__ fast_smem sm;
    constexpr int RJ = 8 / TC; /* rows per group */
    const rssm_layer &l = A.l;
    const int L = l.ring_len, HV = l.num_v_heads, group = A.group;
    const int rbf = l.ring_dtype == RSSM_DTYPE_BF16, iobf = l.io_dtype == RSSM_DTYPE_BF16;
    const int tid = threadIdx.x, w = tid >> 5, lane = tid & 31;
    const int b = blockIdx.y, hv = blockIdx.x, kh = hv / group;
    const int T = MODE == MODE_VERIFY ? A.io.tokens : 1;
    const int c4 = lane * 4;

    int s = A.io.slot[b], d;
    bool bad = false;
    if (s < -1 || s >= A.st.num_slots) bad = true, s = -1;
    d = s;
    if (MODE == MODE_PACKED && s >= 0 && A.io.write_slot) {
        d = A.io.write_slot[b];
        if (d < -1 || d >= A.st.num_slots) bad = true, d = -1;
        if (d < 0) s = -1;
    }
    int c = 0, base = 0, h = 0;
    if (MODE != MODE_PACKED && s >= 0) {
        c = A.st.cursor[s];
        base = KDA ? A.st.ring_base[(int64_t)s * HV + hv] : 0;
        h = c - base;
        if (c < 0 || c > L || base < 0 || h < 0) bad = true, s = -1;
    }
    if (bad && hv == 0 && tid == 0) atomicAdd(A.err, 1);
    if (s < 0) {
        for (int i = tid; i < T * FK; i += FNT)
            st_dt(A.io.o, l.io_dtype, rssm_o_off(&l, (int64_t)b * T + i / FK, hv) + i % FK, 0.0f);
        return;
    }

    /* S0: the warp's 8 rows, issued first */
    const int64_t ck0 = rssm_ckpt_off(&l, s, hv) + (int64_t)(w * 8) * FK + c4;
    float S[8][4];
    if (!SBF) {
        float4 raw[8];
#pragma unroll
        for (int r = 0; r < 8; r++)
            raw[r] = __ldcs((const float4 *)((const float *)A.st.checkpoint + ck0 + r * FK));
#pragma unroll
        for (int r = 0; r < 8; r++)
            S[r][0] = raw[r].x, S[r][1] = raw[r].y, S[r][2] = raw[r].z, S[r][3] = raw[r].w;
    } else {
        uint2 raw[8];
#pragma unroll
        for (int r = 0; r < 8; r++)
            raw[r] = __ldcs((const uint2 *)((const uint16_t *)A.st.checkpoint + ck0 + r * FK));
#pragma unroll
        for (int r = 0; r < 8; r++) {
            S[r][0] = __uint_as_float(raw[r].x << 16), S[r][1] = __uint_as_float(raw[r].x & 0xffff0000u);
            S[r][2] = __uint_as_float(raw[r].y << 16), S[r][3] = __uint_as_float(raw[r].y & 0xffff0000u);
        }
    }
    /* v of (token lane/8, row 8w + lane%8), for the row phase */
    float vreg = 0.0f;
    if (lane < 8 * T)
        vreg = ld_dt(A.io.v, l.io_dtype,
                     ((int64_t)b * T + (lane >> 3)) * A.io.v_stride + (int64_t)hv * FK + w * 8 + (lane & 7));
    /* ring u of entry `lane` for the warp's rows (committed entries, read before any write) */
    const int64_t ru0 = MODE == MODE_PACKED ? 0 : rssm_ring_u_off(&l, s, hv, 0) + w * 8;
    float ru[8];
#pragma unroll
    for (int r = 0; r < 8; r++)
        ru[r] = 0.0f;
    if (MODE != MODE_PACKED && lane < h) ld8(A.st.ring_u, rbf, ru0 + (int64_t)lane * FK, ru);

    const int gk = KDA ? FK : 1;
    const float *ringg = MODE == MODE_PACKED ? nullptr : (const float *)A.st.ring_g + rssm_ring_g_off(&l, s, hv, 0, gk);
    const int64_t rk0 = MODE == MODE_PACKED ? 0 : rssm_ring_k_off(&l, s, hv, group, 0);

    /* per-token gate of the lane's channels (GDN: the scalar, in every element) */
    auto gate4 = [&](int t, float *g) {
        const int64_t bt = (int64_t)b * T + t;
        if (KDA) {
            if (A.io.g) {
                const float4 v = __ldg((const float4 *)(A.io.g + (bt * HV + hv) * FK + c4));
                g[0] = v.x, g[1] = v.y, g[2] = v.z, g[3] = v.w;
            } else {
#pragma unroll
                for (int e = 0; e < 4; e++)
                    g[e] = gate_of(A, bt, hv, FK, c4 + e);
            }
        } else {
            const float x = gate_of(A, bt, hv, 1, 0);
            g[0] = g[1] = g[2] = g[3] = x;
        }
    };

    /* ---- 1. fold decision ---- */
    const int forced = A.io.fold ? A.io.fold[b] != 0 : 0;
    int uniform = 0, early = 0, c0 = c;
    if (MODE != MODE_PACKED) {
        uniform = rssm_start_fold(c, T, L, MODE == MODE_VERIFY && forced);
        c0 = uniform ? 0 : c;
        if (KDA && MODE == MODE_VERIFY && !uniform && h > 0) {
            float W[4], g[4];
#pragma unroll
            for (int e = 0; e < 4; e++)
                W[e] = ringg[(h - 1) * FK + c4 + e];
            for (int t = 0; t < T; t++) {
                gate4(t, g);
#pragma unroll
                for (int e = 0; e < 4; e++)
                    W[e] = W[e] + g[e];
            }
            const float m = warp_min(fminf(fminf(W[0], W[1]), fminf(W[2], W[3])));
            early = m < -l.kda_fold_threshold;
        }
    }
    const bool sfold = uniform || early;
    int new_base = base;

    /* fold of the h committed entries into registers at cumulative gate Gn (per channel):
     * GDN S e^{Gn} + sum_i u_i k_i e^{Gn-G_i}; KDA (S + sum_i u_i k~_i) e^{Gn}. Returns in S. */
    auto fold_ring = [&](const float *Gn) {
        float eg[4];
#pragma unroll
        for (int e = 0; e < 4; e++)
            eg[e] = expf(Gn[e]);
        if (!KDA) {
#pragma unroll
            for (int r = 0; r < 8; r++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    S[r][e] = S[r][e] * eg[0];
        }
        for (int i = 0; i < h; i++) {
            float u8[8], k4[4];
            ld8(A.st.ring_u, rbf, ru0 + (int64_t)i * FK, u8);
            ld4(A.st.ring_k, rbf, rk0 + (int64_t)i * FK + c4, k4);
            if (!KDA) {
                const float f = expf(Gn[0] - ringg[i]);
#pragma unroll
                for (int e = 0; e < 4; e++)
                    k4[e] = k4[e] * f;
            }
#pragma unroll
            for (int r = 0; r < 8; r++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    S[r][e] = __fmaf_rn(u8[r], k4[e], S[r][e]);
        }
        if (KDA) {
#pragma unroll
            for (int r = 0; r < 8; r++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    S[r][e] = S[r][e] * eg[e];
        }
    };

    if (sfold) {
        if (h > 0) {
            float Gc[4];
#pragma unroll
            for (int e = 0; e < 4; e++)
                Gc[e] = KDA ? ringg[(h - 1) * FK + c4 + e] : ringg[h - 1];
            fold_ring(Gc);
#pragma unroll
            for (int r = 0; r < 8; r++) {
                st4(A.st.checkpoint, SBF, ck0 + r * FK, S[r]);
                if (SBF)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        S[r][e] = round_dt(RSSM_DTYPE_BF16, S[r][e]);
            }
        }
        h = 0;
        new_base = c0;
    }

    /* ---- 2. token preparation: warp t < T ---- */
    if (w < T) {
        const int t = w;
        const int64_t bt = (int64_t)b * T + t;
        float kr[4], qr[4];
        ld4g(A.io.k, iobf, bt * A.io.k_stride + (int64_t)kh * FK + c4, kr);
        ld4g(A.io.q, iobf, bt * A.io.q_stride + (int64_t)kh * FK + c4, qr);
        float G[4], g[4];
#pragma unroll
        for (int e = 0; e < 4; e++)
            G[e] = h > 0 ? (KDA ? ringg[(h - 1) * FK + c4 + e] : ringg[h - 1]) : 0.0f;
        for (int tt = 0; tt <= t; tt++) {
            gate4(tt, g);
#pragma unroll
            for (int e = 0; e < 4; e++)
                G[e] = G[e] + g[e];
        }
        float sk = 1.0f, sq = 1.0f;
        if (l.qk_l2norm) {
            float nk = kr[0] * kr[0], nq = qr[0] * qr[0];
#pragma unroll
            for (int e = 1; e < 4; e++)
                nk = __fmaf_rn(kr[e], kr[e], nk), nq = __fmaf_rn(qr[e], qr[e], nq);
            nk = warp_sum(nk), nq = warp_sum(nq);
            sk = 1.0f / sqrtf(nk + (float)RSSM_L2NORM_EPS);
            sq = 1.0f / sqrtf(nq + (float)RSSM_L2NORM_EPS);
        }
        float kq = 0.0f, gm = 3.0e38f;
        const float eg0 = KDA ? 0.0f : expf(G[0]);
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const float kv = kr[e] * sk, qv = qr[e] * sq * l.scale;
            const float eg = KDA ? expf(G[e]) : eg0;
            sm.kn[t][c4 + e] = kv;
            sm.qn[t][c4 + e] = qv;
            sm.xk[t][c4 + e] = eg * kv;
            sm.xq[t][c4 + e] = eg * qv;
            sm.ks[t][c4 + e] = round_dt(l.ring_dtype, KDA ? kv * expf(-G[e]) : kv);
            sm.G[t][c4 + e] = G[e];
            kq = __fmaf_rn(kv, qv, kq);
            gm = fminf(gm, G[e]);
        }
        kq = warp_sum(kq);
        gm = warp_min(gm);
        if (lane == 0) {
            sm.kq[t] = kq;
            sm.gmin[t] = gm;
            sm.beta[t] = beta_of(A, bt, hv);
        }
    }
    /* a start fold overwrote nothing yet; new entries are written after this barrier */
    if (!KDA && MODE != MODE_PACKED && sfold && A.cs > 1)
        cluster_sync_all();
    else
        __syncthreads();

    int end = 0;
    if (MODE == MODE_PACKED)
        end = 1;
    else if (MODE == MODE_REPLAY) {
        end = (c0 + 1 == L || forced) ? 1 : 0;
        if (!end && KDA && sm.gmin[0] < -l.kda_fold_threshold) end = 2;
    }

    /* ---- 3. ring weights w_{t,p}, p < h + t; new entries' k and G (not on an end fold) ---- */
    {
        const int P = T * h + T * (T - 1) / 2;
        for (int pi = w; pi < P; pi += FNW) {
            int t = 0, p = pi;
            while (p >= h + t)
                p -= h + t, t++;
            float k4[4];
            if (p < h)
                ld4(A.st.ring_k, rbf, rk0 + (int64_t)p * FK + c4, k4);
            else
#pragma unroll
                for (int e = 0; e < 4; e++)
                    k4[e] = sm.ks[p - h][c4 + e];
            const float *xa = KDA ? sm.xk[t] : sm.kn[t], *xb = KDA ? sm.xq[t] : sm.qn[t];
            float dk = 0.0f, dq = 0.0f;
#pragma unroll
            for (int e = 0; e < 4; e++)
                dk = __fmaf_rn(k4[e], xa[c4 + e], dk), dq = __fmaf_rn(k4[e], xb[c4 + e], dq);
            dk = warp_sum(dk), dq = warp_sum(dq);
            if (lane == 0) {
                float f = 1.0f;
                if (!KDA) f = expf(sm.G[t][0] - (p < h ? ringg[p] : sm.G[p - h][0]));
                sm.wk[t][p] = dk * f;
                sm.wq[t][p] = dq * f;
            }
        }
        if (!end && w >= FNW - T) { /* the last warps write the new entries' k and G */
            const int t = FNW - 1 - w;
            const bool wk_ = KDA || hv % group == 0;
            if (wk_) st4(A.st.ring_k, rbf, rk0 + (int64_t)(h + t) * FK + c4, &sm.ks[t][c4]);
            float *rg = (float *)A.st.ring_g + rssm_ring_g_off(&l, s, hv, h + t, gk);
            if (KDA)
                *((float4 *)(rg + c4)) = *((const float4 *)&sm.G[t][c4]);
            else if (lane == 0)
                rg[0] = sm.G[t][0];
        }
        __syncthreads();
    }

    /* ---- 4. rows ---- */
    const int row0 = w * 8;
    float myo = 0.0f, myu = 0.0f;
    if (end) {
        /* decode end fold (T = 1): u for the 8 rows, then S_n and o = S_n q */
        float v[16];
#pragma unroll
        for (int r = 0; r < 8; r++) {
            float a = 0.0f, q = 0.0f;
#pragma unroll
            for (int e = 0; e < 4; e++)
                a = __fmaf_rn(S[r][e], sm.xk[0][c4 + e], a), q = __fmaf_rn(S[r][e], sm.xq[0][c4 + e], q);
            v[2 * r] = a, v[2 * r + 1] = q;
        }
        for (int i0 = 0; i0 < h; i0 += 32) {
            const int i = i0 + lane;
            float uu[8];
            if (i0 == 0) {
#pragma unroll
                for (int r = 0; r < 8; r++)
                    uu[r] = ru[r];
            } else {
#pragma unroll
                for (int r = 0; r < 8; r++)
                    uu[r] = 0.0f;
                if (i < h) ld8(A.st.ring_u, rbf, ru0 + (int64_t)i * FK, uu);
            }
            if (i < h) {
                const float a = sm.wk[0][i], q = sm.wq[0][i];
#pragma unroll
                for (int r = 0; r < 8; r++)
                    v[2 * r] = __fmaf_rn(uu[r], a, v[2 * r]), v[2 * r + 1] = __fmaf_rn(uu[r], q, v[2 * r + 1]);
            }
        }
        RS<16, 1, 16>::run(v, lane);
        const float beta = sm.beta[0];
        float u[8];
#pragma unroll
        for (int r = 0; r < 8; r++) {
            const float dd = __shfl_sync(FULLM, v[0], 4 * r);
            const float vr = __shfl_sync(FULLM, vreg, r);
            u[r] = beta * (vr - dd);
        }
        float Gn[4];
#pragma unroll
        for (int e = 0; e < 4; e++)
            Gn[e] = sm.G[0][KDA ? c4 + e : 0];
        fold_ring(Gn);
        float o[8], kn[4], qn[4];
#pragma unroll
        for (int e = 0; e < 4; e++)
            kn[e] = sm.kn[0][c4 + e], qn[e] = sm.qn[0][c4 + e];
#pragma unroll
        for (int r = 0; r < 8; r++) {
            float oo = 0.0f;
#pragma unroll
            for (int e = 0; e < 4; e++) {
                S[r][e] = __fmaf_rn(u[r], kn[e], S[r][e]);
                oo = __fmaf_rn(S[r][e], qn[e], oo);
            }
            o[r] = oo;
        }
        RS<8, 1, 16>::run(o, lane);
        if ((lane & 3) == 0) st_dt(A.io.o, l.io_dtype, rssm_o_off(&l, b, hv) + row0 + (lane >> 2), o[0]);
        const int64_t cw =
            (MODE == MODE_PACKED ? rssm_ckpt_off(&l, d, hv) : rssm_ckpt_off(&l, s, hv)) + (int64_t)row0 * FK + c4;
        if (!SBF) {
#pragma unroll
            for (int r = 0; r < 8; r++)
                __stcs((float4 *)((float *)A.st.checkpoint + cw + r * FK),
                       make_float4(S[r][0], S[r][1], S[r][2], S[r][3]));
        } else {
#pragma unroll
            for (int r = 0; r < 8; r++)
                st4(A.st.checkpoint, 1, cw + r * FK, S[r]);
        }
        if (MODE == MODE_REPLAY) new_base = end == 2 ? c0 + 1 : 0;
    } else {
        float beta[TC], kq[TC];
#pragma unroll
        for (int t = 0; t < TC; t++)
            beta[t] = t < T ? sm.beta[t] : 0.0f, kq[t] = t < T ? sm.kq[t] : 0.0f;
#pragma unroll
        for (int g0 = 0; g0 < 8; g0 += RJ) {
            float v[16]; /* (rr * TC + t) * 2 + type */
#pragma unroll
            for (int rr = 0; rr < RJ; rr++)
#pragma unroll
                for (int t = 0; t < TC; t++) {
                    float a = 0.0f, q = 0.0f;
                    if (t < T) {
#pragma unroll
                        for (int e = 0; e < 4; e++)
                            a = __fmaf_rn(S[g0 + rr][e], sm.xk[t][c4 + e], a),
                            q = __fmaf_rn(S[g0 + rr][e], sm.xq[t][c4 + e], q);
                    }
                    v[(rr * TC + t) * 2] = a, v[(rr * TC + t) * 2 + 1] = q;
                }
            for (int i0 = 0; i0 < h; i0 += 32) {
                const int i = i0 + lane;
                float uu[8];
                if (i0 == 0) {
#pragma unroll
                    for (int r = 0; r < 8; r++)
                        uu[r] = ru[r];
                } else {
#pragma unroll
                    for (int r = 0; r < 8; r++)
                        uu[r] = 0.0f;
                    if (i < h) ld8(A.st.ring_u, rbf, ru0 + (int64_t)i * FK, uu);
                }
                if (i < h) {
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
            }
            RS<16, 1, 16>::run(v, lane);
#pragma unroll
            for (int rr = 0; rr < RJ; rr++) {
                float uw[TC];
#pragma unroll
                for (int t = 0; t < TC; t++) {
                    uw[t] = 0.0f;
                    const float dk = __shfl_sync(FULLM, v[0], ((rr * TC + t) * 2) * 2);
                    const float dq = __shfl_sync(FULLM, v[0], ((rr * TC + t) * 2 + 1) * 2);
                    const float vr = __shfl_sync(FULLM, vreg, t * 8 + g0 + rr);
                    if (t >= T) continue;
                    float dd = dk;
#pragma unroll
                    for (int s2 = 0; s2 < t; s2++)
                        dd = __fmaf_rn(uw[s2], sm.wk[t][h + s2], dd);
                    const float u = beta[t] * (vr - dd);
                    float o = dq;
#pragma unroll
                    for (int s2 = 0; s2 < t; s2++)
                        o = __fmaf_rn(uw[s2], sm.wq[t][h + s2], o);
                    o = __fmaf_rn(u, kq[t], o);
                    uw[t] = round_dt(l.ring_dtype, u);
                    if (lane == t * 8 + g0 + rr) myo = o, myu = uw[t];
                }
            }
        }
        if (lane < 8 * T) {
            const int t = lane >> 3, j = row0 + (lane & 7);
            st_dt(A.io.o, l.io_dtype, rssm_o_off(&l, (int64_t)b * T + t, hv) + j, myo);
            st_dt(A.st.ring_u, l.ring_dtype, rssm_ring_u_off(&l, s, hv, h + t) + j, myu);
        }
    }
    if (KDA && MODE != MODE_PACKED && tid == 0 && new_base != base) A.st.ring_base[(int64_t)s * HV + hv] = new_base;
}

/* ---- dispatch ---------------------------------------------------------------------------- */

template <bool KDA, bool SBF> static void *fast_of(int mode, int tc)
{
    if (mode == MODE_PACKED) return (void *)fast_kernel<KDA, SBF, MODE_PACKED, 1>;
    if (mode == MODE_REPLAY) return (void *)fast_kernel<KDA, SBF, MODE_REPLAY, 1>;
    switch (tc) {
    case 1:
        return (void *)fast_kernel<KDA, SBF, MODE_VERIFY, 1>;
    case 2:
        return (void *)fast_kernel<KDA, SBF, MODE_VERIFY, 2>;
    default:
        return (void *)fast_kernel<KDA, SBF, MODE_VERIFY, 4>;
    }
}

/* 1 when a step can run on the fast kernels (same answer for packed and replay decode, so
 * that L = 1 replay stays bit-identical to packed). */
int rssm_cuda_fast_ok(const kargs *A)
{
    const rssm_layer *l = &A->l;
    if (l->head_k_dim != FK || l->head_v_dim != FK || A->group > 8) return 0;
    if (A->mode != MODE_PACKED && A->mode != MODE_REPLAY && A->mode != MODE_VERIFY) return 0;
    const int T = A->io.tokens;
    /* verify T = 5..8 (TC = 8) is not finished: lanes hold v, o and u of 4 tokens only, so
     * tokens 4..7 were lost (H200 check failed); those windows stay on the general kernel */
    if (A->mode == MODE_VERIFY ? (T < 1 || T > 4) : T != 1) return 0;
    if (A->io.q_stride % 4 || A->io.k_stride % 4) return 0;
    return 1;
}

cudaError_t rssm_cuda_fast_launch(kargs A, int batch, cudaStream_t stream)
{
    const bool kda = A.l.gate == RSSM_GATE_KDA, sbf = A.l.state_dtype == RSSM_DTYPE_BF16;
    const int T = A.io.tokens;
    const int tc = A.mode != MODE_VERIFY ? 1 : T <= 1 ? 1 : T <= 2 ? 2 : 4;
    A.cs = (!kda && A.mode != MODE_PACKED && A.group > 1) ? A.group : 1;
    A.NS = 1;
    A.defer_k = 0;
    void *fn = kda ? (sbf ? fast_of<true, true>(A.mode, tc) : fast_of<true, false>(A.mode, tc))
                   : (sbf ? fast_of<false, true>(A.mode, tc) : fast_of<false, false>(A.mode, tc));
    cudaLaunchConfig_t lc;
    memset(&lc, 0, sizeof lc);
    lc.gridDim = dim3((unsigned)A.l.num_v_heads, (unsigned)batch, 1);
    lc.blockDim = dim3(FNT, 1, 1);
    lc.dynamicSmemBytes = 0;
    lc.stream = stream;
    cudaLaunchAttribute attr[1];
    if (A.cs > 1) {
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = (unsigned)A.cs;
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        lc.attrs = attr;
        lc.numAttrs = 1;
    }
    void *args[] = {&A};
    return cudaLaunchKernelExC(&lc, fn, args);
}
