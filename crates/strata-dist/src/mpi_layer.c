/* Strata's MPI layer: the few collective and point-to-point calls the distributed runtime
 * makes, compiled with `mpicc` at first use and loaded by strata-dist (comm.rs). Every
 * function returns an MPI error code (0: MPI_SUCCESS); errors are returned, not fatal (a failed
 * rank is reported by the runtime's status agreement, not by MPI_Abort). */
#include <limits.h>
#include <string.h>
#include <mpi.h>
#include <stdlib.h>

/* The largest message this layer hands MPI in one call: MPI counts are C ints, so larger
 * buffers go in pieces of at most this many bytes (elements for allreduce), in order (MPI keeps
 * the order of messages between two ranks with one tag). 1 GiB by default;
 * $STRATA_MPI_CHUNK_BYTES sets it (tests use a few bytes to run every chunked path). */
static long long chunk = 1LL << 30;

int strata_mpi_init(int *rank, int *size) {
    const char *env = getenv("STRATA_MPI_CHUNK_BYTES");
    if (env) {
        long long c = atoll(env);
        if (c > 0 && c <= INT_MAX) chunk = c;
    }
    int done = 0;
    MPI_Initialized(&done);
    if (!done) {
        int provided;
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) return rc;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    return MPI_Comm_size(MPI_COMM_WORLD, size);
}

/* The world's ranks in reverse order (made at the first reversed exclusive scan). */
static MPI_Comm reversed = MPI_COMM_NULL;

int strata_mpi_finalize(void) {
    if (reversed != MPI_COMM_NULL) MPI_Comm_free(&reversed);
    return MPI_Finalize();
}

int strata_mpi_barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }

int strata_mpi_abort(int code) { return MPI_Abort(MPI_COMM_WORLD, code); }

double strata_mpi_wtime(void) { return MPI_Wtime(); }

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

/* An exchange under way: its requests, completed by `strata_mpi_wait`. */
typedef struct {
    int n;
    MPI_Request req[];
} strata_pending;

/* Posts every receive, then every send (each in pieces of at most `chunk` bytes), and returns
 * at once: `*pending` is the exchange to complete with `strata_mpi_wait` (also when posting
 * failed: what was posted is then completed there). The buffers must stay untouched until then. */
int strata_mpi_start(int nsend, const int *to, void *const *sbuf, const long long *sbytes, int nrecv,
                     const int *from, void *const *rbuf, const long long *rbytes, int tag, void **pending) {
    long long total = 1;
    for (int i = 0; i < nrecv; i++) total += pieces(rbytes[i]);
    for (int i = 0; i < nsend; i++) total += pieces(sbytes[i]);
    strata_pending *p = malloc(sizeof(strata_pending) + sizeof(MPI_Request) * (size_t)total);
    *pending = p;
    if (!p) return MPI_ERR_NO_MEM;
    int rc = MPI_SUCCESS, n = 0;
    for (int i = 0; i < nrecv && rc == MPI_SUCCESS; i++) rc = post(1, rbuf[i], rbytes[i], from[i], tag, p->req, &n);
    for (int i = 0; i < nsend && rc == MPI_SUCCESS; i++) rc = post(0, sbuf[i], sbytes[i], to[i], tag, p->req, &n);
    p->n = n;
    return rc;
}

/* Waits for every request of a started exchange and frees it (NULL: nothing to wait for). */
int strata_mpi_wait(void *pending) {
    strata_pending *p = pending;
    if (!p) return MPI_SUCCESS;
    int rc = MPI_Waitall(p->n, p->req, MPI_STATUSES_IGNORE);
    free(p);
    return rc;
}

/* `strata_mpi_start`, then `strata_mpi_wait`. */
int strata_mpi_exchange(int nsend, const int *to, void *const *sbuf, const long long *sbytes, int nrecv,
                        const int *from, void *const *rbuf, const long long *rbytes, int tag) {
    void *pending = NULL;
    int rc = strata_mpi_start(nsend, to, sbuf, sbytes, nrecv, from, rbuf, rbytes, tag, &pending);
    int done = strata_mpi_wait(pending);
    return rc != MPI_SUCCESS ? rc : done;
}

/* A tag for the layer's own point-to-point collectives (within the 32767 MPI guarantees). */
#define STRATA_COLLECTIVE_TAG 32766

/* Gathers `bytes` from every rank into `rbuf` on `root`, rank k's at `displs[k]`: point to
 * point in pieces (counts and offsets may pass 2 GiB). */
int strata_mpi_gatherv(const void *sbuf, long long bytes, void *rbuf, const long long *counts,
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
int strata_mpi_allreduce(void *buf, long long count, int dtype, int op) {
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
int strata_mpi_exscan(const void *in, void *out, long long count, int dtype, int op, int reverse) {
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
int strata_mpi_bcast(void *buf, long long bytes, int root) {
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
int strata_mpi_alltoallv(const void *sbuf, const long long *scounts, void *rbuf, const long long *rcounts,
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
int strata_mpi_alltoall_counts(const long long *send, long long *recv) {
    return MPI_Alltoall(send, 1, MPI_LONG_LONG, recv, 1, MPI_LONG_LONG, MPI_COMM_WORLD);
}

/* The text of an MPI error code. */
void strata_mpi_error_string(int code, char *out, int cap) {
    int len = 0;
    if (cap < MPI_MAX_ERROR_STRING) { out[0] = 0; return; }
    if (MPI_Error_string(code, out, &len) != MPI_SUCCESS) out[0] = 0;
}
