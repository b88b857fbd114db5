// SPDX-License-Identifier: MIT
/*
 * A stand-in for rdma-core, built twice (libibverbs.so.1 and libmlx5.so.1
 * under <build>/tests/gnic/fake-rdma-core/), for testing how libgnic picks
 * a device on a host it cannot otherwise imitate: rdma-core's persistent
 * names, where an mlx5 NIC is "rocep1s0f0" and another vendor's device is
 * listed first. Only mlx5dv_is_supported() tells them apart. Opening a
 * device fails (there is no hardware behind it) with ENXIO, so a test sees
 * from the error text which device libgnic chose. Every other call fails.
 * Prototypes are our own: libgnic only looks the names up.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct fake_dev {
	char name[64];
	bool mlx5;
};

static struct fake_dev devs[2] = {{"irdma0", false}, {"rocep1s0f0", true}};
static struct fake_dev *list[3] = {&devs[0], &devs[1], NULL};

#define EXPORT __attribute__((visibility("default")))

EXPORT struct fake_dev **ibv_get_device_list(int *n)
{
	if (n)
		*n = 2;
	return list;
}

EXPORT void ibv_free_device_list(struct fake_dev **l)
{
	(void)l;
}

EXPORT const char *ibv_get_device_name(struct fake_dev *d)
{
	return d->name;
}

EXPORT bool mlx5dv_is_supported(struct fake_dev *d)
{
	return d->mlx5;
}

EXPORT void *ibv_open_device(struct fake_dev *d)
{
	(void)d;
	errno = ENXIO;
	return NULL;
}

/* The rest exists only to be found. */
#define FAIL_INT(name)                                                                             \
	EXPORT int name(void)                                                                      \
	{                                                                                          \
		return ENOSYS;                                                                     \
	}
#define FAIL_PTR(name)                                                                             \
	EXPORT void *name(void)                                                                    \
	{                                                                                          \
		errno = ENOSYS;                                                                    \
		return NULL;                                                                       \
	}
FAIL_INT(ibv_close_device)
FAIL_INT(ibv_query_port)
FAIL_INT(ibv_query_gid)
FAIL_INT(ibv_query_device)
FAIL_PTR(ibv_alloc_pd)
FAIL_INT(ibv_dealloc_pd)
FAIL_PTR(ibv_reg_mr)
FAIL_INT(ibv_dereg_mr)
FAIL_PTR(ibv_create_cq)
FAIL_INT(ibv_destroy_cq)
FAIL_PTR(ibv_create_qp)
FAIL_INT(ibv_modify_qp)
FAIL_INT(ibv_query_qp)
FAIL_INT(ibv_destroy_qp)
FAIL_INT(mlx5dv_init_obj)
