/*
 * plan_set.c — host time of rssm_plan_set, the call an engine makes once per step to hand the
 * planner its rows (slot and sequence length per row), on a CPU context at batch sizes up to
 * 4096. Every row holds a distinct slot, which is the case the duplicate check must scan in full.
 * Built as build/bench_plan_set; prints one table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "replayssm_runtime.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void)
{
    rssm_context *ctx = NULL;
    if (rssm_context_create(RSSM_DEVICE_CPU, NULL, &ctx) != RSSM_OK) return printf("%s\n", rssm_last_error()), 1;
    const rssm_layer l = rssm_layer_default(RSSM_GATE_GDN, 1, 1, 16, 16, 4); /* small: only the slots matter */
    printf("%8s %14s\n", "rows", "plan_set us");
    for (int n = 64; n <= 4096; n *= 4) {
        rssm_pool *pool = NULL;
        rssm_plan *plan = NULL;
        int32_t *slot = malloc(sizeof(int32_t) * n), *seq = calloc(n, sizeof(int32_t));
        if (!slot || !seq || rssm_pool_create(ctx, &l, 1, n, &pool) != RSSM_OK ||
            rssm_plan_create(pool, n, 16, &plan) != RSSM_OK)
            return printf("setup at %d rows: %s\n", n, rssm_last_error()), 1;
        for (int i = 0; i < n; i++)
            if (rssm_pool_acquire(pool, &slot[i]) != RSSM_OK) return printf("%s\n", rssm_last_error()), 1;
        const int reps = 200;
        const double t0 = now_s();
        for (int r = 0; r < reps; r++)
            if (rssm_plan_set(plan, n, slot, seq) != RSSM_OK) return printf("%s\n", rssm_last_error()), 1;
        printf("%8d %14.1f\n", n, (now_s() - t0) / reps * 1e6);
        rssm_plan_free(plan);
        rssm_pool_free(pool);
        free(slot), free(seq);
    }
    rssm_context_free(ctx);
    return 0;
}
