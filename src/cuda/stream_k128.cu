/*
 * stream_k128.cu — packed decode (T = 1, K = V = 128, V-first state) that streams the state a
 * row at a time, for the grids where that beats the per-head kernel (launch_rules.h says which).
 *
 * The per-head kernel (decode_k128.cu) loads a warp's 8 rows into registers at once and holds
 * them to the end of the step, its warps meeting at two barriers (one for the token's preparation
 * in shared memory, one for the ring weights). Here a warp owns RW consecutive rows of one head,
 * STREAM_CHUNK at a time. It issues its first chunk's loads (on large grids its first two where
 * they fit: EARLY) as soon as the slot and write slot are known, prepares the token (k, q, gates,
 * beta) in its own registers while they land (every warp repeats that work: no shared memory, no
 * barrier), and then, a chunk at a time, finishes its rows:
 * u = beta (v - S_row . e^g k), S_row <- S_row e^g + u k, o = S_row . q, the rows stored and o
 * written. Both kernels run at 64 registers a thread, so as many warps fit per SM; what streaming
 * changes is that no warp waits for another, and a warp's stores leave while its next rows arrive.
 *
 * The source loads the next chunk before it unpacks the current one, but ptxas gives the next
 * chunk the current chunk's registers and issues its loads just after that unpack, once the
 * current rows have landed (cuobjdump, rolled loop or unrolled, bf16 state): a chunk's loads
 * overlap the previous chunk's arithmetic and stores, not its round trip. With EARLY the first two
 * chunks are in flight together, and with 16 rows the loop then keeps loading two chunks ahead.
 *
 * Bits: a lane holds channels 4l .. 4l + 3 of a row, as the per-head kernel's lanes do; every
 * product and sum is the per-head kernel's, in its order (the lane's 4 channels by fused
 * multiply-adds from 0, then the sum over lane bits 16, 8, 4, 2, 1 by the same reduce-scatter
 * butterfly). So the outputs and the state are bit for bit the per-head kernel's
 * (tests/test_cuda_stream.c compares them).
 */
#include <type_traits>

#include "k128_common.cuh"

namespace rssm_stream_k128
{

#define STREAM_NW 4    /* warps per CTA */
#define STREAM_CHUNK 4 /* rows a warp finishes together (after the reduce-scatter, lane bits 16, 8 pick one) */

/* STREAM_CHUNK rows of the lane's 4 channels, as loaded (f32, or bf16 pairs) */
template <bool SBF> struct rows_raw {
    typename std::conditional<SBF, uint2, float4>::type r[STREAM_CHUNK];
};

template <bool SBF> __device__ __forceinline__ void load_rows(rows_raw<SBF> &x, const void *ckpt, int64_t off)
{
#pragma unroll
    for (int i = 0; i < STREAM_CHUNK; i++) {
        if constexpr (SBF)
            x.r[i] = __ldcs((const uint2 *)((const uint16_t *)ckpt + off + i * K128_DIM));
        else
            x.r[i] = __ldcs((const float4 *)((const float *)ckpt + off + i * K128_DIM));
    }
}

template <bool SBF> __device__ __forceinline__ void unpack_row(const rows_raw<SBF> &x, int i, float (&s)[4])
{
    if constexpr (SBF)
        unpack_bf2(x.r[i].x, s), unpack_bf2(x.r[i].y, s + 2);
    else
        s[0] = x.r[i].x, s[1] = x.r[i].y, s[2] = x.r[i].z, s[3] = x.r[i].w;
}

/* The token as the lane needs it for its 4 channels: normalised k and q (q scaled), e^g (GDN:
 * one factor), x_k = e^g k (the row dot products' vector), beta. The per-head kernel's
 * prepare_token and gates_one_token, in registers: same operations, same order. */
template <bool KDA> struct token {
    float kn[4], qn[4], xk[4], eg[4], beta;
};

/* The token's inputs as loaded, before any arithmetic: the kernel issues these loads before it
 * reads the row's slot (they do not depend on it), so they land during the slot's round trip
 * rather than behind the rows' loads. Precomputed gates: g and beta in a and b; raw: a, dt_bias,
 * A_log and b (GDN: element 0 of a and dtb). */
struct token_in {
    float kr[4], qr[4], a[4], dtb[4], alog, b;
};

template <bool KDA>
__device__ __forceinline__ token_in load_token(const kargs &A, int b, int hv, int kh, int lane, int iobf)
{
    const rssm_layer &l = A.l;
    const int HV = l.num_v_heads, c4 = lane * 4;
    token_in in;
    ld4g(A.io.k, iobf, (int64_t)b * A.io.k_stride + (int64_t)kh * K128_DIM + c4, in.kr);
    ld4g(A.io.q, iobf, (int64_t)b * A.io.q_stride + (int64_t)kh * K128_DIM + c4, in.qr);
    in.alog = 0.0f;
    if (A.io.g) { /* precomputed gates: rows of HV (x K) values (rssm_cuda_decode_k128_ok) */
        if (KDA) {
            const float4 v = __ldg((const float4 *)(A.io.g + ((int64_t)b * HV + hv) * K128_DIM + c4));
            in.a[0] = v.x, in.a[1] = v.y, in.a[2] = v.z, in.a[3] = v.w;
        } else {
            in.a[0] = in.a[1] = in.a[2] = in.a[3] = __ldg(A.io.g + (int64_t)b * HV + hv);
        }
        in.b = __ldg(A.io.beta + (int64_t)b * HV + hv);
    } else {
        in.alog = __ldg(A.io.A_log + hv);
        if (KDA) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                in.a[e] = ld_dt(A.io.a, l.io_dtype, (int64_t)b * A.io.a_stride + (int64_t)hv * K128_DIM + c4 + e);
                in.dtb[e] = __ldg(A.io.dt_bias + hv * K128_DIM + c4 + e);
            }
        } else {
            in.a[0] = ld_dt(A.io.a, l.io_dtype, (int64_t)b * A.io.a_stride + hv);
            in.dtb[0] = __ldg(A.io.dt_bias + hv);
        }
        in.b = ld_dt(A.io.b, l.io_dtype, (int64_t)b * A.io.b_stride + hv);
    }
    return in;
}

/* The token's arithmetic on its loaded inputs */
template <bool KDA> __device__ __forceinline__ token<KDA> prepare(const kargs &A, const token_in &in)
{
    const rssm_layer &l = A.l;
    token<KDA> t;
    float g[4];
    if (A.io.g) {
#pragma unroll
        for (int e = 0; e < 4; e++)
            g[e] = in.a[e];
        t.beta = in.b;
    } else {
        if (KDA) {
#pragma unroll
            for (int e = 0; e < 4; e++)
                g[e] = rssm_gate_f32(in.a[e], in.alog, in.dtb[e], l.has_lower_bound, l.lower_bound);
        } else {
            const float x = rssm_gate_f32(in.a[0], in.alog, in.dtb[0], l.has_lower_bound, l.lower_bound);
            g[0] = g[1] = g[2] = g[3] = x;
        }
        t.beta = rssm_sigmoid_f32(in.b);
    }
    float sk = 1.0f, sq = 1.0f;
    if (l.qk_l2norm) {
        float nk = in.kr[0] * in.kr[0], nq = in.qr[0] * in.qr[0];
#pragma unroll
        for (int e = 1; e < 4; e++)
            nk = __fmaf_rn(in.kr[e], in.kr[e], nk), nq = __fmaf_rn(in.qr[e], in.qr[e], nq);
        sk = 1.0f / sqrtf(warp_sum(nk) + (float)RSSM_L2NORM_EPS);
        sq = 1.0f / sqrtf(warp_sum(nq) + (float)RSSM_L2NORM_EPS);
    }
    /* G = 0 + g: the per-head kernel's cumulative gate with no ring entries */
    const float eg0 = KDA ? 0.0f : expf(0.0f + g[0]);
#pragma unroll
    for (int e = 0; e < 4; e++) {
        t.kn[e] = in.kr[e] * sk;
        t.qn[e] = in.qr[e] * sq * l.scale;
        t.eg[e] = KDA ? expf(0.0f + g[e]) : eg0;
        t.xk[e] = t.eg[e] * t.kn[e];
    }
    return t;
}

/* A chunk of STREAM_CHUNK rows, the lane's 4 channels of each in s, v of row i on the lanes of
 * lane bits 16 and 8 equal to i (vmine); returns o of row lane >> 3 on every lane, s becomes the
 * new rows. The rows' sums go through the reduce-scatter butterfly (RS: lane bits 16, 8, 4, 2, 1
 * in that order, as a butterfly per row would add them: the same bits) so that 4 rows take 6
 * shuffles rather than 20; u of row i then comes from lane 8 i. */
template <bool KDA>
__device__ __forceinline__ float chunk_step(float (&s)[STREAM_CHUNK][4], float vmine, const token<KDA> &t, int lane)
{
    float d[STREAM_CHUNK];
#pragma unroll
    for (int i = 0; i < STREAM_CHUNK; i++) {
        d[i] = 0.0f;
#pragma unroll
        for (int e = 0; e < 4; e++)
            d[i] = __fmaf_rn(s[i][e], t.xk[e], d[i]);
    }
    RS<STREAM_CHUNK, 1, 16>::run(d, lane);
    const float myu = t.beta * (vmine - d[0]); /* u of row lane >> 3 */
    float o[STREAM_CHUNK];
#pragma unroll
    for (int i = 0; i < STREAM_CHUNK; i++) {
        const float u = __shfl_sync(FULL_MASK, myu, 8 * i);
        o[i] = 0.0f;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            s[i][e] = __fmaf_rn(u, t.kn[e], s[i][e] * t.eg[e]);
            o[i] = __fmaf_rn(s[i][e], t.qn[e], o[i]);
        }
    }
    RS<STREAM_CHUNK, 1, 16>::run(o, lane);
    return o[0];
}

/* grid (HV x parts, B), STREAM_NW warps; warp w of part p owns rows (p NW + w) RW .. + RW - 1 */
template <bool KDA, bool SBF, int RW, bool EARLY>
__global__ void __launch_bounds__(STREAM_NW * 32, 8) stream_kernel(const kargs A)
{
    static_assert(RW % STREAM_CHUNK == 0, "whole chunks of rows per warp");
    const rssm_layer &l = A.l;
    const int HV = l.num_v_heads, iobf = l.io_dtype == RSSM_DTYPE_BF16;
    static_assert(!EARLY || STREAM_CHUNK < RW, "early loads need a second chunk");
    constexpr int PARTS = K128_DIM / (STREAM_NW * RW);
    const int b = blockIdx.y, hv = blockIdx.x / PARTS, part = blockIdx.x % PARTS;
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, c4 = lane * 4;
    const int row0 = (part * STREAM_NW + w) * RW;
    if (A.pdl) {
        /* the previous kernel on the stream may still run: read nothing before the wait. With
         * an L2 prefetch of the rows before it, as the per-head kernel has, pdl lost 0.4-6.7% to
         * no pdl; without, it wins (stream-pdl-2026-12-05/, call Z4). Every A.pdl triggers here:
         * later triggers (FQ, FT there) gained nothing consistent */
        asm volatile("griddepcontrol.wait;\n" ::: "memory");
        asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    }
    /* slot and write slot read together (the state's loads wait for both), then the token's
     * inputs and v of the warp's rows (lane r row row0 + r, RW <= 32): they do not depend on the
     * slot, so they land during its round trip rather than behind the rows */
    int s = A.io.slot[b], d = s;
    const int ws = A.io.write_slot ? A.io.write_slot[b] : 0;
    /* a small-batch step (io.fold_every): the row must fold with an empty ring, as the
     * planner's drain leaves it; read with the slot, tested before the first store */
    const int fold = A.io.fold_every ? A.io.fold[b] : 1;
    const token_in tin = load_token<KDA>(A, b, hv, hv / A.group, lane, iobf);
    const float vown =
        lane < RW ? ld_dt(A.io.v, l.io_dtype, (int64_t)b * A.io.v_stride + hv * K128_DIM + row0 + lane) : 0.0f;
    bool bad = s < -1 || s >= A.st.num_slots;
    if (bad) s = -1;
    if (s >= 0 && A.io.write_slot) {
        d = ws;
        if (d < -1 || d >= A.st.num_slots) bad = true, d = -1;
        if (d < 0) s = -1;
    }
    if (s < 0) { /* padding (or a bad row): a zero output, no state touched */
        if (bad && blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(A.err, 1);
        if (lane < RW) st_dt(A.io.o, l.io_dtype, (((int64_t)b * HV + hv) << 7) + row0 + lane, 0.0f);
        return;
    }
    const int cursor = A.io.fold_every ? A.st.cursor[s] : 0;
    const int64_t src = (((int64_t)s * HV + hv) << 14) + (int64_t)row0 * K128_DIM + c4;
    /* EARLY (large grids, launch_rules.h): the first two chunks' loads before the token's
     * preparation, which waits for k and q; a warp of 8 rows then has them all in flight at once,
     * as the per-head kernel's warps. With more than two chunks it then loads two chunks ahead,
     * into a third buffer (AHEAD2): ptxas issues a chunk's loads after the unpack before them (in
     * the registers it freed), so one chunk ahead left each round trip behind one chunk's work;
     * two ahead, behind two (ctest row_loads_ahead_stream) */
    constexpr bool AHEAD2 = EARLY && RW > 2 * STREAM_CHUNK;
    rows_raw<SBF> cur, next, after;
    load_rows<SBF>(cur, A.st.checkpoint, src);
    if (EARLY) load_rows<SBF>(next, A.st.checkpoint, src + (int64_t)STREAM_CHUNK * K128_DIM);
    const token<KDA> t = prepare<KDA>(A, tin);
    if (cursor != 0 || !fold) { /* not drained: a zero output and a device error, nothing written */
        if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(A.err, 1);
        if (lane < RW) st_dt(A.io.o, l.io_dtype, (((int64_t)b * HV + hv) << 7) + row0 + lane, 0.0f);
        return;
    }
    const int64_t dst = (((int64_t)d * HV + hv) << 14) + (int64_t)row0 * K128_DIM + c4;
    /* unrolled: 1.9-3.5% faster than rolled with a bf16 state at B = 32-128 (call V in
     * bench/results/stream-unroll-2026-12-05/); the loads sit where they did, the loop's control
     * and predicated loads are gone */
#pragma unroll
    for (int r0 = 0; r0 < RW; r0 += STREAM_CHUNK) {
        if (AHEAD2) {
            if (r0 + 2 * STREAM_CHUNK < RW)
                load_rows<SBF>(after, A.st.checkpoint, src + (int64_t)(r0 + 2 * STREAM_CHUNK) * K128_DIM);
        } else if ((r0 > 0 || !EARLY) && r0 + STREAM_CHUNK < RW)
            load_rows<SBF>(next, A.st.checkpoint, src + (int64_t)(r0 + STREAM_CHUNK) * K128_DIM);
        float x[STREAM_CHUNK][4];
#pragma unroll
        for (int i = 0; i < STREAM_CHUNK; i++)
            unpack_row<SBF>(cur, i, x[i]);
        const float o = chunk_step<KDA>(x, __shfl_sync(FULL_MASK, vown, r0 + (lane >> 3)), t, lane);
#pragma unroll
        for (int i = 0; i < STREAM_CHUNK; i++) {
            const int64_t off = dst + (int64_t)(r0 + i) * K128_DIM;
            if (SBF)
                st4(A.st.checkpoint, 1, off, x[i]);
            else
                __stcs((float4 *)((float *)A.st.checkpoint + off), make_float4(x[i][0], x[i][1], x[i][2], x[i][3]));
        }
        if ((lane & 7) == 0) st_dt(A.io.o, l.io_dtype, (((int64_t)b * HV + hv) << 7) + row0 + r0 + (lane >> 3), o);
        cur = next;
        if (AHEAD2) next = after;
    }
}

/* Early loads only where they fit: with 16 rows of an f32 state ptxas then spills at 64
 * registers (seen with KDA; GDN takes the same rule), and one chunk has no second to issue */
template <bool SBF, int RW> constexpr bool early_fits() { return STREAM_CHUNK < RW && (SBF || RW <= 8); }

template <bool KDA, bool SBF, int RW> static const void *kernel_of(bool early)
{
    if constexpr (early_fits<SBF, RW>())
        if (early) return (const void *)stream_kernel<KDA, SBF, RW, true>;
    return (const void *)stream_kernel<KDA, SBF, RW, false>;
}

template <bool KDA, bool SBF> static const void *kernel_of(int rw, bool early)
{
    switch (rw) {
    case 4:
        return kernel_of<KDA, SBF, 4>(early);
    case 8:
        return kernel_of<KDA, SBF, 8>(early);
    case 32:
        return kernel_of<KDA, SBF, 32>(early);
    default:
        return kernel_of<KDA, SBF, 16>(early);
    }
}

} // namespace rssm_stream_k128

int rssm_cuda_decode_k128_ok(const kargs *A); /* decode_k128.cu */

/* 1 when packed decode of A can stream: the per-head kernel's cases (rssm_cuda_decode_k128_ok)
 * with the V-first state; also a small-batch replay step (io.fold_every), which is packed decode
 * of rows the planner drained */
int rssm_cuda_stream_ok(const kargs *A)
{
    return (A->mode == MODE_PACKED || (A->mode == MODE_REPLAY && A->io.fold_every)) &&
           A->l.state_layout != RSSM_LAYOUT_KV && rssm_cuda_decode_k128_ok(A);
}

/* rw: rows per warp, 4, 8, 16 or 32; early: the first two chunks' loads before the token's
 * preparation (where they fit) */
cudaError_t rssm_cuda_stream_launch(kargs A, int batch, int rw, int early, cudaStream_t stream)
{
    using namespace rssm_stream_k128;
    if (rw != 4 && rw != 8 && rw != 32) rw = 16;
    const bool kda = A.l.gate == RSSM_GATE_KDA, sbf = A.l.state_dtype == RSSM_DTYPE_BF16, e = early != 0;
    const void *k = kda ? (sbf ? kernel_of<true, true>(rw, e) : kernel_of<true, false>(rw, e))
                        : (sbf ? kernel_of<false, true>(rw, e) : kernel_of<false, false>(rw, e));
    A.cs = 1;
    const unsigned parts = K128_DIM / (STREAM_NW * rw);
    return launch_clustered(k, A, (unsigned)A.l.num_v_heads * parts, (unsigned)batch, STREAM_NW * 32, 0, stream);
}
