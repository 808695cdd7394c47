/*
 * runtime_check.h — the runtime's (pool, planner, prefix cache, export/import) checks on one
 * device: `replayssm check --suite runtime` (tools/check.c) and the test programs in
 * tests/runtime/ run them.
 */
#ifndef RSSM_RUNTIME_CHECK_H
#define RSSM_RUNTIME_CHECK_H

#include "replayssm_runtime.h"

/* One line per case ("ok   name" / "FAIL name: why"), counted. */
typedef struct rt_counts {
    int passed, failed;
} rt_counts;
void rt_case(rt_counts *c, int ok, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The suites; each adds its cases to c. */
void rt_suite_pool(rssm_context *ctx, rt_counts *c);
void rt_suite_plan(rssm_context *ctx, rt_counts *c);
void rt_suite_export(rssm_context *ctx, rt_counts *c);
/* A request hitting a cached prefix continues bit-identically to the same request run cold
 * (decode, or speculative verify when `verify`). */
void rt_suite_prefix(rssm_context *ctx, rssm_gate gate, int verify, rt_counts *c);
void rt_suite_bad_input(rssm_context *ctx, rt_counts *c);

/* Every suite on a context of dev with params: one line per case, then "N passed, N failed".
 * Returns 0 when every case passed, 1 on any failure (or no context), RH_EXIT_SKIP (77) when
 * nothing ran because CUDA is absent. */
int rt_check_run(rssm_device dev, const rssm_context_params *params);

/* The small two-layer model every suite uses (gate selectable). */
void rt_layers(rssm_gate gate, rssm_layer layers[2]);

#endif /* RSSM_RUNTIME_CHECK_H */
