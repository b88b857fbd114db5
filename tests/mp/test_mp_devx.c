// SPDX-License-Identifier: MIT
/*
 * DEVX across processes: this process and a child (forked and exec'd, joined
 * by a socketpair) each make a DEVX RC QP and CQ in umem
 * (tests/emu/devx_q.c), swap GID, QPN, address and rkey, connect with DEVX
 * modify commands and, in turn, WRITE into, SEND to and READ from the other
 * over the emulator's TCP fabric, with raw WQEs and CQEs. Every byte and CQE
 * is checked; every wait is bounded.
 */
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "devx_q.h"
#include "mp_common.h"

#define OFF_WRITE 0     /* the peer WRITEs here */
#define OFF_RECV  8192  /* the peer's SEND lands here */
#define OFF_READ  16384 /* the peer READs this */
#define OFF_SRC   24576 /* local sources */
#define OFF_RBUF  32768 /* READ results */
#define WRITE_LEN 3000
#define SEND_LEN  1000
#define READ_LEN  2048
#define WAIT_MS   10000

struct ep {
	uint8_t gid[16];
	uint32_t qpn, rkey;
	uint64_t addr;
};

static void expect_pattern(const uint8_t *got, size_t len, uint32_t seed, const char *what)
{
	uint8_t *want = malloc(len);

	if (!want)
		T_FAIL("out of memory");
	t_fill(want, len, seed);
	t_case("%s: %zu bytes", what, len);
	CHECK_MEM(got, want, len);
	free(want);
}

/* WRITE, SEND and READ at the peer; me seeds what this side writes. */
static void ops(struct dq *q, const struct ep *peer, uint32_t me, uint32_t him)
{
	struct gnic_mlx5_cqe64 c;

	t_fill(q->data + OFF_SRC, WRITE_LEN, me);
	dq_post(q, GNIC_MLX5_OPCODE_RDMA_WRITE, (uintptr_t)q->data + OFF_SRC, WRITE_LEN,
	        peer->addr + OFF_WRITE, peer->rkey);
	c = dq_poll(q, WAIT_MS, "WRITE");
	CHECK_EQ(gnic_mlx5_cqe_opcode(c.op_own), GNIC_MLX5_CQE_REQ);
	t_fill(q->data + OFF_SRC + 4096, SEND_LEN, me + 10);
	dq_post(q, GNIC_MLX5_OPCODE_SEND, (uintptr_t)q->data + OFF_SRC + 4096, SEND_LEN, 0, 0);
	c = dq_poll(q, WAIT_MS, "SEND");
	CHECK_EQ(gnic_mlx5_cqe_opcode(c.op_own), GNIC_MLX5_CQE_REQ);
	dq_post(q, GNIC_MLX5_OPCODE_RDMA_READ, (uintptr_t)q->data + OFF_RBUF, READ_LEN,
	        peer->addr + OFF_READ, peer->rkey);
	c = dq_poll(q, WAIT_MS, "READ");
	CHECK_EQ(gnic_mlx5_cqe_opcode(c.op_own), GNIC_MLX5_CQE_REQ);
	CHECK_EQ(gnic_be32(c.byte_cnt), READ_LEN);
	expect_pattern(q->data + OFF_RBUF, READ_LEN, 100 + him, "READ from the other process");
}

/* What the peer's ops() left here. */
static void received(struct dq *q, uint32_t him)
{
	struct gnic_mlx5_cqe64 c = dq_poll(q, WAIT_MS, "RECV");

	CHECK_EQ(gnic_mlx5_cqe_opcode(c.op_own), GNIC_MLX5_CQE_RESP_SEND);
	CHECK_EQ(gnic_be32(c.byte_cnt), SEND_LEN);
	CHECK_EQ(gnic_be32(c.sop_drop_qpn) & 0xffffff, q->qpn);
	expect_pattern(q->data + OFF_WRITE, WRITE_LEN, him, "WRITE from the other process");
	expect_pattern(q->data + OFF_RECV, SEND_LEN, him + 10, "SEND from the other process");
}

static int side(int fd, uint32_t me, uint32_t him)
{
	struct dq q;
	struct ep mine = {0}, peer;
	union ibv_gid gid;

	dq_create(&q, dq_open());
	t_fill(q.data + OFF_READ, READ_LEN, 100 + me);
	dq_post_recv(&q, (uintptr_t)q.data + OFF_RECV, 4096);
	dq_gid(q.ctx, &gid);
	memcpy(mine.gid, gid.raw, 16);
	mine.qpn = q.qpn;
	mine.rkey = q.mr->rkey;
	mine.addr = (uintptr_t)q.data;
	mp_blob_send(fd, &mine, sizeof(mine));
	mp_blob_recv(fd, &peer, sizeof(peer), "the peer's endpoint");
	memcpy(gid.raw, peer.gid, 16);
	t_case("process %u: CREATE_CQ, CREATE_QP, RST2INIT, INIT2RTR, RTR2RTS to the other's QP "
	       "0x%x",
	       me, peer.qpn);
	dq_connect(&q, &gid, peer.qpn);
	mp_send(fd, 'c');
	mp_expect(fd, 'c', "the peer connected");
	if (me == 1) {
		ops(&q, &peer, me, him);
		mp_send(fd, 'd');
		mp_expect(fd, 'd', "the peer's turn");
		received(&q, him);
		mp_send(fd, 'e'); /* the other may go */
	} else {
		mp_expect(fd, 'd', "the peer's turn");
		received(&q, him);
		ops(&q, &peer, me, him);
		mp_send(fd, 'd');
		mp_expect(fd, 'e', "the other's checks");
	}
	dq_destroy(&q);
	CHECK_OK(ibv_close_device(q.ctx));
	return 0;
}

int main(int argc, char **argv)
{
	int sv[2], st;
	pid_t kid;

	if (argc == 5 && !strcmp(argv[1], "--role") && !strcmp(argv[3], "--fd"))
		return side(atoi(argv[4]), 2, 1);
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	kid = mp_spawn("test_mp_devx", "b", sv[1], sv[0], NULL);
	close(sv[1]);
	side(sv[0], 1, 2);
	if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st) || WEXITSTATUS(st))
		T_FAIL("the other process failed (status 0x%x)", st);
	return 0;
}
