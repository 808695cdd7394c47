/*
 * sim_workload.c — the deterministic workload of `replayssm simulate` (simulate.h): requests that
 * share a system prompt or continue an earlier conversation, and the n-gram drafter.
 */
#include <stdlib.h>

#include "simulate.h"

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int rng_int(uint64_t *s, int lo, int hi) { return lo + (int)(rng_next(s) % (uint64_t)(hi - lo + 1)); }

int sim_hist_push(request *r, int32_t tok)
{
    if (r->hist_len == r->hist_cap) {
        int cap = r->hist_cap ? 2 * r->hist_cap : 256;
        int32_t *h = realloc(r->hist, sizeof(int32_t) * cap);
        if (!h) return -1;
        r->hist = h, r->hist_cap = cap;
    }
    r->hist[r->hist_len++] = tok;
    return 0;
}

request *sim_make_workload(const sim_config *c, int32_t **system)
{
    uint64_t s = c->model.seed ^ 0x5157u;
    request *rq = calloc(c->requests, sizeof *rq);
    *system = malloc(sizeof(int32_t) * c->system_len);
    if (!rq || !*system) return NULL;
    for (int i = 0; i < c->system_len; i++)
        (*system)[i] = rng_int(&s, 0, c->model.vocab - 1);
    for (int i = 0; i < c->requests; i++) {
        request *r = &rq[i];
        r->arrival = i * c->arrival_gap;
        r->parent = (i > 0 && (rng_next(&s) % 1000) < c->followup * 1000) ? rng_int(&s, 0, i - 1) : -1;
        r->user_len = rng_int(&s, c->user_min, c->user_max);
        r->max_new = rng_int(&s, c->gen_min, c->gen_max);
        r->user = malloc(sizeof(int32_t) * r->user_len);
        if (!r->user) return NULL;
        for (int j = 0; j < r->user_len; j++)
            r->user[j] = rng_int(&s, 0, c->model.vocab - 1);
        r->slot = r->row = -1;
    }
    return rq;
}

void sim_free_workload(request *rq, int n)
{
    for (int i = 0; rq && i < n; i++)
        free(rq[i].user), free(rq[i].hist);
    free(rq);
}

int sim_build_prompt(request *r, const request *all, const int32_t *system, int system_len)
{
    r->hist_len = 0;
    if (r->parent >= 0) {
        const request *p = &all[r->parent];
        for (int i = 0; i < p->hist_len; i++)
            if (sim_hist_push(r, p->hist[i])) return -1;
    } else {
        for (int i = 0; i < system_len; i++)
            if (sim_hist_push(r, system[i])) return -1;
    }
    for (int i = 0; i < r->user_len; i++)
        if (sim_hist_push(r, r->user[i])) return -1;
    r->prompt_len = r->hist_len;
    return 0;
}

/* n-gram drafter: find the latest earlier occurrence of the last 2 tokens of hist[0..n) and
 * propose the tokens that followed it; pads with the last token. */
void sim_draft(const int32_t *hist, int n, int count, int32_t *out)
{
    int found = -1;
    if (n >= 3)
        for (int i = n - 3; i >= 1 && found < 0; i--)
            if (hist[i] == hist[n - 1] && hist[i - 1] == hist[n - 2]) found = i + 1;
    for (int j = 0; j < count; j++)
        out[j] = (found >= 0 && found + j < n) ? hist[found + j] : hist[n - 1];
}
