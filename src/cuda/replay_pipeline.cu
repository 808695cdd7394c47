/*
 * replay_pipeline.cu — replay and packed decode (T = 1, K = V = 128) for grids of many heads, as a
 * persistent, warp-specialised pipeline: one CTA per SM walks its share of the heads, and the
 * memory traffic of the next heads is in flight while the current one is computed.
 *
 * Why: decode_k128.cu runs one CTA per head, two per SM. Each CTA waits for a chain of
 * dependent reads (slot, then cursor, then ring) before its barrier, and while it computes,
 * only the other CTA of the SM has reads in flight: at B = 512 the H200 reached 72% of its DRAM
 * throughput (bench/results/ncu-replay512.txt). Here the chain and the state copy of later
 * heads run in separate warps, behind a ring of NS stages in shared memory.
 *
 * Packed decode (PACKED) is an item with an empty ring whose end fold is the step: no cursor,
 * ring or gate floor, the new state to the write slot (decode_k128.cu's rules: -1 pads the
 * row), the same bits as the per-head kernel (tests/test_cuda_pipeline.c). A V-first state runs
 * it only where forced (cuda_pipeline = 1): with an f32 state it lost at every B, and with a bf16
 * state streaming by rows (stream_k128.cu) is faster. A K-first state, which the per-head kernel
 * reads by lane pairs, runs it from the rule's batch (launch_rules.h, rssm_pipe_from).
 *
 * Work: a unit is (row b, key head kh) and covers the group's value heads hv = kh * group ..
 * + group - 1, in order; with the folding rows first (BAL) and no row starting with a fold, a
 * unit is one value head (see Races). Units are dealt to the CTAs round robin (position p to
 * CTA p % gridDim.x) in this order: first the units of the rows that fold this step, then the
 * others, each in row order (see `Balance`; the mapping from p to a unit is pipeline_order.h's,
 * tested on the host by tests/test_pipe_order.c, and the orders against the per-head kernel by
 * tests/test_cuda_pipeline.c on the device); item j of a CTA is value head j % per of its unit
 * j / per (per = 1 or group), in stage j % NS.
 *
 * Balance: a row whose cursor is at L - 1 or L, or whose fold is forced, folds this step, and
 * its heads cost about 3x a plain head (the fold over the ring and the 64 KiB checkpoint
 * store: 4.5-5 us against 1.4 us per item in the per-item trace of GDN at B = 64). Dealt in
 * plain row order, a step's folding rows could land on a few CTAs, which then ended up to 16 us
 * after the rest. Every CTA first builds the same order from the rows' slots and cursors: a
 * bitmap of the folding rows and, per word of 32 rows, the folding rows before it, in shared
 * memory; a V-first GDN batch of one word keeps it in every warp's registers (see the kernel).
 * That is the kernel's BAL instantiation, chosen by default for batches of at most
 * PBAL_ROWS rows on grids of at most PBAL_ITEMS_GDN / _GDN_SBF / _KDA heads per CTA, where the
 * kernel lasts as long as its slowest CTA (GDN B = 128, f32 state: 86.8 against 89.0 us in plain
 * order; the limits are where the order stopped paying, bench/results/switch-2026-12-02/ and
 * deal-2026-12-02/). GDN gains most: with units of one value head a folding row's heads spread
 * over twice the CTAs. Larger grids are bound by bandwidth in aggregate and run the BAL = false
 * instantiation, the plain round robin. rssm_context_params.cuda_pipeline_balance = 0|1 forces
 * either (BAL within PBAL_ROWS rows). (The heads' early folds, by the gate threshold, are not
 * known in advance.) Dealing the plain units by cost, fewer to the CTAs with a folding unit, did
 * not help (deal-2026-12-02/).
 *
 * Warps: PNP = 3 producer warps, of which A.producers = np take items (item j is producer j %
 * np's), and PNC = 16 consumer warps. A producer hands an item over only once the item's token
 * inputs have arrived, about 4 us after it began it under the step's copies (per-item traces);
 * a third producer made GDN B = 64-512 1-3% and KDA 2-4% faster, less than the producers' rate
 * alone would give, because an item's state copy waits for a free stage and still lands after
 * its header; at 5-12 heads per CTA it lost (GDN B = 24 5%). launch_rules.h's
 * rssm_pipe_producers picks np (bench/results/pipe-producers-2026-12-03/).
 *   producer: reads slot, cursor and ring base of its next 32 items at once, one lane each (so
 *     no per-item read depends on another); per item it loads the token inputs (k, q of the key
 *     head, v of the value head, gate inputs), waits until the consumers have taken stage
 *     j % NS's previous rows into registers (empty_s) and starts the TMA copy of the checkpoint
 *     (128 x 128, one contiguous block; K-first: tiles or padded blocks, see KF_PAD) into it, waits
 *     until they are done with the stage's previous item (empty_r) and starts the copies of the
 *     h = cursor - base live ring entries (k, u, and G: GDN G_base..G_{c-1} from ring position
 *     base, KDA G_{h-1}, positions from 0), then normalises k and q, evaluates the gates (GDN:
 *     clamped at the gate floor) and writes the item's header; the stage's `full` barrier
 *     completes with its 32 arrivals (the producer warp's lanes, after the header) and the last
 *     copied byte.
 *   consumers: warp w owns state rows 8w .. 8w + 7, lane l channels 4l .. 4l + 3 (as
 *     decode_k128.cu); per item they wait for `full`, take the rows into registers and release
 *     the state buffer (empty_s), fold, compute the ring weights (one named barrier), then the
 *     rows, and release the stage (empty_r).
 * The arithmetic is decode_k128.cu's replay (T = 1), operation for operation, so both kernels
 * give the same bits.
 *
 * Races: GDN ring_k of a key head is shared by the group's value heads. The new key (position c,
 * or 0 after a start fold) is written by the group's last value head whenever the shared end
 * fold does not happen (also when that head folds early: the others may store the entry). Only
 * after a start fold does it overwrite entries the other heads read; a step where some row
 * starts with a fold therefore keeps a group in one unit of one CTA, where the last value head
 * writes after every head has its copy. In a step without start folds no head reads position c
 * (its live entries lie below), and with the folding rows first (BAL) a unit is then one value
 * head: a folding row's heads spread over twice the CTAs (see Balance). GDN ring_u, ring_g,
 * ring_base and the checkpoint, and every KDA tensor, belong to one (slot, value head).
 * A stage is overwritten (TMA or producer stores) only after every consumer thread arrived on
 * its empty barrier, after its last read; consumers read it only after every lane of its
 * producer arrived on `full`, after its last store. Every thread arrives for itself: with one
 * arrival per warp after __syncwarp, racecheck reported hazards (it credits an arrival to the
 * arriving thread only; bench/results/earlier/e02a894/gpu-racecheck-pipe.txt), and per-thread arrivals also
 * measured faster (GDN B=512 301 -> 292 us; bench/results/gpu-ab-arrive.txt).
 */
#include <cuda.h> /* CUtensorMap; the encoder comes from the runtime's driver entry point */
#include <cudaTypedefs.h>
#include "k128_common.cuh"
#include "pipeline_trace.cuh"
#include "pipeline_order.h"
#include "launch_rules.h"
#include "pipe_sync.cuh"

namespace rssm_pipe
{

#define PNP 3                      /* producer warps launched; A.producers of them take items */
#define PNT ((PNC + PNP) * 32)     /* threads per CTA */
#define PNS_MAX 4                  /* stages */
#define PBAL_ROWS RSSM_PO_MAX_ROWS /* the largest batch dealt with folding rows first */
#define PBAL_ITEMS_GDN 40          /* ... and the most heads per CTA (beyond, the step is bound by bandwidth), */
#define PBAL_ITEMS_GDN_SBF 32      /* by gate and state dtype (see Balance) */
#define PBAL_ITEMS_KDA 16
static_assert(PBAL_ROWS == 32 * 32 * 4, "the bitmap's prefix: one warp, 4 words per lane");
static_assert(RSSM_PIPE_WORD_ROWS == 32, "a word of the bitmap: the one-word kernels' batches");
static_assert(PK == RSSM_RING_WEIGHTS_K, "ring_weights reads k rows of 128 channels");

/* ---- shared memory ---- */
enum { ITEM_SKIP = 1, ITEM_FORCED = 2 }; /* padding or bad row: zero output; fold flag set */
/* what the producer hands over with an item (besides the copied state and ring) */
struct stage_head {
    int s, b, hv, c, base, h, flags, d;  /* d (PACKED): the slot the new state goes to (write_slot) */
    float kn[PK], qn[PK], gt[PK], v[PK]; /* normalised k, normalised scaled q, gate, v */
    float G[PK];                         /* GDN: G_0 .. G_{h-1}; KDA: G_{h-1} per channel */
    float beta, kq, pad2_[22];
};
static_assert(sizeof(stage_head) % 128 == 0, "stage parts stay 128-byte aligned");
static_assert(RSSM_MAX_RING_LEN <= PK, "GDN G_0 .. G_{h-1} fit stage_head.G");
/* the CTA's fixed part: barriers, the consumers' ring weights (two items' worth) and (BAL) the
 * bitmap of this step's folding rows with its prefix counts (pipeline_order.h) */
struct cta_head {
    uint64_t full[PNS_MAX], empty_s[PNS_MAX], empty_r[PNS_MAX];
    float wk[2][RSSM_MAX_RING_LEN], wq[2][RSSM_MAX_RING_LEN];
    uint32_t fold_bits[PBAL_ROWS / 32];       /* bit b % 32 of word b / 32: row b folds this step */
    int32_t folds_before[PBAL_ROWS / 32 + 1]; /* folding rows in the words before word i */
    float pad_[7];
};
static_assert(sizeof(cta_head) % 128 == 0, "stages stay 128-byte aligned");
/* a tiled state's first byte (see pipe_kernel): the swizzle's period after the CTA's head */
__host__ __device__ constexpr unsigned kf_states_at() { return (sizeof(cta_head) + 1023) & ~1023u; }
static_assert((16 * PK + PNC * 16 * 8) * 4 <= PK * PK * 2,
              "a staged fold round (at most 16 entries) fits a bf16 state");

/* A K-first state (KF: [K][V], FLA's order) is staged in one of two ways, so that the 8 lanes of a
 * quarter warp, which read their own channels (lane m owns channels 4m .. 4m + 3) at their warp's
 * rows, fall in 8 different 16-byte bank groups: laid as in memory they would all hit the same one.
 * Either way the copies come from a lane chosen by elect.sync (elect_one: under `lane == 0` the
 * compiler wraps each copy in a loop over the issuing lanes, its operands living in uniform
 * registers).
 * - tiled (replay, and packed decode of an f32 state): two (bf16) or four (f32) tensor copies of
 *   128 bytes of rows each (kf_tile_copy), through a map that reads the head as (row v, block m of
 *   4 channels, channel e in the block) and writes it with the 128-byte swizzle, so that 16-byte
 *   chunk c of 128-byte line e * 32 + m lands at chunk c ^ (m % 8) (kf_tile_at, kf_tile_byte). In
 *   replay they replaced 64 bulk copies of rotated blocks (f32: its stages cannot spare padding's
 *   512 bytes, two stages were 12-13% slower, bench/results/kf-packed-store/ call D) and 32 of
 *   padded ones (bf16): GDN B = 64 / 512 52.5 / 319.5 -> 49.7 / 313.4 us, KDA B = 512 340.3 ->
 *   323.9, bf16 GDN B = 64 41.8 -> 40.4; f32 packed decode took 0.5-2.7% less
 *   (bench/results/kf-tiled-2026-12-04/, calls C, E, F). The states lie at a fixed offset: one
 *   found at run time held registers the KDA consumers needed (16 bytes spilled) and made KDA
 *   B = 512 8% slower (call B there).
 * - PAD (packed decode of a bf16 state, which tiled lost 1-8%, call F): as it lies in memory, 4
 *   channel rows (1 KiB) to a block, each block followed by 16 bytes of padding; one bulk copy a
 *   block. */
#define KF_PAD 16
#define KF_TILE_BYTES (128 * 32 * 4) /* a tensor copy: 128 bytes of rows (the swizzle's span) x 32 blocks x 4 */
/* rows (v) of a tensor copy, and of a 16-byte chunk */
template <bool SBF> __host__ __device__ constexpr int kf_tile_rows() { return SBF ? 64 : 32; }
template <bool SBF> __host__ __device__ constexpr int kf_chunk_rows() { return SBF ? 8 : 4; }
template <bool SBF> __host__ __device__ constexpr unsigned kf_block_bytes() { return 4 * PK * (SBF ? 2 : 4); }
__host__ __device__ constexpr bool kf_padded(bool sbf, bool packed) { return sbf && packed; }
/* where byte x of padded (bf16) block m lies in the stage's buffer */
__device__ __forceinline__ unsigned kf_at(int m, unsigned x) { return m * (kf_block_bytes<true>() + KF_PAD) + x; }
/* where byte c of block m (4 channel rows as in memory) lies in the stage's tiles */
template <bool SBF> __device__ __forceinline__ unsigned kf_tile_byte(int m, unsigned c)
{
    constexpr unsigned rb = PK * (SBF ? 2 : 4); /* a channel row */
    const unsigned e = c / rb, vb = c % rb;
    return (vb >> 7) * KF_TILE_BYTES + (e * 32 + m) * 128 + ((((vb & 127) >> 4) ^ (unsigned)(m & 7)) << 4);
}
/* where a tiled state's chunk of rows row0 + hf * kf_chunk_rows .. (row0 a multiple of 8; hf 0 for
 * bf16, 0 or 1 for f32) of channel 4 lane + e lies: copy row0 / kf_tile_rows, its line e * 32 +
 * lane, chunk c swizzled by the line (the buffer is 1024-byte aligned, the swizzle's period) */
template <bool SBF> __device__ __forceinline__ unsigned kf_tile_at(int lane, int row0, int e, int hf)
{
    constexpr int tv = kf_tile_rows<SBF>();
    const unsigned c = (unsigned)((row0 & (tv - 1)) / kf_chunk_rows<SBF>()) + hf;
    return (row0 / tv) * KF_TILE_BYTES + (e * 32 + lane) * 128 + ((c ^ (unsigned)(lane & 7)) << 4);
}

/* a stage: head | ring k [L][K] | ring u [L][V] (ring dtype) | state [V][K], or K-first [K][V] in
 * padded blocks or tiles (state dtype; tiled, the states lie apart from the rest: see pipe_kernel) */
static __host__ __device__ size_t ring_bytes(int L, bool rbf) { return (size_t)L * PK * (rbf ? 2 : 4); }
static __host__ __device__ size_t stage_bytes(int L, bool rbf, bool sbf, bool kf_pad)
{
    return sizeof(stage_head) + 2 * ring_bytes(L, rbf) + (size_t)PK * PK * (sbf ? 2 : 4) + (kf_pad ? 32 * KF_PAD : 0);
}

/* the head's bf16 state at src into the stage's padded blocks, from one lane */
__device__ __forceinline__ void kf_stage_copy_padded(unsigned char *dst, const unsigned char *src, uint64_t *bar)
{
    constexpr unsigned blk = kf_block_bytes<true>();
#pragma unroll 4
    for (int m = 0; m < 32; m++)
        bulk_copy(dst + kf_at(m, 0), src + m * blk, blk, bar);
}
/* head hd of the checkpoint that `map` describes (rssm_cuda_pipe_launch) into the stage's tiles,
 * from one lane */
template <bool SBF>
__device__ __forceinline__ void kf_tile_copy(unsigned char *dst, const CUtensorMap *map, int hd, uint64_t *bar)
{
#pragma unroll
    for (int j = 0; j < PK / kf_tile_rows<SBF>(); j++)
        asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                     "[%0], [%1, {%2, %3, %3, %4}], [%5];\n" ::"r"(saddr(dst + j * KF_TILE_BYTES)),
                     "l"(map), "r"(j * kf_tile_rows<SBF>()), "r"(0), "r"(hd), "r"(saddr(bar))
                     : "memory");
}
/* the consumer lane's S from a staged K-first state (rows row0 .., channels 4 lane ..): V-first's
 * values in V-first's registers */
template <bool SBF, bool PAD>
__device__ __forceinline__ void kf_stage_rows(const unsigned char *ss, int row0, int lane, float (&S)[8][4])
{
    static_assert(SBF || !PAD, "only a bf16 state is staged in padded blocks");
#pragma unroll
    for (int e = 0; e < 4; e++) {
        if (!SBF) {
#pragma unroll
            for (int hf = 0; hf < 2; hf++) { /* rows row0 + 4 hf .. + 3 of channel 4 lane + e */
                const float4 v = *(const float4 *)(ss + kf_tile_at<false>(lane, row0, e, hf));
                S[4 * hf][e] = v.x, S[4 * hf + 1][e] = v.y, S[4 * hf + 2][e] = v.z, S[4 * hf + 3][e] = v.w;
            }
        } else {
            float f[8];
            ld8s(ss + (PAD ? kf_at(lane, (e * PK + row0) * 2) : kf_tile_at<true>(lane, row0, e, 0)), 1, 0, f);
#pragma unroll
            for (int r = 0; r < 8; r++)
                S[r][e] = f[r];
        }
    }
}

/* the consumer lane's new S into the staged block it came from (kf_stage_rows' places; a bf16
 * state rounded as stored): lanes write only what they read, so no warp waits for another */
template <bool SBF, bool PAD>
__device__ __forceinline__ void kf_stage_put(unsigned char *ss, int row0, int lane, const float (&S)[8][4])
{
    static_assert(SBF || !PAD, "only a bf16 state is staged in padded blocks");
#pragma unroll
    for (int e = 0; e < 4; e++) {
        if (!SBF) {
#pragma unroll
            for (int hf = 0; hf < 2; hf++)
                *(float4 *)(ss + kf_tile_at<false>(lane, row0, e, hf)) =
                    make_float4(S[4 * hf][e], S[4 * hf + 1][e], S[4 * hf + 2][e], S[4 * hf + 3][e]);
        } else {
            uint32_t wd[4];
#pragma unroll
            for (int i = 0; i < 4; i++)
                wd[i] = (uint32_t)rssm_f32_to_bf16(S[2 * i][e]) | ((uint32_t)rssm_f32_to_bf16(S[2 * i + 1][e]) << 16);
            *(uint4 *)(ss + (PAD ? kf_at(lane, (e * PK + row0) * 2) : kf_tile_at<true>(lane, row0, e, 0))) =
                make_uint4(wd[0], wd[1], wd[2], wd[3]);
        }
    }
}
/* consumer warp w's share of a staged K-first head, blocks 2w and 2w + 1, to the checkpoint at
 * dst: 16 bytes a lane, so that one warp-wide store covers 512 contiguous bytes (the lane pairs'
 * stores cover 16 lines each); tiled, a quarter warp reads the 8 chunks of one swizzled line */
template <bool SBF, bool PAD>
__device__ __forceinline__ void kf_stage_store(unsigned char *dst, const unsigned char *ss, int w, int lane)
{
    constexpr unsigned blk = kf_block_bytes<SBF>();
    static_assert(2 * PNC * 4 == PK, "two blocks of 4 channel rows per consumer warp");
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int m = 2 * w + i;
#pragma unroll
        for (unsigned c = 16 * lane; c < blk; c += 512)
            __stcs((uint4 *)(dst + m * blk + c), *(const uint4 *)(ss + (PAD ? kf_at(m, c) : kf_tile_byte<SBF>(m, c))));
    }
}

/* One function of about 360 lines, read phase by phase through its comments: split into named
 * device functions (bench/results/history: the architecture change) the generated code moved
 * enough that GDN replay at B = 512 took 300.1 us instead of 291.3 us on the H200 (same call,
 * both trees), and the kernel exists for that batch size. */
enum { BAL_WORD = 2 }; /* BAL: 0 the plain order, 1 the folding rows first, BAL_WORD that for one word */
template <bool KDA, bool SBF, bool RBF, bool IOBF, int BAL, bool PACKED, bool KF>
__global__ void __launch_bounds__(PNT, 1) pipe_kernel(const kargs A, const __grid_constant__ CUtensorMap kf_map)
{
    extern __shared__ __align__(128) unsigned char dsm[];
    const rssm_layer &l = A.l;
    static_assert(!(PACKED && BAL), "packed decode folds every row: nothing to deal first");
    const int L = l.ring_len, HV = l.num_v_heads, H = l.num_k_heads, group = A.group, NS = A.NS;
    constexpr int rsz = RBF ? 2 : 4, ssz = SBF ? 2 : 4;
    constexpr bool PAD = KF && kf_padded(SBF, PACKED), TILED = KF && !PAD;
    const size_t sb = stage_bytes(PACKED ? 0 : L, RBF, SBF, PAD), rb = ring_bytes(PACKED ? 0 : L, RBF);
    /* the CTA's head, then the stages; tiled (TILED), the CTA's head, the NS states from
     * kf_states_at (aligned to the swizzle's period), then the stages' heads and rings */
    constexpr unsigned sbytes = PK * PK * ssz, s0 = kf_states_at();
    cta_head &ch = *reinterpret_cast<cta_head *>(dsm);
    const int tid = threadIdx.x, w = tid >> 5, lane = tid & 31, c4 = lane * 4;
    /* GDN with an f32 state in the plain order stages its end folds (see the consumers): GDN B = 128
     * / 256 / 512 89.1 / 156.0 / 299.7 us against 90.2 / 157.0 / 301.5; with the folding rows first
     * it lost up to 4% (B = 32), with a bf16 state 2-5% (bench/results/deal-2026-12-02/) */
    constexpr bool STAGED = !KDA && !SBF && !BAL && !PACKED;
    /* K-first packed decode stores every head every step: the new state goes back into the stage's
     * buffer, which the consumers then store together (kf_stage_store), and is released after */
    constexpr bool PUT = PACKED && KF;
    auto head_of = [&](int st) {
        return reinterpret_cast<stage_head *>(TILED ? dsm + s0 + NS * sbytes + st * (sb - sbytes)
                                                    : dsm + sizeof(cta_head) + st * sb);
    };
    auto ring_k_of = [&](int st) { return (unsigned char *)head_of(st) + sizeof(stage_head); };
    auto ring_u_of = [&](int st) { return ring_k_of(st) + rb; };
    auto state_of = [&](int st) { return TILED ? dsm + s0 + st * sbytes : ring_k_of(st) + 2 * rb; };

    if (tid == 0) {
        PIPE_TRACE_ENTRY();
        if (TILED && (saddr(dsm) & 1023u)) __trap(); /* kf_states_at's offsets would not be 1024-aligned */
        for (int st = 0; st < NS; st++) {
            mbar_init(&ch.full[st], 32);
            mbar_init(&ch.empty_s[st], PNC * 32);
            mbar_init(&ch.empty_r[st], PNC * 32);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    /* the folding rows (Balance, BAL only): warp w takes words w, w + 18, .., lane l row 32 word + l.
     * Batches of one word (one_word: at most 32 rows) are read by every warp for itself, lane l row
     * l, once the mbarriers are published: no block barrier or prefix lies between the rows' reads
     * and a producer's first copy, and a producer takes its items' slots and cursors from the rows'
     * lanes instead of reading them again (V-first GDN B = 16 / 24 / 32 replay 0.8 / 1.4 / 2.9% less
     * time, a bf16 state 2.2 / 3.0%: bench/results/fold-bc-2026-12-04/ call E). V-first GDN tests
     * for one word at run time. The other kernels take the path only in instantiations of their
     * own (BAL_WORD, which the launch picks for one word): with the branch in the BAL kernel
     * K-first GDN replay was 1.4-3.2% faster at B = 12-32 but 3.1-3.5% slower at B = 64 / 128
     * (calls E, G). KDA's BAL_WORD consumers spill (K-first 44 bytes, V-first with an f32 ring
     * 12-24), and still gained 0.6-2.6% (bench/results/kf-word-2026-12-04/ call C), except K-first
     * with a bf16 state (2.1-2.6% slower), which deals one word as more. */
    const int B = A.io.batch;
    const int nw = BAL ? (B + 31) >> 5 : 0;
    const bool one_word = BAL && nw == 1 && (BAL == BAL_WORD || (!KDA && !KF));
    bool one_head = false;    /* GDN, BAL: units of one value head (see Work) */
    uint32_t w_bits[1] = {0}; /* one_word: the bitmap and its prefix, in registers */
    int32_t w_before[2] = {0, 0};
    int row_s = -1, row_c = 0; /* one_word: lane l's row l slot and cursor */
    if (one_word) {
        __syncthreads();
        const uint64_t keep = l2_keep_policy();
        bool folds = false, starts = false;
        if (lane < B) {
            row_s = ld_keep(A.io.slot + lane, keep);
            const int f = A.io.fold ? ld_keep(A.io.fold + lane, keep) : 0;
            if (row_s >= 0 && row_s < A.st.num_slots) {
                row_c = ld_keep(A.st.cursor + row_s, keep);
                folds = row_c == L - 1 || row_c == L || f;
                starts = row_c >= L;
            }
        }
        w_bits[0] = __ballot_sync(FULL_MASK, folds), w_before[1] = __popc(w_bits[0]);
        one_head = !__any_sync(FULL_MASK, starts);
    } else if (BAL) {
        bool starts = false; /* a row of this thread's starts with a fold (cursor at L) */
        const uint64_t keep = l2_keep_policy();
        for (int wi = w; wi < nw; wi += PNC + PNP) {
            const int b = wi * 32 + lane;
            bool folds = false;
            if (b < B) {
                const int s = ld_keep(A.io.slot + b, keep);
                const int f = A.io.fold ? ld_keep(A.io.fold + b, keep) : 0;
                if (s >= 0 && s < A.st.num_slots) {
                    const int c = ld_keep(A.st.cursor + s, keep);
                    folds = c == L - 1 || c == L || f;
                    starts = starts || c >= L;
                }
            }
            const unsigned bits = __ballot_sync(FULL_MASK, folds);
            if (lane == 0) ch.fold_bits[wi] = bits;
        }
        if (KDA)
            __syncthreads();
        else
            one_head = !__syncthreads_or(starts);
        if (w == 0) { /* exclusive prefix of the words' counts; lane l sums words 4l .. 4l + 3 */
            int cnt[4], sum = 0;
#pragma unroll
            for (int e = 0; e < 4; e++)
                cnt[e] = 4 * lane + e < nw ? __popc(ch.fold_bits[4 * lane + e]) : 0, sum += cnt[e];
            int incl = sum;
#pragma unroll
            for (int d = 1; d < 32; d <<= 1) {
                const int t = __shfl_up_sync(FULL_MASK, incl, d);
                if (lane >= d) incl += t;
            }
            int run = incl - sum;
#pragma unroll
            for (int e = 0; e < 4; e++) {
                if (4 * lane + e <= nw) ch.folds_before[4 * lane + e] = run;
                run += cnt[e];
            }
            if (lane == 31 && nw == PBAL_ROWS / 32) ch.folds_before[nw] = run;
        }
    }
    if (!one_word) __syncthreads();

    const int upr = one_head ? HV : H, per = one_head ? 1 : group; /* units per row, value heads per unit */
    const int64_t units = (int64_t)B * upr;
    const int64_t mine = (units - blockIdx.x + gridDim.x - 1) / gridDim.x;
    const int items = (int)(mine * per);

    if (w >= PNC) {
        /* ---------------- producer ---------------- */
        /* np = A.producers take items (item j: producer j % np), at most NS (the launch sees to
         * it): a producer's item j waits for the phase of empty_s[j % NS] that item j - NS
         * completes, by its parity, and only its own previous item (j - np >= j - NS) makes sure
         * that the barrier is not a whole phase further on, where the parity would match too */
        const int pw = w - PNC, np = A.producers;
        if (pw >= np) return;
        /* item j's (row, key head, value head): position p; with BAL the folding rows' units first */
        const int64_t fold_units = BAL ? (int64_t)(one_word ? w_before[1] : ch.folds_before[nw]) * upr : 0;
        auto locate = [&](int j, int &b, int &kh, int &hv) {
            const int64_t p = blockIdx.x + (int64_t)(j / per) * gridDim.x;
            int u;
            if (one_word) /* pipeline_order.h */
                rssm_po_unit(w_bits, w_before, 1, fold_units, upr, p, &b, &u);
            else
                rssm_po_unit(ch.fold_bits, ch.folds_before, nw, fold_units, upr, p, &b, &u);
            hv = one_head ? u : u * group + j % group;
            kh = one_head ? u / group : u;
        };
        /* metadata window: lane i holds slot, cursor and ring base (PACKED: slot and write slot)
         * of this producer's item k0 + i (k: its own item count), loaded 32 items at a time, so
         * that the per-item chain has no dependent global read left */
        int win_s = -1, win_c = 0, win_base = 0, win_d = -1;
        const uint64_t keep = l2_keep_policy();
        for (int k = 0, j = pw; j < items; k++, j += np) {
            if ((k & 31) == 0) {
                const int jl = j + np * lane;
                win_s = -1, win_c = 0, win_base = 0;
                if (one_word) {
                    int bl = 0, khl, hvl = 0;
                    if (jl < items) locate(jl, bl, khl, hvl);
                    const int sb = __shfl_sync(FULL_MASK, row_s, bl), cb = __shfl_sync(FULL_MASK, row_c, bl);
                    if (jl < items) {
                        win_s = sb;
                        if (sb >= 0 && sb < A.st.num_slots)
                            win_c = cb, win_base = ld_keep(A.st.ring_base + (int64_t)sb * HV + hvl, keep);
                    }
                } else if (jl < items) {
                    int bl, khl, hvl;
                    locate(jl, bl, khl, hvl);
                    win_s = ld_keep(A.io.slot + bl, keep);
                    if (PACKED) {
                        win_d = A.io.write_slot ? ld_keep(A.io.write_slot + bl, keep) : win_s;
                    } else if (win_s >= 0 && win_s < A.st.num_slots) {
                        win_c = ld_keep(A.st.cursor + win_s, keep);
                        win_base = ld_keep(A.st.ring_base + (int64_t)win_s * HV + hvl, keep);
                    }
                }
            }
            const int st = j % NS, n = j / NS;
            int b, kh, hv;
            locate(j, b, kh, hv);
            stage_head &sh = *head_of(st);
            if (lane == 0) PIPE_TRACE_ITEM(j, 4);
            /* token inputs: they depend on nothing loaded; in flight during the waits below */
            float kr[4], qr[4], vv[4], ga[4], dtb[4], alog = 0.0f, braw;
            ld4g(A.io.k, IOBF, (int64_t)b * A.io.k_stride + kh * PK + c4, kr);
            ld4g(A.io.q, IOBF, (int64_t)b * A.io.q_stride + kh * PK + c4, qr);
            ld4g(A.io.v, IOBF, (int64_t)b * A.io.v_stride + hv * PK + c4, vv);
            const int64_t bh = (int64_t)b * HV + hv;
            if (A.io.g) { /* packed (rssm_cuda_pipe_ok) */
                if (KDA) {
                    const float4 g = __ldg((const float4 *)(A.io.g + bh * PK + c4));
                    ga[0] = g.x, ga[1] = g.y, ga[2] = g.z, ga[3] = g.w;
                } else {
                    ga[0] = ga[1] = ga[2] = ga[3] = __ldg(A.io.g + bh);
                }
                braw = __ldg(A.io.beta + bh);
            } else {
                alog = __ldg(A.io.A_log + hv);
                if (KDA) {
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        ga[e] = ld_dt(A.io.a, l.io_dtype, (int64_t)b * A.io.a_stride + hv * PK + c4 + e),
                        dtb[e] = __ldg(A.io.dt_bias + hv * PK + c4 + e);
                } else {
                    ga[0] = ld_dt(A.io.a, l.io_dtype, (int64_t)b * A.io.a_stride + hv);
                    dtb[0] = __ldg(A.io.dt_bias + hv);
                }
                braw = ld_dt(A.io.b, l.io_dtype, (int64_t)b * A.io.b_stride + hv);
            }
            const int forced = !PACKED && A.io.fold ? ld_keep(A.io.fold + b, keep) != 0 : 0; /* packed folds anyway */
            const int s = __shfl_sync(FULL_MASK, win_s, k & 31);
            bool bad_slot = s < -1 || s >= A.st.num_slots;
            bool live = !bad_slot && s >= 0;
            int d = s; /* PACKED: the write slot (decode_k128.cu's rules: -1 pads the row) */
            if (PACKED) {
                d = __shfl_sync(FULL_MASK, win_d, k & 31);
                if (live && (d < -1 || d >= A.st.num_slots)) bad_slot = true;
                live = live && !bad_slot && d >= 0;
            }
            const int64_t hd = live ? (int64_t)s * HV + hv : 0;
            /* the state as soon as its buffer is free, the ring as soon as the stage is; the
             * full barrier's arrivals come after the header is written. The state's copy needs
             * only the slot: it is issued before the cursor and ring base are waited for (a
             * window's first item, the step's first above all, has them in flight) */
            if (n > 0) mbar_wait(&ch.empty_s[st], (n - 1) & 1);
            /* BAL (small grids): a CTA's first NS copies go out one after the other, each once
             * the one before has landed, so the first item arrives at the rate of one copy per
             * SM instead of sharing it with every stage's copy, and the consumers start sooner
             * (GDN B = 19 22.4 -> 20.7 us, B = 19-160 and KDA up to B = 48 gain 1-7%:
             * bench/results/stream-2026-12-02/ab-call1.txt). Item j - 1 is another producer's:
             * had that one run a whole round ahead, full[j - 1] would be past its second phase and
             * parity 0 would wait for the third; the consumers having taken item j - 1 (empty_s[j
             * - 1], whose second phase needs item j itself) says it landed as well. */
            if (BAL && n == 0 && j > 0) mbar_wait_either(&ch.full[j - 1], 0, &ch.empty_s[j - 1], 0);
            /* A K-first head's copies come from one lane chosen by elect.sync, which the compiler
             * knows to be one lane, so that it issues them as they are instead of wrapping each in
             * a loop over the issuing lanes (ELECT, R2UR, BRA.U.ANY). With a bf16 state GDN B = 512
             * replay took 254.4 -> 241.9 us, packed decode 363.2 -> 352.8, KDA 1.4-3.6% less. An
             * f32 state's replay (then 64 copies of rotated blocks) took 7.6% and 2.2% less at GDN
             * B = 16 and 64, 0.5% more at 512, KDA 1.9-2.4% less; f32 packed decode, then 32 bulk
             * copies, lost 0.7-1.6% (bench/results/kf-elect-2026-12-04/, calls B and D). Its four
             * tensor copies are elected too (bench/results/kf-tiled-2026-12-04/ call F). */
            constexpr bool ELECT = KF;
            if (ELECT && live) __syncwarp();
            if (live && (ELECT ? elect_one() : lane == 0)) {
                PIPE_TRACE_ITEM(j, 3);
                const unsigned char *src = (const unsigned char *)A.st.checkpoint + (hd << 14) * ssz;
                mbar_expect_tx(&ch.full[st], sbytes);
                if (PAD)
                    kf_stage_copy_padded(state_of(st), src, &ch.full[st]);
                else if (TILED)
                    kf_tile_copy<SBF>(state_of(st), &kf_map, (int)hd, &ch.full[st]);
                else
                    bulk_copy(state_of(st), src, sbytes, &ch.full[st]);
            }
            const int c = PACKED ? 0 : __shfl_sync(FULL_MASK, win_c, k & 31),
                      base = PACKED ? 0 : __shfl_sync(FULL_MASK, win_base, k & 31);
            const int h = c - base;
            const bool bad_ring = live && (c < 0 || c > L || base < 0 || h < 0);
            const bool copy_ring = live && !bad_ring && h > 0;
            if ((bad_slot || bad_ring) && hv == 0 && lane == 0) atomicAdd(A.err, 1);
            if (n > 0) mbar_wait(&ch.empty_r[st], (n - 1) & 1);
            if (copy_ring && lane == 0) {
                /* KDA entries at positions 0 .. h-1; GDN at p0 = base .. base+h-1, its G copied
                 * from position p0 & ~3 (16-byte aligned; the consumers read from sh.G[p0 & 3]) */
                const int p0 = KDA ? 0 : base, g0 = p0 & ~3;
                const unsigned eb = (unsigned)(h * PK * rsz);
                const int64_t rk0 = ((KDA ? hd : (int64_t)s * H + kh) * L + p0) << 7;
                const float *gsrc = (const float *)A.st.ring_g + (KDA ? (hd * L + h - 1) << 7 : hd * L + g0);
                const unsigned gb = KDA ? PK * 4 : (unsigned)((4 * (p0 + h - g0) + 15) & ~15);
                mbar_expect_tx(&ch.full[st], 2 * eb + gb);
                bulk_copy(ring_k_of(st), (const unsigned char *)A.st.ring_k + rk0 * rsz, eb, &ch.full[st]);
                bulk_copy(ring_u_of(st), (const unsigned char *)A.st.ring_u + ((hd * L + p0) << 7) * rsz, eb,
                          &ch.full[st]);
                bulk_copy(sh.G, gsrc, gb, &ch.full[st]);
            }

            /* token preparation: the operations of decode_k128.cu */
            float kn[4], qn[4], g[4];
            normalise_kq(l, kr, qr, kn, qn);
            if (A.io.g) {
#pragma unroll
                for (int e = 0; e < 4; e++)
                    g[e] = KDA || PACKED ? ga[e] : rssm_gate_floor_f32(ga[e]); /* GDN replay: the gate floor */
            } else if (KDA) {
#pragma unroll
                for (int e = 0; e < 4; e++)
                    g[e] = rssm_gate_f32(ga[e], alog, dtb[e], l.has_lower_bound, l.lower_bound);
            } else {
                const float g0 = rssm_gate_f32(ga[0], alog, dtb[0], l.has_lower_bound, l.lower_bound);
                g[0] = g[1] = g[2] = g[3] = PACKED ? g0 : rssm_gate_floor_f32(g0);
            }
            float kq = 0.0f;
#pragma unroll
            for (int e = 0; e < 4; e++)
                kq = __fmaf_rn(kn[e], qn[e], kq);
            kq = warp_sum(kq);

            *((float4 *)&sh.kn[c4]) = make_float4(kn[0], kn[1], kn[2], kn[3]);
            *((float4 *)&sh.qn[c4]) = make_float4(qn[0], qn[1], qn[2], qn[3]);
            *((float4 *)&sh.gt[c4]) = make_float4(g[0], g[1], g[2], g[3]);
            *((float4 *)&sh.v[c4]) = make_float4(vv[0], vv[1], vv[2], vv[3]);
            if (lane == 0) {
                sh.s = s, sh.b = b, sh.hv = hv, sh.c = c, sh.base = base, sh.h = h;
                if (PACKED) sh.d = d;
                sh.flags = (live && !bad_ring ? 0 : ITEM_SKIP) | (forced ? ITEM_FORCED : 0);
                sh.beta = A.io.g ? braw : rssm_sigmoid_f32(braw);
                sh.kq = kq;
            }
            mbar_arrive(&ch.full[st]); /* every lane, after its own stores */
            if (lane == 0) PIPE_TRACE_ITEM(j, 5);
        }
        return;
    }

    /* ---------------- consumers ---------------- */
    const int row0 = w * 8;
    int st = 0, ph = 0, done = 0; /* done: items computed (not skipped), picks the weight buffer */
    for (int j = 0; j < items; j++) {
        mbar_wait(&ch.full[st], ph);
        if (tid == 0) PIPE_TRACE_ITEM(j, 1);
        const stage_head &sh = *head_of(st);
        const int s = sh.s, b = sh.b, hv = sh.hv, flags = sh.flags;
        const int64_t ob = ((int64_t)b * HV + hv) << 7; /* output offset of the head */
        if (flags & ITEM_SKIP) {
            if (lane < 8) st_dt(A.io.o, l.io_dtype, ob + row0 + lane, 0.0f);
            if (tid == 0) PIPE_TRACE_ITEM(j, 2);
            mbar_arrive(&ch.empty_s[st]), mbar_arrive(&ch.empty_r[st]);
            if (++st == NS) st = 0, ph ^= 1;
            continue;
        }
        const int c = sh.c, base = sh.base;
        int h = sh.h;
        const int64_t hd = (int64_t)s * HV + hv, hdw = PACKED ? (int64_t)sh.d * HV + hv : hd; /* hdw: stored */
        float S[8][4];
        if (KF) {
            kf_stage_rows<SBF, PAD>(state_of(st), row0, lane, S);
        } else {
            const unsigned char *ss = state_of(st);
#pragma unroll
            for (int r = 0; r < 8; r++)
                ld4(ss, SBF, (row0 + r) * PK + c4, S[r]);
        }
        if (!STAGED && !PUT) mbar_arrive(&ch.empty_s[st]); /* every thread, after its own reads */
        const unsigned char *sK = ring_k_of(st), *sU = ring_u_of(st);
        const float *sG = sh.G + (KDA ? 0 : base & 3); /* GDN: G of the live entries (see the copies) */
        auto rows_off = [&]() { return (hd << 14) + row0 * PK + c4; };
        auto rows_out = [&]() { return (hdw << 14) + row0 * PK + c4; }; /* the end fold's destination */
        auto kf_off = [&](int64_t head) { return lane_state_off(head << 14, row0, c4, true); };

        /* fold of the h committed entries into S (k128_common.cuh); GDN by shuffled factors, one
         * entry a round on a K-first state (two spilled its consumers' registers; one took 0.2-0.7%
         * off f32 K-first replay at B = 12-64, 1-1.6% with a bf16 state: fold-bc-2026-12-04/ call D) */
        auto fold_ring = [&](const float(&Gs)[4]) {
            if constexpr (KDA)
                fold_ring_rows<true>(S, Gs, h, sK, sU, sG, RBF, c4, row0);
            else
                fold_ring_rows_bc<KF ? 1 : 2>(S, Gs, h, sK, sU, sG, RBF, c4, row0);
        };

        /* start fold (the cursor at L, after a verify) */
        const int uniform = PACKED ? 0 : rssm_start_fold(c, 1, L, 0);
        const int c0 = uniform ? 0 : c;
        /* 1: the shared end fold, 2: the head's early fold (min G past -G_MAX), by the head's G */
        auto end_of = [&](float g) {
            if (PACKED) return 1; /* packed decode: S_n over an empty ring, stored */
            int e = (c0 + 1 == L || (flags & ITEM_FORCED)) ? 1 : 0;
            if (!e && g < -l.fold_threshold) e = 2;
            return e;
        };
        /* STAGED: an end fold over live entries (none left after a start fold) stages them as
         * f32 in the stage's state buffer (fold_ring_rows_staged: 43 instructions per entry and
         * warp, 70 in fold_ring_rows' loop), which it then releases after the fold instead of now */
        const bool staged = STAGED && !uniform && h > 0 && end_of(sG[h - 1] + sh.gt[c4]) != 0;
        if (STAGED && !staged) mbar_arrive(&ch.empty_s[st]);
        int new_base = base;
        if (uniform) {
            if (h > 0) {
                float Gs[4];
#pragma unroll
                for (int e = 0; e < 4; e++)
                    Gs[e] = KDA ? sG[c4 + e] : sG[h - 1];
                fold_ring(Gs);
                store_checkpoint_rows<SBF>(
                    A.st.checkpoint, [&](int r) { return KF ? kf_off(hd) : rows_off() + r * PK; }, KF, S);
            }
            h = 0;
            new_base = c0;
        }
        const int pos = KDA ? h : c0; /* the new entry's ring position (GDN: the cursor value c0) */

        /* cumulative gates of the lane's channels; x_k = e^G k, x_q = e^G q; the ring weights
         * take (KDA) x_k, x_q or (GDN) k, q */
        float G4[4], kn4[4], qn4[4], xk4[4], xq4[4];
#pragma unroll
        for (int e = 0; e < 4; e++)
            G4[e] = (h > 0 ? (KDA ? sG[c4 + e] : sG[h - 1]) : 0.0f) + sh.gt[c4 + e], kn4[e] = sh.kn[c4 + e],
            qn4[e] = sh.qn[c4 + e];
        float gmin = 0.0f;
        if (KDA) gmin = warp_min(fminf(fminf(G4[0], G4[1]), fminf(G4[2], G4[3])));
        {
            const float eg0 = KDA ? 0.0f : expf(G4[0]);
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const float eg = KDA ? expf(G4[e]) : eg0;
                xk4[e] = eg * kn4[e], xq4[e] = eg * qn4[e];
            }
        }
        const int end = end_of(KDA ? gmin : G4[0]); /* GDN: G4[0] as in `staged` */

        /* ring weights w_p (p < h): warp p % 16; two buffers, so that the next computed item
         * writes its weights while slower warps still read these (a consumer barrier lies
         * between two uses of one buffer) */
        float *wk = ch.wk[done & 1], *wq = ch.wq[done & 1];
        done++;
        ring_weights<KDA>(
            wk, wq, sK, RBF, sG, G4[0], h, w, PNC, c4, lane, [&](int e) { return KDA ? xk4[e] : kn4[e]; },
            [&](int e) { return KDA ? xq4[e] : qn4[e]; });
        /* the new entry at ring position pos: its k (GDN: by the group's last value head, see
         * Races, also when this head folds early) and, where the head keeps the entry, its G */
        if ((KDA ? !end : end != 1) && w == PNC - 1) {
            float ks4[4];
#pragma unroll
            for (int e = 0; e < 4; e++)
                ks4[e] = round_dt(l.ring_dtype, KDA ? kn4[e] * expf(-G4[e]) : kn4[e]);
            const int kh = hv / group;
            if (KDA || hv == kh * group + group - 1)
                st4(A.st.ring_k, RBF, (((KDA ? hd : (int64_t)s * H + kh) * L + pos) << 7) + c4, ks4);
            float *rg = (float *)A.st.ring_g + (hd * L + pos) * (KDA ? PK : 1);
            if (KDA)
                *((float4 *)(rg + c4)) = make_float4(G4[0], G4[1], G4[2], G4[3]);
            else if (!end && lane == 0)
                rg[0] = G4[0];
        }
        consumer_sync();

        if (end) {
            /* end fold: u of the 8 rows, then S_n and o = S_n q (decode_k128.cu's order) */
            float v[8];
            end_fold_dots(
                v, S, [&](int e) { return xk4[e]; }, sU, RBF, h, wk, lane, row0);
            RS<8, 1, 16>::run(v, lane);
            const float myu = sh.beta * (sh.v[row0 + (lane >> 2)] - v[0]); /* u of row lane / 4 */
            if (staged) {
                /* state_of(st) as an offset (through a pointer difference the code took generic-to-shared
                 * conversions) */
                const int at =
                    (int)(TILED ? s0 + st * sbytes : sizeof(cta_head) + st * sb + sizeof(stage_head) + 2 * rb);
                fold_ring_rows_staged(S, G4, h, sK, sU, sG, RBF, c4, row0, at, fold_stage_entries(L), PNC * 32,
                                      [] { consumer_sync(); });
                fence_proxy_async_smem(); /* the staged keys and u, before the next item's TMA there */
                mbar_arrive(&ch.empty_s[st]);
            } else {
                fold_ring(G4);
            }
            float o[8];
            end_fold_update(
                S, o, myu, [&](int e) { return kn4[e]; }, [&](int e) { return qn4[e]; });
            RS<8, 1, 16>::run(o, lane);
            if ((lane & 3) == 0) st_dt(A.io.o, l.io_dtype, ob + row0 + (lane >> 2), o[0]);
            if (PUT) {
                kf_stage_put<SBF, PAD>(state_of(st), row0, lane, S);
                consumer_sync();
                kf_stage_store<SBF, PAD>((unsigned char *)A.st.checkpoint + (hdw << 14) * ssz, state_of(st), w, lane);
                fence_proxy_async_smem(); /* the new state put there, before the next item's TMA */
                mbar_arrive(&ch.empty_s[st]);
            } else if (KF) {
                store_state_kfirst<SBF, false>(A.st.checkpoint, kf_off(hdw), S);
            } else if (!SBF) {
#pragma unroll
                for (int r = 0; r < 8; r++)
                    __stcs((float4 *)((float *)A.st.checkpoint + rows_out() + r * PK),
                           make_float4(S[r][0], S[r][1], S[r][2], S[r][3]));
            } else {
#pragma unroll
                for (int r = 0; r < 8; r++)
                    st4(A.st.checkpoint, 1, rows_out() + r * PK, S[r]);
            }
            new_base = end == 2 ? c0 + 1 : 0;
        } else {
            /* row dots with x_k and x_q plus the ring's weighted u, then u and o of row lane / 4 */
            float v[16]; /* row r: v[2r] (k), v[2r + 1] (q) */
#pragma unroll
            for (int r = 0; r < 8; r++) {
                float a = 0.0f, q = 0.0f;
#pragma unroll
                for (int e = 0; e < 4; e++)
                    a = __fmaf_rn(S[r][e], xk4[e], a), q = __fmaf_rn(S[r][e], xq4[e], q);
                v[2 * r] = a, v[2 * r + 1] = q;
            }
#pragma unroll 1
            for (int i = lane; i < h; i += 32) {
                float uu[8];
                ld8s(sU, RBF, i * PK + row0, uu);
                const float a = wk[i], q = wq[i];
#pragma unroll
                for (int r = 0; r < 8; r++) {
                    v[2 * r] = __fmaf_rn(uu[r], a, v[2 * r]);
                    v[2 * r + 1] = __fmaf_rn(uu[r], q, v[2 * r + 1]);
                }
            }
            RS<16, 1, 16>::run(v, lane);
            /* (row lane / 4, k) on lane 4 (lane / 4), its q on lane 4 (lane / 4) + 2 */
            const float dq = __shfl_down_sync(FULL_MASK, v[0], 2);
            if ((lane & 3) == 0) {
                const int jr = row0 + (lane >> 2);
                const float uk = sh.beta * (sh.v[jr] - v[0]);
                const float o = __fmaf_rn(uk, sh.kq, dq);
                st_dt(A.io.o, l.io_dtype, ob + jr, o);
                st_dt(A.st.ring_u, l.ring_dtype, ((hd * L + pos) << 7) + jr, round_dt(l.ring_dtype, uk));
            }
        }
        if (new_base != base && w == 0 && lane == 0) A.st.ring_base[hd] = new_base;
        if (tid == 0) PIPE_TRACE_ITEM(j, 2);
        mbar_arrive(&ch.empty_r[st]);
        if (++st == NS) st = 0, ph ^= 1;
    }
}

/* the instantiations: replay in plain order or with the folding rows first (BAL; batches of one
 * word: BAL_WORD), and packed decode (no ring, so one instantiation whatever the ring dtype);
 * each for both state layouts */
enum pipe_kind { PIPE_PLAIN, PIPE_BAL, PIPE_PACKED, PIPE_BAL_WORD, PIPE_KINDS };
template <bool KDA, bool SBF, int BAL, bool PACKED, bool KF> static void *kernel_of(bool rbf, bool iobf)
{
    if constexpr (PACKED)
        return iobf ? (void *)pipe_kernel<KDA, SBF, false, true, false, true, KF>
                    : (void *)pipe_kernel<KDA, SBF, false, false, false, true, KF>;
    if (rbf)
        return iobf ? (void *)pipe_kernel<KDA, SBF, true, true, BAL, false, KF>
                    : (void *)pipe_kernel<KDA, SBF, true, false, BAL, false, KF>;
    return iobf ? (void *)pipe_kernel<KDA, SBF, false, true, BAL, false, KF>
                : (void *)pipe_kernel<KDA, SBF, false, false, BAL, false, KF>;
}
template <int BAL, bool PACKED, bool KF> static void *kernel_for(bool kda, bool sbf, bool rbf, bool iobf)
{
    /* one word: V-first GDN tests for it at run time; K-first KDA with a bf16 state deals it as more
     * (its BAL_WORD consumers spilled 44 bytes and lost 2.1-2.6%, kf-word-2026-12-04/ call C) */
    constexpr int GB = BAL == BAL_WORD && !KF ? 1 : BAL, KB = BAL == BAL_WORD && KF ? 1 : BAL;
    return kda ? (sbf ? kernel_of<true, true, KB, PACKED, KF>(rbf, iobf)
                      : kernel_of<true, false, BAL, PACKED, KF>(rbf, iobf))
               : (sbf ? kernel_of<false, true, GB, PACKED, KF>(rbf, iobf)
                      : kernel_of<false, false, GB, PACKED, KF>(rbf, iobf));
}
template <bool KF> static void *kernel_for(bool kda, bool sbf, bool rbf, bool iobf, pipe_kind kind)
{
    return kind == PIPE_PACKED     ? kernel_for<0, true, KF>(kda, sbf, rbf, iobf)
           : kind == PIPE_BAL      ? kernel_for<1, false, KF>(kda, sbf, rbf, iobf)
           : kind == PIPE_BAL_WORD ? kernel_for<BAL_WORD, false, KF>(kda, sbf, rbf, iobf)
                                   : kernel_for<0, false, KF>(kda, sbf, rbf, iobf);
}
static void *kernel_for(bool kda, bool sbf, bool rbf, bool iobf, bool kf, pipe_kind kind)
{
    return kf ? kernel_for<true>(kda, sbf, rbf, iobf, kind) : kernel_for<false>(kda, sbf, rbf, iobf, kind);
}

static int max_smem; /* the device's opt-in shared memory per block (bytes), set by init */
static PFN_cuTensorMapEncodeTiled_v12000 encode_tiled; /* set by init where the driver has it */

/* the map kf_tile_copy reads a K-first checkpoint of `heads` heads through: dims (row v, block m
 * of 4 channels, channel e in the block, head), boxes of kf_tile_rows rows x 32 x 4 with the
 * 128-byte swizzle */
static cudaError_t kf_tile_map(CUtensorMap *map, const void *checkpoint, int64_t heads, bool sbf)
{
    const cuuint64_t z = sbf ? 2 : 4, dim[4] = {PK, 32, 4, (cuuint64_t)heads};
    const cuuint64_t stride[3] = {4 * PK * z, PK * z, PK * PK * z}; /* bytes: m, e, head */
    const cuuint32_t box[4] = {(cuuint32_t)(sbf ? kf_tile_rows<true>() : kf_tile_rows<false>()), 32, 4, 1},
                     step[4] = {1, 1, 1, 1};
    /* L2 promotion to 128 bytes (none measured the same); 256, where each copy also asks for the
     * next one's bytes, made GDN B = 512 replay 2-5% slower (bench/results/kf-tiled-2026-12-04/,
     * call B) */
    const CUresult r =
        encode_tiled(map, sbf ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4,
                     (void *)checkpoint, dim, stride, box, step, CU_TENSOR_MAP_INTERLEAVE_NONE,
                     CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

} // namespace rssm_pipe

/* ---- dispatch ---------------------------------------------------------------------------- */

/* A stage's bytes for this layer (packed decode stages no ring). */
static size_t pipe_stage_bytes(const rssm_layer *l, bool packed)
{
    return rssm_pipe::stage_bytes(
        packed ? 0 : l->ring_len, l->ring_dtype == RSSM_DTYPE_BF16, l->state_dtype == RSSM_DTYPE_BF16,
        l->state_layout == RSSM_LAYOUT_KV && rssm_pipe::kf_padded(l->state_dtype == RSSM_DTYPE_BF16, packed));
}
/* a K-first state staged by tensor copies (see kf_tile_copy): all but a bf16 state in packed decode */
static bool pipe_tiled(const rssm_layer *l, bool packed)
{
    return l->state_layout == RSSM_LAYOUT_KV && !rssm_pipe::kf_padded(l->state_dtype == RSSM_DTYPE_BF16, packed);
}
/* the CTA's shared memory besides its stages: its head (tiled, up to the states' alignment) */
static size_t pipe_fixed_bytes(const rssm_layer *l, bool packed)
{
    return pipe_tiled(l, packed) ? rssm_pipe::kf_states_at() : sizeof(rssm_pipe::cta_head);
}

/* Stages that fit one CTA's shared memory for this layer (0: the pipeline does not apply). */
static int pipe_stages(const rssm_layer *l, bool packed)
{
    using namespace rssm_pipe;
    const size_t sb = pipe_stage_bytes(l, packed), fixed = pipe_fixed_bytes(l, packed);
    if (max_smem <= (int)fixed) return 0; /* not initialised */
    const int ns = (int)(((size_t)max_smem - fixed) / sb);
    return ns < 2 ? 0 : ns > PNS_MAX ? PNS_MAX : ns;
}

/* 1 when replay or packed decode step A can run on the pipeline: K = V = 128, T = 1,
 * (replay) L a multiple of 4 (16-byte aligned G copies), 16-byte aligned state arrays (TMA),
 * enough shared memory. */
int rssm_cuda_pipe_ok(const kargs *A)
{
    const rssm_layer *l = &A->l;
    const rssm_step_io *io = &A->io;
    const bool packed = A->mode == MODE_PACKED;
    if ((!packed && A->mode != MODE_REPLAY) || io->tokens != 1 || l->head_k_dim != 128 || l->head_v_dim != 128)
        return 0;
    if (A->group < 1 || l->num_v_heads != l->num_k_heads * A->group) return 0;
    if (!rssm_aligned16(A->st.checkpoint)) return 0;
    /* tiled: the tensor map's encoder, and head indices that a tensor copy's coordinate holds */
    if (pipe_tiled(l, packed) && (!rssm_pipe::encode_tiled || (int64_t)A->st.num_slots * l->num_v_heads > INT32_MAX))
        return 0;
    if (!packed && (l->ring_len % 4 || !rssm_aligned16(A->st.ring_k) || !rssm_aligned16(A->st.ring_u) ||
                    !rssm_aligned16(A->st.ring_g)))
        return 0;
    /* the producer reads 4 elements of k, q, v (and KDA g) per lane in one access */
    if (io->q_stride % 4 || io->k_stride % 4 || io->v_stride % 4 || !rssm_aligned16(io->q) || !rssm_aligned16(io->k) ||
        !rssm_aligned16(io->v) || (io->g && !rssm_aligned16(io->g)))
        return 0;
    /* precomputed gates read packed (their own token strides: the general kernel) */
    const int64_t gk = l->gate == RSSM_GATE_KDA ? PK : 1;
    if (io->g && (io->g_stride != l->num_v_heads * gk || io->beta_stride != l->num_v_heads)) return 0;
    return pipe_stages(l, packed) > 0;
}

cudaError_t rssm_cuda_pipe_init(int device)
{
    using namespace rssm_pipe;
    const cudaError_t pe = cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    if (pe != cudaSuccess) return pe;
    /* without the encoder (a driver before CUDA 12), the tiled K-first steps stay on the per-head kernel */
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) ==
            cudaSuccess &&
        found == cudaDriverEntryPointSuccess)
        encode_tiled = (PFN_cuTensorMapEncodeTiled_v12000)fn;
    else
        (void)cudaGetLastError();
    /* gate, state, ring and io dtypes, layout (bits 0-4) by kind (i / 32) */
    for (int i = 0; i < 32 * PIPE_KINDS; i++) {
        const cudaError_t e = cudaFuncSetAttribute(kernel_for(i & 1, i & 2, i & 4, i & 8, i & 16, (pipe_kind)(i / 32)),
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

/* One CTA per SM (at most one per unit of work); A.NS = stages. Replay: balance 1 deals the
 * folding rows first, 0 keeps the plain round robin, -1 chooses by grid size (see Balance);
 * packed decode folds every row and runs the plain round robin. */
cudaError_t rssm_cuda_pipe_launch(kargs A, int sm_count, int balance, int producers, cudaStream_t stream)
{
    using namespace rssm_pipe;
    const rssm_layer *l = &A.l;
    const bool packed = A.mode == MODE_PACKED;
    A.NS = pipe_stages(l, packed);
    const int64_t units = (int64_t)A.io.batch * l->num_k_heads;
    /* one CTA per SM. Fewer CTAs that divide the units evenly (128 of 132) lost badly in the plain
     * order: position p goes to CTA p % grid, so a grid that divides the rows' cursor period puts
     * every folding row on the same few CTAs (GDN B = 512 replay 295.2 -> 464.7 us;
     * bench/results/pipe-grid-2026-12-04/) */
    const unsigned grid = (unsigned)(units < sm_count ? units : sm_count);
    if (grid == 0) return cudaSuccess;
    const size_t smem = pipe_fixed_bytes(l, packed) + (size_t)A.NS * pipe_stage_bytes(l, packed);
    /* Balance where the kernel lasts as long as its slowest CTA (few heads per CTA) */
    const bool fits = !packed && A.io.batch <= PBAL_ROWS; /* the bitmap's size */
    const int most = l->gate == RSSM_GATE_KDA            ? PBAL_ITEMS_KDA
                     : l->state_dtype == RSSM_DTYPE_BF16 ? PBAL_ITEMS_GDN_SBF
                                                         : PBAL_ITEMS_GDN;
    const bool bal =
        fits && (balance == 1 || (balance == -1 && (int64_t)A.io.batch * l->num_v_heads <= (int64_t)most * grid));
    int np = producers > 0 ? producers : rssm_pipe_producers((int64_t)A.io.batch * l->num_v_heads, grid);
    if (np > PNP) np = PNP;
    A.producers = np < A.NS ? np : A.NS; /* see the producer */
    void *k = kernel_for(l->gate == RSSM_GATE_KDA, l->state_dtype == RSSM_DTYPE_BF16, l->ring_dtype == RSSM_DTYPE_BF16,
                         l->io_dtype == RSSM_DTYPE_BF16, l->state_layout == RSSM_LAYOUT_KV,
                         packed                                     ? PIPE_PACKED
                         : bal && A.io.batch <= RSSM_PIPE_WORD_ROWS ? PIPE_BAL_WORD
                         : bal                                      ? PIPE_BAL
                                                                    : PIPE_PLAIN);
    CUtensorMap map = {};
    if (pipe_tiled(l, packed)) {
        const cudaError_t e = kf_tile_map(&map, A.st.checkpoint, (int64_t)A.st.num_slots * l->num_v_heads,
                                          l->state_dtype == RSSM_DTYPE_BF16);
        if (e != cudaSuccess) return e;
    }
    void *args[] = {&A, &map};
    return cudaLaunchKernel(k, dim3(grid), dim3(PNT), args, smem, stream);
}

/* Writes the last launch's per-item timeline to `path` as CSV (diagnostic builds with
 * RSSM_PIPE_TRACE; otherwise nothing). */
void rssm_cuda_pipe_trace_write(const char *path) { PIPE_TRACE_WRITE(path); }
