/* SPDX-License-Identifier: MIT */
/* Small helpers shared by several objects. */
#include <stdio.h>
#include <time.h>

#include "gnic_int.h"

uint64_t gnic_time_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Smallest power of two >= v (1 for 0); v <= 2^31. */
uint32_t gnic_pow2_ceil(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* Little-endian wire fields (blob, bootstrap), whatever the host order. */
void gnic_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

void gnic_put_le32(uint8_t *p, uint32_t v)
{
	gnic_put_le16(p, (uint16_t)v);
	gnic_put_le16(p + 2, (uint16_t)(v >> 16));
}

void gnic_put_le64(uint8_t *p, uint64_t v)
{
	gnic_put_le32(p, (uint32_t)v);
	gnic_put_le32(p + 4, (uint32_t)(v >> 32));
}

uint16_t gnic_get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

uint32_t gnic_get_le32(const uint8_t *p)
{
	return gnic_get_le16(p) | (uint32_t)gnic_get_le16(p + 2) << 16;
}

uint64_t gnic_get_le64(const uint8_t *p)
{
	return gnic_get_le32(p) | (uint64_t)gnic_get_le32(p + 4) << 32;
}

/* A PCI address "[dddd:]bb:dd.f" (any case) as sysfs names it. */
bool gnic_pci_norm(const char *in, char out[GNIC_PCI_LEN])
{
	unsigned dom = 0, bus, dev, fn;
	char tail;

	if (sscanf(in, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4 &&
	    (dom = 0, sscanf(in, "%x:%x.%x%c", &bus, &dev, &fn, &tail) != 3))
		return false;
	if (dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7)
		return false;
	snprintf(out, GNIC_PCI_LEN, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return true;
}

void gnic_poll_backoff(uint64_t *sleep_ns)
{
	struct timespec ts = {.tv_sec = 0};

	*sleep_ns = *sleep_ns ? 2 * *sleep_ns : 1000;
	if (*sleep_ns > 100000)
		*sleep_ns = 100000;
	ts.tv_nsec = (long)*sleep_ns;
	nanosleep(&ts, NULL);
}
