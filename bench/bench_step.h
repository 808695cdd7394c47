/*
 * bench_step.h — `replayssm bench-step` (bench_step.c): one whole decode step of an N-layer
 * model through the runtime, as one CUDA graph against the sum of its parts and against N
 * packed layers. tools/bench_step.c fills the options from its command line.
 */
#ifndef RSSM_BENCH_STEP_H
#define RSSM_BENCH_STEP_H

#include "replayssm.h"

typedef struct bench_step_options {
    rssm_device device;         /* default: cuda when available, else cpu */
    rssm_context_params params; /* the context's tuning switches */
    int kda;                    /* 0: qwen3-next's GDN heads (H=16 HV=32, default); 1: kimi-linear's KDA (H=HV=32) */
    int layers;                 /* linear-attention layers (default 36) */
    int batch;                  /* rows per step (default 64) */
    int ring_len;               /* L (default 16) */
    int reps;                   /* graph replays per timing (default 160) */
    int staggered;              /* 1: row b starts at cursor b mod L (default); 0: all at 0 */
    rssm_dtype state;           /* checkpoint (default f32) */
    rssm_dtype io;              /* q, k, v, a, b, o (default f32) */
    int small_batch;            /* 1: also time the step with every row folded (default) */
} bench_step_options;

bench_step_options bench_step_options_default(void);

/* Times the step and prints the comparison. Returns 0, or 1 when a call failed (printed). */
int bench_step_run(const bench_step_options *o);

#endif /* RSSM_BENCH_STEP_H */
