/* SPDX-License-Identifier: MIT */
/*
 * Status codes and the per-thread text of the last failure.
 *
 * Every failing call writes what failed, with errno or CUDA error names, into
 * a thread-local buffer through gnic_error(); successful calls leave it alone,
 * so the text always describes the last *failure* of this thread.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gnic_int.h"

#define LAST_ERROR_MAX 512

static __thread char last_error[LAST_ERROR_MAX];

static const char *const status_text[] = {
    [0] = "GNIC_OK: success",
    [1] = "GNIC_ERR_INVALID: invalid argument",
    [2] = "GNIC_ERR_NOMEM: out of memory",
    [3] = "GNIC_ERR_NO_DEVICE: no such RDMA device or GPU",
    [4] = "GNIC_ERR_NOT_SUPPORTED: not supported",
    [5] = "GNIC_ERR_SYSTEM: a system or verbs call failed",
    [6] = "GNIC_ERR_CUDA: a CUDA driver call failed",
    [7] = "GNIC_ERR_TIMEOUT: a bounded wait ran out",
    [8] = "GNIC_ERR_PROTOCOL: malformed or incompatible message",
    [9] = "GNIC_ERR_STATE: object in the wrong state for this call",
    [10] = "GNIC_ERR_QP: the QP failed (see gnic_qp_error)",
};

GNIC_API const char *gnic_strerror(gnic_status_t status)
{
	int i = -(int)status;

	if (i < 0 || i >= (int)(sizeof(status_text) / sizeof(status_text[0])))
		return "GNIC_ERR_UNKNOWN: not a gnic status";
	return status_text[i];
}

GNIC_API const char *gnic_last_error(void)
{
	return last_error;
}

/* Formats into a local buffer first: callers may pass gnic_last_error()
 * itself as an argument, to wrap the cause in more context. */
gnic_status_t gnic_error(gnic_status_t status, const char *fmt, ...)
{
	char text[LAST_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	memcpy(last_error, text, sizeof(text));
	gnic_dbg("error %d: %s", (int)status, last_error);
	return status;
}
