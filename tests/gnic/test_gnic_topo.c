// SPDX-License-Identifier: MIT
/*
 * The NIC nearest the GPU: a context without a device name takes, of the
 * mlx5 devices, the one nearest its GPU (or GNIC_NEAR_PCI) in the PCIe
 * tree, read in sysfs. Three emulated devices are placed in a sysfs tree of
 * our own (GNIC_SYSFS): one beside the "GPU" behind the same PCIe switch,
 * one elsewhere under the same root complex, one under another root
 * complex. Each case runs in a child process: the knobs are read once.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gt.h"

static char root[64];

static void mkpath(const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (char *s = p + strlen(root) + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			mkdir(p, 0755);
			*s = '/';
		}
	CHECK(mkdir(p, 0755) == 0);
}

static void link_to(const char *target, const char *rel)
{
	char p[512], t[512];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	snprintf(t, sizeof(t), "%s/%s", root, target);
	CHECK(symlink(t, p) == 0);
}

#define SW    "devices/pci0000:00/0000:00:02.0/0000:02:00.0" /* a PCIe switch */
#define NIC0  "devices/pci0000:00/0000:00:01.0/0000:01:00.0"
#define NIC1  SW "/0000:04:00.0"
#define GPU   SW "/0000:03:00.0"
#define NIC2  "devices/pci0000:80/0000:80:01.0/0000:81:00.0"
#define GPU2  "devices/pci0000:80/0000:80:01.0/0000:82:00.0"
#define IBDEV "class/infiniband/"

static void make_tree(void)
{
	snprintf(root, sizeof(root), "/tmp/gnic-topo-XXXXXX");
	CHECK(mkdtemp(root) != NULL);
	mkpath(NIC0);
	mkpath(NIC1);
	mkpath(GPU);
	mkpath(NIC2);
	mkpath(GPU2);
	mkpath(IBDEV "rocep1s0f0");
	mkpath(IBDEV "rocep1s0f1");
	mkpath(IBDEV "rocep1s0f2");
	mkpath("bus/pci/devices");
	link_to(NIC0, IBDEV "rocep1s0f0/device");
	link_to(NIC1, IBDEV "rocep1s0f1/device");
	link_to(NIC2, IBDEV "rocep1s0f2/device");
	link_to(GPU, "bus/pci/devices/0000:03:00.0");
	link_to(GPU2, "bus/pci/devices/0000:82:00.0");
}

/* In a child: with GNIC_NEAR_PCI=near (NULL: unset) and the device name
 * name (NULL: none), the context opens device want, or (want NULL) fails
 * with GNIC_ERR_INVALID naming the knob. */
static void one(const char *near, const char *name, const char *want)
{
	pid_t pid;
	int status;

	t_case("GNIC_NEAR_PCI=%s, device %s: %s", near ? near : "(unset)", name ? name : "(any)",
	       want ? want : "refused");
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct gnic_ctx_attr attr;
		struct gnic_ctx *ctx = NULL;
		struct gnic_ctx_info info;

		if (near)
			setenv("GNIC_NEAR_PCI", near, 1);
		gnic_ctx_attr_init(&attr);
		attr.device = name;
		attr.gpu = GNIC_GPU_NONE;
		if (!want) {
			CHECK_GNIC_ERR(gnic_ctx_create(&attr, &ctx), GNIC_ERR_INVALID);
			CHECK(strstr(gnic_last_error(), "GNIC_NEAR_PCI"));
			fflush(NULL);
			_exit(0);
		}
		CHECK_GNIC(gnic_ctx_create(&attr, &ctx));
		CHECK_GNIC(gnic_ctx_query(ctx, &info));
		printf("  opened %s\n", info.device);
		CHECK(!strcmp(info.device, want));
		gnic_ctx_destroy(ctx);
		fflush(NULL);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	char cmd[128];

	make_tree();
	setenv("GNIC_SYSFS", root, 1);
	setenv("GNIC_EMU_DEVICES", "3", 1);
	setenv("GNIC_PROVIDER", "emu", 1);
	one(NULL, NULL, "rocep1s0f0");                   /* nothing to be near: the first */
	one("0000:03:00.0", NULL, "rocep1s0f1");         /* behind the GPU's own switch */
	one("03:00.0", NULL, "rocep1s0f1");              /* the short form */
	one("0000:82:00.0", NULL, "rocep1s0f2");         /* under the other root complex */
	one("0000:09:00.0", NULL, "rocep1s0f0");         /* not in sysfs: the first */
	one("0000:03:00.0", "rocep1s0f2", "rocep1s0f2"); /* a name wins */
	one("0000:3:0", NULL, NULL);                     /* malformed: refused */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK(system(cmd) == 0);
	return T_EXIT_PASS;
}
