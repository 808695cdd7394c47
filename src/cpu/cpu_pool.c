/*
 * cpu_pool.c — the CPU back end's persistent thread pool, per-thread scratch arenas and
 * rssm_cpu_parallel_for (also the public rssm_parallel_for of CPU contexts, for tools' host work).
 *
 * A job [0, n) is split into `threads` contiguous static chunks; the calling thread runs
 * chunk 0 and workers 1.. run the others. Workers sleep on a condition variable between
 * jobs (a job is a whole decode step: milliseconds, so wake-up latency does not matter).
 * A parallel_for issued from inside a task, or while the pool runs another caller's job, runs
 * inline on its thread.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "cpu/cpu.h"
#include "cpu/cpu_internal.h"

struct cpu_pool {
    int threads;
    pthread_t *tid; /* [threads], 0 unused (the caller) */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    uint64_t generation; /* bumped for every job */
    int pending;         /* workers still running the current job */
    int quit;
    /* the current job */
    int64_t n;
    rssm_task_fn fn;
    void *arg;
    pthread_mutex_t call_mu; /* one job at a time per pool */
};

static _Thread_local int in_task;

typedef struct worker_arg {
    cpu_pool *pool;
    int index;
} worker_arg;

static void run_chunk(cpu_pool *pl, int t)
{
    const int64_t b = pl->n * t / pl->threads, e = pl->n * (t + 1) / pl->threads;
    if (b < e) pl->fn(pl->arg, b, e, t);
}

static void *worker_main(void *varg)
{
    worker_arg wa = *(worker_arg *)varg;
    free(varg);
    cpu_pool *pl = wa.pool;
    uint64_t seen = 0;
    in_task = 1;
    pthread_mutex_lock(&pl->mu);
    for (;;) {
        while (!pl->quit && pl->generation == seen)
            pthread_cond_wait(&pl->wake, &pl->mu);
        if (pl->quit) break;
        seen = pl->generation;
        pthread_mutex_unlock(&pl->mu);
        run_chunk(pl, wa.index);
        pthread_mutex_lock(&pl->mu);
        if (--pl->pending == 0) pthread_cond_signal(&pl->done);
    }
    pthread_mutex_unlock(&pl->mu);
    return NULL;
}

static void pool_free(cpu_pool *pl)
{
    if (!pl) return;
    pthread_mutex_lock(&pl->mu);
    pl->quit = 1;
    pthread_cond_broadcast(&pl->wake);
    pthread_mutex_unlock(&pl->mu);
    for (int t = 1; t < pl->threads; t++)
        if (pl->tid[t]) pthread_join(pl->tid[t], NULL);
    pthread_mutex_destroy(&pl->mu);
    pthread_mutex_destroy(&pl->call_mu);
    pthread_cond_destroy(&pl->wake);
    pthread_cond_destroy(&pl->done);
    free(pl->tid);
    free(pl);
}

static cpu_pool *pool_new(int threads)
{
    cpu_pool *pl = calloc(1, sizeof *pl);
    if (!pl) return NULL;
    pl->threads = threads;
    pl->tid = calloc((size_t)threads, sizeof *pl->tid);
    pthread_mutex_init(&pl->mu, NULL);
    pthread_mutex_init(&pl->call_mu, NULL);
    pthread_cond_init(&pl->wake, NULL);
    pthread_cond_init(&pl->done, NULL);
    if (!pl->tid) {
        pool_free(pl);
        return NULL;
    }
    for (int t = 1; t < threads; t++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa) {
            pool_free(pl);
            return NULL;
        }
        wa->pool = pl, wa->index = t;
        if (pthread_create(&pl->tid[t], NULL, worker_main, wa) != 0) {
            free(wa);
            pl->tid[t] = 0;
            pool_free(pl);
            return NULL;
        }
    }
    return pl;
}

/* ---- arenas ------------------------------------------------------------------------------- */

float *rssm_cpu_take(cpu_arena *a, size_t n)
{
    float *p = a->base + a->used;
    a->used += (n + 15) & ~(size_t)15; /* keep 64-byte alignment */
    if (a->used > a->cap) abort();     /* internal invariant: sized for the largest shapes */
    return p;
}

/* ---- context ------------------------------------------------------------------------------ */

static cpu_impl *impl_of(const rssm_context *ctx) { return (cpu_impl *)ctx->impl; }

const cpu_vec *rssm_cpu_vec_of(const rssm_context *ctx)
{
    const cpu_impl *im = impl_of(ctx);
    return im ? im->vec : &rssm_cpu_vec_scalar;
}

static void impl_free(cpu_impl *im)
{
    if (!im) return;
    pool_free(im->pool);
    if (im->arenas)
        for (int t = 0; t < im->threads; t++)
            free(im->arenas[t].base);
    free(im->arenas);
    free(im);
}

void rssm_cpu_destroy(rssm_context *ctx)
{
    if (!ctx) return;
    impl_free(impl_of(ctx));
    ctx->impl = NULL;
}

rssm_status rssm_cpu_init(rssm_context *ctx, const rssm_context_params *params)
{
    int threads = params->threads;
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    cpu_impl *im = calloc(1, sizeof *im);
    if (!im) return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "cpu: out of host memory");
    im->threads = threads;
    im->vec = params->cpu_simd ? rssm_cpu_vec_select() : &rssm_cpu_vec_scalar;
    im->arenas = calloc((size_t)threads, sizeof *im->arenas);
    if (!im->arenas) goto oom;
    for (int t = 0; t < threads; t++) {
        /* pages are touched only as far as the shapes need */
        im->arenas[t].base = aligned_alloc(64, RSSM_CPU_ARENA_FLOATS * sizeof(float));
        im->arenas[t].cap = RSSM_CPU_ARENA_FLOATS;
        if (!im->arenas[t].base) goto oom;
    }
    if (threads > 1 && !(im->pool = pool_new(threads))) goto oom;
    ctx->impl = im;
    return RSSM_OK;
oom:
    impl_free(im);
    return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "cpu: cannot create %d threads and their scratch", threads);
}

/* ---- parallel for ------------------------------------------------------------------------- */

void rssm_cpu_parallel_for(rssm_context *ctx, int64_t n, rssm_task_fn fn, void *arg)
{
    cpu_impl *im = impl_of(ctx);
    if (n <= 0) return;
    if (!im || !im->pool || in_task || n == 1) {
        fn(arg, 0, n, 0);
        return;
    }
    cpu_pool *pl = im->pool;
    /* the pool runs one job at a time; while it runs another caller's (an op beside a tool's
     * rssm_parallel_for whose task waits for that op's context), this one runs inline rather
     * than wait: waiting could close a cycle of locks */
    if (pthread_mutex_trylock(&pl->call_mu) != 0) {
        fn(arg, 0, n, 0);
        return;
    }
    pthread_mutex_lock(&pl->mu);
    pl->n = n, pl->fn = fn, pl->arg = arg;
    pl->pending = pl->threads - 1;
    pl->generation++;
    pthread_cond_broadcast(&pl->wake);
    pthread_mutex_unlock(&pl->mu);
    in_task = 1;
    run_chunk(pl, 0);
    in_task = 0;
    pthread_mutex_lock(&pl->mu);
    while (pl->pending > 0)
        pthread_cond_wait(&pl->done, &pl->mu);
    pthread_mutex_unlock(&pl->mu);
    pthread_mutex_unlock(&pl->call_mu);
}

void rssm_cpu_info(const rssm_context *ctx, rssm_context_info *out) { out->threads = impl_of(ctx)->threads; }
