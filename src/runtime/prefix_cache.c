/*
 * prefix_cache.c — a radix tree over token ids whose nodes hold state snapshots.
 *
 * Tree: every node but the root has a non-empty edge (a run of token ids); a node's depth is
 * the number of tokens from the root to the end of its edge; children of a node start with
 * distinct tokens. Compressed: a node without a snapshot has at least two children (insert
 * splits an edge where a new sequence leaves it; eviction removes or merges the nodes that
 * no longer carry anything).
 *
 * Snapshot: a slot of the snapshot pool holding the state after the node's tokens, with an
 * empty ring (cursor 0, ring bases 0), so a hit is a plain checkpoint copy: bit-exact.
 *
 * Locks and eviction: a snapshot's lock count keeps it alive; the snapshots form a doubly
 * linked recency list (head = most recent); eviction takes the least recent unlocked one.
 * Lock handles are (generation << 32) | (table index + 1): a stale handle never matches.
 *
 * Every mutating call allocates what it needs before it changes the tree, so a failure
 * leaves the tree as it was. No walk recurses: the table of nodes lets free, stats and
 * validation visit every node in a loop, so a tree of any depth fits any thread's stack.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/device.h"
#include "runtime/runtime.h"

typedef struct node {
    int32_t *edge;
    int32_t edge_len, depth;
    struct node *parent;
    struct node **kids;
    int32_t n_kids, cap_kids;
    int32_t snap; /* slot of the snapshot pool, or -1 */
    int32_t refs; /* lock count */
    int32_t id;   /* index in the table */
    uint32_t gen;
    struct node *prev, *next; /* recency list, when snap >= 0 */
} node;

struct rssm_prefix_cache {
    rssm_pool *pool;
    int32_t allowed; /* most snapshots the budget allows */
    size_t max_bytes;
    int32_t max_snapshots;
    node root;
    node **table;
    int32_t table_len, table_cap;
    int32_t *free_ids;
    int32_t n_free_ids;
    uint32_t next_gen;
    node *mru, *lru;
    int32_t n_nodes, n_snaps;
    int64_t hits, misses, inserts, evictions;
    /* the node of the last insert and its tokens: an insert that shares them (snapshots of one
     * growing sequence, the order an engine makes them) starts from that path, not the root */
    node *last;
    int32_t *last_tokens;
    int32_t last_n, last_cap;
};

/* ---- nodes ------------------------------------------------------------------------------- */

static node *node_new(const int32_t *tokens, int32_t len)
{
    node *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->edge = malloc(sizeof(int32_t) * (size_t)(len > 0 ? len : 1));
    x->kids = malloc(sizeof(node *) * 2);
    if (!x->edge || !x->kids) {
        free(x->edge), free(x->kids), free(x);
        return NULL;
    }
    if (len > 0) memcpy(x->edge, tokens, sizeof(int32_t) * (size_t)len);
    x->edge_len = len;
    x->cap_kids = 2;
    x->snap = -1;
    x->id = -1;
    return x;
}

static void node_delete(node *x)
{
    free(x->edge);
    free(x->kids);
    free(x);
}

/* Reserves table room for `extra` new ids. */
static int table_reserve(rssm_prefix_cache *c, int32_t extra)
{
    if (c->n_free_ids >= extra || c->table_len + extra - c->n_free_ids <= c->table_cap) return 1;
    int32_t cap = c->table_cap ? c->table_cap * 2 : 16;
    while (cap < c->table_len + extra)
        cap *= 2;
    node **t = realloc(c->table, sizeof(node *) * (size_t)cap);
    if (!t) return 0;
    c->table = t;
    int32_t *f = realloc(c->free_ids, sizeof(int32_t) * (size_t)cap);
    if (!f) return 0;
    c->free_ids = f;
    c->table_cap = cap;
    return 1;
}

/* Registers x (room reserved). */
static void node_register(rssm_prefix_cache *c, node *x)
{
    x->id = c->n_free_ids ? c->free_ids[--c->n_free_ids] : c->table_len++;
    x->gen = ++c->next_gen ? c->next_gen : ++c->next_gen;
    c->table[x->id] = x;
    c->n_nodes++;
}

static void node_unregister(rssm_prefix_cache *c, node *x)
{
    if (x == c->last) c->last = NULL;
    c->table[x->id] = NULL;
    c->free_ids[c->n_free_ids++] = x->id;
    c->n_nodes--;
}

static int kids_reserve(node *x, int32_t extra)
{
    if (x->n_kids + extra <= x->cap_kids) return 1;
    int32_t cap = x->cap_kids ? x->cap_kids * 2 : 2;
    while (cap < x->n_kids + extra)
        cap *= 2;
    node **k = realloc(x->kids, sizeof(node *) * (size_t)cap);
    if (!k) return 0;
    x->kids = k;
    x->cap_kids = cap;
    return 1;
}

static node *find_kid(const node *x, int32_t tok)
{
    for (int32_t i = 0; i < x->n_kids; i++)
        if (x->kids[i]->edge[0] == tok) return x->kids[i];
    return NULL;
}

static void replace_kid(node *x, node *old, node *new_)
{
    for (int32_t i = 0; i < x->n_kids; i++)
        if (x->kids[i] == old) x->kids[i] = new_;
}

static void remove_kid(node *x, node *k)
{
    for (int32_t i = 0; i < x->n_kids; i++)
        if (x->kids[i] == k) {
            x->kids[i] = x->kids[--x->n_kids];
            return;
        }
}

/* Tokens a and b share from their start. Blocks are compared with memcmp first, so a long
 * shared run costs a fraction of a nanosecond per token. */
static int32_t common(const int32_t *a, int32_t na, const int32_t *b, int32_t nb)
{
    enum { BLOCK = 64 };
    const int32_t n = na < nb ? na : nb;
    int32_t m = 0;
    while (m + BLOCK <= n && !memcmp(a + m, b + m, BLOCK * sizeof(int32_t)))
        m += BLOCK;
    while (m < n && a[m] == b[m])
        m++;
    return m;
}

/* ---- recency list --------------------------------------------------------------------------- */

static void lru_unlink(rssm_prefix_cache *c, node *x)
{
    if (x->prev)
        x->prev->next = x->next;
    else
        c->mru = x->next;
    if (x->next)
        x->next->prev = x->prev;
    else
        c->lru = x->prev;
    x->prev = x->next = NULL;
}

static void lru_push(rssm_prefix_cache *c, node *x)
{
    x->prev = NULL;
    x->next = c->mru;
    if (c->mru) c->mru->prev = x;
    c->mru = x;
    if (!c->lru) c->lru = x;
}

static void touch(rssm_prefix_cache *c, node *x)
{
    lru_unlink(c, x);
    lru_push(c, x);
}

/* ---- create / free ------------------------------------------------------------------------- */

rssm_status rssm_prefix_cache_create(rssm_pool *snapshot_pool, size_t max_bytes, int32_t max_snapshots,
                                     rssm_prefix_cache **out)
{
    const char *fn = "rssm_prefix_cache_create";
    if (!out) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: out is NULL", fn);
    *out = NULL;
    if (!snapshot_pool) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: snapshot_pool is NULL", fn);
    if (max_snapshots < 0) return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: max_snapshots %d < 0", fn, max_snapshots);
    int64_t allowed = snapshot_pool->n_slots;
    if (max_snapshots > 0 && max_snapshots < allowed) allowed = max_snapshots;
    if (max_bytes > 0 && (int64_t)(max_bytes / snapshot_pool->slot_bytes) < allowed)
        allowed = (int64_t)(max_bytes / snapshot_pool->slot_bytes);
    if (allowed < 1)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: a budget of %zu bytes holds no snapshot of %zu bytes", fn,
                         max_bytes, snapshot_pool->slot_bytes);
    rssm_prefix_cache *c = calloc(1, sizeof *c);
    if (!c) return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    c->pool = snapshot_pool;
    c->allowed = (int32_t)allowed;
    c->max_bytes = max_bytes;
    c->max_snapshots = max_snapshots;
    c->root.snap = -1;
    c->root.id = -1;
    *out = c;
    return RSSM_OK;
}

void rssm_prefix_cache_free(rssm_prefix_cache *cache)
{
    if (!cache) return;
    for (int32_t i = 0; i < cache->table_len; i++) { /* every node but the root */
        node *x = cache->table[i];
        if (!x) continue;
        if (x->snap >= 0) {
            cache->pool->held[x->snap] = RSSM_RT_HELD_USER;
            rssm_pool_release(cache->pool, x->snap);
        }
        node_delete(x);
    }
    free(cache->root.kids);
    free(cache->last_tokens);
    free(cache->table);
    free(cache->free_ids);
    free(cache);
}

/* ---- eviction --------------------------------------------------------------------------------- */

/* Removes x (no snapshot any more) or merges it into its only child, then its parent likewise. */
static void prune(rssm_prefix_cache *c, node *x)
{
    while (x != &c->root && x->snap < 0) {
        node *p = x->parent;
        if (x->n_kids == 0) {
            remove_kid(p, x);
            node_unregister(c, x);
            node_delete(x);
            x = p;
            continue;
        }
        if (x->n_kids == 1) {
            node *k = x->kids[0];
            int32_t *e = malloc(sizeof(int32_t) * (size_t)(x->edge_len + k->edge_len));
            if (!e) return; /* stays uncompressed; still a correct tree */
            memcpy(e, x->edge, sizeof(int32_t) * (size_t)x->edge_len);
            memcpy(e + x->edge_len, k->edge, sizeof(int32_t) * (size_t)k->edge_len);
            free(k->edge);
            k->edge = e;
            k->edge_len += x->edge_len;
            k->parent = p;
            replace_kid(p, x, k);
            node_unregister(c, x);
            node_delete(x);
        }
        return;
    }
}

static int32_t evictable(const rssm_prefix_cache *c)
{
    int32_t n = 0;
    for (const node *x = c->lru; x; x = x->prev)
        n += x->refs == 0;
    return n;
}

static int evict_one(rssm_prefix_cache *c)
{
    node *x = c->lru;
    while (x && x->refs > 0)
        x = x->prev;
    if (!x) return 0;
    lru_unlink(c, x);
    c->pool->held[x->snap] = RSSM_RT_HELD_USER;
    rssm_pool_release(c->pool, x->snap);
    x->snap = -1;
    c->n_snaps--;
    c->evictions++;
    prune(c, x);
    return 1;
}

rssm_status rssm_prefix_cache_evict(rssm_prefix_cache *cache, int32_t count, int32_t *evicted)
{
    if (!cache) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_prefix_cache_evict: cache is NULL");
    if (count < 0) return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "rssm_prefix_cache_evict: count %d < 0", count);
    int32_t n = 0;
    while (n < count && evict_one(cache))
        n++;
    if (evicted) *evicted = n;
    return RSSM_OK;
}

/* ---- insert ------------------------------------------------------------------------------------- */

static rssm_status check_tokens(const char *fn, const int32_t *tokens, int32_t n, int32_t min_n)
{
    if (n < min_n || n > (1 << 30))
        return rssm_fail(RSSM_ERROR_BAD_TOKENS, "%s: n = %d tokens (need >= %d)", fn, n, min_n);
    if (n > 0 && !tokens) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: tokens is NULL", fn);
    return RSSM_OK;
}

static int same_shape(const rssm_pool *a, const rssm_pool *b) { return a->ctx == b->ctx && rssm_rt_same_layers(a, b); }

/* Where tokens[0..n) leads: the deepest node `at` whose path is a prefix of tokens
 * (depth d), and if d < n the child `kid` that shares m < its edge length tokens (or NULL).
 * The walk starts from the last insert's path where tokens share it (snapshots of one sequence,
 * shortest or longest first, cost a compare of their tokens and a few steps). */
static void descend(const rssm_prefix_cache *c, const int32_t *tokens, int32_t n, node **at, int32_t *d, node **kid,
                    int32_t *m)
{
    node *x = (node *)&c->root;
    if (c->last) { /* the deepest node on the last insert's path that is a prefix of tokens */
        const int32_t shared = common(c->last_tokens, c->last_n, tokens, n);
        x = c->last;
        while (x->depth > shared)
            x = x->parent;
    }
    int32_t depth = x->depth;
    *kid = NULL;
    *m = 0;
    while (depth < n) {
        node *k = find_kid(x, tokens[depth]);
        if (!k) break;
        const int32_t mm = common(k->edge, k->edge_len, tokens + depth, n - depth);
        if (mm < k->edge_len) {
            *kid = k;
            *m = mm;
            break;
        }
        x = k;
        depth += mm;
    }
    *at = x;
    *d = depth;
}

/* Remembers `x`, whose path is tokens[0..n), as the last insert's node (forgotten when there is
 * no room for the tokens: the next insert then starts at the root). */
static void remember(rssm_prefix_cache *c, node *x, const int32_t *tokens, int32_t n)
{
    if (n > c->last_cap) {
        int32_t *t = realloc(c->last_tokens, sizeof(int32_t) * (size_t)n);
        if (!t) {
            c->last = NULL;
            return;
        }
        c->last_tokens = t;
        c->last_cap = n;
    }
    memcpy(c->last_tokens, tokens, sizeof(int32_t) * (size_t)n);
    c->last_n = n;
    c->last = x;
}

/* rssm_prefix_cache_insert (async 0) and rssm_prefix_cache_insert_async (async 1: the copy is
 * ordered after `stream`'s work so far and `stream`'s later work after the copy, by device-side
 * event waits; nothing waits on the host) */
static rssm_status insert(rssm_prefix_cache *cache, const int32_t *tokens, int32_t n, rssm_pool *src_pool,
                          int32_t src_slot, uint32_t source, int async, void *stream)
{
    const char *fn = async ? "rssm_prefix_cache_insert_async" : "rssm_prefix_cache_insert";
    if (!cache || !src_pool) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: cache or src_pool is NULL", fn);
    rssm_status st = check_tokens(fn, tokens, n, 1);
    if (st != RSSM_OK) return st;
    if (source != RSSM_SNAPSHOT_CHECKPOINT && source != RSSM_SNAPSHOT_MATERIALIZE)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: unknown snapshot source %u", fn, source);
    if ((st = rssm_rt_check_user(fn, src_pool, src_slot, "source slot")) != RSSM_OK) return st;
    if (!same_shape(src_pool, cache->pool))
        return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: the source pool has another context or other layers", fn);
    node *at, *kid;
    int32_t d, m;
    descend(cache, tokens, n, &at, &d, &kid, &m);
    if (d == n && at->snap >= 0) { /* already cached */
        touch(cache, at);
        remember(cache, at, tokens, n);
        return RSSM_OK;
    }
    /* room: evict only when enough unlocked snapshots exist to make it */
    int32_t need = cache->n_snaps + 1 - cache->allowed;
    if (cache->pool->n_free == 0 && need < 1) need = 1;
    if (need > 0 && evictable(cache) < need)
        return rssm_fail(RSSM_ERROR_POOL_FULL, "%s: no room for a snapshot (%d held, %d locked, pool %d free)", fn,
                         cache->n_snaps, cache->n_snaps - evictable(cache), cache->pool->n_free);
    /* eviction may reshape the tree */
    for (int32_t i = 0; i < need; i++)
        evict_one(cache);
    if (need > 0) descend(cache, tokens, n, &at, &d, &kid, &m);
    /* allocate everything first; a split keeps kid's edge buffer for the upper node (mid) and
     * copies only the tail that stays with kid */
    node *mid = NULL, *leaf = NULL;
    int32_t *tail = NULL;
    const int split = d < n && kid != NULL;
    const int need_leaf = d < n && (!split || d + m < n);
    int ok = table_reserve(cache, 2);
    if (ok && split) ok = (mid = node_new(NULL, 0)) != NULL;
    if (ok && split) ok = (tail = malloc(sizeof(int32_t) * (size_t)(kid->edge_len - m))) != NULL;
    if (ok && need_leaf) {
        const int32_t off = split ? d + m : d;
        ok = (leaf = node_new(tokens + off, n - off)) != NULL;
    }
    if (ok && need_leaf && !split) ok = kids_reserve(at, 1);
    if (!ok) {
        if (mid) node_delete(mid);
        if (leaf) node_delete(leaf);
        free(tail);
        return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    }
    int32_t slot;
    if ((st = rssm_rt_acquire_uninit(cache->pool, &slot)) == RSSM_OK) { /* overwritten by the copy */
        rssm_context *ctx = rssm_pool_context(cache->pool);
        if (async) st = rssm_dev_order_after(ctx, stream); /* the copy reads what `stream` wrote */
        if (st == RSSM_OK)
            st = rssm_rt_copy(src_pool, src_slot, cache->pool, slot, source == RSSM_SNAPSHOT_MATERIALIZE, !async);
        /* `stream` may overwrite the source only after the copy has read it */
        if (st == RSSM_OK && async) st = rssm_dev_order_before(ctx, stream);
        if (st != RSSM_OK)
            rssm_pool_release(cache->pool, slot);
        else
            cache->pool->held[slot] = RSSM_RT_HELD_CACHE;
    }
    if (st != RSSM_OK) {
        if (mid) node_delete(mid);
        if (leaf) node_delete(leaf);
        free(tail);
        return st;
    }
    /* link: nothing below can fail */
    node *target = at;
    if (split) {
        node_register(cache, mid);
        memcpy(tail, kid->edge + m, sizeof(int32_t) * (size_t)(kid->edge_len - m));
        free(mid->edge);
        mid->edge = kid->edge;
        mid->edge_len = m;
        mid->depth = d + m;
        mid->parent = at;
        replace_kid(at, kid, mid);
        kid->edge = tail;
        kid->edge_len -= m;
        kid->parent = mid;
        mid->kids[mid->n_kids++] = kid;
        target = mid;
    }
    if (leaf) {
        node_register(cache, leaf);
        leaf->depth = n;
        leaf->parent = target;
        target->kids[target->n_kids++] = leaf;
        target = leaf;
    }
    target->snap = slot;
    target->refs = 0;
    lru_push(cache, target);
    cache->n_snaps++;
    cache->inserts++;
    remember(cache, target, tokens, n);
    return RSSM_OK;
}

rssm_status rssm_prefix_cache_insert(rssm_prefix_cache *cache, const int32_t *tokens, int32_t n, rssm_pool *src_pool,
                                     int32_t src_slot, uint32_t source)
{
    return insert(cache, tokens, n, src_pool, src_slot, source, 0, NULL);
}

rssm_status rssm_prefix_cache_insert_async(rssm_prefix_cache *cache, const int32_t *tokens, int32_t n,
                                           rssm_pool *src_pool, int32_t src_slot, uint32_t source, void *stream)
{
    return insert(cache, tokens, n, src_pool, src_slot, source, 1, stream);
}

/* ---- match / unlock -------------------------------------------------------------------------------- */

rssm_status rssm_prefix_cache_match(rssm_prefix_cache *cache, const int32_t *tokens, int32_t n, rssm_pool *dst_pool,
                                    int32_t dst_slot, int32_t *matched, uint64_t *lock)
{
    const char *fn = "rssm_prefix_cache_match";
    if (!cache || !matched) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: cache or matched is NULL", fn);
    rssm_status st = check_tokens(fn, tokens, n, 0);
    if (st != RSSM_OK) return st;
    if (dst_pool) {
        if ((st = rssm_rt_check_user(fn, dst_pool, dst_slot, "destination slot")) != RSSM_OK) return st;
        if (!same_shape(dst_pool, cache->pool))
            return rssm_fail(RSSM_ERROR_BAD_SHAPE, "%s: the destination pool has another context or other layers", fn);
    }
    /* deepest node on the path with a snapshot */
    node *x = &cache->root, *best = NULL;
    int32_t depth = 0;
    while (depth < n) {
        node *k = find_kid(x, tokens[depth]);
        if (!k || common(k->edge, k->edge_len, tokens + depth, n - depth) < k->edge_len) break;
        x = k;
        depth += k->edge_len;
        if (x->snap >= 0) best = x;
    }
    if (!best) {
        cache->misses++;
        *matched = 0;
        if (lock) *lock = 0;
        return RSSM_OK;
    }
    if (dst_pool && (st = rssm_rt_copy(cache->pool, best->snap, dst_pool, dst_slot, 0, 1)) != RSSM_OK) return st;
    touch(cache, best);
    cache->hits++;
    *matched = best->depth;
    if (lock) {
        best->refs++;
        *lock = ((uint64_t)best->gen << 32) | (uint64_t)(best->id + 1);
    }
    return RSSM_OK;
}

rssm_status rssm_prefix_cache_unlock(rssm_prefix_cache *cache, uint64_t lock)
{
    const char *fn = "rssm_prefix_cache_unlock";
    if (!cache) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: cache is NULL", fn);
    const int64_t id = (int64_t)(lock & 0xffffffffu) - 1;
    const uint32_t gen = (uint32_t)(lock >> 32);
    node *x = (id >= 0 && id < cache->table_len) ? cache->table[id] : NULL;
    if (!x || x->gen != gen || gen == 0)
        return rssm_fail(RSSM_ERROR_NOT_FOUND, "%s: handle %#llx names no entry of this cache", fn,
                         (unsigned long long)lock);
    if (x->refs <= 0)
        return rssm_fail(RSSM_ERROR_NOT_FOUND, "%s: handle %#llx is not locked (unlocked twice?)", fn,
                         (unsigned long long)lock);
    x->refs--;
    return RSSM_OK;
}

/* ---- stats and validation --------------------------------------------------------------------------- */

rssm_status rssm_prefix_cache_get_stats(const rssm_prefix_cache *cache, rssm_prefix_cache_stats *out)
{
    if (!cache || !out) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_prefix_cache_get_stats: cache or out is NULL");
    memset(out, 0, sizeof *out);
    out->nodes = cache->n_nodes;
    out->snapshots = cache->n_snaps;
    out->bytes = (size_t)cache->n_snaps * cache->pool->slot_bytes;
    out->hits = cache->hits, out->misses = cache->misses;
    out->inserts = cache->inserts, out->evictions = cache->evictions;
    for (int32_t i = 0; i < cache->table_len; i++) { /* the root holds no lock */
        const node *x = cache->table[i];
        if (!x) continue;
        out->locked += x->refs > 0;
        out->locks += x->refs;
    }
    return RSSM_OK;
}

#define BAD(...) rssm_fail(RSSM_ERROR_BAD_ARGUMENT, __VA_ARGS__)

/* The invariants of one node and its links; seen[] marks snapshot slots. A registered node
 * whose parent is registered (or the root), that is among its parent's children and whose depth
 * is its parent's plus a non-empty edge lies on a path from the root: depths only grow along
 * parent links, so they cannot loop. */
static rssm_status check_node(const rssm_prefix_cache *c, const node *x, uint8_t *seen, int32_t *snaps, int64_t *kids)
{
    const char *fn = "rssm_prefix_cache_validate";
    if (x != &c->root) {
        if (x->edge_len < 1) return BAD("%s: node %d has an empty edge", fn, x->id);
        const node *p = x->parent;
        if (!p || (p != &c->root && (p->id < 0 || p->id >= c->table_len || c->table[p->id] != p)))
            return BAD("%s: node %d has no registered parent", fn, x->id);
        if (x->depth != p->depth + x->edge_len)
            return BAD("%s: node %d depth %d does not follow its parent", fn, x->id, x->depth);
        int32_t listed = 0;
        for (int32_t i = 0; i < p->n_kids; i++)
            listed += p->kids[i] == x;
        if (listed != 1) return BAD("%s: node %d is listed %d times among its parent's children", fn, x->id, listed);
        if (x->gen == 0) return BAD("%s: node %d has no generation", fn, x->id);
        if (x->snap < 0 && x->n_kids < 2)
            return BAD("%s: node %d has no snapshot and %d children (not compressed)", fn, x->id, x->n_kids);
    }
    if (x->refs < 0 || (x->refs > 0 && x->snap < 0)) return BAD("%s: node %d has lock count %d", fn, x->id, x->refs);
    if (x->snap >= 0) {
        (*snaps)++;
        if (x->snap >= c->pool->n_slots || c->pool->held[x->snap] != RSSM_RT_HELD_CACHE)
            return BAD("%s: snapshot slot %d is not held by the cache", fn, x->snap);
        if (seen[x->snap]++) return BAD("%s: snapshot slot %d is used twice", fn, x->snap);
    }
    *kids += x->n_kids;
    for (int32_t i = 0; i < x->n_kids; i++) {
        const node *k = x->kids[i];
        if (k->parent != x) return BAD("%s: child %d of node %d has another parent", fn, k->id, x->id);
        for (int32_t j = 0; j < i; j++)
            if (x->kids[j]->edge[0] == k->edge[0])
                return BAD("%s: node %d has two children on token %d", fn, x->id, k->edge[0]);
    }
    return RSSM_OK;
}

rssm_status rssm_prefix_cache_validate(const rssm_prefix_cache *cache)
{
    const char *fn = "rssm_prefix_cache_validate";
    if (!cache) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: cache is NULL", fn);
    const node *r = &cache->root;
    if (r->edge_len != 0 || r->depth != 0 || r->snap >= 0 || r->parent) return BAD("%s: bad root", fn);
    uint8_t *seen = calloc((size_t)cache->pool->n_slots, 1);
    if (!seen) return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    int32_t nodes = 0, snaps = 0;
    int64_t kids = 0; /* every node but the root is one child of one node */
    rssm_status st = check_node(cache, r, seen, &snaps, &kids);
    for (int32_t i = 0; i < cache->table_len && st == RSSM_OK; i++) {
        const node *x = cache->table[i];
        if (!x) continue;
        nodes++;
        if (x->id != i) st = BAD("%s: table entry %d holds node %d", fn, i, x->id);
        if (st == RSSM_OK) st = check_node(cache, x, seen, &snaps, &kids);
    }
    free(seen);
    if (st != RSSM_OK) return st;
    if (nodes != cache->n_nodes || snaps != cache->n_snaps || kids != nodes)
        return BAD("%s: counted %d nodes (%lld as children), %d snapshots; recorded %d, %d", fn, nodes, (long long)kids,
                   snaps, cache->n_nodes, cache->n_snaps);
    int32_t n = 0;
    for (const node *x = cache->mru; x; x = x->next, n++) {
        if (x->snap < 0) return BAD("%s: node %d on the recency list has no snapshot", fn, x->id);
        if ((x->next ? x->next->prev : cache->lru) != x)
            return BAD("%s: recency list links broken at node %d", fn, x->id);
        if (n > cache->n_snaps) return BAD("%s: recency list longer than the snapshot count", fn);
    }
    if (n != cache->n_snaps) return BAD("%s: recency list has %d entries, %d snapshots", fn, n, cache->n_snaps);
    if (cache->n_snaps > cache->allowed)
        return BAD("%s: %d snapshots exceed the budget of %d", fn, cache->n_snaps, cache->allowed);
    return RSSM_OK;
}
