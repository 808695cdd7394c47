/*
 * bytemodel.h — the byte model of docs/design.md section 6: how many bytes of DRAM (or HBM)
 * traffic one step of each decode path must move, per row (one sequence, all heads of one
 * layer). Every benchmark reports achieved bandwidth as these bytes over the measured time,
 * never as bytes counted from what a kernel happens to do.
 *
 * Notation (all per row): H key heads, HV value heads, group = HV / H, K and V head dims,
 * L ring length, s / r / e = bytes of a state / ring / io element, gk = 1 (GDN) or K (KDA),
 * h = live ring entries before the step. bytemodel.c states each formula.
 */
#ifndef RSSM_BYTEMODEL_H
#define RSSM_BYTEMODEL_H

#include "replayssm.h"

/* Inputs and outputs of one token: q, k, v, a, b read and o written (io dtype). */
double rssm_bm_io_token(const rssm_layer *l);

/* One ring entry (u, k, G) as written by one step. */
double rssm_bm_entry(const rssm_layer *l);

/* Packed decode, one token: read S, write S, plus the token's io. */
double rssm_bm_packed_token(const rssm_layer *l);

/* Replay decode step with h live entries before it; `fold` = 1 on the step that folds
 * (writes the checkpoint instead of the new entry). Includes the token's io. */
double rssm_bm_replay_step(const rssm_layer *l, int h, int fold);

/* Replay decode averaged over a full L-step cycle (h = 0 .. L-1, the last step folds). */
double rssm_bm_replay_cycle(const rssm_layer *l);

/* Replay verify of T tokens with h committed entries; `start_fold` = 1 when the committed
 * entries are folded into the checkpoint first (h + T > L). Includes the T tokens' io. */
double rssm_bm_verify_replay(const rssm_layer *l, int h, int T, int start_fold);

/* Packed verify baseline: T packed steps, each reading the previous state and writing a
 * new one (T intermediate states kept for rollback). Includes the T tokens' io. */
double rssm_bm_verify_packed(const rssm_layer *l, int T);

#endif /* RSSM_BYTEMODEL_H */
