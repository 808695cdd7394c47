/*
 * bench.h — `replayssm bench` (bench.c): packed vs ReplaySSM decode (or speculative verify) of
 * one layer, timed on one device, with the byte model's traffic and the achieved bandwidth set
 * against the copy bandwidth measured in the same run. tools/bench.c fills the options from
 * its command line; bench/README.md explains every column.
 */
#ifndef RSSM_BENCH_H
#define RSSM_BENCH_H

#include "replayssm.h"

#define BENCH_MAX_LIST 32

/* Initial ring phases of the rows: row i at cursor i mod L, all at 0, or both in turn. */
enum { BENCH_PHASE_STAGGERED = 0, BENCH_PHASE_INPHASE = 1, BENCH_PHASE_BOTH = 2 };

typedef struct bench_options {
    rssm_device device;                  /* default: cuda when available, else cpu */
    rssm_context_params params;          /* the context's tuning switches (threads: below) */
    int threads;                         /* CPU threads (0 = all cores) */
    const char *model;                   /* the shape preset's name, one of bench_models (default qwen3-next) */
    rssm_layer layer;                    /* shape and dtypes (default the preset's, bf16 io); ring_len is per run */
    int batch[BENCH_MAX_LIST], nbatch;   /* rows per step (default 1, 8, 64) */
    int ring_len[BENCH_MAX_LIST], nring; /* ring lengths L (default 16) */
    const char *csv;                     /* also write the rows as CSV (NULL: no) */
    int verify;                          /* T tokens per verify step; 0 = decode */
    int phase;                           /* BENCH_PHASE_* */
    int random_slots;                    /* 1: rows name the working set's slots in a random order */
    double ws_mib;                       /* MiB of checkpoints the slots rotate over (default 1024) */
    double min_time;                     /* seconds per timed measurement (default 0.3) */
    int repeat;                          /* best of this many measurements (default 3) */
    double bw_mib;                       /* MiB per bandwidth array; 0 = by device */
    int argc;                            /* the command line, printed in the header: argv[0] = "bench" */
    char *const *argv;
} bench_options;

/* The shape presets (NULL-terminated): qwen3-next GDN H=16 HV=32, qwen3.5-122b GDN H=16
 * HV=64, kimi-linear KDA H=HV=32; K = V = 128. */
extern const char *const bench_models[];

bench_options bench_options_default(void);
/* The layer of preset `model` (f32 state and ring, bf16 io, ring_len 16); -1 when unknown. */
int bench_model_layer(const char *model, rssm_layer *out);

/* Times every (ring length, batch, phase) of o and prints the header and one row each (and
 * the CSV). Returns 0, or 1 when a configuration failed (no numbers printed for it). */
int bench_run(const bench_options *o);

#endif /* RSSM_BENCH_H */
