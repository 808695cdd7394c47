/*
 * handoff.h — `replayssm handoff` (handoff.c): prefill/decode disaggregation of replay state.
 * Requests prefilled in one pool are exported (ring or materialised form, or the raw packed
 * state), sent (in-process on the CPU, NCCL on CUDA) and decoded on in another pool, which
 * must continue bit for bit. tools/handoff.c fills the configuration from its command line.
 */
#ifndef RSSM_HANDOFF_H
#define RSSM_HANDOFF_H

#include <stdint.h>

#include "replayssm.h"

typedef struct handoff_config {
    rssm_device device;         /* cpu: in-process transport (default); cuda: NCCL */
    rssm_context_params params; /* the contexts' tuning switches (threads and ordinal set per rank) */
    const char *model;          /* the layer's preset name, one of sim_model_names (default demo) */
    const char *csv;            /* also write the table as CSV (NULL: no) */
    rssm_layer layer;           /* every layer's shape: the preset's, with ring length and dtype */
    int n_layers;               /* linear-attention layers (default 4) */
    int requests;               /* requests handed off (default 8) */
    int prompt;                 /* prompt tokens per request (default 64) */
    int pre;                    /* decode steps before the hand-off, <= ring_len (default 5) */
    int gen;                    /* decode steps after it, compared bit for bit (default 24) */
    int ranks;                  /* cuda: 1 = send to self on one GPU (default), 2 = GPU 0 -> GPU 1 */
    int threads;                /* CPU threads (0 = all cores) */
    uint64_t seed;              /* input seed (default 1) */
} handoff_config;

handoff_config handoff_config_default(void);

/* Runs the hand-offs and prints the table (rank 0). Returns 0 when every continuation was
 * bit-identical, 1 otherwise or when something failed (printed). */
int handoff_run(const handoff_config *c);

#endif /* RSSM_HANDOFF_H */
