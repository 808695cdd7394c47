/*
 * bytemodel.c — the byte model (docs/design.md section 6), per row and per layer.
 *
 * The model counts the traffic a decode path cannot avoid if every tensor is read from and
 * written to memory once per step, and nothing of the per-row state stays in cache between
 * steps (the bench rotates slots over a working set much larger than the last-level cache).
 * What is counted, with s / r / e the bytes of a state / ring / io element:
 *
 *   io of one token (both paths):
 *     read  q, k   2 * H*K*e
 *           v      HV*V*e
 *           a      HV*gk*e       (raw gate input; gk = 1 for GDN, K for KDA)
 *           b      HV*e
 *     write o      HV*V*e
 *   A_log and dt_bias are per-layer constants (cache resident) and are not counted; neither
 *   is per-row metadata (slot index, cursor, ring_base: at most 4*(2 + HV) bytes a row).
 *
 *   packed decode, per token:  2 * HV*V*K*s + io          (read S, write S)
 *
 *   replay decode, step with h live entries before it:
 *     read  S0                 HV*V*K*s
 *           u of h entries     HV*h*V*r
 *           k of h entries     GDN: H*h*K*r   (= HV*h*K*r / group: one key head serves its
 *                                              group, read once)
 *                              KDA: HV*h*K*r  (pre-decayed keys, per value head)
 *           G                  GDN: HV*h*4    (the h scalars G_i, f32)
 *                              KDA: HV*K*4 when h > 0, else 0: with pre-decayed keys only the
 *                                   running G of the last entry (position h-1) is read;
 *                                   after a fold G is 0 and nothing is read.
 *     write, not folding: the new entry
 *                              HV*V*r (u) + GDN H*K*r / KDA HV*K*r (k) + HV*gk*4 (G)
 *     write, folding (h + 1 == L): the checkpoint HV*V*K*s instead of the entry
 *     + io
 *   Averaged over a full cycle h = 0 .. L-1 (one fold per L steps). At L = 1 this equals
 *   packed exactly. KDA's per-head early folds (min G < -G_MAX) are not modelled: with the
 *   bench's gates there are none at L <= 16 (min G after 16 steps is about -38 > -60); at
 *   L = 32 roughly a fifth of the heads (A > 12.8) fold a few steps early, which moves a
 *   little of a head's traffic from ring reads to checkpoint writes.
 *
 *   replay verify of T tokens with h committed entries:
 *     read  S0 + the h committed entries (u, k, G as above)
 *     write S0 when the committed entries are folded first (h + T > L)
 *     write the T window entries (the window's own entries are kept on chip, not re-read)
 *     + T * io
 *
 *   packed verify baseline (what engines do for rollback today): T packed steps, token t
 *   reads the state token t-1 wrote and writes its own intermediate slot:
 *     T * (2 * HV*V*K*s) + T * io
 */
#include "bytemodel.h"

typedef struct dims {
    double H, HV, K, V, L, s, r, e, gk, kheads; /* kheads: heads whose keys the ring stores */
} dims;

static dims dims_of(const rssm_layer *l)
{
    dims d;
    d.H = l->num_k_heads, d.HV = l->num_v_heads, d.K = l->head_k_dim, d.V = l->head_v_dim, d.L = l->ring_len;
    d.s = (double)rssm_dtype_size(l->state_dtype);
    d.r = (double)rssm_dtype_size(l->ring_dtype);
    d.e = (double)rssm_dtype_size(l->io_dtype);
    d.gk = l->gate == RSSM_GATE_KDA ? d.K : 1;
    d.kheads = l->gate == RSSM_GATE_KDA ? d.HV : d.H;
    return d;
}

/* ring G is f32 (f64 only on the reference with an f64 ring) */
static double g_bytes(const rssm_layer *l) { return l->ring_dtype == RSSM_DTYPE_F64 ? 8 : 4; }

double rssm_bm_io_token(const rssm_layer *l)
{
    const dims d = dims_of(l);
    return d.e * (2 * d.H * d.K + d.HV * d.V + d.HV * d.gk + d.HV) /* q, k, v, a, b */
           + d.e * d.HV * d.V;                                     /* o */
}

double rssm_bm_entry(const rssm_layer *l)
{
    const dims d = dims_of(l);
    return d.HV * d.V * d.r + d.kheads * d.K * d.r + d.HV * d.gk * g_bytes(l);
}

static double state_bytes(const rssm_layer *l)
{
    const dims d = dims_of(l);
    return d.HV * d.V * d.K * d.s;
}

/* Reads of h live entries: u and k of each, G as the implementation reads it. */
static double ring_reads(const rssm_layer *l, int h)
{
    const dims d = dims_of(l);
    double bytes = h * (d.HV * d.V * d.r + d.kheads * d.K * d.r);
    if (l->gate == RSSM_GATE_GDN)
        bytes += h * d.HV * g_bytes(l);
    else if (h > 0)
        bytes += d.HV * d.K * g_bytes(l);
    return bytes;
}

double rssm_bm_packed_token(const rssm_layer *l) { return 2 * state_bytes(l) + rssm_bm_io_token(l); }

double rssm_bm_replay_step(const rssm_layer *l, int h, int fold)
{
    return state_bytes(l) + ring_reads(l, h) + (fold ? state_bytes(l) : rssm_bm_entry(l)) + rssm_bm_io_token(l);
}

double rssm_bm_replay_cycle(const rssm_layer *l)
{
    const int L = l->ring_len;
    double sum = 0;
    for (int h = 0; h < L; h++)
        sum += rssm_bm_replay_step(l, h, h + 1 == L);
    return sum / L;
}

double rssm_bm_verify_replay(const rssm_layer *l, int h, int T, int start_fold)
{
    return state_bytes(l) + ring_reads(l, h) + (start_fold ? state_bytes(l) : 0) + T * rssm_bm_entry(l) +
           T * rssm_bm_io_token(l);
}

double rssm_bm_verify_packed(const rssm_layer *l, int T) { return T * rssm_bm_packed_token(l); }
