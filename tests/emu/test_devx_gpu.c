// SPDX-License-Identifier: MIT
/*
 * DEVX umem in GPU memory, on the fake CUDA driver of tests/gnic/fake_cuda.c
 * (its "device memory" is host memory this process can read, reached by
 * gnic-emu only through CUDA copies, which the fake counts):
 *   - a QP whose CQ ring, records and WQ are in GPU memory: WRITE, SEND/RECV
 *     and READ with a host-memory DEVX peer, raw CQEs read from GPU memory;
 *     the engine pulled WQEs and pushed CQEs with CUDA copies;
 *   - 300 WRITEs through a 64-BB SQ and a 64-CQE CQ: the SQ and the CQ wrap,
 *     and the consumer index in GPU memory keeps the CQ from overrunning;
 *   - a send record written without the UAR doorbell is not seen (the
 *     doorbell drives the reads), the register write then is;
 *   - dma-buf umem: EOPNOTSUPP.
 * Exit 77 when libcuda.so.1 is not the fake.
 */
#include <dlfcn.h>
#include <sched.h>

#include "devx_q.h"
#include "prm.h"

#define WAIT_MS 5000

static struct {
	int (*primary_retain)(void **, int);
	int (*ctx_set_current)(void *);
	int (*mem_alloc)(unsigned long long *, size_t);
	int (*mem_free)(unsigned long long);
	long (*stat)(const char *);
} cu;

static struct ibv_context *ctx;

static void *sym(void *lib, const char *name)
{
	void *p = dlsym(lib, name);

	if (!p)
		t_skip("libcuda.so.1 has no %s: not the fake driver", name);
	return p;
}

static void cuda_load(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	void *c;

	if (!lib)
		t_skip("no CUDA driver (libcuda.so.1): %s", dlerror());
	*(void **)&cu.stat = sym(lib, "fake_cuda_stat");
	*(void **)&cu.primary_retain = sym(lib, "cuDevicePrimaryCtxRetain");
	*(void **)&cu.ctx_set_current = sym(lib, "cuCtxSetCurrent");
	*(void **)&cu.mem_alloc = sym(lib, "cuMemAlloc_v2");
	*(void **)&cu.mem_free = sym(lib, "cuMemFree_v2");
	CHECK_OK(cu.primary_retain(&c, 0));
	CHECK_OK(cu.ctx_set_current(c));
}

static uint8_t *gpu_alloc(size_t len)
{
	unsigned long long p = 0;

	CHECK_OK(cu.mem_alloc(&p, len));
	memset((void *)(uintptr_t)p, 0, len); /* the fake's: host memory */
	return (uint8_t *)(uintptr_t)p;
}

static void check_cqe(const struct gnic_mlx5_cqe64 *c, uint8_t opcode, uint32_t qpn,
                      uint16_t wqe_counter, uint32_t byte_cnt)
{
	CHECK_EQ(gnic_mlx5_cqe_opcode(c->op_own), opcode);
	CHECK_EQ(gnic_be32(c->sop_drop_qpn) & 0xffffff, qpn);
	CHECK_EQ(gnic_be16(c->wqe_counter), wqe_counter);
	if (byte_cnt)
		CHECK_EQ(gnic_be32(c->byte_cnt), byte_cnt);
}

static void pair(struct dq *g, struct dq *h, uint8_t *mem)
{
	union ibv_gid gid;

	dq_gid(ctx, &gid);
	dq_create_in(g, ctx, mem);
	dq_create(h, ctx);
	dq_connect(g, &gid, h->qpn);
	dq_connect(h, &gid, g->qpn);
}

static void test_traffic(void)
{
	uint8_t *mem = gpu_alloc(DQ_MEM_LEN);
	long htod = cu.stat("async_htod"), dtoh = cu.stat("async_dtoh");
	struct gnic_mlx5_cqe64 c;
	struct dq g, h;

	t_case("queues in GPU memory: WRITE, SEND/RECV, READ with a host-memory peer");
	pair(&g, &h, mem);
	t_fill(g.data, 3000, 1);
	dq_post(&g, GNIC_MLX5_OPCODE_RDMA_WRITE, (uintptr_t)g.data, 3000, (uintptr_t)h.data,
	        h.mr->rkey);
	c = dq_poll(&g, WAIT_MS, "WRITE");
	check_cqe(&c, GNIC_MLX5_CQE_REQ, g.qpn, 0, 0);
	CHECK_MEM(h.data, g.data, 3000);
	/* a receive in GPU memory: h SENDs to g */
	dq_post_recv(&g, (uintptr_t)g.data + 8192, 4096);
	t_fill(h.data + 4096, 1000, 2);
	dq_post(&h, GNIC_MLX5_OPCODE_SEND, (uintptr_t)h.data + 4096, 1000, 0, 0);
	c = dq_poll(&h, WAIT_MS, "SEND");
	check_cqe(&c, GNIC_MLX5_CQE_REQ, h.qpn, 0, 0);
	c = dq_poll(&g, WAIT_MS, "RECV");
	check_cqe(&c, GNIC_MLX5_CQE_RESP_SEND, g.qpn, 0, 1000);
	CHECK_MEM(g.data + 8192, h.data + 4096, 1000);
	t_fill(h.data + 16384, 2048, 3);
	dq_post(&g, GNIC_MLX5_OPCODE_RDMA_READ, (uintptr_t)g.data + 16384, 2048,
	        (uintptr_t)h.data + 16384, h.mr->rkey);
	c = dq_poll(&g, WAIT_MS, "READ");
	check_cqe(&c, GNIC_MLX5_CQE_REQ, g.qpn, 1, 2048);
	CHECK_MEM(g.data + 16384, h.data + 16384, 2048);
	printf("CUDA copies: %ld to the GPU, %ld from it\n", cu.stat("async_htod") - htod,
	       cu.stat("async_dtoh") - dtoh);
	/* each CQE in two pieces (op_own last); records and WQEs pulled */
	CHECK(cu.stat("async_htod") - htod >= 2 * 3);
	CHECK(cu.stat("async_dtoh") - dtoh >= 3);

	t_case("300 WRITEs through a 64-BB SQ and a 64-CQE CQ in GPU memory");
	for (uint32_t i = 0; i < 300; i++) {
		uint32_t v = i * 2654435761u;

		memcpy(g.data + 32768 + 4 * (i % 64), &v, 4);
		dq_post(&g, GNIC_MLX5_OPCODE_RDMA_WRITE, (uintptr_t)g.data + 32768 + 4 * (i % 64),
		        4, (uintptr_t)h.data + 32768 + 4 * (i % 64), h.mr->rkey);
		c = dq_poll(&g, WAIT_MS, "WRITE of the 300");
		check_cqe(&c, GNIC_MLX5_CQE_REQ, g.qpn, (uint16_t)(g.pi - 1), 0);
		CHECK_MEM(h.data + 32768 + 4 * (i % 64), &v, 4);
	}

	t_case("a send record without the UAR doorbell is not seen; the doorbell then is");
	t_fill(g.data + 40000, 64, 9);
	{
		uint8_t *w =
		    g.sq + (size_t)(g.pi & ((1u << DQ_SQ_LOG) - 1)) * GNIC_MLX5_SEND_WQE_BB;
		struct gnic_mlx5_ctrl_seg *ctrl = (void *)w;
		struct gnic_mlx5_raddr_seg *r = (void *)(w + 16);
		struct gnic_mlx5_data_seg *d = (void *)(w + 32);
		uint64_t v;

		memset(w, 0, GNIC_MLX5_SEND_WQE_BB);
		ctrl->opmod_idx_opcode =
		    gnic_be32(gnic_mlx5_ctrl_word0(0, g.pi, GNIC_MLX5_OPCODE_RDMA_WRITE));
		ctrl->qpn_ds = gnic_be32(gnic_mlx5_ctrl_word1(g.qpn, 3));
		ctrl->fm_ce_se = GNIC_MLX5_CTRL_CQ_UPDATE;
		r->raddr = gnic_be64((uintptr_t)h.data + 40000);
		r->rkey = gnic_be32(h.mr->rkey);
		d->byte_count = gnic_be32(64);
		d->lkey = gnic_be32(g.mr->lkey);
		d->addr = gnic_be64((uintptr_t)g.data + 40000);
		g.pi++;
		__atomic_store_n(&g.qp_dbr[GNIC_MLX5_SND_DBR], gnic_be32(g.pi), __ATOMIC_RELEASE);
		t_sleep_ms(100);
		CHECK(!gnic_mlx5_cqe_sw_owned(g.cqes[g.ci % (1u << DQ_CQE_LOG)].op_own, g.ci,
		                              1u << DQ_CQE_LOG));
		CHECK(memcmp(h.data + 40000, g.data + 40000, 64) != 0);
		memcpy(&v, ctrl, sizeof(v));
		__atomic_store_n((uint64_t *)((uint8_t *)g.uar->reg_addr + g.bf_off), v,
		                 __ATOMIC_RELEASE);
		g.bf_off ^= GNIC_MLX5_BF_SIZE;
		c = dq_poll(&g, WAIT_MS, "WRITE rung by the register");
		check_cqe(&c, GNIC_MLX5_CQE_REQ, g.qpn, (uint16_t)(g.pi - 1), 0);
		CHECK_MEM(h.data + 40000, g.data + 40000, 64);
	}
	dq_destroy(&g);
	dq_destroy(&h);
	CHECK_OK(cu.mem_free((uintptr_t)mem));
}

static void test_dmabuf(void)
{
	struct mlx5dv_devx_umem_in in = {0};
	uint8_t *mem = gpu_alloc(DQ_MEM_LEN);

	t_case("dma-buf umem: EOPNOTSUPP");
	in.addr = NULL;
	in.size = DQ_MEM_LEN;
	in.access = IBV_ACCESS_LOCAL_WRITE;
	in.pgsz_bitmap = ~0xfffull;
	in.comp_mask = MLX5DV_UMEM_MASK_DMABUF;
	in.dmabuf_fd = 0;
	errno = 0;
	CHECK(mlx5dv_devx_umem_reg_ex(ctx, &in) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_OK(cu.mem_free((uintptr_t)mem));
}

int main(void)
{
	cuda_load();
	ctx = dq_open();
	test_traffic();
	test_dmabuf();
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
