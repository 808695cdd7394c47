/*
 * cpu.h — the CPU back end's context: its thread pool and scratch (cpu_pool.c).
 */
#ifndef RSSM_CPU_H
#define RSSM_CPU_H

#include "core/backend.h"

rssm_status rssm_cpu_init(rssm_context *ctx, const rssm_context_params *params);
void rssm_cpu_destroy(rssm_context *ctx);
void rssm_cpu_info(const rssm_context *ctx, rssm_context_info *out);
/* fn(arg, begin, end, thread) over [0, n) split into contiguous chunks, one per thread;
 * returns when all are done. Runs inline when the context has one thread or when called
 * from inside a task. */
void rssm_cpu_parallel_for(rssm_context *ctx, int64_t n, rssm_task_fn fn, void *arg);

#endif /* RSSM_CPU_H */
