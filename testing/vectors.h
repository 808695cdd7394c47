/*
 * vectors.h — the golden-vector file (../shared/vectors/fla-reference.txt, format 1; see the
 * README beside it): cases of decode sequences with FLA's expected outputs and final states.
 */
#ifndef RSSM_VECTORS_H
#define RSSM_VECTORS_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm.h"

#define RV_MAX_TENSORS 16

typedef struct rv_tensor {
    char name[32];
    int ndim;
    int64_t dims[8];
    int64_t n;    /* elements */
    double *data; /* row-major, last dim fastest */
} rv_tensor;

typedef struct rv_case {
    char name[64];
    rssm_gate gate;
    int B, T, H, HV, K, V;
    int l2norm;
    double scale;
    int has_lower_bound;
    double lower_bound;
    int ntensors;
    rv_tensor t[RV_MAX_TENSORS];
} rv_case;

typedef struct rv_file {
    int ncases;
    rv_case *cases;
} rv_file;

/* Loads every case of `path`; 0 on success, else -1 with a message in err. */
int rv_load(const char *path, rv_file *out, char *err, size_t errlen);
void rv_free(rv_file *f);
/* The tensor `name` of a case when it holds `n` elements (n < 0: any), else NULL. */
const double *rv_get(const rv_case *c, const char *name, int64_t n);

#endif /* RSSM_VECTORS_H */
