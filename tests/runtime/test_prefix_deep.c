/*
 * test_prefix_deep.c — a prefix tree 100,000 snapshots deep, built, matched, counted,
 * validated, evicted and freed on a thread with a 256 KiB stack: no walk of the tree may
 * recurse by depth. Ends with "N passed, N failed".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "replayssm_runtime.h"

enum { DEPTH = 100000 };

typedef struct result {
    int passed, failed;
} result;

static void check(result *r, int ok, const char *what)
{
    printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what, ok ? "" : ": ", ok ? "" : rssm_last_error());
    ok ? r->passed++ : r->failed++;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *deep_chain(void *arg)
{
    result *r = arg;
    rssm_context *ctx = NULL;
    rssm_pool *pool = NULL;
    rssm_prefix_cache *cache = NULL;
    int32_t *tokens = malloc(sizeof(int32_t) * DEPTH);
    rssm_layer l = rssm_layer_default(RSSM_GATE_GDN, 1, 1, 1, 1, 1);
    int32_t src = -1;
    int ok = tokens && rssm_context_create(RSSM_DEVICE_REFERENCE, NULL, &ctx) == RSSM_OK &&
             rssm_pool_create(ctx, &l, 1, DEPTH + 1, &pool) == RSSM_OK && rssm_pool_acquire(pool, &src) == RSSM_OK &&
             rssm_prefix_cache_create(pool, 0, DEPTH, &cache) == RSSM_OK;
    check(r, ok, "a pool of 100,001 slots and a cache");
    if (!ok) goto out;
    for (int32_t i = 0; i < DEPTH; i++)
        tokens[i] = (i * 7919) % 50021;
    /* shortest first, as an engine snapshots one growing sequence: each insert extends the last */
    double t0 = now_s();
    for (int32_t n = 1; n <= DEPTH / 2 && ok; n++)
        ok = rssm_prefix_cache_insert(cache, tokens, n, pool, src, RSSM_SNAPSHOT_CHECKPOINT) == RSSM_OK;
    double t1 = now_s();
    check(r, ok, "50,000 nested snapshots inserted shortest first");
    printf("     (%.2f s)\n", t1 - t0);
    /* then the rest longest first: each one splits the one edge below the first half */
    t0 = now_s();
    for (int32_t n = DEPTH; n > DEPTH / 2 && ok; n--)
        ok = rssm_prefix_cache_insert(cache, tokens, n, pool, src, RSSM_SNAPSHOT_CHECKPOINT) == RSSM_OK;
    t1 = now_s();
    check(r, ok, "50,000 more nested snapshots inserted longest first");
    printf("     (%.2f s)\n", t1 - t0);
    rssm_prefix_cache_stats s;
    ok = rssm_prefix_cache_get_stats(cache, &s) == RSSM_OK && s.nodes == DEPTH && s.snapshots == DEPTH;
    check(r, ok, "stats count every node of the chain");
    check(r, rssm_prefix_cache_validate(cache) == RSSM_OK, "the chain validates");
    int32_t matched = 0;
    uint64_t lock = 0;
    ok = rssm_prefix_cache_match(cache, tokens, DEPTH, pool, src, &matched, &lock) == RSSM_OK && matched == DEPTH &&
         rssm_prefix_cache_get_stats(cache, &s) == RSSM_OK && s.locked == 1 &&
         rssm_prefix_cache_unlock(cache, lock) == RSSM_OK;
    check(r, ok, "the deepest snapshot matches, locks and unlocks");
    int32_t evicted = 0;
    ok = rssm_prefix_cache_evict(cache, DEPTH / 2, &evicted) == RSSM_OK && evicted == DEPTH / 2 &&
         rssm_prefix_cache_validate(cache) == RSSM_OK;
    check(r, ok, "half of the chain evicted; the rest validates");
out:
    rssm_prefix_cache_free(cache); /* frees the rest of the chain */
    if (pool && cache) check(r, rssm_pool_num_free(pool) == DEPTH, "freeing the cache releases every snapshot");
    rssm_pool_free(pool);
    rssm_context_free(ctx);
    free(tokens);
    return NULL;
}

int main(void)
{
    result r = {0, 0};
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    if (pthread_create(&t, &attr, deep_chain, &r) != 0) {
        printf("FAIL cannot start a thread with a 256 KiB stack\n0 passed, 1 failed\n");
        return 1;
    }
    pthread_join(t, NULL);
    printf("%d passed, %d failed\n", r.passed, r.failed);
    return r.failed ? 1 : 0;
}
