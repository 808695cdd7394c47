/*
 * test_pipe_order.c — the replay pipeline's order of work (src/cuda/pipeline_order.h), on the host:
 * for batches up to the kernel's bitmap size (4096 rows) and folding patterns from none to all,
 * every position maps to a distinct unit (row, key head), all units are covered, the folding
 * rows' units come first and each part keeps row order; without a bitmap the order is plain.
 * The kernel calls the same functions, so a wrong order here would skip or repeat heads there.
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "cuda/pipeline_order.h"

#define MAX_ROWS RSSM_PO_MAX_ROWS

/* 1 when the folding-rows-first order of B rows with H key heads is right; why in *msg */
static int check_order(int B, int H, const uint8_t *folds, const char **msg)
{
    uint32_t bits[MAX_ROWS / 32] = {0};
    int32_t before[MAX_ROWS / 32 + 1];
    const int nw = (B + 31) / 32;
    for (int b = 0; b < B; b++)
        if (folds[b]) bits[b / 32] |= 1u << (b % 32);
    before[0] = 0;
    for (int i = 0; i < nw; i++)
        before[i + 1] = before[i] + __builtin_popcount(bits[i]);
    const int F = before[nw];
    uint8_t *seen = calloc((size_t)B * H, 1);
    int ok = seen != NULL, prev_b = -1, prev_kh = H - 1;
    for (int64_t p = 0; ok && p < (int64_t)B * H; p++) {
        int b = -1, kh = -1;
        rssm_po_unit(bits, before, nw, (int64_t)F * H, H, p, &b, &kh);
        const int fold_part = p < (int64_t)F * H;
        if (b < 0 || b >= B || kh < 0 || kh >= H) {
            *msg = "unit out of range";
            ok = 0;
        } else if (seen[(size_t)b * H + kh]++) {
            *msg = "unit dealt twice";
            ok = 0;
        } else if (folds[b] != fold_part) {
            *msg = "a row in the wrong part";
            ok = 0;
        } else if (p == (int64_t)F * H) {
            prev_b = b, prev_kh = kh; /* the second part starts afresh */
            if (kh != 0) *msg = "part does not start at key head 0", ok = 0;
        } else if (p > 0 && !(b == prev_b ? kh == prev_kh + 1 : b > prev_b && kh == 0 && prev_kh == H - 1)) {
            *msg = "rows out of order";
            ok = 0;
        } else {
            prev_b = b, prev_kh = kh;
        }
    }
    free(seen);
    return ok; /* B * H distinct units in range: all covered */
}

int main(void)
{
    /* every 32-bit word's set bits by rank */
    uint64_t s = 0x9E3779B97F4A7C15ull;
    int bits_ok = 1;
    for (int t = 0; t < 20000 && bits_ok; t++) {
        s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
        const uint32_t x = (uint32_t)((s * 0x2545F4914F6CDD1Dull) >> 32) & (t % 3 ? 0xffffffffu : 0x80010001u);
        for (int r = 0, pos = 0; pos < 32; pos++)
            if (x >> pos & 1) bits_ok &= rssm_po_nth_set_bit(x, r++) == pos;
    }
    t_case(RH_OK, bits_ok, "nth_set_bit: 20000 words, every set bit");

    /* plain order: no bitmap */
    int plain_ok = 1;
    for (int64_t p = 0; p < 64 * 16; p++) {
        int b, kh;
        rssm_po_unit(NULL, NULL, 0, 0, 16, p, &b, &kh);
        plain_ok &= b == p / 16 && kh == p % 16;
    }
    t_case(RH_OK, plain_ok, "plain order: position p is unit (p / H, p %% H)");

    static uint8_t folds[MAX_ROWS];
    const int batches[] = {1, 2, 31, 32, 33, 64, 95, 128, 511, 1000, MAX_ROWS};
    const int heads[] = {1, 16, 32};
    const char *patterns[] = {"none", "all", "every 16th", "random half", "random 1/16", "first word only"};
    for (size_t bi = 0; bi < sizeof batches / sizeof *batches; bi++)
        for (size_t hi = 0; hi < sizeof heads / sizeof *heads; hi++)
            for (int pat = 0; pat < 6; pat++) {
                const int B = batches[bi], H = heads[hi];
                for (int b = 0; b < B; b++) {
                    s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
                    const uint32_t r = (uint32_t)((s * 0x2545F4914F6CDD1Dull) >> 40);
                    folds[b] = pat == 1 || (pat == 2 && b % 16 == 15) || (pat == 3 && (r & 1)) ||
                               (pat == 4 && r % 16 == 0) || (pat == 5 && b < 32);
                }
                const char *msg = "";
                const int ok = check_order(B, H, folds, &msg);
                t_case(RH_OK, ok, "folding rows first: B=%d H=%d folds %s%s%s", B, H, patterns[pat], ok ? "" : ": ",
                       msg);
            }
    return t_end();
}
