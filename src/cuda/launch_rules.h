/*
 * launch_rules.h — the launch switches of the K = V = 128 step kernels (decode_k128.cu, and packed
 * decode streamed by rows, stream_k128.cu) by mode, gate and grid size, as the H200 sweeps measured
 * them fastest (bench/results/README.md, "Launch rules"; bench/results/launch-rules-2026-12-02/,
 * gpu-ab-split*.txt, pdl-2026-12-02/, gpu-verify-switches.txt), and the switch between those
 * kernels and the replay pipeline. Shared by the back end (backend.cu) and the host test
 * (tests/test_launch_rules.c); plain C.
 *
 * Grids are counted in value heads (batch x HV) against the multiprocessors; one wave of
 * whole-head CTAs (512 threads, 2 per SM) is 2 heads per SM.
 */
#ifndef RSSM_LAUNCH_RULES_H
#define RSSM_LAUNCH_RULES_H

#include <stdint.h>

/* Decode runs on the replay pipeline from this many value heads (batch x HV) on `sms`
 * multiprocessors (INT64_MAX: never), by mode, gate, state dtype (sbf: bf16) and layout (kf: K-first), as the H200
 * measured (bench/results/switch-2026-12-02/, 32 value heads, 132 SMs):
 *   replay, GDN: from 2.75 heads per SM, B = 12, since the one-word start (verify-pipe-2026-12-04/
 *     call E, two rounds: B = 12 / 13 / 14 / 15 15.78 / 17.34 / 17.64 / 17.98 us against 16.54 /
 *     17.32 / 18.07 / 18.72 on the per-head kernel; before it B = 9-11 were 5-10% slower,
 *     flashinfer-2026-12-03/callG-pipeline.txt); with a bf16 state from 3.75, B = 16 (call E: B =
 *     12 / 13 / 14 / 15 13.83 / 15.41 / 15.77 / 16.01 against 14.25 / 14.75 / 15.26 / 16.19);
 *   replay, KDA: from 11.5 (B = 48): on today's kernels the per-head one is faster at B = 38 and
 *     44 (replay-switches-h100-2026-12-05/ call Q5, 8db9dc4, two rounds, spread at most 0.06: B
 *     = 38 / 44 35.26 / 39.20 us against 35.97 / 40.17 on the pipeline, B = 64 52.30 against
 *     52.10; B = 45-63 unmeasured); on 2026-12-02's the pipeline led from 9, B = 38 (B = 36 35.36
 *     against 35.10, B = 40 37.53 against 37.73, B = 96 73.18 against 74.89); with a bf16 state
 *     from 6 (B = 25: B = 24 tied, B = 28 26.90 against 27.70);
 *   packed, V-first: never. With an f32 state it was slower at every B (GDN B = 64 / 512 77.09 /
 *     568.68 against 73.91 / 561.69 us); with a bf16 state streaming by rows (rssm_stream_rows)
 *     is faster (stream-2026-12-02/: GDN B = 173 106.07 us streamed, B = 174 112.46 on the
 *     pipeline; B = 512 301.77 against 301.93; KDA B = 128 / 512 83.46 / 318.52 against 88.9 /
 *     325.2).
 * A K-first state (kf, FLA's order) is staged by the pipeline without the per-head kernel's lane
 * pairs (kfirst-peers-2026-12-04/, µs on the per-head kernel against the pipeline; replay one
 * round, calls B and C; packed two rounds alike, call D):
 *   replay with an f32 state, since its copies came from an elected lane (kf-elect-2026-12-04/
 *     calls E and G, two rounds alike), GDN from 2.75 heads per SM, B = 12 (B = 10 / 11 / 12 / 14
 *     / 16 17.50 / 18.23 / 19.31 / 21.25 / 23.60 against 17.87 / 18.24 / 18.61 / 20.76 / 21.19),
 *     KDA from 5.75, B = 24 (B = 16 / 20 / 22 / 24 / 32 24.86 / 29.04 / 31.01 / 32.90 / 40.04
 *     against 25.56 / 28.79 / 31.29 / 31.86 / 37.94);
 *   replay with a bf16 state where V-first's starts, since its copies came from an elected lane
 *     (kf-elect-2026-12-04/ call B, one round): GDN B = 16 / 20 / 32 20.83 / 24.66 / 34.18
 *     against 20.58 / 22.11 / 28.20, KDA B = 24 / 32 / 56 30.80 / 37.27 / 58.14 against 30.34 /
 *     35.76 / 49.87 (B = 24 stays per-head as V-first's does);
 *   packed (no stream takes a K-first state; the pipeline stores each new state through its
 *     stage buffer, kf-packed-store/ calls B and C, one round) with an f32 state from 3.75 heads
 *     per SM, B = 16 (GDN B = 12 / 16 20.49 / 26.39 against 22.72 / 25.46; KDA 20.80 / 26.72
 *     against 22.05 / 26.40); with a bf16 state from one head per SM, B = 5 (GDN B = 4 / 5 / 8 /
 *     32 8.79 / 13.30 / 14.30 / 48.19 against 11.00 / 11.33 / 12.61 / 31.16; KDA B = 4 / 5 / 8 /
 *     128 8.30 / 12.63 / 13.44 / 166.97 against 9.51 / 12.18 / 13.15 / 108.85). */
static inline int64_t rssm_pipe_from(int packed, int kda, int sbf, int kf, int64_t sms)
{
    if (kf && sbf && packed) return sms;
    if (kf && packed) return 15 * sms / 4;
    if (packed) return INT64_MAX;
    if (!kda && !sbf) return 11 * sms / 4;
    if (kf && !sbf) return 23 * sms / 4;
    return !kda ? 15 * sms / 4 : sbf ? 6 * sms : 23 * sms / 2;
}

/* DRAM bandwidth per multiprocessor, MB/s, under which a device's memory is slow for its SMs:
 * between the H100's (3.35 TB/s over 132 SMs, 25 GB/s each) and the H200's (4.8 TB/s, 36 GB/s),
 * which share the chip. */
#define RSSM_SLOW_DRAM_MBS_PER_SM 30000

/* Replay of a V-first f32 state leaves the pipeline for the per-head kernel from this many value
 * heads (INT64_MAX: never) on a device whose DRAM moves `dram_mbs_per_sm` MB/s per multiprocessor
 * (0: unknown, the H200's rules). Where memory is slow for the SMs the per-head kernel, its L2
 * prefetch half a wave ahead, keeps up with DRAM and the pipeline's hand-offs only add time: on an
 * H100, two rounds alike (bench/results/replay-switches-h100-2026-12-05/ call Q2, µs, per-head
 * against the pipeline), GDN B = 56 / 64 / 128 / 512 54.98 / 61.20 / 111.70 / 414.53 against
 * 56.41 / 63.31 / 114.44 / 422.20, while B = 32 / 40 / 48 stay on the pipeline (34.76 / 42.02 /
 * 48.46 against 35.99 / 42.36 / 48.73): from 12.5 heads per SM, B = 52, midway. Call Q1 agreed
 * (GDN B = 64 / 80 61.21 / 73.81 against 63.17 / 76.17); call Q4 (bad250e, two rounds, spread at
 * most 0.64) kept the pipeline ahead at GDN B = 12-44. KDA leaves it from 7.5 heads per SM, B = 31,
 * so that only one-word batches of B = 20-30 stay on it (Q4: B = 24 / 28 30.25 / 33.45 against
 * 30.92 / 34.25 on the per-head kernel; B = 32 / 38 / 44 36.59 / 41.46 / 46.34 against 37.41 /
 * 43.69 / 48.58 on the pipeline; Q2: B = 64 / 128 / 512 62.58 / 114.53 / 425.56 against 67.30 /
 * 120.58 / 443.10). A bf16 state stays on the pipeline (call Q3: GDN B = 64 / 512 40.65 / 225.85
 * against 46.35 / 304.81 on the per-head kernel); a K-first state was not measured and keeps the
 * H200's rules. */
static inline int64_t rssm_pipe_until(int packed, int kda, int sbf, int kf, int64_t sms, int64_t dram_mbs_per_sm)
{
    if (packed || sbf || kf || dram_mbs_per_sm <= 0 || dram_mbs_per_sm >= RSSM_SLOW_DRAM_MBS_PER_SM) return INT64_MAX;
    return kda ? 15 * sms / 2 : 25 * sms / 2;
}

/* A batch of at most RSSM_PIPE_WORD_ROWS rows (one word of the pipeline's folding-row bitmap,
 * whose start has kernels of its own) also runs replay on the pipeline from this many value heads
 * (INT64_MAX: only from rssm_pipe_from's), as the H200 measured with those kernels
 * (bench/results/kf-word-2026-12-04/ call D, two rounds, µs per-head against the pipeline): KDA
 * from 4.75 heads per SM, B = 20 (V-first f32 B = 16 / 20 / 24 / 28 / 32 20.62 / 23.58 / 26.44 /
 * 29.13 / 31.25 against 21.41 / 23.11 / 25.75 / 28.27 / 31.40, B = 36 on two words 33.89 against
 * 34.14 in call C; bf16 state B = 16 / 20 / 24 18.81 / 22.13 / 24.48 against 19.48 / 21.84 /
 * 24.09), K-first f32 from 3.75, B = 16 (B = 16 / 20 24.88 / 29.05 against 24.62 / 27.23). GDN's
 * grids already start below one word; K-first KDA with a bf16 state has no one-word kernels. */
#define RSSM_PIPE_WORD_ROWS 32
static inline int64_t rssm_pipe_word_from(int packed, int kda, int sbf, int kf, int64_t sms)
{
    if (packed || !kda || (kf && sbf)) return INT64_MAX;
    return kf ? 15 * sms / 4 : 19 * sms / 4;
}

/* Packed decode streamed by rows (stream_k128.cu): rows per warp (4, 8, 16 or 32), or 0 for the
 * per-head kernel, by state dtype (sbf: bf16), gate and value heads (batch x HV) on `sms`
 * multiprocessors, as the H200 measured (32 value heads, 132 SMs, random slots): with a bf16
 * state 16 rows per warp, GDN from 5.75 heads per SM, B = 24, KDA from 7.5, B = 31
 * (stream-unroll-2026-12-05/ call R, the unrolled kernel, one round: GDN B = 24 / 28 18.73 /
 * 21.73 us against 18.95 / 21.92 on the per-head kernel, B = 20 16.50 against 16.49; KDA B = 24
 * / 28 20.36 / 23.10 against 19.84 / 22.75; stream-2026-12-02/ stream-call3.txt: KDA B = 32 /
 * 128 / 512 24.98 / 83.46 / 318.52 against 27.71 / 93.68 / 356.63). Below, every warp repeating
 * the token's preparation and a chunk's chain of shuffles (the per-head kernel shares them over 8
 * rows) cost more than the barriers they save, but where the streaming grid fills most of one
 * wave (8 CTAs per SM, 512 / rows CTAs a head), as an H100 measured, two rounds alike
 * (stream-wave-2026-12-05/ call Z7): 16 rows from 3.25 to 4 heads per SM, B = 14-16 (GDN B = 14 /
 * 15 / 16 13.41 / 14.13 / 14.88 us against 13.55 / 14.45 / 15.41; KDA 13.62 / 14.31 / 15.06
 * against 13.91 / 14.83 / 15.77; B = 12 tied or 1% slower, B = 17 7-9% slower), and 8 rows from
 * 1.75 to 2, B = 8 (GDN 8.57 against 8.81, KDA 8.74 against 9.29; B = 6 and 10 up to 3% slower).
 * On the H200 (peers-2026-12-05/ call F4, 8db9dc4, one round) the bands won by more: GDN B = 8 /
 * 14 / 16 7.11 / 10.89 / 11.78 against 8.14 / 12.34 / 13.80, KDA B = 8 / 14 / 16 7.76 / 11.44 /
 * 12.26 against 8.64 / 12.90 / 14.31, B = 6-7, 9-13 and 17 equal within 0.03.
 * With an f32 state never (call R: 8 or 4 rows per warp lost at every B, GDN B = 512 571.05 /
 * 615.93 against 540.03; CTAs of one warp lost too, stream-warp-2026-12-05/; call Z7's one-wave
 * grids lost 5-11%). */
static inline int rssm_stream_rows(int sbf, int kda, int64_t ctas, int64_t sms)
{
    if (!sbf) return 0;
    if (kda ? 2 * ctas >= 15 * sms : 4 * ctas >= 23 * sms) return 16;
    if (4 * ctas > 13 * sms && ctas <= 4 * sms) return 16;
    return 4 * ctas > 7 * sms && ctas <= 2 * sms ? 8 : 0;
}

/* Whether a streaming warp issues its first two chunks' loads before the token's preparation
 * (8 rows in flight while it prepares; with 16 rows a third buffer then keeps it two chunks
 * ahead) rather than one: from 24 value heads per SM, B = 99 at 32 value heads. Early against
 * not, bf16 state, two rounds alike (stream-unroll-2026-12-05/): call Y on the kernel two chunks
 * ahead, GDN B = 128 77.29 us against 78.60, KDA 81.71 against 82.57; call R, one chunk ahead,
 * GDN B = 192 / 512 113.94 / 293.67 against 114.28 / 296.60. Below, the token's inputs queue
 * behind the rows and the warp starts later (call Y: GDN B = 24 / 64 19.11 / 41.55 against
 * 18.90 / 41.71; KDA B = 32 / 64 24.74 / 44.29 against 24.37 / 43.98). */
static inline int rssm_stream_early(int64_t ctas, int64_t sms) { return ctas >= 24 * sms; }

/* The replay pipeline's producer warps (replay_pipeline.cu) by value heads (batch x HV) over its
 * CTAs, as the H200 measured (bench/results/pipe-producers-2026-12-03/call3/sweep.txt, one call,
 * 2 against 3, replay µs): 2 for more than 4 and at most 12 heads per CTA (GDN B = 24 / 32 / 48
 * 24.56 / 29.78 / 39.52 against 25.71 / 29.92 / 39.93; bf16 state B = 32 24.27 against 24.47),
 * else 3 (GDN B = 12 / 16 16.36 / 19.12 against 16.52 / 19.39, B = 64 / 128 / 512 48.71 / 85.90 /
 * 295.51 against 50.08 / 86.64 / 298.28; KDA B = 64 / 128 / 512 52.85 / 88.49 / 311.06 against
 * 54.12 / 92.21 / 324.61; bf16 state B = 128 63.60 against 68.32). KDA at 11.5 to 12 heads per CTA
 * (B = 48 at 32 value heads) takes the same band unmeasured. */
static inline int rssm_pipe_producers(int64_t heads, int64_t ctas)
{
    return heads > 4 * ctas && heads <= 12 * ctas ? 2 : 3;
}

typedef enum rssm_lr_mode {
    RSSM_LR_PACKED = 0, /* packed decode, and small-batch steps of drained rows (io.fold_every), which run its kernel */
    RSSM_LR_REPLAY = 1, /* replay decode on the per-head kernel */
    RSSM_LR_VERIFY = 2,
} rssm_lr_mode;

typedef struct rssm_lr_step {
    rssm_lr_mode mode;
    int kda;      /* per-channel gate (its ring holds every entry's gates) */
    int tokens;   /* per row */
    int64_t ctas; /* value heads of the grid, batch x HV */
    int64_t sms;  /* multiprocessors */
    int sbf;      /* bf16 state */
    int stream;   /* the streaming kernel takes the step (packed decode of a V-first state, small-batch steps too) */
} rssm_lr_step;

/* As rssm_context_params gives them (cuda_ring_read, cuda_split, cuda_prefetch, cuda_pdl,
 * cuda_stream: -1, or 0 for split, = by rule; early has no parameter and is -1 there) and as the
 * launch takes them (whole-ring read 0/1, CTAs per head 1, 2 or 4, prefetch distance in half
 * waves, programmatic launch 0-3: none, at the wait, or the per-head kernel's later triggers,
 * rows per streaming warp 4, 8, 16 or 32 or 0 for the per-head kernel, the streaming warps'
 * early loads 0/1). */
typedef struct rssm_lr_switches {
    int spec, split, prefetch, pdl, stream, early;
} rssm_lr_switches;

/* The switches for step `s`; a value `forced` gives wins over the rule. */
static inline rssm_lr_switches rssm_launch_rules(rssm_lr_step s, rssm_lr_switches forced)
{
    const int64_t ctas = s.ctas, sms = s.sms, waves35 = 7 * s.sms; /* 3.5 waves of whole-head CTAs */
    const int packed = s.mode == RSSM_LR_PACKED, replay = s.mode == RSSM_LR_REPLAY;
    rssm_lr_switches r;
    /* whole-ring reads (all L entries at once, a few KiB more per head, instead of waiting for
     * the cursor; packed reads no ring): GDN replay on grids of at most one value head per SM
     * (above that 0.5-1% slower, two rounds alike: B = 8 / 16 / 32 12.22 / 20.06 / 31.35 us
     * against 12.10 / 19.87 / 31.02 without, flashinfer-2026-12-03/callG-ring-read.txt; a bf16
     * state 1-2%; it had measured 2-3% faster at B = 12-64 before later kernel changes; from
     * rssm_pipe_from's grids replay runs on the pipeline unless that is off or does not apply);
     * never KDA replay (B = 1-8 2-7% slower, from 10 worse yet); verify on grids of one wave, and
     * GDN windows of 3-4 tokens at any batch (on the FP64 tensor cores they are bound by latency:
     * T = 4, B = 128 179.0 against 181.2 us; KDA, which also reads every entry's gates, 196.1
     * against 195.1) */
    const int gdn_window = s.mode == RSSM_LR_VERIFY && !s.kda && s.tokens >= 3 && s.tokens <= 4;
    r.spec = packed ? 0 : replay ? !s.kda && ctas <= sms : ctas <= 2 * sms || gdn_window;
    /* each head's rows over `split` CTAs of 512 / split threads: packed streams through more,
     * smaller CTAs (4 up to half a head per SM, B <= 2 at 32 heads, else 2: at B = 3 and 4, 2
     * beat 4 by 16%); KDA replay likewise (4 up to a quarter head per SM, else 2); GDN replay
     * and verify split only up to half a head per SM (a GDN cluster holds the group's value
     * heads times the parts, and every part repeats the token and ring work) */
    if (packed)
        r.split = ctas * 2 <= sms ? 4 : 2;
    else if (replay && s.kda)
        r.split = ctas * 4 <= sms ? 4 : 2;
    else
        r.split = ctas * 2 <= sms ? 2 : 1;
    /* L2 prefetch of the rows of the CTA half a wave later: not on grids of one wave (every
     * CTA is resident at once: GDN packed B = 8 11.15 -> 11.78 us with it), nor for replay
     * below 3.5 waves (1-3.5 waves: 1-3% faster without).
     * A whole wave ahead, a tenth of the prefetched lines (random slots; a thirty-fifth with
     * consecutive ones) were evicted before their CTA read them, and DRAM read them again
     * (fla-writes-2026-12-02/: GDN B = 512 packed, 19.00 GB of DRAM reads per 16 steps against
     * 17.36 half a wave ahead, 17.32 without prefetch). Half a wave: GDN f32 packed 3.5-3.8%
     * faster from B = 32 with random slots (B = 512 562.8 -> 542.4 us), 1.3-2.5% with
     * consecutive ones, KDA 3.9-4.1% (B = 64, 512); a quarter or three quarters of a wave gained
     * less; replay, and packed decode of a bf16 state at B = 16-24, within 0.5%. */
    r.prefetch = ctas <= 2 * sms || (replay && ctas < waves35) ? 0 : 1;
    /* programmatic dependent launch on grids of at most one value head per SM (every mode) and
     * for packed decode from above a wave to 3.5 waves: the launch and the
     * checkpoint's DRAM latency overlap the kernel before (GDN B = 1 / 2: 3.85 -> 2.91 / 5.01 ->
     * 3.73 us; B = 12 / 16: 17.27 -> 16.02 / 21.91 -> 20.96); with an f32 state grids of about a
     * wave lost up to 10% with it (B = 6 and 8; again B = 8 11.14 -> 12.03 in
     * flashinfer-2026-12-03/callF-switches-f32.txt), larger ones 2-5% (B = 64), replay's lost or
     * tied. Packed decode of a bf16 state gains there too (callG-pdl-bf16.txt, GDN B = 5 / 6 / 7 /
     * 8: 7.10 / 7.43 / 8.44 / 8.70 -> 6.40 / 6.62 / 7.00 / 7.83 us; KDA 7.30 / 7.64 / 8.88 /
     * 9.10 -> 7.12 / 7.31 / 7.39 / 8.10), so it launches that way up to 3.5 waves.
     * Packed decode on the per-head kernel lets the next grid launch later than at the wait where
     * that was faster on an H100, three rounds alike (pdl-trigger-2026-12-05/ call Z5,
     * pdl-rules-2026-12-05/ call Z6; stream-pdl-2026-12-05/ call Z2 before them). With an f32 state
     * before the rows' arithmetic (3) on grids of one to two waves (GDN B = 5 / 6 / 7 9.59 / 10.79 /
     * 12.00 us against 9.88 / 11.04 / 12.25 without pdl and 11.06 / 12.09 / 13.61 at the wait; B = 8
     * tied with no pdl; KDA alike), after the token's preparation (2) from there to 12 heads per SM,
     * B = 49 (GDN B = 9 / 24 / 36 / 48 15.38 / 36.58 / 54.01 / 71.77 against 17.13 / 37.51 at the
     * wait and 54.55 / 72.03 without; KDA alike); at B = 64 no pdl, 0.1% ahead of 2, stays. With a
     * bf16 state the trigger at the wait stays fastest (B = 5 / 6 / 7: GDN 6.69 / 6.91 / 8.05 against
     * 7.35 / 7.67 / 8.46 after the preparation) but at the full second wave, B = 8, where before the
     * rows' arithmetic (3) wins (GDN 8.82 against 9.14, KDA 9.31 against 9.45). Measured with a
     * V-first state; a K-first one runs the same code on these grids and is launched alike. */
    if (!packed || ctas <= sms)
        r.pdl = ctas <= sms;
    else if (s.sbf)
        r.pdl = 4 * ctas > 7 * sms && ctas <= 2 * sms ? 3 : ctas < waves35;
    else
        r.pdl = ctas <= 2 * sms ? 3 : ctas <= 12 * sms ? 2 : 0;
    /* packed decode streamed by rows where the streaming kernel takes the step (rssm_stream_rows,
     * rssm_stream_early), launched with pdl at every grid size. Its pdl path reads nothing before
     * the wait; with the per-head kernel's L2 prefetch there it lost 0.4-6.7% to no pdl (calls X
     * on an H200, Z on an H100). Without it, on an H100, six rounds alike (stream-pdl-2026-12-05/
     * call Z4, pdl-trigger-2026-12-05/ call Z5, pdl-rules-2026-12-05/ call Z6, 16-row warps), with against without: GDN
     * B = 24 / 32 / 64 / 128 / 512 22.05 / 27.61 / 52.01 / 99.46 / 384.62 us against 22.56 / 28.12 / 52.54 / 99.93 /
     * 384.99 (Z5), KDA B = 32 / 128 / 512 27.87 / 100.18 / 387.22 against 28.38 / 100.80 / 387.62; every B = 12-512
     * gained, 0.1-4.0% (Z6 at B = 192-384 0.03-0.4%). */
    r.stream = s.stream ? rssm_stream_rows(s.sbf, s.kda, ctas, sms) : 0;
    if (s.stream && forced.stream >= 0) r.stream = forced.stream;
    r.early = r.stream && rssm_stream_early(ctas, sms);
    if (r.stream) r.pdl = 1;
    if (forced.spec >= 0) r.spec = forced.spec;
    if (forced.split > 0) r.split = forced.split;
    if (forced.prefetch >= 0) r.prefetch = forced.prefetch;
    if (forced.pdl >= 0) r.pdl = forced.pdl;
    if (r.stream && forced.early >= 0) r.early = forced.early;
    return r;
}

#endif /* RSSM_LAUNCH_RULES_H */
