/*
 * errors.c — statuses and their names, the per-thread last error, the version.
 */
#include <stdarg.h>
#include <stdio.h>

#include "core/errors.h"

static _Thread_local char last_error[512];

rssm_status rssm_fail(rssm_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

const char *rssm_last_error(void) { return last_error; }

const char *rssm_status_name(rssm_status status)
{
    static const char *const names[RSSM_STATUS_COUNT] = {
        "RSSM_OK",
        "RSSM_ERROR_NULL_POINTER",
        "RSSM_ERROR_BAD_SHAPE",
        "RSSM_ERROR_BAD_DTYPE",
        "RSSM_ERROR_BAD_SLOT",
        "RSSM_ERROR_BAD_RING_LEN",
        "RSSM_ERROR_BAD_TOKENS",
        "RSSM_ERROR_MISALIGNED",
        "RSSM_ERROR_BAD_ARGUMENT",
        "RSSM_ERROR_UNSUPPORTED",
        "RSSM_ERROR_DEVICE",
        "RSSM_ERROR_OUT_OF_MEMORY",
        "RSSM_ERROR_POOL_FULL",
        "RSSM_ERROR_BAD_FORMAT",
        "RSSM_ERROR_CHECKSUM",
        "RSSM_ERROR_NOT_FOUND",
    };
    if ((unsigned)status >= RSSM_STATUS_COUNT) return "RSSM_ERROR_UNKNOWN";
    return names[status];
}

unsigned rssm_version_number(void) { return RSSM_VERSION_NUMBER; }

#define RSSM_STR2(x) #x
#define RSSM_STR(x) RSSM_STR2(x)

const char *rssm_version_string(void)
{
    return RSSM_STR(RSSM_VERSION_MAJOR) "." RSSM_STR(RSSM_VERSION_MINOR) "." RSSM_STR(RSSM_VERSION_PATCH);
}
