/* SPDX-License-Identifier: MIT */
/*
 * Logging to stderr and the names/meanings of mlx5 error syndromes.
 *
 * Each message leaves in one write(2), so lines from the engine thread and
 * from application threads never interleave mid-line.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "emu.h"

#define LOG_LINE_MAX 1024

static const char *const level_words[] = {
    [EMU_LOG_ERR] = "error",
    [EMU_LOG_WARN] = "warn",
    [EMU_LOG_INFO] = "info",
    [EMU_LOG_DEBUG] = "debug",
};

void emu_log(int level, const char *fmt, ...)
{
	char line[LOG_LINE_MAX];
	va_list ap;
	int n, m;

	if (level > emu_cfg.log_level)
		return;
	if (level < EMU_LOG_ERR)
		level = EMU_LOG_ERR;
	if (level > EMU_LOG_DEBUG)
		level = EMU_LOG_DEBUG;
	n = snprintf(line, sizeof(line), "gnic-emu[%d]: %s: ", (int)getpid(), level_words[level]);
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2; /* truncated: still end the line */
	if (line[n - 1] != '\n')
		line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return; /* nowhere left to report it */
}

struct syndrome_info {
	uint8_t syndrome;
	const char *name;
	enum ibv_wc_status status;
};

static const struct syndrome_info syndromes[] = {
    {GNIC_MLX5_SYND_OK, "OK", IBV_WC_GENERAL_ERR},
    {GNIC_MLX5_SYND_LOCAL_LENGTH, "LOCAL_LENGTH_ERR", IBV_WC_LOC_LEN_ERR},
    {GNIC_MLX5_SYND_LOCAL_QP_OP, "LOCAL_QP_OP_ERR", IBV_WC_LOC_QP_OP_ERR},
    {GNIC_MLX5_SYND_LOCAL_PROT, "LOCAL_PROT_ERR", IBV_WC_LOC_PROT_ERR},
    {GNIC_MLX5_SYND_WR_FLUSH, "WR_FLUSH_ERR", IBV_WC_WR_FLUSH_ERR},
    {GNIC_MLX5_SYND_MW_BIND, "MW_BIND_ERR", IBV_WC_MW_BIND_ERR},
    {GNIC_MLX5_SYND_BAD_RESP, "BAD_RESP_ERR", IBV_WC_BAD_RESP_ERR},
    {GNIC_MLX5_SYND_LOCAL_ACCESS, "LOCAL_ACCESS_ERR", IBV_WC_LOC_ACCESS_ERR},
    {GNIC_MLX5_SYND_REMOTE_INVAL_REQ, "REMOTE_INVAL_REQ_ERR", IBV_WC_REM_INV_REQ_ERR},
    {GNIC_MLX5_SYND_REMOTE_ACCESS, "REMOTE_ACCESS_ERR", IBV_WC_REM_ACCESS_ERR},
    {GNIC_MLX5_SYND_REMOTE_OP, "REMOTE_OP_ERR", IBV_WC_REM_OP_ERR},
    {GNIC_MLX5_SYND_TRANSPORT_RETRY_EXC, "TRANSPORT_RETRY_EXC_ERR", IBV_WC_RETRY_EXC_ERR},
    {GNIC_MLX5_SYND_RNR_RETRY_EXC, "RNR_RETRY_EXC_ERR", IBV_WC_RNR_RETRY_EXC_ERR},
    {GNIC_MLX5_SYND_REMOTE_ABORTED, "REMOTE_ABORTED_ERR", IBV_WC_REM_ABORT_ERR},
};

static const struct syndrome_info *syndrome_find(uint8_t syndrome)
{
	for (size_t i = 0; i < sizeof(syndromes) / sizeof(syndromes[0]); i++)
		if (syndromes[i].syndrome == syndrome)
			return &syndromes[i];
	return NULL;
}

const char *emu_syndrome_str(uint8_t syndrome)
{
	static EMU_TLS char unknown[32];
	const struct syndrome_info *s = syndrome_find(syndrome);

	if (s)
		return s->name;
	snprintf(unknown, sizeof(unknown), "unknown syndrome 0x%02x", syndrome);
	return unknown;
}

/* Only meaningful for error CQEs: anything unknown (and "OK", which no error
 * CQE carries) is a general error, as a real NIC's driver reports it. */
enum ibv_wc_status emu_syndrome_to_status(uint8_t syndrome)
{
	const struct syndrome_info *s = syndrome_find(syndrome);

	return s ? s->status : IBV_WC_GENERAL_ERR;
}

/* One lock for every call site: limits are hit only on bad input, and any
 * engine worker may hit the same one. */
static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER;

bool emu_log_allow(struct emu_log_limit *l, unsigned int *quiet)
{
	uint64_t now = emu_now_ns();
	bool ok = false;

	pthread_mutex_lock(&limit_lock);
	if (now >= l->window_end) {
		l->window_end = now + EMU_LOG_PERIOD_NS;
		l->lines = 0;
	}
	if (l->lines >= EMU_LOG_BURST) {
		l->quiet++;
	} else {
		l->lines++;
		*quiet = l->quiet;
		l->quiet = 0;
		ok = true;
	}
	pthread_mutex_unlock(&limit_lock);
	return ok;
}
