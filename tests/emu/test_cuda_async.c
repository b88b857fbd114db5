// SPDX-License-Identifier: MIT
/*
 * GPU-memory payloads through gnic-emu's copy queue (emu/dma.c), on the fake
 * CUDA driver of tests/gnic/fake_cuda.c, whose "device memory" is host
 * memory and whose asynchronous copies can be made to finish late
 * (fake_cuda_set_async) or fail (fake_cuda_fail_copies), and which counts
 * its calls (fake_cuda_stat). One case per run (argv[1]), or all:
 *
 *   order     64 WRITEs on one QP, alternately into GPU and host memory,
 *             copies finishing 2 ms late: CQEs in posting order, each WQE's
 *             data in place when its CQE is seen
 *   not_held  a WRITE into GPU memory whose copy takes 400 ms does not hold
 *             another QP's host-memory WRITE: that one completes first
 *   batch     32 GPU-to-GPU WRITEs rung at once go to the driver as batch
 *             copies (cuMemcpyBatchAsync), device to device, no stream sync
 *   d2d       a GPU-to-GPU WRITE, SEND and READ in this process: device-to-
 *             device copies, no copy through host memory
 *   nobatch   (FAKE_CUDA_NO_BATCH=1: no cuMemcpyBatchAsync) the same WRITEs
 *             as one asynchronous copy call each, still no stream sync
 *   pinned    host memory CUDA knows as page-locked (cuMemHostRegister) is
 *             copied to and from GPU memory directly; pageable memory goes
 *             through the bounce ring (cuMemHostAlloc'd)
 *   mixed     READs into GPU and host memory, a scatter-to-CQE SEND from GPU
 *             memory, and a fetch-add right after a WRITE to the same GPU
 *             word, copies late: data, inline data and fetched value right
 *   fail_run  a copy that fails when it runs (CUDA_ERROR_ILLEGAL_ADDRESS
 *             from the event): the WRITE's CQE is REM_ACCESS_ERR, a READ
 *             into GPU memory LOC_PROT_ERR
 *   fail_issue the same with copies the driver refuses at issue
 *   reads     64 READs of GPU memory into GPU memory, copies late: every
 *             answer taken in order while the READ before it still copies
 *   kernel    (GNIC_EMU_CUDA_KERNEL_MAX > 0) 32 GPU-to-GPU WRITEs rung at once
 *             are carried by the copy kernel, a few launches, no driver copy;
 *             a WRITE from pageable memory goes through the mapped bounce
 *             ring by the kernel too; a launch the driver refuses goes to the
 *             driver's copies: nothing lost
 *   kernel_reads the 64 READs with the copy kernel: its copies
 *
 * The cases other than kernel run with the copy kernel off
 * (GNIC_EMU_CUDA_KERNEL_MAX=0, set by CMake), order, mixed and fail_run
 * also with it on: the same semantics by either path.
 * Exit 77 when libcuda.so.1 is not the fake (a real driver).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include "common.h"

int gemu_qp_engine_worker(struct ibv_qp *qp); /* libgnic_emu */

enum { ERR_INVALID_VALUE = 1, ERR_ILLEGAL_ADDRESS = 700 };

static struct {
	int (*primary_retain)(void **, int);
	int (*ctx_set_current)(void *);
	int (*mem_alloc)(unsigned long long *, size_t);
	int (*mem_free)(unsigned long long);
	long (*stat)(const char *);
	void (*set_async)(long);
	void (*fail_copies)(int, int, int);
	int (*host_register)(void *, size_t, unsigned);
	int (*host_unregister)(void *);
} cu;

static void *sym(void *lib, const char *name)
{
	void *p = dlsym(lib, name);

	if (!p)
		t_skip("libcuda.so.1 has no %s: not the fake driver", name);
	return p;
}

#define CU_SYM(field, name) (*(void **)&cu.field = sym(lib, name))

static void cuda_load(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	void *ctx;

	if (!lib)
		t_skip("no CUDA driver (libcuda.so.1): %s", dlerror());
	CU_SYM(stat, "fake_cuda_stat");
	CU_SYM(set_async, "fake_cuda_set_async");
	CU_SYM(fail_copies, "fake_cuda_fail_copies");
	CU_SYM(primary_retain, "cuDevicePrimaryCtxRetain");
	CU_SYM(ctx_set_current, "cuCtxSetCurrent");
	CU_SYM(mem_alloc, "cuMemAlloc_v2");
	CU_SYM(mem_free, "cuMemFree_v2");
	CU_SYM(host_register, "cuMemHostRegister_v2");
	CU_SYM(host_unregister, "cuMemHostUnregister");
	CHECK_OK(cu.primary_retain(&ctx, 0));
	CHECK_OK(cu.ctx_set_current(ctx));
}

/* GPU memory of the fake: host memory, readable here. */
static uint8_t *gpu_alloc(size_t len)
{
	unsigned long long p = 0;

	CHECK_OK(cu.mem_alloc(&p, len));
	return (uint8_t *)(uintptr_t)p;
}

static void gpu_free(void *p)
{
	CHECK_OK(cu.mem_free((uintptr_t)p));
}

struct stats {
	long batch_calls, batch_copies, htod, dtoh, dtod, stream_sync;
};

static struct stats stats_now(void)
{
	return (struct stats){cu.stat("batch_calls"), cu.stat("batch_copies"),
	                      cu.stat("async_htod"),  cu.stat("async_dtoh"),
	                      cu.stat("async_dtod"),  cu.stat("stream_sync")};
}

static struct stats stats_since(const struct stats *a)
{
	struct stats b = stats_now();

	return (struct stats){b.batch_calls - a->batch_calls,
	                      b.batch_copies - a->batch_copies,
	                      b.htod - a->htod,
	                      b.dtoh - a->dtoh,
	                      b.dtod - a->dtod,
	                      b.stream_sync - a->stream_sync};
}

static void print_stats(const char *what, const struct stats *s)
{
	printf("%s: %ld batch calls (%ld copies), %ld HtoD, %ld DtoH, %ld DtoD, %ld stream syncs\n",
	       what, s->batch_calls, s->batch_copies, s->htod, s->dtoh, s->dtod, s->stream_sync);
}

static struct ibv_send_wr rdma_wr(uint64_t id, enum ibv_wr_opcode op, struct ibv_sge *sge,
                                  uint64_t raddr, uint32_t rkey, unsigned flags)
{
	struct ibv_send_wr wr = {
	    .wr_id = id, .sg_list = sge, .num_sge = 1, .opcode = op, .send_flags = flags};

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return wr;
}

/* Post n WRs as one chain (one doorbell). */
static void post_chain(struct ibv_qp *qp, struct ibv_send_wr *wr, int n)
{
	for (int i = 0; i + 1 < n; i++)
		wr[i].next = &wr[i + 1];
	wr[n - 1].next = NULL;
	t_post_send(qp, wr);
}

static struct ibv_context *ctx;
static struct t_pair pair;

static void pair_open(void)
{
	struct t_conn_opts o;

	t_conn_opts_default(&o);
	o.timeout = 18; /* 1 s: late copies are not lost requests */
	ctx = t_open(T_DEVICE);
	t_pair_create(&pair, ctx, NULL, &o, 0);
}

static void pair_close(void)
{
	t_pair_destroy(&pair);
	CHECK_OK(ibv_close_device(ctx));
}

#define SLOT 4096
#define NWR  64

static void case_order(void)
{
	uint8_t *src = t_alloc(NWR * SLOT, 0), *host = t_alloc(NWR * SLOT, 0xee);
	uint8_t *gpu = gpu_alloc(NWR * SLOT);
	struct ibv_mr *smr, *hmr, *gmr;
	struct ibv_send_wr wr[NWR];
	struct ibv_sge sge[NWR];
	struct ibv_wc wc;

	memset(gpu, 0xee, NWR * SLOT);
	for (int i = 0; i < NWR; i++)
		t_fill(src + i * SLOT, SLOT, 100 + i);
	pair_open();
	smr = t_reg(pair.pd, src, NWR * SLOT, T_ACCESS_ALL);
	hmr = t_reg(pair.pd, host, NWR * SLOT, T_ACCESS_ALL);
	gmr = t_reg(pair.pd, gpu, NWR * SLOT, T_ACCESS_ALL);
	cu.set_async(2000);
	for (int i = 0; i < NWR; i++) {
		bool to_gpu = i % 2 == 0;

		sge[i] = (struct ibv_sge){(uintptr_t)(src + i * SLOT), SLOT, smr->lkey};
		wr[i] = rdma_wr(i, IBV_WR_RDMA_WRITE, &sge[i],
		                (uintptr_t)((to_gpu ? gpu : host) + i * SLOT),
		                to_gpu ? gmr->rkey : hmr->rkey, IBV_SEND_SIGNALED);
	}
	post_chain(pair.qp[0], wr, NWR);
	for (int i = 0; i < NWR; i++) {
		uint8_t *dst = (i % 2 == 0 ? gpu : host) + i * SLOT;

		wc = t_poll1(pair.scq[0], "WRITE");
		CHECK_WC(&wc, (uint64_t)i, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		CHECK_MEM(dst, src + i * SLOT, SLOT); /* landed before its CQE */
	}
	cu.set_async(0);
	CHECK_OK(ibv_dereg_mr(smr));
	CHECK_OK(ibv_dereg_mr(hmr));
	CHECK_OK(ibv_dereg_mr(gmr));
	pair_close();
	gpu_free(gpu);
	free(src);
	free(host);
}

static void case_not_held(void)
{
	struct ibv_context *c2;
	struct t_pair p2;
	uint8_t *src = t_alloc(SLOT, 0), *host = t_alloc(SLOT, 0), *gpu = gpu_alloc(SLOT);
	struct ibv_mr *smr, *gmr, *smr2, *hmr2;
	struct ibv_sge sge = {0}, sge2 = {0};
	struct ibv_send_wr wr, wr2;
	struct ibv_wc wc;
	struct t_conn_opts o;
	uint64_t t0, t_host;

	t_fill(src, SLOT, 7);
	pair_open();
	t_conn_opts_default(&o);
	o.timeout = 18;
	c2 = t_open(T_DEVICE);
	t_pair_create(&p2, c2, NULL, &o, 0);
	smr = t_reg(pair.pd, src, SLOT, T_ACCESS_ALL);
	gmr = t_reg(pair.pd, gpu, SLOT, T_ACCESS_ALL);
	smr2 = t_reg(p2.pd, src, SLOT, T_ACCESS_ALL);
	hmr2 = t_reg(p2.pd, host, SLOT, T_ACCESS_ALL);
	cu.set_async(400000);
	sge = (struct ibv_sge){(uintptr_t)src, SLOT, smr->lkey};
	wr = rdma_wr(1, IBV_WR_RDMA_WRITE, &sge, (uintptr_t)gpu, gmr->rkey, IBV_SEND_SIGNALED);
	t0 = t_now_ms();
	t_post_send(pair.qp[0], &wr);
	t_sleep_ms(5); /* the engine took the GPU WRITE first */
	sge2 = (struct ibv_sge){(uintptr_t)src, SLOT, smr2->lkey};
	wr2 = rdma_wr(2, IBV_WR_RDMA_WRITE, &sge2, (uintptr_t)host, hmr2->rkey, IBV_SEND_SIGNALED);
	t_post_send(p2.qp[0], &wr2);
	wc = t_poll1(p2.scq[0], "host WRITE");
	t_host = t_now_ms() - t0;
	CHECK_WC(&wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(host, src, SLOT);
	printf("host-memory WRITE done %llu ms after the GPU one was posted\n",
	       (unsigned long long)t_host);
	if (t_host >= 300)
		T_FAIL("the host-memory WRITE waited %llu ms: the engine was held by a GPU copy",
		       (unsigned long long)t_host);
	t_expect_empty(pair.scq[0], "GPU WRITE before its copy is done");
	wc = t_poll1(pair.scq[0], "GPU WRITE");
	CHECK_WC(&wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_GE(t_now_ms() - t0, 400);
	CHECK_MEM(gpu, src, SLOT);
	cu.set_async(0);
	CHECK_OK(ibv_dereg_mr(smr));
	CHECK_OK(ibv_dereg_mr(gmr));
	CHECK_OK(ibv_dereg_mr(smr2));
	CHECK_OK(ibv_dereg_mr(hmr2));
	t_pair_destroy(&p2);
	CHECK_OK(ibv_close_device(c2));
	pair_close();
	gpu_free(gpu);
	free(src);
	free(host);
}

/* 32 GPU-to-GPU WRITEs in one chain: what the driver was asked for. */
static struct stats gpu_writes(int n, long async_us)
{
	uint8_t *src = gpu_alloc((size_t)n * SLOT), *dst = gpu_alloc((size_t)n * SLOT);
	struct ibv_send_wr wr[NWR];
	struct ibv_sge sge[NWR];
	struct ibv_mr *smr, *dmr;
	struct ibv_wc wc[NWR];
	struct stats s0, ds;

	for (int i = 0; i < n; i++)
		t_fill(src + i * SLOT, SLOT, 300 + i);
	memset(dst, 0, (size_t)n * SLOT);
	pair_open();
	smr = t_reg(pair.pd, src, (size_t)n * SLOT, T_ACCESS_ALL);
	dmr = t_reg(pair.pd, dst, (size_t)n * SLOT, T_ACCESS_ALL);
	cu.set_async(async_us);
	for (int i = 0; i < n; i++) {
		sge[i] = (struct ibv_sge){(uintptr_t)(src + i * SLOT), SLOT, smr->lkey};
		wr[i] = rdma_wr(i, IBV_WR_RDMA_WRITE, &sge[i], (uintptr_t)(dst + i * SLOT),
		                dmr->rkey, i == n - 1 ? IBV_SEND_SIGNALED : 0);
	}
	s0 = stats_now();
	post_chain(pair.qp[0], wr, n);
	t_poll(pair.scq[0], 1, wc, "GPU WRITEs");
	CHECK_WC(&wc[0], (uint64_t)(n - 1), IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	ds = stats_since(&s0);
	CHECK_MEM(dst, src, (size_t)n * SLOT);
	cu.set_async(0);
	CHECK_OK(ibv_dereg_mr(smr));
	CHECK_OK(ibv_dereg_mr(dmr));
	pair_close();
	gpu_free(src);
	gpu_free(dst);
	return ds;
}

static void case_batch(void)
{
	struct stats s = gpu_writes(32, 500);

	print_stats("32 GPU-to-GPU WRITEs", &s);
	CHECK_GE(s.batch_calls, 1);
	CHECK_GE(s.batch_copies, 32);
	CHECK(s.batch_calls < 32); /* batched, not one call each */
	CHECK_EQ(s.htod + s.dtoh, 0);
	CHECK_EQ(s.stream_sync, 0);
}

static void case_nobatch(void)
{
	struct stats s = gpu_writes(32, 500);

	print_stats("32 GPU-to-GPU WRITEs without cuMemcpyBatchAsync", &s);
	CHECK_EQ(s.batch_calls, 0);
	CHECK_GE(s.dtod, 32);
	CHECK_EQ(s.htod + s.dtoh, 0);
	CHECK_EQ(s.stream_sync, 0);
}

static void case_d2d(void)
{
	uint8_t *a = gpu_alloc(3 * SLOT), *b = gpu_alloc(3 * SLOT);
	struct ibv_mr *amr, *bmr;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct stats s0, s;

	t_fill(a, 3 * SLOT, 11);
	memset(b, 0, 3 * SLOT);
	pair_open();
	amr = t_reg(pair.pd, a, 3 * SLOT, T_ACCESS_ALL);
	bmr = t_reg(pair.pd, b, 3 * SLOT, T_ACCESS_ALL);
	s0 = stats_now();

	sge = (struct ibv_sge){(uintptr_t)a, SLOT, amr->lkey};
	wr = rdma_wr(1, IBV_WR_RDMA_WRITE, &sge, (uintptr_t)b, bmr->rkey, IBV_SEND_SIGNALED);
	t_post_send(pair.qp[0], &wr);
	wc = t_poll1(pair.scq[0], "WRITE");
	CHECK_WC(&wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(b, a, SLOT);

	t_post_recv_buf(pair.qp[1], 9, b + SLOT, SLOT, bmr->lkey);
	sge = (struct ibv_sge){(uintptr_t)(a + SLOT), SLOT, amr->lkey};
	wr = rdma_wr(2, IBV_WR_SEND, &sge, 0, 0, IBV_SEND_SIGNALED);
	t_post_send(pair.qp[0], &wr);
	wc = t_poll1(pair.scq[0], "SEND");
	CHECK_WC(&wc, 2, IBV_WC_SUCCESS, IBV_WC_SEND);
	wc = t_poll1(pair.rcq[1], "receive");
	CHECK_WC(&wc, 9, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, SLOT);
	CHECK_MEM(b + SLOT, a + SLOT, SLOT);

	s = stats_since(&s0);
	print_stats("GPU-to-GPU WRITE and SEND", &s);
	CHECK_GE(s.dtod + s.batch_copies, 2);
	CHECK_EQ(s.htod + s.dtoh, 0); /* nothing went through host memory */
	CHECK_EQ(s.stream_sync, 0);
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	pair_close();
	gpu_free(a);
	gpu_free(b);
}

static void case_pinned(void)
{
	uint8_t *pin = t_alloc(2 * SLOT, 0), *page = t_alloc(SLOT, 0), *g = gpu_alloc(2 * SLOT);
	struct ibv_mr *pmr, *qmr, *gmr;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	long reg0, alloc0, reg1, alloc1;

	CHECK_OK(cu.host_register(pin, 2 * SLOT, 0));
	t_fill(pin, SLOT, 51);
	t_fill(page, SLOT, 52);
	t_fill(g + SLOT, SLOT, 53);
	pair_open();
	pmr = t_reg(pair.pd, pin, 2 * SLOT, T_ACCESS_ALL);
	qmr = t_reg(pair.pd, page, SLOT, T_ACCESS_ALL);
	gmr = t_reg(pair.pd, g, 2 * SLOT, T_ACCESS_ALL);

	t_case("pinned: WRITEs from and into registered host memory copy it directly");
	reg0 = cu.stat("host_registered");
	alloc0 = cu.stat("host_alloc");
	sge = (struct ibv_sge){(uintptr_t)pin, SLOT, pmr->lkey};
	wr = rdma_wr(1, IBV_WR_RDMA_WRITE, &sge, (uintptr_t)g, gmr->rkey, IBV_SEND_SIGNALED);
	t_post_send(pair.qp[0], &wr);
	wc = t_poll1(pair.scq[0], "WRITE from pinned memory");
	CHECK_WC(&wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(g, pin, SLOT);
	sge = (struct ibv_sge){(uintptr_t)(g + SLOT), SLOT, gmr->lkey};
	wr = rdma_wr(2, IBV_WR_RDMA_WRITE, &sge, (uintptr_t)(pin + SLOT), pmr->rkey,
	             IBV_SEND_SIGNALED);
	t_post_send(pair.qp[0], &wr);
	wc = t_poll1(pair.scq[0], "WRITE into pinned memory");
	CHECK_WC(&wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(pin + SLOT, g + SLOT, SLOT);
	reg1 = cu.stat("host_registered") - reg0;
	alloc1 = cu.stat("host_alloc") - alloc0;
	printf("pinned: %ld copies with registered memory, %ld through a bounce buffer\n", reg1,
	       alloc1);
	CHECK_GE(reg1, 2);
	CHECK_EQ(alloc1, 0);

	t_case("pinned: a WRITE from pageable memory goes through the bounce ring");
	alloc0 = cu.stat("host_alloc");
	sge = (struct ibv_sge){(uintptr_t)page, SLOT, qmr->lkey};
	wr = rdma_wr(3, IBV_WR_RDMA_WRITE, &sge, (uintptr_t)g, gmr->rkey, IBV_SEND_SIGNALED);
	t_post_send(pair.qp[0], &wr);
	wc = t_poll1(pair.scq[0], "WRITE from pageable memory");
	CHECK_WC(&wc, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(g, page, SLOT);
	CHECK_GE(cu.stat("host_alloc") - alloc0, 1);

	CHECK_OK(ibv_dereg_mr(pmr));
	CHECK_OK(ibv_dereg_mr(qmr));
	CHECK_OK(ibv_dereg_mr(gmr));
	pair_close();
	CHECK_OK(cu.host_unregister(pin));
	gpu_free(g);
	free(pin);
	free(page);
}

static void case_mixed(void)
{
	uint8_t *g = gpu_alloc(4 * SLOT), *h = t_alloc(4 * SLOT, 0), *r = gpu_alloc(4 * SLOT);
	struct ibv_mr *gmr, *hmr, *rmr;
	struct ibv_send_wr wr[3];
	struct ibv_sge sge[3];
	struct ibv_wc wc;
	uint64_t *word = (uint64_t *)(void *)(g + 3 * SLOT), val = 0x1122334455667788ull;
	uint64_t fetched = 0;

	t_fill(g, 3 * SLOT, 21);
	memset(r, 0, 4 * SLOT);
	*word = 5;
	pair_open();
	gmr = t_reg(pair.pd, g, 4 * SLOT, T_ACCESS_ALL);
	hmr = t_reg(pair.pd, h, 4 * SLOT, T_ACCESS_ALL);
	rmr = t_reg(pair.pd, r, 4 * SLOT, T_ACCESS_ALL);
	cu.set_async(1000);

	t_case("mixed: READ from GPU memory into GPU and host memory");
	sge[0] = (struct ibv_sge){(uintptr_t)r, SLOT, rmr->lkey};
	sge[1] = (struct ibv_sge){(uintptr_t)h, SLOT, hmr->lkey};
	wr[0] = rdma_wr(1, IBV_WR_RDMA_READ, &sge[0], (uintptr_t)g, gmr->rkey, IBV_SEND_SIGNALED);
	wr[1] = rdma_wr(2, IBV_WR_RDMA_READ, &sge[1], (uintptr_t)(g + SLOT), gmr->rkey,
	                IBV_SEND_SIGNALED);
	post_chain(pair.qp[0], wr, 2);
	wc = t_poll1(pair.scq[0], "READ into GPU memory");
	CHECK_WC(&wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_MEM(r, g, SLOT);
	wc = t_poll1(pair.scq[0], "READ into host memory");
	CHECK_WC(&wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_MEM(h, g + SLOT, SLOT);

	t_case("mixed: a 16-byte SEND from GPU memory lands in the receive CQE");
	t_post_recv_buf(pair.qp[1], 5, h + 2 * SLOT, SLOT, hmr->lkey);
	sge[0] = (struct ibv_sge){(uintptr_t)(g + 2 * SLOT), 16, gmr->lkey};
	wr[0] = rdma_wr(3, IBV_WR_SEND, &sge[0], 0, 0, IBV_SEND_SIGNALED);
	t_post_send(pair.qp[0], &wr[0]);
	wc = t_poll1(pair.rcq[1], "receive");
	CHECK_WC(&wc, 5, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 16);
	CHECK_MEM(h + 2 * SLOT, g + 2 * SLOT, 16); /* poll_cq copied it from the CQE */
	wc = t_poll1(pair.scq[0], "SEND");
	CHECK_WC(&wc, 3, IBV_WC_SUCCESS, IBV_WC_SEND);

	t_case("mixed: a fetch-add right after a WRITE to the same GPU word sees it");
	memcpy(h + 3 * SLOT, &val, 8);
	sge[0] = (struct ibv_sge){(uintptr_t)(h + 3 * SLOT), 8, hmr->lkey};
	wr[0] = rdma_wr(4, IBV_WR_RDMA_WRITE, &sge[0], (uintptr_t)word, gmr->rkey, 0);
	sge[1] = (struct ibv_sge){(uintptr_t)(r + 3 * SLOT), 8, rmr->lkey};
	wr[1] = (struct ibv_send_wr){.wr_id = 5,
	                             .sg_list = &sge[1],
	                             .num_sge = 1,
	                             .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
	                             .send_flags = IBV_SEND_SIGNALED};
	wr[1].wr.atomic.remote_addr = (uintptr_t)word;
	wr[1].wr.atomic.rkey = gmr->rkey;
	wr[1].wr.atomic.compare_add = 1;
	post_chain(pair.qp[0], wr, 2);
	wc = t_poll1(pair.scq[0], "fetch-add");
	CHECK_WC(&wc, 5, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD);
	memcpy(&fetched, r + 3 * SLOT, 8); /* GPU memory of the fake: readable */
	CHECK_EQ(fetched, val);
	CHECK_EQ(*word, val + 1);

	cu.set_async(0);
	CHECK_OK(ibv_dereg_mr(gmr));
	CHECK_OK(ibv_dereg_mr(hmr));
	CHECK_OK(ibv_dereg_mr(rmr));
	pair_close();
	gpu_free(g);
	gpu_free(r);
	free(h);
}

/* stderr into a file while the engine logs a failure; the file's text. */
static int err_fd = -1, saved_fd = -1;
static char err_path[] = "/tmp/gnic-cuda-async-XXXXXX";

static void log_capture(void)
{
	fflush(stderr);
	err_fd = mkstemp(err_path);
	CHECK(err_fd >= 0);
	saved_fd = dup(STDERR_FILENO);
	CHECK(saved_fd >= 0);
	CHECK(dup2(err_fd, STDERR_FILENO) >= 0);
}

static void log_release(char *text, size_t size)
{
	ssize_t n;

	CHECK(dup2(saved_fd, STDERR_FILENO) >= 0);
	close(saved_fd);
	n = pread(err_fd, text, size - 1, 0);
	text[n > 0 ? n : 0] = 0;
	close(err_fd);
	unlink(err_path);
	fputs(text, stderr); /* the log still shows */
}

/* A WRITE into GPU memory and a READ into GPU memory whose copies fail. */
static void fail_cases(int at_run)
{
	uint8_t *src = t_alloc(SLOT, 0), *gpu = gpu_alloc(SLOT);
	struct ibv_mr *smr, *gmr;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	int err = at_run ? ERR_ILLEGAL_ADDRESS : ERR_INVALID_VALUE;
	char text[4096];

	t_fill(src, SLOT, 3);
	memset(gpu, 0x77, SLOT);
	pair_open();
	smr = t_reg(pair.pd, src, SLOT, T_ACCESS_ALL);
	gmr = t_reg(pair.pd, gpu, SLOT, T_ACCESS_ALL);
	cu.set_async(at_run ? 1000 : 0);

	t_case("%s: a WRITE whose copy into GPU memory fails", at_run ? "fail_run" : "fail_issue");
	cu.fail_copies(1, at_run, err);
	sge = (struct ibv_sge){(uintptr_t)src, SLOT, smr->lkey};
	wr = rdma_wr(1, IBV_WR_RDMA_WRITE, &sge, (uintptr_t)gpu, gmr->rkey, IBV_SEND_SIGNALED);
	log_capture();
	t_post_send(pair.qp[0], &wr);
	wc = t_poll1(pair.scq[0], "failed WRITE");
	log_release(text, sizeof(text));
	CHECK_WC(&wc, 1, IBV_WC_REM_ACCESS_ERR, -1);
	CHECK_EQ(t_qp_state(pair.qp[1]), IBV_QPS_ERR);
	/* the log names the driver's error */
	if (!strstr(text, at_run ? "CUDA_ERROR_ILLEGAL_ADDRESS" : "CUDA_ERROR_INVALID_VALUE"))
		T_FAIL("the failed copy's CUDA error is not named in the log");
	CHECK_BYTES(gpu, 0x77, SLOT - 1); /* nothing of it landed */

	t_case("%s: a READ whose copy into GPU memory fails", at_run ? "fail_run" : "fail_issue");
	t_pair_reconnect(&pair);
	cu.fail_copies(1, at_run, err);
	sge = (struct ibv_sge){(uintptr_t)gpu, SLOT, gmr->lkey};
	wr = rdma_wr(2, IBV_WR_RDMA_READ, &sge, (uintptr_t)src, smr->rkey, IBV_SEND_SIGNALED);
	t_post_send(pair.qp[0], &wr);
	wc = t_poll1(pair.scq[0], "failed READ");
	CHECK_WC(&wc, 2, IBV_WC_LOC_PROT_ERR, -1);

	t_case("%s: after a reconnect copies work again", at_run ? "fail_run" : "fail_issue");
	cu.fail_copies(0, 0, 0);
	t_pair_reconnect(&pair);
	wr = rdma_wr(3, IBV_WR_RDMA_WRITE, &sge, (uintptr_t)src, smr->rkey, IBV_SEND_SIGNALED);
	sge = (struct ibv_sge){(uintptr_t)gpu, SLOT, gmr->lkey};
	memset(gpu, 0x42, SLOT);
	t_post_send(pair.qp[0], &wr);
	wc = t_poll1(pair.scq[0], "WRITE from GPU memory");
	CHECK_WC(&wc, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_BYTES(src, 0x42, SLOT);

	cu.set_async(0);
	CHECK_OK(ibv_dereg_mr(smr));
	CHECK_OK(ibv_dereg_mr(gmr));
	pair_close();
	gpu_free(gpu);
	free(src);
}

static void case_fail_run(void)
{
	fail_cases(1);
}

static void case_fail_issue(void)
{
	fail_cases(0);
}

/* Pairs on as many engine workers as there are (run with several) copy
 * GPU to GPU at once, through few streams: a GPU has few hardware queues
 * (8 by default), and a copy on a queue that the application's persistent
 * kernel shares waits for that kernel, which waits for the copy (an H200
 * with 8 workers, one stream each, stalled every WRITE). */
#define STREAM_PAIRS 6
static void case_streams(void)
{
	struct t_pair p[STREAM_PAIRS];
	struct ibv_mr *amr[STREAM_PAIRS], *bmr[STREAM_PAIRS];
	struct t_conn_opts o;
	uint8_t *a = gpu_alloc(STREAM_PAIRS * SLOT), *b = gpu_alloc(STREAM_PAIRS * SLOT);
	long created = cu.stat("stream_create");
	int workers[STREAM_PAIRS];

	t_fill(a, STREAM_PAIRS * SLOT, 5);
	memset(b, 0, STREAM_PAIRS * SLOT);
	t_conn_opts_default(&o);
	o.timeout = 18;
	ctx = t_open(T_DEVICE);
	for (int i = 0; i < STREAM_PAIRS; i++) {
		t_pair_create(&p[i], ctx, NULL, &o, 0);
		workers[i] = gemu_qp_engine_worker(p[i].qp[0]);
		amr[i] = t_reg(p[i].pd, a + i * SLOT, SLOT, T_ACCESS_ALL);
		bmr[i] = t_reg(p[i].pd, b + i * SLOT, SLOT, T_ACCESS_ALL);
	}
	/* placement spreads independent pairs: each copies on its own worker */
	for (int i = 1; i < STREAM_PAIRS; i++)
		CHECK(workers[i] != workers[0]);
	for (int i = 0; i < STREAM_PAIRS; i++) {
		struct ibv_sge sge = {(uintptr_t)(a + i * SLOT), SLOT, amr[i]->lkey};
		struct ibv_send_wr wr =
		    rdma_wr((uint64_t)i, IBV_WR_RDMA_WRITE, &sge, (uintptr_t)(b + i * SLOT),
		            bmr[i]->rkey, IBV_SEND_SIGNALED);

		t_post_send(p[i].qp[0], &wr);
	}
	for (int i = 0; i < STREAM_PAIRS; i++) {
		struct ibv_wc wc = t_poll1(p[i].scq[0], "WRITE");

		CHECK_WC(&wc, (uint64_t)i, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	}
	CHECK_MEM(b, a, STREAM_PAIRS * SLOT);
	printf("streams: %ld created for %d pairs\n", cu.stat("stream_create") - created,
	       STREAM_PAIRS);
	CHECK(cu.stat("stream_create") - created <= 3);
	for (int i = 0; i < STREAM_PAIRS; i++) {
		CHECK_OK(ibv_dereg_mr(amr[i]));
		CHECK_OK(ibv_dereg_mr(bmr[i]));
		t_pair_destroy(&p[i]);
	}
	CHECK_OK(ibv_close_device(ctx));
}

/* 64 READs of GPU memory into GPU memory rung at once (8 outstanding at a
 * time), copies late: an answer that arrives while the READ before it
 * still copies its data is in order, not dropped (each dropped answer cost
 * a transport timeout). With the copy kernel (by_kernel), the responder's
 * reads (into the ring) and the requester's writes (from it) are its. */
static void gpu_reads(int by_kernel)
{
	enum { N = 64, SZ = 256 };
	uint8_t *a = gpu_alloc(N * SZ), *b = gpu_alloc(N * SZ);
	struct ibv_send_wr wr[N];
	struct ibv_sge sge[N];
	struct ibv_mr *amr, *bmr;
	struct ibv_wc wc[N];
	long c0 = cu.stat("kernel_copies");

	t_case("64 READs from GPU memory into GPU memory");
	t_fill(a, N * SZ, 71);
	memset(b, 0, N * SZ);
	pair_open();
	amr = t_reg(pair.pd, a, N * SZ, T_ACCESS_ALL);
	bmr = t_reg(pair.pd, b, N * SZ, T_ACCESS_ALL);
	cu.set_async(300);
	for (int i = 0; i < N; i++) {
		sge[i] = (struct ibv_sge){(uintptr_t)(b + i * SZ), SZ, bmr->lkey};
		wr[i] = rdma_wr(i, IBV_WR_RDMA_READ, &sge[i], (uintptr_t)(a + i * SZ), amr->rkey,
		                i == N - 1 ? IBV_SEND_SIGNALED : 0);
	}
	post_chain(pair.qp[0], wr, N);
	t_poll(pair.scq[0], 1, wc, "GPU READs");
	CHECK_WC(&wc[0], (uint64_t)(N - 1), IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_MEM(b, a, N * SZ);
	if (by_kernel)
		CHECK_GE(cu.stat("kernel_copies") - c0, 2 * N);
	cu.set_async(0);
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	pair_close();
	gpu_free(a);
	gpu_free(b);
}

static void case_reads(void)
{
	gpu_reads(0);
}

static void case_kernel(void)
{
	long l0 = cu.stat("kernel_launches"), c0 = cu.stat("kernel_copies");
	uint8_t *page = t_alloc(SLOT, 0), *g = gpu_alloc(SLOT);
	struct ibv_mr *qmr, *gmr;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct stats s = gpu_writes(32, 500);
	long launches = cu.stat("kernel_launches") - l0, copies = cu.stat("kernel_copies") - c0;

	print_stats("32 GPU-to-GPU WRITEs with the copy kernel", &s);
	printf("kernel: %ld launches, %ld copies\n", launches, copies);
	CHECK_GE(launches, 1);
	CHECK(launches < 32); /* one per engine pass, not per WRITE */
	CHECK_EQ(copies, 32); /* a WRITE is one copy: the kernel writes its last byte last */
	CHECK_EQ(s.batch_calls + s.htod + s.dtoh + s.dtod + s.stream_sync, 0);

	t_case("kernel: a WRITE from pageable memory, through the mapped ring");
	t_fill(page, SLOT, 61);
	memset(g, 0, SLOT);
	pair_open();
	qmr = t_reg(pair.pd, page, SLOT, T_ACCESS_ALL);
	gmr = t_reg(pair.pd, g, SLOT, T_ACCESS_ALL);
	s = stats_now();
	c0 = cu.stat("kernel_copies");
	sge = (struct ibv_sge){(uintptr_t)page, SLOT, qmr->lkey};
	wr = rdma_wr(1, IBV_WR_RDMA_WRITE, &sge, (uintptr_t)g, gmr->rkey, IBV_SEND_SIGNALED);
	t_post_send(pair.qp[0], &wr);
	wc = t_poll1(pair.scq[0], "WRITE from pageable memory");
	CHECK_WC(&wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(g, page, SLOT);
	CHECK_EQ(cu.stat("kernel_copies") - c0, 1);
	s = stats_since(&s);
	CHECK_EQ(s.htod + s.batch_calls, 0);

	t_case("kernel: a launch the driver refuses: the driver's copies, nothing lost");
	t_fill(page, SLOT, 62);
	cu.fail_copies(1, 0, ERR_INVALID_VALUE);
	s = stats_now();
	wr.wr_id = 2;
	t_post_send(pair.qp[0], &wr);
	wc = t_poll1(pair.scq[0], "WRITE after a refused launch");
	CHECK_WC(&wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(g, page, SLOT);
	s = stats_since(&s);
	CHECK_GE(s.htod, 1); /* body and last byte, one call each */
	CHECK_OK(ibv_dereg_mr(qmr));
	CHECK_OK(ibv_dereg_mr(gmr));
	pair_close();
	gpu_free(g);
	free(page);
}

static void case_kernel_reads(void)
{
	gpu_reads(1);
}

static const struct t_named_case cases[] = {
    {"order", case_order},       {"not_held", case_not_held},     {"batch", case_batch},
    {"d2d", case_d2d},           {"pinned", case_pinned},         {"mixed", case_mixed},
    {"fail_run", case_fail_run}, {"fail_issue", case_fail_issue}, {"streams", case_streams},
    {"reads", case_reads},
};

static const struct t_named_case nobatch[] = {{"nobatch", case_nobatch}};
static const struct t_named_case kernel[] = {{"kernel", case_kernel},
                                             {"kernel_reads", case_kernel_reads}};

int main(int argc, char **argv)
{
	cuda_load();
	if (argc > 1 && !strcmp(argv[1], "nobatch"))
		T_RUN_CASES(nobatch, argc, argv);
	else if (argc > 1 && !strncmp(argv[1], "kernel", 6))
		T_RUN_CASES(kernel, argc, argv);
	else
		T_RUN_CASES(cases, argc, argv);
	printf("PASS\n");
	return 0;
}
