/*
 * check.h — the equivalence matrix of a device against the float64 reference, and the golden
 * vectors through every decode path (check.c says what each case runs and its tolerance).
 * `replayssm check` (tools/check.c) fills the options from its command line.
 */
#ifndef RSSM_CHECK_H
#define RSSM_CHECK_H

#include "replayssm.h"

typedef struct check_options {
    rssm_device device;         /* the device under test (default cpu) */
    rssm_context_params params; /* its context's parameters (default rssm_context_params_default) */
    const char *vectors;        /* golden vector file (fla-reference.txt); NULL: none */
    const char *vectors_note;   /* without vectors: why, printed after "golden vectors: none" */
    const char *filter;         /* run only the cases whose name contains it; NULL: all */
    int quick;                  /* the smaller matrix (every axis value still appears) */
    int strict;                 /* cases the device does not support fail instead of skipping */
} check_options;

check_options check_options_default(void);

/* Runs the matrix and the vectors: one line per case on stdout (PASS / FAIL / SKIP, the error
 * against the tolerance), then "N passed, N failed, N skipped". Returns 0 when cases ran and
 * none failed, 1 on any failure, RH_EXIT_SKIP (77) when nothing ran because the device is
 * absent (a CUDA device without --strict) or supports none of the cases, 2 when the filter
 * matches no case. */
int check_run(const check_options *o);

#endif /* RSSM_CHECK_H */
