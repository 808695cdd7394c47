/*
 * vectors.c — loader of the golden-vector text format (one item per line; tensors as
 * "tensor NAME [d0,d1,...] v0 v1 ..."). Read token by token: a tensor line can be megabytes.
 */
#include "vectors.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

static int parse_shape(const char *s, rv_tensor *t)
{
    if (*s++ != '[') return -1;
    t->ndim = 0;
    t->n = 1;
    while (*s && *s != ']') {
        char *end;
        long long d = strtoll(s, &end, 10);
        if (end == s || d < 0 || t->ndim >= 8) return -1;
        t->dims[t->ndim++] = d;
        t->n *= d;
        s = end;
        if (*s == ',') s++;
    }
    return *s == ']' ? 0 : -1;
}

static void free_case(rv_case *c)
{
    for (int i = 0; i < c->ntensors; i++)
        free(c->t[i].data);
    c->ntensors = 0;
}

int rv_load(const char *path, rv_file *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f) return fail(err, errlen, "cannot open %s", path);
    char w[256];
    rv_case *cur = NULL;
    int cap = 0, rc = 0;
    while (fscanf(f, "%255s", w) == 1) {
        if (w[0] == '#') { /* comment: skip the rest of the line */
            int ch;
            while ((ch = fgetc(f)) != EOF && ch != '\n') {
            }
            continue;
        }
        if (!strcmp(w, "case")) {
            if (out->ncases == cap) {
                cap = cap ? 2 * cap : 8;
                rv_case *nc = realloc(out->cases, sizeof *nc * cap);
                if (!nc) {
                    rc = fail(err, errlen, "out of memory");
                    break;
                }
                out->cases = nc;
            }
            cur = &out->cases[out->ncases++];
            memset(cur, 0, sizeof *cur);
            if (fscanf(f, "%63s", cur->name) != 1) {
                rc = fail(err, errlen, "case without a name");
                break;
            }
            continue;
        }
        if (!cur) {
            rc = fail(err, errlen, "'%s' before the first case", w);
            break;
        }
        if (!strcmp(w, "end")) {
            cur = NULL;
            continue;
        }
        if (!strcmp(w, "gate")) {
            char g[16];
            if (fscanf(f, "%15s", g) != 1) {
                rc = fail(err, errlen, "%s: gate", cur->name);
                break;
            }
            if (!strcmp(g, "gdn"))
                cur->gate = RSSM_GATE_GDN;
            else if (!strcmp(g, "kda"))
                cur->gate = RSSM_GATE_KDA;
            else {
                rc = fail(err, errlen, "%s: unknown gate %s", cur->name, g);
                break;
            }
            continue;
        }
        if (!strcmp(w, "lower_bound")) {
            char v[64];
            if (fscanf(f, "%63s", v) != 1) {
                rc = fail(err, errlen, "%s: lower_bound", cur->name);
                break;
            }
            cur->has_lower_bound = strcmp(v, "none") != 0;
            cur->lower_bound = cur->has_lower_bound ? strtod(v, NULL) : 0.0;
            continue;
        }
        if (!strcmp(w, "scale")) {
            if (fscanf(f, "%lf", &cur->scale) != 1) {
                rc = fail(err, errlen, "%s: scale", cur->name);
                break;
            }
            continue;
        }
        int *ip = !strcmp(w, "B")        ? &cur->B
                  : !strcmp(w, "T")      ? &cur->T
                  : !strcmp(w, "H")      ? &cur->H
                  : !strcmp(w, "HV")     ? &cur->HV
                  : !strcmp(w, "K")      ? &cur->K
                  : !strcmp(w, "V")      ? &cur->V
                  : !strcmp(w, "l2norm") ? &cur->l2norm
                                         : NULL;
        if (ip) {
            if (fscanf(f, "%d", ip) != 1) {
                rc = fail(err, errlen, "%s: value of %s", cur->name, w);
                break;
            }
            continue;
        }
        if (!strcmp(w, "tensor")) {
            if (cur->ntensors == RV_MAX_TENSORS) {
                rc = fail(err, errlen, "%s: too many tensors", cur->name);
                break;
            }
            rv_tensor *t = &cur->t[cur->ntensors];
            memset(t, 0, sizeof *t);
            char shape[128];
            if (fscanf(f, "%31s %127s", t->name, shape) != 2 || parse_shape(shape, t)) {
                rc = fail(err, errlen, "%s: bad tensor header", cur->name);
                break;
            }
            t->data = malloc(sizeof(double) * (size_t)(t->n ? t->n : 1));
            if (!t->data) {
                rc = fail(err, errlen, "out of memory");
                break;
            }
            cur->ntensors++;
            for (int64_t i = 0; i < t->n; i++)
                if (fscanf(f, "%lf", &t->data[i]) != 1) {
                    rc = fail(err, errlen, "%s: tensor %s has fewer than %lld values", cur->name, t->name,
                              (long long)t->n);
                    break;
                }
            if (rc) break;
            continue;
        }
        rc = fail(err, errlen, "%s: unknown item '%s'", cur->name, w);
        break;
    }
    fclose(f);
    if (!rc && cur) rc = fail(err, errlen, "%s: no 'end'", cur->name);
    if (!rc && out->ncases == 0) rc = fail(err, errlen, "%s holds no case", path);
    if (rc) rv_free(out);
    return rc;
}

void rv_free(rv_file *f)
{
    for (int i = 0; i < f->ncases; i++)
        free_case(&f->cases[i]);
    free(f->cases);
    memset(f, 0, sizeof *f);
}

const double *rv_get(const rv_case *c, const char *name, int64_t n)
{
    for (int i = 0; i < c->ntensors; i++)
        if (!strcmp(c->t[i].name, name) && (n < 0 || c->t[i].n == n)) return c->t[i].data;
    return NULL;
}
