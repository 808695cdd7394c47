/*
 * pipeline_order.h — the order in which the replay pipeline deals its units of work (row, key head)
 * to the CTAs, shared by the kernel (replay_pipeline.cu) and the host test (tests/test_pipe_order.c).
 * Self-contained (stdint only) so that C and CUDA include it alike.
 *
 * Position p (0 .. B*H - 1) goes to CTA p % grid. In the plain order, p is unit (row p / H, key
 * head p % H). With the folding rows first (Balance in replay_pipeline.cu), the first F*H
 * positions are the units of the F folding rows and the rest those of the other rows, each part
 * in row order. The folding rows come as a bitmap: bit b % 32 of bits[b / 32] is set when row b
 * folds this step; before[i] counts the set bits of words 0 .. i-1 (i = 0 .. nw).
 */
#ifndef RSSM_PIPELINE_ORDER_H
#define RSSM_PIPELINE_ORDER_H

#include <stdint.h>

/* the most rows the bitmap holds: the kernel forms its prefix counts in one warp, 4 words of
 * 32 rows per lane */
#define RSSM_PO_MAX_ROWS 4096

#ifdef __CUDACC__
#define RSSM_PO_HD __host__ __device__ __forceinline__
#else
#define RSSM_PO_HD static inline
#endif

RSSM_PO_HD int rssm_po_popc(uint32_t x)
{
#ifdef __CUDA_ARCH__
    return __popc(x);
#else
    return __builtin_popcount(x);
#endif
}

/* position (0..31) of set bit r (0: the lowest) of x, which has more than r set bits */
RSSM_PO_HD int rssm_po_nth_set_bit(uint32_t x, int r)
{
    int pos = 0;
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int width = 16; width > 0; width >>= 1) {
        const int low = rssm_po_popc(x & ((1u << width) - 1));
        if (r >= low) r -= low, x >>= width, pos += width;
    }
    return pos;
}

/* rows before word i that fold (fold = 1) or do not (fold = 0) */
RSSM_PO_HD int rssm_po_before(const int32_t *before, int i, int fold) { return fold ? before[i] : 32 * i - before[i]; }

/* row of the n-th (from 0) folding row (fold = 1) or non-folding row (fold = 0); nw words of
 * the bitmap (0: no bitmap, every row non-folding) */
RSSM_PO_HD int rssm_po_nth_row(const uint32_t *bits, const int32_t *before, int nw, int n, int fold)
{
    if (nw == 0) return n;
    int lo = 0, hi = nw - 1; /* the last word with rssm_po_before(word) <= n */
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (rssm_po_before(before, mid, fold) <= n)
            lo = mid;
        else
            hi = mid - 1;
    }
    const uint32_t w = fold ? bits[lo] : ~bits[lo];
    return lo * 32 + rssm_po_nth_set_bit(w, n - rssm_po_before(before, lo, fold));
}

/* the unit at position p: its row *b and key head *kh. nw = 0: the plain order (bits and
 * before unused, fold_units 0); otherwise folding rows first, fold_units = before[nw] * H (the
 * caller forms it once). */
RSSM_PO_HD void rssm_po_unit(const uint32_t *bits, const int32_t *before, int nw, int64_t fold_units, int H, int64_t p,
                             int *b, int *kh)
{
    const int fold = p < fold_units;
    const int64_t q = fold ? p : p - fold_units;
    *b = rssm_po_nth_row(bits, before, nw, (int)(q / H), fold), *kh = (int)(q % H);
}

#endif /* RSSM_PIPELINE_ORDER_H */
