/*
 * verify_pipeline.cu — verify windows of 3-4 tokens (K = V = 128, V-first state) as a persistent,
 * warp-specialised pipeline: replay_pipeline.cu's scheme (one CTA per SM walks its share of the
 * heads behind NS stages of shared memory) for the windows the per-head kernel (decode_k128.cu,
 * TC = 4) runs on the FP64 tensor cores.
 *
 * Why: at T = 4, B = 128 a per-head CTA spent 4.2 us on its two dependent round trips (slot,
 * then ring and state rows) and 5.8 us on the window's chains (gates 1.25, ring weights 1.66,
 * rows 2.85), two CTAs to an SM (bench/results/README.md, Verify windows). Here the producers
 * take the round trips and the chains that need no state (token preparation, the fold tests,
 * the gates, the ring weights), and the consumers hold the state: its start fold and the rows.
 * So far it is slower than the per-head kernel (GDN B = 128 209.1 against 160.1 us): its 16
 * consumer warps hold one head at a time, where the per-head kernel overlaps two per SM, and the
 * producers need about 5 us per item (bench/results/verify-pipe-2026-12-04/). Only
 * rssm_context_params.cuda_pipeline = 1 chooses it.
 *
 * Work: a unit is (row b, key head kh), its value heads in order (item j: value head j % group
 * of unit j / group), dealt to the CTAs round robin (position p to CTA p % gridDim.x, unit
 * (p / H, p % H)). Item j goes to stage j % NS.
 *   producers (VNP = 4 warps, every item by all of them, in order): slot, cursor and ring base of
 *     the next 32 items at once (one lane each); warp t fetches token t's k and q rows by cp.async
 *     one item ahead; once the stage is free, the copies of the h live ring entries (k, u, G as
 *     replay_pipeline.cu; counted on `ring`), then of the checkpoint (counted on `full`), and v;
 *     then, as the per-head kernel does (prepare_token, window_tests, clamp_window_gates,
 *     gates_window, window_ring_weights), operation for operation: warp t normalises k_t, q_t and
 *     evaluates gate, beta and k q of token t; the start fold decision (cursor at L, forced, or
 *     the window's own tests, which read G_{h-1} from the copied ring: the producers wait for
 *     `ring`); warp t's token G, x_k, x_q (as f64, the rows' B operand) and key as stored; the
 *     ring weights w_{t,p} over the entries the rows read (none after a start fold) and the
 *     window's own (window_ring_weights over the 4 warps). Their barrier (2) lies between the
 *     phases; every producer thread arrives on `full` after its own stores.
 *   consumers (16 warps, the per-head MMA layout: lane l owns row 8 w + l / 4 at channels
 *     16 j + 4 (l % 4) + e): the state from the stage into registers; the start
 *     fold on the FP64 tensor cores (fold_ring_rows_mma, its barriers the consumers' own) and the
 *     checkpoint store; the window's new entries (k, G); the rows (rows_window_mma): o and u of
 *     every (row, token); the ring base; then the stage is released (empty).
 * Same functions as the per-head kernel where the state is involved, the same operations in the
 * same order elsewhere: both kernels give the same bits (tests/test_cuda_pipeline.c).
 *
 * Races: as replay_pipeline.cu's. GDN ring_k of a key head is shared by the group's value heads;
 * the window's keys go to positions c0 .. c0 + T - 1, which no head reads as live unless the
 * row starts with a fold (c0 = 0). So the group's last value head writes them: its item comes
 * after the group's other items in the same CTA, whose ring copies have landed. Every item is a
 * whole group's head, so no other CTA reads that key head's ring. A stage is overwritten only
 * after every consumer thread arrived on its empty barrier, and read by the consumers only after
 * the producer's lanes arrived on `full`, after the producer saw `ring` complete.
 */
#include <stdint.h>
#include <stdio.h>

#include "window_k128.cuh"
#include "pipe_sync.cuh"

namespace rssm_vpipe
{
using namespace rssm_pipe;

/* Diagnostic builds (RSSM_PIPE_TRACE): per item, from %globaltimer, producer marks 0 begun, 1 state
 * copy issued, 2 ring copy issued, 3 tokens prepared, 4 ring landed, 5 handed over; consumer marks 6
 * landed, 7 done; for the first VTR_CTAS CTAs and VTR_ITEMS items of the last launch. */
#ifdef RSSM_PIPE_TRACE
#define VTR_CTAS 132
#define VTR_ITEMS 64
#define VTR_MARKS 8
__device__ unsigned long long g_vpipe_trace[VTR_CTAS][1 + VTR_MARKS * VTR_ITEMS];
#define VTR_MARK(j, k)                                                                                                 \
    do {                                                                                                               \
        if (blockIdx.x < VTR_CTAS && (j) < VTR_ITEMS)                                                                  \
            g_vpipe_trace[blockIdx.x][1 + VTR_MARKS * (j) + (k)] = trace_now();                                        \
    } while (0)
#define VTR_ENTRY()                                                                                                    \
    do {                                                                                                               \
        if (blockIdx.x < VTR_CTAS) g_vpipe_trace[blockIdx.x][0] = trace_now();                                         \
    } while (0)
#else
#define VTR_MARK(j, k) ((void)0)
#define VTR_ENTRY() ((void)0)
#endif
using namespace rssm_decode_k128;

#define VNP 4                  /* producer warps: every item by all of them, token t by warp t */
#define VNT ((PNC + VNP) * 32) /* threads per CTA */
#define VT 4                   /* token slots of a window (TC = 4: windows of 3 or 4 tokens) */
#define VNS_MAX 4              /* stages */
static_assert(PNC == K128_NW, "the consumers hold a head as the per-head kernel's 16 warps do");
static_assert(VNP == VT, "producer warp t prepares token t");

/* waits until at most N of this thread's cp.async groups are pending */
template <int N> __device__ __forceinline__ void cp_wait_group()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

enum { VITEM_SKIP = 1, VITEM_SFOLD = 2 }; /* padding or bad row: zero output; the window starts with a fold */
/* what the producer hands over with an item (besides the copied state and ring) */
struct __align__(128) vstage_head
{
    double xd[8 * K128_XDS];      /* x_k, x_q of token t in rows 2t, 2t + 1 (f64): rows_window_mma's B */
    window_weights ww;            /* ring weights, beta, k q */
    float ks[VT][PK], Gn[VT][PK]; /* the window's entries: keys as stored, G (GDN: Gn[t][0]) */
    float kn[VT][PK], qn[VT][PK]; /* normalised k, normalised scaled q (KDA, then x_k, x_q) */
    float gt[VT][PK];             /* the gates */
    uint32_t v[VT][PK];           /* v as read: row t from byte 4 PK t, io dtype */
    float G[PK];                  /* ring G: GDN G_base.. from position base & ~3, KDA G_{h-1} */
    int s, b, hv, c0, base, h, flags;
};
/* the CTA's fixed part: barriers, the start fold's key fragments, each producer's k and q rows of
 * its current window (io dtype) */
struct vcta_head {
    uint64_t full[VNS_MAX], empty[VNS_MAX], ring[VNS_MAX], pad_[VNS_MAX];
    double kf[K128_FOLD_ROUND * 16 * 8];
    unsigned char tok[VT][2][2 * PK * 4]; /* token t's k and q rows, item j in buffer j % 2 */
};
static_assert(sizeof(vcta_head) % 128 == 0, "stages stay 128-byte aligned");

static __host__ __device__ size_t vring_bytes(int L, bool rbf) { return (size_t)L * PK * (rbf ? 2 : 4); }
/* a stage: head | ring k [L][K] | ring u [L][V] (ring dtype) | state [V][K] (state dtype) */
static __host__ __device__ size_t vstage_bytes(int L, bool rbf, bool sbf)
{
    return sizeof(vstage_head) + 2 * vring_bytes(L, rbf) + (size_t)PK * PK * (sbf ? 2 : 4);
}

template <bool KDA, bool SBF, bool RBF, bool IOBF>
__global__ void __launch_bounds__(VNT, 1) verify_pipe_kernel(const kargs A)
{
    extern __shared__ __align__(128) unsigned char dsm[];
    const rssm_layer &l = A.l;
    const int L = l.ring_len, HV = l.num_v_heads, H = l.num_k_heads, group = A.group, NS = A.NS, T = A.io.tokens;
    constexpr int rsz = RBF ? 2 : 4, ssz = SBF ? 2 : 4;
    const size_t rb = vring_bytes(L, RBF), sb = vstage_bytes(L, RBF, SBF);
    vcta_head &ch = *reinterpret_cast<vcta_head *>(dsm);
    auto head_of = [&](int st) { return reinterpret_cast<vstage_head *>(dsm + sizeof(vcta_head) + st * sb); };
    auto ring_k_of = [&](int st) { return (unsigned char *)head_of(st) + sizeof(vstage_head); };
    auto ring_u_of = [&](int st) { return ring_k_of(st) + rb; };
    auto state_of = [&](int st) { return ring_k_of(st) + 2 * rb; };
    const int tid = threadIdx.x, w = tid >> 5, lane = tid & 31, c4 = lane * 4;

    if (tid == 0) {
        VTR_ENTRY();
        for (int st = 0; st < NS; st++) {
            mbar_init(&ch.full[st], VNP * 32);
            mbar_init(&ch.empty[st], PNC * 32);
            mbar_init(&ch.ring[st], 1);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    const int64_t units = (int64_t)A.io.batch * H;
    const int64_t mine = (units - blockIdx.x + gridDim.x - 1) / gridDim.x;
    const int items = (int)(mine * group);
    auto locate = [&](int j, int &b, int &kh, int &hv) {
        const int64_t p = blockIdx.x + (int64_t)(j / group) * gridDim.x;
        b = (int)(p / H), kh = (int)(p - (int64_t)b * H), hv = kh * group + j % group;
    };

    if (w >= PNC) {
        /* ---------------- producers ---------------- */
        /* The VNP producer warps take every item together, in order (so one phase of a stage's
         * barriers at a time): warp pw prepares token pw; the gates of token pw; every pw-th ring
         * weight entry. Between the phases they pass their own barrier (2). */
        const int pw = w - PNC;
        auto psync = []() { asm volatile("bar.sync 2, %0;\n" ::"n"(VNP * 32) : "memory"); };
        constexpr int isz = IOBF ? 2 : 4;
        auto cp_row = [&](unsigned char *dst, const void *src, int64_t off) {
            if (IOBF)
                cp8(dst, (const uint16_t *)src + off);
            else
                cp16(dst, (const float *)src + off);
        };
        /* token pw of item j: k and q rows into this warp's buffer j % 2 (cp.async, one group), its
         * gate inputs into registers */
        float nga[4] = {0.0f, 0.0f, 0.0f, 0.0f}, nbraw = 0.0f;
        auto fetch_token = [&](int j) {
            if (j < items && pw < T) {
                int b, kh, hv;
                locate(j, b, kh, hv);
                const int64_t bt = (int64_t)b * T + pw;
                unsigned char *buf = ch.tok[pw][j & 1];
                cp_row(buf + c4 * isz, A.io.k, bt * A.io.k_stride + kh * PK + c4);
                cp_row(buf + (PK + c4) * isz, A.io.q, bt * A.io.q_stride + kh * PK + c4);
                if (A.io.g) { /* packed (rssm_cuda_vpipe_ok) */
                    load_packed_gates<KDA>(A, bt, HV, hv, c4, nga, nbraw);
                } else {
                    if (KDA)
#pragma unroll
                        for (int e = 0; e < 4; e++)
                            nga[e] = ld_dt(A.io.a, l.io_dtype, bt * A.io.a_stride + hv * PK + c4 + e);
                    else
                        nga[0] = ld_dt(A.io.a, l.io_dtype, bt * A.io.a_stride + hv);
                    nbraw = ld_dt(A.io.b, l.io_dtype, bt * A.io.b_stride + hv);
                }
            }
            cp_commit();
        };
        fetch_token(0);
        int win_s = -1, win_c = 0, win_base = 0;
        for (int j = 0; j < items; j++) {
            if ((j & 31) == 0) { /* slot, cursor and ring base of items j .. j + 31, one lane each */
                const int jl = j + lane;
                win_s = -1, win_c = 0, win_base = 0;
                if (jl < items) {
                    int bl, khl, hvl;
                    locate(jl, bl, khl, hvl);
                    win_s = A.io.slot[bl];
                    if (win_s >= 0 && win_s < A.st.num_slots)
                        win_c = A.st.cursor[win_s], win_base = A.st.ring_base[(int64_t)win_s * HV + hvl];
                }
            }
            const int st = j % NS, n = j / NS;
            int b, kh, hv;
            locate(j, b, kh, hv);
            vstage_head &sh = *head_of(st);
            if (tid == PNC * 32) VTR_MARK(j, 0);
            float ga[4], braw = nbraw, dtb[4] = {0.0f, 0.0f, 0.0f, 0.0f}, alog = 0.0f;
#pragma unroll
            for (int e = 0; e < 4; e++)
                ga[e] = nga[e];
            if (!A.io.g && pw < T) {
                alog = __ldg(A.io.A_log + hv);
                if (KDA)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        dtb[e] = __ldg(A.io.dt_bias + hv * PK + c4 + e);
                else
                    dtb[0] = __ldg(A.io.dt_bias + hv);
            }
            const int forced = A.io.fold ? A.io.fold[b] != 0 : 0;
            const int s = __shfl_sync(FULL_MASK, win_s, j & 31);
            const bool bad_slot = s < -1 || s >= A.st.num_slots, live = !bad_slot && s >= 0;
            const int64_t hd = live ? (int64_t)s * HV + hv : 0;
            const int c = __shfl_sync(FULL_MASK, win_c, j & 31), base = __shfl_sync(FULL_MASK, win_base, j & 31);
            const int h = c - base;
            const bool bad_ring = live && (c < 0 || c > L || base < 0 || h < 0);
            const bool ok = live && !bad_ring, copy_ring = ok && h > 0;
            if ((bad_slot || bad_ring) && hv == 0 && tid == PNC * 32) atomicAdd(A.err, 1);

            /* once the stage is free: its ring (first: it lands before the state), the state, v */
            if (n > 0) mbar_wait(&ch.empty[st], (n - 1) & 1);
            if (tid == PNC * 32) {
                /* KDA entries at positions 0 .. h-1; GDN at p0 = base .. base+h-1, G from p0 & ~3 */
                const int p0 = KDA ? 0 : base, g0 = p0 & ~3;
                const unsigned eb = copy_ring ? (unsigned)(h * PK * rsz) : 0u;
                const unsigned gb = !copy_ring ? 0u : KDA ? PK * 4 : (unsigned)((4 * (p0 + h - g0) + 15) & ~15);
                mbar_arrive_expect_tx(&ch.ring[st], 2 * eb + gb); /* completes at once without entries */
                if (copy_ring) {
                    const int64_t rk0 = ((KDA ? hd : (int64_t)s * H + kh) * L + p0) << 7;
                    const float *gsrc = (const float *)A.st.ring_g + (KDA ? (hd * L + h - 1) << 7 : hd * L + g0);
                    bulk_copy(ring_k_of(st), (const unsigned char *)A.st.ring_k + rk0 * rsz, eb, &ch.ring[st]);
                    bulk_copy(ring_u_of(st), (const unsigned char *)A.st.ring_u + ((hd * L + p0) << 7) * rsz, eb,
                              &ch.ring[st]);
                    bulk_copy(sh.G, gsrc, gb, &ch.ring[st]);
                }
                VTR_MARK(j, 2);
                if (live) {
                    mbar_expect_tx(&ch.full[st], PK * PK * ssz);
                    bulk_copy(state_of(st), (const unsigned char *)A.st.checkpoint + (hd << 14) * ssz, PK * PK * ssz,
                              &ch.full[st]);
                }
                VTR_MARK(j, 1);
            }
            if (pw < T) /* v of token pw (as read) for the consumers */
                cp_row((unsigned char *)sh.v[pw] + c4 * isz, A.io.v,
                       ((int64_t)b * T + pw) * A.io.v_stride + hv * PK + c4);
            cp_commit();
            fetch_token(j + 1); /* the next item's token, in flight while this one is prepared */

            /* token pw (prepare_token's operations): k, q normalised, the gate, beta, k q */
            cp_wait_group<2>(); /* this item's k and q (v and the next token may be in flight) */
            if (pw < T) {
                const int t = pw;
                const unsigned char *buf = ch.tok[pw][j & 1];
                float kr[4], qr[4], kn[4], qn[4], g[4];
                ld4(buf, IOBF, c4, kr), ld4(buf, IOBF, PK + c4, qr);
                normalise_kq(l, kr, qr, kn, qn);
                if (A.io.g) {
                    const float x = KDA ? 0.0f : rssm_gate_floor_f32(ga[0]); /* GDN: the gate floor */
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        g[e] = KDA ? ga[e] : x;
                } else if (KDA) {
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        g[e] = rssm_gate_f32(ga[e], alog, dtb[e], l.has_lower_bound, l.lower_bound);
                } else {
                    const float x =
                        rssm_gate_floor_f32(rssm_gate_f32(ga[0], alog, dtb[0], l.has_lower_bound, l.lower_bound));
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        g[e] = x;
                }
                float d = 0.0f;
#pragma unroll
                for (int e = 0; e < 4; e++)
                    d = __fmaf_rn(kn[e], qn[e], d);
                d = warp_sum(d);
                *(float4 *)&sh.kn[t][c4] = make_float4(kn[0], kn[1], kn[2], kn[3]);
                *(float4 *)&sh.qn[t][c4] = make_float4(qn[0], qn[1], qn[2], qn[3]);
                *(float4 *)&sh.gt[t][c4] = make_float4(g[0], g[1], g[2], g[3]);
                if (lane == 0) sh.ww.beta[t] = A.io.g ? braw : rssm_sigmoid_f32(braw), sh.ww.kq[t] = d;
            }
            if (tid == PNC * 32) VTR_MARK(j, 3);
            psync(); /* the tokens' vectors */

            /* the start fold: the cursor at L or forced (uniform over the row), or the window's tests
             * (window_tests: G_{h-1} from the copied ring), alike in every warp */
            const int uniform = rssm_start_fold(c, T, L, forced);
            if (copy_ring) mbar_wait(&ch.ring[st], n & 1);
            if (tid == PNC * 32) VTR_MARK(j, 4);
            const float *sG = sh.G + (KDA ? 0 : (base & 3)); /* GDN: G of the live entries */
            int early = 0;
            if (ok && (KDA || (!uniform && h > 0)))
                early = window_early_fold<KDA>(A, KDA ? sG : sG + h - 1, h, uniform, T, pw, lane, sh.gt, psync);
            const bool sfold = uniform || early;
            const int hf = sfold || !ok ? 0 : h; /* the live entries the rows read (a bad ring: none) */

            /* gates_window, token pw: G, x_k, x_q (also in f64), the key as stored; KDA keeps x_k, x_q
             * in kn, qn for the ring weights (this lane's own elements) */
            if (pw < T) {
                const int t = pw;
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int ch_ = c4 + e;
                    float G = hf > 0 ? (KDA ? sG[ch_] : sG[hf - 1]) : 0.0f;
                    for (int tt = 0; tt <= t; tt++)
                        G = G + sh.gt[tt][ch_];
                    const float kv = sh.kn[t][ch_], qv = sh.qn[t][ch_], eg = expf(G);
                    const float xk = eg * kv, xq = eg * qv;
                    sh.ks[t][ch_] = round_dt(l.ring_dtype, KDA ? kv * expf(-G) : kv);
                    sh.Gn[t][ch_] = G;
                    sh.xd[2 * t * K128_XDS + ch_] = (double)xk;
                    sh.xd[(2 * t + 1) * K128_XDS + ch_] = (double)xq;
                    if (KDA) sh.kn[t][ch_] = xk, sh.qn[t][ch_] = xq;
                }
            } else {
#pragma unroll
                for (int e = 0; e < 4; e++)
                    sh.xd[2 * pw * K128_XDS + c4 + e] = 0.0, sh.xd[(2 * pw + 1) * K128_XDS + c4 + e] = 0.0;
            }
            psync(); /* every token's vectors */

            /* window_ring_weights over the producer warps: the entries the rows read (none after a start
             * fold) and the window's own; KDA's x_k, x_q are in kn, qn */
            if (ok)
                window_ring_weights<KDA>(ring_k_of(st), sG, RBF, T, hf, pw, VNP, lane, sh.kn, sh.qn, sh.ks, sh.Gn,
                                         sh.ww);
            cp_wait_group<1>(); /* this lane's v (the next token may be in flight) */
            if (tid == PNC * 32) {
                sh.s = s, sh.b = b, sh.hv = hv, sh.c0 = uniform ? 0 : c, sh.base = base, sh.h = h;
                sh.flags = (ok ? 0 : VITEM_SKIP) | (sfold ? VITEM_SFOLD : 0);
            }
            mbar_arrive(&ch.full[st]); /* every producer thread, after its own stores */
            if (tid == PNC * 32) VTR_MARK(j, 5);
        }
        cp_wait_all();
        return;
    }

    /* ---------------- consumers ---------------- */
    const int row0 = w * 8, srow = row0 + (lane >> 2), sch = 4 * (lane & 3);
    int st = 0, ph = 0;
    for (int j = 0; j < items; j++) {
        mbar_wait(&ch.full[st], ph);
        if (tid == 0) VTR_MARK(j, 6);
        const vstage_head &sh = *head_of(st);
        const int s = sh.s, b = sh.b, hv = sh.hv, flags = sh.flags;
        if (flags & VITEM_SKIP) { /* padding or a bad row: zero outputs, nothing else */
            if (lane < 8 * T)
                st_dt(A.io.o, l.io_dtype, ((((int64_t)b * T + (lane >> 3)) * HV + hv) << 7) + row0 + (lane & 7), 0.0f);
            mbar_arrive(&ch.empty[st]);
            if (++st == NS) st = 0, ph ^= 1;
            continue;
        }
        const int h = sh.h, c0 = sh.c0, base = sh.base;
        const bool sfold = flags & VITEM_SFOLD;
        const int64_t hd = (int64_t)s * HV + hv;
        float S[8][4];
        {
            const unsigned char *ss = state_of(st);
#pragma unroll
            for (int i = 0; i < 8; i++)
                ld4(ss, SBF, srow * PK + sch + 16 * i, S[i]);
        }
        const unsigned char *sK = ring_k_of(st), *sU = ring_u_of(st);
        const float *sG = sh.G + (KDA ? 0 : (base & 3));
        if (sfold && h > 0) {
            fold_ring_rows_mma<KDA>(S, KDA ? sG : sG + h - 1, h, sK, sU, sG, RBF, sch, srow, ch.kf, tid, PNC * 32,
                                    [] { consumer_sync(); });
            store_checkpoint_rows<SBF, true>(
                A.st.checkpoint, [&](int r) { return (hd << 14) + srow * PK + sch + r * 16; }, false, S);
        }
        const int hf = sfold ? 0 : h, wpos = KDA ? hf : c0;
        /* the window's entries: k (GDN: by the group's last value head, see Races) and G */
        if (w >= PNC - T) {
            const int t = PNC - 1 - w, kh = hv / group;
            if (KDA || hv == kh * group + group - 1)
                st4(A.st.ring_k, RBF, (((KDA ? hd : (int64_t)s * H + kh) * L + wpos + t) << 7) + c4, &sh.ks[t][c4]);
            float *rg = (float *)A.st.ring_g + (hd * L + wpos + t) * (KDA ? PK : 1);
            if (KDA)
                *(float4 *)(rg + c4) = *(const float4 *)&sh.Gn[t][c4];
            else if (lane == 0)
                rg[0] = sh.Gn[t][0];
        }
        const uint32_t vb = IOBF ? (uint32_t)((const uint16_t *)sh.v[lane & 3])[srow] : sh.v[lane & 3][srow];
        rows_window_mma<VT>(A, S, sh.xd, sU, RBF, hf, wpos, T, lane, srow, sch, b, s, HV, hv, L, vb, IOBF, sh.ww);
        if (sfold && (KDA ? c0 != base : true) && tid == 0) A.st.ring_base[hd] = c0;
        if (tid == 0) VTR_MARK(j, 7);
        mbar_arrive(&ch.empty[st]);
        if (++st == NS) st = 0, ph ^= 1;
    }
}

template <bool KDA, bool SBF> static void *kernel_of(bool rbf, bool iobf)
{
    if (rbf)
        return iobf ? (void *)verify_pipe_kernel<KDA, SBF, true, true>
                    : (void *)verify_pipe_kernel<KDA, SBF, true, false>;
    return iobf ? (void *)verify_pipe_kernel<KDA, SBF, false, true>
                : (void *)verify_pipe_kernel<KDA, SBF, false, false>;
}
static void *kernel_for(bool kda, bool sbf, bool rbf, bool iobf)
{
    return kda ? (sbf ? kernel_of<true, true>(rbf, iobf) : kernel_of<true, false>(rbf, iobf))
               : (sbf ? kernel_of<false, true>(rbf, iobf) : kernel_of<false, false>(rbf, iobf));
}

static int max_smem; /* the device's opt-in shared memory per block (bytes), set by init */

} // namespace rssm_vpipe

/* Writes the last launch's per-item marks to `path` with ".verify.csv" appended (cta, item, marks 0-7 in
 * microseconds from the earliest entry; -1 unmarked; bench/verify_trace.py summarises them), in
 * diagnostic builds; otherwise nothing. */
void rssm_cuda_vpipe_trace_write(const char *path)
{
#ifdef RSSM_PIPE_TRACE
    using namespace rssm_vpipe;
    static unsigned long long t[VTR_CTAS][1 + VTR_MARKS * VTR_ITEMS];
    if (!path || cudaDeviceSynchronize() != cudaSuccess ||
        cudaMemcpyFromSymbol(t, g_vpipe_trace, sizeof t) != cudaSuccess)
        return;
    char name[4096];
    snprintf(name, sizeof name, "%s.verify.csv", path);
    FILE *f = fopen(name, "w");
    if (!f) return;
    unsigned long long t0 = ~0ull;
    for (int c = 0; c < VTR_CTAS; c++)
        if (t[c][0] && t[c][0] < t0) t0 = t[c][0];
    fprintf(f, "cta,item,begun,state,ring,prepared,landed_ring,handed,full,done\n");
    for (int c = 0; c < VTR_CTAS; c++) {
        if (!t[c][0]) continue;
        for (int j = 0; j < VTR_ITEMS; j++) {
            const unsigned long long *m = &t[c][1 + VTR_MARKS * j];
            if (m[7] <= t[c][0]) break; /* not done in this launch */
            fprintf(f, "%d,%d", c, j);
            for (int k = 0; k < VTR_MARKS; k++)
                fprintf(f, ",%.3f", m[k] > t[c][0] ? (m[k] - t0) * 1e-3 : -1.0);
            fprintf(f, "\n");
        }
    }
    fclose(f);
#else
    (void)path;
#endif
}

/* ---- dispatch ---------------------------------------------------------------------------- */

/* Stages that fit one CTA's shared memory for this layer (0: the pipeline does not apply). */
static int vpipe_stages(const rssm_layer *l)
{
    using namespace rssm_vpipe;
    const size_t sb = vstage_bytes(l->ring_len, l->ring_dtype == RSSM_DTYPE_BF16, l->state_dtype == RSSM_DTYPE_BF16);
    if (max_smem <= (int)sizeof(vcta_head)) return 0; /* not initialised */
    const int ns = (int)(((size_t)max_smem - sizeof(vcta_head)) / sb);
    return ns < 2 ? 0 : ns > VNS_MAX ? VNS_MAX : ns;
}

/* 1 when verify step A can run on the pipeline: windows of 3-4 tokens, K = V = 128, a V-first
 * state, L a multiple of 4 (16-byte aligned G copies), 16-byte aligned state arrays and token
 * rows (TMA; 4 elements per lane in one access), enough shared memory. */
int rssm_cuda_vpipe_ok(const kargs *A)
{
    const rssm_layer *l = &A->l;
    const rssm_step_io *io = &A->io;
    if (A->mode != MODE_VERIFY || io->tokens < 3 || io->tokens > VT || l->head_k_dim != 128 || l->head_v_dim != 128 ||
        l->state_layout != RSSM_LAYOUT_VK)
        return 0;
    if (A->group < 1 || l->num_v_heads != l->num_k_heads * A->group) return 0;
    if (!rssm_aligned16(A->st.checkpoint) || l->ring_len % 4 || !rssm_aligned16(A->st.ring_k) ||
        !rssm_aligned16(A->st.ring_u) || !rssm_aligned16(A->st.ring_g))
        return 0;
    if (io->q_stride % 4 || io->k_stride % 4 || io->v_stride % 4 || !rssm_aligned16(io->q) || !rssm_aligned16(io->k) ||
        !rssm_aligned16(io->v) || (io->g && !rssm_aligned16(io->g)))
        return 0;
    /* precomputed gates read packed (their own token strides: the general kernel) */
    const int64_t gk = l->gate == RSSM_GATE_KDA ? 128 : 1;
    if (io->g && (io->g_stride != l->num_v_heads * gk || io->beta_stride != l->num_v_heads)) return 0;
    return vpipe_stages(l) > 0;
}

cudaError_t rssm_cuda_vpipe_init(int device)
{
    using namespace rssm_vpipe;
    const cudaError_t pe = cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    if (pe != cudaSuccess) return pe;
    for (int i = 0; i < 16; i++) { /* gate, state, ring and io dtypes */
        const cudaError_t e = cudaFuncSetAttribute(kernel_for(i & 1, i & 2, i & 4, i & 8),
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

/* One CTA per SM (at most one per unit of work); A.NS = stages */
cudaError_t rssm_cuda_vpipe_launch(kargs A, int sm_count, cudaStream_t stream)
{
    using namespace rssm_vpipe;
    const rssm_layer *l = &A.l;
    A.NS = vpipe_stages(l);
    const int64_t units = (int64_t)A.io.batch * l->num_k_heads;
    const unsigned grid = (unsigned)(units < sm_count ? units : sm_count);
    if (grid == 0) return cudaSuccess;
    const size_t smem = sizeof(vcta_head) + (size_t)A.NS * vstage_bytes(l->ring_len, l->ring_dtype == RSSM_DTYPE_BF16,
                                                                        l->state_dtype == RSSM_DTYPE_BF16);
    void *k = kernel_for(l->gate == RSSM_GATE_KDA, l->state_dtype == RSSM_DTYPE_BF16, l->ring_dtype == RSSM_DTYPE_BF16,
                         l->io_dtype == RSSM_DTYPE_BF16);
    void *args[] = {&A};
    return cudaLaunchKernel(k, dim3(grid), dim3(VNT), args, smem, stream);
}
