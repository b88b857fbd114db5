// SPDX-License-Identifier: MIT
/*
 * The private mount namespace. /sys/class and /dev cannot get new entries
 * (sysfs refuses mkdir; a directory in /dev would be the host's), so each is
 * covered by a tmpfs into which the host's entries are bound back one by one
 * (directories and files recursively bound, symlinks copied), leaving out the
 * RDMA ones that the emulated tree replaces. Mount propagation is turned off
 * first: nothing done here is seen outside the namespace.
 */
#define _GNU_SOURCE
#include "run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

/* A user namespace maps only our own uid and gid: the program runs as the
 * same user, with no more rights on anything outside. */
static int user_ns_map(uid_t uid, gid_t gid)
{
	char map[64];
	int ret;

	ret = write_file("/proc/self/setgroups", "deny");
	if (ret && ret != -ENOENT)
		return ret;
	snprintf(map, sizeof(map), "%u %u 1", (unsigned int)uid, (unsigned int)uid);
	ret = write_file("/proc/self/uid_map", map);
	if (ret)
		return ret;
	snprintf(map, sizeof(map), "%u %u 1", (unsigned int)gid, (unsigned int)gid);
	return write_file("/proc/self/gid_map", map);
}

static int unshare_mounts(char *why, size_t why_size)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int ret;

	if (unshare(CLONE_NEWNS) == 0)
		return 0;
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS)) {
		ret = -errno;
		snprintf(why, why_size, "unshare(CLONE_NEWUSER|CLONE_NEWNS): %s", strerror(errno));
		return ret;
	}
	ret = user_ns_map(uid, gid);
	if (ret)
		snprintf(why, why_size, "user namespace id maps: %s", strerror(-ret));
	return ret;
}

static bool skipped(const char *name, const char *const *skip)
{
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return true;
	for (; *skip; skip++)
		if (!strcmp(name, *skip))
			return true;
	return false;
}

/* One host entry (name, under the original directory open as orig) back
 * into the tmpfs now covering dir. An entry that cannot be bound is left out
 * with a warning: the rest of the system stays usable. */
static void entry_restore(int orig, const char *dir, const char *name)
{
	char src[64 + NAME_MAX], dst[PATH_MAX], link[PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd;

	if (fstatat(orig, name, &st, AT_SYMLINK_NOFOLLOW))
		return;
	if (snprintf(dst, sizeof(dst), "%s/%s", dir, name) >= (int)sizeof(dst))
		return;
	if (S_ISLNK(st.st_mode)) {
		n = readlinkat(orig, name, link, sizeof(link) - 1);
		if (n < 0)
			return;
		link[n] = '\0';
		if (symlink(link, dst))
			fprintf(stderr, "gnic-emu-run: warning: %s: %s\n", dst, strerror(errno));
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(dst, st.st_mode & 07777))
			return;
	} else {
		fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			return;
		close(fd);
	}
	if (snprintf(src, sizeof(src), "/proc/self/fd/%d/%s", orig, name) >= (int)sizeof(src) ||
	    mount(src, dst, NULL, MS_BIND | MS_REC, NULL)) {
		fprintf(stderr, "gnic-emu-run: warning: %s left out: bind: %s\n", dst,
		        strerror(errno));
		if (S_ISDIR(st.st_mode))
			rmdir(dst);
		else
			unlink(dst);
	}
}

/* Covers dir with a tmpfs holding the host's entries but those in skip. */
static int overlay(const char *dir, const char *const *skip, char *why, size_t why_size)
{
	struct dirent *e;
	DIR *d;
	int orig;

	orig = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	d = opendir(dir);
	if (orig < 0 || !d) {
		snprintf(why, why_size, "%s: %s", dir, strerror(errno));
		goto fail;
	}
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755")) {
		snprintf(why, why_size, "tmpfs on %s: %s", dir, strerror(errno));
		goto fail;
	}
	while ((e = readdir(d)))
		if (!skipped(e->d_name, skip))
			entry_restore(orig, dir, e->d_name);
	closedir(d);
	close(orig);
	return 0;
fail:
	if (d)
		closedir(d);
	if (orig >= 0)
		close(orig);
	return -1;
}

int run_namespace_enter(char *why, size_t why_size)
{
	static const char *const sys_skip[] = {"infiniband", "infiniband_verbs", "infiniband_mad",
	                                       "infiniband_cm", NULL};
	static const char *const dev_skip[] = {"infiniband", NULL};
	int ret = unshare_mounts(why, why_size);

	if (ret)
		return ret;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		snprintf(why, why_size, "making / private: %s", strerror(errno));
		return -1;
	}
	if (overlay(RUN_SYS_CLASS, sys_skip, why, why_size) ||
	    overlay(RUN_DEV, dev_skip, why, why_size))
		return -1;
	return 0;
}
