// SPDX-License-Identifier: MIT
/*
 * The GPU placement of the control path, without a kernel: a GPU context's
 * struct gnic_dev_qp lives in GPU memory and points at host queues mapped
 * into the GPU. The test reads the struct back, then drives a QP only
 * through those device pointers, with the GPU's copy engine: it writes a
 * WQE into the SQ, the doorbell record and the doorbell register (SM) or
 * the CPU doorbell word (CPU mode), and reads the CQE back; the data moves
 * between host memory and CUDA memory registered with gnic_mr_reg. Reset,
 * reconnect and the error record are checked the same way. A GNIC_DB_PROXY
 * QP is driven the same way through its proxy block: the test writes
 * descriptors into the ring through their device pointers and reads the
 * proxy's done count and status back (argument "nomap", run with
 * GNIC_DB_MAP=off: AUTO falls back to the proxy on a GPU context too).
 *
 * Skips (77) without CUDA or a GPU; CUDA is loaded with dlopen, so the test
 * builds everywhere.
 */
#include <dlfcn.h>
#include <stddef.h>

#include <gnic/gnic_dev_proxy.h>

#include "gt.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static struct {
	CUresult (*primary_ctx_retain)(void **ctx, int dev);
	CUresult (*ctx_set_current)(void *ctx);
	CUresult (*mem_alloc)(CUdeviceptr *p, size_t len);
	CUresult (*mem_free)(CUdeviceptr p);
	CUresult (*htod)(CUdeviceptr dst, const void *src, size_t len);
	CUresult (*dtoh)(void *dst, CUdeviceptr src, size_t len);
} cu;

#define CU(call)                                                                                   \
	do {                                                                                       \
		CUresult r_ = (call);                                                              \
		if (r_)                                                                            \
			T_FAIL("%s: CUDA error %d", #call, r_);                                    \
	} while (0)

#define LEN 4096

static void cuda_load(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);
	void *ctx;

	if (!lib)
		t_skip("no libcuda.so.1");
	*(void **)&cu.primary_ctx_retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
	*(void **)&cu.ctx_set_current = dlsym(lib, "cuCtxSetCurrent");
	*(void **)&cu.mem_alloc = dlsym(lib, "cuMemAlloc_v2");
	*(void **)&cu.mem_free = dlsym(lib, "cuMemFree_v2");
	*(void **)&cu.htod = dlsym(lib, "cuMemcpyHtoD_v2");
	*(void **)&cu.dtoh = dlsym(lib, "cuMemcpyDtoH_v2");
	CHECK(cu.primary_ctx_retain && cu.ctx_set_current && cu.mem_alloc && cu.htod && cu.dtoh);
	CU(cu.primary_ctx_retain(&ctx, 0));
	CU(cu.ctx_set_current(ctx));
}

static CUdeviceptr dp(const void *p)
{
	return (CUdeviceptr)(uintptr_t)p;
}

/* The struct as the GPU holds it. */
static void fetch(struct gnic_qp *qp, struct gnic_dev_qp *d)
{
	CU(cu.dtoh(d, dp(gnic_qp_dev(qp)), sizeof(*d)));
}

/* As device code would: the counters live in the struct in GPU memory. */
static void store_counters(struct gnic_qp *qp, const struct gnic_dev_qp *d)
{
	size_t off = offsetof(struct gnic_dev_qp, sq_reserved);

	CU(cu.htod(dp(gnic_qp_dev(qp)) + off, (const char *)d + off, sizeof(*d) - off));
}

static void check_struct(const struct gnic_dev_qp *d, enum gnic_db_mode mode, uint64_t scq_ci)
{
	CHECK_EQ(d->magic, GNIC_DEV_QP_MAGIC);
	CHECK_EQ(d->db_mode, mode);
	CHECK(d->sq_buf && d->dbrec && d->scq.buf && d->scq.dbrec && d->rcq.buf && d->rcq.dbrec);
	CHECK(d->wqe_nbb && d->sq_pub && d->res_owned && d->scratch && d->err && d->cpu_db);
	CHECK(mode == GNIC_DB_CPU || mode == GNIC_DB_PROXY ? d->db_reg == NULL : d->db_reg != NULL);
	CHECK(mode == GNIC_DB_PROXY ? d->px && d->px_ring : !d->px && !d->px_ring);
	CHECK_EQ(d->sq_reserved | d->sq_ready | d->sq_rung, 0);
	CHECK_EQ(d->scq_ci, scq_ci);
}

struct side {
	struct gnic_qp *qp;
	struct gnic_dev_qp d; /* host copy; counters kept here */
	uint8_t *host;        /* LEN bytes of host memory */
	CUdeviceptr gpu;      /* LEN bytes of GPU memory */
	struct gnic_mr *hmr, *gmr;
	struct gnic_blob blob;
};

static void side_init(struct side *s, struct gnic_ctx *ctx, enum gnic_db_mode want,
                      enum gnic_db_mode got)
{
	struct gnic_qp_attr a;

	gnic_qp_attr_init(&a);
	a.sq_depth = 64;
	a.db_mode = want;
	CHECK_GNIC(gnic_qp_create(ctx, &a, &s->qp));
	fetch(s->qp, &s->d);
	check_struct(&s->d, got, 0);
	s->host = t_alloc(LEN, 0);
	CU(cu.mem_alloc(&s->gpu, LEN));
	CHECK_GNIC(gnic_mr_reg(ctx, s->host, LEN, GNIC_ACCESS_ALL, &s->hmr));
	CHECK_GNIC(gnic_mr_reg(ctx, (void *)(uintptr_t)s->gpu, LEN, GNIC_ACCESS_ALL, &s->gmr));
	CHECK_GNIC(gnic_qp_export(s->qp, &s->blob));
}

static void side_fini(struct side *s)
{
	gnic_qp_destroy(s->qp);
	gnic_mr_dereg(s->hmr);
	gnic_mr_dereg(s->gmr);
	CU(cu.mem_free(s->gpu));
	free(s->host);
}

/* One WRITE through the device pointers only, then its CQE. */
static void gpu_write(struct side *s, uint64_t src, uint32_t lkey, uint64_t dst, uint32_t rkey,
                      uint32_t len)
{
	struct gnic_dev_qp *d = &s->d;
	uint16_t idx = (uint16_t)d->sq_reserved;
	uint8_t wqe[64] = {0};
	struct gnic_mlx5_ctrl_seg *c = (void *)wqe;
	struct gnic_mlx5_raddr_seg *ra = (void *)(wqe + 16);
	struct gnic_mlx5_data_seg *ds = (void *)(wqe + 32);
	uint64_t pi = ++d->sq_reserved, deadline = t_now_ms() + T_WAIT_MS;
	uint32_t rec = gnic_be32((uint32_t)pi & 0xffff);
	uint32_t reg[2] = {gnic_be32((uint32_t)(pi & 0xffff) << 8), gnic_be32(d->qpn << 8)};
	struct gnic_mlx5_cqe64 cqe;

	c->opmod_idx_opcode = gnic_be32(gnic_mlx5_ctrl_word0(0, idx, GNIC_MLX5_OPCODE_RDMA_WRITE));
	c->qpn_ds = gnic_be32(gnic_mlx5_ctrl_word1(d->qpn, 3));
	c->fm_ce_se = GNIC_MLX5_CTRL_CQ_UPDATE;
	ra->raddr = gnic_be64(dst);
	ra->rkey = gnic_be32(rkey);
	ds->byte_count = gnic_be32(len);
	ds->lkey = gnic_be32(lkey);
	ds->addr = gnic_be64(src);
	CU(cu.htod(dp(d->sq_buf + (idx & (d->sq_wqe_cnt - 1)) * 64), wqe, sizeof(wqe)));
	if (d->db_mode == GNIC_DB_CPU) {
		CU(cu.htod(dp(d->cpu_db), &pi, sizeof(pi)));
	} else {
		CU(cu.htod(dp(&d->dbrec[GNIC_MLX5_SND_DBR]), &rec, sizeof(rec)));
		CU(cu.htod(dp(d->db_reg), reg, sizeof(reg)));
	}
	for (;;) {
		struct gnic_mlx5_cqe64 *at = &d->scq.buf[d->scq_ci & (d->scq.cqe_cnt - 1)];

		CU(cu.dtoh(&cqe, dp(at), sizeof(cqe)));
		if (gnic_mlx5_cqe_sw_owned(cqe.op_own, (uint32_t)d->scq_ci, d->scq.cqe_cnt))
			break;
		if (t_now_ms() > deadline)
			T_FAIL("no CQE for the WRITE on QP %#x", d->qpn);
	}
	CHECK_EQ(gnic_mlx5_cqe_opcode(cqe.op_own), GNIC_MLX5_CQE_REQ);
	d->scq_ci++;
	rec = gnic_be32((uint32_t)d->scq_ci & 0xffffff);
	CU(cu.htod(dp(d->scq.dbrec), &rec, sizeof(rec)));
	d->sq_ready = d->sq_rung = d->sq_retired = d->sq_reserved;
	store_counters(s->qp, d);
}

/* host -> peer GPU, then peer GPU -> our host (through the peer's QP). */
static void traffic(struct side *a, struct side *b, uint32_t seed)
{
	uint8_t want[LEN], got[LEN];

	t_fill(a->host, LEN, seed);
	gpu_write(a, (uintptr_t)a->host, gnic_mr_lkey(a->hmr), b->gpu, gnic_mr_rkey(b->gmr), LEN);
	CU(cu.dtoh(got, b->gpu, LEN));
	CHECK_MEM(got, a->host, LEN);
	memcpy(want, got, LEN);
	memset(a->host, 0, LEN);
	gpu_write(b, b->gpu, gnic_mr_lkey(b->gmr), (uintptr_t)a->host, gnic_mr_rkey(a->hmr), LEN);
	CHECK_MEM(a->host, want, LEN);
}

static void connect_pair(struct side *a, struct side *b)
{
	CHECK_GNIC(gnic_qp_connect(a->qp, &b->blob));
	CHECK_GNIC(gnic_qp_connect(b->qp, &a->blob));
}

static void pair(struct gnic_ctx *ctx, enum gnic_db_mode want, enum gnic_db_mode got)
{
	struct side a = {0}, b = {0};
	struct gnic_dev_err e = {.status = (uint32_t)GNIC_DEV_ERR_CQE,
	                         .syndrome = GNIC_MLX5_SYND_REMOTE_ACCESS,
	                         .opcode = GNIC_MLX5_OPCODE_RDMA_READ,
	                         .wqe_counter = 5};
	struct gnic_qp_error err;

	t_case("db_mode %d: create, connect, WRITE host <-> GPU through device pointers", want);
	side_init(&a, ctx, want, got);
	side_init(&b, ctx, want, got);
	connect_pair(&a, &b);
	for (uint32_t i = 0; i < 100; i++)
		traffic(&a, &b, i);

	t_case("db_mode %d: error record written through its device pointer", want);
	CU(cu.htod(dp(a.d.err), &e, sizeof(e)));
	CHECK_GNIC(gnic_qp_error(a.qp, &err));
	printf("  %s\n", err.text);
	CHECK(!strcmp(err.text, "RDMA_READ at WQE 5: REMOTE_ACCESS_ERR (syndrome 0x13)"));

	t_case("db_mode %d: reset (struct in GPU memory rewritten), reconnect", want);
	CHECK_GNIC(gnic_qp_reset(a.qp));
	CHECK_GNIC(gnic_qp_reset(b.qp));
	fetch(a.qp, &a.d);
	fetch(b.qp, &b.d);
	check_struct(&a.d, got, 100); /* a CQ keeps its index across resets */
	check_struct(&b.d, got, 100);
	CHECK_GNIC(gnic_qp_error(a.qp, &err));
	CHECK_EQ(err.dev_status, 0);
	connect_pair(&a, &b);
	traffic(&a, &b, 1000);
	side_fini(&a);
	side_fini(&b);
}

/* A descriptor into ring slot idx through its device pointer, seq last (as
 * device code stores it), then the proxy's done count and status. */
static uint32_t px_post(struct side *s, const struct gnic_px_desc *desc, uint64_t idx)
{
	const struct gnic_dev_qp *d = &s->d;
	CUdeviceptr slot = dp(&d->px_ring[idx & (d->sq_wqe_cnt - 1)]);
	uint64_t seq = idx + 1, done = 0, deadline = t_now_ms() + T_WAIT_MS;
	uint32_t status = 0;

	CU(cu.htod(slot + 8, (const char *)desc + 8, sizeof(*desc) - 8));
	CU(cu.htod(slot, &seq, sizeof(seq)));
	for (;;) {
		CU(cu.dtoh(&done, dp(&d->px->done), sizeof(done)));
		CU(cu.dtoh(&status, dp(&d->px->status), sizeof(status)));
		if (done > idx || status)
			return status;
		if (t_now_ms() > deadline)
			T_FAIL("the proxy did not complete descriptor %llu of QP %#x",
			       (unsigned long long)idx, d->qpn);
	}
}

static void proxy_pair(struct gnic_ctx *ctx, enum gnic_db_mode want)
{
	struct side a = {0}, b = {0};
	struct gnic_px_desc w = {
	    .kind = GNIC_PX_RDMA, .opcode = GNIC_MLX5_OPCODE_RDMA_WRITE, .nslots = 1, .len = LEN};
	struct gnic_qp_error err;
	uint8_t got[LEN];

	t_case("db_mode %d -> PROXY: WRITEs host -> GPU through the ring's device pointers", want);
	side_init(&a, ctx, want, GNIC_DB_PROXY);
	side_init(&b, ctx, want, GNIC_DB_PROXY);
	CHECK((uint8_t *)a.d.err == (uint8_t *)a.d.px + offsetof(struct gnic_px_block, dev_err));
	CHECK((uint8_t *)a.d.scratch > (uint8_t *)a.d.px &&
	      (uint8_t *)a.d.px_ring > (uint8_t *)a.d.scratch);
	connect_pair(&a, &b);
	w.laddr = (uintptr_t)a.host;
	w.lkey = gnic_mr_lkey(a.hmr);
	w.raddr = b.gpu;
	w.rkey = gnic_mr_rkey(b.gmr);
	for (uint64_t i = 0; i < 3 * (uint64_t)a.d.sq_wqe_cnt; i++) { /* three laps */
		t_fill(a.host, LEN, (uint32_t)i);
		CHECK_EQ(px_post(&a, &w, i), 0);
		CU(cu.dtoh(got, b.gpu, LEN));
		CHECK_MEM(got, a.host, LEN);
	}

	t_case("db_mode %d -> PROXY: a bad rkey comes back as the proxy's status", want);
	w.rkey ^= 0x100;
	CHECK_EQ((int)px_post(&a, &w, 3 * (uint64_t)a.d.sq_wqe_cnt), GNIC_DEV_ERR_CQE);
	CHECK_GNIC(gnic_qp_error(a.qp, &err));
	printf("  %s\n", err.text);
	CHECK_EQ(err.dev_status, GNIC_DEV_ERR_CQE);
	CHECK_EQ(err.syndrome, GNIC_MLX5_SYND_REMOTE_ACCESS);
	side_fini(&a);
	side_fini(&b);
}

int main(int argc, char **argv)
{
	struct gnic_ctx_attr attr;
	struct gnic_ctx *ctx = NULL;
	struct gnic_ctx_info info;
	struct gnic_qp *many[40];

	gnic_ctx_attr_init(&attr);
	CHECK_GNIC(gnic_ctx_create(&attr, &ctx));
	CHECK_GNIC(gnic_ctx_query(ctx, &info));
	if (info.gpu == GNIC_GPU_NONE) {
		gnic_ctx_destroy(ctx);
		t_skip("no GPU");
	}
	printf("GPU %d: %s, provider %s\n", info.gpu, info.gpu_name, info.provider_lib);
	CHECK(info.gpu_name[0]);
	cuda_load();
	if (argc > 1 && !strcmp(argv[1], "nomap")) { /* GNIC_DB_MAP=off */
		struct gnic_qp_attr qa;
		struct gnic_qp *qp;

		t_case("GNIC_DB_MAP=off: SM is refused on a GPU context");
		gnic_qp_attr_init(&qa);
		qa.db_mode = GNIC_DB_SM;
		CHECK_EQ(gnic_qp_create(ctx, &qa, &qp), GNIC_ERR_NOT_SUPPORTED);
		CHECK(strstr(gnic_last_error(), "GNIC_DB_MAP=off") != NULL);
		proxy_pair(ctx, GNIC_DB_AUTO);
		gnic_ctx_destroy(ctx);
		return T_EXIT_PASS;
	}

	/* gnic-emu's register is an ordinary page: it maps plainly, AUTO -> SM */
	pair(ctx, GNIC_DB_AUTO, GNIC_DB_SM);
	pair(ctx, GNIC_DB_BF, GNIC_DB_BF);
	pair(ctx, GNIC_DB_CPU, GNIC_DB_CPU);
	proxy_pair(ctx, GNIC_DB_PROXY);

	t_case("40 QPs at once, then destroyed out of order (shared mappings)");
	for (int i = 0; i < 40; i++)
		CHECK_GNIC(gnic_qp_create(ctx, NULL, &many[i]));
	for (int i = 0; i < 40; i += 2)
		gnic_qp_destroy(many[i]);
	for (int i = 1; i < 40; i += 2)
		gnic_qp_destroy(many[i]);

	t_case("QP group of 6: its device array lives in GPU memory and names each QP");
	{
		struct gnic_dev_qp *got[6], one;
		struct gnic_qp_group *g;

		CHECK_GNIC(gnic_qp_group_create(ctx, NULL, 6, &g));
		CU(cu.dtoh(got, dp(gnic_qp_group_dev(g)), sizeof(got)));
		for (uint32_t i = 0; i < 6; i++) {
			CHECK(got[i] == gnic_qp_dev(gnic_qp_group_qp(g, i)));
			fetch(gnic_qp_group_qp(g, i), &one);
			CHECK_EQ(one.magic, GNIC_DEV_QP_MAGIC);
		}
		gnic_qp_group_destroy(g);
	}

	gnic_ctx_destroy(ctx);
	return T_EXIT_PASS;
}
