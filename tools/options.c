/*
 * options.c — the table-driven, strict option parser of the command line (options.h says the
 * rules) and the tuning switches every subcommand takes.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

const cli_choice cli_devices[] = {{"cpu", RSSM_DEVICE_CPU},
                                  {"cuda", RSSM_DEVICE_CUDA},
                                  {"reference", RSSM_DEVICE_REFERENCE},
                                  {"ref", RSSM_DEVICE_REFERENCE},
                                  {NULL, 0}};
const cli_choice cli_run_devices[] = {{"cpu", RSSM_DEVICE_CPU}, {"cuda", RSSM_DEVICE_CUDA}, {NULL, 0}};
const cli_choice cli_dtypes[] = {{"f32", RSSM_DTYPE_F32}, {"bf16", RSSM_DTYPE_BF16}, {NULL, 0}};

void cli_choices_from_names(const char *const *names, cli_choice *out, int max)
{
    int n = 0;
    for (; names[n] && n < max; n++)
        out[n].name = names[n], out[n].value = n;
    out[n].name = NULL, out[n].value = 0;
}

/* ---- the table's constructors ------------------------------------------------------------------- */

static cli_opt opt(const char *name, cli_kind kind, void *dst)
{
    cli_opt o;
    memset(&o, 0, sizeof o);
    o.name = name, o.kind = kind, o.dst = dst;
    return o;
}

cli_opt cli_flag(const char *name, int *dst) { return opt(name, CLI_FLAG, dst); }

cli_opt cli_int(const char *name, int *dst, long long lo, long long hi)
{
    cli_opt o = opt(name, CLI_INT, dst);
    o.lo = lo, o.hi = hi;
    return o;
}

cli_opt cli_int_or(const char *name, int *dst, long long lo, long long hi, const cli_choice *words)
{
    cli_opt o = cli_int(name, dst, lo, hi);
    o.choices = words;
    return o;
}

cli_opt cli_u64(const char *name, uint64_t *dst) { return opt(name, CLI_U64, dst); }

cli_opt cli_num(const char *name, double *dst, double hi)
{
    cli_opt o = opt(name, CLI_NUM, dst);
    o.num_hi = hi;
    return o;
}

cli_opt cli_choice_of(const char *name, int *dst, const cli_choice *choices)
{
    cli_opt o = opt(name, CLI_CHOICE, dst);
    o.choices = choices;
    return o;
}

cli_opt cli_str(const char *name, const char **dst) { return opt(name, CLI_STR, (void *)dst); }

cli_opt cli_list(const char *name, int *dst, int max, int *count, long long lo, long long hi)
{
    cli_opt o = cli_int(name, dst, lo, hi);
    o.kind = CLI_LIST, o.max = max, o.count = count;
    return o;
}

/* ---- values ---------------------------------------------------------------------------------------- */

int cli_error(const cli_command *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "replayssm %s: ", cmd->name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return CLI_EXIT_USAGE;
}

/* The whole of s as a decimal integer (a sign only when `sign`); 0 when it is not one. */
static int whole_integer(const char *s, int sign, long long *out)
{
    const char *d = sign && (*s == '-' || *s == '+') ? s + 1 : s;
    if (*d < '0' || *d > '9') return 0;
    char *end;
    errno = 0;
    const long long v = strtoll(s, &end, 10);
    if (*end || errno) return 0;
    *out = v;
    return 1;
}

static int choice_value(const cli_choice *c, const char *s, int *out)
{
    for (; c && c->name; c++)
        if (!strcmp(c->name, s)) return *out = c->value, 1;
    return 0;
}

/* "a, b, c" of the choices' names into buf. */
static const char *choice_names(const cli_choice *c, char *buf, size_t n)
{
    size_t w = 0;
    buf[0] = 0;
    for (int i = 0; c && c[i].name && w < n; i++)
        w += snprintf(buf + w, n - w, "%s%s", i ? ", " : "", c[i].name);
    return buf;
}

static int parse_int(const cli_command *cmd, const cli_opt *o, const char *v)
{
    long long x;
    if (choice_value(o->choices, v, (int *)o->dst)) return 0;
    if (whole_integer(v, o->lo < 0, &x) && x >= o->lo && x <= o->hi) return *(int *)o->dst = (int)x, 0;
    char words[256];
    return cli_error(cmd, "%s: '%s' is not an integer in [%lld, %lld]%s%s", o->name, v, o->lo, o->hi,
                     o->choices ? " or one of " : "", choice_names(o->choices, words, sizeof words));
}

static int parse_u64(const cli_command *cmd, const cli_opt *o, const char *v)
{
    char *end;
    errno = 0;
    const unsigned long long x = v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
    if (v[0] < '0' || v[0] > '9' || *end || errno)
        return cli_error(cmd, "%s: '%s' is not an integer in [0, %llu]", o->name, v, (unsigned long long)UINT64_MAX);
    *(uint64_t *)o->dst = x;
    return 0;
}

static int parse_num(const cli_command *cmd, const cli_opt *o, const char *v)
{
    char *end;
    errno = 0;
    const double x = (v[0] >= '0' && v[0] <= '9') || v[0] == '.' ? strtod(v, &end) : NAN;
    if (!(x > 0 && x <= o->num_hi) || *end || errno)
        return cli_error(cmd, "%s: '%s' is not a number in (0, %g]", o->name, v, o->num_hi);
    *(double *)o->dst = x;
    return 0;
}

static int parse_list(const cli_command *cmd, const cli_opt *o, const char *v)
{
    int *out = o->dst, n = 0, ok = 1;
    for (const char *p = v; ok; p++) {
        const char *comma = strchr(p, ',');
        const size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[32];
        long long x = 0;
        ok = n < o->max && len > 0 && len < sizeof item;
        if (ok) memcpy(item, p, len), item[len] = 0;
        ok = ok && whole_integer(item, o->lo < 0, &x) && x >= o->lo && x <= o->hi;
        if (ok) out[n++] = (int)x;
        if (!comma) break;
        p = comma;
    }
    if (!ok)
        return cli_error(cmd, "%s: '%s' is not a comma-separated list of at most %d integers in [%lld, %lld]", o->name,
                         v, o->max, o->lo, o->hi);
    *o->count = n;
    return 0;
}

/* Stores value v of option o; 0, or the exit status after an error. */
static int set_value(const cli_command *cmd, const cli_opt *o, const char *v)
{
    char names[256];
    switch (o->kind) {
    case CLI_INT:
        return parse_int(cmd, o, v);
    case CLI_U64:
        return parse_u64(cmd, o, v);
    case CLI_NUM:
        return parse_num(cmd, o, v);
    case CLI_LIST:
        return parse_list(cmd, o, v);
    case CLI_CHOICE:
        if (choice_value(o->choices, v, (int *)o->dst)) return 0;
        return cli_error(cmd, "%s: '%s' is not one of %s", o->name, v, choice_names(o->choices, names, sizeof names));
    case CLI_STR:
        *(const char **)o->dst = v;
        return 0;
    case CLI_FLAG:
        break;
    }
    return cli_error(cmd, "%s takes no value", o->name);
}

/* ---- the tuning switches ------------------------------------------------------------------------- */

static const cli_choice split_choices[] = {{"0", 0}, {"1", 1}, {"2", 2}, {"4", 4}, {NULL, 0}};
static const cli_choice producer_choices[] = {{"-1", -1}, {"1", 1}, {"2", 2}, {"3", 3}, {NULL, 0}};
static const cli_choice stream_choices[] = {{"-1", -1}, {"0", 0},   {"4", 4}, {"8", 8},
                                            {"16", 16}, {"32", 32}, {NULL, 0}};

enum { N_SWITCHES = 11 };

/* The switches of rssm_context_params (replayssm.h says what each does); ranges as the library's. */
static void switch_table(rssm_context_params *p, cli_opt *t)
{
    t[0] = cli_int("--cpu-simd", &p->cpu_simd, 0, 1);
    t[1] = cli_int("--cuda-fast", &p->cuda_fast, 0, 1);
    t[2] = cli_choice_of("--cuda-split", &p->cuda_split, split_choices);
    t[3] = cli_int("--cuda-prefetch", &p->cuda_prefetch, -1, 4);
    t[4] = cli_int("--cuda-ring-read", &p->cuda_ring_read, -1, 1);
    t[5] = cli_int("--cuda-pipeline", &p->cuda_pipeline, -1, 1);
    t[6] = cli_int("--cuda-pipeline-balance", &p->cuda_pipeline_balance, -1, 1);
    t[7] = cli_int("--cuda-prefill", &p->cuda_prefill, -1, 3);
    t[8] = cli_int("--cuda-pdl", &p->cuda_pdl, -1, 3);
    t[9] = cli_choice_of("--cuda-stream", &p->cuda_stream, stream_choices);
    t[10] = cli_choice_of("--cuda-pipeline-producers", &p->cuda_pipeline_producers, producer_choices);
}

void cli_switches_usage(FILE *f)
{
    fprintf(f, "  --cpu-simd 0|1              CPU: SIMD kernels (1) or the portable ones (0)\n"
               "  --cuda-fast 0|1             CUDA: the K = V = 128 kernels where they apply (1) or the general one\n"
               "  --cuda-split 0|1|2|4        CUDA fast kernels: CTAs per head (0 = by batch size)\n"
               "  --cuda-prefetch -1..4       CUDA fast kernels: L2 prefetch distance in half waves (0 = off)\n"
               "  --cuda-ring-read -1|0|1     CUDA fast kernels: read the whole ring ahead of the cursor\n"
               "  --cuda-pipeline -1|0|1      CUDA replay and packed decode on the persistent pipeline\n"
               "  --cuda-pipeline-balance -1|0|1  the pipeline deals folding rows first\n"
               "  --cuda-pipeline-producers -1|1|2|3  the pipeline's warps that read ahead\n"
               "  --cuda-prefill -1..3        CUDA prefill lanes (0 one token at a time, 1 narrow, 2 wide, 3 sliced)\n"
               "  --cuda-pdl -1..3            CUDA fast kernels: programmatic dependent launch (2, 3: later trigger)\n"
               "  --cuda-stream -1|0|4|8|16|32  CUDA packed decode streamed by rows (that many a warp) or not (0)\n"
               "(-1 = by the measured rule)\n");
}

/* ---- the parse --------------------------------------------------------------------------------------- */

static const cli_opt *find(const cli_opt *opts, const cli_opt *sw, const char *name, size_t len)
{
    for (const cli_opt *o = opts; o->name; o++)
        if (strlen(o->name) == len && !strncmp(o->name, name, len)) return o;
    for (int i = 0; i < N_SWITCHES; i++)
        if (strlen(sw[i].name) == len && !strncmp(sw[i].name, name, len)) return &sw[i];
    return NULL;
}

int cli_parse(const cli_command *cmd, int argc, char **argv, const cli_opt *opts, rssm_context_params *params)
{
    cli_opt sw[N_SWITCHES];
    switch_table(params, sw);
    /* a diagnostic build's pipeline timeline (cmake -DRSSM_PIPE_TRACE=ON) goes where this names */
    params->pipeline_trace_file = getenv("RSSM_PIPE_TRACE_FILE");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            cmd->usage(stdout);
            return CLI_EXIT_OK;
        }
        const char *eq = strncmp(a, "--", 2) ? NULL : strchr(a, '=');
        const cli_opt *o = find(opts, sw, a, eq ? (size_t)(eq - a) : strlen(a));
        if (!o)
            return cli_error(cmd, "%s '%s' (replayssm %s --help lists the options)",
                             strncmp(a, "-", 1) ? "unexpected argument" : "unknown option", a, cmd->name);
        if (o->kind == CLI_FLAG) {
            if (eq) return cli_error(cmd, "%s takes no value", o->name);
            *(int *)o->dst = 1;
            continue;
        }
        /* a value never starts with "--": `--vectors --quick` lacks the value */
        const char *v = eq ? eq + 1 : i + 1 < argc && strncmp(argv[i + 1], "--", 2) ? argv[++i] : NULL;
        if (!v || !*v) return cli_error(cmd, "%s needs a value", o->name);
        const int rc = set_value(cmd, o, v);
        if (rc) return rc;
    }
    return CLI_CONTINUE;
}
