/*
 * pipe_sync.cuh — what the persistent pipelines (replay_pipeline.cu for one token, verify_pipeline.cu
 * for windows) share: mbarriers, TMA bulk copies, the elected lane and the consumer warps' barrier.
 * A pipeline CTA has PNC consumer warps (warps 0 .. PNC - 1, the per-head kernel's lane layout)
 * and producer warps after them, which never wait on the consumers' barrier.
 */
#ifndef RSSM_PIPE_SYNC_CUH
#define RSSM_PIPE_SYNC_CUH

#include <stdint.h>

namespace rssm_pipe
{

#define PNC 16 /* consumer warps */
#define PK 128 /* K = V */

/* ---- mbarrier and TMA bulk copy (sm_90) ---- */
__device__ __forceinline__ unsigned saddr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t *bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(saddr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(saddr(bar)) : "memory");
}
/* A thread's generic-proxy writes to shared memory, ordered before async-proxy (TMA) accesses that a
 * later mbarrier hand-over lets another thread start on the same bytes (the PTX memory model does
 * not order the two proxies through the mbarrier alone) */
__device__ __forceinline__ void fence_proxy_async_smem()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t *bar, unsigned bytes)
{
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(saddr(bar)), "r"(bytes) : "memory");
}
/* arrives (one of the barrier's expected arrivals) and adds `bytes` of transfers to its phase */
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t *bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(saddr(bar)), "r"(bytes) : "memory");
}
/* waits for the completion of the barrier's phase of parity `parity`. A lost arrival is a bug:
 * after about 2^26 polls the launch fails (trap) instead of hanging the stream. */
__device__ __forceinline__ void mbar_wait(uint64_t *bar, unsigned parity)
{
    for (unsigned n = 0;; n++) {
        unsigned done;
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}\n"
                     : "=r"(done)
                     : "r"(saddr(bar)), "r"(parity)
                     : "memory");
        if (done) return;
        if (n > (1u << 26)) __trap();
    }
}
/* until the phase of parity pa of barrier a or the phase of parity pb of b has completed */
__device__ __forceinline__ void mbar_wait_either(uint64_t *a, unsigned pa, uint64_t *b, unsigned pb)
{
    for (unsigned n = 0;; n++) {
        unsigned done;
        asm volatile("{\n\t.reg .pred p, q;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 q, [%3], %4;\n\tor.pred p, p, q;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}\n"
                     : "=r"(done)
                     : "r"(saddr(a)), "r"(pa), "r"(saddr(b)), "r"(pb)
                     : "memory");
        if (done) return;
        if (n > (1u << 26)) __trap();
    }
}
/* global -> shared copy of `bytes` (multiple of 16, both addresses 16-byte aligned), counted
 * on `bar` */
__device__ __forceinline__ void bulk_copy(void *dst, const void *src, unsigned bytes, uint64_t *bar)
{
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(saddr(dst)),
        "l"(src), "r"(bytes), "r"(saddr(bar))
        : "memory");
}
/* the consumer warps' barrier (the producers never wait on it) */
__device__ __forceinline__ void consumer_sync() { asm volatile("bar.sync 1, %0;\n" ::"n"(PNC * 32) : "memory"); }

/* true on one lane of the warp (elect.sync; every lane calls it) */
__device__ __forceinline__ bool elect_one()
{
    unsigned p;
    asm volatile("{\n\t.reg .pred p;\n\telect.sync _|p, 0xffffffff;\n\tselp.u32 %0, 1, 0, p;\n\t}\n" : "=r"(p));
    return p != 0;
}

} // namespace rssm_pipe

/* host: whether p is 16-byte aligned (TMA copies, and a lane's 4 elements in one access) */
static inline int rssm_aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

#endif /* RSSM_PIPE_SYNC_CUH */
