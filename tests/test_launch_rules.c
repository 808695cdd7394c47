/*
 * test_launch_rules.c — the fast kernels' launch switches (src/cuda/launch_rules.h), on the host:
 * the choices the H200 sweeps measured fastest, at 32 value heads on 132 SMs (Qwen3-Next GDN
 * and Kimi-Linear KDA), batch by batch; a forced switch (rssm_context_params) wins for every
 * mode and batch; and every result is a value the kernels take. The back end calls the same
 * function, so a rule changed here by mistake changes the launch there.
 */
#include "common.h"
#include "cuda/launch_rules.h"

#define SMS 132
#define HV 32

static rssm_lr_switches rules_of(rssm_lr_mode mode, int kda, int tokens, int batch, int sbf, int stream,
                                 rssm_lr_switches forced)
{
    const rssm_lr_step s = {mode, kda, tokens, (int64_t)batch * HV, SMS, sbf, stream};
    return rssm_launch_rules(s, forced);
}

/* a step the streaming kernel does not take */
static rssm_lr_switches rules_sbf(rssm_lr_mode mode, int kda, int tokens, int batch, int sbf, rssm_lr_switches forced)
{
    return rules_of(mode, kda, tokens, batch, sbf, 0, forced);
}

static const rssm_lr_switches by_rule = {-1, 0, -1, -1, -1, -1};

/* one batch's expected switches */
typedef struct expect {
    int batch, spec, split, prefetch, pdl;
} expect;

static void check_sbf(const char *what, rssm_lr_mode mode, int kda, int tokens, int sbf, const expect *e, int n)
{
    for (int i = 0; i < n; i++) {
        const rssm_lr_switches r = rules_sbf(mode, kda, tokens, e[i].batch, sbf, by_rule);
        const int ok = r.spec == e[i].spec && r.split == e[i].split && r.prefetch == e[i].prefetch && r.pdl == e[i].pdl;
        t_case(RH_OK, ok, "%s B=%d: ring read %d, split %d, prefetch %d, pdl %d (expected %d %d %d %d)", what,
               e[i].batch, r.spec, r.split, r.prefetch, r.pdl, e[i].spec, e[i].split, e[i].prefetch, e[i].pdl);
    }
}

static void check(const char *what, rssm_lr_mode mode, int kda, int tokens, const expect *e, int n)
{
    check_sbf(what, mode, kda, tokens, 0, e, n);
}

int main(void)
{
    /* packed: 4 CTAs per head up to B = 2 (64 heads <= 66), PDL triggered at the wait up to B = 4
     * (128 <= 132), before the rows' arithmetic from B = 5 to 8 (256 <= 264), after the token's
     * preparation from B = 9 to 49 (1568 <= 12 x 132), prefetch from B = 9 (above one wave) */
    const expect packed[] = {{1, 0, 4, 0, 1},  {2, 0, 4, 0, 1},  {3, 0, 2, 0, 1},  {4, 0, 2, 0, 1},  {5, 0, 2, 0, 3},
                             {8, 0, 2, 0, 3},  {9, 0, 2, 1, 2},  {16, 0, 2, 1, 2}, {28, 0, 2, 1, 2}, {29, 0, 2, 1, 2},
                             {49, 0, 2, 1, 2}, {50, 0, 2, 1, 0}, {64, 0, 2, 1, 0}, {512, 0, 2, 1, 0}};
    check("packed, gdn", RSSM_LR_PACKED, 0, 1, packed, sizeof packed / sizeof *packed);
    check("packed, kda", RSSM_LR_PACKED, 1, 1, packed, sizeof packed / sizeof *packed);
    /* packed, bf16 state: PDL on every grid below 3.5 waves, also at about one wave (B = 5-8),
     * triggered before the rows' arithmetic at the full second wave (B = 8: 256 > 7 x 132 / 4) */
    const expect packed_bf16[] = {{1, 0, 4, 0, 1},  {4, 0, 2, 0, 1},  {5, 0, 2, 0, 1},
                                  {7, 0, 2, 0, 1},  {8, 0, 2, 0, 3},  {9, 0, 2, 1, 1},
                                  {28, 0, 2, 1, 1}, {29, 0, 2, 1, 0}, {512, 0, 2, 1, 0}};
    check_sbf("packed, gdn, bf16 state", RSSM_LR_PACKED, 0, 1, 1, packed_bf16,
              sizeof packed_bf16 / sizeof *packed_bf16);
    check_sbf("packed, kda, bf16 state", RSSM_LR_PACKED, 1, 1, 1, packed_bf16,
              sizeof packed_bf16 / sizeof *packed_bf16);
    /* GDN replay: the whole ring up to B = 4 (one head per SM), 2 CTAs up to B = 2, no prefetch
     * below 3.5 waves */
    const expect gdn_replay[] = {{1, 1, 2, 0, 1},  {2, 1, 2, 0, 1},  {3, 1, 1, 0, 1},  {4, 1, 1, 0, 1},
                                 {5, 0, 1, 0, 0},  {8, 0, 1, 0, 0},  {16, 0, 1, 0, 0}, {28, 0, 1, 0, 0},
                                 {29, 0, 1, 1, 0}, {64, 0, 1, 1, 0}, {512, 0, 1, 1, 0}};
    check("replay, gdn", RSSM_LR_REPLAY, 0, 1, gdn_replay, sizeof gdn_replay / sizeof *gdn_replay);
    /* KDA replay: never the whole ring, 4 CTAs at B = 1 (32 heads <= 33), else 2 */
    const expect kda_replay[] = {{1, 0, 4, 0, 1},  {2, 0, 2, 0, 1},  {4, 0, 2, 0, 1},  {8, 0, 2, 0, 0},
                                 {16, 0, 2, 0, 0}, {29, 0, 2, 1, 0}, {512, 0, 2, 1, 0}};
    check("replay, kda", RSSM_LR_REPLAY, 1, 1, kda_replay, sizeof kda_replay / sizeof *kda_replay);
    /* verify: the whole ring on one wave (B <= 8) and for GDN windows of 3-4 tokens at any batch */
    const expect gdn_window[] = {{1, 1, 2, 0, 1}, {4, 1, 1, 0, 1}, {8, 1, 1, 0, 0}, {128, 1, 1, 1, 0}};
    check("verify T=4, gdn", RSSM_LR_VERIFY, 0, 4, gdn_window, sizeof gdn_window / sizeof *gdn_window);
    const expect other_window[] = {{1, 1, 2, 0, 1}, {8, 1, 1, 0, 0}, {9, 0, 1, 1, 0}, {128, 0, 1, 1, 0}};
    check("verify T=4, kda", RSSM_LR_VERIFY, 1, 4, other_window, sizeof other_window / sizeof *other_window);
    check("verify T=2, gdn", RSSM_LR_VERIFY, 0, 2, other_window, sizeof other_window / sizeof *other_window);

    /* the pipeline's grids (launch_rules.h's rssm_pipe_from): B = the first batch on it */
    const struct {
        int packed, kda, sbf, kf, from;
        const char *what;
    } pipe[] = {{0, 0, 0, 0, 12, "replay, GDN"},
                {0, 0, 1, 0, 16, "replay, GDN, bf16 state"},
                {0, 1, 0, 0, 48, "replay, KDA"},
                {0, 1, 1, 0, 25, "replay, KDA, bf16 state"},
                {0, 0, 0, 1, 12, "replay, GDN, K-first state"},
                {0, 0, 1, 1, 16, "replay, GDN, K-first bf16 state"},
                {0, 1, 0, 1, 24, "replay, KDA, K-first state"},
                {0, 1, 1, 1, 25, "replay, KDA, K-first bf16 state"},
                {1, 0, 0, 1, 16, "packed, GDN, K-first state"},
                {1, 0, 1, 1, 5, "packed, GDN, K-first bf16 state"},
                {1, 1, 0, 1, 16, "packed, KDA, K-first state"},
                {1, 1, 1, 1, 5, "packed, KDA, K-first bf16 state"}};
    for (size_t i = 0; i < sizeof pipe / sizeof *pipe; i++) {
        const int64_t f = rssm_pipe_from(pipe[i].packed, pipe[i].kda, pipe[i].sbf, pipe[i].kf, SMS);
        t_case(RH_OK, f > (int64_t)(pipe[i].from - 1) * HV && f <= (int64_t)pipe[i].from * HV,
               "%s on the pipeline from B = %d", pipe[i].what, pipe[i].from);
    }
    int never = 1;
    for (int kda = 0; kda <= 1; kda++)
        for (int sbf = 0; sbf <= 1; sbf++)
            never &= rssm_pipe_from(1, kda, sbf, 0, SMS) == INT64_MAX;
    t_case(RH_OK, never, "packed decode of a V-first state never on the pipeline (by rule)");

    /* on a device with slow memory for its SMs (an H100: 25 GB/s per SM, under
     * RSSM_SLOW_DRAM_MBS_PER_SM), replay of a V-first f32 state leaves the pipeline (rssm_pipe_until):
     * GDN from B = 52, KDA from B = 31 (below its grid rule, so that only its one-word batches of
     * B = 20-30 stay there); nothing else, and nowhere on an H200 (36 GB/s per SM) or where the
     * bandwidth is unknown (0) */
    const int64_t h100 = 3352320 / SMS, h200 = 4800000 / SMS;
    int until_ok = h100 < RSSM_SLOW_DRAM_MBS_PER_SM && h200 >= RSSM_SLOW_DRAM_MBS_PER_SM;
    for (int kda = 0; kda <= 1; kda++) {
        const int64_t u = rssm_pipe_until(0, kda, 0, 0, SMS, h100), from = kda ? 31 : 52;
        const int64_t start = kda ? rssm_pipe_word_from(0, kda, 0, 0, SMS) : rssm_pipe_from(0, kda, 0, 0, SMS);
        until_ok &= u > (int64_t)(from - 1) * HV && u <= (int64_t)from * HV && u > start;
        until_ok &=
            rssm_pipe_until(0, kda, 0, 0, SMS, h200) == INT64_MAX && rssm_pipe_until(0, kda, 0, 0, SMS, 0) == INT64_MAX;
        for (int packed = 0; packed <= 1; packed++)
            for (int sbf = 0; sbf <= 1; sbf++)
                for (int kf = 0; kf <= 1; kf++)
                    if (packed || sbf || kf) until_ok &= rssm_pipe_until(packed, kda, sbf, kf, SMS, h100) == INT64_MAX;
    }
    t_case(RH_OK, until_ok,
           "slow memory per SM (H100): V-first f32 replay leaves the pipeline from B = 52 (GDN) / 31 (KDA); "
           "nothing else, and nothing on an H200 or an unknown device");

    /* batches of one bitmap word (rssm_pipe_word_from): KDA replay from B = 20, K-first from 16;
     * nothing else below rssm_pipe_from's grids */
    const struct {
        int kda, sbf, kf, from;
        const char *what;
    } word[] = {{1, 0, 0, 20, "KDA"}, {1, 1, 0, 20, "KDA, bf16 state"}, {1, 0, 1, 16, "KDA, K-first state"}};
    for (size_t i = 0; i < sizeof word / sizeof *word; i++) {
        const int64_t f = rssm_pipe_word_from(0, word[i].kda, word[i].sbf, word[i].kf, SMS);
        t_case(RH_OK, f > (int64_t)(word[i].from - 1) * HV && f <= (int64_t)word[i].from * HV,
               "replay, %s: one word on the pipeline from B = %d", word[i].what, word[i].from);
    }
    int no_word = rssm_pipe_word_from(0, 1, 1, 1, SMS) == INT64_MAX;
    for (int sbf = 0; sbf <= 1; sbf++)
        for (int kf = 0; kf <= 1; kf++)
            no_word &= rssm_pipe_word_from(0, 0, sbf, kf, SMS) == INT64_MAX &&
                       rssm_pipe_word_from(1, 1, sbf, kf, SMS) == INT64_MAX;
    t_case(RH_OK, no_word && RSSM_PIPE_WORD_ROWS == 32,
           "no one-word band for GDN, packed decode or K-first KDA with a bf16 state; a word is 32 rows");

    /* the pipeline's producer warps (rssm_pipe_producers), one CTA per SM: 2 at B = 24-48 (more
     * than 4 and at most 12 heads per CTA), 3 below (B = 12, 16) and above (B = 64-512) */
    int np_ok = 1;
    for (int batch = 1; batch <= 1024; batch++)
        np_ok &= rssm_pipe_producers((int64_t)batch * HV, SMS) == (batch >= 17 && batch <= 49 ? 2 : 3);
    t_case(RH_OK, np_ok, "the pipeline's producers: 2 at B = 17-49, else 3");

    /* packed decode streamed by rows where the streaming kernel takes the step (rssm_stream_rows):
     * 16 rows per warp with a bf16 state, GDN from B = 24, KDA from B = 31, and where the grid
     * fills most of one wave (16 rows at B = 14-16, 8 rows at B = 8), never with f32; the
     * first two chunks early from B = 99 (rssm_stream_early); with pdl at every B (the per-head
     * kernel takes it below 3.5 waves with a bf16 state, B = 28, and with an f32 state as the
     * packed table above); nothing streams where the kernel does not take the step */
    int stream_ok = 1;
    for (int batch = 1; batch <= 1024; batch++)
        for (int kda = 0; kda <= 1; kda++)
            for (int sbf = 0; sbf <= 1; sbf++) {
                const int one_wave = batch >= 14 && batch <= 16 ? 16 : batch == 8 ? 8 : 0;
                const int rows = !sbf ? 0 : batch >= (kda ? 31 : 24) ? 16 : one_wave;
                const rssm_lr_switches r = rules_of(RSSM_LR_PACKED, kda, 1, batch, sbf, 1, by_rule);
                const rssm_lr_switches n = rules_of(RSSM_LR_PACKED, kda, 1, batch, sbf, 0, by_rule);
                stream_ok &= r.stream == rows && r.early == (rows && batch >= 99);
                const int f32_pdl = batch <= 4 ? 1 : batch <= 8 ? 3 : batch <= 49 ? 2 : 0;
                stream_ok &= r.pdl == (rows ? 1 : n.pdl) && n.pdl == (sbf ? (batch == 8 ? 3 : batch <= 28) : f32_pdl);
                stream_ok &=
                    n.stream == 0 && n.early == 0 && r.spec == n.spec && r.split == n.split && r.prefetch == n.prefetch;
            }
    t_case(
        RH_OK, stream_ok,
        "packed decode streamed with a bf16 state (16 rows per warp at B = 14-16 and GDN from B = 24, KDA from 31; "
        "8 rows at B = 8; never with f32), "
        "two chunks early from B = 99, with pdl at every B; never where the streaming kernel does not take the step");

    /* forced switches win everywhere (rows per warp and early loads where the streaming kernel
     * takes the step); every result is one the kernels take */
    int forced_ok = 1, range_ok = 1;
    for (int mode = RSSM_LR_PACKED; mode <= RSSM_LR_VERIFY; mode++)
        for (int kda = 0; kda <= 1; kda++)
            for (int batch = 1; batch <= 1024; batch++)
                for (int stream = 0; stream <= (mode == RSSM_LR_PACKED); stream++) {
                    for (int sbf = 0; sbf <= 1; sbf++) {
                        const rssm_lr_switches q = rules_of((rssm_lr_mode)mode, kda, 4, batch, sbf, stream, by_rule);
                        range_ok &= (q.spec == 0 || q.spec == 1) && (q.split == 1 || q.split == 2 || q.split == 4) &&
                                    (q.prefetch == 0 || q.prefetch == 1) && q.pdl >= 0 &&
                                    q.pdl <= (mode == RSSM_LR_PACKED && !q.stream ? 3 : 1) &&
                                    (q.stream == 0 || q.stream == 8 || q.stream == 16) &&
                                    (q.early == 0 || q.early == 1);
                    }
                    const rssm_lr_switches r = rules_of((rssm_lr_mode)mode, kda, 4, batch, 1, stream, by_rule);
                    for (int v = 0; v <= 4; v++) {
                        const int rows = v == 4 ? -1 : v == 0 ? 0 : 2 << v; /* 0, 4, 8, 16, by rule */
                        const rssm_lr_switches f = {
                            v <= 1 ? v : -1, v == 3 ? 0 : v == 0 ? 1 : v, v, v <= 3 ? v : -1, rows, v <= 1 ? v : -1};
                        const rssm_lr_switches g = rules_of((rssm_lr_mode)mode, kda, 4, batch, 1, stream, f);
                        forced_ok &= (f.spec < 0 || g.spec == f.spec) && (f.split == 0 || g.split == f.split) &&
                                     g.prefetch == f.prefetch && (f.pdl < 0 || g.pdl == f.pdl);
                        forced_ok &= !stream         ? g.stream == 0 && g.early == 0
                                     : f.stream >= 0 ? g.stream == f.stream
                                                     : g.stream == r.stream;
                        forced_ok &= !g.stream || f.early < 0 || g.early == f.early;
                    }
                }
    t_case(RH_OK, range_ok,
           "every mode, gate, state dtype and B = 1-1024: ring read 0/1, split 1/2/4, prefetch 0/1, pdl 0/1 "
           "(0-3 for packed decode on the per-head kernel), rows 0/8/16, early 0/1");
    t_case(
        RH_OK, forced_ok,
        "every mode, gate and B = 1-1024: a forced ring read, split, prefetch, pdl, rows per warp or early load wins");
    return t_end();
}
