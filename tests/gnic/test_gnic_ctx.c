// SPDX-License-Identifier: MIT
/*
 * Contexts: what gnic_ctx_query reports, opening a device by name, errors
 * for unknown devices and GPUs, and a destroy that refuses while objects
 * live. Runs with GNIC_EMU_DEVICES=2.
 */
#include "gt.h"

static void check_info(struct gnic_ctx *ctx, const char *device)
{
	struct gnic_ctx_info info;

	CHECK_GNIC(gnic_ctx_query(ctx, &info));
	printf("  device %s provider %d lib %s gpu %d (%s)\n", info.device, info.provider,
	       info.provider_lib, info.gpu, info.gpu_name);
	CHECK(!strcmp(info.device, device));
	CHECK_EQ(info.provider, GNIC_PROVIDER_EMU);
	CHECK(strstr(info.provider_lib, "/libgnic_emu.so.0"));
	CHECK_EQ(info.gpu, GNIC_GPU_NONE);
	CHECK_EQ(info.gpu_name[0], 0);
}

static struct gnic_ctx *open_named(const char *name, int gpu)
{
	struct gnic_ctx_attr attr;
	struct gnic_ctx *ctx = NULL;

	gnic_ctx_attr_init(&attr);
	attr.device = name;
	attr.gpu = gpu;
	CHECK_GNIC(gnic_ctx_create(&attr, &ctx));
	return ctx;
}

static void gpu_cases(void)
{
	struct gnic_ctx_attr attr;
	struct gnic_ctx *ctx = NULL;
	struct gnic_ctx_info info;
	gnic_status_t st;

	t_case("GNIC_GPU_AUTO: a GPU if there is one, else NONE silently");
	ctx = open_named(NULL, GNIC_GPU_AUTO);
	CHECK_GNIC(gnic_ctx_query(ctx, &info));
	printf("  AUTO gave GPU %d (%s)\n", info.gpu, info.gpu_name);
	CHECK(info.gpu == GNIC_GPU_NONE || info.gpu == 0);
	gnic_ctx_destroy(ctx);

	t_case("an explicit GPU ordinal");
	gnic_ctx_attr_init(&attr);
	attr.gpu = info.gpu == GNIC_GPU_NONE ? 0 : 999;
	ctx = NULL;
	st = gnic_ctx_create(&attr, &ctx);
	CHECK_EQ(st, GNIC_ERR_NO_DEVICE);
	CHECK(ctx == NULL);
	printf("  expected: %s\n", gnic_last_error());
	CHECK(strstr(gnic_last_error(), "GPU"));

	t_case("a bad GPU value");
	attr.gpu = -3;
	CHECK_GNIC_ERR(gnic_ctx_create(&attr, &ctx), GNIC_ERR_INVALID);
}

int main(void)
{
	struct gnic_ctx_attr attr;
	struct gnic_ctx *ctx = NULL, *ctx1;
	struct gnic_ctx_info info;
	struct gnic_mr *mr;
	static uint8_t buf[4096];

	t_case("defaults");
	memset(&attr, 0xff, sizeof(attr));
	gnic_ctx_attr_init(&attr);
	CHECK_EQ(attr.provider, GNIC_PROVIDER_AUTO);
	CHECK(attr.device == NULL);
	CHECK_EQ(attr.gpu, GNIC_GPU_AUTO);

	t_case("first device, NULL attr = defaults");
	CHECK_GNIC(gnic_ctx_create(NULL, &ctx));
	CHECK_GNIC(gnic_ctx_query(ctx, &info));
	CHECK(!strcmp(info.device, "rocep1s0f0"));
	gnic_ctx_destroy(ctx);

	t_case("by name, two at once");
	ctx = open_named("rocep1s0f0", GNIC_GPU_NONE);
	ctx1 = open_named("rocep1s0f1", GNIC_GPU_NONE);
	check_info(ctx, "rocep1s0f0");
	check_info(ctx1, "rocep1s0f1");
	gnic_ctx_destroy(ctx1);

	t_case("unknown device");
	gnic_ctx_attr_init(&attr);
	attr.device = "mlx5_7";
	ctx1 = NULL;
	CHECK_GNIC_ERR(gnic_ctx_create(&attr, &ctx1), GNIC_ERR_NO_DEVICE);
	CHECK(strstr(gnic_last_error(), "mlx5_7"));
	CHECK(ctx1 == NULL);

	t_case("bad arguments");
	CHECK_GNIC_ERR(gnic_ctx_create(&attr, NULL), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_ctx_query(NULL, &info), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_ctx_query(ctx, NULL), GNIC_ERR_INVALID);
	gnic_ctx_destroy(NULL);

	t_case("destroy refuses while an MR lives");
	CHECK_GNIC(gnic_mr_reg(ctx, buf, sizeof(buf), GNIC_ACCESS_ALL, &mr));
	gnic_ctx_destroy(ctx);
	CHECK(strstr(gnic_last_error(), "1 MRs"));
	CHECK_GNIC(gnic_ctx_query(ctx, &info)); /* still alive */
	gnic_mr_dereg(mr);
	gnic_ctx_destroy(ctx);

	gpu_cases();
	return T_EXIT_PASS;
}
