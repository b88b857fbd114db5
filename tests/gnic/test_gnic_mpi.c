// SPDX-License-Identifier: MIT
/*
 * gnic_mpi.h under mpirun: every rank opens gnic-emu, makes a QP group with
 * one QP per rank, connects it with gnic_mpi_connect_all(), WRITEs into its
 * slot of every rank (itself included) and checks every slot it received.
 * A group of the wrong size is refused before any collective.
 */
#include <gnic/gnic_mpi.h>

#include "gt.h"

#define REGION 4096

int main(int argc, char **argv)
{
	struct gnic_rmem mine, *all;
	struct gnic_dev_qp *const *dqp;
	struct gnic_qp_group *g, *wrong;
	struct gnic_ctx *ctx;
	struct gnic_mr *mr;
	int rank, n, mrc;
	uint8_t *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	t_case("rank %d of %d: group, gnic_mpi_connect_all", rank, n);
	ctx = gt_ctx();
	buf = t_alloc((size_t)REGION * (n + 1), 0);
	all = calloc((size_t)n, sizeof(*all));
	CHECK(all != NULL);
	CHECK_GNIC(gnic_mr_reg(ctx, buf, (size_t)REGION * (n + 1), GNIC_ACCESS_ALL, &mr));
	gnic_mr_rmem(mr, &mine);
	CHECK_GNIC(gnic_mpi_allgather(MPI_COMM_WORLD, &mine, all, sizeof(mine), &mrc));
	CHECK_GNIC(gnic_qp_group_create(ctx, NULL, (uint32_t)n + 1, &wrong));
	CHECK_EQ(gnic_mpi_connect_all(MPI_COMM_WORLD, wrong, &mrc), GNIC_ERR_INVALID);
	gnic_qp_group_destroy(wrong);
	CHECK_GNIC(gnic_qp_group_create(ctx, NULL, (uint32_t)n, &g));
	CHECK_GNIC(gnic_mpi_connect_all(MPI_COMM_WORLD, g, &mrc));
	CHECK_EQ(mrc, MPI_SUCCESS);

	t_case("rank %d: WRITE into every rank's slot for us", rank);
	dqp = gnic_qp_group_dev(g);
	t_fill(buf + (size_t)REGION * n, REGION, 5000u + (uint32_t)rank);
	for (int r = 0; r < n; r++)
		gt_write(dqp[r], buf + (size_t)REGION * n, gnic_mr_lkey(mr),
		         all[r].addr + (uint64_t)REGION * rank, all[r].rkey, REGION);
	MPI_Barrier(MPI_COMM_WORLD);
	for (int r = 0; r < n; r++) {
		uint8_t want[REGION];

		t_fill(want, REGION, 5000u + (uint32_t)r);
		CHECK_MEM(buf + (size_t)REGION * r, want, REGION);
	}
	MPI_Barrier(MPI_COMM_WORLD); /* nobody tears down under a peer */
	gnic_qp_group_destroy(g);
	gnic_mr_dereg(mr);
	gnic_ctx_destroy(ctx);
	free(all);
	free(buf);
	printf("rank %d: ok\n", rank);
	MPI_Finalize();
	return T_EXIT_PASS;
}
