/*
 * backend.cu — the CUDA back end: the function table of backend.h (step, materialise,
 * cursor moves, planner kernels, memory), the context's own stream and device error counter.
 *
 * Every op is enqueued on the caller's stream with no allocation, synchronisation or read
 * back, so a whole decode step can be captured in a CUDA graph. Launch shape of the step
 * kernel (step_kernel.cuh): grid (HV * NS, B), 256 threads, NS = slices of VS state rows
 * per head, clusters of the CTAs that share ring data. One visible switch turns the runtime
 * head size and state dtype into a template configuration.
 */
#include <stdio.h>
#include <stdlib.h>

#include "launch_rules.h"
#include "step_kernel.cuh"

extern "C" {
#include "core/backend.h"
}

typedef struct cuda_impl {
    int device;
    cudaStream_t stream; /* the context's own stream, for tools */
    cudaEvent_t order;   /* stream ordering between the context's stream and a caller's */
    int *err;            /* device error counter: rows with out-of-range slots */
    int sm_count;
    int smem_per_sm;         /* shared memory per multiprocessor, bytes */
    int64_t dram_mbs_per_sm; /* peak DRAM bandwidth per multiprocessor, MB/s; 0 = unknown */
    /* the tuning switches (rssm_context_params says what each value means) */
    int fast;      /* cuda_fast: the K = V = 128 kernels where they apply */
    int split;     /* cuda_split: CTAs per head of the fast kernels, 0 = by batch size */
    int prefetch;  /* cuda_prefetch: L2 prefetch distance in half waves, 0 = off, -1 = by rule */
    int spec;      /* cuda_ring_read: whole-ring reads, -1 = by grid size */
    int pipe;      /* cuda_pipeline: replay decode on the persistent pipeline, -1 = by grid size */
    int pipe_bal;  /* cuda_pipeline_balance: folding rows dealt first, -1 = by grid size */
    int pipe_np;   /* cuda_pipeline_producers: producer warps, -1 = by grid size */
    int pf_mode;   /* cuda_prefill: -1 by grid size, 0 one token at a time, 1 narrow, 2 wide, 3 sliced wide */
    int pdl;       /* cuda_pdl: the fast kernels' programmatic dependent launch, -1 = by grid size */
    int stream_rw; /* cuda_stream: packed decode streamed by rows, rows per warp; -1 = by grid size */
} cuda_impl;

static cuda_impl *impl_of(rssm_context *ctx) { return (cuda_impl *)ctx->impl; }

static rssm_status cuda_fail(cudaError_t e, const char *what)
{
    return rssm_fail(RSSM_ERROR_DEVICE, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

#define CU(call, what)                                                                                                 \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) return cuda_fail(e_, what);                                                             \
    } while (0)

/* ---- configurations: the one switch from runtime head size to templates ------------------ */
/* The kernels are instantiated in step_k128.cu, step_k64.cu, step_generic.cu and prefill_k128_wide.cu
 * (separate files so they compile in parallel). */

enum {
    CFG_K128_F32,
    CFG_K128_BF16,
    CFG_K64_F32,
    CFG_K64_BF16,
    CFG_GEN_F32,
    CFG_GEN_BF16,
    CFG_K128W_F32, /* prefill only: wide lanes, whole heads and sliced (prefill_config) */
    CFG_K128W_BF16,
    CFG_K128S_F32,
    CFG_K128S_BF16,
    CFG_COUNT
};

static int config_of(const rssm_layer *l)
{
    const int bf = l->state_dtype == RSSM_DTYPE_BF16;
    switch (l->head_k_dim) {
    case 128:
        return bf ? CFG_K128_BF16 : CFG_K128_F32;
    case 64:
        return bf ? CFG_K64_BF16 : CFG_K64_F32;
    default:
        return bf ? CFG_GEN_BF16 : CFG_GEN_F32;
    }
}

/* state rows per CTA of each configuration (indexed by CFG_*) */
static int vs_of(int config)
{
    static const int vs[] = {cfg_k128_f32::VS,  cfg_k128_bf16::VS, cfg_k64_f32::VS,   cfg_k64_bf16::VS,
                             cfg_gen_f32::VS,   cfg_gen_bf16::VS,  cfg_k128w_f32::VS, cfg_k128w_bf16::VS,
                             cfg_k128s_f32::VS, cfg_k128s_bf16::VS};
    static_assert(sizeof vs / sizeof vs[0] == CFG_COUNT, "one entry per configuration");
    return vs[config];
}

#define RSSM_SMEM_MAX (200 * 1024)

static size_t smem_bytes(const rssm_layer *l, int config, int tc)
{
    const int gk = l->gate == RSSM_GATE_KDA ? l->head_k_dim : 1;
    return sizeof(float) * (size_t)make_smem_layout(l->ring_len, l->head_k_dim, vs_of(config), tc, gk).total;
}

static void *kernel_for(int config, bool kda, int tc)
{
    switch (config) {
    case CFG_K128_F32:
        return rssm_cuda_kernel_k128(0, kda, tc);
    case CFG_K128_BF16:
        return rssm_cuda_kernel_k128(1, kda, tc);
    case CFG_K64_F32:
        return rssm_cuda_kernel_k64(0, kda, tc);
    case CFG_K64_BF16:
        return rssm_cuda_kernel_k64(1, kda, tc);
    case CFG_GEN_F32:
        return rssm_cuda_kernel_gen(0, kda, tc);
    case CFG_GEN_BF16:
        return rssm_cuda_kernel_gen(1, kda, tc);
    case CFG_K128W_F32: /* wide lanes, whole and sliced: prefill's chunks only (tc = RSSM_PF_TC) */
    case CFG_K128W_BF16:
        return rssm_cuda_kernel_k128w(config == CFG_K128W_BF16, kda);
    default:
        return rssm_cuda_kernel_k128s(config == CFG_K128S_BF16, kda);
    }
}

/* ---- launching --------------------------------------------------------------------------- */

/* decode_k128.cu: specialised kernels for K = V = 128 (packed/replay decode T = 1, verify T <= 8) */
int rssm_cuda_decode_k128_ok(const kargs *A);
cudaError_t rssm_cuda_decode_k128_init(int device);
cudaError_t rssm_cuda_decode_k128_launch(kargs A, int batch, cudaStream_t stream);
/* stream_k128.cu: packed decode streamed a row at a time (V-first state) */
int rssm_cuda_stream_ok(const kargs *A);
cudaError_t rssm_cuda_stream_launch(kargs A, int batch, int rows_per_warp, int early, cudaStream_t stream);
/* drain_k128.cu: the planner's drain of small-batch steps (its kernel's shared memory limit) */
cudaError_t rssm_cuda_drain_init(void);
/* replay_pipeline.cu: replay decode (T = 1, K = V = 128) as a persistent pipeline, for large grids */
int rssm_cuda_pipe_ok(const kargs *A);
cudaError_t rssm_cuda_pipe_init(int device);
void rssm_cuda_pipe_trace_write(const char *path); /* diagnostic builds: the last launch's timeline */
void rssm_cuda_k128_trace_write(const char *path); /* and the per-head kernel's last launches */
cudaError_t rssm_cuda_pipe_launch(kargs A, int sm_count, int balance, int producers, cudaStream_t stream);
/* verify_pipeline.cu: verify windows of 3-4 tokens (K = V = 128, V-first state) as a persistent pipeline */
int rssm_cuda_vpipe_ok(const kargs *A);
cudaError_t rssm_cuda_vpipe_init(int device);
cudaError_t rssm_cuda_vpipe_launch(kargs A, int sm_count, cudaStream_t stream);
void rssm_cuda_vpipe_trace_write(const char *path); /* diagnostic builds: the last launch's marks */

static rssm_status launch_step(kargs A, int config, int batch, int tc, cudaStream_t stream, const char *fn)
{
    const rssm_layer *l = &A.l;
    const int VS = vs_of(config);
    const bool kda = l->gate == RSSM_GATE_KDA;
    A.NS = (l->head_v_dim + VS - 1) / VS;
    /* CTAs that share ring data form a cluster (<= 8, the portable size) */
    A.defer_k = 0;
    /* GDN prefill writes no ring data another CTA reads (each CTA stores its own checkpoint
     * rows; the ring bases, which every slice of a head reads, are reset by a small kernel after
     * the step: defer_base), so its sliced lanes need no cluster: without one, a row's 128 CTAs
     * of 4 slices x 32 value heads start 28% sooner on the H200 (1 row x 256 tokens: 154 against
     * 214 us, bench/results/gpu-prefill-nocluster.txt). Whole heads keep the group's cluster
     * (8 x 256 tokens: 361 us with it, 372 us without). */
    A.defer_base = A.mode == MODE_PREFILL && !kda && A.NS > 1;
    if (A.mode == MODE_PACKED || A.defer_base)
        A.cs = 1;
    else if (kda)
        A.cs = A.NS;
    else if (A.group * A.NS <= 8)
        A.cs = A.group * A.NS;
    else
        A.cs = A.NS, A.defer_k = A.mode == MODE_REPLAY || A.mode == MODE_VERIFY;
    if (A.cs > 8) return rssm_fail(RSSM_ERROR_UNSUPPORTED, "%s: %d slices of a head do not fit a cluster", fn, A.NS);
    const size_t smem = smem_bytes(l, config, tc);
    if (smem > RSSM_SMEM_MAX)
        return rssm_fail(RSSM_ERROR_UNSUPPORTED, "%s: %zu bytes of shared memory needed", fn, smem);

    CU(launch_clustered((const void *)kernel_for(config, kda, tc), A, (unsigned)(l->num_v_heads * A.NS),
                        (unsigned)batch, RSSM_NT, smem, stream),
       fn);
    if (A.defer_k) {
        gdn_write_k_kernel<<<dim3((unsigned)l->num_k_heads, (unsigned)batch), RSSM_NT, 0, stream>>>(A);
        CU(cudaGetLastError(), fn);
    }
    if (A.defer_base) {
        gdn_reset_base_kernel<<<dim3(1, (unsigned)batch), RSSM_NT, 0, stream>>>(A);
        CU(cudaGetLastError(), fn);
    }
    if (A.mode == MODE_PREFILL) {
        prefill_ring_clear_kernel<<<dim3((unsigned)l->num_v_heads, (unsigned)batch), RSSM_NT, 0, stream>>>(A);
        CU(cudaGetLastError(), fn);
    }
    return RSSM_OK;
}

/* Prefill's configuration and tokens per chunk: the chunked token loop where its shared
 * memory fits (always for K <= 128). For K = 128, wide lanes: 8 lanes of 16 channels per state
 * row, so that a row's products reduce in fewer shuffle levels per FMA (the fewest instructions
 * per state element), 4 rows per thread and a whole head per CTA; or the same lanes sliced, 1
 * row per thread and 32 rows per CTA, four times the CTAs, where the sliced grid has at most one
 * CTA per SM (1 row at 32 value heads: whole heads would leave most SMs idle). A row's sums run
 * in the same order either way, so the choice changes no bits: a row's outputs and state do not depend on
 * the rows that share its call or on how a tensor-parallel rank splits the heads. H200, GDN
 * (bench/results/gpu-prefill-sliced.txt). params.cuda_prefill picks one for comparisons: 1 narrow
 * (the one-token loop's bits), 2 wide, 3 sliced wide. */
static int prefill_config(const cuda_impl *im, const rssm_layer *l, int batch, int *tc)
{
    const int config = config_of(l);
    *tc = 1;
    if (im->pf_mode == 0 || smem_bytes(l, config, RSSM_PF_TC) > RSSM_SMEM_MAX) return config;
    *tc = RSSM_PF_TC;
    const int bf = config == CFG_K128_BF16;
    const int wide = bf ? CFG_K128W_BF16 : CFG_K128W_F32, sliced = bf ? CFG_K128S_BF16 : CFG_K128S_F32;
    /* (where the whole-head CTA's shared memory does not fit, every launch of the layer takes
     * the narrow lanes: the sliced CTA needs less, but its bits are the wide lanes') */
    if (l->head_k_dim != 128 || im->pf_mode == 1 || smem_bytes(l, wide, RSSM_PF_TC) > RSSM_SMEM_MAX) return config;
    if (im->pf_mode == 2 || im->pf_mode == 3) return im->pf_mode == 2 ? wide : sliced;
    const int64_t sliced_ctas = (int64_t)batch * l->num_v_heads * ((l->head_v_dim + vs_of(sliced) - 1) / vs_of(sliced));
    return sliced_ctas > (int64_t)im->sm_count ? wide : sliced;
}

/* Whether replay or packed decode step A of `batch` rows runs on the persistent pipeline by the
 * launch rules (launch_rules.h: from rssm_pipe_from's grids, and batches of one bitmap word from
 * rssm_pipe_word_from's, below rssm_pipe_until's on devices with slow memory) */
static bool pipe_by_rule(const kargs &A, int batch, const cuda_impl *im)
{
    const int packed = A.mode == MODE_PACKED, kda = A.l.gate == RSSM_GATE_KDA;
    const int sbf = A.l.state_dtype == RSSM_DTYPE_BF16, kf = A.l.state_layout == RSSM_LAYOUT_KV;
    const int64_t heads = (int64_t)batch * A.l.num_v_heads, sms = im->sm_count;
    if (heads >= rssm_pipe_until(packed, kda, sbf, kf, sms, im->dram_mbs_per_sm)) return false;
    return heads >= rssm_pipe_from(packed, kda, sbf, kf, sms) ||
           (batch <= RSSM_PIPE_WORD_ROWS && heads >= rssm_pipe_word_from(packed, kda, sbf, kf, sms));
}

static rssm_status cuda_step(rssm_context *ctx, const rssm_params *p, void *stream)
{
    cuda_impl *im = impl_of(ctx);
    CU(cudaSetDevice(im->device), "cuda step");
    kargs A;
    memset(&A, 0, sizeof A);
    A.l = p->layer;
    A.group = p->group;
    A.st = p->state;
    A.dst = p->state;
    A.io = p->io;
    A.err = im->err;
    int tc = 1, config = config_of(&A.l);
    const char *fn = "rssm_decode_packed";
    switch (p->op) {
    case RSSM_OP_DECODE_PACKED:
        A.mode = MODE_PACKED;
        break;
    case RSSM_OP_DECODE_REPLAY:
        A.mode = MODE_REPLAY, fn = "rssm_decode_replay";
        break;
    case RSSM_OP_VERIFY:
        A.mode = MODE_VERIFY, tc = 4, fn = "rssm_verify";
        break;
    case RSSM_OP_PREFILL:
        A.mode = MODE_PREFILL, fn = "rssm_prefill";
        config = prefill_config(im, &A.l, p->io.batch, &tc);
        break;
    }
    /* the fast path is chosen by the same test for packed and replay decode (L = 1 replay
     * stays bit-identical to packed within each choice) */
    /* verify windows of 3-4 tokens: the verify pipeline only where forced (slower than the per-head
     * kernel so far, bench/results/verify-pipe-2026-12-04/) */
    if (im->fast && im->pipe == 1 && rssm_cuda_vpipe_ok(&A)) {
        CU(rssm_cuda_vpipe_launch(A, im->sm_count, (cudaStream_t)stream), fn);
        return RSSM_OK;
    }
    /* replay and packed decode of many heads: the persistent pipeline, by mode, gate, state
     * dtype, layout and grid size (launch_rules.h; not for small-batch steps, io.fold_every: the per-head
     * kernels run those as packed decode) */
    if (im->fast && im->pipe != 0 && !p->io.fold_every && rssm_cuda_pipe_ok(&A) &&
        (im->pipe == 1 || pipe_by_rule(A, p->io.batch, im))) {
        CU(rssm_cuda_pipe_launch(A, im->sm_count, im->pipe_bal, im->pipe_np, (cudaStream_t)stream), fn);
        return RSSM_OK;
    }
    if (im->fast && rssm_cuda_decode_k128_ok(&A)) {
        /* a small-batch step of drained rows (io.fold_every: every row folds, its ring empty)
         * runs packed decode's kernel, launched as packed is */
        const int packed = A.mode == MODE_PACKED || (A.mode == MODE_REPLAY && p->io.fold_every);
        const rssm_lr_step s = {packed                  ? RSSM_LR_PACKED
                                : A.mode == MODE_REPLAY ? RSSM_LR_REPLAY
                                                        : RSSM_LR_VERIFY,
                                A.l.gate == RSSM_GATE_KDA,
                                p->io.tokens,
                                (int64_t)p->io.batch * A.l.num_v_heads,
                                im->sm_count,
                                A.l.state_dtype == RSSM_DTYPE_BF16,
                                rssm_cuda_stream_ok(&A)};
        const rssm_lr_switches forced = {im->spec, im->split, im->prefetch, im->pdl, im->stream_rw, -1};
        const rssm_lr_switches sw = rssm_launch_rules(s, forced);
        A.spec = sw.spec, A.split = sw.split, A.pdl = sw.pdl;
        A.pf_ahead = sw.prefetch * im->sm_count / 2;
        A.smem_per_sm = im->smem_per_sm;
        if (sw.stream > 0) {
            CU(rssm_cuda_stream_launch(A, p->io.batch, sw.stream, sw.early, (cudaStream_t)stream), fn);
            return RSSM_OK;
        }
        CU(rssm_cuda_decode_k128_launch(A, p->io.batch, (cudaStream_t)stream), fn);
        return RSSM_OK;
    }
    return launch_step(A, config, p->io.batch, tc, (cudaStream_t)stream, fn);
}

static rssm_status cuda_materialize(rssm_context *ctx, const rssm_materialize_params *p, void *stream)
{
    cuda_impl *im = impl_of(ctx);
    CU(cudaSetDevice(im->device), "rssm_materialize");
    kargs A;
    memset(&A, 0, sizeof A);
    A.l = p->layer;
    A.mode = MODE_MAT;
    A.group = p->group;
    A.st = p->src;
    A.dst = p->dst;
    A.src_slot = p->src_slot;
    A.dst_slot = p->dst_slot;
    A.io.tokens = 0;
    A.err = im->err;
    return launch_step(A, config_of(&A.l), p->batch, 1, (cudaStream_t)stream, "rssm_materialize");
}

/* cursor moves: one thread per row */
__global__ void cursor_kernel(rssm_cursor_params p, int *err)
{
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= p.batch) return;
    const int s = p.slot[b];
    if (s < -1 || s >= p.num_slots) {
        atomicAdd(err, 1);
        return;
    }
    if (s < 0) return;
    const int forced = p.fold ? p.fold[b] != 0 : 0;
    int32_t c = p.cursor[s];
    switch (p.op) {
    case RSSM_CURSOR_ADVANCE:
        c = rssm_cursor_after_decode(c, p.ring_len, forced);
        break;
    case RSSM_CURSOR_COMMIT: {
        int a = p.accepted[b];
        if (a < 0 || a > p.tokens) atomicAdd(err, 1), a = a < 0 ? 0 : p.tokens;
        c = rssm_cursor_after_commit(c, p.tokens, p.ring_len, forced, a);
        break;
    }
    case RSSM_CURSOR_RESET:
        c = 0;
        break;
    }
    p.cursor[s] = c;
}

static rssm_status cuda_cursor(rssm_context *ctx, const rssm_cursor_params *p, void *stream)
{
    cuda_impl *im = impl_of(ctx);
    CU(cudaSetDevice(im->device), "cursor");
    cursor_kernel<<<(p->batch + 255) / 256, 256, 0, (cudaStream_t)stream>>>(*p, im->err);
    CU(cudaGetLastError(), "cursor kernel");
    return RSSM_OK;
}

static rssm_status cuda_check_layer(const rssm_layer *l)
{
    if (l->state_dtype == RSSM_DTYPE_F64 || l->ring_dtype == RSSM_DTYPE_F64 || l->io_dtype == RSSM_DTYPE_F64)
        return rssm_fail(RSSM_ERROR_BAD_DTYPE, "f64 tensors are for the reference device only");
    const int config = config_of(l);
    if (smem_bytes(l, config, 4) > RSSM_SMEM_MAX || smem_bytes(l, config, 1) > RSSM_SMEM_MAX)
        return rssm_fail(RSSM_ERROR_UNSUPPORTED, "the cuda back end does not support this layer shape");
    return RSSM_OK;
}

static void cuda_info(const rssm_context *ctx, rssm_context_info *out)
{
    const cuda_impl *im = (const cuda_impl *)ctx->impl;
    out->device_ordinal = im->device;
    out->threads = 1;
    out->multiprocessors = im->sm_count;
}

static void cuda_destroy(rssm_context *ctx)
{
    cuda_impl *im = impl_of(ctx);
    if (!im) return;
    cudaSetDevice(im->device);
    if (ctx->params.pipeline_trace_file) {
        rssm_cuda_pipe_trace_write(ctx->params.pipeline_trace_file);
        rssm_cuda_k128_trace_write(ctx->params.pipeline_trace_file);
        rssm_cuda_vpipe_trace_write(ctx->params.pipeline_trace_file);
    }
    if (im->err) cudaFree(im->err);
    if (im->stream) cudaStreamDestroy(im->stream);
    if (im->order) cudaEventDestroy(im->order);
    free(im);
    ctx->impl = NULL;
}

/* ---- context --------------------------------------------------------------------------------- */

static int cuda_available(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n > 0;
}

static cudaError_t raise_smem(void)
{
    for (int config = 0; config <= CFG_GEN_BF16; config++)
        for (int kda = 0; kda <= 1; kda++)
            for (int tc : {1, 4, RSSM_PF_TC}) {
                cudaError_t e = cudaFuncSetAttribute(kernel_for(config, kda, tc),
                                                     cudaFuncAttributeMaxDynamicSharedMemorySize, RSSM_SMEM_MAX);
                if (e != cudaSuccess) return e;
            }
    for (int config = CFG_K128W_F32; config <= CFG_K128S_BF16; config++)
        for (int kda = 0; kda <= 1; kda++) {
            cudaError_t e = cudaFuncSetAttribute(kernel_for(config, kda, RSSM_PF_TC),
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize, RSSM_SMEM_MAX);
            if (e != cudaSuccess) return e;
        }
    return cudaSuccess;
}

/* Peak DRAM bandwidth per multiprocessor in MB/s (double data rate over the bus), or 0 where the
 * device does not report its memory clock: the launch rules then take the H200's choices. */
static int64_t dram_mbs_per_sm(int device, int bus_bits, int sms)
{
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    if (khz <= 0 || bus_bits <= 0 || sms <= 0) return 0;
    return (int64_t)khz * 2 * (bus_bits / 8) / 1000 / sms;
}

static rssm_status cuda_init(rssm_context *ctx, const rssm_context_params *params)
{
    const int device = params->device_ordinal;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        cudaGetLastError();
        return rssm_fail(RSSM_ERROR_UNSUPPORTED, "no CUDA device: %s",
                         e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    }
    if (device >= n) return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "CUDA device %d does not exist (%d found)", device, n);
    CU(cudaSetDevice(device), "cudaSetDevice");
    cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    if (prop.major < 9)
        return rssm_fail(RSSM_ERROR_UNSUPPORTED, "CUDA device %d is sm_%d%d; this back end needs sm_90", device,
                         prop.major, prop.minor);
    cuda_impl *im = (cuda_impl *)calloc(1, sizeof *im);
    if (!im) return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "rssm_cuda_init: out of host memory");
    im->device = device;
    im->sm_count = prop.multiProcessorCount;
    im->smem_per_sm = (int)prop.sharedMemPerMultiprocessor;
    im->dram_mbs_per_sm = dram_mbs_per_sm(device, prop.memoryBusWidth, prop.multiProcessorCount);
    /* the tuning switches of rssm_context_params (checked by rssm_context_create) */
    im->fast = params->cuda_fast;
    im->split = params->cuda_split;
    im->prefetch = params->cuda_prefetch;
    im->spec = params->cuda_ring_read;
    im->pipe = params->cuda_pipeline;
    im->pipe_bal = params->cuda_pipeline_balance;
    im->pipe_np = params->cuda_pipeline_producers;
    im->pf_mode = params->cuda_prefill;
    im->pdl = params->cuda_pdl;
    im->stream_rw = params->cuda_stream;
    ctx->impl = im;
    if ((e = cudaStreamCreateWithFlags(&im->stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaEventCreateWithFlags(&im->order, cudaEventDisableTiming)) != cudaSuccess ||
        (e = cudaMalloc((void **)&im->err, sizeof(int))) != cudaSuccess ||
        (e = cudaMemset(im->err, 0, sizeof(int))) != cudaSuccess || (e = raise_smem()) != cudaSuccess ||
        (im->fast && (e = rssm_cuda_decode_k128_init(device)) != cudaSuccess) ||
        (im->fast && (e = rssm_cuda_drain_init()) != cudaSuccess) ||
        (im->fast && (e = rssm_cuda_pipe_init(device)) != cudaSuccess) ||
        (im->fast && (e = rssm_cuda_vpipe_init(device)) != cudaSuccess) ||
        (e = cudaDeviceSynchronize()) != cudaSuccess) {
        cuda_destroy(ctx);
        return cuda_fail(e, "rssm_cuda_init");
    }
    return RSSM_OK;
}

static rssm_status cuda_check_errors(rssm_context *ctx)
{
    cuda_impl *im = impl_of(ctx);
    CU(cudaSetDevice(im->device), "check errors");
    CU(cudaDeviceSynchronize(), "check errors");
    int n = 0;
    CU(cudaMemcpy(&n, im->err, sizeof n, cudaMemcpyDeviceToHost), "check errors");
    CU(cudaMemset(im->err, 0, sizeof n), "check errors");
    CU(cudaDeviceSynchronize(), "check errors");
    if (n)
        return rssm_fail(RSSM_ERROR_BAD_SLOT,
                         "%d row(s) had a slot, cursor, accepted count or cu_seqlens range out of range", n);
    return RSSM_OK;
}

/* ---- memory and streams -------------------------------------------------------------------- */

static rssm_status cuda_alloc(rssm_context *ctx, size_t bytes, void **out)
{
    CU(cudaSetDevice(impl_of(ctx)->device), "cudaSetDevice");
    cudaError_t e = cudaMalloc(out, bytes ? bytes : 16);
    if (e != cudaSuccess) {
        *out = NULL;
        cudaGetLastError();
        return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "cudaMalloc of %zu bytes: %s", bytes, cudaGetErrorString(e));
    }
    /* handed out zeroed, as host memory is */
    cudaStream_t st = impl_of(ctx)->stream;
    if ((e = cudaMemsetAsync(*out, 0, bytes ? bytes : 16, st)) != cudaSuccess ||
        (e = cudaStreamSynchronize(st)) != cudaSuccess) {
        cudaFree(*out);
        *out = NULL;
        return cuda_fail(e, "zeroing a new allocation");
    }
    return RSSM_OK;
}

static void cuda_free(rssm_context *ctx, void *ptr)
{
    cudaSetDevice(impl_of(ctx)->device);
    cudaFree(ptr);
}

static rssm_status cuda_memset(rssm_context *ctx, void *dst, int byte, size_t bytes, int sync)
{
    cuda_impl *im = impl_of(ctx);
    CU(cudaSetDevice(im->device), "memset");
    CU(cudaMemsetAsync(dst, byte, bytes, im->stream), "memset");
    if (sync) CU(cudaStreamSynchronize(im->stream), "memset");
    return RSSM_OK;
}

static rssm_status cuda_memcpy(rssm_context *ctx, void *dst, const void *src, size_t bytes, rssm_copy_kind kind,
                               int sync)
{
    cuda_impl *im = impl_of(ctx);
    const cudaMemcpyKind k = kind == RSSM_COPY_HOST_TO_DEVICE   ? cudaMemcpyHostToDevice
                             : kind == RSSM_COPY_DEVICE_TO_HOST ? cudaMemcpyDeviceToHost
                                                                : cudaMemcpyDeviceToDevice;
    CU(cudaSetDevice(im->device), "memcpy");
    CU(cudaMemcpyAsync(dst, src, bytes, k, im->stream), "memcpy");
    if (sync) CU(cudaStreamSynchronize(im->stream), "memcpy");
    return RSSM_OK;
}

static rssm_status cuda_copy2d(rssm_context *ctx, void *dst, size_t dpitch, const void *src, size_t spitch,
                               size_t width, size_t rows)
{
    cuda_impl *im = impl_of(ctx);
    CU(cudaSetDevice(im->device), "copy2d");
    CU(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDeviceToDevice, im->stream), "copy2d");
    return RSSM_OK;
}

static rssm_status cuda_sync(rssm_context *ctx)
{
    cuda_impl *im = impl_of(ctx);
    CU(cudaSetDevice(im->device), "synchronize");
    CU(cudaStreamSynchronize(im->stream), "synchronize");
    CU(cudaGetLastError(), "synchronize");
    return RSSM_OK;
}

static void *cuda_stream(rssm_context *ctx) { return (void *)impl_of(ctx)->stream; }

static rssm_status cuda_stream_order(rssm_context *ctx, void *stream, int ctx_waits)
{
    cuda_impl *im = impl_of(ctx);
    const cudaStream_t other = (cudaStream_t)stream;
    if (other == im->stream) return RSSM_OK;
    CU(cudaSetDevice(im->device), "stream order");
    CU(cudaEventRecord(im->order, ctx_waits ? other : im->stream), "stream order: cudaEventRecord");
    CU(cudaStreamWaitEvent(ctx_waits ? im->stream : other, im->order, 0), "stream order: cudaStreamWaitEvent");
    return RSSM_OK;
}

/* the planner's kernels (plan_kernels.cu, drain_k128.cu) */
rssm_status rssm_cuda_plan_fold(rssm_context *ctx, const rssm_plan_params *p, void *stream);
rssm_status rssm_cuda_plan_seq(rssm_context *ctx, const rssm_plan_params *p, void *stream);
int rssm_cuda_drain_layer_ok(const rssm_layer *l);
cudaError_t rssm_cuda_drain_launch(const rssm_plan_params *p, int *err, cudaStream_t stream);

/* the drain runs where the fast kernels run the small steps (decode_k128.cu) */
static int cuda_drain_ok(rssm_context *ctx, const rssm_layer *layer)
{
    return impl_of(ctx)->fast && rssm_cuda_drain_layer_ok(layer);
}

static rssm_status cuda_plan_drain(rssm_context *ctx, const rssm_plan_params *p, void *stream)
{
    cuda_impl *im = impl_of(ctx);
    CU(cudaSetDevice(im->device), "rssm_plan_begin (drain)");
    CU(rssm_cuda_drain_launch(p, im->err, (cudaStream_t)stream), "rssm_plan_begin (drain kernel)");
    return RSSM_OK;
}

/* in the order of rssm_backend's fields */
extern "C" const rssm_backend rssm_cuda_backend = {
    "cuda",
    0, /* host_memory: slots and cursors are device memory, checked by the kernels */
    cuda_available,
    cuda_init,
    cuda_destroy,
    cuda_info,
    cuda_check_layer,
    cuda_step,
    cuda_materialize,
    cuda_cursor,
    rssm_cuda_plan_fold,
    rssm_cuda_plan_seq,
    cuda_drain_ok,
    cuda_plan_drain,
    cuda_check_errors,
    cuda_alloc,
    cuda_free,
    cuda_memset,
    cuda_memcpy,
    cuda_copy2d,
    cuda_sync,
    cuda_stream_order,
    cuda_stream,
    NULL, /* parallel_for: host work runs on the calling thread */
};
