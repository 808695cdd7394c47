/*
 * errors.h — how the library reports a failure: a status and a sentence for rssm_last_error().
 */
#ifndef RSSM_ERRORS_H
#define RSSM_ERRORS_H

#include "replayssm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Records the message for rssm_last_error() on this thread and returns `status`. */
rssm_status rssm_fail(rssm_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif /* RSSM_ERRORS_H */
