/* SPDX-License-Identifier: MIT */
/*
 * Configuration: every GNIC_EMU_* environment knob lives in the one table
 * below (name, type, default, limits, help). This is the only file that calls
 * getenv(); the rest of the emulator reads emu_cfg.
 *
 * A knob that does not parse, or lies outside its limits, is reported and
 * left at its default: a typo must not silently change the NIC's behaviour.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu.h"

/* KNOB_STR: min/max bound the length; KNOB_SECRET is a string whose value
 * is never printed or logged; KNOB_GUID is a 64-bit EUI-64 (uint64_t, host
 * order; "" = 0 = unset); KNOB_ENDIAN is "host" (0) or "big" (1), KNOB_LINK
 * "roce" (0) or "ib" (1), an int. */
enum knob_type { KNOB_INT, KNOB_IPV4, KNOB_STR, KNOB_SECRET, KNOB_GUID, KNOB_ENDIAN, KNOB_LINK };

struct knob {
	const char *name;
	enum knob_type type;
	size_t offset; /* into struct emu_config */
	const char *def;
	long min, max; /* KNOB_INT: value; KNOB_STR/SECRET: length */
	const char *help;
};

#define CFG(field) offsetof(struct emu_config, field)

static const struct knob knobs[] = {
    {"GNIC_EMU_DEVICES", KNOB_INT, CFG(num_devices), "1", 1, EMU_MAX_DEVICES,
     "number of emulated devices"},
    {"GNIC_EMU_NAME", KNOB_STR, CFG(dev_name), "rocep1s0f0", 2, sizeof(emu_cfg.dev_name) - 1,
     "name of device 0, in rdma-core's persistent style by default; the number it "
     "ends in counts up for the others (rocep1s0f1, ...; mlx5_0 gives mlx5_1, ...)"},
    {"GNIC_EMU_ADDR", KNOB_IPV4, CFG(bind_addr), "", 0, 0,
     "unicast IPv4 address of device 0 (device i has it + i): its fabric listener binds it "
     "and its GIDs and node GUID carry it; unset = each device a loopback address "
     "127.x.y.z of its own"},
    {"GNIC_EMU_PORT", KNOB_INT, CFG(base_port), "4791", 1, 65535,
     "TCP port every device's fabric listener uses (RoCE v2's UDP port by default); "
     "all processes that talk to each other must use the same"},
    {"GNIC_EMU_LOG", KNOB_INT, CFG(log_level), "1", EMU_LOG_ERR, EMU_LOG_DEBUG,
     "log level on stderr: 0 error, 1 warn, 2 info, 3 debug"},
    {"GNIC_EMU_SPIN_US", KNOB_INT, CFG(spin_us), "auto", 0, 10000000,
     "engine busy-polls this long (us) after its last work before it sleeps; "
     "auto = 200 with 4 or more CPUs, else 0"},
    {"GNIC_EMU_POLL_US", KNOB_INT, CFG(poll_us), "50", 1, 1000000,
     "while spinning on a core another thread wants, the engine polls by epoll waits "
     "this long (us) instead; software doorbells and sockets wake it sooner"},
    {"GNIC_EMU_THREADS", KNOB_INT, CFG(threads), "auto", 1, 64,
     "engine worker threads; a QP pair shares one, independent pairs are spread over "
     "them (placed at RTR). auto = a quarter of the CPUs, at most 8; 1 below 8 CPUs"},
    {"GNIC_EMU_SLEEP_US", KNOB_INT, CFG(sleep_us), "1000", 1, 1000000,
     "longest engine sleep (us) when idle; software doorbells wake it sooner"},
    {"GNIC_EMU_TIMEOUT_MS", KNOB_INT, CFG(default_timeout_ms), "4000", 1, 3600000,
     "retransmission timeout (ms) for QPs whose timeout attribute is 0"},
    {"GNIC_EMU_SECRET", KNOB_SECRET, CFG(secret), "", 16, sizeof(emu_cfg.secret) - 1,
     "shared secret (>= 16 bytes) every fabric connection must prove; "
     "unset = GNIC_EMU_SECRET_FILE, else the per-user secret file"},
    {"GNIC_EMU_SECRET_FILE", KNOB_STR, CFG(secret_file), "", 1, sizeof(emu_cfg.secret_file) - 1,
     "file holding the secret (mode 0600, owned by this user); unset = "
     "~/.gnic-emu-secret, created on first use"},
    {"GNIC_EMU_HANDSHAKE_MS", KNOB_INT, CFG(handshake_ms), "5000", 10, 600000,
     "a fabric connection must be connected and authenticated within this (ms)"},
    {"GNIC_EMU_GUID", KNOB_GUID, CFG(node_guid), "", 0, 0,
     "node GUID of device 0 (0x0123456789abcdef or 0123:4567:89ab:cdef); device i has it + i. "
     "Unset = derived from each device's fabric address (GNIC_EMU_ADDR and its port)"},
    {"GNIC_EMU_MAX_RD_ATOM", KNOB_INT, CFG(max_rd_atom), "16", 1, EMU_MAX_RD_ATOMIC,
     "max_qp_rd_atom and max_qp_init_rd_atom the device reports (ConnectX-7: 16); "
     "max_rd_atomic or max_dest_rd_atomic above it is refused with EINVAL"},
    {"GNIC_EMU_ATOMIC_ENDIAN", KNOB_ENDIAN, CFG(atomic_be), "host", 0, 0,
     "host|big: the byte order in which a requester writes an atomic's fetched value; host "
     "is what mlx5_core sets where the NIC can (atomic_cap IBV_ATOMIC_HCA), big is a NIC "
     "that cannot (atomic_cap IBV_ATOMIC_NONE, atomics still work)"},
    {"GNIC_EMU_LINK", KNOB_LINK, CFG(link_ib), "roce", 0, 0,
     "roce|ib: the ports' link layer; ib: LIDs (the low 16 bits of each device's IPv4 "
     "address, which must be a unicast LID), a GID table of one IB GID, GRH optional"},
    {"GNIC_EMU_DEVX", KNOB_INT, CFG(devx), "1", 0, 1,
     "0: mlx5dv_open_device with MLX5DV_CONTEXT_FLAGS_DEVX fails (EOPNOTSUPP), as on a NIC "
     "or kernel without DEVX; verbs are unaffected"},
    {"GNIC_EMU_ETH_IF", KNOB_STR, CFG(eth_if), "", 1, sizeof(emu_cfg.eth_if) - 1,
     "network interfaces backing the devices' Ethernet ports, device 0's first "
     "(\"veth0\" or \"eth1,,eth2\"; an empty entry: none): RAW_PACKET QPs send and receive "
     "there through an AF_PACKET socket (CAP_NET_RAW). Unset = a loopback port: frames sent "
     "come back into the same device's steering"},
    {"GNIC_EMU_CUDA_INFLIGHT", KNOB_INT, CFG(cuda_inflight), "4096", 16, 1 << 20,
     "GPU-memory copies an engine worker keeps in flight (issued, not known done); at the "
     "limit it waits for the oldest"},
    {"GNIC_EMU_CUDA_STAGE_KB", KNOB_INT, CFG(cuda_stage_kb), "16384", 64, 4 << 20,
     "pinned bounce ring per engine worker (KiB), for copies between GPU memory and host "
     "memory CUDA cannot copy from directly (pageable, or in flight on the fabric); a copy "
     "that finds no room waits for the copies before it and is done synchronously"},
    {"GNIC_EMU_CUDA_BATCH", KNOB_INT, CFG(cuda_batch), "1", 0, 1,
     "1: an engine pass's GPU copies go to the driver as one cuMemcpyBatchAsync where the "
     "driver has it (CUDA 12.8+); 0: one asynchronous copy call each"},
    {"GNIC_EMU_CUDA_D2D", KNOB_INT, CFG(cuda_d2d), "1", 0, 1,
     "1: a payload from GPU memory to GPU memory of this process is one device-to-device "
     "copy; 0: it goes through the pinned bounce ring (device to host, host to device), "
     "for a driver that would run device-to-device copies on SMs a kernel holds"},
    {"GNIC_EMU_CUDA_KERNEL_MAX", KNOB_INT, CFG(cuda_kernel_max), "4096", 0, 65536,
     "GPU copies of at most this many bytes within one GPU's memory, or between it and "
     "the pinned bounce ring, are done by one launch of gnic-emu's copy kernel per engine "
     "pass instead of one driver copy each; 0: never (every copy on the copy engines: "
     "the kernel needs a free SM slot, which a kernel that fills the GPU never leaves)"},
    {"GNIC_EMU_CUDA_TIMEOUT_MS", KNOB_INT, CFG(cuda_timeout_ms), "10000", 1, 3600000,
     "a GPU copy not done after this (ms) fails its work request (logged)"},
    {"GNIC_EMU_UAR_PAGES", KNOB_INT, CFG(uar_pages), "4096", 0, 1 << 20,
     "UAR pages (two doorbell registers each) a device gives its contexts as the kernel "
     "allocates them dynamically: QPs' registers as rdma-core's mlx5 takes them, and one "
     "register per thread domain; past it a QP or ibv_alloc_td that needs a new page fails "
     "with ENOMEM"},
    {"GNIC_EMU_PENDING_MAX", KNOB_INT, CFG(pending_max), "256", 1, 65536,
     "most inbound fabric connections still in their handshake (and at most a quarter of "
     "RLIMIT_NOFILE); over it the oldest one is dropped"},
    {"GNIC_EMU_PENDING_PER_IP", KNOB_INT, CFG(pending_per_ip), "64", 1, 65536,
     "most of those from one IPv4 address; over it that address's oldest one is dropped"},
    {"GNIC_EMU_FABRIC_LOCAL", KNOB_INT, CFG(fabric_local), "1", 0, 1,
     "1: fabric connections to processes of this host use AF_UNIX stream sockets (each "
     "listener has an abstract-namespace twin); 0: TCP only, no twin"},
};

#define NUM_KNOBS (sizeof(knobs) / sizeof(knobs[0]))

struct emu_config emu_cfg = {.log_level = EMU_LOG_WARN};

static void *knob_field(const struct knob *k)
{
	return (char *)&emu_cfg + k->offset;
}

/* 0 and the value in *out, or -EINVAL. */
/* The CPUs this process may run on (its affinity: taskset, a container's
 * cpuset), not those the machine has: 4 engine workers on the 2 CPUs of a
 * 16-core host's cpuset cost 20-30% of the message rate and doubled
 * put_lat (measured on the H200 host under taskset -c 2,3). */
static long usable_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	return sysconf(_SC_NPROCESSORS_ONLN);
}

/* "auto" for GNIC_EMU_SPIN_US: spinning pays only when the engine has a core
 * to itself. With fewer than 4 CPUs (CI has 2) the engine's spin steals the
 * core the application or the peer process needs, and measured worse on
 * every figure (ibv_rc_pingpong 1.8 ms vs 0.44 ms a round trip); there it
 * sleeps at once and is woken by the socket or a software doorbell. */
static long auto_spin_us(void)
{
	return usable_cpus() >= 4 ? 200 : 0;
}

/* "auto" for GNIC_EMU_THREADS: a quarter of the CPUs, at most 8, and one
 * below 8 CPUs. Measured on a 16-core host with placement at RTR and
 * per-worker inbound connections (docs/data/perf-notes.md): GPU-posted 64-B
 * puts over 8 QPs in one process 3.0 / 6.5 / 12.2 / 26 M msg/s with 1 / 2 /
 * 4 / 8 workers; two processes over TCP 6.2 / 9.0 / 10.3 / 8.5 M msg/s (each
 * process has its own workers: 8 + 8 oversubscribe 16 cores); one busy QP
 * pair 3.9 -> 3.5. A quarter leaves cores to the application and to a second
 * process on the host; more pays for one process driving many QPs. */
static long auto_threads(void)
{
	long n = usable_cpus() / 4;

	return n < 2 ? 1 : n > 8 ? 8 : n;
}

static int parse_int(const struct knob *k, const char *s, int *out)
{
	char *end;
	long v;

	if (strcmp(s, "auto") == 0 && k->offset == CFG(spin_us)) {
		*out = (int)auto_spin_us();
		return 0;
	}
	if (strcmp(s, "auto") == 0 && k->offset == CFG(threads)) {
		*out = (int)auto_threads();
		return 0;
	}
	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < k->min || v > k->max)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

const char *emu_addr_not_unicast(struct in_addr addr)
{
	uint32_t a = ntohl(addr.s_addr);

	if (a == INADDR_BROADCAST)
		return "a broadcast address";
	if (IN_MULTICAST(a))
		return "a multicast address";
	if ((a >> 28) == 0xf)
		return "a reserved address";
	if (a == INADDR_ANY)
		return "the unspecified address, which names no host";
	if ((a >> 24) == 0)
		return "a \"this network\" address";
	return NULL;
}

/* Only dotted IPv4: the GIDs carry an IPv4 address, one a peer can dial,
 * so a unicast one. "" is unset. */
static int parse_ipv4(const char *s, char *out)
{
	struct in_addr a;

	if (!*s) { /* unset: a loopback address per device */
		*out = 0;
		return 0;
	}
	if (strlen(s) >= sizeof(emu_cfg.bind_addr) || inet_pton(AF_INET, s, &a) != 1)
		return -EINVAL;
	if (emu_addr_not_unicast(a))
		return -EADDRNOTAVAIL;
	strcpy(out, s);
	return 0;
}

static uint64_t hexval(char c)
{
	return isdigit((unsigned char)c) ? (uint64_t)(c - '0')
	                                 : (uint64_t)(tolower((unsigned char)c) - 'a' + 10);
}

/* 16 hex digits with or without 0x, or the four colon-separated groups of
 * ibv_devinfo's notation. 0, and values too close to the top for device i's
 * GUID + i, are refused. "" is unset. */
static int parse_guid(const char *s, uint64_t *out)
{
	const char *p = s;
	uint64_t v = 0;
	int n;

	if (!*s) {
		*out = 0;
		return 0;
	}
	if (strchr(s, ':')) {
		for (int group = 0; group < 4; group++) {
			uint64_t g = 0;

			if (group && *p++ != ':')
				return -EINVAL;
			for (n = 0; n < 4 && isxdigit((unsigned char)*p); n++)
				g = g << 4 | hexval(*p++);
			if (!n)
				return -EINVAL;
			v = v << 16 | g;
		}
	} else {
		if (!strncmp(p, "0x", 2) || !strncmp(p, "0X", 2))
			p += 2;
		for (n = 0; n < 16 && isxdigit((unsigned char)*p); n++)
			v = v << 4 | hexval(*p++);
		if (!n)
			return -EINVAL;
	}
	if (*p || !v || v > UINT64_MAX - EMU_MAX_DEVICES)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "" is the built-in default (unset); anything else must fit the limits. */
static int parse_str(const struct knob *k, const char *s, char *out)
{
	size_t len = strlen(s);

	if (len && ((long)len < k->min || (long)len > k->max))
		return -EINVAL;
	memcpy(out, s, len + 1);
	return 0;
}

static int knob_set(const struct knob *k, const char *s)
{
	switch (k->type) {
	case KNOB_IPV4:
		return parse_ipv4(s, knob_field(k));
	case KNOB_STR:
	case KNOB_SECRET:
		return parse_str(k, s, knob_field(k));
	case KNOB_GUID:
		return parse_guid(s, knob_field(k));
	case KNOB_ENDIAN:
		if (strcmp(s, "host") && strcmp(s, "big"))
			return -EINVAL;
		*(int *)knob_field(k) = !strcmp(s, "big");
		return 0;
	case KNOB_LINK:
		if (strcmp(s, "roce") && strcmp(s, "ib"))
			return -EINVAL;
		*(int *)knob_field(k) = !strcmp(s, "ib");
		return 0;
	default:
		return parse_int(k, s, knob_field(k));
	}
}

static void knob_warn(const struct knob *k, const char *s)
{
	struct in_addr a;

	switch (k->type) {
	case KNOB_INT:
		emu_warn("config: ignoring %s=\"%s\" (want an integer in [%ld, %ld]); using %s",
		         k->name, s, k->min, k->max, k->def);
		break;
	case KNOB_IPV4:
		if (inet_pton(AF_INET, s, &a) == 1 && emu_addr_not_unicast(a))
			emu_warn("config: ignoring %s=\"%s\" (%s; want a unicast IPv4 address "
			         "peers can dial); using %s",
			         k->name, s, emu_addr_not_unicast(a),
			         k->def[0] ? k->def : "a loopback address per device");
		else
			emu_warn("config: ignoring %s=\"%s\" (want a dotted IPv4 address); "
			         "using %s",
			         k->name, s, k->def[0] ? k->def : "a loopback address per device");
		break;
	case KNOB_STR:
		emu_warn("config: ignoring %s=\"%s\" (want %ld to %ld bytes)", k->name, s, k->min,
		         k->max);
		break;
	case KNOB_SECRET:
		emu_warn("config: ignoring %s (%zu bytes; want %ld to %ld bytes)", k->name,
		         strlen(s), k->min, k->max);
		break;
	case KNOB_GUID:
		emu_warn("config: ignoring %s=\"%s\" (want a non-zero 64-bit GUID: "
		         "0x0123456789abcdef or 0123:4567:89ab:cdef); using the default",
		         k->name, s);
		break;
	case KNOB_ENDIAN:
		emu_warn("config: ignoring %s=\"%s\" (want host or big); using %s", k->name, s,
		         k->def);
		break;
	case KNOB_LINK:
		emu_warn("config: ignoring %s=\"%s\" (want roce or ib); using %s", k->name, s,
		         k->def);
		break;
	}
}

static void knob_load(const struct knob *k)
{
	const char *s = getenv(k->name);
	int ret;

	ret = knob_set(k, k->def);
	if (ret)
		emu_err("config: bad built-in default %s=%s", k->name, k->def);
	if (!s)
		return;
	if (!knob_set(k, s))
		return;
	knob_warn(k, s);
	knob_set(k, k->def);
}

bool emu_env_scatter_to_cqe(void)
{
	const char *v = getenv("MLX5_SCATTER_TO_CQE");

	return !v || strcmp(v, "0");
}

void emu_config_load(void)
{
	for (size_t i = 0; i < NUM_KNOBS; i++)
		knob_load(&knobs[i]);
}

static void knob_value(const struct knob *k, char *buf, size_t size)
{
	const char *str = knob_field(k);

	switch (k->type) {
	case KNOB_IPV4:
	case KNOB_STR:
		snprintf(buf, size, "%s", str[0] ? str : "(unset)");
		break;
	case KNOB_SECRET:
		snprintf(buf, size, "%s", str[0] ? "(set)" : "(unset)");
		break;
	case KNOB_GUID: {
		uint64_t g = *(const uint64_t *)knob_field(k);

		if (!g)
			snprintf(buf, size, "(unset)");
		else
			snprintf(buf, size, "%04x:%04x:%04x:%04x", (unsigned int)(g >> 48) & 0xffff,
			         (unsigned int)(g >> 32) & 0xffff, (unsigned int)(g >> 16) & 0xffff,
			         (unsigned int)g & 0xffff);
		break;
	}
	case KNOB_ENDIAN:
		snprintf(buf, size, "%s", *(const int *)knob_field(k) ? "big" : "host");
		break;
	case KNOB_LINK:
		snprintf(buf, size, "%s", *(const int *)knob_field(k) ? "ib" : "roce");
		break;
	default:
		snprintf(buf, size, "%d", *(const int *)knob_field(k));
	}
}

void emu_config_print(void *file)
{
	FILE *f = file;

	for (size_t i = 0; i < NUM_KNOBS; i++) {
		const struct knob *k = &knobs[i];
		char val[4200];

		knob_value(k, val, sizeof(val));
		fprintf(f, "%-20s = %-10s (default %s%s)\n    %s\n", k->name, val,
		        k->def[0] ? k->def : "unset",
		        getenv(k->name) ? ", set in the environment" : "", k->help);
	}
}

/* The user's home directory, for the per-user secret file: $HOME when it is
 * an absolute path, else the password database's. 0 or -ENOENT. */
int emu_config_home(char *buf, size_t size)
{
	const char *home = getenv("HOME");
	struct passwd pw, *res = NULL;
	char tmp[4096];

	if ((!home || home[0] != '/') && !getpwuid_r(geteuid(), &pw, tmp, sizeof(tmp), &res) && res)
		home = res->pw_dir;
	if (!home || home[0] != '/' || strlen(home) >= size)
		return -ENOENT;
	strcpy(buf, home);
	return 0;
}
