/*
 * sim_report.c — what `replayssm simulate` prints (simulate.h): the packed / replay comparison
 * table, the tensor-parallel comparison and the --json object.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "simulate.h"

/* 1 when every request generated the same tokens in both runs. */
int sim_same_streams(const sim_result *a, const sim_result *b, int n, int *first_diff)
{
    for (int i = 0; i < n; i++) {
        const request *x = &a->rq[i], *y = &b->rq[i];
        if (x->hist_len != y->hist_len || memcmp(x->hist, y->hist, sizeof(int32_t) * x->hist_len)) {
            *first_diff = i;
            return 0;
        }
    }
    *first_diff = -1;
    return 1;
}

static double tok_s(const sim_result *r) { return r->generated / r->seconds; }
static double bytes_tok(const sim_result *r) { return r->state_bytes / r->decode_tokens; }
static double hit_rate(const sim_result *r) { return r->admitted ? (double)r->hits / r->admitted : 0; }
static double reuse(const sim_result *r) { return r->prompt_tokens ? (double)r->reused_tokens / r->prompt_tokens : 0; }
static double per_forward(const sim_result *r, long long n)
{
    return r->prefill_forwards ? (double)n / r->prefill_forwards : 0;
}
static double acceptance(const sim_result *r) { return r->drafted ? (double)r->accepted / r->drafted : 0; }

/* One row of seconds (or ms) for packed and replay with their ratio (0 when packed's is 0). */
static void time_row(const char *label, double pk, double rp)
{
    printf("%-28s %14.3f %14.3f %8.2fx\n", label, pk, rp, pk > 0 ? rp / pk : 0.0);
}

void sim_print_table(const sim_config *c, const sim_model *m, const sim_result *pk, const sim_result *rp, int same,
                     int diff)
{
    const rssm_layer *l = &m->cfg.layer;
    printf("\nreplayssm simulate: model %s (%s H=%d HV=%d K=%d V=%d, %d layers, d_model %d, vocab %d), device %s\n",
           c->preset, l->gate == RSSM_GATE_GDN ? "GDN" : "KDA", l->num_k_heads, l->num_v_heads, l->head_k_dim,
           l->head_v_dim, m->cfg.n_layers, m->cfg.d_model, m->cfg.vocab,
           c->device == RSSM_DEVICE_CUDA ? "cuda" : "cpu");
    printf("numbers: bf16 weights and activations (mixer io), f32 residual, %s state\n",
           l->state_dtype == RSSM_DTYPE_BF16 ? "bf16" : "f32");
    printf("workload: %d requests, batch %d, system prompt %d tokens, follow-ups %.0f%%, ring L=%d (%s), "
           "track interval %d, %s\n\n",
           c->requests, c->max_batch, c->system_len, c->followup * 100, l->ring_len,
           l->ring_dtype == RSSM_DTYPE_BF16 ? "bf16" : "f32", c->track_interval,
           c->spec > 1 ? "speculative decoding (n-gram drafts)" : "no speculative decoding");
    printf("%-28s %14s %14s %9s\n", "", "packed", "replay", "ratio");
    printf("%-28s %14.1f %14.1f %8.2fx\n", "tokens/s (whole run)", tok_s(pk), tok_s(rp), tok_s(rp) / tok_s(pk));
    printf("%-28s %14.1f %14.1f %8.2fx\n", "tokens/s (decode steps)", pk->decode_tokens / pk->decode_seconds,
           rp->decode_tokens / rp->decode_seconds,
           (rp->decode_tokens / rp->decode_seconds) / (pk->decode_tokens / pk->decode_seconds));
    printf("%-28s %14.0f %14.0f %8.2fx\n", "state bytes moved / token", bytes_tok(pk), bytes_tok(rp),
           bytes_tok(rp) / bytes_tok(pk));
    printf("%-28s %14.2f %14.2f %8.2fx\n", "memory held (MiB)", pk->memory / 1048576.0, rp->memory / 1048576.0,
           (double)rp->memory / pk->memory);
    printf("%-28s %13.1f%% %13.1f%%\n", "prefix hit rate (requests)", 100 * hit_rate(pk), 100 * hit_rate(rp));
    printf("%-28s %13.1f%% %13.1f%%\n", "prompt tokens from cache", 100 * reuse(pk), 100 * reuse(rp));
    if (c->spec > 1)
        printf("%-28s %13.1f%% %13.1f%%\n", "draft acceptance", 100 * acceptance(pk), 100 * acceptance(rp));
    printf("%-28s %14lld %14lld\n", "tokens generated", pk->generated, rp->generated);
    printf("%-28s %14lld %14lld\n", "decode steps", pk->decode_steps, rp->decode_steps);
    if (rp->small_rows > 0) printf("%-28s %14s %14lld\n", "  small, every row folded", "-", rp->small_steps);
    printf("%-28s %14.1f %14.1f\n", "requests per decode step",
           pk->decode_steps ? (double)pk->active_rows / pk->decode_steps : 0.0,
           rp->decode_steps ? (double)rp->active_rows / rp->decode_steps : 0.0);
    printf("%-28s %14lld %14lld\n", "prefill forwards", pk->prefill_forwards, rp->prefill_forwards);
    printf("%-28s %14.1f %14.1f\n", "  rows per forward", per_forward(pk, pk->prefill_rows),
           per_forward(rp, rp->prefill_rows));
    printf("%-28s %14.1f %14.1f\n", "  longest row (tokens)", per_forward(pk, pk->prefill_longest),
           per_forward(rp, rp->prefill_longest));
    printf("%-28s %14lld %14lld\n", "prompt tokens computed", pk->prefill_tokens, rp->prefill_tokens);
    time_row("s in admission (prefill)", pk->prefill_seconds, rp->prefill_seconds);
    if (c->profile) {
        time_row("  mixers (--profile)", pk->pf_mixer, rp->pf_mixer);
        time_row("  dense (--profile)", pk->pf_dense, rp->pf_dense);
        time_row("  prefix matches (--profile)", pk->pf_match, rp->pf_match);
    }
    time_row("s in decode steps", pk->decode_seconds, rp->decode_seconds);
    const sim_result *r2[2] = {pk, rp};
    double ms[2][6];
    for (int i = 0; i < 2; i++) {
        const double k = 1e3 / (r2[i]->decode_steps ? r2[i]->decode_steps : 1);
        ms[i][0] = r2[i]->decode_seconds * k, ms[i][1] = r2[i]->t_prep * k, ms[i][2] = r2[i]->t_forward * k;
        ms[i][3] = r2[i]->t_mixer * k, ms[i][4] = r2[i]->t_dense * k, ms[i][5] = r2[i]->t_book * k;
    }
    static const char *part[6] = {"ms / decode step",       "  host preparation",    "  forward (GPU or CPU)",
                                  "    mixers (--profile)", "    dense (--profile)", "  bookkeeping after"};
    for (int j = 0; j < 6; j++) {
        if ((j == 3 || j == 4) && !c->profile) continue;
        time_row(part[j], ms[0][j], ms[1][j]);
    }
    if (same)
        printf("\ntoken streams: identical (%d requests)\n", c->requests);
    else
        printf("\ntoken streams: DIFFERENT (first at request %d)\n", diff);
    /* On the CPU a small model's states stay in the caches: then replay has no DRAM traffic to
     * save, and its tokens/s say nothing about it (the default demo model does this). */
    long llc = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    rssm_state_bytes slot_bytes; /* one slot of one layer: checkpoint, ring, cursor */
    const double step_state = rssm_state_size(l, 1, &slot_bytes) != RSSM_OK
                                  ? 0.0
                                  : (pk->decode_steps ? (double)pk->active_rows / pk->decode_steps : 0.0) *
                                        m->cfg.n_layers * (double)slot_bytes.total;
    if (c->device != RSSM_DEVICE_CUDA && llc > 0 && step_state > 0 && step_state <= (double)llc)
        printf("note: a decode step's states (%.1f MiB over %d layers) fit in this CPU's last-level cache (%.0f MiB),\n"
               "      so replay has no memory traffic to save here and its extra arithmetic shows. Replay pays where\n"
               "      a step is bound by memory bandwidth: on an H200, --device cuda --model qwen3-next (README).\n",
               step_state / 1048576.0, m->cfg.n_layers, llc / 1048576.0);
}

/* FNV-1a 64 over every request's token stream (length, then tokens): compared across ranks. */
uint64_t sim_stream_hash(const sim_result *r, int n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < n; i++) {
        const request *q = &r->rq[i];
        const int32_t len = q->hist_len;
        const unsigned char *p[2] = {(const unsigned char *)&len, (const unsigned char *)q->hist};
        const size_t bytes[2] = {sizeof len, sizeof(int32_t) * (size_t)len};
        for (int k = 0; k < 2; k++)
            for (size_t j = 0; j < bytes[k]; j++)
                h = (h ^ p[k][j]) * 0x100000001b3ull;
    }
    return h;
}

/* the --tp run against the unsharded replay run */

static const char *tp_transport(const tp_report *t)
{
    if (!t->nccl) return "all ranks in this process, one after another; outputs gathered by memcpy";
    return t->run->tp == 1 ? "one process, a 1-rank NCCL communicator (the NCCL path on one GPU)"
                           : "one process per GPU; mixer outputs all-gathered with NCCL";
}

void sim_print_tp(const sim_config *c, const sim_result *rp, const tp_report *t)
{
    const sim_result *r[2] = {rp, t->run};
    printf("\ntensor parallel (replay): heads split over %d ranks: %s\n", t->run->tp, tp_transport(t));
    printf("%-28s %14s %11s%-3d %9s\n", "", "tp=1", "tp=", t->run->tp, "ratio");
    printf("%-28s %14.1f %14.1f %8.2fx\n", "tokens/s (whole run)", tok_s(r[0]), tok_s(r[1]), tok_s(r[1]) / tok_s(r[0]));
    const double d0 = r[0]->decode_tokens / r[0]->decode_seconds, d1 = r[1]->decode_tokens / r[1]->decode_seconds;
    printf("%-28s %14.1f %14.1f %8.2fx\n", "tokens/s (decode steps)", d0, d1, d1 / d0);
    printf("%-28s %14.2f %14.2f %8.2fx\n", "state memory per GPU (MiB)", r[0]->memory / 1048576.0,
           r[1]->memory / 1048576.0, (double)r[1]->memory / r[0]->memory);
    if (t->same)
        printf("token streams: identical to tp=1 (%d requests)%s\n", c->requests,
               t->agree ? (t->nccl ? "; every rank generated the same streams" : "") : "; but the RANKS DIFFER");
    else
        printf("token streams: DIFFERENT from tp=1 (first at request %d)\n", t->diff);
}

void sim_print_json(const sim_config *c, const sim_result *pk, const sim_result *rp, int same, const tp_report *t)
{
    const sim_result *r[2] = {pk, rp};
    printf("{\"model\": \"%s\", \"device\": \"%s\", \"requests\": %d, \"batch\": %d, \"spec\": %d, \"identical\": %s",
           c->preset, c->device == RSSM_DEVICE_CUDA ? "cuda" : "cpu", c->requests, c->max_batch, c->spec,
           same ? "true" : "false");
    for (int i = 0; i < 2; i++)
        printf(", \"%s\": {\"tokens_per_s\": %.3f, \"decode_tokens_per_s\": %.3f, \"state_bytes_per_token\": %.1f, "
               "\"memory_bytes\": %zu, \"prefix_hit_rate\": %.4f, \"prompt_reuse\": %.4f, \"acceptance\": %.4f, "
               "\"tokens\": %lld, \"seconds\": %.3f, \"decode_seconds\": %.4f, \"prefill_seconds\": %.4f, "
               "\"prefill_forwards\": %lld, \"prefill_tokens\": %lld, \"prefill_rows\": %lld, "
               "\"prefill_longest_tokens\": %lld, \"prep_seconds\": %.4f, "
               "\"forward_seconds\": %.4f, \"mixer_seconds\": %.4f, \"dense_seconds\": %.4f, \"bookkeeping_seconds\": "
               "%.4f, \"small_batch_rows\": %d, \"small_batch_steps\": %lld, \"stream_hash\": \"%016llx\"}",
               i ? "replay" : "packed", tok_s(r[i]), r[i]->decode_tokens / r[i]->decode_seconds, bytes_tok(r[i]),
               r[i]->memory, hit_rate(r[i]), reuse(r[i]), acceptance(r[i]), r[i]->generated, r[i]->seconds,
               r[i]->decode_seconds, r[i]->prefill_seconds, r[i]->prefill_forwards, r[i]->prefill_tokens,
               r[i]->prefill_rows, r[i]->prefill_longest, r[i]->t_prep, r[i]->t_forward, r[i]->t_mixer, r[i]->t_dense,
               r[i]->t_book, r[i]->small_rows, r[i]->small_steps,
               (unsigned long long)sim_stream_hash(r[i], c->requests));
    if (t)
        printf(
            ", \"tp\": {\"ranks\": %d, \"transport\": \"%s\", \"tokens_per_s\": %.3f, \"decode_tokens_per_s\": %.3f, "
            "\"memory_bytes_per_gpu\": %zu, \"identical_to_tp1\": %s, \"ranks_agree\": %s}",
            t->run->tp, tp_transport(t), tok_s(t->run), t->run->decode_tokens / t->run->decode_seconds, t->run->memory,
            t->same ? "true" : "false", t->agree ? "true" : "false");
    printf("}\n");
}
