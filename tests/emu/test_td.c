// SPDX-License-Identifier: MIT
/*
 * Thread domains and parent domains as rdma-core's mlx5 makes them
 * (providers/mlx5/verbs.c: mlx5_alloc_td, mlx5_attach_dedicated_uar,
 * mlx5_alloc_parent_domain, mlx5_create_qp's use of the domain's register):
 *
 *   reg      a QP on a parent domain with a thread domain writes the
 *            domain's own register: pages of their own, the first register
 *            of a new page first and the second for the next domain, none
 *            of them ever a QP's of the context; two QPs of one domain share
 *            it; a freed domain's register goes to the end of the free list;
 *            mlx5dv reports bf.size 256;
 *   pdonly   a parent domain without a thread domain: its QP takes the
 *            context's next register, like any QP; init_obj reports the
 *            contained PD's pdn;
 *   refs     EBUSY for a thread domain in a parent domain, a parent domain
 *            with a QP or a CQ on it, a PD in a parent domain;
 *   errors   EINVAL for comp_mask bits, no PD, objects of another context,
 *            a CQ's IBV_CQ_INIT_ATTR_MASK_PD naming a plain PD; ALLOCATORS:
 *            EOPNOTSUPP;
 *   traffic  an RC WRITE through a thread domain's register: one WR's WQE
 *            is copied into it and executes; an MR on the parent domain is
 *            the contained PD's;
 *   shutup   MLX5_SHUT_UP_BF: the thread domain's register still reports
 *            bf.size 256, but posts write 8 bytes to it, no copy;
 *   pages    (GNIC_EMU_UAR_PAGES=2) the device's UAR pages run out:
 *            ibv_alloc_td and a QP that needs a page fail with ENOMEM; a
 *            freed register or a closed context gives them back.
 */
#include <infiniband/mlx5dv.h>
#include <stdlib.h>

#include "common.h"
#include "gnic/gnic_mlx5.h"

#define BUF_LEN 4096

int64_t gemu_qp_bf_dropped(struct ibv_qp *qp); /* libgnic_emu */

static struct ibv_context *open_dev(void)
{
	return t_open(T_DEVICE);
}

static uintptr_t page_of(uintptr_t reg)
{
	return reg & ~(uintptr_t)(T_PAGE - 1);
}

static struct ibv_td *td_new(struct ibv_context *c)
{
	struct ibv_td_init_attr a = {0};

	return CHECK_PTR(ibv_alloc_td(c, &a));
}

static struct ibv_pd *parent_new(struct ibv_context *c, struct ibv_pd *pd, struct ibv_td *td)
{
	struct ibv_parent_domain_init_attr a = {.pd = pd, .td = td};

	return CHECK_PTR(ibv_alloc_parent_domain(c, &a));
}

/* ---- reg ------------------------------------------------------------------- */

static void test_reg(void)
{
	struct ibv_context *c = open_dev();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(c));
	struct ibv_cq *cq = t_cq(c, 64);
	struct ibv_td *td[5];
	struct ibv_pd *pdm[5];
	struct ibv_qp *plain[3], *q[5], *q0b;
	uintptr_t r[5], rp[3];

	t_case("reg: two QPs, then three thread domains' QPs, then a third QP");
	for (int i = 0; i < 2; i++)
		plain[i] = t_small_qp(pd, cq);
	for (int i = 0; i < 3; i++) {
		td[i] = td_new(c);
		pdm[i] = parent_new(c, pd, td[i]);
		q[i] = t_small_qp(pdm[i], cq);
		CHECK(q[i]->pd == pdm[i]);
		r[i] = t_bf_reg(q[i]);
		CHECK_EQ(t_dv_qp(q[i]).bf.size, GNIC_MLX5_BF_SIZE);
	}
	plain[2] = t_small_qp(pd, cq);
	for (int i = 0; i < 3; i++)
		rp[i] = t_bf_reg(plain[i]);
	t_case("reg: a new page for the first domain (its 0x800), its 0xa00 for the second, "
	       "a new page for the third");
	CHECK_EQ(r[0] % T_PAGE, 0x800);
	CHECK_EQ(r[1], r[0] + 0x200);
	CHECK_EQ(r[2] % T_PAGE, 0x800);
	CHECK(page_of(r[2]) != page_of(r[0]));
	t_case("reg: no thread domain's page is a QP's page; the QPs' registers go on as "
	       "without the domains (dedicated, two per page)");
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			CHECK(page_of(rp[j]) != page_of(r[i]));
	CHECK_EQ(rp[1], rp[0] + 0x200);
	CHECK_EQ(rp[2] % T_PAGE, 0x800);
	CHECK(page_of(rp[2]) != page_of(rp[0]));

	t_case("reg: a second QP on the first domain's parent domain shares its register");
	q0b = t_small_qp(pdm[0], cq);
	CHECK_EQ(t_bf_reg(q0b), r[0]);
	CHECK_OK(ibv_destroy_qp(q0b));

	t_case("reg: a freed domain's register goes to the end of the free list");
	CHECK_OK(ibv_destroy_qp(q[0]));
	CHECK_OK(ibv_dealloc_pd(pdm[0]));
	CHECK_OK(ibv_dealloc_td(td[0]));
	for (int i = 3; i < 5; i++) {
		td[i] = td_new(c);
		pdm[i] = parent_new(c, pd, td[i]);
		q[i] = t_small_qp(pdm[i], cq);
		r[i] = t_bf_reg(q[i]);
	}
	CHECK_EQ(r[3], r[2] + 0x200); /* the third domain's page's second register */
	CHECK_EQ(r[4], r[0]);         /* then the freed one */

	for (int i = 1; i < 5; i++) {
		CHECK_OK(ibv_destroy_qp(q[i]));
		CHECK_OK(ibv_dealloc_pd(pdm[i]));
		CHECK_OK(ibv_dealloc_td(td[i]));
	}
	for (int i = 0; i < 3; i++)
		CHECK_OK(ibv_destroy_qp(plain[i]));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(c));
}

/* ---- pdonly ---------------------------------------------------------------- */

static void test_pdonly(void)
{
	struct ibv_context *c = open_dev();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(c));
	struct ibv_pd *pdm = parent_new(c, pd, NULL);
	struct ibv_cq *cq = t_cq(c, 64);
	struct mlx5dv_pd dpd, dpdm;
	struct mlx5dv_obj o = {.pd = {.in = pd, .out = &dpd}};
	struct ibv_qp *a, *b;

	t_case("pdonly: a QP on a parent domain without a thread domain takes the context's "
	       "next register: the first of a page, the next QP the second");
	a = t_small_qp(pdm, cq);
	b = t_small_qp(pd, cq);
	CHECK_EQ(t_bf_reg(a) % T_PAGE, 0x800);
	CHECK_EQ(t_bf_reg(b), t_bf_reg(a) + 0x200);
	t_case("pdonly: init_obj of the parent domain reports its PD's pdn");
	CHECK_OK(mlx5dv_init_obj(&o, MLX5DV_OBJ_PD));
	o.pd.in = pdm;
	o.pd.out = &dpdm;
	CHECK_OK(mlx5dv_init_obj(&o, MLX5DV_OBJ_PD));
	CHECK_EQ(dpdm.pdn, dpd.pdn);
	CHECK_EQ(pdm->handle, pd->handle);
	CHECK_OK(ibv_destroy_qp(a));
	CHECK_OK(ibv_destroy_qp(b));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pdm));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(c));
}

/* ---- refs ------------------------------------------------------------------ */

static struct ibv_cq_ex *cq_on(struct ibv_context *c, struct ibv_pd *parent)
{
	struct ibv_cq_init_attr_ex a = {.cqe = 16,
	                                .wc_flags = IBV_WC_STANDARD_FLAGS,
	                                .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
	                                .parent_domain = parent};

	return ibv_create_cq_ex(c, &a);
}

static void test_refs(void)
{
	struct ibv_context *c = open_dev();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(c));
	struct ibv_td *td = td_new(c);
	struct ibv_pd *pdm = parent_new(c, pd, td);
	struct ibv_cq *cq = t_cq(c, 64);
	struct ibv_cq_ex *cqx;
	struct ibv_qp *qp;

	t_case("refs: a thread domain in a parent domain, a PD in one: EBUSY");
	CHECK_RET(ibv_dealloc_td(td), EBUSY);
	CHECK_RET(ibv_dealloc_pd(pd), EBUSY);
	t_case("refs: a parent domain with a QP on it: EBUSY, until the QP is gone");
	qp = t_small_qp(pdm, cq);
	CHECK_RET(ibv_dealloc_pd(pdm), EBUSY);
	CHECK_OK(ibv_destroy_qp(qp));
	t_case("refs: a parent domain with a CQ on it: EBUSY, until the CQ is gone");
	cqx = CHECK_PTR(cq_on(c, pdm));
	CHECK_RET(ibv_dealloc_pd(pdm), EBUSY);
	CHECK_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)));
	t_case("refs: then the parent domain, the thread domain and the PD go");
	CHECK_OK(ibv_dealloc_pd(pdm));
	CHECK_OK(ibv_dealloc_td(td));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(c));
}

/* ---- errors ---------------------------------------------------------------- */

static void expect_parent_fails(struct ibv_context *c, struct ibv_parent_domain_init_attr a,
                                int want, const char *what)
{
	t_case("errors: ibv_alloc_parent_domain with %s: %s", what, strerror(want));
	errno = 0;
	CHECK(ibv_alloc_parent_domain(c, &a) == NULL);
	CHECK_EQ(errno, want);
}

static void test_errors(void)
{
	struct ibv_context *c = open_dev(), *c2 = open_dev();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(c)), *pd2 = CHECK_PTR(ibv_alloc_pd(c2));
	struct ibv_td *td2 = td_new(c2);
	struct ibv_td_init_attr ta = {.comp_mask = 1};

	t_case("errors: ibv_alloc_td with a comp_mask bit: EINVAL");
	errno = 0;
	CHECK(ibv_alloc_td(c, &ta) == NULL);
	CHECK_EQ(errno, EINVAL);
	expect_parent_fails(c, (struct ibv_parent_domain_init_attr){0}, EINVAL, "no PD");
	expect_parent_fails(c, (struct ibv_parent_domain_init_attr){.pd = pd, .comp_mask = 1u << 2},
	                    EINVAL, "an unknown comp_mask bit");
	expect_parent_fails(c, (struct ibv_parent_domain_init_attr){.pd = pd2}, EINVAL,
	                    "another context's PD");
	expect_parent_fails(c, (struct ibv_parent_domain_init_attr){.pd = pd, .td = td2}, EINVAL,
	                    "another context's thread domain");
	expect_parent_fails(c,
	                    (struct ibv_parent_domain_init_attr){
	                        .pd = pd, .comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS},
	                    EOPNOTSUPP, "ALLOCATORS (not emulated)");
	t_case("errors: a CQ whose IBV_CQ_INIT_ATTR_MASK_PD names a plain PD: EINVAL");
	errno = 0;
	CHECK(cq_on(c, pd) == NULL);
	CHECK_EQ(errno, EINVAL);
	t_case("errors: none of them took a reference: the PDs and thread domain go");
	CHECK_OK(ibv_dealloc_td(td2));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_dealloc_pd(pd2));
	CHECK_OK(ibv_close_device(c2));
	CHECK_OK(ibv_close_device(c));
}

/* ---- traffic --------------------------------------------------------------- */

static void test_traffic(void)
{
	struct ibv_context *c = open_dev();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(c));
	struct ibv_td *td = td_new(c);
	struct ibv_pd *pdm = parent_new(c, pd, td);
	struct ibv_cq *cq[2] = {t_cq(c, 64), t_cq(c, 64)};
	struct t_conn_opts o;
	struct t_qp_caps caps;
	struct ibv_qp *qp[2];
	struct t_ep ep[2];
	uint8_t *a = t_alloc(BUF_LEN, 0), *b = t_alloc(BUF_LEN, 0xee), *half;
	struct ibv_mr *amr = t_reg(pdm, a, BUF_LEN, T_ACCESS_ALL);
	struct ibv_mr *bmr = t_reg(pd, b, BUF_LEN, T_ACCESS_ALL);
	struct ibv_sge s = {(uintptr_t)a, 200, amr->lkey};
	struct ibv_send_wr wr = {.wr_id = 7,
	                         .sg_list = &s,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_RDMA_WRITE,
	                         .send_flags = IBV_SEND_SIGNALED};
	struct mlx5dv_qp dv;
	struct ibv_wc wc;
	uint16_t pi;

	t_conn_opts_default(&o);
	t_qp_caps_default(&caps);
	qp[0] = t_qp(pdm, cq[0], cq[0], &caps, NULL);
	qp[1] = t_qp(pd, cq[1], cq[1], &caps, NULL);
	for (int i = 0; i < 2; i++)
		t_local_ep(qp[i], &ep[i]);
	t_connect(qp[0], &ep[1], &o);
	t_connect(qp[1], &ep[0], &o);
	dv = t_dv_qp(qp[0]);
	CHECK(amr->pd == pdm);
	t_case("traffic: one WRITE through the thread domain's register: its WQE is copied "
	       "there whole, and it lands (the MR of the parent domain is the PD's)");
	t_fill(a, 200, 11);
	wr.wr.rdma.remote_addr = (uintptr_t)b;
	wr.wr.rdma.rkey = bmr->rkey;
	memset((uint8_t *)dv.bf.reg, 0x5a, 2 * GNIC_MLX5_BF_SIZE);
	pi = (uint16_t)be32toh(dv.dbrec[MLX5_SND_DBR]);
	t_post_send(qp[0], &wr);
	half = (uint8_t *)dv.bf.reg;
	if (half[8] == 0x5a)
		half += GNIC_MLX5_BF_SIZE;
	CHECK_MEM(half, (uint8_t *)dv.sq.buf + (size_t)(pi & (dv.sq.wqe_cnt - 1)) * 64, 64);
	wc = t_poll1(cq[0], "the WRITE");
	CHECK_WC(&wc, 7, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(b, a, 200);
	CHECK_BYTES(b + 200, 0xee, BUF_LEN - 200);
	CHECK_EQ(gemu_qp_bf_dropped(qp[0]), 0);

	for (int i = 0; i < 2; i++) {
		CHECK_OK(ibv_destroy_qp(qp[i]));
		CHECK_OK(ibv_destroy_cq(cq[i]));
	}
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	CHECK_OK(ibv_dealloc_pd(pdm));
	CHECK_OK(ibv_dealloc_td(td));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(c));
	free(a);
	free(b);
}

/* ---- shutup ---------------------------------------------------------------- */

static void test_shutup(void)
{
	struct ibv_context *c;
	struct ibv_pd *pd, *pdm;
	struct ibv_td *td;
	struct ibv_cq *cq;
	struct ibv_qp *plain, *qp;
	struct mlx5dv_qp dv;
	uint8_t *a = t_alloc(BUF_LEN, 0);
	struct ibv_mr *mr;
	struct ibv_sge s;
	struct ibv_send_wr wr = {.wr_id = 1, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE};
	uint8_t *reg;

	setenv("MLX5_SHUT_UP_BF", "1", 1);
	c = open_dev();
	unsetenv("MLX5_SHUT_UP_BF");
	pd = CHECK_PTR(ibv_alloc_pd(c));
	td = td_new(c);
	pdm = parent_new(c, pd, td);
	cq = t_cq(c, 16);
	t_case("shutup: MLX5_SHUT_UP_BF=1: a QP gets bf.size 0, a thread domain's QP its "
	       "domain's register and bf.size 256");
	plain = t_small_qp(pd, cq);
	qp = t_small_qp(pdm, cq);
	CHECK_EQ(t_dv_qp(plain).bf.size, 0);
	dv = t_dv_qp(qp);
	CHECK_EQ(dv.bf.size, GNIC_MLX5_BF_SIZE);
	CHECK(page_of((uintptr_t)dv.bf.reg) != page_of(t_bf_reg(plain)));
	t_case("shutup: ibv_post_send of one WR writes the register's 8 bytes only");
	/* in ERR the WQE is written and rung, then flushed */
	CHECK_OK(t_qp_to(qp, IBV_QPS_ERR));
	mr = t_reg(pd, a, BUF_LEN, T_ACCESS_ALL);
	s = (struct ibv_sge){(uintptr_t)a, 64, mr->lkey};
	wr.sg_list = &s;
	wr.wr.rdma.remote_addr = (uintptr_t)a;
	wr.wr.rdma.rkey = mr->rkey;
	reg = (uint8_t *)dv.bf.reg;
	memset(reg, 0x5a, 2 * GNIC_MLX5_BF_SIZE);
	t_post_send(qp, &wr);
	if (reg[0] == 0x5a)
		reg += GNIC_MLX5_BF_SIZE;
	CHECK_MEM(reg, dv.sq.buf, 8);
	CHECK_BYTES(reg + 8, 0x5a, GNIC_MLX5_BF_SIZE - 8);
	CHECK_OK(ibv_destroy_qp(qp));
	CHECK_OK(ibv_destroy_qp(plain));
	CHECK_OK(ibv_dereg_mr(mr));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pdm));
	CHECK_OK(ibv_dealloc_td(td));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(c));
	free(a);
}

/* ---- pages ----------------------------------------------------------------- */

static void test_pages(void)
{
	const char *pages = getenv("GNIC_EMU_UAR_PAGES");
	struct ibv_td_init_attr ta = {0};
	struct ibv_context *c;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_td *td[3];
	struct ibv_qp *qp[3];
	struct ibv_qp_init_attr qa = {
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_RC};

	if (!pages || strcmp(pages, "2")) {
		printf("pages: runs with GNIC_EMU_UAR_PAGES=2 only (its own CTest)\n");
		return;
	}
	c = open_dev();
	pd = CHECK_PTR(ibv_alloc_pd(c));
	cq = t_cq(c, 16);
	qa.send_cq = qa.recv_cq = cq;
	t_case("pages: 2 UAR pages: a QP takes one, two thread domains the other");
	qp[0] = t_small_qp(pd, cq);
	td[0] = td_new(c);
	td[1] = td_new(c);
	t_case("pages: a third thread domain needs a third page: ENOMEM");
	errno = 0;
	CHECK(ibv_alloc_td(c, &ta) == NULL);
	CHECK_EQ(errno, ENOMEM);
	t_case("pages: a second QP takes its page's other register; a third needs a page: "
	       "ENOMEM");
	qp[1] = t_small_qp(pd, cq);
	errno = 0;
	CHECK(ibv_create_qp(pd, &qa) == NULL);
	CHECK_EQ(errno, ENOMEM);
	t_case("pages: a freed domain's register serves the next domain");
	CHECK_OK(ibv_dealloc_td(td[0]));
	td[2] = td_new(c);
	CHECK_OK(ibv_dealloc_td(td[1]));
	CHECK_OK(ibv_dealloc_td(td[2]));
	for (int i = 0; i < 2; i++)
		CHECK_OK(ibv_destroy_qp(qp[i]));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(c));
	t_case("pages: a closed context gives its pages back: a new one has both");
	c = open_dev();
	td[0] = td_new(c);
	td[1] = td_new(c);
	td[2] = td_new(c);
	for (int i = 0; i < 3; i++)
		CHECK_OK(ibv_dealloc_td(td[i]));
	CHECK_OK(ibv_close_device(c));
}

static const struct t_named_case cases[] = {
    {"reg", test_reg},       {"pdonly", test_pdonly},   {"refs", test_refs},
    {"errors", test_errors}, {"traffic", test_traffic}, {"shutup", test_shutup},
    {"pages", test_pages},
};

int main(int argc, char **argv)
{
	T_RUN_CASES(cases, argc, argv);
	printf("PASS\n");
	return T_EXIT_PASS;
}
