/*
 * test_runtime.c — the runtime suites (testing/runtime_check.c) on the reference device, and on
 * the CPU device when its back end runs the kernels (skipped with a note while it does not).
 * Usage: test_runtime [reference|cpu|cuda]   (no argument: reference, then cpu if supported)
 */
#include <stdio.h>
#include <string.h>

#include "runtime_check.h"

/* 1 if the device runs a replay decode step (its back end is there). */
static int device_ready(rssm_context *ctx)
{
    rssm_layer ly[2];
    rt_layers(RSSM_GATE_GDN, ly);
    rssm_pool *p = NULL;
    rssm_plan *plan = NULL;
    int ok = rssm_pool_create(ctx, ly, 2, 1, &p) == RSSM_OK;
    int32_t s = -1;
    if (ok) ok = rssm_pool_acquire(p, &s) == RSSM_OK && rssm_pool_copy(p, s, p, s) == RSSM_OK;
    if (ok) ok = rssm_plan_create(p, 1, 0, &plan) == RSSM_OK;
    rssm_plan_free(plan);
    rssm_pool_free(p);
    return ok;
}

static void run(rssm_device dev, const char *name, int required, rt_counts *c)
{
    rssm_context *ctx = NULL;
    rssm_context_params cp = rssm_context_params_default();
    cp.threads = 2;
    if (rssm_context_create(dev, &cp, &ctx) != RSSM_OK || !device_ready(ctx)) {
        printf("skip %s device: %s\n", name, rssm_last_error());
        if (required) rt_case(c, 0, "%s device available", name);
        rssm_context_free(ctx);
        return;
    }
    printf("== %s device\n", name);
    rt_suite_pool(ctx, c);
    rt_suite_plan(ctx, c);
    rt_suite_export(ctx, c);
    for (int g = 0; g < 2; g++)
        for (int v = 0; v < 2; v++)
            rt_suite_prefix(ctx, g ? RSSM_GATE_KDA : RSSM_GATE_GDN, v, c);
    rt_suite_bad_input(ctx, c);
    rssm_context_free(ctx);
}

int main(int argc, char **argv)
{
    rt_counts c = {0, 0};
    if (argc > 1) {
        const rssm_device d = !strcmp(argv[1], "cpu")    ? RSSM_DEVICE_CPU
                              : !strcmp(argv[1], "cuda") ? RSSM_DEVICE_CUDA
                                                         : RSSM_DEVICE_REFERENCE;
        run(d, argv[1], 1, &c);
    } else {
        run(RSSM_DEVICE_REFERENCE, "reference", 1, &c);
        run(RSSM_DEVICE_CPU, "cpu", 0, &c);
    }
    printf("%d passed, %d failed\n", c.passed, c.failed);
    return c.failed ? 1 : 0;
}
