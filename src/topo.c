/* SPDX-License-Identifier: MIT */
/*
 * PCIe topology: how far an RDMA device is from a PCI device (the context's
 * GPU), counted in sysfs. A device's sysfs directory is its place in the PCI
 * tree (/sys/devices/pci0000:00/0000:00:02.0/0000:02:00.0/...: root
 * complex, bridges and switch ports, the device); two devices under the same
 * switch share all but their last components. The distance is the number
 * of hops from each up to their closest common ancestor, so a NIC behind
 * the GPU's own PCIe switch (GPUDirect RDMA's good case, peer-to-peer
 * without the root complex) wins over one across the CPU.
 *
 * The sysfs root is GNIC_SYSFS (default /sys), so tests and containers can
 * point it at a tree of their own.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gnic_int.h"

/* Components of a resolved path: "/sys/devices/pci0000:00/x" has 4. */
static int components(const char *p)
{
	int n = 0;

	for (; *p; p++)
		if (*p == '/' && p[1] && p[1] != '/')
			n++;
	return n;
}

/* Components a and b have in common from the root. */
static int common(const char *a, const char *b)
{
	int n = 0;

	while (*a && *a == *b) {
		a++;
		b++;
		if ((*a == '/' || !*a) && (*b == '/' || !*b))
			n++;
	}
	return n;
}

int gnic_topo_distance(const char *a, const char *b)
{
	int c = common(a, b);

	return components(a) - c + components(b) - c;
}

/* sysfs path p ("/sys/...") under GNIC_SYSFS, resolved; false if it is not
 * there. */
static bool sysfs_resolve(const char *p, char out[PATH_MAX])
{
	const char *root = gnic_config()->sysfs;
	char in[PATH_MAX];

	if (!strncmp(p, "/sys/", 5))
		p += 4;
	if (snprintf(in, sizeof(in), "%s%s", root, p) >= (int)sizeof(in))
		return false;
	return realpath(in, out) != NULL;
}

int gnic_topo_nic_distance(const char *ibdev_path, const char *pci)
{
	char dev[PATH_MAX], nic[PATH_MAX], near[PATH_MAX];

	if (snprintf(dev, sizeof(dev), "%s/device", ibdev_path) >= (int)sizeof(dev))
		return -1;
	if (!sysfs_resolve(dev, nic))
		return -1;
	if (snprintf(dev, sizeof(dev), "/sys/bus/pci/devices/%s", pci) >= (int)sizeof(dev))
		return -1;
	if (!sysfs_resolve(dev, near))
		return -1;
	return gnic_topo_distance(nic, near);
}
