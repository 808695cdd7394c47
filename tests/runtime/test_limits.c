/*
 * test_limits.c — what the library does at the edges of memory: a pool the machine cannot
 * hold is RSSM_ERROR_OUT_OF_MEMORY at once (no pages touched), and a CPU decode step allocates
 * no host memory once the context has seen a state of that many slots (the argument checks keep
 * their scratch in the context). Allocations are counted by wrapping malloc and friends, which
 * the library's calls reach through the dynamic linker. Ends with "N passed, N failed".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "replayssm_runtime.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static long allocations;
void *malloc(size_t n) { return allocations++, __libc_malloc(n); }
void *calloc(size_t n, size_t m) { return allocations++, __libc_calloc(n, m); }
void *realloc(void *p, size_t n) { return allocations++, __libc_realloc(p, n); }
void *aligned_alloc(size_t a, size_t n) { return allocations++, __libc_memalign(a, n); }

static int passed, failed;

static void check(int ok, const char *what)
{
    printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what, ok ? "" : ": ", ok ? "" : rssm_last_error());
    ok ? passed++ : failed++;
}

static void huge_pool(rssm_context *ctx)
{
    rssm_layer l = rssm_layer_default(RSSM_GATE_GDN, 16, 32, 128, 128, 16);
    size_t bytes = 0;
    rssm_pool *p = NULL;
    const int32_t slots = 1 << 24; /* 2^24 slots of Qwen3-Next's 2.4 MB: 40 TB */
    const clock_t t0 = clock();
    const rssm_status st = rssm_pool_create(ctx, &l, 1, slots, &p);
    const double s = (double)(clock() - t0) / CLOCKS_PER_SEC;
    rssm_pool_bytes(&l, 1, slots, &bytes);
    check(st == RSSM_ERROR_OUT_OF_MEMORY && !p && s < 1.0, "a 40 TB pool is RSSM_ERROR_OUT_OF_MEMORY at once");
    rssm_pool_free(p);
}

/* Resident set of this process, bytes (0 when /proc cannot tell). */
static size_t resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
        fclose(f);
    }
    return (size_t)rss * 4096;
}

/* A pool of half the machine: created without touching its pages (or refused where the system
 * does not overcommit), never the process killed for zeroing it all. */
static void half_machine_pool(rssm_context *ctx)
{
    rssm_layer l = rssm_layer_default(RSSM_GATE_GDN, 16, 32, 128, 128, 16);
    size_t one = 0;
    rssm_pool_bytes(&l, 1, 1, &one);
    const double machine = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    const int32_t slots = (int32_t)(machine / 2 / (double)one);
    rssm_pool *p = NULL;
    const size_t rss0 = resident_bytes();
    const clock_t t0 = clock();
    const rssm_status st = rssm_pool_create(ctx, &l, 1, slots, &p);
    const double s = (double)(clock() - t0) / CLOCKS_PER_SEC;
    const size_t grown = resident_bytes() - rss0;
    int32_t slot = -1;
    const int used = st == RSSM_OK && rssm_pool_acquire(p, &slot) == RSSM_OK && rssm_pool_release(p, slot) == RSSM_OK;
    printf("     (%d slots, %.1f GB: %s in %.3f s, resident +%.1f MB)\n", slots, slots * (double)one / 1e9,
           rssm_status_name(st), s, grown / 1e6);
    check((used && grown < (size_t)256 << 20 && s < 1.0) || st == RSSM_ERROR_OUT_OF_MEMORY,
          "a pool of half the machine commits no pages until its slots are used");
    rssm_pool_free(p);
}

/* Replay decode and the cursor move, `steps` times, on a state of `slots` slots. */
static int decode_steps(rssm_context *ctx, int32_t slots, int steps)
{
    enum { B = 4, H = 2, HV = 4, K = 32, V = 32, L = 4 };
    rssm_layer l = rssm_layer_default(RSSM_GATE_GDN, H, HV, K, V, L);
    rh_state hs; /* zeroed: empty rings */
    if (rh_state_create(ctx, &l, slots, &hs) != RH_OK) return 0;
    void *in_ = NULL;
    int ok = rssm_mem_alloc(ctx, 16384, &in_) == RSSM_OK;
    float *in = in_; /* q, k, v, a, b, A_log, dt_bias, o: small, zero but for the gates */
    float *q = in, *k = q + B * H * K, *v = k + B * H * K, *a = v + B * HV * V, *b = a + B * HV;
    float *A_log = b + B * HV, *dt = A_log + HV, *o = dt + HV;
    int32_t slot[B] = {0, slots - 1, -1, slots / 2};
    rssm_state st = hs.st;
    rssm_step_io io = {.batch = B,
                       .tokens = 1,
                       .q = q,
                       .k = k,
                       .v = v,
                       .a = a,
                       .b = b,
                       .A_log = A_log,
                       .dt_bias = dt,
                       .o = o,
                       .slot = slot};
    for (int s = 0; s < steps && ok; s++)
        ok = rssm_decode_replay(ctx, &l, &st, &io, NULL) == RSSM_OK &&
             rssm_advance(ctx, &l, &st, B, slot, NULL, NULL) == RSSM_OK;
    rssm_mem_free(ctx, in_);
    rh_state_free(ctx, &hs);
    return ok;
}

int main(void)
{
    rssm_context *ctx = NULL;
    rssm_context_params p = rssm_context_params_default();
    p.threads = 1;
    if (rssm_context_create(RSSM_DEVICE_CPU, &p, &ctx) != RSSM_OK) {
        printf("FAIL cpu context: %s\n0 passed, 1 failed\n", rssm_last_error());
        return 1;
    }
    huge_pool(ctx);
    half_machine_pool(ctx);
    decode_steps(ctx, 100000, 1); /* the context's check scratch grows to 100,000 slots */
    /* a state of fewer slots: the scratch is big enough, and a step allocates nothing */
    enum { SLOTS = 50000 };
    const long buffers_before = allocations;
    int ok = decode_steps(ctx, SLOTS, 0); /* the buffers alone */
    const long per_setup = allocations - buffers_before;
    const long steps_before = allocations;
    ok = ok && decode_steps(ctx, SLOTS, 40);
    const long during = allocations - steps_before - per_setup;
    printf("     (%ld allocations for the buffers, %ld during 40 steps)\n", per_setup, during);
    check(ok && during == 0, "40 CPU decode steps and cursor moves allocate no host memory");
    rssm_context_free(ctx);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
