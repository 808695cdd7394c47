/*
 * decode_k128.cu — the specialised step kernels for K = V = 128 (packed decode T = 1, replay
 * decode T = 1, verify T <= 8), f32/bf16 state, f32/bf16 ring, f32/bf16 io, GDN and KDA,
 * used by backend.cu wherever they apply (rssm_context_params.cuda_fast = 0 turns them off). Replay at
 * L = 1 equals this file's own packed decode bit for bit (packed runs through the same
 * end-fold routine with h = 0). The launch shape and the CTA's shared-memory layout are in
 * decode_k128.cuh, the phases of a verify window in window_k128.cuh.
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
 * cursor (CHK); where the rules stream packed decode, the streaming kernel makes the same check.
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
#include "k128_trace.cuh"
#include "window_k128.cuh"

namespace rssm_decode_k128
{

/* ---- the step of one CTA, phase by phase ----------------------------------------------------- */
/* The phases take the CTA's coordinates as plain values: packed in a struct (one copy per CTA,
 * passed by reference), they made the compiler emit different code for the same operations
 * (longer schedules, spills in the KDA kernels). */

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
        if (A.io.g) { /* packed (rssm_cuda_decode_k128_ok) */
            load_packed_gates<KDA>(A, bt, HV, hv, c4, ga, braw);
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
        if (lane == 0) sm.ww.beta[t] = A.io.g ? braw : rssm_sigmoid_f32(braw);
    }
    if (!ONE) { /* k q of the token (ONE: warp 0 forms it after the barrier) */
        float kq = 0.0f;
#pragma unroll
        for (int e = 0; e < 4; e++)
            kq = __fmaf_rn(kv[e], qv[e], kq);
        kq = warp_sum(kq);
        if (lane == 0) sm.ww.kq[t] = kq;
    }
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
        if (lane == 0) sm.ww.kq[0] = kq;
    }
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
        v, S, [&](int e) { return sm.xk[0][c4 + e]; }, sU, rbf, h, sm.ww.wk[0], lane, row0);
    RS<8, 1, 16>::run(v, lane);
    const float myu = sm.ww.beta[0] * (__shfl_sync(FULL_MASK, vr, lane >> 2) - v[0]); /* u of row lane / 4 */
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
    if (A.pdl == 2) asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
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
        if (MODE == MODE_VERIFY && (KDA || (!uniform && h > 0)))
            early = window_early_fold<KDA>(A, KDA ? Gl : lG() + h - 1, h, uniform, T, w, lane, sm.gt,
                                           [] { __syncthreads(); });
    }
    const bool sfold = uniform || early;
    int new_base = -1; /* KDA: the head's ring base after the step's folds (-1: unchanged) */

    /* fold of the h committed entries (shared memory) into S (k128_common.cuh) */
    auto fold_ring = [&](const float(&Gs)[4]) { fold_ring_rows<KDA>(S, Gs, h, lK(), lU(), lG(), rbf, c4, row0); };

    if (MODE != MODE_PACKED && sfold) {
        if (h > 0) {
            if constexpr (MMA) {
                fold_ring_rows_mma<KDA>(S, KDA ? Gl : lG() + h - 1, h, lK(), lU(), lG(), rbf, sch, srow, sXd, tid, nt,
                                        [] { __syncthreads(); });
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
    } else {
        gates_window<KDA, MMA, TC>(A, sXd, T, w, NW, lane, h, Gl, lG());
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
            sm.ww.wk[0], sm.ww.wq[0], lK(), rbf, lG(), G1, h, w, NW, c4, lane, [&](int e) { return wa4[e]; },
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
        window_ring_weights<KDA>(lK(), lG(), rbf, T, h, w, NW, lane, KDA ? sm.xk : sm.kn, KDA ? sm.xq : sm.qn, sm.ks,
                                 sm.G, sm.ww);
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
    if (A.pdl == 3) asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
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
        rows_window_mma<TC>(A, S, sXd, lU(), rbf, h, wpos, T, lane, srow, sch, b, s, HV, hv, L, vb, iobf, sm.ww);
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
 * launch (not before: its own prefetches then overlap this grid's work, not an earlier one's);
 * with A.pdl 2 or 3 later, after the token's preparation or before the rows' arithmetic, where
 * the rules found that faster for packed decode (launch_rules.h, pdl-rules-2026-12-05/). */
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
    if (A.pdl == 1) asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
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
