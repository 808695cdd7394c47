/*
 * sim_nccl.c — the NCCL glue of the tools (sim_nccl.h): process launch (fork before CUDA,
 * unique id over pipes), communicators, all-gather and send/recv. Without NCCL (CPU builds,
 * or CUDA builds where CMake found no nccl.h / libnccl) every call reports "built without NCCL".
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_nccl.h"

static char err[512];

static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, sizeof err, fmt, ap);
    va_end(ap);
    return -1;
}

const char *sim_nccl_error(void) { return err; }

const char *sim_cuda_absent(void)
{
#ifdef RSSM_SIM_CUDA
    return NULL;
#else
    return "no CUDA device was found (this build of replayssm has no CUDA back end)";
#endif
}

#ifdef RSSM_SIM_NCCL

#include <cuda_runtime.h>
#include <nccl.h>
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

struct sim_nccl {
    ncclComm_t comm;
    int rank, size;
};

int sim_nccl_built(void) { return 1; }

#define NC(call)                                                                                                       \
    do {                                                                                                               \
        ncclResult_t r_ = (call);                                                                                      \
        if (r_ != ncclSuccess) return fail("%s: %s", #call, ncclGetErrorString(r_));                                   \
    } while (0)

/* Visible GPUs, counted in a child so that this process never initialises CUDA before fork. */
static int device_count(void)
{
    const pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int n = 0;
        _exit(cudaGetDeviceCount(&n) == cudaSuccess ? (n > 254 ? 254 : n) : 255);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status) == 255 ? 0 : WEXITSTATUS(status);
}

static int write_all(int fd, const void *p, size_t n)
{
    for (size_t done = 0; done < n;) {
        const ssize_t w = write(fd, (const char *)p + done, n - done);
        if (w <= 0) return -1;
        done += (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *p, size_t n)
{
    for (size_t done = 0; done < n;) {
        const ssize_t r = read(fd, (char *)p + done, n - done);
        if (r <= 0) return -1;
        done += (size_t)r;
    }
    return 0;
}

int sim_nccl_launch(int nranks, sim_rank_fn body, void *arg)
{
    if (nranks < 1 || nranks > 64) return fail("%d ranks: need 1 .. 64", nranks);
    /* never NVLink multicast: keep NCCL_NVLS_ENABLE=0 for every communicator of these processes */
    const char *nvls = getenv("NCCL_NVLS_ENABLE");
    if (!nvls || strcmp(nvls, "0")) setenv("NCCL_NVLS_ENABLE", "0", 1);
    const int gpus = device_count();
    if (gpus == 0) return fail("no CUDA device was found (%d rank(s) need a GPU each)", nranks);
    if (gpus < nranks)
        return fail("%d rank(s) need %d GPU(s), one per rank; this machine shows %d", nranks, nranks,
                    gpus < 0 ? 0 : gpus);
    ncclUniqueId id;
    if (nranks == 1) {
        NC(ncclGetUniqueId(&id));
        return body(0, 1, (const unsigned char *)&id, arg);
    }
    /* Every rank runs in a child (forked before any CUDA call) that reads the NCCL id from its
     * pipe; this process makes the id (its bootstrap root thread lives here) and supervises: the
     * first rank that fails takes the others down, since a rank left in a collective with a dead
     * peer would wait forever. A child dies with this process (PR_SET_PDEATHSIG). */
    pid_t pids[64];
    int fds[64], started = 0, rc = 0;
    const pid_t parent = getpid();
    for (int r = 0; r < nranks; r++) {
        int p[2];
        if (pipe(p)) {
            rc = fail("pipe failed");
            break;
        }
        fflush(stdout), fflush(stderr);
        const pid_t pid = fork();
        if (pid < 0) {
            close(p[0]), close(p[1]);
            rc = fail("fork failed");
            break;
        }
        if (pid == 0) { /* rank r */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(4);
            for (int q = 0; q < r; q++)
                close(fds[q]); /* the other ranks' pipes */
            close(p[1]);
            ncclUniqueId cid;
            if (read_all(p[0], &cid, sizeof cid)) _exit(3);
            close(p[0]);
            const int brc = body(r, nranks, (const unsigned char *)&cid, arg);
            fflush(stdout), fflush(stderr);
            _exit(brc ? 1 : 0);
        }
        close(p[0]);
        pids[r] = pid, fds[r] = p[1], started++;
    }
    if (!rc && ncclGetUniqueId(&id) != ncclSuccess) rc = fail("ncclGetUniqueId failed");
    for (int r = 0; r < started; r++) {
        if (!rc && write_all(fds[r], &id, sizeof id)) rc = fail("could not send the NCCL id to rank %d", r);
        close(fds[r]); /* a child that reads EOF exits */
    }
    for (int left = started, stop = rc != 0; left > 0;) {
        if (stop)
            for (int r = 0; r < started; r++)
                if (pids[r] > 0) kill(pids[r], SIGKILL);
        int status;
        const pid_t w = waitpid(-1, &status, 0);
        if (w < 0) {
            if (errno == EINTR) continue;
            break;
        }
        int r = 0;
        while (r < started && pids[r] != w)
            r++;
        if (r == started) continue;
        pids[r] = 0, left--;
        if (!WIFEXITED(status) || WEXITSTATUS(status)) {
            if (!rc)
                rc = fail("rank %d failed (%s %d); the other ranks were stopped", r,
                          WIFEXITED(status) ? "exit status" : "signal",
                          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            stop = 1;
        }
    }
    return rc;
}

int sim_nccl_init(int nranks, int rank, const unsigned char *id, sim_nccl **out)
{
    *out = NULL;
    if (cudaSetDevice(rank) != cudaSuccess) return fail("cudaSetDevice(%d) failed", rank);
    sim_nccl *c = calloc(1, sizeof *c);
    if (!c) return fail("out of host memory");
    ncclUniqueId uid;
    memcpy(&uid, id, sizeof uid);
    const ncclResult_t r = ncclCommInitRank(&c->comm, nranks, uid, rank);
    if (r != ncclSuccess) {
        free(c);
        return fail("ncclCommInitRank(%d ranks, rank %d): %s", nranks, rank, ncclGetErrorString(r));
    }
    c->rank = rank, c->size = nranks;
    *out = c;
    return 0;
}

void sim_nccl_free(sim_nccl *c)
{
    if (!c) return;
    ncclCommDestroy(c->comm);
    free(c);
}

int sim_nccl_rank(const sim_nccl *c) { return c->rank; }
int sim_nccl_size(const sim_nccl *c) { return c->size; }

int sim_nccl_allgather(sim_nccl *c, const void *send, void *recv, size_t bytes, void *stream)
{
    NC(ncclAllGather(send, recv, bytes, ncclUint8, c->comm, (cudaStream_t)stream));
    return 0;
}

int sim_nccl_group_start(void)
{
    NC(ncclGroupStart());
    return 0;
}

int sim_nccl_group_end(void)
{
    NC(ncclGroupEnd());
    return 0;
}

int sim_nccl_send(sim_nccl *c, const void *buf, size_t bytes, int peer, void *stream)
{
    NC(ncclSend(buf, bytes, ncclUint8, peer, c->comm, (cudaStream_t)stream));
    return 0;
}

int sim_nccl_recv(sim_nccl *c, void *buf, size_t bytes, int peer, void *stream)
{
    NC(ncclRecv(buf, bytes, ncclUint8, peer, c->comm, (cudaStream_t)stream));
    return 0;
}

int sim_nccl_sync(void *stream)
{
    const cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);
    return e == cudaSuccess ? 0 : fail("cudaStreamSynchronize: %s", cudaGetErrorString(e));
}

void *sim_host_alloc(size_t bytes)
{
    void *p = NULL;
    return cudaMallocHost(&p, bytes ? bytes : 1) == cudaSuccess ? p : NULL;
}

void sim_host_free(void *p)
{
    if (p) cudaFreeHost(p);
}

#else /* built without NCCL */

#define NO_NCCL                                                                                                        \
    fail("built without NCCL (configure a CUDA build with nccl.h and libnccl visible, e.g. -DNCCL_ROOT=...)")

int sim_nccl_built(void) { return 0; }
int sim_nccl_launch(int nranks, sim_rank_fn body, void *arg)
{
    (void)nranks, (void)body, (void)arg;
    return NO_NCCL;
}
int sim_nccl_init(int nranks, int rank, const unsigned char *id, sim_nccl **out)
{
    (void)nranks, (void)rank, (void)id;
    *out = NULL;
    return NO_NCCL;
}
void sim_nccl_free(sim_nccl *c) { (void)c; }
int sim_nccl_rank(const sim_nccl *c) { return (void)c, 0; }
int sim_nccl_size(const sim_nccl *c) { return (void)c, 1; }
int sim_nccl_allgather(sim_nccl *c, const void *send, void *recv, size_t bytes, void *stream)
{
    (void)c, (void)send, (void)recv, (void)bytes, (void)stream;
    return NO_NCCL;
}
int sim_nccl_group_start(void) { return NO_NCCL; }
int sim_nccl_group_end(void) { return NO_NCCL; }
int sim_nccl_send(sim_nccl *c, const void *buf, size_t bytes, int peer, void *stream)
{
    (void)c, (void)buf, (void)bytes, (void)peer, (void)stream;
    return NO_NCCL;
}
int sim_nccl_recv(sim_nccl *c, void *buf, size_t bytes, int peer, void *stream)
{
    (void)c, (void)buf, (void)bytes, (void)peer, (void)stream;
    return NO_NCCL;
}
int sim_nccl_sync(void *stream) { return (void)stream, NO_NCCL; }
void *sim_host_alloc(size_t bytes) { return malloc(bytes ? bytes : 1); }
void sim_host_free(void *p) { free(p); }

#endif
