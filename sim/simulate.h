/*
 * simulate.h — the serving simulation behind `replayssm simulate` (simulate.c: configuration
 * and the engine loop; tools/simulate.c reads the command line), and the parts it shares with
 * its workload (sim_workload.c: deterministic requests, prompts, n-gram drafts), its report
 * (sim_report.c: the comparison table, --tp and --json) and the hand-off (handoff.c).
 */
#ifndef RSSM_SIMULATE_H
#define RSSM_SIMULATE_H

#include <stdint.h>
#include <stdio.h>

#include "sim_model.h"

/* In an int-returning function of the simulation: a failed library call prints "TOOL: CALL
 * failed: STATUS: message" on stderr and returns -1. */
#define SIM_TRY(tool, call)                                                                                            \
    do {                                                                                                               \
        rssm_status st_ = (call);                                                                                      \
        if (st_ != RSSM_OK) {                                                                                          \
            fprintf(stderr, "%s: %s failed: %s: %s\n", tool, #call, rssm_status_name(st_), rssm_last_error());         \
            return -1;                                                                                                 \
        }                                                                                                              \
    } while (0)

typedef struct sim_config {
    rssm_device device;
    int threads;
    rssm_context_params params; /* the tuning switches (threads and device ordinal set per rank) */
    sim_model_config model;
    const char *preset;
    int requests, max_batch, system_len, user_min, user_max, gen_min, gen_max, arrival_gap;
    int spec;           /* tokens per verify window (1 = no speculative decoding) */
    int track_interval; /* prefix snapshot every this many tokens */
    int snapshots;      /* snapshot slots of the prefix cache */
    double followup;    /* share of requests that continue an earlier conversation */
    int json;           /* one JSON object instead of the table */
    int progress;       /* a progress bar on stderr (sim_run sets it: no --json and stderr a terminal) */
    int profile;        /* synchronise around each part of a decode step to time it (slower) */
    int repeat;         /* run the packed / replay pair this many times; the last pair is reported */
    int tp;             /* --tp N: also run replay with the heads split over N ranks (0 = off) */
    int small_batch;    /* replay: rssm_plan_set_small_batch's max_rows (RSSM_PLAN_SMALL_BATCH_AUTO by default) */
} sim_config;

/* The model presets (NULL-terminated): demo (GDN, 4 small layers, the default), demo-kda,
 * qwen3-next (Qwen3-Next-80B's 36 Gated DeltaNet layers' shapes), kimi-linear (KDA). */
extern const char *const sim_model_names[];
/* Vocabulary, width, layer count and layer shape (L = 16, f32 everything) of a preset; -1 when
 * unknown. */
int sim_model_preset(const char *name, sim_model_config *m);

/* The defaults: the demo preset, 48 requests in batches of 16 sharing a 48-token system prompt
 * (40% follow-ups), 24..48 tokens each, an arrival every 2 steps, no speculative decoding, a
 * snapshot every 16 tokens into 64 slots, seed 1, small-batch folds by the measured rule. */
sim_config sim_config_default(void);
/* c's model becomes preset `name` (its layer with bf16 io, the model's activations); -1 when
 * unknown. */
int sim_config_preset(sim_config *c, const char *name);
/* Serves the workload twice, packed and replay (and with c->tp over the ranks), and prints the
 * comparison (the table, or JSON). Returns 0 when every compared pair of token streams is
 * identical, 1 otherwise or when a run failed (printed). */
int sim_run(const sim_config *c);

typedef struct request {
    int arrival;   /* step at which it may be admitted */
    int parent;    /* -1, or the request whose conversation it continues */
    int32_t *user; /* its own new tokens */
    int user_len, max_new;
    /* filled while running */
    int32_t *hist; /* prompt then generated tokens */
    int hist_len, hist_cap, prompt_len, generated, done, slot, row;
    int seq_len; /* tokens processed (in the state) */
    int cursor;  /* host mirror of the slot's cursor, for the byte model */
    int matched; /* prefix tokens reused from the cache */
} request;

typedef struct sim_result {
    int replay;
    double seconds, decode_seconds;
    long long prompt_tokens, reused_tokens, generated, decode_steps, drafted, accepted;
    int hits, admitted;
    double state_bytes; /* byte model, decode and verify steps */
    /* admission: seconds in it (prefix matches, prefill forwards, snapshots, first tokens), its
     * forwards and the prompt tokens they computed */
    double prefill_seconds;
    double pf_mixer, pf_dense, pf_match; /* --profile: its mixers, dense parts and prefix matches */
    long long prefill_forwards, prefill_tokens;
    /* over the forwards: their rows (requests), and their longest rows' tokens (a CTA of the
     * prefill kernel walks a row's tokens one after another: the forwards' critical path) */
    long long prefill_rows, prefill_longest;
    double decode_tokens;
    /* seconds of decode steps spent in: host preparation (tokens, drafts, plan upload),
     * the forward (embedding, layers, logits, argmax and the read-back of the next tokens),
     * bookkeeping after it (cursor move, snapshots, copies, retirement); with --profile the
     * forward is split further into mixers and dense parts (each synchronised) */
    double t_prep, t_forward, t_book, t_mixer, t_dense;
    long long active_rows; /* sum over decode steps of the rows holding a request */
    long long small_steps; /* replay decode steps that folded every row (rssm_plan_set_small_batch) */
    int small_rows;        /* the planner's small-batch limit in rows (0: off) */
    size_t memory;         /* state memory of one rank (pools and planner; the whole run without --tp) */
    int tp;                /* 0: unsharded; N: heads split over N ranks */
    request *rq;           /* the run's requests (token streams) */
} sim_result;

/* --tp: the sharded run against the unsharded replay run */
typedef struct tp_report {
    const sim_result *run;
    int same;  /* token streams identical to the tp=1 (unsharded) replay run */
    int diff;  /* first differing request, else -1 */
    int agree; /* every rank generated the same streams (hash all-gathered; 1 in one process) */
    int nccl;  /* ranks are processes with NCCL (else all in this process) */
} tp_report;

/* ---- sim_workload.c ---- */
/* Appends a token to r's history (grows it). 0, or -1 out of memory. */
int sim_hist_push(request *r, int32_t tok);
/* The run's requests (arrival step, parent conversation, own tokens, generation length) and
 * the system prompt, from c's seed; NULL out of memory. */
request *sim_make_workload(const sim_config *c, int32_t **system);
void sim_free_workload(request *rq, int n);
/* The prompt of r: system prompt, or the parent's whole conversation, then its own tokens. */
int sim_build_prompt(request *r, const request *all, const int32_t *system, int system_len);
/* n-gram drafter: count tokens proposed after hist[0 .. n) */
void sim_draft(const int32_t *hist, int n, int count, int32_t *out);

/* ---- sim_report.c ---- */
/* 1 when every request generated the same tokens in both runs (else *first_diff = the first that did not). */
int sim_same_streams(const sim_result *a, const sim_result *b, int n, int *first_diff);
/* FNV-1a of every request's tokens (the ranks of an NCCL run compare it) */
uint64_t sim_stream_hash(const sim_result *r, int n);
void sim_print_table(const sim_config *c, const sim_model *m, const sim_result *pk, const sim_result *rp, int same,
                     int diff);
void sim_print_tp(const sim_config *c, const sim_result *rp, const tp_report *t);
void sim_print_json(const sim_config *c, const sim_result *pk, const sim_result *rp, int same, const tp_report *t);

#endif /* RSSM_SIMULATE_H */
