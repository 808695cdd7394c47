/*
 * ref.h — host helpers shared by the reference and the CPU back end.
 */
#ifndef RSSM_REF_H
#define RSSM_REF_H

#include "core/backend.h"

/* Applies the cursor rules of params.h row by row on host memory. */
rssm_status rssm_host_cursor(rssm_context *ctx, const rssm_cursor_params *p, void *stream);

#endif /* RSSM_REF_H */
