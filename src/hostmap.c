/* SPDX-License-Identifier: MIT */
/*
 * Host memory mapped into the GPU: one process-wide table of page ranges
 * registered with cuMemHostRegister, each with a reference count.
 *
 * CUDA refuses to register a page twice, and on real mlx5 the doorbell
 * records of several QPs and CQs share a page, as do QPs on one UAR page. A
 * range registered by the application itself (CUDA says "already
 * registered") is borrowed: used, never unregistered by us. A range that
 * partly overlaps one of ours cannot be expressed to CUDA and fails.
 */
#include <stdlib.h>
#include <unistd.h>

#include "gnic_int.h"

struct hostmap {
	uintptr_t base;
	size_t len;
	int refs;
	bool borrowed; /* registered by someone else: never unregister */
};

static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hostmap *maps;
static int nmaps, maps_cap;

static void page_range(void *addr, size_t len, uintptr_t *base, size_t *size)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~(page - 1);
	uintptr_t end = ((uintptr_t)addr + len + page - 1) & ~(page - 1);

	*base = start;
	*size = end - start;
}

static struct hostmap *find_overlap(uintptr_t base, size_t len)
{
	for (int i = 0; i < nmaps; i++)
		if (maps[i].base < base + len && base < maps[i].base + maps[i].len)
			return &maps[i];
	return NULL;
}

static bool grow(void)
{
	struct hostmap *m;
	int cap = maps_cap ? 2 * maps_cap : 16;

	if (nmaps < maps_cap)
		return true;
	m = realloc(maps, (size_t)cap * sizeof(*m));
	if (!m)
		return false;
	maps = m;
	maps_cap = cap;
	return true;
}

static gnic_status_t add_new(uintptr_t base, size_t len, unsigned flags)
{
	bool borrowed = false;
	int r;

	if (!grow())
		return gnic_error(GNIC_ERR_NOMEM, "hostmap: out of memory");
	r = gnic_cuda_host_register((void *)base, len, flags);
	if (r == GNIC_CUDA_ERROR_ALREADY_REGISTERED) {
		gnic_info("hostmap: [%#lx, +%zu) is registered with CUDA already; using it",
		          (unsigned long)base, len);
		borrowed = true;
	} else if (r) {
		return GNIC_ERR_CUDA; /* text set by gnic_cuda_host_register */
	}
	maps[nmaps++] = (struct hostmap){.base = base, .len = len, .refs = 1, .borrowed = borrowed};
	return GNIC_OK;
}

gnic_status_t gnic_hostmap_add(void *addr, size_t len, unsigned flags)
{
	struct hostmap *m;
	gnic_status_t st = GNIC_OK;
	uintptr_t base;
	size_t size;

	page_range(addr, len, &base, &size);
	pthread_mutex_lock(&map_lock);
	m = find_overlap(base, size);
	if (!m)
		st = add_new(base, size, flags);
	else if (m->base <= base && base + size <= m->base + m->len)
		m->refs++;
	else
		st = gnic_error(GNIC_ERR_CUDA,
		                "hostmap: [%#lx, +%zu) partly overlaps registered [%#lx, +%zu)",
		                (unsigned long)base, size, (unsigned long)m->base, m->len);
	pthread_mutex_unlock(&map_lock);
	return st;
}

void gnic_hostmap_del(void *addr, size_t len)
{
	struct hostmap *m;
	uintptr_t base;
	size_t size;

	page_range(addr, len, &base, &size);
	pthread_mutex_lock(&map_lock);
	m = find_overlap(base, size);
	if (m && --m->refs == 0) {
		if (!m->borrowed)
			gnic_cuda_host_unregister((void *)m->base);
		*m = maps[--nmaps];
	}
	pthread_mutex_unlock(&map_lock);
}
