/* SPDX-License-Identifier: MIT */
/*
 * Optional: connecting libgnic QPs over MPI instead of gnic_boot_*.
 *
 * Header only, so libgnic itself never links MPI: include it from code built
 * with mpicc (or linked against MPI). Every call is collective over comm.
 *
 * Errors: libgnic failures return their gnic_status_t with the text in
 * gnic_last_error(). An MPI call that returns an error (only possible when
 * comm's error handler is not MPI_ERRORS_ARE_FATAL, the default) gives
 * GNIC_ERR_SYSTEM; MPI_Error_string() on *mpi_rc tells why.
 *
 * MPI collectives have no time-out: a rank that fails before a collective
 * leaves its peers waiting in it. On an error, MPI_Abort() is the usual way
 * out.
 */
#ifndef GNIC_MPI_H
#define GNIC_MPI_H

#include <mpi.h>
#include <stdlib.h>

#include "gnic.h"

/* Every rank's len bytes, by rank (an MPI_Allgather of bytes). */
static inline gnic_status_t gnic_mpi_allgather(MPI_Comm comm, const void *mine, void *all,
                                               size_t len, int *mpi_rc)
{
	int rc;

	if (len > (size_t)INT32_MAX)
		return GNIC_ERR_INVALID;
	rc = MPI_Allgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, comm);
	if (mpi_rc)
		*mpi_rc = rc;
	return rc == MPI_SUCCESS ? GNIC_OK : GNIC_ERR_SYSTEM;
}

/*
 * All-to-all connection, as gnic_boot_connect_all(): the group holds one QP
 * per rank of comm; QP p of rank r connects to QP r of rank p (rank r's QP r
 * loops back to itself). Returns after a barrier, so every peer's QP is ready
 * to receive. All or nothing on this rank (see gnic_qp_group_connect()).
 */
static inline gnic_status_t gnic_mpi_connect_all(MPI_Comm comm, struct gnic_qp_group *group,
                                                 int *mpi_rc)
{
	struct gnic_blob *mine = NULL, *all = NULL, *remote = NULL;
	int rank, nranks, rc = MPI_SUCCESS;
	gnic_status_t st = GNIC_OK;
	uint32_t n = gnic_qp_group_size(group);

	if (mpi_rc)
		*mpi_rc = MPI_SUCCESS;
	if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
	    MPI_Comm_size(comm, &nranks) != MPI_SUCCESS)
		return GNIC_ERR_SYSTEM;
	if (n == 0 || n != (uint32_t)nranks)
		return GNIC_ERR_INVALID; /* one QP per rank */
	mine = (struct gnic_blob *)calloc(n, sizeof(*mine));
	all = (struct gnic_blob *)calloc((size_t)n * n, sizeof(*all));
	remote = (struct gnic_blob *)calloc(n, sizeof(*remote));
	if (!mine || !all || !remote) {
		free(mine);
		free(all);
		free(remote);
		return GNIC_ERR_NOMEM;
	}
	st = gnic_qp_group_export(group, mine);
	/* a rank whose export failed still joins the collective (its zero
	 * blobs fail every peer's connect) rather than leave peers waiting */
	rc = MPI_Allgather(mine, (int)(n * sizeof(*mine)), MPI_BYTE, all, (int)(n * sizeof(*mine)),
	                   MPI_BYTE, comm);
	if (rc != MPI_SUCCESS && !st)
		st = GNIC_ERR_SYSTEM;
	if (!st) {
		for (uint32_t p = 0; p < n; p++)
			remote[p] = all[(size_t)p * n + (uint32_t)rank];
		st = gnic_qp_group_connect(group, remote);
	}
	if (!st) {
		rc = MPI_Barrier(comm);
		if (rc != MPI_SUCCESS)
			st = GNIC_ERR_SYSTEM;
	}
	if (mpi_rc)
		*mpi_rc = rc;
	free(remote);
	free(all);
	free(mine);
	return st;
}

#endif /* GNIC_MPI_H */
