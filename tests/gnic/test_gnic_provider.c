// SPDX-License-Identifier: MIT
/*
 * Provider selection, run once per environment (see CMakeLists.txt):
 *   test_gnic_provider emu        the context runs on gnic-emu
 *   test_gnic_provider no_device [WORD]  gnic_ctx_create fails with
 *                                 GNIC_ERR_NO_DEVICE (and a text with WORD)
 *   test_gnic_provider invalid    gnic_ctx_create fails: GNIC_ERR_INVALID
 *   test_gnic_provider renamed    with fake_rdma_core.c as rdma-core: AUTO
 *                                 picks its mlx5 device "rocep1s0f0" (not
 *                                 "irdma0", listed first) and fails to open
 *                                 it; naming "irdma0" is refused as not mlx5
 * A program's explicit attr.provider always wins over GNIC_PROVIDER.
 */
#include <dirent.h>

#include "gt.h"

/* A real mlx5 device would make rdma-core usable: the NO_DEVICE cases then
 * do not apply. */
static bool has_mlx5_hw(void)
{
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while ((e = readdir(d)))
		found |= !strncmp(e->d_name, "mlx5", 4);
	closedir(d);
	return found;
}

static void expect_emu(const struct gnic_ctx_attr *attr)
{
	struct gnic_ctx *ctx = NULL;
	struct gnic_ctx_info info;

	CHECK_GNIC(gnic_ctx_create(attr, &ctx));
	CHECK_GNIC(gnic_ctx_query(ctx, &info));
	printf("  provider %d, device %s, library %s\n", info.provider, info.device,
	       info.provider_lib);
	CHECK_EQ(info.provider, GNIC_PROVIDER_EMU);
	CHECK(!strcmp(info.device, "rocep1s0f0"));
	CHECK(strstr(info.provider_lib, "libgnic_emu.so.0"));
	CHECK_EQ(info.provider_lib[0], '/'); /* found by path, not by name */
	gnic_ctx_destroy(ctx);
}

int main(int argc, char **argv)
{
	const char *want = argc > 1 ? argv[1] : "emu";
	const char *env = getenv("GNIC_PROVIDER");
	struct gnic_ctx *ctx = NULL;
	struct gnic_ctx_attr attr;

	gnic_ctx_attr_init(&attr);
	attr.gpu = GNIC_GPU_NONE;
	printf("GNIC_PROVIDER=%s GNIC_EMU_LIB=%s, expecting %s\n", env ? env : "(unset)",
	       getenv("GNIC_EMU_LIB") ? getenv("GNIC_EMU_LIB") : "(unset)", want);

	t_case("attr AUTO with this environment: %s", want);
	if (!strcmp(want, "emu")) {
		expect_emu(&attr);
	} else if (!strcmp(want, "no_device")) {
		if (has_mlx5_hw())
			t_skip("this machine has an mlx5 device");
		CHECK_GNIC_ERR(gnic_ctx_create(&attr, &ctx), GNIC_ERR_NO_DEVICE);
		CHECK(ctx == NULL);
		if (argc > 2 && !strstr(gnic_last_error(), argv[2]))
			T_FAIL("the text does not mention \"%s\"", argv[2]);
	} else if (!strcmp(want, "renamed")) {
		CHECK_GNIC_ERR(gnic_ctx_create(&attr, &ctx), GNIC_ERR_SYSTEM);
		if (!strstr(gnic_last_error(), "open_device(rocep1s0f0)"))
			T_FAIL("AUTO did not choose rocep1s0f0 through rdma-core");
		t_case("a named device that is not mlx5");
		attr.device = "irdma0";
		CHECK_GNIC_ERR(gnic_ctx_create(&attr, &ctx), GNIC_ERR_NO_DEVICE);
		if (!strstr(gnic_last_error(), "irdma0") || !strstr(gnic_last_error(), "mlx5"))
			T_FAIL("the text does not say irdma0 is not an mlx5 device");
		return T_EXIT_PASS;
	} else if (!strcmp(want, "invalid")) {
		CHECK_GNIC_ERR(gnic_ctx_create(&attr, &ctx), GNIC_ERR_INVALID);
		CHECK(strstr(gnic_last_error(), "GNIC_"));
		CHECK(ctx == NULL);
		return T_EXIT_PASS; /* a malformed environment refuses every context */
	} else {
		T_FAIL("unknown expectation %s", want);
	}

	if (env && !strcmp(env, "verbs")) {
		t_case("explicit EMU overrides GNIC_PROVIDER=verbs");
		attr.provider = GNIC_PROVIDER_EMU;
		expect_emu(&attr);
	}
	if (!getenv("GNIC_EMU_LIB") && !has_mlx5_hw()) {
		t_case("explicit VERBS: no mlx5 device through rdma-core here");
		attr.provider = GNIC_PROVIDER_VERBS;
		CHECK_GNIC_ERR(gnic_ctx_create(&attr, &ctx), GNIC_ERR_NO_DEVICE);
	}
	t_case("unknown provider value");
	attr.provider = (enum gnic_provider)7;
	CHECK_GNIC_ERR(gnic_ctx_create(&attr, &ctx), GNIC_ERR_INVALID);
	return T_EXIT_PASS;
}
