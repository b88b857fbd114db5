// SPDX-License-Identifier: MIT
/*
 * gnic-emu-run [--no-namespace] [--] CMD [ARGS...]
 *
 * Runs CMD on gnic-emu: LD_LIBRARY_PATH starts with the directory of the
 * drop-in libibverbs.so.1 / libmlx5.so.1 that this program is linked with
 * (<build>/emu, or <libdir>/gnic-emu once installed: its RPATH names it), and,
 * where a private mount namespace can be had (root, or an unprivileged user
 * namespace), /sys/class/infiniband, /sys/class/infiniband_verbs and
 * /dev/infiniband show the emulated devices as on a host with ConnectX-7s.
 * Without one it says so in one line and runs CMD anyway. The exit status is
 * CMD's (exec), 127 when CMD cannot be found, 126 when it cannot be run.
 *
 * The tree's GUIDs and GIDs come from an emulator instance in a child
 * process. Since a device's GID and GUID name its fabric address (by default
 * a loopback address the emulator picks per process), the runner pins
 * GNIC_EMU_ADDR (when not set) to free loopback addresses, so that CMD's
 * emulator has the addresses the tree says.
 */
#define _GNU_SOURCE
#include "run.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define PORT_TRIES 32

static void usage(void)
{
	fprintf(stderr, "usage: gnic-emu-run [--no-namespace] [--] CMD [ARGS...]\n"
	                "  Runs CMD with gnic-emu's drop-in verbs libraries and, where a private\n"
	                "  mount namespace can be had, an emulated /sys/class/infiniband.\n"
	                "  GNIC_EMU_RUN_NAMESPACE=0 is --no-namespace.\n");
}

/* The directory of the libibverbs.so.1 this program runs with: gnic-emu's
 * (its core exports gemu_*, rdma-core's does not). */
static int emu_libdir(char *out, size_t size)
{
	Dl_info info;
	char path[PATH_MAX];

	if (!dladdr((void *)ibv_get_device_list, &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, path)) {
		fprintf(stderr, "gnic-emu-run: cannot locate the libibverbs.so.1 it runs with\n");
		return -1;
	}
	if (!dlsym(RTLD_DEFAULT, "gemu_read_sysfs_attr")) {
		fprintf(stderr, "gnic-emu-run: %s is not gnic-emu's libibverbs\n", path);
		return -1;
	}
	snprintf(out, size, "%s", dirname(path));
	return 0;
}

static int set_library_path(const char *libdir)
{
	const char *old = getenv("LD_LIBRARY_PATH");
	char *val;
	int ret;

	if (old && *old)
		ret = asprintf(&val, "%s:%s", libdir, old);
	else
		ret = asprintf(&val, "%s", libdir);
	if (ret < 0)
		return -1;
	ret = setenv("LD_LIBRARY_PATH", val, 1);
	free(val);
	return ret;
}

static bool port_free(struct in_addr addr, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = addr, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok = fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa));

	if (fd >= 0)
		close(fd);
	return ok;
}

/* A loopback base address A (127.x.y.1, x != 0) such that GNIC_EMU_PORT
 * (default 4791) is free on A .. A+n-1, the addresses of the n devices, into
 * buf; false when none was found (the emulator then picks its own). */
static bool pick_addr(char *buf, size_t size)
{
	const char *d = getenv("GNIC_EMU_DEVICES"), *p = getenv("GNIC_EMU_PORT");
	int n = d ? atoi(d) : 1, port = p && *p ? atoi(p) : 4791, i;
	unsigned seed = (unsigned)getpid();

	n = n < 1 ? 1 : n > 254 ? 254 : n;
	for (int t = 0; t < PORT_TRIES; t++) {
		uint32_t base =
		    0x7f000001u | (1 + rand_r(&seed) % 254) << 16 | (rand_r(&seed) % 256) << 8;
		struct in_addr addr;

		for (i = 0; i < n; i++) {
			addr.s_addr = htonl(base + (uint32_t)i);
			if (!port_free(addr, port))
				break;
		}
		if (i < n)
			continue;
		addr.s_addr = htonl(base);
		return inet_ntop(AF_INET, &addr, buf, (socklen_t)size) != NULL;
	}
	return false;
}

/* The tree is written by a child: its emulator instance (listeners, engine)
 * ends with it, before CMD's starts. */
static int tree_build(void)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "gnic-emu-run: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0)
		_exit(sysfs_tree_write() ? 1 : 0);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int namespace_setup(void)
{
	char why[256] = "";
	char addr[INET_ADDRSTRLEN];

	if (run_namespace_enter(why, sizeof(why))) {
		fprintf(
		    stderr,
		    "gnic-emu-run: no private mount namespace (%s): running without the emulated "
		    "/sys/class/infiniband and /dev/infiniband\n",
		    why);
		return 0;
	}
	if (!getenv("GNIC_EMU_ADDR") && pick_addr(addr, sizeof(addr)))
		setenv("GNIC_EMU_ADDR", addr, 1);
	if (tree_build()) {
		fprintf(stderr, "gnic-emu-run: cannot build the emulated sysfs tree\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *ns = getenv("GNIC_EMU_RUN_NAMESPACE");
	bool use_ns = !(ns && !strcmp(ns, "0"));
	char libdir[PATH_MAX];
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else if (!strcmp(argv[i], "--no-namespace")) {
			use_ns = false;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage();
			return 0;
		} else {
			fprintf(stderr, "gnic-emu-run: unknown option %s\n", argv[i]);
			usage();
			return 2;
		}
	}
	if (i >= argc) {
		usage();
		return 2;
	}
	if (emu_libdir(libdir, sizeof(libdir)) || set_library_path(libdir))
		return 1;
	if (!use_ns)
		fprintf(stderr, "gnic-emu-run: namespace off: running without the emulated "
		                "/sys/class/infiniband and /dev/infiniband\n");
	else if (namespace_setup())
		return 1;
	execvp(argv[i], argv + i);
	fprintf(stderr, "gnic-emu-run: %s: %s\n", argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
