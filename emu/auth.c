/* SPDX-License-Identifier: MIT */
/*
 * The fabric's shared secret and nonces.
 *
 * Every fabric connection proves knowledge of one secret (fabric_wire.h has
 * the handshake). It comes from, in this order:
 *
 *   GNIC_EMU_SECRET       the value itself (>= 16 bytes)
 *   GNIC_EMU_SECRET_FILE  a file holding it
 *   ~/.gnic-emu-secret    per-user default, created on first use
 *
 * so two processes of one user on one host agree with no configuration,
 * while other users (who cannot read the file) and other hosts (which do not
 * share the home directory) get in only when handed the secret. A file is
 * trusted only when it is a regular file owned by this user that group and
 * others cannot access, like ssh's private keys; surrounding whitespace is
 * not part of the secret. The default file is written under a temporary
 * name and linked into place, so a process racing us reads either nothing or
 * the whole secret, never half of it.
 *
 * The secret is loaded once per process, at initialisation and without
 * nic.lock (emu_auth_load): reading a file can take a while (a network home
 * directory), and nothing may wait under the lock the engine needs. A
 * failure is remembered: it is logged once, and every connection is refused
 * after. Files are opened non-blocking and without following a symbolic
 * link, and checked before a byte is read: a FIFO or a device would
 * otherwise block the open() or the read() for good.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emu.h"
#include "fabric.h"

#define SECRET_MIN      16
#define SECRET_MAX      4096
#define SECRET_FILE_MAX 65536 /* a secret file larger than this is not one */
#define SECRET_DEFAULT  ".gnic-emu-secret"
#define CREATED_BYTES   32 /* random bytes in a new default file, written as hex */

static struct {
	bool loaded;
	int err;
	size_t len;
	uint8_t key[SECRET_MAX];
} secret;

static size_t trim(const uint8_t *p, size_t len, size_t *start)
{
	size_t s = 0;

	while (s < len && (p[s] == ' ' || p[s] == '\t' || p[s] == '\n' || p[s] == '\r'))
		s++;
	while (len > s && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\n' ||
	                   p[len - 1] == '\r'))
		len--;
	*start = s;
	return len - s;
}

static const char *file_type(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	return "not a regular file";
}

/* Is the open file fd one we may take a secret from? 0 or -errno, logged. */
static int file_trusted(int fd, const char *path)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode)) {
		emu_err("fabric: secret file %s is not a regular file (it is %s); refusing it",
		        path, file_type(st.st_mode));
		return -EINVAL;
	}
	if (st.st_size > SECRET_FILE_MAX) {
		emu_err("fabric: secret file %s is too large (%lld bytes; a secret is %d to %d); "
		        "refusing it",
		        path, (long long)st.st_size, SECRET_MIN, SECRET_MAX);
		return -EFBIG;
	}
	if (st.st_uid != geteuid()) {
		emu_err("fabric: secret file %s is owned by uid %u, not by this user (uid %u); "
		        "refusing it",
		        path, (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		emu_err("fabric: secret file %s has mode 0%o: group or others may access it; "
		        "refusing it (chmod 600 %s)",
		        path, (unsigned)(st.st_mode & 07777), path);
		return -EPERM;
	}
	return 0;
}

static int file_read(const char *path)
{
	uint8_t buf[SECRET_MAX + 2];
	size_t got = 0, start, len;
	int fd, ret;

	/* O_NONBLOCK: opening a FIFO with no writer would wait for one */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		if (ret != -ENOENT) /* the caller decides about a missing file */
			emu_err("fabric: secret file %s: %s", path,
			        ret == -ELOOP ? "is a symbolic link; refusing it" : strerror(-ret));
		return ret;
	}
	ret = file_trusted(fd, path);
	while (!ret && got < sizeof(buf)) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ret = -errno;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (ret) {
		if (ret != -EPERM && ret != -EINVAL && ret != -EFBIG)
			emu_err("fabric: secret file %s: %s", path, strerror(-ret));
		return ret;
	}
	len = trim(buf, got, &start);
	if (len < SECRET_MIN || len > SECRET_MAX) {
		emu_err("fabric: secret file %s holds %zu bytes%s; want %d to %d", path, len,
		        got == sizeof(buf) ? " or more" : "", SECRET_MIN, SECRET_MAX);
		memset(buf, 0, sizeof(buf));
		return -EINVAL;
	}
	memcpy(secret.key, buf + start, len);
	secret.len = len;
	memset(buf, 0, sizeof(buf));
	return 0;
}

static int random_bytes(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Write a fresh secret to a temporary file next to path, then link it into
 * place: link() never replaces an existing file, so whoever is first wins
 * and everyone reads the winner's secret. */
static int file_create(const char *path)
{
	uint8_t raw[CREATED_BYTES];
	char tmp[4200], hex[2 * CREATED_BYTES + 2];
	int fd, ret;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	ret = random_bytes(raw, sizeof(raw));
	if (ret)
		return ret;
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	hex[2 * CREATED_BYTES] = '\n';
	hex[2 * CREATED_BYTES + 1] = 0;
	memset(raw, 0, sizeof(raw));
	fd = mkostemp(tmp, O_CLOEXEC); /* mode 0600, O_EXCL */
	if (fd < 0)
		return -errno;
	ret = fchmod(fd, S_IRUSR | S_IWUSR) ? -errno : 0;
	if (!ret)
		ret = write_all(fd, hex, 2 * CREATED_BYTES + 1);
	if (!ret && fsync(fd))
		ret = -errno;
	memset(hex, 0, sizeof(hex));
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && link(tmp, path) && errno != EEXIST)
		ret = -errno;
	unlink(tmp);
	if (!ret)
		emu_info("fabric: using the per-user secret file %s", path);
	return ret;
}

static int load_default(void)
{
	char home[4096], path[4200];
	int ret;

	ret = emu_config_home(home, sizeof(home));
	if (ret) {
		emu_err("fabric: no home directory for the per-user secret file; "
		        "set GNIC_EMU_SECRET or GNIC_EMU_SECRET_FILE");
		return ret;
	}
	snprintf(path, sizeof(path), "%s/%s", home, SECRET_DEFAULT);
	ret = file_read(path);
	if (ret != -ENOENT)
		return ret;
	ret = file_create(path);
	if (ret) {
		emu_err("fabric: cannot create the secret file %s: %s; set GNIC_EMU_SECRET or "
		        "GNIC_EMU_SECRET_FILE",
		        path, strerror(-ret));
		return ret;
	}
	return file_read(path);
}

static int load(void)
{
	int ret;

	if (emu_cfg.secret[0]) {
		if (emu_cfg.secret_file[0])
			emu_warn("fabric: both GNIC_EMU_SECRET and GNIC_EMU_SECRET_FILE are set; "
			         "using GNIC_EMU_SECRET");
		secret.len = strlen(emu_cfg.secret);
		memcpy(secret.key, emu_cfg.secret, secret.len);
		return 0;
	}
	if (!emu_cfg.secret_file[0])
		return load_default();
	ret = file_read(emu_cfg.secret_file);
	if (ret == -ENOENT)
		emu_err("fabric: GNIC_EMU_SECRET_FILE %s: %s", emu_cfg.secret_file, strerror(-ret));
	return ret;
}

void emu_auth_load(void)
{
	if (secret.loaded)
		return;
	secret.err = load();
	secret.loaded = true;
	if (secret.err)
		emu_err("fabric: no secret: every fabric connection will be refused");
}

int emu_auth_key(const uint8_t **key, size_t *len)
{
	if (!secret.loaded)
		return -ENOKEY; /* emu_nic_init() loads it before any listener exists */
	if (secret.err)
		return secret.err;
	*key = secret.key;
	*len = secret.len;
	return 0;
}

int emu_auth_nonce(uint8_t nonce[EMU_AUTH_NONCE_LEN])
{
	return random_bytes(nonce, EMU_AUTH_NONCE_LEN);
}
