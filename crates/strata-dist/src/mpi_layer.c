/* Strata's MPI layer: the few collective and point-to-point calls the distributed runtime
 * makes, compiled with `mpicc` at first use and loaded by strata-dist (comm.rs). Every
 * function returns an MPI error code (0: MPI_SUCCESS); errors are returned, not fatal (a failed
 * rank is reported by the runtime's status agreement, not by MPI_Abort).
 *
 * Progress. An exchange started with `strata_mpi_start` is completed by `strata_mpi_wait`; in
 * between the caller computes. Open MPI moves a message over its eager limit (4 KiB on shared
 * memory) only inside MPI calls, so without help the bytes would cross in the wait. Two helpers
 * test the started exchanges until they complete: `strata_mpi_poll`, which the rank's kernels
 * call every few rows of their outermost loop (on whichever of their threads runs them), and
 * a progress thread testing every `progress_us` microseconds (given to `strata_mpi_init`; 0: no
 * thread). MPI is initialized with MPI_THREAD_SERIALIZED, and every MPI call of this layer
 * holds `mpi_lock`, so no two threads call MPI at once; where MPI offers less (an MPI
 * initialized elsewhere with MPI_THREAD_FUNNELED), neither helper runs and the wait moves the
 * bytes. */
#define _GNU_SOURCE
#include <limits.h>
#include <string.h>
#include <mpi.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

/* The largest message this layer hands MPI in one call: MPI counts are C ints, so larger
 * buffers go in pieces of at most this many bytes (elements for allreduce), in order (MPI keeps
 * the order of messages between two ranks with one tag). 1 GiB by default;
 * $STRATA_MPI_CHUNK_BYTES sets it (tests use a few bytes to run every chunked path). */
static long long chunk = 1LL << 30;

/* Held around every MPI call of the layer (recursive: an exported function may call another). */
static pthread_mutex_t mpi_lock;

#define LOCKED(type, call)                                                                      \
    do {                                                                                        \
        pthread_mutex_lock(&mpi_lock);                                                          \
        type result_ = (call);                                                                  \
        pthread_mutex_unlock(&mpi_lock);                                                        \
        return result_;                                                                         \
    } while (0)

/* The progress thread's microseconds between tests (0: no thread). */
static long progress_us = 0;

/* Whether MPI allows calls from threads other than the main one, serialized. */
static int serialized = 0;

int strata_mpi_init(int *rank, int *size, long progress) {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&mpi_lock, &attr);
    pthread_mutexattr_destroy(&attr);
    const char *env = getenv("STRATA_MPI_CHUNK_BYTES");
    if (env) {
        long long c = atoll(env);
        if (c > 0 && c <= INT_MAX) chunk = c;
    }
    progress_us = progress > 0 ? (progress > 1000000 ? 1000000 : progress) : 0;
    int done = 0, provided = MPI_THREAD_SINGLE;
    MPI_Initialized(&done);
    if (!done) {
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
        if (rc != MPI_SUCCESS) return rc;
    } else {
        MPI_Query_thread(&provided);
    }
    serialized = provided >= MPI_THREAD_SERIALIZED;
    if (!serialized) progress_us = 0;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    return MPI_Comm_size(MPI_COMM_WORLD, size);
}

/* The world's ranks in reverse order (made at the first reversed exclusive scan). */
static MPI_Comm reversed = MPI_COMM_NULL;

static void progress_stop(void);

static int finalize(void) {
    if (reversed != MPI_COMM_NULL) MPI_Comm_free(&reversed);
    return MPI_Finalize();
}

int strata_mpi_finalize(void) {
    progress_stop();
    LOCKED(int, finalize());
}

int strata_mpi_barrier(void) { LOCKED(int, MPI_Barrier(MPI_COMM_WORLD)); }

int strata_mpi_abort(int code) { LOCKED(int, MPI_Abort(MPI_COMM_WORLD, code)); }

double strata_mpi_wtime(void) { LOCKED(double, MPI_Wtime()); }

/* The number of pieces of at most `chunk` bytes a message of `bytes` bytes goes in (at least 1,
 * so that empty messages still match). */
static long long pieces(long long bytes) { return bytes <= 0 ? 1 : (bytes + chunk - 1) / chunk; }

/* Posts a receive (`recv`) or a send of `bytes` bytes at `buf` with `peer`, in pieces of at most
 * `chunk` bytes (one empty message for none), into `req` from `*n` on. */
static int post(int recv, char *buf, long long bytes, int peer, int tag, MPI_Request *req, int *n) {
    long long off = 0;
    do {
        int len = (int)(bytes - off < chunk ? (bytes - off > 0 ? bytes - off : 0) : chunk);
        int rc = recv ? MPI_Irecv(buf + off, len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[(*n)++])
                      : MPI_Isend(buf + off, len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[(*n)++]);
        if (rc != MPI_SUCCESS) return rc;
        off += chunk;
    } while (off < bytes);
    return MPI_SUCCESS;
}

/* An exchange under way: its requests, completed by `strata_mpi_wait`; while it is in the
 * progress thread's list, `next` links it there and `done` says its requests have completed. */
typedef struct strata_pending {
    struct strata_pending *next;
    int listed, done;
    int n;
    MPI_Request req[];
} strata_pending;

/* The exchanges under way, which the polls and the progress thread test (guarded by
 * `list_lock`; `undone` is also read without it, by the polls). Lock order: `list_lock`, then
 * `mpi_lock`. While exchanges are under way the thread tests them every `progress_us`; when
 * none is, it looks again every `IDLE_NAPS` intervals, and after `LINGER_NS` with none it
 * sleeps on `list_cond` until the next start wakes it. A time loop starting an exchange every
 * step therefore never pays a wake-up (a futex call, tens of microseconds on some virtual
 * machines), and a process that stopped exchanging has a thread that does not run. */
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t list_cond = PTHREAD_COND_INITIALIZER;
static strata_pending *listed = NULL;
static int undone = 0, quit = 0, started = 0, sleeping = 0;
static pthread_t progress_thread;
#define IDLE_NAPS 10
#define LINGER_NS 20000000LL
#define POLL_NS 20000LL

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Tests every listed exchange until each has completed (see above). */
static void *progress(void *unused) {
    (void)unused;
#ifdef __linux__
    prctl(PR_SET_TIMERSLACK, 1000UL); /* wake within ~1 µs of the interval, not the default 50 */
    prctl(PR_SET_NAME, "strata-progress");
#endif
    struct timespec nap = {progress_us / 1000000, (progress_us % 1000000) * 1000};
    long long idle = progress_us * 1000LL * IDLE_NAPS;
    struct timespec idle_nap = {idle / 1000000000LL, idle % 1000000000LL};
    long long last_busy = now_ns();
    pthread_mutex_lock(&list_lock);
    while (!quit) {
        if (undone == 0) {
            if (now_ns() - last_busy > LINGER_NS) {
                sleeping = 1;
                while (undone == 0 && !quit) pthread_cond_wait(&list_cond, &list_lock);
                sleeping = 0;
            } else {
                pthread_mutex_unlock(&list_lock);
                nanosleep(&idle_nap, NULL);
                pthread_mutex_lock(&list_lock);
            }
            continue;
        }
        for (strata_pending *p = listed; p; p = p->next) {
            if (p->done) continue;
            int flag = 0;
            pthread_mutex_lock(&mpi_lock);
            int rc = MPI_Testall(p->n, p->req, &flag, MPI_STATUSES_IGNORE);
            pthread_mutex_unlock(&mpi_lock);
            /* A failed test leaves the exchange to the wait, which reports the error. */
            if (flag || rc != MPI_SUCCESS) {
                p->done = 1;
                __atomic_sub_fetch(&undone, 1, __ATOMIC_RELEASE);
            }
        }
        last_busy = now_ns();
        if (undone == 0) continue;
        pthread_mutex_unlock(&list_lock);
        nanosleep(&nap, NULL);
        pthread_mutex_lock(&list_lock);
    }
    pthread_mutex_unlock(&list_lock);
    return NULL;
}

/* Lists `p` for the polls and the progress thread (started at the first exchange when there
 * is one; woken if it sleeps). */
static void progress_add(strata_pending *p) {
    pthread_mutex_lock(&list_lock);
    if (!started && !quit && progress_us > 0) {
        started = pthread_create(&progress_thread, NULL, progress, NULL) == 0;
        if (!started) progress_us = 0;
    }
    p->next = listed;
    listed = p;
    p->listed = 1;
    __atomic_add_fetch(&undone, 1, __ATOMIC_RELEASE);
    int wake = sleeping;
    pthread_mutex_unlock(&list_lock);
    if (wake) pthread_cond_signal(&list_cond);
}

/* Tests the listed exchanges once, unless another thread is at it or nothing is under way:
 * what kernels call from their loops (any thread, any time; returns at once when idle). */
void strata_mpi_poll(void) {
    if (__atomic_load_n(&undone, __ATOMIC_ACQUIRE) == 0) return;
    /* At most one test per POLL_NS: a test runs Open MPI's progress engine (system calls). */
    static long long last = 0;
    long long now = now_ns();
    if (now - __atomic_load_n(&last, __ATOMIC_RELAXED) < POLL_NS) return;
    __atomic_store_n(&last, now, __ATOMIC_RELAXED);
    if (pthread_mutex_trylock(&list_lock) != 0) return;
    for (strata_pending *p = listed; p; p = p->next) {
        if (p->done) continue;
        if (pthread_mutex_trylock(&mpi_lock) != 0) break;
        int flag = 0;
        int rc = MPI_Testall(p->n, p->req, &flag, MPI_STATUSES_IGNORE);
        pthread_mutex_unlock(&mpi_lock);
        if (flag || rc != MPI_SUCCESS) {
            p->done = 1;
            __atomic_sub_fetch(&undone, 1, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&list_lock);
}

/* Takes `p` out of the list (neither a poll nor the thread touches it after). */
static void progress_remove(strata_pending *p) {
    if (!p->listed) return;
    pthread_mutex_lock(&list_lock);
    for (strata_pending **q = &listed; *q; q = &(*q)->next) {
        if (*q == p) {
            *q = p->next;
            break;
        }
    }
    if (!p->done) __atomic_sub_fetch(&undone, 1, __ATOMIC_RELEASE);
    p->listed = 0;
    pthread_mutex_unlock(&list_lock);
}

/* Ends the progress thread (before MPI_Finalize). */
static void progress_stop(void) {
    pthread_mutex_lock(&list_lock);
    int was = started;
    quit = 1;
    started = 0;
    pthread_cond_signal(&list_cond);
    pthread_mutex_unlock(&list_lock);
    if (was) pthread_join(progress_thread, NULL);
}

/* Posts every receive, then every send (each in pieces of at most `chunk` bytes): `*pending`
 * is the exchange to complete with `wait` (also when posting failed: what was posted is then
 * completed there). With `progressed`, it is listed for the polls and the progress thread. */
static int start(int nsend, const int *to, void *const *sbuf, const long long *sbytes, int nrecv, const int *from,
                 void *const *rbuf, const long long *rbytes, int tag, void **pending, int progressed) {
    long long total = 1;
    for (int i = 0; i < nrecv; i++) total += pieces(rbytes[i]);
    for (int i = 0; i < nsend; i++) total += pieces(sbytes[i]);
    strata_pending *p = malloc(sizeof(strata_pending) + sizeof(MPI_Request) * (size_t)total);
    *pending = p;
    if (!p) return MPI_ERR_NO_MEM;
    p->next = NULL;
    p->listed = p->done = 0;
    int rc = MPI_SUCCESS, n = 0;
    pthread_mutex_lock(&mpi_lock);
    for (int i = 0; i < nrecv && rc == MPI_SUCCESS; i++) rc = post(1, rbuf[i], rbytes[i], from[i], tag, p->req, &n);
    for (int i = 0; i < nsend && rc == MPI_SUCCESS; i++) rc = post(0, sbuf[i], sbytes[i], to[i], tag, p->req, &n);
    pthread_mutex_unlock(&mpi_lock);
    p->n = n;
    if (progressed && rc == MPI_SUCCESS && n > 0 && serialized) progress_add(p);
    return rc;
}

/* Starts an exchange the caller completes later with `strata_mpi_wait`, computing meanwhile:
 * the buffers must stay untouched until then. */
int strata_mpi_start(int nsend, const int *to, void *const *sbuf, const long long *sbytes, int nrecv,
                     const int *from, void *const *rbuf, const long long *rbytes, int tag, void **pending) {
    return start(nsend, to, sbuf, sbytes, nrecv, from, rbuf, rbytes, tag, pending, 1);
}

/* Waits for every request of a started exchange and frees it (NULL: nothing to wait for). */
int strata_mpi_wait(void *pending) {
    strata_pending *p = pending;
    if (!p) return MPI_SUCCESS;
    progress_remove(p);
    pthread_mutex_lock(&mpi_lock);
    int rc = MPI_Waitall(p->n, p->req, MPI_STATUSES_IGNORE);
    pthread_mutex_unlock(&mpi_lock);
    free(p);
    return rc;
}

/* Posts an exchange and waits for it. */
int strata_mpi_exchange(int nsend, const int *to, void *const *sbuf, const long long *sbytes, int nrecv,
                        const int *from, void *const *rbuf, const long long *rbytes, int tag) {
    void *pending = NULL;
    int rc = start(nsend, to, sbuf, sbytes, nrecv, from, rbuf, rbytes, tag, &pending, 0);
    int done = strata_mpi_wait(pending);
    return rc != MPI_SUCCESS ? rc : done;
}

/* A tag for the layer's own point-to-point collectives (within the 32767 MPI guarantees). */
#define STRATA_COLLECTIVE_TAG 32766

/* Gathers `bytes` from every rank into `rbuf` on `root`, rank k's at `displs[k]`: point to
 * point in pieces (counts and offsets may pass 2 GiB). */
static int gatherv_body(const void *sbuf, long long bytes, void *rbuf, const long long *counts,
                        const long long *displs, int size, int root) {
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank != root) {
        void *s = (void *)sbuf;
        return strata_mpi_exchange(1, &root, &s, &bytes, 0, NULL, NULL, NULL, STRATA_COLLECTIVE_TAG);
    }
    int *from = malloc(sizeof(int) * (size_t)size);
    void **to = malloc(sizeof(void *) * (size_t)size);
    long long *len = malloc(sizeof(long long) * (size_t)size);
    if (!from || !to || !len) { free(from); free(to); free(len); return MPI_ERR_NO_MEM; }
    int n = 0;
    for (int k = 0; k < size; k++) {
        if (k == root) continue;
        from[n] = k;
        to[n] = (char *)rbuf + displs[k];
        len[n] = counts[k];
        n++;
    }
    /* The root's own part: a copy. */
    long long own = bytes < counts[root] ? bytes : counts[root];
    if (own > 0) memcpy((char *)rbuf + displs[root], sbuf, (size_t)own);
    int rc = strata_mpi_exchange(0, NULL, NULL, NULL, n, from, to, len, STRATA_COLLECTIVE_TAG);
    free(from);
    free(to);
    free(len);
    return rc;
}

/* The element types of allreduce and exscan: 0 f64, 1 f32, 2 i64, 3 i32, 4 u64, 5 u32, 6 i16,
 * 7 u16, 8 i8, 9 u8. */
static int datatype(int dtype, MPI_Datatype *t) {
    switch (dtype) {
    case 0: *t = MPI_DOUBLE; return MPI_SUCCESS;
    case 1: *t = MPI_FLOAT; return MPI_SUCCESS;
    case 2: *t = MPI_INT64_T; return MPI_SUCCESS;
    case 3: *t = MPI_INT32_T; return MPI_SUCCESS;
    case 4: *t = MPI_UINT64_T; return MPI_SUCCESS;
    case 5: *t = MPI_UINT32_T; return MPI_SUCCESS;
    case 6: *t = MPI_INT16_T; return MPI_SUCCESS;
    case 7: *t = MPI_UINT16_T; return MPI_SUCCESS;
    case 8: *t = MPI_INT8_T; return MPI_SUCCESS;
    case 9: *t = MPI_UINT8_T; return MPI_SUCCESS;
    default: return MPI_ERR_TYPE;
    }
}

/* The combinations: 0 sum, 1 max, 2 min, 3 product, 4 logical or, 5 logical and, 6 logical
 * xor, 7 bitwise and, 8 bitwise or, 9 bitwise xor. */
static int operation(int op, MPI_Op *o) {
    switch (op) {
    case 0: *o = MPI_SUM; return MPI_SUCCESS;
    case 1: *o = MPI_MAX; return MPI_SUCCESS;
    case 2: *o = MPI_MIN; return MPI_SUCCESS;
    case 3: *o = MPI_PROD; return MPI_SUCCESS;
    case 4: *o = MPI_LOR; return MPI_SUCCESS;
    case 5: *o = MPI_LAND; return MPI_SUCCESS;
    case 6: *o = MPI_LXOR; return MPI_SUCCESS;
    case 7: *o = MPI_BAND; return MPI_SUCCESS;
    case 8: *o = MPI_BOR; return MPI_SUCCESS;
    case 9: *o = MPI_BXOR; return MPI_SUCCESS;
    default: return MPI_ERR_OP;
    }
}

/* In-place allreduce of `count` values of type `dtype` combined by `op` (see `datatype`,
 * `operation`), in pieces of at most `chunk` bytes. */
static int allreduce_body(void *buf, long long count, int dtype, int op) {
    MPI_Datatype t;
    MPI_Op o;
    int rc = datatype(dtype, &t);
    if (rc == MPI_SUCCESS) rc = operation(op, &o);
    if (rc != MPI_SUCCESS) return rc;
    int width;
    MPI_Type_size(t, &width);
    long long step = chunk / width > 0 ? chunk / width : 1;
    for (long long off = 0; off < count; off += step) {
        long long len = count - off < step ? count - off : step;
        rc = MPI_Allreduce(MPI_IN_PLACE, (char *)buf + off * width, (int)len, t, o, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

/* Exclusive scan of `count` values of type `dtype` by `op` (an exact, commutative combination):
 * `out` on rank k becomes `in` of ranks 0..k combined (of ranks k+1.. with `reverse`), elementwise;
 * on the first rank (the last with `reverse`) it is left as it was. In pieces of at most
 * `chunk` bytes. A collective call. */
static int exscan_body(const void *in, void *out, long long count, int dtype, int op, int reverse) {
    MPI_Datatype t;
    MPI_Op o;
    int rc = datatype(dtype, &t);
    if (rc == MPI_SUCCESS) rc = operation(op, &o);
    if (rc != MPI_SUCCESS) return rc;
    MPI_Comm comm = MPI_COMM_WORLD;
    if (reverse) {
        if (reversed == MPI_COMM_NULL) {
            int rank, size;
            MPI_Comm_rank(MPI_COMM_WORLD, &rank);
            MPI_Comm_size(MPI_COMM_WORLD, &size);
            rc = MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &reversed);
            if (rc != MPI_SUCCESS) return rc;
            MPI_Comm_set_errhandler(reversed, MPI_ERRORS_RETURN);
        }
        comm = reversed;
    }
    int width;
    MPI_Type_size(t, &width);
    long long step = chunk / width > 0 ? chunk / width : 1;
    for (long long off = 0; off < count; off += step) {
        long long len = count - off < step ? count - off : step;
        rc = MPI_Exscan((const char *)in + off * width, (char *)out + off * width, (int)len, t, o, comm);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

/* Broadcasts `bytes` bytes from `root`, in pieces of at most `chunk` bytes. */
static int bcast_body(void *buf, long long bytes, int root) {
    for (long long off = 0; off < bytes; off += chunk) {
        long long len = bytes - off < chunk ? bytes - off : chunk;
        int rc = MPI_Bcast((char *)buf + off, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

/* Every rank sends `scounts[k]` bytes of `sbuf` (packed in rank order) to rank k and receives
 * `rcounts[k]` bytes from it into `rbuf` (in rank order); the counts are exchanged beforehand
 * (strata_mpi_alltoall_counts). Point to point in pieces: counts and offsets may pass 2 GiB. */
static int alltoallv_body(const void *sbuf, const long long *scounts, void *rbuf, const long long *rcounts,
                          int size) {
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int *peers = malloc(sizeof(int) * (size_t)size * 2);
    void **bufs = malloc(sizeof(void *) * (size_t)size * 2);
    long long *lens = malloc(sizeof(long long) * (size_t)size * 2);
    if (!peers || !bufs || !lens) { free(peers); free(bufs); free(lens); return MPI_ERR_NO_MEM; }
    int ns = 0, nr = 0;
    long long so = 0, ro = 0;
    for (int k = 0; k < size; k++) {
        if (k == rank) {
            /* This rank's own part: a copy. */
            memcpy((char *)rbuf + ro, (const char *)sbuf + so, (size_t)(scounts[k] < rcounts[k] ? scounts[k] : rcounts[k]));
        } else {
            if (scounts[k] > 0) { peers[ns] = k; bufs[ns] = (char *)sbuf + so; lens[ns] = scounts[k]; ns++; }
            if (rcounts[k] > 0) {
                peers[size + nr] = k; bufs[size + nr] = (char *)rbuf + ro; lens[size + nr] = rcounts[k]; nr++;
            }
        }
        so += scounts[k];
        ro += rcounts[k];
    }
    int rc = strata_mpi_exchange(ns, peers, bufs, lens, nr, peers + size, bufs + size, lens + size,
                                 STRATA_COLLECTIVE_TAG - 1);
    free(peers);
    free(bufs);
    free(lens);
    return rc;
}

/* Every rank's count for every other rank: `send[k]` goes to rank k, `recv[k]` comes from it. */
static int alltoall_counts_body(const long long *send, long long *recv) {
    return MPI_Alltoall(send, 1, MPI_LONG_LONG, recv, 1, MPI_LONG_LONG, MPI_COMM_WORLD);
}

/* The text of an MPI error code. */
static void error_string_body(int code, char *out, int cap) {
    int len = 0;
    if (cap < MPI_MAX_ERROR_STRING) { out[0] = 0; return; }
    if (MPI_Error_string(code, out, &len) != MPI_SUCCESS) out[0] = 0;
}

/* The exported collectives: each holds `mpi_lock` (see Progress above). */
int strata_mpi_gatherv(const void *sbuf, long long bytes, void *rbuf, const long long *counts, const long long *displs, int size, int root) { LOCKED(int, gatherv_body(sbuf, bytes, rbuf, counts, displs, size, root)); }
int strata_mpi_allreduce(void *buf, long long count, int dtype, int op) { LOCKED(int, allreduce_body(buf, count, dtype, op)); }
int strata_mpi_exscan(const void *in, void *out, long long count, int dtype, int op, int reverse) { LOCKED(int, exscan_body(in, out, count, dtype, op, reverse)); }
int strata_mpi_bcast(void *buf, long long bytes, int root) { LOCKED(int, bcast_body(buf, bytes, root)); }
int strata_mpi_alltoallv(const void *sbuf, const long long *scounts, void *rbuf, const long long *rcounts, int size) { LOCKED(int, alltoallv_body(sbuf, scounts, rbuf, rcounts, size)); }
int strata_mpi_alltoall_counts(const long long *send, long long *recv) { LOCKED(int, alltoall_counts_body(send, recv)); }
void strata_mpi_error_string(int code, char *out, int cap) {
    pthread_mutex_lock(&mpi_lock);
    error_string_body(code, out, cap);
    pthread_mutex_unlock(&mpi_lock);
}
