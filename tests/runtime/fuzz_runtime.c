/*
 * fuzz_runtime.c — an interpreter of byte strings as runtime operations, with the runtime's
 * invariants checked after every operation. Built as a libFuzzer target with clang
 * (RSSM_LIBFUZZER), and driven by a seeded generator in test_workload.c otherwise.
 *
 * World: a reference context; two layers (gate, layer 1's state layout and dtype, layer 0's ring
 * dtype from the first byte); pool A (6 slots) with a prefix cache (at most 3 snapshots) and
 * a planner (batch 2, track interval 4); pool B (3 slots) for imports. The interpreter keeps
 * its own model: the slots it holds in A and B, a hash of each held slot's exported state
 * (ring form), the locks it holds. After every op:
 *   - rssm_pool_validate(A, B) and rssm_prefix_cache_validate pass;
 *   - A's held count == caller's slots + the cache's snapshots; B's == caller's slots
 *     (no leak, no double ownership); every caller slot is held;
 *   - every caller slot the op did not target exports to the same bytes as before
 *     (no stray write, no wrong sharing);
 *   - the cache's lock total == the locks the interpreter holds;
 *   - every failing call left a message; an op's status is the one the model predicts where
 *     the model can tell (e.g. POOL_FULL exactly when no slot is free).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm_runtime.h"

int rt_fuzz_run(const uint8_t *data, size_t size, char *why, size_t why_len);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Per operation code: how often it ran and how often it returned RSSM_OK (for the driver's summary). */
long rt_fuzz_ops[12], rt_fuzz_ok[12];

#define NA 6
#define NB 3
#define MAXLOCK 16

typedef struct world {
    rssm_context *ctx;
    rssm_pool *pa, *pb;
    rssm_prefix_cache *cache;
    rssm_plan *plan;
    rssm_layer ly[2];
    int32_t ua[NA], na;      /* caller's slots in A */
    int32_t ub[NB], nb;      /* caller's slots in B */
    uint64_t ha[NA], hb[NB]; /* hash of each slot's state, indexed by slot id */
    uint64_t locks[MAXLOCK];
    int nlocks;
    int32_t seq[NA]; /* committed tokens per A slot (for the planner) */
    /* step inputs, host memory (reference device) */
    _Alignas(64) float q[2 * 3 * 4];
    _Alignas(64) float k[2 * 3 * 4];
    _Alignas(64) float v[2 * 3 * 2 * 4];
    _Alignas(64) float g[2 * 3 * 2 * 4];
    _Alignas(64) float beta[2 * 3 * 2];
    _Alignas(64) float o[2 * 3 * 2 * 4];
    const uint8_t *p, *end;
    char *why;
    size_t why_len;
} world;

static uint8_t next(world *w) { return w->p < w->end ? *w->p++ : 0; }

static uint64_t fnv(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t slot_hash(rssm_pool *p, int32_t s)
{
    static unsigned char buf[1 << 16];
    size_t n = 0;
    if (rssm_pool_export(p, s, RSSM_EXPORT_RING, buf, sizeof buf, &n) != RSSM_OK) return 0;
    return fnv(buf, n);
}

static int fail(world *w, const char *msg)
{
    snprintf(w->why, w->why_len, "%s", msg);
    return 1;
}

static int find(const int32_t *a, int n, int32_t s)
{
    for (int i = 0; i < n; i++)
        if (a[i] == s) return i;
    return -1;
}

/* A slot id: mostly one the caller holds, sometimes anything (-2 .. 9). */
static int32_t pick(world *w, const int32_t *held, int n)
{
    const uint8_t b = next(w);
    if (n > 0 && b < 200) return held[b % n];
    return (int32_t)(b % 12) - 2;
}

static int check(world *w, rssm_status st, int touched_a, int touched_b)
{
    if (st != RSSM_OK && !*rssm_last_error()) return fail(w, "a failing call left no message");
    if (rssm_pool_validate(w->pa) != RSSM_OK || rssm_pool_validate(w->pb) != RSSM_OK) return fail(w, rssm_last_error());
    if (rssm_prefix_cache_validate(w->cache) != RSSM_OK) return fail(w, rssm_last_error());
    rssm_prefix_cache_stats cs;
    rssm_prefix_cache_get_stats(w->cache, &cs);
    if (NA - rssm_pool_num_free(w->pa) != w->na + cs.snapshots) return fail(w, "pool A: held != caller + snapshots");
    if (NB - rssm_pool_num_free(w->pb) != w->nb) return fail(w, "pool B: held != caller");
    if (cs.locks != w->nlocks) return fail(w, "lock count differs from the locks held");
    for (int i = 0; i < w->na; i++) {
        const int32_t s = w->ua[i];
        if (!rssm_pool_is_held(w->pa, s)) return fail(w, "a caller slot of A is not held");
        const uint64_t h = slot_hash(w->pa, s);
        if (s != touched_a && h != w->ha[s]) return fail(w, "an untouched slot of A changed");
        w->ha[s] = h;
    }
    for (int i = 0; i < w->nb; i++) {
        const int32_t s = w->ub[i];
        const uint64_t h = slot_hash(w->pb, s);
        if (s != touched_b && h != w->hb[s]) return fail(w, "an untouched slot of B changed");
        w->hb[s] = h;
    }
    return 0;
}

static rssm_status step(world *w, int verify)
{
    int32_t rows[2], seq[2];
    const int n = next(w) % 3;
    for (int r = 0; r < 2; r++) {
        rows[r] = -1, seq[r] = 0;
        if (r < n && w->na > 0) {
            rows[r] = w->ua[(next(w) + r) % w->na];
            seq[r] = w->seq[rows[r]];
        }
    }
    if (n == 2 && rows[0] == rows[1]) rows[1] = -1;
    const int T = verify ? 1 + next(w) % 3 : 1;
    for (size_t i = 0; i < sizeof w->q / 4; i++)
        w->q[i] = (float)((next(w) % 17) - 8) / 8.0f + 0.1f;
    for (size_t i = 0; i < sizeof w->k / 4; i++)
        w->k[i] = (float)((next(w) % 13) - 6) / 6.0f + 0.1f;
    for (size_t i = 0; i < sizeof w->v / 4; i++)
        w->v[i] = (float)((next(w) % 11) - 5) / 5.0f;
    for (size_t i = 0; i < sizeof w->g / 4; i++)
        w->g[i] = -(float)(next(w) % 40) / 2.0f - 0.01f;
    for (size_t i = 0; i < sizeof w->beta / 4; i++)
        w->beta[i] = (float)(next(w) % 10) / 10.0f;
    rssm_status st = rssm_plan_set(w->plan, n, rows, seq);
    if (st != RSSM_OK) return st;
    int32_t acc[2] = {next(w) % (T + 1), next(w) % (T + 1)};
    if (verify && (st = rssm_plan_set_accepted(w->plan, 2, acc)) != RSSM_OK) return st;
    if ((st = rssm_plan_begin(w->plan, verify ? RSSM_PLAN_VERIFY : RSSM_PLAN_DECODE, T, NULL)) != RSSM_OK) return st;
    for (int l = 0; l < 2 && st == RSSM_OK; l++) {
        rssm_step_io io;
        memset(&io, 0, sizeof io);
        rssm_plan_io(w->plan, &io);
        io.q = w->q, io.k = w->k, io.v = w->v, io.g = w->g, io.beta = w->beta, io.o = w->o;
        rssm_state s;
        rssm_pool_state(w->pa, l, &s);
        st = verify ? rssm_verify(w->ctx, &w->ly[l], &s, &io, NULL)
                    : rssm_decode_replay(w->ctx, &w->ly[l], &s, &io, NULL);
    }
    if (st != RSSM_OK) return st; /* (a failure here would leave the plan begun; it does not happen) */
    st = rssm_plan_end(w->plan, NULL);
    for (int r = 0; r < 2 && st == RSSM_OK; r++)
        if (rows[r] >= 0) w->seq[rows[r]] += verify ? acc[r] : 1;
    return st;
}

static int op(world *w)
{
    const uint8_t code = next(w) % 12;
    rssm_status st = RSSM_OK;
    int32_t s = -1, t = -1, ta = -1, tb = -1;
    switch (code) {
    case 0: { /* acquire */
        const int full = rssm_pool_num_free(w->pa) == 0;
        st = rssm_pool_acquire(w->pa, &s);
        if (full != (st == RSSM_ERROR_POOL_FULL)) return fail(w, "acquire: POOL_FULL mismatch");
        if (st == RSSM_OK) w->ua[w->na++] = s, w->seq[s] = 0, ta = s;
        break;
    }
    case 1: { /* release */
        s = pick(w, w->ua, w->na);
        const int i = find(w->ua, w->na, s);
        st = rssm_pool_release(w->pa, s);
        if ((i >= 0) != (st == RSSM_OK)) return fail(w, "release: status does not match ownership");
        if (i >= 0) w->ua[i] = w->ua[--w->na];
        break;
    }
    case 2: { /* copy (materialise) or checkpoint copy */
        s = pick(w, w->ua, w->na), t = pick(w, w->ua, w->na);
        const int ok = find(w->ua, w->na, t) >= 0 && rssm_pool_is_held(w->pa, s);
        st = next(w) & 1 ? rssm_pool_copy(w->pa, s, w->pa, t) : rssm_pool_copy_checkpoint(w->pa, s, w->pa, t);
        if (ok != (st == RSSM_OK)) return fail(w, "copy: status does not match ownership");
        ta = t;
        break;
    }
    case 3: { /* export from A, import into B: same bits (ring form) */
        static unsigned char buf[1 << 16];
        size_t n = 0;
        s = pick(w, w->ua, w->na);
        const uint32_t form = next(w) & 1;
        st = rssm_pool_export(w->pa, s, form, buf, sizeof buf, &n);
        if (rssm_pool_is_held(w->pa, s) != (st == RSSM_OK)) return fail(w, "export: status does not match ownership");
        if (st != RSSM_OK) break;
        const int full = rssm_pool_num_free(w->pb) == 0;
        if (next(w) < 40 && n > 0) buf[next(w) % n] ^= (uint8_t)(1 + next(w) % 255); /* corrupt */
        st = rssm_pool_import(w->pb, buf, n, &t);
        if (st == RSSM_OK) {
            if (full) return fail(w, "import into a full pool succeeded");
            w->ub[w->nb++] = t, tb = t;
            if (form == RSSM_EXPORT_RING && slot_hash(w->pb, t) != slot_hash(w->pa, s))
                return fail(w, "import: bits differ");
        }
        break;
    }
    case 4: { /* import raw bytes */
        unsigned char raw[96];
        const size_t n = next(w) % sizeof raw;
        for (size_t i = 0; i < n; i++)
            raw[i] = next(w);
        if (n >= 8) memcpy(raw, "RSSMSNAP", 8);
        st = rssm_pool_import(w->pa, raw, n, &t);
        if (st == RSSM_OK) return fail(w, "import of random bytes succeeded");
        break;
    }
    case 5: { /* insert */
        int32_t tok[8];
        const int n = 1 + next(w) % 8;
        for (int i = 0; i < n; i++)
            tok[i] = next(w) % 4;
        s = pick(w, w->ua, w->na);
        st = rssm_prefix_cache_insert(w->cache, tok, n, w->pa, s, next(w) & 1);
        if (find(w->ua, w->na, s) >= 0 && st != RSSM_OK && st != RSSM_ERROR_POOL_FULL)
            return fail(w, "insert from a caller slot failed");
        break;
    }
    case 6: { /* match, maybe with a lock */
        int32_t tok[8], m = -1;
        const int n = next(w) % 9;
        for (int i = 0; i < n; i++)
            tok[i] = next(w) % 4;
        t = pick(w, w->ua, w->na);
        uint64_t lk = 0;
        const int want_lock = (next(w) & 1) && w->nlocks < MAXLOCK;
        st = rssm_prefix_cache_match(w->cache, tok, n, w->pa, t, &m, want_lock ? &lk : NULL);
        if ((find(w->ua, w->na, t) >= 0) != (st == RSSM_OK)) return fail(w, "match: status does not match ownership");
        if (st == RSSM_OK && lk) w->locks[w->nlocks++] = lk;
        if (st == RSSM_OK && m > 0) {
            ta = t;
            w->seq[t] = m;
        }
        break;
    }
    case 7: { /* unlock */
        const uint8_t b = next(w);
        if (w->nlocks > 0 && b < 220) {
            const int i = b % w->nlocks;
            st = rssm_prefix_cache_unlock(w->cache, w->locks[i]);
            if (st != RSSM_OK) return fail(w, "unlock of a held lock failed");
            w->locks[i] = w->locks[--w->nlocks];
        } else {
            st = rssm_prefix_cache_unlock(w->cache, ((uint64_t)b << 32) | (b % 7));
            if (st == RSSM_OK) { /* a bogus handle may name a real locked entry only by accident */
                int found = 0;
                for (int i = 0; i < w->nlocks && !found; i++)
                    if (w->locks[i] == (((uint64_t)b << 32) | (b % 7))) w->locks[i] = w->locks[--w->nlocks], found = 1;
                if (!found) return fail(w, "unlock of a bogus handle succeeded");
            }
        }
        break;
    }
    case 8:
        st = rssm_prefix_cache_evict(w->cache, next(w) % 4, NULL);
        break;
    case 9:
    case 10: {
        st = step(w, code == 10);
        /* a step touches its rows: refresh the hashes (the check then covers the others' bookkeeping) */
        for (int i = 0; i < w->na; i++)
            w->ha[w->ua[i]] = slot_hash(w->pa, w->ua[i]);
        break;
    }
    case 11: { /* release from B */
        s = pick(w, w->ub, w->nb);
        const int i = find(w->ub, w->nb, s);
        st = rssm_pool_release(w->pb, s);
        if ((i >= 0) != (st == RSSM_OK)) return fail(w, "release B: status does not match ownership");
        if (i >= 0) w->ub[i] = w->ub[--w->nb];
        break;
    }
    }
    rt_fuzz_ops[code]++;
    rt_fuzz_ok[code] += st == RSSM_OK;
    return check(w, st, ta, tb);
}

int rt_fuzz_run(const uint8_t *data, size_t size, char *why, size_t why_len)
{
    world *w = calloc(1, sizeof *w);
    if (!w) return 0;
    w->p = data, w->end = size ? data + size : data, w->why = why, w->why_len = why_len; /* data may be NULL */
    why[0] = 0;
    for (int l = 0; l < 2; l++)
        w->ly[l] = rssm_layer_default(l ? RSSM_GATE_KDA : RSSM_GATE_GDN, 1, 2, 4, 4, 3);
    w->ly[1].gate = w->ly[0].gate = (size > 0 && data[0] & 1) ? RSSM_GATE_KDA : RSSM_GATE_GDN;
    w->ly[1].state_layout = (size > 0 && data[0] & 2) ? RSSM_LAYOUT_KV : RSSM_LAYOUT_VK;
    /* layers of different tensor sizes: a bf16 state beside an f32 one, a bf16 ring */
    w->ly[1].state_dtype = (size > 0 && data[0] & 4) ? RSSM_DTYPE_BF16 : RSSM_DTYPE_F32;
    w->ly[0].ring_dtype = (size > 0 && data[0] & 8) ? RSSM_DTYPE_BF16 : RSSM_DTYPE_F32;
    int bad = 0;
    if (rssm_context_create(RSSM_DEVICE_REFERENCE, NULL, &w->ctx) != RSSM_OK ||
        rssm_pool_create(w->ctx, w->ly, 2, NA, &w->pa) != RSSM_OK ||
        rssm_pool_create(w->ctx, w->ly, 2, NB, &w->pb) != RSSM_OK ||
        rssm_prefix_cache_create(w->pa, 0, 3, &w->cache) != RSSM_OK ||
        rssm_plan_create(w->pa, 2, 4, &w->plan) != RSSM_OK)
        bad = fail(w, rssm_last_error());
    int ops = 0;
    while (!bad && w->p < w->end && ops < 400)
        bad = op(w), ops++;
    /* teardown: everything returns to the pools */
    while (!bad && w->nlocks > 0)
        if (rssm_prefix_cache_unlock(w->cache, w->locks[--w->nlocks]) != RSSM_OK) bad = fail(w, "final unlock failed");
    rssm_prefix_cache_free(w->cache);
    for (int i = 0; i < w->na && !bad; i++)
        if (rssm_pool_release(w->pa, w->ua[i]) != RSSM_OK) bad = fail(w, "final release failed");
    for (int i = 0; i < w->nb && !bad; i++)
        if (rssm_pool_release(w->pb, w->ub[i]) != RSSM_OK) bad = fail(w, "final release B failed");
    if (!bad && (rssm_pool_num_free(w->pa) != NA || rssm_pool_num_free(w->pb) != NB)) bad = fail(w, "slots leaked");
    rssm_plan_free(w->plan);
    rssm_pool_free(w->pa);
    rssm_pool_free(w->pb);
    rssm_context_free(w->ctx);
    free(w);
    return bad;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[600];
    if (rt_fuzz_run(data, size, why, sizeof why)) {
        fprintf(stderr, "runtime invariant broken: %s\n", why);
        abort();
    }
    return 0;
}
