/* SPDX-License-Identifier: MIT */
/*
 * gnic-emu-run: runs an unmodified verbs program on gnic-emu. Its parts:
 * gnic-emu-run.c (arguments, the drop-in library directory, the environment,
 * exec), namespace.c (the private mount namespace and the tmpfs overlays) and
 * sysfs_tree.c (the emulated /sys/class/infiniband, infiniband_verbs and
 * /dev/infiniband, filled with what the emulator reports through verbs).
 */
#ifndef GNIC_EMU_RUN_H
#define GNIC_EMU_RUN_H

#include <stddef.h>

#define RUN_SYS_CLASS "/sys/class"
#define RUN_DEV       "/dev"

/* Enters a private mount namespace (a user namespace too when needed) in
 * which /sys/class and /dev are tmpfs overlays: every entry of the host's
 * is bound back except infiniband, infiniband_verbs (and /dev/infiniband),
 * which are left empty for sysfs_tree_write(). 0, or -errno with a reason in
 * why; a failure before any mount leaves the process as it was. */
int run_namespace_enter(char *why, size_t why_size);

/* Queries every emulated device through verbs (this process loads the
 * emulator) and writes the tree. Called in a child that exits afterwards, so
 * the program's own emulator instance starts fresh. 0, or -1 after printing
 * the reason on stderr. */
int sysfs_tree_write(void);

#endif
