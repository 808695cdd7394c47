/*
 * common.h — shared by the test programs: a pass/fail tally that prints one line per case
 * and the closing "N passed, N failed" line, and the devices every test runs on.
 */
#ifndef RSSM_TEST_COMMON_H
#define RSSM_TEST_COMMON_H

#include <stdarg.h>
#include <stdio.h>

#include "harness.h"

static int t_passed, t_failed, t_skipped;

/* rc: RH_OK with ok deciding, RH_UNSUPPORTED (skip) or RH_FAIL (rh_msg()). */
static void t_case(int rc, int ok, const char *fmt, ...)
{
    char name[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    if (rc == RH_UNSUPPORTED) {
        t_skipped++;
        printf("SKIP %s (%s)\n", name, rh_msg());
    } else if (rc == RH_OK && ok) {
        t_passed++;
        printf("PASS %s\n", name);
    } else {
        t_failed++;
        printf("FAIL %s%s%s\n", name, rc ? ": " : "", rc ? rh_msg() : "");
    }
    fflush(stdout);
}

/* The closing line; the exit status: 1 on any failure, RH_EXIT_SKIP when every case skipped
 * (nothing ran), else 0. */
static int t_end(void)
{
    if (t_skipped)
        printf("%d passed, %d failed, %d skipped\n", t_passed, t_failed, t_skipped);
    else
        printf("%d passed, %d failed\n", t_passed, t_failed);
    return t_failed ? 1 : t_passed == 0 && t_skipped > 0 ? RH_EXIT_SKIP : 0;
}

#endif
