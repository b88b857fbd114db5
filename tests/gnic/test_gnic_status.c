// SPDX-License-Identifier: MIT
/*
 * gnic_strerror names every status; gnic_last_error is per thread, empty
 * until a call fails, and describes the failure.
 */
#include <pthread.h>

#include "gt.h"

static const struct {
	gnic_status_t st;
	const char *prefix;
} names[] = {
    {GNIC_OK, "GNIC_OK:"},
    {GNIC_ERR_INVALID, "GNIC_ERR_INVALID:"},
    {GNIC_ERR_NOMEM, "GNIC_ERR_NOMEM:"},
    {GNIC_ERR_NO_DEVICE, "GNIC_ERR_NO_DEVICE:"},
    {GNIC_ERR_NOT_SUPPORTED, "GNIC_ERR_NOT_SUPPORTED:"},
    {GNIC_ERR_SYSTEM, "GNIC_ERR_SYSTEM:"},
    {GNIC_ERR_CUDA, "GNIC_ERR_CUDA:"},
    {GNIC_ERR_TIMEOUT, "GNIC_ERR_TIMEOUT:"},
    {GNIC_ERR_PROTOCOL, "GNIC_ERR_PROTOCOL:"},
    {GNIC_ERR_STATE, "GNIC_ERR_STATE:"},
    {GNIC_ERR_QP, "GNIC_ERR_QP:"},
};

static void *other_thread(void *arg)
{
	(void)arg;
	/* the failure in main does not leak into this thread */
	CHECK_EQ(strlen(gnic_last_error()), 0);
	CHECK_GNIC_ERR(gnic_mr_reg(NULL, NULL, 0, 0, NULL), GNIC_ERR_INVALID);
	return NULL;
}

int main(void)
{
	struct gnic_boot *boot = NULL;
	pthread_t th;
	char mine[512];

	t_case("every status has its name");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *s = gnic_strerror(names[i].st);

		printf("  %d: %s\n", names[i].st, s);
		CHECK(!strncmp(s, names[i].prefix, strlen(names[i].prefix)));
		CHECK(strlen(s) > strlen(names[i].prefix) + 2);
	}
	CHECK(strstr(gnic_strerror(-11), "UNKNOWN"));
	CHECK(strstr(gnic_strerror(1), "UNKNOWN"));
	CHECK(strstr(gnic_strerror(-1000), "UNKNOWN"));

	t_case("last error: empty, then set by a failure");
	CHECK_EQ(strlen(gnic_last_error()), 0);
	CHECK_GNIC_ERR(gnic_boot_init("127.0.0.1:1", 5, 2, 1000, &boot), GNIC_ERR_INVALID);
	CHECK(strstr(gnic_last_error(), "rank 5 of 2"));
	snprintf(mine, sizeof(mine), "%s", gnic_last_error());

	t_case("last error is per thread");
	CHECK_EQ(pthread_create(&th, NULL, other_thread, NULL), 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK(!strcmp(gnic_last_error(), mine));

	t_case("a success leaves the text of the last failure");
	gnic_qp_attr_init(NULL); /* no-op */
	CHECK(!strcmp(gnic_last_error(), mine));
	return T_EXIT_PASS;
}
