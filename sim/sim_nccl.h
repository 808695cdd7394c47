/*
 * sim_nccl.h — NCCL for the tools (`simulate --tp N`, `handoff`): one process per GPU,
 * a communicator per process, all-gather and send/recv on the caller's CUDA stream.
 *
 * Compiled against NCCL when CMake found it (RSSM_SIM_NCCL); otherwise every call fails with
 * "built without NCCL" (sim_nccl_error). NVLink multicast (NVLS) is never used: the launcher
 * sets NCCL_NVLS_ENABLE=0 before any communicator exists.
 * Buffers are device memory on the rank's GPU; counts are bytes. Functions return 0 on success,
 * -1 with a message in sim_nccl_error() on failure.
 */
#ifndef RSSM_SIM_NCCL_H
#define RSSM_SIM_NCCL_H

#include <stddef.h>

#define SIM_NCCL_ID_BYTES 128 /* NCCL_UNIQUE_ID_BYTES */

typedef struct sim_nccl sim_nccl;

/* NULL in a build with the CUDA back end; else why --device cuda cannot run ("no CUDA device
 * was found (...)"). Asks nothing of CUDA, so it is safe before sim_nccl_launch's fork. */
const char *sim_cuda_absent(void);
/* 1 when compiled with NCCL. */
int sim_nccl_built(void);
/* The message of the last failure (this process). */
const char *sim_nccl_error(void);

/* Runs body(rank) for rank 0 .. nranks-1, rank r on GPU r: nranks == 1 in this process;
 * nranks > 1 forks one child per rank before any CUDA call of this process (call this before
 * creating any CUDA context); this process makes the NCCL unique id, sends it through a pipe
 * per child, and supervises: when a rank fails, the others are killed (a rank waiting in a
 * collective for a dead peer would wait forever). Fails with a clear message when fewer than
 * nranks GPUs are visible (counted in a short-lived child, so this process stays CUDA-free).
 * Returns 0 when every rank's body returned 0. */
typedef int (*sim_rank_fn)(int rank, int nranks, const unsigned char *id, void *arg);
int sim_nccl_launch(int nranks, sim_rank_fn body, void *arg);

/* cudaSetDevice(rank), then a communicator of nranks over the id from sim_nccl_launch. */
int sim_nccl_init(int nranks, int rank, const unsigned char *id, sim_nccl **out);
void sim_nccl_free(sim_nccl *c); /* accepts NULL */
int sim_nccl_rank(const sim_nccl *c);
int sim_nccl_size(const sim_nccl *c);

/* recv [nranks][bytes] <- every rank's send [bytes] (ncclAllGather), enqueued on stream. */
int sim_nccl_allgather(sim_nccl *c, const void *send, void *recv, size_t bytes, void *stream);
/* Point to point (peer may be this rank: send to self inside a group). Enqueued on stream. */
int sim_nccl_group_start(void);
int sim_nccl_group_end(void);
int sim_nccl_send(sim_nccl *c, const void *buf, size_t bytes, int peer, void *stream);
int sim_nccl_recv(sim_nccl *c, void *buf, size_t bytes, int peer, void *stream);
/* cudaStreamSynchronize(stream). */
int sim_nccl_sync(void *stream);
/* Page-locked host memory (cudaMallocHost) in NCCL builds, malloc otherwise; NULL on failure. */
void *sim_host_alloc(size_t bytes);
void sim_host_free(void *p); /* accepts NULL */

#endif /* RSSM_SIM_NCCL_H */
