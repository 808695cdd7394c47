/*
 * check.c — `replayssm check`: the equivalence matrix and the golden vectors (testing/check.h)
 * or, with --suite runtime, the runtime suites (testing/runtime_check.h), on one device.
 *
 * The golden vectors run by default when the file the build found (RSSM_DEFAULT_VECTORS, from
 * CMake's RSSM_VECTORS) is there; `--vectors none` turns them off, and the output says which.
 */
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cli.h"
#include "options.h"
#include "runtime_check.h"

#ifndef RSSM_DEFAULT_VECTORS
#define RSSM_DEFAULT_VECTORS ""
#endif

static void usage(FILE *f)
{
    fprintf(f,
            "usage: replayssm check [--device cpu|cuda|reference] [--vectors FILE|none] [--quick] [--strict]\n"
            "                       [--filter S]\n"
            "       replayssm check --suite runtime [--device cpu|cuda|reference]\n"
            "  Runs the equivalence matrix on the device against the float64 reference (one line per\n"
            "  case: PASS/FAIL, max norm-relative error), and every golden vector case through every\n"
            "  decode path (packed, replay at L=1..16, verify windows, prefill then decode).\n"
            "  --device     device under test (default cpu; --suite runtime: reference)\n"
            "  --suite S    ops (default: the kernels against the reference) or runtime (pool,\n"
            "               planner, prefix cache, export/import)\n"
            "  --vectors    golden vector file (default %s%s),\n"
            "               or none\n"
            "  --quick      a smaller matrix (every axis value still appears)\n"
            "  --strict     count cases the device does not support as failures, not skips\n"
            "  --filter S   run only cases whose name contains S\n"
            "Ends with 'N passed, N failed, N skipped'; exit 1 on any failure, 77 when nothing ran because\n"
            "the device is absent (a CUDA device without --strict), else 0.\n",
            *RSSM_DEFAULT_VECTORS ? RSSM_DEFAULT_VECTORS : "none: this build found no vector file",
            *RSSM_DEFAULT_VECTORS ? " when present" : "");
}

static const cli_command cmd = {"check", usage};

/* The golden vectors: the file given, none, or the build's default when it is there (the
 * note says why there are none). */
static void choose_vectors(check_options *o, const char *given)
{
    static char note[sizeof RSSM_DEFAULT_VECTORS + 64];
    if (given && !strcmp(given, "none")) {
        o->vectors_note = "--vectors none";
    } else if (given) {
        o->vectors = given;
    } else if (!*RSSM_DEFAULT_VECTORS) {
        o->vectors_note = "this build found no vector file; --vectors FILE runs one";
    } else if (access(RSSM_DEFAULT_VECTORS, R_OK) == 0) {
        o->vectors = RSSM_DEFAULT_VECTORS;
    } else {
        snprintf(note, sizeof note, "%s is not present", RSSM_DEFAULT_VECTORS);
        o->vectors_note = note;
    }
}

int cli_check(int argc, char **argv)
{
    static const cli_choice suites[] = {{"ops", 0}, {"runtime", 1}, {NULL, 0}};
    check_options o = check_options_default();
    int suite = 0, device = -1;
    const char *vectors = NULL;
    const cli_opt opts[] = {cli_choice_of("--suite", &suite, suites),
                            cli_choice_of("--device", &device, cli_devices),
                            cli_str("--vectors", &vectors),
                            cli_str("--filter", &o.filter),
                            cli_flag("--quick", &o.quick),
                            cli_flag("--strict", &o.strict),
                            CLI_END};
    const int rc = cli_parse(&cmd, argc, argv, opts, &o.params);
    if (rc != CLI_CONTINUE) return rc;
    if (suite == 1) {
        const char *extra = vectors    ? "--vectors"
                            : o.filter ? "--filter"
                            : o.quick  ? "--quick"
                            : o.strict ? "--strict"
                                       : 0;
        if (extra) return cli_error(&cmd, "%s does not apply to --suite runtime", extra);
        return rt_check_run(device < 0 ? RSSM_DEVICE_REFERENCE : (rssm_device)device, &o.params);
    }
    o.device = device < 0 ? RSSM_DEVICE_CPU : (rssm_device)device;
    choose_vectors(&o, vectors);
    return check_run(&o);
}
