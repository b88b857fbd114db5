/* SPDX-License-Identifier: MIT */
/*
 * A context's doorbell registers (UARs and their BlueFlame registers), given
 * to QPs as rdma-core's mlx5 provider gives them (providers/mlx5/mlx5.c,
 * verbs.c mlx5_get_qp_uar) on a kernel with dynamic UARs:
 *
 *   - the context may use MLX5_TOTAL_UUARS registers (default 16, rounded up
 *     to a multiple of 2, at most 512), MLX5_NUM_LOW_LAT_UUARS of them
 *     (default 4, at least total - 12, at most total - 1) dedicated to one QP
 *     each, the rest shared; a bad value fails ibv_open_device (EINVAL,
 *     ENOMEM), as in rdma-core;
 *   - a UAR page holds two registers, at 0x800 and 0xa00 (bf_reg_size 512,
 *     two 256-byte halves each); pages are made as QPs need them;
 *   - a new QP takes a free dedicated register (a destroyed QP's goes back
 *     at the end of the list), else makes a page of dedicated ones while
 *     fewer than the low-latency number exist, else makes a page of shared
 *     ones while fewer than the rest exist, and then takes the shared one
 *     with the fewest QPs (the first made among equals);
 *   - a shared register has a lock, which the poster holds for the write and
 *     the half toggle; the toggle is the register's, not the QP's;
 *   - MLX5_SHUT_UP_BF (not "0"): every QP gets the one non-BlueFlame
 *     doorbell register of the context (bf.size 0, 8-byte doorbells only);
 *   - a thread domain (mlx5_alloc_td / mlx5_attach_dedicated_uar) takes a
 *     register of a third kind, from pages of their own: the first one on
 *     the free list, else the first of a new page, whose second goes on the
 *     list (a freed one goes back at its end). No QP outside the domain
 *     gets it, and it has no lock: the domain's QPs are the user's to keep
 *     to one thread. MLX5_SHUT_UP_BF does not change it (bf.size 256), but
 *     posts through it write 8-byte doorbells only, as rdma-core's do;
 *   - every page is a dynamic UAR the kernel allocates from the device:
 *     GNIC_EMU_UAR_PAGES of them per device; past that, making a page
 *     fails (ENOMEM, the kernel's error when the firmware refuses a UAR),
 *     and with it the QP or thread domain that needed it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

#define UAR_REGS_PER_PAGE 2   /* MLX5_NUM_NON_FP_BFREGS_PER_UAR */
#define UAR_MAX_REGS      512 /* MLX5_MAX_BFREGS */
#define UAR_DEF_TOTAL     16  /* MLX5_DEF_TOT_UUARS */
#define UAR_DEF_LOW_LAT   4
#define UAR_MED_THRESHOLD 12 /* MLX5_MED_BFREGS_TSHOLD */
#define UAR_BF_REG_SIZE   (2 * GNIC_MLX5_BF_SIZE)

/* A page of two thread-domain registers. */
struct td_page {
	void *page;
	struct emu_bfreg reg[UAR_REGS_PER_PAGE];
	struct td_page *next;
};

struct emu_uars {
	pthread_mutex_t lock;
	struct emu_device *dev; /* whose pages it takes */
	int total, low_lat;
	bool shut_up_bf;
	int n_dedicated, n_shared; /* registers made of each kind */
	int n_regs;                /* of bfregs[], in the order made */
	struct emu_bfreg *bfregs[UAR_MAX_REGS];
	int free_ded[UAR_MAX_REGS]; /* free dedicated ones: a FIFO of indexes */
	int free_head, free_len;
	void *pages[UAR_MAX_REGS / UAR_REGS_PER_PAGE + 1];
	int n_pages;
	int n_dyn;                 /* pages taken from the device (GNIC_EMU_UAR_PAGES) */
	struct td_page *td_pages;  /* thread domains' pages, newest first */
	struct emu_bfreg *td_free; /* their free registers, oldest first */
	struct emu_bfreg **td_free_end;
	struct emu_bfreg nc; /* MLX5_SHUT_UP_BF's register */
};

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);

	return v ? atoi(v) : def;
}

/* get_total_uuars / get_num_low_lat_uuars / get_uar_info of rdma-core. */
static int uar_limits(struct emu_uars *u)
{
	u->total = env_int("MLX5_TOTAL_UUARS", UAR_DEF_TOTAL);
	if (u->total < 1)
		return EINVAL;
	if (u->total < UAR_REGS_PER_PAGE)
		u->total = UAR_REGS_PER_PAGE; /* a 4 KiB page's worth */
	u->total = (u->total + UAR_REGS_PER_PAGE - 1) / UAR_REGS_PER_PAGE * UAR_REGS_PER_PAGE;
	if (u->total > UAR_MAX_REGS)
		return ENOMEM;
	u->low_lat = env_int("MLX5_NUM_LOW_LAT_UUARS", UAR_DEF_LOW_LAT);
	if (u->low_lat < 0)
		return EINVAL;
	if (u->low_lat < u->total - UAR_MED_THRESHOLD)
		u->low_lat = u->total - UAR_MED_THRESHOLD;
	if (u->low_lat > u->total - 1)
		return ENOMEM;
	return 0;
}

static bool env_on(const char *name)
{
	const char *v = getenv(name);

	return v && strcmp(v, "0") != 0;
}

static void bfreg_init(struct emu_bfreg *b, struct emu_uars *u, void *page, int k, bool shared)
{
	b->owner = u;
	b->reg = (volatile uint64_t *)((uint8_t *)page + GNIC_MLX5_BF_OFFSET + k * UAR_BF_REG_SIZE);
	b->buf_size = GNIC_MLX5_BF_SIZE;
	b->shared = shared;
	b->index = u->n_regs;
	b->no_copy = u->shut_up_bf;
	pthread_spin_init(&b->lock, PTHREAD_PROCESS_PRIVATE);
}

/* A dynamic UAR page of the device (NULL: none left, or no memory); the
 * caller keeps it. Under u->lock. */
static void *dyn_page(struct emu_uars *u)
{
	void *page;

	if (atomic_fetch_add(&u->dev->uar_pages, 1) >= emu_cfg.uar_pages) {
		atomic_fetch_sub(&u->dev->uar_pages, 1);
		emu_info("%s: no UAR page left (all GNIC_EMU_UAR_PAGES=%d in use): ENOMEM",
		         u->dev->ibdev.name, emu_cfg.uar_pages);
		return NULL;
	}
	page = emu_alloc_pages(EMU_PAGE);
	if (!page) {
		atomic_fetch_sub(&u->dev->uar_pages, 1);
		return NULL;
	}
	u->n_dyn++;
	return page;
}

int emu_uars_open(struct emu_context *ctx)
{
	struct emu_uars *u = calloc(1, sizeof(*u));
	int err;

	if (!u)
		return ENOMEM;
	err = uar_limits(u);
	if (err) {
		emu_info("ibv_open_device: MLX5_TOTAL_UUARS / MLX5_NUM_LOW_LAT_UUARS: %u "
		         "registers, %d of them dedicated: not possible (%s)",
		         u->total, u->low_lat, err == EINVAL ? "EINVAL" : "ENOMEM");
		free(u);
		return err;
	}
	u->shut_up_bf = env_on("MLX5_SHUT_UP_BF");
	u->dev = ctx->dev;
	u->td_free_end = &u->td_free;
	pthread_mutex_init(&u->lock, NULL);
	if (u->shut_up_bf) {
		void *page = emu_alloc_pages(EMU_PAGE);

		if (!page) {
			free(u);
			return ENOMEM;
		}
		u->pages[u->n_pages++] = page;
		bfreg_init(&u->nc, u, page, 0, false);
		u->nc.buf_size = 0;
	}
	ctx->uars = u;
	return 0;
}

/* A page of two registers of one kind, the dedicated ones put on the free
 * list; under u->lock. */
static int add_page(struct emu_uars *u, bool shared)
{
	void *page;

	if (u->n_regs + UAR_REGS_PER_PAGE > UAR_MAX_REGS)
		return ENOMEM;
	page = dyn_page(u);
	if (!page)
		return ENOMEM;
	u->pages[u->n_pages++] = page;
	for (int k = 0; k < UAR_REGS_PER_PAGE; k++) {
		struct emu_bfreg *b = calloc(1, sizeof(*b));

		if (!b)
			return ENOMEM; /* the page stays, with the registers made so far */
		bfreg_init(b, u, page, k, shared);
		u->bfregs[u->n_regs++] = b;
		if (shared) {
			u->n_shared++;
		} else {
			u->n_dedicated++;
			u->free_ded[(u->free_head + u->free_len++) % UAR_MAX_REGS] = b->index;
		}
	}
	return 0;
}

static struct emu_bfreg *least_used_shared(struct emu_uars *u)
{
	struct emu_bfreg *best = NULL;

	for (int i = 0; i < u->n_regs; i++) {
		struct emu_bfreg *b = u->bfregs[i];

		if (b->shared && (!best || b->count < best->count))
			best = b;
	}
	return best;
}

static struct emu_bfreg *take(struct emu_uars *u)
{
	for (;;) {
		struct emu_bfreg *b;

		if (u->free_len) {
			b = u->bfregs[u->free_ded[u->free_head]];
			u->free_head = (u->free_head + 1) % UAR_MAX_REGS;
			u->free_len--;
			b->count = 1;
			return b;
		}
		if (u->n_dedicated < u->low_lat) {
			if (add_page(u, false))
				return NULL;
			continue;
		}
		if (u->n_shared < u->total - u->low_lat && add_page(u, true))
			return NULL;
		b = least_used_shared(u);
		if (b)
			b->count++;
		return b;
	}
}

struct emu_bfreg *emu_uar_get(struct emu_context *ctx)
{
	struct emu_uars *u = ctx->uars;
	struct emu_bfreg *b;

	if (u->shut_up_bf) {
		pthread_mutex_lock(&u->lock);
		u->nc.count++;
		pthread_mutex_unlock(&u->lock);
		return &u->nc;
	}
	pthread_mutex_lock(&u->lock);
	b = take(u);
	pthread_mutex_unlock(&u->lock);
	return b;
}

void emu_uar_put(struct emu_bfreg *b)
{
	struct emu_uars *u;

	if (!b || b->td) /* a thread domain's stays with it */
		return;
	u = b->owner;
	pthread_mutex_lock(&u->lock);
	b->count--;
	if (b != &u->nc && !b->shared) /* back at the end of the free list */
		u->free_ded[(u->free_head + u->free_len++) % UAR_MAX_REGS] = b->index;
	pthread_mutex_unlock(&u->lock);
}

/* ---- thread domains' registers ---------------------------------------- */

static void td_free_push(struct emu_uars *u, struct emu_bfreg *b)
{
	b->next_free = NULL;
	*u->td_free_end = b;
	u->td_free_end = &b->next_free;
}

static struct emu_bfreg *td_free_pop(struct emu_uars *u)
{
	struct emu_bfreg *b = u->td_free;

	if (b) {
		u->td_free = b->next_free;
		if (!u->td_free)
			u->td_free_end = &u->td_free;
	}
	return b;
}

/* A new page's registers go on the free list, the first one first. */
static int add_td_page(struct emu_uars *u)
{
	struct td_page *p = calloc(1, sizeof(*p));

	if (!p || !(p->page = dyn_page(u))) {
		free(p);
		return ENOMEM;
	}
	for (int k = 0; k < UAR_REGS_PER_PAGE; k++) {
		bfreg_init(&p->reg[k], u, p->page, k, false);
		p->reg[k].td = true;
		td_free_push(u, &p->reg[k]);
	}
	p->next = u->td_pages;
	u->td_pages = p;
	return 0;
}

struct emu_bfreg *emu_uar_td_attach(struct emu_context *ctx)
{
	struct emu_uars *u = ctx->uars;
	struct emu_bfreg *b;

	pthread_mutex_lock(&u->lock);
	b = td_free_pop(u);
	if (!b && !add_td_page(u))
		b = td_free_pop(u);
	if (b)
		b->count = 1;
	pthread_mutex_unlock(&u->lock);
	return b;
}

void emu_uar_td_detach(struct emu_bfreg *b)
{
	struct emu_uars *u = b->owner;

	pthread_mutex_lock(&u->lock);
	b->count = 0;
	td_free_push(u, b);
	pthread_mutex_unlock(&u->lock);
}

/* With the context's last QP gone; pages a QP still uses (the program did
 * not destroy it) stay, as the engine may still read them. */
void emu_uars_close(struct emu_context *ctx)
{
	struct emu_uars *u = ctx->uars;
	bool busy;

	if (!u)
		return;
	busy = u->nc.count > 0;
	for (int i = 0; i < u->n_regs; i++)
		busy |= u->bfregs[i]->count > 0;
	for (struct td_page *p = u->td_pages; p; p = p->next)
		for (int k = 0; k < UAR_REGS_PER_PAGE; k++)
			busy |= p->reg[k].count > 0;
	if (busy) {
		emu_warn("ibv_close_device: QPs or thread domains still use its doorbell pages; "
		         "they are kept");
		return;
	}
	for (int i = 0; i < u->n_regs; i++) {
		pthread_spin_destroy(&u->bfregs[i]->lock);
		free(u->bfregs[i]);
	}
	for (int i = 0; i < u->n_pages; i++)
		free(u->pages[i]);
	for (struct td_page *p = u->td_pages, *next; p; p = next) {
		next = p->next;
		for (int k = 0; k < UAR_REGS_PER_PAGE; k++)
			pthread_spin_destroy(&p->reg[k].lock);
		free(p->page);
		free(p);
	}
	atomic_fetch_sub(&u->dev->uar_pages, u->n_dyn);
	if (u->shut_up_bf)
		pthread_spin_destroy(&u->nc.lock);
	pthread_mutex_destroy(&u->lock);
	free(u);
	ctx->uars = NULL;
}

void emu_bfreg_lock(struct emu_bfreg *b)
{
	if (b->shared)
		pthread_spin_lock(&b->lock);
}

void emu_bfreg_unlock(struct emu_bfreg *b)
{
	if (b->shared)
		pthread_spin_unlock(&b->lock);
}
