/* Strata's MPI layer: the few collective and point-to-point calls the distributed runtime
 * makes, compiled with `mpicc` at first use and loaded by strata-dist (comm.rs). Every
 * function returns an MPI error code (0: MPI_SUCCESS); errors are returned, not fatal (a failed
 * rank is reported by the runtime's status agreement, not by MPI_Abort). */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>

int strata_mpi_init(int *rank, int *size) {
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

int strata_mpi_finalize(void) { return MPI_Finalize(); }

int strata_mpi_barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }

double strata_mpi_wtime(void) { return MPI_Wtime(); }

/* Posts every receive, then every send, then waits for all: messages of `bytes` bytes. */
int strata_mpi_exchange(int nsend, const int *to, void *const *sbuf, const long long *sbytes, int nrecv,
                        const int *from, void *const *rbuf, const long long *rbytes, int tag) {
    MPI_Request *req = malloc(sizeof(MPI_Request) * (size_t)(nsend + nrecv + 1));
    if (!req) return MPI_ERR_NO_MEM;
    int rc = MPI_SUCCESS, n = 0;
    for (int i = 0; i < nrecv && rc == MPI_SUCCESS; i++) {
        if (rbytes[i] > INT_MAX) { rc = MPI_ERR_COUNT; break; }
        rc = MPI_Irecv(rbuf[i], (int)rbytes[i], MPI_BYTE, from[i], tag, MPI_COMM_WORLD, &req[n++]);
    }
    for (int i = 0; i < nsend && rc == MPI_SUCCESS; i++) {
        if (sbytes[i] > INT_MAX) { rc = MPI_ERR_COUNT; break; }
        rc = MPI_Isend(sbuf[i], (int)sbytes[i], MPI_BYTE, to[i], tag, MPI_COMM_WORLD, &req[n++]);
    }
    if (rc == MPI_SUCCESS) rc = MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    free(req);
    return rc;
}

/* Gathers `bytes` from every rank into `rbuf` on `root`, rank k's at `displs[k]`. */
int strata_mpi_gatherv(const void *sbuf, long long bytes, void *rbuf, const long long *counts,
                       const long long *displs, int size, int root) {
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int *c = NULL, *d = NULL;
    if (bytes > INT_MAX) return MPI_ERR_COUNT;
    if (rank == root) {
        c = malloc(sizeof(int) * (size_t)size);
        d = malloc(sizeof(int) * (size_t)size);
        if (!c || !d) { free(c); free(d); return MPI_ERR_NO_MEM; }
        for (int k = 0; k < size; k++) {
            if (counts[k] > INT_MAX || displs[k] > INT_MAX) { free(c); free(d); return MPI_ERR_COUNT; }
            c[k] = (int)counts[k];
            d[k] = (int)displs[k];
        }
    }
    int rc = MPI_Gatherv(sbuf, (int)bytes, MPI_BYTE, rbuf, c, d, MPI_BYTE, root, MPI_COMM_WORLD);
    free(c);
    free(d);
    return rc;
}

/* In-place allreduce of `count` values: dtype 0 f64, 1 f32, 2 i64, 3 i32, 4 u64, 5 u32;
 * op 0 sum, 1 max, 2 min, 3 product, 4 logical or, 5 logical and. */
int strata_mpi_allreduce(void *buf, long long count, int dtype, int op) {
    MPI_Datatype t;
    switch (dtype) {
    case 0: t = MPI_DOUBLE; break;
    case 1: t = MPI_FLOAT; break;
    case 2: t = MPI_INT64_T; break;
    case 3: t = MPI_INT32_T; break;
    case 4: t = MPI_UINT64_T; break;
    case 5: t = MPI_UINT32_T; break;
    default: return MPI_ERR_TYPE;
    }
    MPI_Op o;
    switch (op) {
    case 0: o = MPI_SUM; break;
    case 1: o = MPI_MAX; break;
    case 2: o = MPI_MIN; break;
    case 3: o = MPI_PROD; break;
    case 4: o = MPI_LOR; break;
    case 5: o = MPI_LAND; break;
    default: return MPI_ERR_OP;
    }
    if (count > INT_MAX) return MPI_ERR_COUNT;
    return MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, t, o, MPI_COMM_WORLD);
}

/* Broadcasts `bytes` bytes from `root`. */
int strata_mpi_bcast(void *buf, long long bytes, int root) {
    if (bytes > INT_MAX) return MPI_ERR_COUNT;
    return MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD);
}

/* Every rank sends `scounts[k]` bytes of `sbuf` (packed in rank order) to rank k and receives
 * `rcounts[k]` bytes from it into `rbuf` (in rank order); the counts are exchanged beforehand
 * (strata_mpi_alltoall_counts). */
int strata_mpi_alltoallv(const void *sbuf, const long long *scounts, void *rbuf, const long long *rcounts,
                         int size) {
    int *sc = malloc(sizeof(int) * (size_t)size * 4);
    if (!sc) return MPI_ERR_NO_MEM;
    int *sd = sc + size, *rc_ = sc + 2 * size, *rd = sc + 3 * size;
    long long so = 0, ro = 0;
    for (int k = 0; k < size; k++) {
        if (scounts[k] > INT_MAX || rcounts[k] > INT_MAX || so > INT_MAX || ro > INT_MAX) {
            free(sc);
            return MPI_ERR_COUNT;
        }
        sc[k] = (int)scounts[k];
        sd[k] = (int)so;
        rc_[k] = (int)rcounts[k];
        rd[k] = (int)ro;
        so += scounts[k];
        ro += rcounts[k];
    }
    int rc = MPI_Alltoallv(sbuf, sc, sd, MPI_BYTE, rbuf, rc_, rd, MPI_BYTE, MPI_COMM_WORLD);
    free(sc);
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
