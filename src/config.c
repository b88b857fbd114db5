/* SPDX-License-Identifier: MIT */
/*
 * Configuration: every GNIC_* environment knob lives in the table below
 * (name, type, default, help). This is the only file of libgnic that calls
 * getenv(); the rest reads gnic_config(). The table is read once, at the
 * first use.
 *
 * A malformed GNIC_PROVIDER, GNIC_EMU_LIB, GNIC_DB_MODE, GNIC_DB_MAP, GNIC_QUEUE,
 * GNIC_NEAR_PCI, GNIC_GID_INDEX, GNIC_TRAFFIC_CLASS or GNIC_SL is not
 * ignored: they choose what runs and where packets go, so gnic_ctx_create()
 * refuses to start (config.error). A malformed GNIC_LOG is reported and left
 * at its default.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gnic_int.h"

/* KNOB_INT: an integer in [min, max] into the int at offset of struct
 * gnic_config; "auto" reads as -1 where min is -1. */
enum knob_type {
	KNOB_PROVIDER,
	KNOB_PATH,
	KNOB_LOG,
	KNOB_INT,
	KNOB_SYSFS,
	KNOB_PCI,
	KNOB_DB_MODE,
	KNOB_DB_MAP,
	KNOB_QUEUE
};

struct knob {
	const char *name;
	enum knob_type type;
	const char *def;
	const char *help;
	size_t offset;
	long min, max;
};

#define CFG(field) offsetof(struct gnic_config, field)

static const struct knob knobs[] = {
    {"GNIC_PROVIDER", KNOB_PROVIDER, "auto",
     "auto|verbs|emu: which verbs provider a context with provider AUTO uses", 0, 0, 0},
    {"GNIC_EMU_LIB", KNOB_PATH, "",
     "path of libgnic_emu.so.0; empty: next to libgnic.so, then the loader's search", 0, 0, 0},
    {"GNIC_LOG", KNOB_LOG, "1", "log level on stderr: 0 error, 1 warn, 2 info, 3 debug", 0, 0, 0},
    {"GNIC_GID_INDEX", KNOB_INT, "auto",
     "auto|0-255: the GID table entry QPs send from; auto: on RoCE a RoCE v2 entry, "
     "IPv4-mapped first, on InfiniBand entry 0",
     CFG(gid_index), -1, 255},
    {"GNIC_TRAFFIC_CLASS", KNOB_INT, "0",
     "0-255: the GRH traffic class of every QP (on RoCE v2: DSCP << 2 | ECN)", CFG(traffic_class),
     0, 255},
    {"GNIC_SL", KNOB_INT, "0", "0-15: the service level of every QP (on RoCE: the VLAN priority)",
     CFG(sl), 0, 15},
    {"GNIC_NEAR_PCI", KNOB_PCI, "",
     "PCI address (dddd:bb:dd.f); a context without a device name takes the mlx5 device "
     "nearest it in the PCIe tree; empty: nearest the context's GPU",
     0, 0, 0},
    {"GNIC_SYSFS", KNOB_SYSFS, "/sys", "where sysfs is mounted (PCIe distances are read there)", 0,
     0, 0},
    {"GNIC_DB_MODE", KNOB_DB_MODE, "auto",
     "auto|sm|bf|cpu|proxy: the doorbell mode of QPs created with db_mode AUTO", 0, 0, 0},
    {"GNIC_DB_MAP", KNOB_DB_MAP, "try",
     "try|off: off never maps the doorbell register for device code (as when the system "
     "cannot): AUTO QPs then use the CPU proxy, SM and BF QPs fail",
     0, 0, 0},
    {"GNIC_QUEUE", KNOB_QUEUE, "auto",
     "auto|host|gpu|host_devx: where QPs created with queue AUTO put their queues "
     "(host: ibv_create_qp; gpu: DEVX umem in GPU memory; host_devx: DEVX umem in host memory)",
     0, 0, 0},
};

#define NUM_KNOBS (sizeof(knobs) / sizeof(knobs[0]))

static struct gnic_config cfg = {.log_level = GNIC_LOG_WARN, .db_map = true};
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;

static const char *const provider_names[] = {
    [GNIC_PROVIDER_AUTO] = "auto",
    [GNIC_PROVIDER_VERBS] = "verbs",
    [GNIC_PROVIDER_EMU] = "emu",
};

/* gnic_log() needs the configuration: while loading it, warn directly. */
static void config_warn(const char *name, const char *value, const char *want)
{
	fprintf(stderr, "gnic[%d]: warn: config: ignoring %s=\"%s\" (want %s)\n", (int)getpid(),
	        name, value, want);
}

static void config_fail(const char *name, const char *value, const char *want)
{
	if (!cfg.error[0])
		snprintf(cfg.error, sizeof(cfg.error), "%s=\"%.200s\" is invalid: want %s", name,
		         value, want);
}

static const char *const db_mode_names[] = {
    [GNIC_DB_AUTO] = "auto", [GNIC_DB_SM] = "sm",       [GNIC_DB_BF] = "bf",
    [GNIC_DB_CPU] = "cpu",   [GNIC_DB_PROXY] = "proxy",
};

static void knob_db_mode(const struct knob *k, const char *s)
{
	for (int i = 0; i < (int)(sizeof(db_mode_names) / sizeof(db_mode_names[0])); i++) {
		if (!strcmp(s, db_mode_names[i])) {
			cfg.db_mode = i;
			return;
		}
	}
	config_fail(k->name, s, "auto, sm, bf, cpu or proxy");
}

static const char *const queue_names[] = {
    [GNIC_QUEUE_AUTO] = "auto",
    [GNIC_QUEUE_HOST] = "host",
    [GNIC_QUEUE_GPU] = "gpu",
    [GNIC_QUEUE_HOST_DEVX] = "host_devx",
};

/* It decides where the NIC reads its queues: not ignored when malformed. */
static void knob_queue(const struct knob *k, const char *s)
{
	for (int i = 0; i < (int)(sizeof(queue_names) / sizeof(queue_names[0])); i++) {
		if (!strcmp(s, queue_names[i])) {
			cfg.queue = i;
			return;
		}
	}
	config_fail(k->name, s, "auto, host, gpu or host_devx");
}

static void knob_db_map(const struct knob *k, const char *s)
{
	if (strcmp(s, "try") && strcmp(s, "off")) {
		config_fail(k->name, s, "try or off");
		return;
	}
	cfg.db_map = !strcmp(s, "try");
}

static int parse_provider(const char *s)
{
	for (int i = 0; i < (int)(sizeof(provider_names) / sizeof(provider_names[0])); i++)
		if (!strcmp(s, provider_names[i]))
			return i;
	return -1;
}

static void knob_provider(const struct knob *k, const char *s)
{
	int p = parse_provider(s);

	if (p < 0) {
		config_fail(k->name, s, "auto, verbs or emu");
		return;
	}
	cfg.provider = p;
}

static void knob_path(const struct knob *k, const char *s)
{
	if (strlen(s) >= sizeof(cfg.emu_lib)) {
		config_fail(k->name, s, "a path shorter than 256 bytes");
		return;
	}
	strcpy(cfg.emu_lib, s);
}

static void knob_sysfs(const struct knob *k, const char *s)
{
	if (!s[0] || strlen(s) >= sizeof(cfg.sysfs)) {
		config_warn(k->name, s, "a path shorter than 256 bytes");
		return;
	}
	strcpy(cfg.sysfs, s);
}

/* It chooses the NIC: a malformed one must not be ignored. */
static void knob_pci(const struct knob *k, const char *s)
{
	cfg.near_pci[0] = 0;
	if (s[0] && !gnic_pci_norm(s, cfg.near_pci))
		config_fail(k->name, s, "a PCI address dddd:bb:dd.f");
}

static void knob_log(const struct knob *k, const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || *end || v < GNIC_LOG_ERR || v > GNIC_LOG_DEBUG) {
		config_warn(k->name, s, "an integer in [0, 3]");
		return;
	}
	cfg.log_level = (int)v;
}

/* They decide where packets go and how they are queued: a malformed one
 * must not be replaced by a default. */
static void knob_int(const struct knob *k, const char *s)
{
	char want[64], *end;
	long v;

	if (k->min == -1 && !strcmp(s, "auto")) {
		v = -1;
	} else {
		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || end == s || *end || v < (k->min < 0 ? 0 : k->min) || v > k->max) {
			snprintf(want, sizeof(want), "%san integer in [%ld, %ld]",
			         k->min == -1 ? "auto or " : "", k->min < 0 ? 0 : k->min, k->max);
			config_fail(k->name, s, want);
			return;
		}
	}
	*(int *)((char *)&cfg + k->offset) = (int)v;
}

static void knob_set(const struct knob *k, const char *s)
{
	switch (k->type) {
	case KNOB_INT:
		knob_int(k, s);
		break;
	case KNOB_PROVIDER:
		knob_provider(k, s);
		break;
	case KNOB_PATH:
		knob_path(k, s);
		break;
	case KNOB_LOG:
		knob_log(k, s);
		break;
	case KNOB_SYSFS:
		knob_sysfs(k, s);
		break;
	case KNOB_PCI:
		knob_pci(k, s);
		break;
	case KNOB_DB_MODE:
		knob_db_mode(k, s);
		break;
	case KNOB_DB_MAP:
		knob_db_map(k, s);
		break;
	case KNOB_QUEUE:
		knob_queue(k, s);
		break;
	}
}

static void config_load(void)
{
	for (size_t i = 0; i < NUM_KNOBS; i++) {
		const char *s = getenv(knobs[i].name);

		knob_set(&knobs[i], knobs[i].def);
		if (s)
			knob_set(&knobs[i], s);
	}
}

const struct gnic_config *gnic_config(void)
{
	pthread_once(&cfg_once, config_load);
	return &cfg;
}
