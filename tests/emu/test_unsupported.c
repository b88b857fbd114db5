// SPDX-License-Identifier: MIT
/*
 * What gnic-emu does not emulate fails cleanly, each call in its own
 * convention: public verbs (NULL + errno, an errno value, or -1 + errno),
 * mlx5 direct verbs, the provider interface (IBVERBS_PRIVATE_34) and the
 * libibverbs 1.0 ABI (name@IBVERBS_1.0, reached with dlvsym as a program
 * linked against it would reach it).
 */
#define _GNU_SOURCE /* dlvsym */
#include <dlfcn.h>

#include <infiniband/mlx5dv.h>

#include "common.h"

/* The provider interface: no public header declares it. */
struct ibv_command_buffer;
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd, void *cmd, size_t cmd_size,
                     void *resp, size_t resp_size);
int ibv_cmd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int execute_ioctl(struct ibv_context *context, struct ibv_command_buffer *cmd);
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, struct ibv_command_buffer *link);
void verbs_register_driver_34(const void *ops);
struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data);
extern bool verbs_allow_disassociate_destroy;

#define CHECK_NULL_ERRNO(expr, err)                                                                \
	do {                                                                                       \
		errno = 0;                                                                         \
		if ((expr) != NULL)                                                                \
			T_FAIL("%s did not fail", #expr);                                          \
		CHECK_EQ(errno, err);                                                              \
	} while (0)

#define CHECK_MINUS1_ERRNO(expr, err)                                                              \
	do {                                                                                       \
		errno = 0;                                                                         \
		CHECK_EQ((long)(expr), -1);                                                        \
		CHECK_EQ(errno, err);                                                              \
	} while (0)

static void test_verbs(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq)
{
	char buf[64];
	struct ibv_mr *mr = t_reg(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);

	t_case("multicast, resize, rereg, import: EOPNOTSUPP");
	CHECK_RET(ibv_resize_cq(cq, 64), EOPNOTSUPP);
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, 0),
	         IBV_REREG_MR_ERR_INPUT);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_NULL_ERRNO(ibv_import_pd(ctx, 1), EOPNOTSUPP);
	CHECK_NULL_ERRNO(ibv_import_mr(pd, 1), EOPNOTSUPP);
	CHECK_NULL_ERRNO(ibv_import_device(ctx->cmd_fd), EOPNOTSUPP);
	CHECK_NULL_ERRNO(ibv_alloc_mw(pd, IBV_MW_TYPE_1), EOPNOTSUPP);

	t_case("verbs through the context's operation table: EOPNOTSUPP from verbs.h");
	struct ibv_xrcd_init_attr xa = {.comp_mask = IBV_XRCD_INIT_ATTR_FD, .fd = -1};
	struct ibv_alloc_dm_attr dma = {.length = 64};

	CHECK_NULL_ERRNO(ibv_open_xrcd(ctx, &xa), EOPNOTSUPP);
	/* a basic SRQ through ibv_create_srq_ex is ibv_create_srq; XRC is not */
	struct ibv_srq_init_attr_ex sx = {
	    .attr = {.max_wr = 16, .max_sge = 1},
	    .comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_CQ,
	    .srq_type = IBV_SRQT_XRC,
	    .pd = pd,
	    .cq = cq};

	CHECK_NULL_ERRNO(ibv_create_srq_ex(ctx, &sx), EOPNOTSUPP);
	CHECK_NULL_ERRNO(ibv_alloc_dm(ctx, &dma), EOPNOTSUPP);

	t_case("the -1 + errno calls: close_device, query_gid, query_pkey on bad input");
	union ibv_gid gid;
	__be16 pkey;

	CHECK_MINUS1_ERRNO(ibv_query_gid(ctx, 1, 256, &gid), EINVAL); /* past gid_tbl_len */
	CHECK_MINUS1_ERRNO(ibv_query_pkey(ctx, 2, 0, &pkey), EINVAL);
	CHECK_MINUS1_ERRNO(ibv_close_device(NULL), EINVAL);
	CHECK_OK(ibv_dereg_mr(mr));
}

static void test_mlx5dv(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq)
{
	uint32_t in[4] = {0}, out[4], eqn;
	struct mlx5dv_mkey_init_attr mk = {.pd = pd, .max_entries = 1};
	struct mlx5dv_clock_info ci;

	t_case("DevX commands on a context opened without DevX: EINVAL, as the kernel answers");
	CHECK_RET(mlx5dv_devx_general_cmd(ctx, in, sizeof(in), out, sizeof(out)), EINVAL);
	CHECK_NULL_ERRNO(mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out)), EINVAL);
	CHECK_RET(mlx5dv_devx_query_eqn(ctx, 0, &eqn), EINVAL);

	t_case("mlx5dv DevX on verbs objects, events, steering, mkeys, crypto: EOPNOTSUPP");
	CHECK_RET(mlx5dv_devx_cq_query(cq, in, sizeof(in), out, sizeof(out)), EOPNOTSUPP);
	CHECK_NULL_ERRNO(mlx5dv_devx_create_event_channel(ctx, 0), EOPNOTSUPP);
	CHECK_NULL_ERRNO(mlx5dv_dr_domain_create(ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_RX), EOPNOTSUPP);
	CHECK_NULL_ERRNO(mlx5dv_dr_action_create_drop(), EOPNOTSUPP);
	CHECK_NULL_ERRNO(mlx5dv_create_mkey(&mk), EOPNOTSUPP);
	CHECK_NULL_ERRNO(mlx5dv_dek_create(ctx, NULL), EOPNOTSUPP);
	CHECK_RET(mlx5dv_crypto_login(ctx, NULL), EOPNOTSUPP);
	CHECK_RET(mlx5dv_get_clock_info(ctx, &ci), EOPNOTSUPP);
	CHECK_RET(mlx5dv_set_context_attr(ctx, MLX5DV_CTX_ATTR_BUF_ALLOCATORS, NULL), EOPNOTSUPP);
	CHECK_NULL_ERRNO(mlx5dv_get_vfio_device_list(NULL), EOPNOTSUPP);

	t_case("mlx5dv calls of other conventions: -1 + errno, -errno");
	CHECK_MINUS1_ERRNO(mlx5dv_devx_get_event(NULL, NULL, 0), EOPNOTSUPP);
	CHECK_MINUS1_ERRNO(mlx5dv_vfio_get_events_fd(ctx), EOPNOTSUPP);
	CHECK_EQ(mlx5dv_qp_cancel_posted_send_wrs(NULL, 1), -EOPNOTSUPP);
	mlx5dv_devx_free_uar(NULL); /* the void releases do nothing */
	mlx5dv_pp_free(NULL);
}

static void test_provider_interface(struct ibv_context *ctx, struct ibv_cq *cq)
{
	struct ibv_send_wr wr = {.wr_id = 1}, *bad = NULL;
	struct ibv_wc wc;

	t_case("IBVERBS_PRIVATE_34: kernel commands are EOPNOTSUPP");
	CHECK_RET(ibv_cmd_alloc_pd(ctx, NULL, NULL, 0, NULL, 0), EOPNOTSUPP);
	CHECK_RET(execute_ioctl(ctx, NULL), EOPNOTSUPP);
	CHECK_MINUS1_ERRNO(ibv_cmd_poll_cq(cq, 1, &wc), EOPNOTSUPP);
	CHECK_RET(ibv_cmd_post_send(NULL, &wr, &bad), EOPNOTSUPP);
	CHECK(bad == &wr);
	CHECK_NULL_ERRNO(verbs_open_device(ctx->device, NULL), EOPNOTSUPP);
	CHECK_EQ(__ioctl_final_num_attrs(3, NULL), 3);
	CHECK(!verbs_allow_disassociate_destroy);

	t_case("IBVERBS_PRIVATE_34: a provider registering itself changes nothing");
	int n = -1;
	struct ibv_device **list;

	verbs_register_driver_34(NULL);
	list = CHECK_PTR(ibv_get_device_list(&n));
	CHECK_GE(n, 1);
	ibv_free_device_list(list);
}

/* What a program linked against libibverbs 1.0 calls. */
static void test_abi_1_0(void)
{
	void *lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *(*get_list)(int *);
	int (*get_cq_event)(void *, void **, void **);
	void (*register_driver)(const char *, void *);
	int n = -1;

	t_case("IBVERBS_1.0: the 1.0 ABI finds no device");
	CHECK(lib != NULL);
	get_list = (void *(*)(int *))dlvsym(lib, "ibv_get_device_list", "IBVERBS_1.0");
	CHECK(get_list != NULL);
	CHECK((void *)get_list != dlvsym(lib, "ibv_get_device_list", "IBVERBS_1.1"));
	errno = 0;
	CHECK(get_list(&n) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(n, 0);
	get_cq_event =
	    (int (*)(void *, void **, void **))dlvsym(lib, "ibv_get_cq_event", "IBVERBS_1.0");
	CHECK(get_cq_event != NULL);
	CHECK_MINUS1_ERRNO(get_cq_event(NULL, NULL, NULL), EOPNOTSUPP);

	t_case("ibv_register_driver@IBVERBS_1.1 does nothing");
	register_driver =
	    (void (*)(const char *, void *))dlvsym(lib, "ibv_register_driver", "IBVERBS_1.1");
	CHECK(register_driver != NULL);
	register_driver("old", NULL);
	dlclose(lib);
}

int main(void)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;

	t_case("open");
	ctx = t_open(T_DEVICE);
	pd = CHECK_PTR(ibv_alloc_pd(ctx));
	cq = t_cq(ctx, 16);
	test_verbs(ctx, pd, cq);
	test_mlx5dv(ctx, pd, cq);
	test_provider_interface(ctx, cq);
	test_abi_1_0();
	t_case("the context still works");
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
	printf("PASS\n");
	return T_EXIT_PASS;
}
