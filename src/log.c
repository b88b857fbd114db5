/* SPDX-License-Identifier: MIT */
/*
 * Logging to stderr, filtered by GNIC_LOG. Each message leaves in one
 * write(2) so lines of different threads never interleave mid-line.
 */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "gnic_int.h"

#define LOG_LINE_MAX 1024

static const char *const level_words[] = {
    [GNIC_LOG_ERR] = "error",   [GNIC_LOG_WARN] = "warn", [GNIC_LOG_INFO] = "info",
    [GNIC_LOG_DEBUG] = "debug", [GNIC_LOG_NOTE] = "note",
};

void gnic_log(int level, const char *fmt, ...)
{
	char line[LOG_LINE_MAX];
	va_list ap;
	int n, m;

	if (level < GNIC_LOG_ERR || level > GNIC_LOG_NOTE)
		level = GNIC_LOG_ERR;
	if ((level == GNIC_LOG_NOTE ? GNIC_LOG_WARN : level) > gnic_config()->log_level)
		return;
	n = snprintf(line, sizeof(line), "gnic[%d]: %s: ", (int)getpid(), level_words[level]);
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2; /* truncated: still end the line */
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return; /* nowhere left to report it */
}
