/* SPDX-License-Identifier: MIT */
/*
 * Memory regions: registration, the key table the engine checks every
 * access against, and the copies in and out of registered memory.
 *
 * A key is index << 8 | a random byte, with lkey == rkey. The random byte
 * makes a stale key of a deregistered MR fail even when its index is reused;
 * index 0 and 1 are never used, so no key is 0 or MLX5_INVALID_LKEY (0x100),
 * which ends a receive WQE's scatter list.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "emu.h"
#include "fabric.h"
#include "worker.h"

#define MR_REFS_WAIT_S 10

#define MR_FIRST_INDEX 2
#define MR_MAX_LENGTH  (1ull << 40) /* = max_mr_size in query_device */

/* Flags a registration may carry. Optional-range flags (relaxed ordering,
 * ...) are hints that libibverbs drops when a device ignores them; MW_BIND
 * only permits binding windows, which cannot be allocated here anyway. */
#define MR_ACCESS_KNOWN                                                                            \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ON_DEMAND |                    \
	 IBV_ACCESS_HUGETLB | IBV_ACCESS_OPTIONAL_RANGE)
#define MR_ACCESS_KEPT                                                                             \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)

static uint32_t next_index = MR_FIRST_INDEX; /* under nic.lock; rotates to delay reuse */

static uint8_t key_byte(void)
{
	uint8_t b;

	if (getrandom(&b, 1, GRND_NONBLOCK) != 1)
		b = (uint8_t)emu_now_ns();
	return b;
}

/* Under nic.lock. A free index >= MR_FIRST_INDEX, or 0 if the table is full. */
static uint32_t index_alloc(void)
{
	for (uint32_t n = 0; n < EMU_MAX_MR - MR_FIRST_INDEX; n++) {
		uint32_t idx = next_index;

		next_index = idx + 1 < EMU_MAX_MR ? idx + 1 : MR_FIRST_INDEX;
		if (!atomic_load_explicit(&emu_nic.mrs[idx], memory_order_relaxed))
			return idx;
	}
	return 0;
}

/* Verbs rules: 0, or EINVAL / EOPNOTSUPP. */
static int access_check(unsigned int access)
{
	if (access & IBV_ACCESS_ZERO_BASED)
		return EOPNOTSUPP; /* pass iova = 0 to ibv_reg_mr_iova instead */
	if (access & ~(unsigned int)MR_ACCESS_KNOWN)
		return EINVAL;
	/* the spec: remote write or atomic needs local write */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	return 0;
}

static int range_check(uint64_t addr, uint64_t length, uint64_t iova)
{
	if (length > MR_MAX_LENGTH || addr + length < addr || iova + length < iova)
		return EINVAL;
	return 0;
}

/* Publish mr under a fresh key; the engine sees it from here on. */
static int mr_publish(struct emu_mr *mr)
{
	uint32_t idx, key;

	emu_nic_lock();
	idx = index_alloc();
	if (!idx) {
		emu_nic_unlock();
		return ENOMEM;
	}
	key = idx << 8 | key_byte();
	mr->ibmr.handle = idx;
	mr->ibmr.lkey = mr->ibmr.rkey = key;
	mr->pd->refcnt++;
	atomic_store_explicit(&emu_nic.mrs[idx], mr, memory_order_release);
	emu_nic_unlock();
	return 0;
}

static struct ibv_mr *mr_create(struct ibv_pd *ibpd, void *addr, uint64_t length, uint64_t iova,
                                unsigned int access, int mem_type, struct emu_cuda_ctx *cu)
{
	struct emu_mr *mr = calloc(1, sizeof(*mr));
	int ret;

	if (!mr) {
		emu_cuda_put(cu);
		errno = ENOMEM;
		return NULL;
	}
	mr->ibmr.context = ibpd->context;
	mr->ibmr.pd = ibpd;
	mr->ibmr.addr = addr;
	mr->ibmr.length = length;
	mr->pd = to_epd(ibpd);
	mr->iova = iova;
	mr->length = length;
	mr->access = (int)(access & MR_ACCESS_KEPT);
	mr->mem_type = mem_type;
	if (mem_type == EMU_MEM_CUDA) {
		mr->dev_base = (uint64_t)(uintptr_t)addr;
		mr->cu = *cu;
	} else {
		mr->host_base = addr;
		/* CUDA copies to and from it need no bounce buffer */
		mr->pinned = length && emu_cuda_host_pinned(addr, length);
	}
	ret = mr_publish(mr);
	if (ret) {
		emu_cuda_put(cu);
		free(mr);
		errno = ret;
		return NULL;
	}
	/* asked: with the optional flags (IBV_ACCESS_RELAXED_ORDERING, ...), which
	 * a ConnectX takes as hints and the emulator accepts and ignores */
	emu_dbg("MR key 0x%x: %s va %p iova 0x%llx len %llu access 0x%x (asked 0x%x)",
	        mr->ibmr.lkey, mem_type == EMU_MEM_CUDA ? "CUDA" : "host", addr,
	        (unsigned long long)iova, (unsigned long long)length, mr->access, access);
	return &mr->ibmr;
}

static bool pd_valid(struct ibv_pd *pd)
{
	return pd && gemu_is_emu_context(pd->context);
}

EMU_EXPORT struct ibv_mr *gemu_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
                                            uint64_t iova, unsigned int access)
{
	struct emu_cuda_ctx cu = {NULL, -1};
	int ret, dev;

	/* zero-length MRs are allowed: zero-byte operations still carry a key */
	ret = !pd_valid(pd) || (!addr && length) ? EINVAL : access_check(access);
	if (!ret)
		ret = range_check((uintptr_t)addr, length, iova);
	if (ret) {
		errno = ret;
		return NULL;
	}
	dev = length ? emu_cuda_lookup((uintptr_t)addr, length, &cu) : 0;
	if (dev < 0) {
		errno = -dev;
		return NULL;
	}
	return mr_create(pd, addr, length, iova, access, dev ? EMU_MEM_CUDA : EMU_MEM_HOST, &cu);
}

/* The emulator cannot import a dmabuf; but GPU memory exported as a dmabuf is
 * registered with iova = the GPU virtual address, which we can copy through. */
EMU_EXPORT struct ibv_mr *gemu_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
                                             uint64_t iova, int fd, int access)
{
	struct emu_cuda_ctx cu = {NULL, -1};
	int ret, dev;

	(void)offset;
	ret = !pd_valid(pd) || fd < 0 || !length ? EINVAL : access_check((unsigned int)access);
	if (!ret)
		ret = range_check(iova, length, iova);
	if (ret) {
		errno = ret;
		return NULL;
	}
	dev = emu_cuda_lookup(iova, length, &cu);
	if (dev <= 0) {
		if (!dev)
			emu_warn("reg_dmabuf_mr: iova 0x%llx is not CUDA device memory; only GPU "
			         "dmabufs registered at their GPU address are supported",
			         (unsigned long long)iova);
		errno = dev ? -dev : EOPNOTSUPP;
		return NULL;
	}
	return mr_create(pd, (void *)(uintptr_t)iova, length, iova, (unsigned int)access,
	                 EMU_MEM_CUDA, &cu);
}

/* Wait (bounded) until no inbox item reads mr's memory (worker.c) and no
 * GPU copy uses it (dma.c). */
static bool inbox_refs_gone(struct emu_mr *mr)
{
	uint64_t end = emu_now_ns() + (uint64_t)MR_REFS_WAIT_S * 1000000000u;

	while (atomic_load(&mr->inbox_refs) || atomic_load(&mr->dma_refs) ||
	       atomic_load(&mr->wire_refs)) {
		if (emu_now_ns() > end)
			return false;
		usleep(50);
	}
	return true;
}

EMU_EXPORT int gemu_dereg_mr(struct ibv_mr *ibmr)
{
	struct emu_mr *mr;
	uint32_t idx;

	if (!ibmr)
		return EINVAL;
	mr = to_emr(ibmr);
	idx = ibmr->lkey >> 8;
	emu_nic_lock();
	if (emu_mr_lookup(ibmr->lkey) != mr) {
		emu_nic_unlock();
		return EINVAL;
	}
	atomic_store_explicit(&emu_nic.mrs[idx], NULL, memory_order_release);
	mr->pd->refcnt--;
	emu_nic_unlock();
	/* a worker uses an MR it looked up only within one pass: once each has
	 * ended the pass it is in, none holds mr, except inbox items that read
	 * its memory, which the next pass of their worker finishes */
	emu_workers_sync();
	emu_fabric_detach_mr(mr);
	if (!inbox_refs_gone(mr)) {
		emu_err("dereg_mr: key 0x%x: a message still reads its memory after %d s; the "
		        "MR's bookkeeping is leaked",
		        ibmr->lkey, MR_REFS_WAIT_S);
		return 0;
	}
	if (mr->mem_type == EMU_MEM_CUDA)
		emu_cuda_put(&mr->cu);
	free(mr);
	return 0;
}

/*
 * The engine's check of one access through key. Returns 0 and *out when key
 * names a live MR of pd, [addr, addr + len) lies inside the MR's iova range
 * and the MR grants every bit of need_access (0 for a local read);
 * EMU_MR_BAD_KEY (-1) when no such MR exists in pd, and EMU_MR_BAD_RANGE (-2)
 * for a bounds or access violation. Callers map these to syndromes
 * (LOCAL_PROT locally, REMOTE_ACCESS for a remote request).
 */
int emu_mr_check(struct emu_pd *pd, uint32_t key, uint64_t addr, uint64_t len, int need_access,
                 struct emu_mr **out)
{
	struct emu_mr *mr = emu_mr_lookup(key);

	if (!mr || mr->pd != pd)
		return EMU_MR_BAD_KEY;
	if (addr < mr->iova || len > mr->length || addr - mr->iova > mr->length - len)
		return EMU_MR_BAD_RANGE;
	if ((mr->access & need_access) != need_access)
		return EMU_MR_BAD_RANGE;
	if (out)
		*out = mr;
	return 0;
}

/* 0 or -EFAULT when [addr, addr + len) leaves the MR (callers checked it
 * already; this keeps a bug from turning into a stray memcpy). */
static int mem_range(const struct emu_mr *mr, uint64_t addr, uint64_t len, uint64_t *off)
{
	if (addr < mr->iova || len > mr->length || addr - mr->iova > mr->length - len)
		return -EFAULT;
	*off = addr - mr->iova;
	return 0;
}

int emu_mem_read(const struct emu_mr *mr, uint64_t addr, void *dst, uint64_t len)
{
	uint64_t off;

	if (mem_range(mr, addr, len, &off))
		return -EFAULT;
	if (mr->mem_type == EMU_MEM_CUDA)
		return emu_cuda_read(mr->cu.ctx, mr->dev_base + off, dst, len);
	if (len)
		memmove(dst, (const char *)mr->host_base + off, len);
	return 0;
}

/* Like a NIC's in-order DMA, the last byte lands last: programs (perftest,
 * gnic's own wait_signal users) poll a message's final byte and then read the
 * rest. memcpy gives no order (large copies write the head last), so copy all
 * but the last byte, then publish it with a release store. Source and target
 * may overlap (a WRITE or READ within one MR): a NIC reads a message before it
 * lands it, so the target gets the source's bytes as they were (memmove's
 * result), the last one read before anything is written. */
void emu_mem_place(void *dst, const void *src, size_t len)
{
	uint8_t last;

	if (!len)
		return;
	last = ((const uint8_t *)src)[len - 1];
	if (dst != src) /* equal: the fabric received the data in place */
		memmove(dst, src, len - 1);
	__atomic_store_n((uint8_t *)dst + len - 1, last, __ATOMIC_RELEASE);
}

int emu_mem_write(const struct emu_mr *mr, uint64_t addr, const void *src, uint64_t len)
{
	uint64_t off;

	if (mem_range(mr, addr, len, &off))
		return -EFAULT;
	if (mr->mem_type == EMU_MEM_CUDA)
		return emu_cuda_write(mr->cu.ctx, mr->dev_base + off, src, len);
	emu_mem_place((uint8_t *)mr->host_base + off, src, len);
	return 0;
}

void *emu_mem_host_ptr(const struct emu_mr *mr, uint64_t addr)
{
	uint64_t off;

	if (mr->mem_type != EMU_MEM_HOST || mem_range(mr, addr, 0, &off))
		return NULL;
	return (char *)mr->host_base + off;
}
