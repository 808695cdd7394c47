/*
 * test_cuda_prefill.c — CUDA prefill in chunks of tokens on the narrow lanes
 * (rssm_context_params.cuda_prefill = 1, `--cuda-prefill 1`) against the one-token loop (0), and
 * on the wide lanes (2) against the same lanes sliced (3, K = 128; the default picks one of the
 * two by grid size): outputs and the whole state must be the same bits, for GDN and KDA, every dtype mix, the fast head
 * sizes (K = 128, 64) and a generic one, prompts shorter and longer than a chunk, rows whose slot holds a live ring
 * (folded first) and a padding row, heads with a ring base (earlier early folds); each also against the float64
 * reference, within check's tolerances; ragged rows (cu_seqlens) against each row's own call, on
 * each loop and on the default context where the batch and a row alone take different lanes.
 * Skips (exit 77, ctest's SKIP_RETURN_CODE) without a CUDA device.
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"

typedef struct shape {
    int H, HV, K, V;
} shape;

/* Runs prefill of T tokens on ctx from the state bytes `init`; o [B, T, HV, V], the state after. */
static int run_prefill(rssm_context *ctx, const rssm_layer *l, const rh_snap *init, const rh_inputs *in,
                       const int32_t *slot, double *o, rh_snap *after)
{
    rh_state s;
    int rc = rh_state_create(ctx, l, 4, &s);
    if (rc) return rc;
    rc = rh_snap_put(ctx, &s, init);
    if (!rc) rc = rh_step(ctx, &s, RH_OP_PREFILL, in, slot, NULL, NULL, 0, o);
    if (!rc) rc = rh_snap_take(ctx, &s, after);
    rh_state_free(ctx, &s);
    return rc;
}

/* Outputs and checkpoints of a prefill within tol of the reference's; the ring tensors, cursors
 * and ring bases the same bytes (prefill clears the entries below the cursor, and writes nothing
 * else there). */
static int near_ref(const rssm_layer *l, const double *o, const double *oref, size_t no, const rh_snap *a,
                    const rh_snap *ref, double tol, double *err)
{
    const size_t n = a->n[RH_CKPT] / (l->state_dtype == RSSM_DTYPE_BF16 ? 2 : 4);
    double *x = malloc(sizeof(double) * n), *y = malloc(sizeof(double) * n);
    if (!x || !y) return free(x), free(y), 0;
    rh_unpack(a->t[RH_CKPT], (int64_t)n, l->state_dtype, x);
    rh_unpack(ref->t[RH_CKPT], (int64_t)n, l->state_dtype, y);
    const double eo = rh_relerr(o, oref, (int64_t)no), es = rh_relerr(x, y, (int64_t)n);
    free(x), free(y);
    *err = eo > es ? eo : es;
    int same = 1;
    for (int t = RH_RING_U; t <= RH_CURSOR; t++)
        same = same && a->n[t] == ref->n[t] && (a->n[t] == 0 || !memcmp(a->t[t], ref->t[t], a->n[t]));
    return same && *err <= tol;
}

/* A CUDA context whose prefill takes the lanes `mode` (rssm_context_params.cuda_prefill). */
static int cuda_context_with(int mode, rssm_context **out)
{
    rssm_context_params p = rssm_context_params_default();
    p.cuda_prefill = mode;
    return rh_context_with(RSSM_DEVICE_CUDA, &p, out);
}

/* The contexts under test: prefill in chunks on the narrow lanes, one token at a time, the wide
 * lanes whole and sliced, and the float64 reference. */
typedef struct lanes {
    rssm_context *chunked, *one, *wide, *sliced, *ref;
} lanes;

/* K = 128 with V = 80 (a partial last slice of the sliced lanes) and V = 256 (8 slices: a GDN
 * group of 2 value heads no longer fits one cluster) */
static const shape shapes[5] = {{2, 4, 128, 128}, {2, 2, 64, 64}, {1, 2, 96, 80}, {2, 4, 128, 80}, {1, 2, 128, 256}};
static const rssm_dtype dts[3][3] = {{RSSM_DTYPE_F32, RSSM_DTYPE_F32, RSSM_DTYPE_F32},
                                     {RSSM_DTYPE_F32, RSSM_DTYPE_BF16, RSSM_DTYPE_BF16},
                                     {RSSM_DTYPE_BF16, RSSM_DTYPE_BF16, RSSM_DTYPE_BF16}};
static const char *gate_name(int gate) { return gate == 0 ? "gdn" : gate == 1 ? "kda" : "kda-lb"; }

/* gate 0 GDN, 1 KDA, 2 KDA with a lower bound; dtype mix d of dts; ring length 8 */
static rssm_layer test_layer(int gate, const shape *p, int d)
{
    rssm_layer l = rssm_layer_default(gate ? RSSM_GATE_KDA : RSSM_GATE_GDN, p->H, p->HV, p->K, p->V, 8);
    l.state_dtype = dts[d][0], l.ring_dtype = dts[d][1], l.io_dtype = dts[d][2];
    if (gate == 2) l.has_lower_bound = 1, l.lower_bound = -5.0f;
    return l;
}

/* The initial state of 4 slots: random checkpoints and live rings, taken from one context;
 * heads whose early folds took some of the ring (base <= cursor; both gates). s0 describes the
 * slots. */
static int initial_state(rssm_context *ctx, const rssm_layer *l, rh_rng *rng, rh_state *s0, rh_snap *init)
{
    int r = rh_state_create(ctx, l, 4, s0);
    if (!r) r = rh_state_randomize(ctx, s0, rng, 0);
    if (!r) r = rh_snap_take(ctx, s0, init);
    if (!r) rh_state_free(ctx, s0);
    if (!r)
        for (int sl = 0; sl < 4; sl++)
            for (int hv = 0; hv < l->num_v_heads; hv++) {
                const int32_t c = ((const int32_t *)init->t[RH_CURSOR])[sl];
                ((int32_t *)init->t[RH_RING_BASE])[sl * l->num_v_heads + hv] = (int32_t)(rh_uniform(rng) * (c + 1));
            }
    return r;
}

/* Two prefills from init give the same outputs (n values) and the same 4 slots, bit for bit. */
static int same_bits(const rh_state *s0, const double *oa, const double *ob, size_t n, const rh_snap *a,
                     const rh_snap *b)
{
    int ok = !memcmp(oa, ob, sizeof(double) * n);
    for (int sl = 0; sl < 4 && ok; sl++)
        ok = rh_snap_slot_equal(s0, a, b, sl);
    return ok;
}

/* One layer and prompt length T on every lane: chunks == one token, wide == sliced, each ~ the
 * reference. */
static void uniform_case(const lanes *c, int gate, const shape *p, int d, int T, int *seed)
{
    const int32_t slot[3] = {2, -1, 0}; /* slot 2 and 0 hold random rings; row 1 is padding */
    const int B = 3;
    const rssm_layer l = test_layer(gate, p, d);
    rh_rng rng;
    rh_rng_seed(&rng, 0xbeef + (uint64_t)(*seed)++);
    rh_state s0;
    rh_snap init = {0}, a = {0}, b = {0}, cw = {0}, cm = {0}, cr = {0};
    int r = initial_state(c->chunked, &l, &rng, &s0, &init);
    rh_inputs in;
    memset(&in, 0, sizeof in);
    if (!r) r = rh_inputs_alloc(&in, &l, B, T, (*seed & 1) == 0);
    if (!r) rh_inputs_random(&in, &l, &rng);
    const size_t no = (size_t)B * T * l.num_v_heads * l.head_v_dim;
    double *oa = malloc(sizeof(double) * no), *ob = malloc(sizeof(double) * no);
    double *ow = malloc(sizeof(double) * no), *om = malloc(sizeof(double) * no);
    double *orf = malloc(sizeof(double) * no);
    if (!oa || !ob || !ow || !om || !orf) r = rh_set(RH_FAIL, "out of memory");
    if (!r) r = run_prefill(c->chunked, &l, &init, &in, slot, oa, &a);
    if (!r) r = run_prefill(c->one, &l, &init, &in, slot, ob, &b);
    char what[160];
    snprintf(what, sizeof what, "%s K=%d V=%d HV=%d state=%s ring=%s io=%s T=%d", gate_name(gate), p->K, p->V, p->HV,
             rh_dtype_name(l.state_dtype), rh_dtype_name(l.ring_dtype), rh_dtype_name(l.io_dtype), T);
    t_case(r, !r && same_bits(&s0, oa, ob, no, &a, &b), "prefill chunks == one token: %s", what);
    /* wide lanes, whole heads and sliced: the same bits */
    int rr = r;
    if (!rr) rr = run_prefill(c->wide, &l, &init, &in, slot, ow, &cw);
    if (!rr) rr = run_prefill(c->sliced, &l, &init, &in, slot, om, &cm);
    t_case(rr, !rr && same_bits(&s0, ow, om, no, &cw, &cm), "prefill wide == sliced: %s", what);
    /* wide, sliced wide and narrow lanes against the float64 reference */
    const double tol = rh_tolerance(l.state_dtype, l.ring_dtype, l.io_dtype);
    if (!rr) rr = run_prefill(c->ref, &l, &init, &in, slot, orf, &cr);
    double ew = 0, em = 0, ec = 0;
    const int okw = !rr && near_ref(&l, ow, orf, no, &cw, &cr, tol, &ew);
    const int okm = !rr && near_ref(&l, om, orf, no, &cm, &cr, tol, &em);
    const int okc = !rr && near_ref(&l, oa, orf, no, &a, &cr, tol, &ec);
    t_case(rr, okw && okm && okc, "prefill wide / sliced / narrow ~ reference: %s (err %.2g / %.2g / %.2g, tol %.0e)",
           what, ew, em, ec, tol);
    free(oa), free(ob), free(ow), free(om), free(orf);
    rh_inputs_free(&in);
    rh_snap_free(&init), rh_snap_free(&a), rh_snap_free(&b), rh_snap_free(&cw), rh_snap_free(&cm);
    rh_snap_free(&cr);
}

/* Ragged rows (cu_seqlens) against each row alone, on each loop. */
static void ragged_cases(const lanes *c, int *seed)
{
    static const int32_t rslot[5] = {3, -1, 0, 5, 1}, rlen[5] = {7, 3, 1, 40, 16};
    rssm_context *const loops[4] = {c->chunked, c->one, c->wide, c->sliced};
    static const char *loop_name[4] = {"chunks", "one token", "wide chunks", "sliced wide chunks"};
    for (int ci = 0; ci < 4; ci++)
        for (int gate = 0; gate < 3; gate++)
            for (int sh = 0; sh < 5; sh++)
                for (int d = 0; d < 3; d += 2) {
                    const shape *p = &shapes[sh];
                    const rssm_layer l = test_layer(gate, p, d);
                    int same = 0;
                    ++*seed;
                    const int r =
                        rh_prefill_ragged_check(loops[ci], &l, 5, rslot, rlen, 8, 0xfeed + *seed, *seed & 1, &same);
                    t_case(r, same, "ragged rows == each row alone (%s): %s K=%d V=%d state=%s io=%s", loop_name[ci],
                           gate_name(gate), p->K, p->V, rh_dtype_name(l.state_dtype), rh_dtype_name(l.io_dtype));
                }
}

/* The default context at 8 value heads: twelve rows together take 384 CTAs sliced, more than
 * one per SM on any sm_90 part (so whole heads), one row alone 32 (sliced); the same bits. */
static void default_lanes(int *seed)
{
    static const int32_t dslot[12] = {3, -1, 0, 5, 1, 7, 2, 9, 4, 11, 6, 8};
    static const int32_t dlen[12] = {7, 3, 1, 40, 16, 9, 2, 17, 33, 5, 12, 20};
    rssm_context *dflt = NULL;
    const int rd = rh_context(RSSM_DEVICE_CUDA, &dflt);
    for (int gate = 0; gate < 2 && !rd; gate++)
        for (int d = 0; d < 3; d += 2) {
            const shape p = {gate ? 8 : 4, 8, 128, 128};
            const rssm_layer l = test_layer(gate, &p, d);
            int same = 0;
            ++*seed;
            const int r = rh_prefill_ragged_check(dflt, &l, 12, dslot, dlen, 12, 0xfeed + *seed, *seed & 1, &same);
            t_case(r, same, "default lanes, 12 rows together == each alone: %s HV=8 state=%s", gate ? "kda" : "gdn",
                   rh_dtype_name(l.state_dtype));
        }
    if (rd) t_case(rd, 0, "default cuda context: %s", rh_msg());
    rssm_context_free(dflt);
}

/* Bad ragged rows on the device: counted (reported by the device error check), not run. */
static void bad_ragged(rssm_context *chunked)
{
    for (int bad = 0; bad < 3; bad++) {
        rssm_layer l = rssm_layer_default(RSSM_GATE_GDN, 2, 4, 128, 128, 8);
        const int32_t bslot[2] = {0, 1}, blen[2] = {3, 4};
        rh_state s;
        rh_inputs full, rg;
        memset(&s, 0, sizeof s), memset(&full, 0, sizeof full), memset(&rg, 0, sizeof rg);
        rh_rng rng;
        rh_rng_seed(&rng, 99 + bad);
        int r = rh_state_create(chunked, &l, 2, &s);
        if (!r) r = rh_inputs_alloc(&full, &l, 2, 4, 0);
        if (!r) rh_inputs_random(&full, &l, &rng);
        if (!r) r = rh_inputs_ragged(&full, blen, &rg);
        if (!r) {
            if (bad == 0) rg.cu_seqlens[0] = 1;  /* does not start at 0 */
            if (bad == 1) rg.cu_seqlens[1] = -2; /* row 1 starts before the tokens */
            if (bad == 2) rg.cu_seqlens[1] = 6;  /* row 0 has 6 > T tokens */
            r = rh_step(chunked, &s, RH_OP_PREFILL, &rg, bslot, NULL, NULL, 0, NULL);
        }
        static const char *what[3] = {"cu_seqlens[0] = 1", "a row starting at -2", "a row longer than T"};
        const int reported = r == RH_FAIL && strstr(rh_msg(), "cu_seqlens") != NULL;
        t_case(RH_OK, reported, "ragged rows, %s: %s", what[bad], r == RH_FAIL ? rh_msg() : "no device error reported");
        rh_inputs_free(&full), rh_inputs_free(&rg), rh_state_free(chunked, &s);
    }
}

int main(void)
{
    lanes c = {0};
    int rc = cuda_context_with(1, &c.chunked);
    if (rc == RH_UNSUPPORTED) {
        printf("SKIP cuda prefill chunks (%s)\n0 passed, 0 failed, 1 skipped\n", rh_msg());
        return RH_EXIT_SKIP;
    }
    if (!rc) rc = cuda_context_with(0, &c.one);
    if (!rc) rc = cuda_context_with(2, &c.wide);
    if (!rc) rc = cuda_context_with(3, &c.sliced);
    if (!rc) rc = rh_context(RSSM_DEVICE_REFERENCE, &c.ref);
    if (rc) {
        printf("FAIL cuda contexts: %s\n", rh_msg());
        return 1;
    }
    static const int tokens[5] = {1, 7, 16, 17, 45};
    int seed = 0;
    for (int gate = 0; gate < 3; gate++)
        for (int sh = 0; sh < 5; sh++)
            for (int d = 0; d < 3; d++)
                for (int ti = 0; ti < 5; ti++)
                    uniform_case(&c, gate, &shapes[sh], d, tokens[ti], &seed);
    ragged_cases(&c, &seed);
    default_lanes(&seed);
    bad_ragged(c.chunked);
    rssm_context_free(c.chunked);
    rssm_context_free(c.one);
    rssm_context_free(c.wide);
    rssm_context_free(c.sliced);
    rssm_context_free(c.ref);
    return t_end();
}
