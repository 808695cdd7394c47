/*
 * layer.h — the resolved layer every back end receives.
 */
#ifndef RSSM_LAYER_H
#define RSSM_LAYER_H

#include "core/backend.h"

/* The layer validated, with its defaults resolved (scale and fold_threshold never 0) and
 * checked against ctx's back end (ctx NULL: no back-end check). */
rssm_status rssm_layer_resolve(const rssm_context *ctx, const rssm_layer *in, rssm_layer *out);
/* The layer as the state's meaning depends on it: resolved (defaults filled in), and the gate's
 * lower bound 0 when it has none. Two layers whose states mean the same compare equal (memcmp). */
rssm_layer rssm_layer_canonical(const rssm_layer *l);
int rssm_layer_same(const rssm_layer *a, const rssm_layer *b);
/* rssm_state_size of a layer already validated (num_slots >= 1): the one formula of the state's
 * bytes, for the checks of every call and the pool's states. */
void rssm_state_bytes_of(const rssm_layer *l, int32_t num_slots, rssm_state_bytes *out);
/* Entries of one log-gate G: 1 (GDN) or K (KDA). */
int rssm_layer_gk(const rssm_layer *l);

#endif /* RSSM_LAYER_H */
