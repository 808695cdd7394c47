/*
 * test_blob.c — an exported slot is untrusted input to import: a blob whose checksum is right
 * but whose checkpoint or live ring holds a NaN or an infinity is refused, a NaN in a dead ring
 * entry (never read: past the cursor, or below a GDN head's ring base, whose positions are
 * absolute) is not, ring bases outside [0, cursor] are refused, and a pool whose layer differs in any property that
 * gives the payload its meaning (io dtype, scale, q/k normalisation, gate bound, fold threshold) refuses the blob,
 * while defaults written out (scale K^-0.5) are the same layer. Reference device: its state is host memory, so the test
 * writes the bad values into the slot before exporting, and the blob's checksum is the library's own. Ends with "N
 * passed, N failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm_runtime.h"

static int passed, failed;

static void check(int ok, const char *what)
{
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    ok ? passed++ : failed++;
}

typedef enum {
    POISON_NONE,
    POISON_CHECKPOINT,
    POISON_LIVE_U,
    POISON_DEAD_U,
    POISON_LIVE_G,
    POISON_BELOW_BASE_U, /* head 1's u at position base1 - 1: folded early, dead */
    POISON_AT_BASE_U,    /* head 1's u at position base1: its first live entry */
    POISON_KEY_0,        /* the key head's k at position 0: live while head 0 has base 0 */
} poison;

/* Exports a slot of a one-layer pool of `l` (GDN, HV = 2) whose cursor is `live`, value head h
 * having ring base base[h], after writing a non-finite value where `what` says; the blob in
 * *blob (malloc'ed), its size in *n. */
static int export_slot_based(rssm_context *ctx, const rssm_layer *l, int32_t live, const int32_t base[2], poison what,
                             float bad, void **blob, size_t *n)
{
    rssm_pool *p = NULL;
    int32_t s = -1;
    rssm_state st;
    int ok = rssm_pool_create(ctx, l, 1, 2, &p) == RSSM_OK && rssm_pool_acquire(p, &s) == RSSM_OK &&
             rssm_pool_state(p, 0, &st) == RSSM_OK && rssm_pool_export_size(p, RSSM_EXPORT_RING, n) == RSSM_OK;
    if (ok) {
        const int HV = l->num_v_heads, L = l->ring_len, V = l->head_v_dim, K = l->head_k_dim;
        double *ck = (double *)st.checkpoint + (size_t)s * HV * V * K,
               *u = (double *)st.ring_u + (size_t)s * HV * L * V;
        double *g = (double *)st.ring_g + (size_t)s * HV * L, *k = (double *)st.ring_k + (size_t)s * L * K;
        for (size_t i = 0; i < (size_t)HV * V * K; i++)
            ck[i] = 0.01 * (double)(i % 7);
        st.cursor[s] = live;
        st.ring_base[(size_t)s * HV] = base[0], st.ring_base[(size_t)s * HV + 1] = base[1];
        if (what == POISON_CHECKPOINT) ck[5] = bad;
        if (what == POISON_LIVE_U) u[(size_t)(live - 1) * V + 3] = bad;
        if (what == POISON_DEAD_U) u[(size_t)live * V + 3] = bad;
        if (what == POISON_LIVE_G) g[live - 1] = bad;
        if (what == POISON_BELOW_BASE_U) u[(size_t)(L + base[1] - 1) * V + 3] = bad;
        if (what == POISON_AT_BASE_U) u[(size_t)(L + base[1]) * V + 3] = bad;
        if (what == POISON_KEY_0) k[2] = bad;
        ok = (*blob = malloc(*n)) != NULL && rssm_pool_export(p, s, RSSM_EXPORT_RING, *blob, *n, n) == RSSM_OK;
    }
    rssm_pool_free(p);
    return ok;
}

static int export_slot(rssm_context *ctx, const rssm_layer *l, int32_t live, poison what, float bad, void **blob,
                       size_t *n)
{
    static const int32_t zero[2] = {0, 0};
    return export_slot_based(ctx, l, live, zero, what, bad, blob, n);
}

/* rssm_pool_import of the blob into a fresh pool of `l`: its status. */
static rssm_status import_into(rssm_context *ctx, const rssm_layer *l, const void *blob, size_t n)
{
    rssm_pool *p = NULL;
    int32_t s;
    rssm_status st = rssm_pool_create(ctx, l, 1, 2, &p);
    if (st == RSSM_OK) st = rssm_pool_import(p, blob, n, &s);
    if (st == RSSM_OK && (rssm_pool_num_free(p) != 1 || rssm_pool_validate(p) != RSSM_OK)) st = RSSM_ERROR_DEVICE;
    if (st != RSSM_OK && p && rssm_pool_num_free(p) != 2) st = RSSM_ERROR_DEVICE; /* a refusal took a slot */
    rssm_pool_free(p);
    return st;
}

int main(void)
{
    rssm_context *ctx = NULL;
    if (rssm_context_create(RSSM_DEVICE_REFERENCE, NULL, &ctx) != RSSM_OK) {
        printf("FAIL reference context: %s\n0 passed, 1 failed\n", rssm_last_error());
        return 1;
    }
    rssm_layer l = rssm_layer_default(RSSM_GATE_GDN, 1, 2, 8, 8, 4);
    l.state_dtype = l.ring_dtype = l.io_dtype = RSSM_DTYPE_F64;
    void *blob = NULL;
    size_t n = 0;

    static const struct {
        poison what;
        float bad;
        rssm_status want;
        const char *name;
    } cases[] = {
        {POISON_NONE, 0, RSSM_OK, "a clean blob imports"},
        {POISON_CHECKPOINT, NAN, RSSM_ERROR_BAD_FORMAT, "a NaN in the checkpoint is refused"},
        {POISON_CHECKPOINT, INFINITY, RSSM_ERROR_BAD_FORMAT, "an infinity in the checkpoint is refused"},
        {POISON_LIVE_U, NAN, RSSM_ERROR_BAD_FORMAT, "a NaN in a live ring entry (u) is refused"},
        {POISON_LIVE_G, -INFINITY, RSSM_ERROR_BAD_FORMAT, "a -inf log-gate in a live ring entry is refused"},
        {POISON_DEAD_U, NAN, RSSM_OK, "a NaN in a dead ring entry (never read) imports"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int ok = export_slot(ctx, &l, 2, cases[i].what, cases[i].bad, &blob, &n);
        const rssm_status st = ok ? import_into(ctx, &l, blob, n) : RSSM_ERROR_DEVICE;
        check(ok && st == cases[i].want, cases[i].name);
        if (st != cases[i].want) printf("     got %s: %s\n", rssm_status_name(st), rssm_last_error());
        free(blob), blob = NULL;
    }

    /* GDN ring bases: positions are absolute, so a head's live entries are base .. cursor - 1 */
    static const struct {
        int32_t live, base[2];
        poison what;
        rssm_status want;
        const char *name;
    } based[] = {
        {3, {0, 2}, POISON_NONE, RSSM_OK, "GDN ring bases 0 and 2 at cursor 3 import"},
        {3, {0, 2}, POISON_BELOW_BASE_U, RSSM_OK, "a NaN below a GDN head's ring base (folded early) imports"},
        {3, {0, 2}, POISON_AT_BASE_U, RSSM_ERROR_BAD_FORMAT, "a NaN at a GDN head's ring base (live) is refused"},
        {3,
         {0, 2},
         POISON_KEY_0,
         RSSM_ERROR_BAD_FORMAT,
         "a NaN key below one head's base, live for another, is refused"},
        {3, {1, 2}, POISON_KEY_0, RSSM_OK, "a NaN key below every head's base imports"},
        {3, {0, 4}, POISON_NONE, RSSM_ERROR_BAD_FORMAT, "a GDN ring base above the cursor is refused"},
        {3, {-1, 0}, POISON_NONE, RSSM_ERROR_BAD_FORMAT, "a negative GDN ring base is refused"},
    };
    for (size_t i = 0; i < sizeof based / sizeof based[0]; i++) {
        const int ok = export_slot_based(ctx, &l, based[i].live, based[i].base, based[i].what, NAN, &blob, &n);
        const rssm_status st = ok ? import_into(ctx, &l, blob, n) : RSSM_ERROR_DEVICE;
        check(ok && st == based[i].want, based[i].name);
        if (st != based[i].want) printf("     got %s: %s\n", rssm_status_name(st), rssm_last_error());
        free(blob), blob = NULL;
    }

    /* the importer's layer must be the exporter's in every property */
    const int ok = export_slot(ctx, &l, 2, POISON_NONE, 0, &blob, &n);
    rssm_layer other[5];
    for (int i = 0; i < 5; i++)
        other[i] = l;
    other[0].io_dtype = RSSM_DTYPE_F32;
    other[1].scale = 0.5f;
    other[2].qk_l2norm = 0;
    other[3].fold_threshold = 30.0f;
    other[4].gate = RSSM_GATE_KDA, other[4].num_k_heads = 2; /* the same bytes per slot, another gate */
    static const char *names[5] = {"io dtype", "scale", "q/k normalisation", "fold threshold", "gate"};
    for (int i = 0; i < 5; i++) {
        char what[96];
        const rssm_status st = ok ? import_into(ctx, &other[i], blob, n) : RSSM_ERROR_DEVICE;
        snprintf(what, sizeof what, "a pool of another %s refuses the blob", names[i]);
        check(st == RSSM_ERROR_BAD_FORMAT, what);
    }
    rssm_layer same = l;
    same.scale = 1.0f / sqrtf((float)l.head_k_dim); /* the default, written out */
    check(ok && import_into(ctx, &same, blob, n) == RSSM_OK, "the default scale written out is the same layer");
    same = l;
    same.lower_bound = -3.0f; /* without has_lower_bound the bound means nothing */
    check(ok && import_into(ctx, &same, blob, n) == RSSM_OK, "an unused gate bound does not make another layer");
    free(blob);

    rssm_layer kda = rssm_layer_default(RSSM_GATE_KDA, 2, 2, 8, 8, 4);
    kda.has_lower_bound = 1, kda.lower_bound = -5.0f;
    kda.state_dtype = kda.ring_dtype = kda.io_dtype = RSSM_DTYPE_F64;
    rssm_pool *p = NULL;
    int32_t s;
    int kok = rssm_pool_create(ctx, &kda, 1, 2, &p) == RSSM_OK && rssm_pool_acquire(p, &s) == RSSM_OK &&
              rssm_pool_export_size(p, RSSM_EXPORT_RING, &n) == RSSM_OK && (blob = malloc(n)) != NULL &&
              rssm_pool_export(p, s, RSSM_EXPORT_RING, blob, n, &n) == RSSM_OK;
    rssm_pool_free(p);
    rssm_layer unbounded = kda;
    unbounded.lower_bound = -4.0f;
    check(kok && import_into(ctx, &unbounded, blob, n) == RSSM_ERROR_BAD_FORMAT,
          "a pool of another gate lower bound refuses the blob");
    free(blob);
    rssm_context_free(ctx);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
