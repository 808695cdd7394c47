/*
 * cpu.h — the CPU back end's thread pool, shared with the host tools (bandwidth, bench).
 */
#ifndef RSSM_CPU_H
#define RSSM_CPU_H

#include "core/backend.h"

/* fn(arg, begin, end, thread) over [0, n) split into contiguous chunks, one per thread;
 * returns when all are done. Runs inline when the context has one thread. */
typedef void (*rssm_task_fn)(void *arg, int64_t begin, int64_t end, int thread);
void rssm_cpu_parallel_for(rssm_context *ctx, int64_t n, rssm_task_fn fn, void *arg);
int rssm_cpu_threads(const rssm_context *ctx);

#endif /* RSSM_CPU_H */
