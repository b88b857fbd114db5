/* SPDX-License-Identifier: MIT */
/*
 * libgnic's GPU placement, on a machine without a GPU: with the fake CUDA
 * driver of tests/gnic/fake_cuda.c first on LD_LIBRARY_PATH, a context on
 * "GPU 0" places every QP as for a GPU (struct and tracking arrays in
 * "device memory", queues, doorbell page and the proxy's block registered
 * and addressed by device pointers), and since a device pointer is the host
 * address, CPU threads run the device calls on it:
 *   - SM and PROXY QPs of a GPU context carry every operation, byte-checked;
 *   - a bad rkey on a PROXY QP, then reset (the struct in "GPU memory"
 *     rewritten, the proxy's state rewound) and reconnect;
 *   - nothing stays registered or allocated once the context is gone;
 *   - (argument "nomap", with GNIC_DB_MAP=off) AUTO falls back to the proxy
 *     in the GPU placement, with the reason logged by default; SM is refused;
 *   - (argument "queue") queue placement in a GPU context: AUTO gives host
 *     queues on gnic-emu; GPU gives
 *     GPU queues (DEVX umem in "GPU memory", which gnic-emu reaches through
 *     CUDA copies), SM and BF; HOST_DEVX (DEVX queues in host memory,
 *     mapped); each carries every operation, an error, reset and reconnect;
 *     PROXY and CPU QPs keep host queues under AUTO and refuse GPU;
 *   - (argument "queue_nodevx", with GNIC_EMU_DEVX=0) AUTO gives host queues,
 *     GPU is refused naming why;
 *   - (argument "eth") Ethernet queues of a GPU context, one with its pool in
 *     "GPU memory", one in mapped host memory, and a hand-off ring: frames
 *     sent through the emulator's loopback port, received, sent back from
 *     their buffer and received again, byte-checked; nothing left behind;
 *   - (argument "mr", with GNIC_EMU_LOG=3) GPU memory is registered with
 *     IBV_ACCESS_RELAXED_ORDERING, host memory without, as gnic-emu's
 *     debug line of each registration shows; both registrations work.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include "dev_common.h"

struct fpair {
	struct gnic_qp *qa, *qb;
	struct gnic_dev_qp *a, *b;
	uint8_t *abuf, *bbuf;
	struct gnic_mr *amr, *bmr;
	struct gnic_rmem brm;
};

#define LEN 65536

static struct gnic_ctx *open_ctx(void)
{
	struct gnic_ctx_attr ca;
	struct gnic_ctx_info info;
	struct gnic_ctx *ctx;

	gnic_ctx_attr_init(&ca);
	ca.provider = GNIC_PROVIDER_EMU;
	ca.gpu = 0; /* the fake driver's one GPU; an error without it */
	CHECK_GNIC(gnic_ctx_create(&ca, &ctx));
	CHECK_GNIC(gnic_ctx_query(ctx, &info));
	CHECK_EQ(info.gpu, 0);
	CHECK(strstr(info.gpu_name, "fake") != NULL);
	return ctx;
}

static void connect_both(struct fpair *p)
{
	struct gnic_blob ba, bb;

	CHECK_GNIC(gnic_qp_export(p->qa, &ba));
	CHECK_GNIC(gnic_qp_export(p->qb, &bb));
	CHECK_GNIC(gnic_qp_connect(p->qa, &bb));
	CHECK_GNIC(gnic_qp_connect(p->qb, &ba));
}

static void fpair_open_q(struct gnic_ctx *ctx, struct fpair *p, enum gnic_db_mode mode,
                         enum gnic_db_mode want, enum gnic_queue queue)
{
	struct gnic_qp_attr attr;

	memset(p, 0, sizeof(*p));
	gnic_qp_attr_init(&attr);
	attr.db_mode = mode;
	attr.queue = (uint8_t)queue;
	CHECK_GNIC(gnic_qp_create(ctx, &attr, &p->qa));
	CHECK_GNIC(gnic_qp_create(ctx, &attr, &p->qb));
	p->a = gnic_qp_dev(p->qa);
	p->b = gnic_qp_dev(p->qb);
	CHECK_EQ(p->a->magic, GNIC_DEV_QP_MAGIC);
	CHECK_EQ(p->a->db_mode, want);
	CHECK(want == GNIC_DB_PROXY ? p->a->px != NULL : p->a->px == NULL);
	connect_both(p);
	CHECK_EQ(posix_memalign((void **)&p->abuf, 4096, LEN), 0);
	CHECK_EQ(posix_memalign((void **)&p->bbuf, 4096, LEN), 0);
	memset(p->abuf, 0, LEN);
	memset(p->bbuf, 0, LEN);
	CHECK_GNIC(gnic_mr_reg(ctx, p->abuf, LEN, GNIC_ACCESS_ALL, &p->amr));
	CHECK_GNIC(gnic_mr_reg(ctx, p->bbuf, LEN, GNIC_ACCESS_ALL, &p->bmr));
	gnic_mr_rmem(p->bmr, &p->brm);
}

static void fpair_open(struct gnic_ctx *ctx, struct fpair *p, enum gnic_db_mode mode,
                       enum gnic_db_mode want)
{
	fpair_open_q(ctx, p, mode, want, GNIC_QUEUE_AUTO);
}

static void fpair_close(struct fpair *p)
{
	gnic_mr_dereg(p->amr);
	gnic_mr_dereg(p->bmr);
	gnic_qp_destroy(p->qa);
	gnic_qp_destroy(p->qb);
	free(p->abuf);
	free(p->bbuf);
}

/* Every kind of operation from this thread, each checked. */
static void ops(struct fpair *p)
{
	uint32_t lkey = gnic_mr_lkey(p->amr);
	uint64_t *word = (uint64_t *)(p->bbuf + 8), old = 1;
	uint8_t src[60]; /* max_inline is 64 */

	*(uint64_t *)(p->bbuf + 16) = 0; /* the signal word */
	for (int i = 0; i < 4096; i++)
		p->abuf[i] = (uint8_t)(i * 7 + 1);
	CHECK_DEV(
	    gnic_dev_put(p->a, p->abuf, lkey, p->brm.addr + 4096, p->brm.rkey, 4096, 0, NULL));
	for (int i = 0; i < (int)sizeof(src); i++)
		src[i] = (uint8_t)(0xc0 + i);
	CHECK_DEV(gnic_dev_put_inline(p->a, src, sizeof(src), p->brm.addr + 9000, p->brm.rkey, 0));
	CHECK_DEV(gnic_dev_put_signal(p->a, p->abuf, lkey, p->brm.addr + 12288, p->brm.rkey, 64,
	                              p->brm.addr + 16, p->brm.rkey, 3, 0));
	CHECK_DEV(gnic_dev_quiet(p->a));
	CHECK_MEM(p->bbuf + 4096, p->abuf, 4096);
	CHECK_MEM(p->bbuf + 9000, src, sizeof(src));
	CHECK_EQ(*(uint64_t *)(p->bbuf + 16), 3);
	*word = 40;
	CHECK_DEV(gnic_dev_atomic_fetch_add(p->a, p->brm.addr + 8, p->brm.rkey, 2, &old));
	CHECK_EQ(old, 40);
	CHECK_DEV(gnic_dev_atomic_cas(p->a, p->brm.addr + 8, p->brm.rkey, 42, 7, &old));
	CHECK_EQ(old, 42);
	CHECK_EQ(*word, 7);
	memset(p->abuf + 20000, 0, 3000);
	CHECK_DEV(
	    gnic_dev_get_wait(p->a, p->abuf + 20000, lkey, p->brm.addr + 4096, p->brm.rkey, 3000));
	CHECK_MEM(p->abuf + 20000, p->bbuf + 4096, 3000);
	for (int i = 0; i < 20000; i++) /* several laps of the SQ (and ring) */
		CHECK_DEV(gnic_dev_put(p->a, p->abuf, lkey, p->brm.addr + 32768 + (i % 64) * 8,
		                       p->brm.rkey, 8, 0, NULL));
	CHECK_DEV(gnic_dev_quiet(p->a));
}

static void check_released(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	void (*live)(int *, int *);
	int regs = -1, allocs = -1;

	CHECK(lib != NULL);
	*(void **)&live = dlsym(lib, "fake_cuda_live");
	CHECK(live != NULL);
	live(&regs, &allocs);
	CHECK_EQ(regs, 0);
	CHECK_EQ(allocs, 0);
	dlclose(lib);
}

static void test_placement(void)
{
	struct gnic_ctx *ctx = open_ctx();
	struct gnic_qp_error err;
	struct fpair p;

	t_case("GPU placement, SM: every operation through the \"device\" struct");
	fpair_open(ctx, &p, GNIC_DB_AUTO, GNIC_DB_SM);
	ops(&p);
	fpair_close(&p);

	t_case("GPU placement, PROXY: every operation through the mapped block");
	fpair_open(ctx, &p, GNIC_DB_PROXY, GNIC_DB_PROXY);
	ops(&p);

	t_case("GPU placement, PROXY: bad rkey, reset, reconnect");
	CHECK_DEV(gnic_dev_put(p.a, p.abuf, gnic_mr_lkey(p.amr), p.brm.addr, p.brm.rkey ^ 0x100, 8,
	                       0, NULL));
	CHECK_EQ(gnic_dev_quiet(p.a), GNIC_DEV_ERR_CQE);
	CHECK_EQ(gnic_dev_quiet(p.a), GNIC_DEV_ERR_QP);
	CHECK_GNIC(gnic_qp_error(p.qa, &err));
	CHECK_EQ(err.syndrome, GNIC_MLX5_SYND_REMOTE_ACCESS);
	CHECK_GNIC(gnic_qp_reset(p.qa));
	CHECK_GNIC(gnic_qp_reset(p.qb));
	CHECK_EQ(p.a->sq_reserved, 0);
	CHECK_EQ(p.a->failed, 0);
	CHECK_EQ(p.a->px->done, 0);
	connect_both(&p);
	ops(&p);
	fpair_close(&p);
	gnic_ctx_destroy(ctx);

	t_case("nothing left registered or allocated with the fake driver");
	check_released();
}

static void test_nomap(void)
{
	struct gnic_ctx *ctx = open_ctx();
	struct gnic_qp_attr attr;
	struct gnic_qp *qp;
	char log[4096];
	struct fpair p;

	t_case("GNIC_DB_MAP=off, GPU placement: AUTO -> PROXY, said by default; SM refused");
	gnic_qp_attr_init(&attr);
	CHECK_GNIC(dev_qp_create_logged(ctx, &attr, &qp, log, sizeof(log)));
	printf("logged: %s", log);
	CHECK_EQ(gnic_qp_dev(qp)->db_mode, GNIC_DB_PROXY);
	CHECK_EQ(gnic_qp_queue(qp), GNIC_QUEUE_HOST); /* the proxy writes host queues */
	CHECK(strstr(log, "note:") && strstr(log, "GNIC_DB_MAP=off") && strstr(log, "CPU proxy"));
	gnic_qp_destroy(qp);
	attr.db_mode = GNIC_DB_SM;
	CHECK_EQ(gnic_qp_create(ctx, &attr, &qp), GNIC_ERR_NOT_SUPPORTED);
	CHECK(strstr(gnic_last_error(), "GNIC_DB_MAP=off") != NULL);

	t_case("GNIC_DB_MAP=off, GPU placement: the fallen-back QPs carry every operation");
	fpair_open(ctx, &p, GNIC_DB_AUTO, GNIC_DB_PROXY);
	ops(&p);
	fpair_close(&p);
	gnic_ctx_destroy(ctx);
	check_released();
}

/* The access gnic-emu's debug line says registration `kind` ("CUDA" or
 * "host") asked for, or -1. */
static long logged_access(const char *log, const char *kind)
{
	char pat[32];
	const char *p = log, *q;

	snprintf(pat, sizeof(pat), ": %s va ", kind);
	while ((p = strstr(p, "MR key ")) && (q = strstr(p, "\n"))) {
		const char *k = strstr(p, pat), *a = strstr(p, "(asked ");

		if (k && k < q && a && a < q)
			return strtol(a + strlen("(asked "), NULL, 16);
		p = q;
	}
	return -1;
}

static void test_mr(void)
{
	struct gnic_ctx *ctx = open_ctx();
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	int (*mem_alloc)(uint64_t *, size_t), (*mem_free)(uint64_t);
	char log[16384];
	struct dev_log dl;
	struct gnic_mr *gmr = NULL, *hmr = NULL;
	uint64_t dptr = 0;
	void *host = t_alloc(LEN, 0);
	long ga, ha;

	t_case("mr: GPU memory with IBV_ACCESS_RELAXED_ORDERING, host memory without");
	CHECK(lib != NULL);
	*(void **)&mem_alloc = dlsym(lib, "cuMemAlloc_v2");
	*(void **)&mem_free = dlsym(lib, "cuMemFree_v2");
	CHECK(mem_alloc && mem_free);
	CHECK_EQ(mem_alloc(&dptr, LEN), 0);
	dev_log_start(&dl);
	CHECK_GNIC(gnic_mr_reg(ctx, (void *)(uintptr_t)dptr, LEN, GNIC_ACCESS_ALL, &gmr));
	CHECK_GNIC(gnic_mr_reg(ctx, host, LEN, GNIC_ACCESS_ALL, &hmr));
	dev_log_stop(&dl, log, sizeof(log));
	ga = logged_access(log, "CUDA");
	ha = logged_access(log, "host");
	printf("GPU MR asked 0x%lx, host MR asked 0x%lx\n", ga, ha);
	CHECK(ga >= 0 && ha >= 0);
	CHECK_EQ(ga & IBV_ACCESS_RELAXED_ORDERING, IBV_ACCESS_RELAXED_ORDERING);
	CHECK_EQ(ha & IBV_ACCESS_RELAXED_ORDERING, 0);
	CHECK_EQ(ga & ~IBV_ACCESS_RELAXED_ORDERING, ha); /* otherwise the same access */
	CHECK_NE(gnic_mr_lkey(gmr), 0);
	gnic_mr_dereg(gmr);
	gnic_mr_dereg(hmr);
	CHECK_EQ(mem_free(dptr), 0);
	free(host);
	gnic_ctx_destroy(ctx);
	dlclose(lib);
	check_released();
}

/* A bad rkey on p, then reset (the CQs in GPU memory drained through host
 * copies, the record cleared) and reconnect. */
static void error_reset(struct fpair *p)
{
	struct gnic_qp_error err;

	CHECK_DEV(gnic_dev_put(p->a, p->abuf, gnic_mr_lkey(p->amr), p->brm.addr,
	                       p->brm.rkey ^ 0x100, 8, 0, NULL));
	CHECK_EQ(gnic_dev_quiet(p->a), GNIC_DEV_ERR_CQE);
	CHECK_GNIC(gnic_qp_error(p->qa, &err));
	CHECK_EQ(err.syndrome, GNIC_MLX5_SYND_REMOTE_ACCESS);
	CHECK_GNIC(gnic_qp_reset(p->qa));
	CHECK_GNIC(gnic_qp_reset(p->qb));
	connect_both(p);
}

/* Queue placement in a GPU context (gnic-emu takes the fake's GPU memory as
 * umem: the engine pulls WQEs and pushes CQEs with CUDA copies). */
static void test_queue(void)
{
	struct gnic_ctx *ctx = open_ctx();
	struct gnic_qp_attr attr;
	struct gnic_qp *qp = NULL;
	struct fpair p;

	t_case("GPU context on gnic-emu, queue AUTO: host queues");
	fpair_open(ctx, &p, GNIC_DB_AUTO, GNIC_DB_SM);
	CHECK_EQ(gnic_qp_queue(p.qa), GNIC_QUEUE_HOST);
	fpair_close(&p);

	t_case("GPU context, queue GPU: GPU queues; every operation");
	fpair_open_q(ctx, &p, GNIC_DB_AUTO, GNIC_DB_SM, GNIC_QUEUE_GPU);
	CHECK_EQ(gnic_qp_queue(p.qa), GNIC_QUEUE_GPU);
	CHECK_EQ(gnic_qp_queue(p.qb), GNIC_QUEUE_GPU);
	ops(&p);
	t_case("GPU queues: bad rkey, reset, reconnect, every operation again");
	error_reset(&p);
	ops(&p);
	fpair_close(&p);

	t_case("GPU queues, BF: every operation");
	fpair_open_q(ctx, &p, GNIC_DB_BF, GNIC_DB_BF, GNIC_QUEUE_GPU);
	ops(&p);
	fpair_close(&p);

	t_case("queue AUTO with db_mode PROXY: host queues; queue GPU with PROXY or CPU: "
	       "NOT_SUPPORTED");
	fpair_open(ctx, &p, GNIC_DB_PROXY, GNIC_DB_PROXY);
	CHECK_EQ(gnic_qp_queue(p.qa), GNIC_QUEUE_HOST);
	fpair_close(&p);
	gnic_qp_attr_init(&attr);
	attr.queue = GNIC_QUEUE_GPU;
	attr.db_mode = GNIC_DB_PROXY;
	CHECK_EQ(gnic_qp_create(ctx, &attr, &qp), GNIC_ERR_NOT_SUPPORTED);
	CHECK(strstr(gnic_last_error(), "PROXY") != NULL);
	attr.db_mode = GNIC_DB_CPU;
	CHECK_EQ(gnic_qp_create(ctx, &attr, &qp), GNIC_ERR_NOT_SUPPORTED);
	CHECK(strstr(gnic_last_error(), "CPU") != NULL);
	CHECK(qp == NULL);

	t_case("queue HOST_DEVX in a GPU context: DEVX queues mapped into the GPU; every "
	       "operation, bad rkey, reset, reconnect");
	fpair_open_q(ctx, &p, GNIC_DB_AUTO, GNIC_DB_SM, GNIC_QUEUE_HOST_DEVX);
	CHECK_EQ(gnic_qp_queue(p.qa), GNIC_QUEUE_HOST_DEVX);
	ops(&p);
	error_reset(&p);
	ops(&p);
	fpair_close(&p);
	t_case("queue HOST_DEVX, PROXY, in a GPU context: every operation");
	fpair_open_q(ctx, &p, GNIC_DB_PROXY, GNIC_DB_PROXY, GNIC_QUEUE_HOST_DEVX);
	ops(&p);
	fpair_close(&p);
	gnic_ctx_destroy(ctx);
	t_case("nothing left registered or allocated with the fake driver");
	check_released();
}

/* GNIC_EMU_DEVX=0: no DEVX. */
static void test_queue_nodevx(void)
{
	struct gnic_ctx *ctx = open_ctx();
	struct gnic_qp_attr attr;
	struct gnic_qp *qp, *qp2;
	char log[4096];

	t_case("no DEVX, GPU context, queue AUTO: host queues, no note (gnic-emu's AUTO is host)");
	gnic_qp_attr_init(&attr);
	CHECK_GNIC(dev_qp_create_logged(ctx, &attr, &qp, log, sizeof(log)));
	printf("logged: %s", log);
	CHECK_EQ(gnic_qp_queue(qp), GNIC_QUEUE_HOST);
	CHECK(strstr(log, "note:") == NULL);
	CHECK_GNIC(dev_qp_create_logged(ctx, &attr, &qp2, log, sizeof(log)));
	CHECK_EQ(gnic_qp_queue(qp2), GNIC_QUEUE_HOST);
	CHECK(strstr(log, "note:") == NULL);
	gnic_qp_destroy(qp2);
	gnic_qp_destroy(qp);
	t_case("no DEVX: queue GPU is NOT_SUPPORTED, naming why");
	attr.queue = GNIC_QUEUE_GPU;
	qp = NULL;
	CHECK_EQ(gnic_qp_create(ctx, &attr, &qp), GNIC_ERR_NOT_SUPPORTED);
	CHECK(strstr(gnic_last_error(), "needs DEVX") != NULL);
	CHECK(qp == NULL);
	gnic_ctx_destroy(ctx);
	check_released();
}

/* One frame, 42 + pay bytes, IPv4/UDP to port. */
static uint32_t eth_frame(uint8_t *f, uint16_t port, uint32_t pay, uint32_t seed)
{
	memset(f, 0, 42);
	f[0] = 0x02, f[5] = 0x0a, f[6] = 0x02, f[11] = 0x0b, f[12] = 0x08;
	f[14] = 0x45, f[16] = (uint8_t)((28 + pay) >> 8), f[17] = (uint8_t)(28 + pay);
	f[22] = 64, f[23] = 17, f[26] = 10, f[29] = 2, f[30] = 10, f[33] = 1;
	f[36] = (uint8_t)(port >> 8), f[37] = (uint8_t)port;
	f[38] = (uint8_t)((8 + pay) >> 8), f[39] = (uint8_t)(8 + pay);
	t_fill(f + 42, pay, seed);
	return 42 + pay;
}

static struct gnic_eth_pkt eth_rx_one(struct gnic_dev_eth *d)
{
	struct gnic_eth_pkt p;
	uint64_t end = gnic_now_ns() + 5000000000ull;

	while (gnic_dev_eth_rx_burst(d, &p, 1) != 1)
		if (gnic_now_ns() > end)
			T_FAIL("no frame within 5 s");
	return p;
}

static void test_eth(void)
{
	struct gnic_ctx *ctx = open_ctx();
	struct gnic_eth_attr a;
	struct gnic_eth *rx, *tx;
	struct gnic_eth_rule r;
	struct gnic_eth_flow *f;
	struct gnic_ring *ring;
	struct gnic_ring_entry e;
	struct gnic_dev_eth *drx, *dtx;
	uint8_t want[2048], got[2048];
	uint32_t n = 0;

	gnic_eth_attr_init(&a);
	a.rx_bufs = 16;
	a.pool_mem = GNIC_ETH_MEM_GPU;
	CHECK_GNIC(gnic_eth_create(ctx, &a, &rx));
	CHECK(gnic_eth_pool_host(rx) == NULL);
	a.pool_mem = GNIC_ETH_MEM_HOST;
	CHECK_GNIC(gnic_eth_create(ctx, &a, &tx));
	CHECK(gnic_eth_pool_host(tx) != NULL);
	CHECK_GNIC(gnic_ring_create(ctx, 8, 0, &ring));
	drx = gnic_eth_dev(rx);
	dtx = gnic_eth_dev(tx);
	CHECK_EQ(drx->magic, GNIC_DEV_ETH_MAGIC);
	memset(&r, 0, sizeof(r));
	r.match = GNIC_ETH_MATCH_DST_PORT;
	r.ip_version = 4;
	r.l4 = GNIC_ETH_L4_UDP;
	r.dst_port = 9000;
	r.flow_tag = 1;
	CHECK_GNIC(gnic_eth_rule_add(rx, &r, &f));
	r.dst_port = 9001;
	r.flow_tag = 2;
	CHECK_GNIC(gnic_eth_rule_add(rx, &r, &f));
	for (uint32_t i = 0; i < 100; i++) {
		uint32_t len = eth_frame(want, 9000, 1 + i * 13 % 1400, i);
		struct gnic_eth_pkt p, q;

		memcpy(gnic_eth_pool_host(tx) + 64, want + 42, len - 42);
		CHECK_DEV(gnic_dev_eth_send_hdr(dtx, want, 42, dtx->pool_iova + 64, dtx->pool_lkey,
		                                len - 42, GNIC_ETH_TX_CSUM));
		CHECK_DEV(gnic_dev_eth_flush(dtx));
		p = eth_rx_one(drx);
		CHECK_EQ(p.tag, 1u);
		CHECK_EQ(p.len, len);
		CHECK_EQ(p.flags & GNIC_ETH_RX_L4_OK, (uint32_t)GNIC_ETH_RX_L4_OK);
		memcpy(got, p.data, len); /* "GPU memory" of the fake driver is host memory */
		CHECK_MEM(got + 42, want + 42, len - 42);
		p.data[37] = 0x29; /* to port 9001, from its buffer */
		CHECK_DEV(gnic_dev_eth_send_burst(drx, &p, 1, GNIC_ETH_TX_CSUM));
		q = eth_rx_one(drx);
		CHECK_EQ(q.tag, 2u);
		CHECK_EQ(q.len, len);
		memcpy(got, q.data, len);
		CHECK_MEM(got + 42, want + 42, len - 42);
		CHECK_DEV(
		    gnic_dev_ring_push(gnic_ring_dev(ring), (uintptr_t)q.data, q.len, q.tag, i));
		CHECK_GNIC(gnic_ring_consume(ring, &e, 1, 1000000000ull, &n));
		CHECK_EQ(e.user, (uint64_t)i);
		CHECK_EQ(e.len, len);
		CHECK_DEV(gnic_dev_eth_rx_return(drx, q.buf));
		CHECK_DEV(gnic_dev_eth_flush(drx));
	}
	gnic_ring_destroy(ring);
	gnic_eth_destroy(tx);
	gnic_eth_destroy(rx);
	gnic_ctx_destroy(ctx);
	check_released();
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "eth"))
		test_eth();
	else if (argc > 1 && !strcmp(argv[1], "nomap"))
		test_nomap();
	else if (argc > 1 && !strcmp(argv[1], "mr"))
		test_mr();
	else if (argc > 1 && !strcmp(argv[1], "queue"))
		test_queue();
	else if (argc > 1 && !strcmp(argv[1], "queue_nodevx"))
		test_queue_nodevx();
	else
		test_placement();
	return T_EXIT_PASS;
}
