/*
 * test_errors.c — every kind of bad input to every public call returns the right status,
 * leaves a non-empty rssm_last_error(), and changes nothing (checksum of every buffer before
 * and after). Host memory (slot and cursor checks happen on the host on CPU and reference).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { SLOTS = 4, B = 2, L = 4, H = 1, HV = 2, K = 16, V = 16 };

static uint8_t *mem[32];
static size_t memn[32];
static int nmem;

static void *buf(size_t n)
{
    void *p = aligned_alloc(64, (n + 63) / 64 * 64 + 64);
    memset(p, 0, n + 16);
    mem[nmem] = p, memn[nmem++] = n + 16;
    return p;
}

static uint64_t checksum(void)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < nmem; i++)
        for (size_t j = 0; j < memn[i]; j++)
            h = (h ^ mem[i][j]) * 1099511628211ull;
    return h;
}

static rssm_context *ctx;
static const char *dev;

/* Runs `call`, expects `want`, a message and no change. */
#define EXPECT(want, call, ...)                                                                                        \
    do {                                                                                                               \
        uint64_t before_ = checksum();                                                                                 \
        rssm_status got_ = (call);                                                                                     \
        const char *m_ = rssm_last_error();                                                                            \
        int ok_ = got_ == (want) && m_ && m_[0] && checksum() == before_;                                              \
        char what_[256];                                                                                               \
        snprintf(what_, sizeof what_, __VA_ARGS__);                                                                    \
        t_case(RH_OK, ok_, "errors/%s/%s: %s (got %s, message \"%s\"%s)", dev, what_, rssm_status_name(want),          \
               rssm_status_name(got_), m_, checksum() == before_ ? "" : ", BUFFERS CHANGED");                          \
    } while (0)

typedef rssm_status (*step_fn)(rssm_context *, const rssm_layer *, const rssm_state *, const rssm_step_io *, void *);

/* Context, layer and size calls: no context needed. */
static void errors_context_and_layer(void)
{
    dev = "any";
    rssm_context *c = (rssm_context *)0x1;
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_context_create(RSSM_DEVICE_REFERENCE, NULL, NULL), "context_create out NULL");
    EXPECT(RSSM_ERROR_BAD_ARGUMENT, rssm_context_create((rssm_device)7, NULL, &c), "context_create device 7");
    rssm_context_params bad = rssm_context_params_default();
    bad.threads = -1;
    EXPECT(RSSM_ERROR_BAD_ARGUMENT, rssm_context_create(RSSM_DEVICE_CPU, &bad, &c), "context_create threads -1");
    bad = rssm_context_params_default();
    bad.cuda_split = 3;
    EXPECT(RSSM_ERROR_BAD_ARGUMENT, rssm_context_create(RSSM_DEVICE_CPU, &bad, &c), "context_create cuda_split 3");
    bad = rssm_context_params_default();
    bad.cpu_simd = 2;
    EXPECT(RSSM_ERROR_BAD_ARGUMENT, rssm_context_create(RSSM_DEVICE_CPU, &bad, &c), "context_create cpu_simd 2");
    bad = rssm_context_params_default();
    bad.cuda_pdl = 4;
    EXPECT(RSSM_ERROR_BAD_ARGUMENT, rssm_context_create(RSSM_DEVICE_CPU, &bad, &c), "context_create cuda_pdl 4");
    bad = rssm_context_params_default();
    bad.cuda_stream = 2;
    EXPECT(RSSM_ERROR_BAD_ARGUMENT, rssm_context_create(RSSM_DEVICE_CPU, &bad, &c), "context_create cuda_stream 2");
    static const int refused_producers[] = {-2, 0, 4}; /* the switch's range: -1, and 1 to 3 */
    for (int i = 0; i < 3; i++) {
        bad = rssm_context_params_default();
        bad.cuda_pipeline_producers = refused_producers[i];
        EXPECT(RSSM_ERROR_BAD_ARGUMENT, rssm_context_create(RSSM_DEVICE_CPU, &bad, &c),
               "context_create cuda_pipeline_producers %d", refused_producers[i]);
    }
    bad = rssm_context_params_default();
    bad.cuda_pipeline_producers = 2;
    rssm_context *pc = NULL;
    const rssm_status pst = rssm_context_create(RSSM_DEVICE_CPU, &bad, &pc);
    t_case(RH_OK, pst == RSSM_OK, "errors/any/context_create cuda_pipeline_producers 2: accepted (got %s)",
           rssm_status_name(pst));
    rssm_context_free(pc);
    rssm_context_info info;
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_context_get_info(NULL, &info), "context_get_info ctx NULL");
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_mem_alloc(NULL, 16, NULL), "mem_alloc ctx NULL");
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_context_synchronize(NULL), "context_synchronize ctx NULL");
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_context_check_device_errors(NULL), "check_device_errors NULL");
    rssm_layer l0 = rssm_layer_default(RSSM_GATE_KDA, H, HV, K, V, L), l;
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_layer_validate(NULL), "layer_validate NULL");
#define BAD_LAYER(want, mod, name)                                                                                     \
    l = l0, mod;                                                                                                       \
    EXPECT(want, rssm_layer_validate(&l), "layer_validate %s", name);
    BAD_LAYER(RSSM_ERROR_BAD_SHAPE, l.num_k_heads = 0, "H=0");
    BAD_LAYER(RSSM_ERROR_BAD_SHAPE, (l.num_k_heads = 2, l.num_v_heads = 3), "HV not a multiple of H");
    BAD_LAYER(RSSM_ERROR_BAD_SHAPE, l.head_k_dim = 0, "K=0");
    BAD_LAYER(RSSM_ERROR_BAD_SHAPE, l.head_v_dim = 257, "V=257");
    BAD_LAYER(RSSM_ERROR_BAD_ARGUMENT, l.gate = (rssm_gate)5, "gate 5");
    BAD_LAYER(RSSM_ERROR_BAD_RING_LEN, l.ring_len = 0, "L=0");
    BAD_LAYER(RSSM_ERROR_BAD_RING_LEN, l.ring_len = 65, "L=65");
    BAD_LAYER(RSSM_ERROR_BAD_DTYPE, l.state_dtype = (rssm_dtype)9, "state dtype 9");
    BAD_LAYER(RSSM_ERROR_BAD_DTYPE, l.io_dtype = (rssm_dtype)-1, "io dtype -1");
    BAD_LAYER(RSSM_ERROR_BAD_ARGUMENT, l.scale = NAN, "scale NaN");
    BAD_LAYER(RSSM_ERROR_BAD_ARGUMENT, l.scale = -1, "scale -1");
    BAD_LAYER(RSSM_ERROR_BAD_ARGUMENT, l.qk_l2norm = 2, "qk_l2norm 2");
    BAD_LAYER(RSSM_ERROR_BAD_ARGUMENT, (l.has_lower_bound = 1, l.lower_bound = 1), "lower bound > 0");
    BAD_LAYER(RSSM_ERROR_BAD_ARGUMENT, (l.gate = RSSM_GATE_GDN, l.has_lower_bound = 1, l.lower_bound = -5),
              "lower bound on GDN");
    BAD_LAYER(RSSM_ERROR_BAD_ARGUMENT, l.fold_threshold = 81, "fold threshold 81");
#undef BAD_LAYER
    rssm_state_bytes sb;
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_state_size(&l0, 1, NULL), "state_size out NULL");
    EXPECT(RSSM_ERROR_BAD_SHAPE, rssm_state_size(&l0, 0, &sb), "state_size 0 slots");
}

/* One gate's layer, state and valid step (host buffers registered for the checksum) on the
 * device under test. */
typedef struct fixture {
    rssm_device device;
    int g; /* 0 GDN, 1 KDA */
    const char *gn;
    rssm_layer l;
    rssm_state st;
    rssm_step_io io0; /* a valid decode step of B rows */
    float *q, *o;
    int32_t *slot, *slot2, *acc; /* [B]: slots 0 1, slots 2 3, accepted 1 0 */
} fixture;

static void fixture_init(fixture *x, rssm_device device, int g)
{
    nmem = 0;
    x->device = device, x->g = g, x->gn = g ? "kda" : "gdn";
    x->l = rssm_layer_default(g ? RSSM_GATE_KDA : RSSM_GATE_GDN, H, HV, K, V, L);
    rssm_state_bytes sz;
    rssm_state_size(&x->l, SLOTS, &sz);
    rssm_state st = {SLOTS,          buf(sz.checkpoint), buf(sz.ring_u), buf(sz.ring_k),
                     buf(sz.ring_g), buf(sz.ring_base),  buf(sz.cursor), sz};
    for (size_t i = 0; i < sz.checkpoint / 4; i++)
        ((float *)st.checkpoint)[i] = (float)(i % 7) * 0.1f;
    st.cursor[0] = 1, st.cursor[1] = 2;
    x->st = st;
    const int gk = g ? K : 1;
    float *q = buf(4 * B * 2 * H * K), *k = buf(4 * B * 2 * H * K), *v = buf(4 * B * 2 * HV * V);
    float *a = buf(4 * B * 2 * HV * gk), *bb = buf(4 * B * 2 * HV), *alog = buf(4 * HV), *dtb = buf(4 * HV * gk);
    x->q = q, x->o = buf(4 * B * 2 * HV * V);
    x->slot = buf(4 * B), x->slot2 = buf(4 * B), x->acc = buf(4 * B);
    for (int i = 0; i < B * 2 * H * K; i++)
        q[i] = k[i] = (float)(i % 5) - 2;
    x->slot[0] = 0, x->slot[1] = 1, x->slot2[0] = 2, x->slot2[1] = 3, x->acc[0] = 1, x->acc[1] = 0;
    rssm_step_io *io0 = &x->io0;
    memset(io0, 0, sizeof *io0);
    io0->batch = B, io0->tokens = 1, io0->q = q, io0->k = k, io0->v = v, io0->a = a, io0->b = bb;
    io0->A_log = alog, io0->dt_bias = dtb, io0->o = x->o, io0->slot = x->slot;
}

static void fixture_free(void)
{
    for (int i = 0; i < nmem; i++)
        free(mem[i]);
    nmem = 0;
}

static const char *const step_names[4] = {"decode_packed", "decode_replay", "verify", "prefill"};
static const step_fn step_fns[4] = {rssm_decode_packed, rssm_decode_replay, rssm_verify, rssm_prefill};

/* One bad input to step function f: the valid call of x with `mod` applied to copies of its
 * io (io), state (s2) and layer (l2). */
#define STEP(want, what, ...)                                                                                          \
    do {                                                                                                               \
        rssm_step_io io = x->io0;                                                                                      \
        rssm_state s2 = x->st;                                                                                         \
        rssm_layer l2 = x->l;                                                                                          \
        __VA_ARGS__;                                                                                                   \
        EXPECT(want, step_fns[f](ctx, &l2, &s2, &io, NULL), "%s/%s/%s", x->gn, step_names[f], what);                   \
    } while (0)

/* The valid call works (or the device does not run it yet), then NULL pointers, bad layers
 * and shapes, misaligned pointers and bad slots. */
static void errors_step_basic(const fixture *x, int f)
{
    const char *gn = x->gn, *fn = step_names[f];
    const rssm_layer *l = &x->l;
    const rssm_state *st = &x->st;
    int32_t *slot = x->slot;
    _Alignas(16) int32_t bad[B];
    { /* control */
        rssm_status cs = step_fns[f](ctx, l, st, &x->io0, NULL);
        if (cs == RSSM_ERROR_UNSUPPORTED) rh_set(RH_UNSUPPORTED, "%s", rssm_last_error());
        t_case(cs == RSSM_ERROR_UNSUPPORTED ? RH_UNSUPPORTED : RH_OK, cs == RSSM_OK,
               "errors/%s/%s/%s/valid call (control): %s", dev, gn, fn, rssm_status_name(cs));
        st->cursor[0] = 1, st->cursor[1] = 2; /* a replay control call may have moved nothing, but be sure */
    }
    EXPECT(RSSM_ERROR_NULL_POINTER, step_fns[f](NULL, l, st, &x->io0, NULL), "%s/%s/ctx NULL", gn, fn);
    EXPECT(RSSM_ERROR_NULL_POINTER, step_fns[f](ctx, NULL, st, &x->io0, NULL), "%s/%s/layer NULL", gn, fn);
    EXPECT(RSSM_ERROR_NULL_POINTER, step_fns[f](ctx, l, NULL, &x->io0, NULL), "%s/%s/state NULL", gn, fn);
    EXPECT(RSSM_ERROR_NULL_POINTER, step_fns[f](ctx, l, st, NULL, NULL), "%s/%s/io NULL", gn, fn);
    STEP(RSSM_ERROR_NULL_POINTER, "q NULL", io.q = NULL);
    STEP(RSSM_ERROR_NULL_POINTER, "o NULL", io.o = NULL);
    STEP(RSSM_ERROR_NULL_POINTER, "slot NULL", io.slot = NULL);
    STEP(RSSM_ERROR_NULL_POINTER, "a NULL without g", io.a = NULL);
    STEP(RSSM_ERROR_NULL_POINTER, "beta NULL with g", io.g = io.A_log);
    STEP(RSSM_ERROR_NULL_POINTER, "checkpoint NULL", s2.checkpoint = NULL);
    if (f) STEP(RSSM_ERROR_NULL_POINTER, "ring_u NULL", s2.ring_u = NULL);
    if (f) STEP(RSSM_ERROR_NULL_POINTER, "cursor NULL", s2.cursor = NULL);
    if (f) STEP(RSSM_ERROR_NULL_POINTER, "ring_base NULL", s2.ring_base = NULL);
    STEP(RSSM_ERROR_BAD_SHAPE, "H=0", l2.num_k_heads = 0);
    STEP(RSSM_ERROR_BAD_RING_LEN, "L=0", l2.ring_len = 0);
    STEP(RSSM_ERROR_BAD_DTYPE, "io dtype 7", l2.io_dtype = (rssm_dtype)7);
    if (x->device != RSSM_DEVICE_REFERENCE)
        STEP(RSSM_ERROR_BAD_DTYPE, "f64 state off the reference", l2.state_dtype = RSSM_DTYPE_F64);
    STEP(RSSM_ERROR_BAD_SHAPE, "batch -1", io.batch = -1);
    STEP(RSSM_ERROR_BAD_SHAPE, "num_slots 0", s2.num_slots = 0);
    STEP(RSSM_ERROR_BAD_TOKENS, "T=0", io.tokens = 0);
    if (f == 1) STEP(RSSM_ERROR_BAD_TOKENS, "T=2 for replay decode", io.tokens = 2);
    if (f == 2) STEP(RSSM_ERROR_BAD_TOKENS, "T>L for verify", io.tokens = L + 1);
    STEP(RSSM_ERROR_MISALIGNED, "q misaligned", io.q = x->q + 1);
    STEP(RSSM_ERROR_MISALIGNED, "o misaligned", io.o = x->o + 2);
    STEP(RSSM_ERROR_MISALIGNED, "checkpoint misaligned", s2.checkpoint = (float *)st->checkpoint + 1);
    STEP(RSSM_ERROR_MISALIGNED, "slot misaligned", io.slot = slot + 1);
    STEP(RSSM_ERROR_MISALIGNED, "q_stride not a 16-byte multiple", io.q_stride = H * K + 1);
    STEP(RSSM_ERROR_BAD_SHAPE, "v_stride smaller than a token", io.v_stride = 4);
    STEP(RSSM_ERROR_BAD_SHAPE, "g_stride smaller than a token",
         (io.g = io.dt_bias, io.beta = io.A_log, io.g_stride = 1));
    STEP(RSSM_ERROR_BAD_SHAPE, "beta_stride smaller than a token",
         (io.g = io.dt_bias, io.beta = io.A_log, io.beta_stride = 1));
    STEP(RSSM_ERROR_BAD_ARGUMENT, "state_layout 2", l2.state_layout = (rssm_state_layout)2);
    STEP(RSSM_ERROR_BAD_SLOT, "slot out of range", (bad[0] = 0, bad[1] = SLOTS, io.slot = bad));
    STEP(RSSM_ERROR_BAD_SLOT, "slot -2", (bad[0] = -2, bad[1] = 1, io.slot = bad));
    STEP(RSSM_ERROR_BAD_SLOT, "duplicate slot", (bad[0] = 1, bad[1] = 1, io.slot = bad));
    /* a state sized for another layer shape or fewer slots: caught before any kernel runs */
    STEP(RSSM_ERROR_BAD_SHAPE, "state sized for K/2", l2.head_k_dim = 2 * K);
    STEP(RSSM_ERROR_BAD_SHAPE, "state sized for HV/2", (l2.num_v_heads = 2 * HV, l2.num_k_heads = 2 * H));
    STEP(RSSM_ERROR_BAD_SHAPE, "more slots than allocated", s2.num_slots = SLOTS + 1);
    STEP(RSSM_ERROR_BAD_SHAPE, "checkpoint one byte short", s2.bytes.checkpoint -= 1);
    STEP(RSSM_ERROR_BAD_SHAPE, "bytes unset", memset(&s2.bytes, 0, sizeof s2.bytes));
    if (f) STEP(RSSM_ERROR_BAD_SHAPE, "ring_u short", s2.bytes.ring_u -= 4);
    if (f) STEP(RSSM_ERROR_BAD_SHAPE, "ring_k short", s2.bytes.ring_k -= 4);
    if (f) STEP(RSSM_ERROR_BAD_SHAPE, "ring_g short", s2.bytes.ring_g -= 4);
    if (f) STEP(RSSM_ERROR_BAD_SHAPE, "ring_base short", s2.bytes.ring_base -= 4);
    if (f) STEP(RSSM_ERROR_BAD_SHAPE, "cursor short", s2.bytes.cursor -= 4);
    if (f) STEP(RSSM_ERROR_BAD_SHAPE, "ring sized for L/2", l2.ring_len = 2 * L);
}

/* write_slot, fold_every and cu_seqlens where they do not apply or are wrong, and corrupt
 * cursors and ring bases in the state. */
static void errors_step_fields(const fixture *x, int f)
{
    const rssm_state *st = &x->st;
    _Alignas(16) int32_t bad[B];
    if (f == 0) STEP(RSSM_ERROR_BAD_SLOT, "write_slot duplicate", (bad[0] = 3, bad[1] = 3, io.write_slot = bad));
    if (f == 0) STEP(RSSM_ERROR_BAD_SLOT, "write_slot pads one side", (bad[0] = -1, bad[1] = 3, io.write_slot = bad));
    if (f) STEP(RSSM_ERROR_BAD_ARGUMENT, "write_slot off packed", io.write_slot = x->slot2);
    static const _Alignas(16) uint8_t fold1[16] = {1, 1};
    if (f != 1) STEP(RSSM_ERROR_BAD_ARGUMENT, "fold_every off replay decode", io.fold_every = 1);
    if (f == 1) STEP(RSSM_ERROR_BAD_ARGUMENT, "fold_every without a fold array", io.fold_every = 1);
    STEP(RSSM_ERROR_BAD_ARGUMENT, "fold_every 2", (io.fold = fold1, io.fold_every = 2));
    _Alignas(16) int32_t cu[8] = {0, 1, 2};
    if (f != 3) STEP(RSSM_ERROR_BAD_ARGUMENT, "cu_seqlens off prefill", io.cu_seqlens = cu);
    if (f == 3) {
        STEP(RSSM_ERROR_MISALIGNED, "cu_seqlens misaligned", io.cu_seqlens = cu + 1);
        STEP(RSSM_ERROR_BAD_TOKENS, "cu_seqlens[0] not 0", (cu[0] = 1, io.cu_seqlens = cu));
        STEP(RSSM_ERROR_BAD_TOKENS, "ragged row without tokens", (cu[0] = 0, cu[1] = 0, io.cu_seqlens = cu));
        STEP(RSSM_ERROR_BAD_TOKENS, "ragged row longer than T", (cu[0] = 0, cu[1] = 2, cu[2] = 3, io.cu_seqlens = cu));
        STEP(RSSM_ERROR_BAD_TOKENS, "ragged row of negative length",
             (cu[0] = 0, cu[1] = 1, cu[2] = 0, io.cu_seqlens = cu));
    }
    if (f) {
        int32_t keep = st->cursor[1];
        st->cursor[1] = L + 1;
        STEP(RSSM_ERROR_BAD_ARGUMENT, "corrupt cursor L+1", (void)0);
        st->cursor[1] = -1;
        STEP(RSSM_ERROR_BAD_ARGUMENT, "corrupt cursor -1", (void)0);
        st->cursor[1] = keep;
        st->ring_base[1 * HV + 1] = keep + 1;
        STEP(RSSM_ERROR_BAD_ARGUMENT, "ring_base above cursor", (void)0);
        st->ring_base[1 * HV + 1] = -1;
        STEP(RSSM_ERROR_BAD_ARGUMENT, "ring_base -1", (void)0);
        st->ring_base[1 * HV + 1] = 0;
    }
}
#undef STEP

/* The calls on whole states: rssm_advance, rssm_commit, rssm_reset_cursors and
 * rssm_materialize. */
static void errors_state_calls(const fixture *x)
{
    const char *gn = x->gn;
    rssm_layer l = x->l;
    rssm_state st = x->st;
    int32_t *slot = x->slot, *slot2 = x->slot2, *acc = x->acc;
    _Alignas(16) int32_t bad[B];
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_advance(NULL, &l, &st, B, slot, NULL, NULL), "%s/advance/ctx NULL", gn);
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_advance(ctx, &l, NULL, B, slot, NULL, NULL), "%s/advance/state NULL", gn);
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_advance(ctx, &l, &st, B, NULL, NULL, NULL), "%s/advance/slot NULL", gn);
    EXPECT(RSSM_ERROR_BAD_SHAPE, rssm_advance(ctx, &l, &st, -1, slot, NULL, NULL), "%s/advance/batch -1", gn);
    bad[0] = 0, bad[1] = SLOTS;
    EXPECT(RSSM_ERROR_BAD_SLOT, rssm_advance(ctx, &l, &st, B, bad, NULL, NULL), "%s/advance/slot out of range", gn);
    bad[0] = 2, bad[1] = 2;
    EXPECT(RSSM_ERROR_BAD_SLOT, rssm_advance(ctx, &l, &st, B, bad, NULL, NULL), "%s/advance/duplicate slot", gn);
    EXPECT(RSSM_ERROR_MISALIGNED, rssm_advance(ctx, &l, &st, 1, slot + 1, NULL, NULL), "%s/advance/slot misaligned",
           gn);
    rssm_layer l0 = l;
    l0.ring_len = 0;
    EXPECT(RSSM_ERROR_BAD_RING_LEN, rssm_advance(ctx, &l0, &st, B, slot, NULL, NULL), "%s/advance/L=0", gn);
    EXPECT(RSSM_ERROR_BAD_TOKENS, rssm_commit(ctx, &l, &st, B, 0, slot, NULL, acc, NULL), "%s/commit/T=0", gn);
    EXPECT(RSSM_ERROR_BAD_TOKENS, rssm_commit(ctx, &l, &st, B, L + 1, slot, NULL, acc, NULL), "%s/commit/T>L", gn);
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_commit(ctx, &l, &st, B, 1, slot, NULL, NULL, NULL), "%s/commit/accepted NULL",
           gn);
    bad[0] = 2, bad[1] = 0;
    EXPECT(RSSM_ERROR_BAD_TOKENS, rssm_commit(ctx, &l, &st, B, 1, slot, NULL, bad, NULL), "%s/commit/accepted > T", gn);
    bad[0] = -1;
    EXPECT(RSSM_ERROR_BAD_TOKENS, rssm_commit(ctx, &l, &st, B, 1, slot, NULL, bad, NULL), "%s/commit/accepted < 0", gn);
    int32_t keep = st.cursor[0];
    st.cursor[0] = L + 3;
    EXPECT(RSSM_ERROR_BAD_ARGUMENT, rssm_advance(ctx, &l, &st, B, slot, NULL, NULL), "%s/advance/corrupt cursor", gn);
    EXPECT(RSSM_ERROR_BAD_ARGUMENT, rssm_commit(ctx, &l, &st, B, 1, slot, NULL, acc, NULL), "%s/commit/corrupt cursor",
           gn);
    st.cursor[0] = keep;
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_reset_cursors(ctx, NULL, B, slot, NULL), "%s/reset_cursors/state NULL", gn);
    bad[0] = 5, bad[1] = 0;
    EXPECT(RSSM_ERROR_BAD_SLOT, rssm_reset_cursors(ctx, &st, B, bad, NULL), "%s/reset_cursors/slot out of range", gn);
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_reset_cursors(NULL, &st, B, slot, NULL), "%s/reset_cursors/ctx NULL", gn);
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_materialize(NULL, &l, &st, &st, B, slot, slot2, NULL),
           "%s/materialize/ctx NULL", gn);
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_materialize(ctx, &l, NULL, &st, B, slot, slot2, NULL),
           "%s/materialize/src NULL", gn);
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_materialize(ctx, &l, &st, NULL, B, slot, slot2, NULL),
           "%s/materialize/dst NULL", gn);
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_materialize(ctx, &l, &st, &st, B, NULL, slot2, NULL),
           "%s/materialize/src_slot NULL", gn);
    EXPECT(RSSM_ERROR_BAD_SHAPE, rssm_materialize(ctx, &l, &st, &st, -1, slot, slot2, NULL), "%s/materialize/batch -1",
           gn);
    bad[0] = 0, bad[1] = SLOTS + 1;
    EXPECT(RSSM_ERROR_BAD_SLOT, rssm_materialize(ctx, &l, &st, &st, B, bad, slot2, NULL),
           "%s/materialize/src_slot out of range", gn);
    bad[0] = 3, bad[1] = 3;
    EXPECT(RSSM_ERROR_BAD_SLOT, rssm_materialize(ctx, &l, &st, &st, B, slot, bad, NULL),
           "%s/materialize/duplicate dst_slot", gn);
    bad[0] = 1, bad[1] = 2;
    EXPECT(RSSM_ERROR_BAD_SLOT, rssm_materialize(ctx, &l, &st, &st, B, slot, bad, NULL),
           "%s/materialize/dst is another row's src", gn);
    EXPECT(RSSM_ERROR_MISALIGNED, rssm_materialize(ctx, &l, &st, &st, 1, slot + 1, slot2, NULL),
           "%s/materialize/src_slot misaligned", gn);
    rssm_state nobase = st;
    nobase.ring_base = NULL;
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_materialize(ctx, &l, &nobase, &st, B, slot, slot2, NULL),
           "%s/materialize/src ring_base NULL", gn);
    EXPECT(RSSM_ERROR_NULL_POINTER, rssm_materialize(ctx, &l, &st, &nobase, B, slot, slot2, NULL),
           "%s/materialize/dst ring_base NULL", gn);
    rssm_state small = st;
    small.bytes.checkpoint -= 1;
    EXPECT(RSSM_ERROR_BAD_SHAPE, rssm_materialize(ctx, &l, &small, &st, B, slot, slot2, NULL),
           "%s/materialize/src checkpoint short", gn);
    EXPECT(RSSM_ERROR_BAD_SHAPE, rssm_materialize(ctx, &l, &st, &small, B, slot, slot2, NULL),
           "%s/materialize/dst checkpoint short", gn);
    small = st, small.bytes.ring_base -= 4;
    EXPECT(RSSM_ERROR_BAD_SHAPE, rssm_materialize(ctx, &l, &st, &small, B, slot, slot2, NULL),
           "%s/materialize/dst ring_base short", gn);
    small = st, small.bytes.cursor -= 4;
    EXPECT(RSSM_ERROR_BAD_SHAPE, rssm_advance(ctx, &l, &small, B, slot, NULL, NULL), "%s/advance/cursor short", gn);
    EXPECT(RSSM_ERROR_BAD_SHAPE, rssm_commit(ctx, &l, &small, B, 2, slot, NULL, acc, NULL), "%s/commit/cursor short",
           gn);
    EXPECT(RSSM_ERROR_BAD_SHAPE, rssm_reset_cursors(ctx, &small, B, slot, NULL), "%s/reset_cursors/cursor short", gn);
}

/* Every step function, the cursor moves and materialise, for both gates, on one device. */
static void errors_on_device(rssm_device device)
{
    dev = rh_device_name(device);
    rssm_context_params one = rssm_context_params_default();
    one.threads = 1;
    if (rssm_context_create(device, &one, &ctx) != RSSM_OK) {
        t_case(RH_FAIL, 0, "errors/%s: context: %s", dev, rssm_last_error());
        return;
    }
    for (int g = 0; g < 2; g++) {
        fixture x;
        fixture_init(&x, device, g);
        for (int f = 0; f < 4; f++) {
            errors_step_basic(&x, f);
            errors_step_fields(&x, f);
        }
        errors_state_calls(&x);
        fixture_free();
    }
    rssm_context_free(ctx);
}

int main(void)
{
    errors_context_and_layer();
    errors_on_device(RSSM_DEVICE_REFERENCE);
    errors_on_device(RSSM_DEVICE_CPU);
    return t_end();
}
