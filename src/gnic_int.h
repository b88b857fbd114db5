/* SPDX-License-Identifier: MIT */
/*
 * libgnic internals: the objects behind the handles of gnic.h and the
 * interfaces between the files of src/.
 *
 *   status.c  error texts (thread-local), gnic_strerror
 *   log.c     stderr logging, GNIC_LOG level
 *   config.c  every GNIC_* environment knob, read once
 *   verbs.c   the verbs call table: rdma-core or gnic-emu, by dlopen
 *   cuda.c    the CUDA driver API, by dlopen, only for GPU contexts
 *   hostmap.c host memory registered with CUDA (refcounted by page range)
 *   gid.c     which GID table entry a context's QPs send from
 *   ctx.c mr.c qp.c qp_attr.c qp_dev.c qp_conn.c qp_error.c blob.c
 *   progress.c boot.c   one object each
 *   proxy.c   the CPU proxy thread of GNIC_DB_PROXY QPs
 *
 * libgnic links neither rdma-core nor CUDA: verbs.h and mlx5dv.h provide
 * types only, and every call goes through struct gnic_verbs / cuda.c (or,
 * for thread and parent domains, verbs.h's inline calls through the
 * context's own operation table: verbs.c).
 */
#ifndef GNIC_INT_H
#define GNIC_INT_H

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gnic/gnic.h"
#include "gnic/gnic_dev_proxy.h"

#define GNIC_API       __attribute__((visibility("default")))
#define GNIC_PAGE      4096u
#define GNIC_PORT      1
#define GNIC_MAX_QP_WR 32768u /* 16-bit WQE counters: sq/rq_wqe_cnt <= 32768 */

/* ---- status.c ------------------------------------------------------------ */
/* Sets this thread's last-error text and returns status, so callers can
 * write `return gnic_error(GNIC_ERR_INVALID, "...")`. */
gnic_status_t gnic_error(gnic_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- log.c --------------------------------------------------------------- */
/* GNIC_LOG_NOTE: shown from level WARN on, as "note": facts a user should
 * see by default that are not problems (which NIC is used). */
enum { GNIC_LOG_ERR, GNIC_LOG_WARN, GNIC_LOG_INFO, GNIC_LOG_DEBUG, GNIC_LOG_NOTE };
void gnic_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define gnic_warn(...) gnic_log(GNIC_LOG_WARN, __VA_ARGS__)
#define gnic_note(...) gnic_log(GNIC_LOG_NOTE, __VA_ARGS__)
#define gnic_info(...) gnic_log(GNIC_LOG_INFO, __VA_ARGS__)
#define gnic_dbg(...)  gnic_log(GNIC_LOG_DEBUG, __VA_ARGS__)

/* ---- config.c ------------------------------------------------------------ */
struct gnic_config {
	int provider;      /* GNIC_PROVIDER: enum gnic_provider, AUTO if unset */
	char emu_lib[256]; /* GNIC_EMU_LIB: "" = search next to libgnic.so */
	int log_level;     /* GNIC_LOG: 0 error .. 3 debug */
	char near_pci[16]; /* GNIC_NEAR_PCI, normalised; "" = the context's GPU */
	char sysfs[256];   /* GNIC_SYSFS: where sysfs is mounted */
	int db_mode;       /* GNIC_DB_MODE: enum gnic_db_mode that AUTO QPs take; AUTO */
	bool db_map;       /* GNIC_DB_MAP: false = never map the doorbell register for devices */
	int gid_index;     /* GNIC_GID_INDEX: -1 = auto */
	int traffic_class; /* GNIC_TRAFFIC_CLASS */
	int sl;            /* GNIC_SL */
	int queue;         /* GNIC_QUEUE: enum gnic_queue that AUTO QPs take; AUTO */
	char error[512];   /* a knob that must not be ignored is malformed */
};
const struct gnic_config *gnic_config(void); /* loaded on first use */

/* ---- topo.c: PCIe distances, read in sysfs ------------------------------ */
#define GNIC_PCI_LEN 16 /* "dddd:bb:dd.f" and its NUL */
/* Hops from a and b (resolved sysfs device paths) to their closest common
 * ancestor in the PCI tree. */
int gnic_topo_distance(const char *a, const char *b);
/* The distance between the RDMA device at ibdev_path (/sys/class/infiniband/X)
 * and PCI device pci (normalised), or -1 if either is not in sysfs. */
int gnic_topo_nic_distance(const char *ibdev_path, const char *pci);

/* ---- verbs.c: the calls we need, from rdma-core or from gnic-emu --------- */
struct gnic_verbs {
	enum gnic_provider provider; /* VERBS or EMU */
	char lib_path[256];          /* the library the calls come from */
	struct ibv_device **(*get_device_list)(int *num);
	void (*free_device_list)(struct ibv_device **list);
	const char *(*get_device_name)(struct ibv_device *dev);
	struct ibv_context *(*open_device)(struct ibv_device *dev);
	int (*close_device)(struct ibv_context *ctx);
	/* one of the two: gemu_query_port, or rdma-core's exported symbol */
	int (*query_port)(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr,
	                  size_t attr_len);
	int (*query_port_compat)(struct ibv_context *ctx, uint8_t port, void *attr);
	int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid);
	/* rdma-core >= 32 (_ibv_query_gid_ex) and gnic-emu: may be NULL */
	int (*query_gid_ex)(struct ibv_context *ctx, uint32_t port, uint32_t index,
	                    struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size);
	/* rdma-core's, declared in its provider header: 0 RoCE v1 (or IB), 1
	 * RoCE v2; may be NULL */
	int (*query_gid_type)(struct ibv_context *ctx, uint8_t port, unsigned int index, int *type);
	int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
	int (*dealloc_pd)(struct ibv_pd *pd);
	/* reg_mr_iova2 when the library has it, else the plain exported one */
	struct ibv_mr *(*reg_mr_iova2)(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
	                               unsigned int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t len,
	                                uint64_t iova, int fd, int access); /* may be NULL */
	int (*dereg_mr)(struct ibv_mr *mr);
	struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_context,
	                            struct ibv_comp_channel *channel, int comp_vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
	                struct ibv_qp_init_attr *init_attr);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*mlx5dv_init_obj)(struct mlx5dv_obj *obj, uint64_t obj_type);
	bool (*mlx5dv_is_supported)(struct ibv_device *dev); /* NULL: rdma-core < 20 */
	struct ibv_qp *(*mlx5dv_create_qp)(struct ibv_context *ctx,
	                                   struct ibv_qp_init_attr_ex *attr,
	                                   struct mlx5dv_qp_init_attr *mlx5_attr); /* may be NULL */
	/* DEVX (qp_devx.c): all NULL when the library has no DEVX */
	struct ibv_context *(*mlx5dv_open_device)(struct ibv_device *dev,
	                                          struct mlx5dv_context_attr *attr);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	int (*destroy_ah)(struct ibv_ah *ah);
	struct mlx5dv_devx_umem *(*devx_umem_reg)(struct ibv_context *ctx, void *addr, size_t size,
	                                          uint32_t access);
	struct mlx5dv_devx_umem *(*devx_umem_reg_ex)(struct ibv_context *ctx,
	                                             struct mlx5dv_devx_umem_in *in);
	int (*devx_umem_dereg)(struct mlx5dv_devx_umem *umem);
	struct mlx5dv_devx_uar *(*devx_alloc_uar)(struct ibv_context *ctx, uint32_t flags);
	void (*devx_free_uar)(struct mlx5dv_devx_uar *uar);
	int (*devx_query_eqn)(struct ibv_context *ctx, uint32_t vector, uint32_t *eqn);
	struct mlx5dv_devx_obj *(*devx_obj_create)(struct ibv_context *ctx, const void *in,
	                                           size_t inlen, void *out, size_t outlen);
	int (*devx_obj_modify)(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out,
	                       size_t outlen);
	int (*devx_obj_destroy)(struct mlx5dv_devx_obj *obj);
	/* gnic-emu only (gemu_eth_stats, struct gemu_eth_stats): NULL on rdma-core */
	int (*emu_eth_stats)(struct ibv_context *ctx, void *out);
};
/* Has the library every DEVX call qp_devx.c makes? */
bool gnic_verbs_has_devx(const struct gnic_verbs *v);
/* The table for provider (VERBS or EMU), loaded once per process. */
gnic_status_t gnic_verbs_get(enum gnic_provider provider, const struct gnic_verbs **v);
/* AUTO: rdma-core when it lists an mlx5 device, else gnic-emu; why says
 * what decided it ("" for an explicit choice). */
gnic_status_t gnic_verbs_select(enum gnic_provider want, const struct gnic_verbs **v, char *why,
                                size_t size);
/* Is dev driven by the mlx5 provider? mlx5dv_is_supported(), as device names
 * say nothing (rdma-core's persistent names: rocep193s0f0, ibp12s0f4). */
bool gnic_verbs_is_mlx5(const struct gnic_verbs *v, struct ibv_device *dev);
int gnic_verbs_query_port(const struct gnic_verbs *v, struct ibv_context *ctx, uint8_t port,
                          struct ibv_port_attr *attr);
struct ibv_mr *gnic_verbs_reg_mr(const struct gnic_verbs *v, struct ibv_pd *pd, void *addr,
                                 size_t len, int access);
/* ibv_alloc_td (no comp_mask), ibv_dealloc_td, ibv_alloc_parent_domain
 * (pd + td, nothing else): NULL / errno as verbs.h returns them. */
struct ibv_td *gnic_verbs_alloc_td(struct ibv_context *ctx);
int gnic_verbs_dealloc_td(struct ibv_td *td);
struct ibv_pd *gnic_verbs_alloc_parent_domain(struct ibv_context *ctx, struct ibv_pd *pd,
                                              struct ibv_td *td);

/* ---- cuda.c: the CUDA driver API, loaded only for GPU contexts ---------- */
struct gnic_gpu {
	int ordinal;  /* GNIC_GPU_NONE: no GPU, the fields below are unused */
	int dev;      /* CUdevice */
	void *cu_ctx; /* the device's primary context (retained) */
	char name[128];
	char pci[16]; /* its PCI address, normalised; "" if unknown */
};
/* want: an ordinal, GNIC_GPU_AUTO or GNIC_GPU_NONE. AUTO without CUDA or a
 * GPU gives gpu->ordinal = GNIC_GPU_NONE and GNIC_OK. */
gnic_status_t gnic_cuda_open(int want, struct gnic_gpu *gpu);
void gnic_cuda_close(struct gnic_gpu *gpu);
/* Make gpu's context current for this thread; leave() restores the old one. */
gnic_status_t gnic_cuda_enter(const struct gnic_gpu *gpu, void **prev);
void gnic_cuda_leave(void *prev);
bool gnic_cuda_is_device_mem(const void *addr); /* false without CUDA */
gnic_status_t gnic_cuda_alloc(size_t len, uint64_t *dptr);
void gnic_cuda_free(uint64_t dptr);
gnic_status_t gnic_cuda_htod(uint64_t dst, const void *src, size_t len);
gnic_status_t gnic_cuda_dtoh(void *dst, uint64_t src, size_t len);
enum { GNIC_CUDA_REG_IOMEM = 1 }; /* gnic_cuda_host_register flags */
/* 0, or the CUresult (the text is set) */
int gnic_cuda_host_register(void *addr, size_t len, unsigned flags);
void gnic_cuda_host_unregister(void *addr);
gnic_status_t gnic_cuda_host_dev_ptr(void *addr, uint64_t *dptr);
/* A dma-buf fd for [dptr, dptr + len) of device memory, or -1 (text set). */
int gnic_cuda_dmabuf_fd(uint64_t dptr, size_t len);
#define GNIC_CUDA_ERROR_ALREADY_REGISTERED 712

/* ---- hostmap.c: host pages mapped into the GPU, shared by refcount ------
 * CUDA refuses to register a page twice, and on real mlx5 doorbell records
 * and UAR pages are shared by several QPs/CQs, so every registration goes
 * through this process-wide table of page ranges. Call inside
 * gnic_cuda_enter(). */
gnic_status_t gnic_hostmap_add(void *addr, size_t len, unsigned flags);
void gnic_hostmap_del(void *addr, size_t len);

/* ---- ctx.c --------------------------------------------------------------- */
struct gnic_ctx {
	const struct gnic_verbs *v;
	struct ibv_context *ibctx;
	struct ibv_pd *pd;
	union ibv_gid gid;         /* entry gid_index of port 1: our address */
	int gid_index;             /* gid.c chose it, or GNIC_GID_INDEX / the attr */
	int gid_type;              /* enum ibv_gid_type of that entry */
	uint8_t link_layer;        /* IBV_LINK_LAYER_* of port 1 */
	uint16_t lid;              /* port 1's LID (InfiniBand; 0 on RoCE) */
	uint8_t traffic_class, sl; /* of every QP's address vector */
	enum ibv_mtu mtu;          /* the port's active MTU */
	uint32_t max_qp_wr;        /* the device's: WRs of an RQ, basic blocks of an SQ */
	/* READs/atomics in flight per QP: ours as requester (max_rd_atomic) and
	 * what we accept as responder (max_dest_rd_atomic), from the device */
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	/* atomic_cap IBV_ATOMIC_NONE: mlx5_ib's word for a NIC whose requester
	 * writes fetched values big-endian (no host-endian mode); ConnectX
	 * atomics work either way */
	bool atomic_be;
	char device[64];
	/* opened through mlx5dv_open_device with DEVX; else why not */
	bool devx;
	char devx_why[320];
	uint32_t pdn;            /* the PD's number, for DEVX commands */
	bool queue_noted;        /* AUTO's fallback to HOST queues was logged */
	char queue_gpu_why[512]; /* why GPU queues failed here once: AUTO tries no more */
	struct gnic_gpu gpu;
	int nqp, nmr; /* live objects: destroy refuses while any */
	/* progress.c: the doorbell thread for GNIC_DB_CPU QPs */
	pthread_mutex_t prog_lock; /* guards the list and the QPs' rung */
	struct gnic_qp *prog_qps;
	pthread_t prog_thread;
	bool prog_running;
	atomic_bool prog_stop;
	/* proxy.c: the proxy thread for GNIC_DB_PROXY QPs */
	pthread_mutex_t px_lock; /* guards the list and every QP's proxy state */
	struct gnic_proxy *px_list;
	pthread_t px_thread;
	bool px_running;
	atomic_bool px_stop;
	atomic_int px_waiters; /* others waiting for px_lock: the thread lets them in */
	bool px_noted;         /* AUTO's fallback to the proxy was logged */
	bool bf_noted;         /* GNIC_DB_MODE=bf's fallback to SM was logged */
};

static inline bool gnic_ctx_has_gpu(const struct gnic_ctx *ctx)
{
	return ctx->gpu.ordinal != GNIC_GPU_NONE;
}

/* ---- gid.c: which GID table entry QPs send from ------------------------- */
/* want: an index, or -1 to choose (RoCE: v2, IPv4-mapped first; IB: 0).
 * Fills ctx->gid, gid_index, gid_type; needs ctx->link_layer. */
gnic_status_t gnic_gid_pick(struct gnic_ctx *ctx, int want);

/* ---- qp.c / qp_*.c ------------------------------------------------------- */
#define GNIC_QP_MAX_MAPS 10

struct gnic_qp;
/* How a QP's verbs objects are made: qp_verbs.c (ibv_create_qp, GNIC_QUEUE_HOST)
 * or qp_devx.c (PRM commands on umem, GPU and HOST_DEVX). create fills qpn,
 * dv, dv_scq and dv_rcq (host or device addresses, as qp->queue says), or
 * leaves what it made for destroy; modify takes a verbs transition. */
struct gnic_qp_ops {
	const char *name;
	gnic_status_t (*create)(struct gnic_qp *qp);
	void (*destroy)(struct gnic_qp *qp);
	gnic_status_t (*modify)(struct gnic_qp *qp, struct ibv_qp_attr *a, int mask);
};
extern const struct gnic_qp_ops gnic_qp_verbs_ops;
extern const struct gnic_qp_ops gnic_qp_devx_ops;
struct gnic_devx_qp; /* qp_devx.c */

struct gnic_qp {
	struct gnic_ctx *ctx;
	struct gnic_qp_attr attr; /* as validated; db_mode resolved at placement */
	bool connected;           /* left RESET through gnic_qp_connect */
	uint32_t psn;             /* our starting PSN, kept across resets */
	uint32_t qpn;
	enum gnic_queue queue; /* resolved: HOST, GPU or HOST_DEVX */
	const struct gnic_qp_ops *ops;
	/* verbs objects (HOST) or DEVX objects (dx), and their hardware view:
	 * with GPU queues dv's queue and record pointers are device addresses */
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *ibqp;
	struct gnic_devx_qp *dx;
	struct mlx5dv_qp dv;
	struct mlx5dv_cq dv_scq, dv_rcq;
	/* host block (page-aligned, its own pages): scratch, err, cpu_db */
	void *hblk;
	size_t hblk_len;
	uint64_t *scratch;
	struct gnic_dev_err *err;
	uint64_t *cpu_db;
	struct ibv_mr *scratch_mr;
	/* the device view: img is the struct as the host builds it (and, without
	 * a GPU, the struct itself); on a GPU it is copied to dev_gpu */
	struct gnic_dev_qp *img;
	/* per-slot tracking the device writes: sq_pub[sq_wqe_cnt] (8 B each)
	 * then wqe_nbb[sq_wqe_cnt] (1 B each), zeroed at create and reset */
	uint8_t *track;     /* host array (no GPU) */
	uint64_t track_gpu; /* CUdeviceptr (GPU) */
	uint64_t dev_gpu;   /* CUdeviceptr of the struct (GPU) */
	struct {
		void *addr;
		size_t len;
	} maps[GNIC_QP_MAX_MAPS]; /* hostmap registrations, undone in reverse */
	int nmaps;
	/* progress.c */
	struct gnic_qp *prog_next;
	uint64_t rung; /* producer index the progress thread rang last */
	bool on_progress;
	/* proxy.c: GNIC_DB_PROXY state (NULL in the other modes) */
	struct gnic_proxy *px;
	/* qp_bf.c: a BF QP's thread domain and the parent domain it is made
	 * on (its doorbell register is the domain's alone); NULL otherwise */
	struct ibv_td *td;
	struct ibv_pd *pdom;
	bool db_from_env; /* db_mode came from GNIC_DB_MODE (attr said AUTO) */
	/* eth.c: a RAW_PACKET QP of an Ethernet queue, not RC */
	bool raw_eth;
};

/* qp.c: a RAW_PACKET QP (RESET) for an Ethernet queue, built like an RC
 * one; attr's db_mode must not be PROXY. */
gnic_status_t gnic_qp_create_raw(struct gnic_ctx *ctx, const struct gnic_qp_attr *attr,
                                 struct gnic_qp **qp_p);
/* qp_attr.c */
/* max_qp_wr: the device's (struct gnic_ctx); libgnic caps it at GNIC_MAX_QP_WR */
gnic_status_t gnic_qp_attr_check(const struct gnic_qp_attr *attr, uint32_t max_qp_wr);
gnic_status_t gnic_qp_attr_check_geometry(const struct gnic_qp_attr *attr, uint32_t sq_wqe_cnt);
uint32_t gnic_qp_scq_depth(const struct gnic_qp_attr *attr);
uint32_t gnic_qp_rcq_depth(const struct gnic_qp_attr *attr);
/* qp_bf.c: a BF QP's own doorbell register. gnic_qp_bf_pd gives the PD to
 * make the QP on: for db_mode BF a parent domain with a thread domain of its
 * own, else the context's PD. When no domain can be had, explicit BF fails
 * (NOT_SUPPORTED, the reason in the message) and BF from GNIC_DB_MODE
 * becomes SM (a note). gnic_qp_bf_close frees the domains, after the QP. */
gnic_status_t gnic_qp_bf_pd(struct gnic_qp *qp, struct ibv_pd **pd);
void gnic_qp_bf_close(struct gnic_qp *qp);
/* qp_dev.c: the device view (struct gnic_dev_qp and where it lives) */
gnic_status_t gnic_qp_dev_create(struct gnic_qp *qp);
void gnic_qp_dev_destroy(struct gnic_qp *qp);
gnic_status_t gnic_qp_dev_reset(struct gnic_qp *qp);
/* Bytes of the device's tracking arrays (sq_pub, res_owned, wqe_nbb). */
size_t gnic_qp_track_len(const struct gnic_qp *qp);
/* The QP as a host thread drives it directly: host pointers, SM doorbells,
 * EXCLUSIVE, no doorbell batching; track: gnic_qp_track_len() zeroed bytes.
 * The proxy thread posts through it. */
void gnic_qp_dev_host_view(struct gnic_qp *qp, struct gnic_dev_qp *d, uint8_t *track);
/* qp_conn.c */
gnic_status_t gnic_qp_to_reset(struct gnic_qp *qp);
/* qp_error.c */
const char *gnic_syndrome_name(uint8_t syndrome);
const char *gnic_opcode_name(uint8_t opcode);

/* ---- blob.c -------------------------------------------------------------- */
struct gnic_blob_info {
	uint8_t gid[16];
	uint32_t qpn; /* 24 bits */
	uint32_t psn; /* 24 bits */
	uint8_t mtu;  /* enum ibv_mtu */
	uint16_t flags;
	uint16_t version;   /* 1 or 2; encode: 0 = the current one (2) */
	uint16_t lid;       /* version 2: the port's LID (InfiniBand), 0 on RoCE */
	uint8_t link_layer; /* version 2: IBV_LINK_LAYER_INFINIBAND / _ETHERNET */
};
void gnic_blob_encode(const struct gnic_blob_info *info, struct gnic_blob *blob);
gnic_status_t gnic_blob_decode(const struct gnic_blob *blob, struct gnic_blob_info *info);
uint32_t gnic_crc32(const void *buf, size_t len);

/* ---- progress.c ---------------------------------------------------------- */
gnic_status_t gnic_progress_add(struct gnic_qp *qp); /* and start the thread */
void gnic_progress_remove(struct gnic_qp *qp);
void gnic_progress_rewind(struct gnic_qp *qp); /* after a reset: index 0 */

/* ---- proxy.c ------------------------------------------------------------
 * The block (gnic_dev_proxy.h): head, result[2 * cnt + 1], ring desc[cnt]
 * (cnt = sq_wqe_cnt), on pages of its own so a GPU context can map it. */
static inline size_t gnic_proxy_res_off(void)
{
	return (sizeof(struct gnic_px_block) + 63) & ~(size_t)63;
}
static inline size_t gnic_proxy_ring_off(uint32_t cnt)
{
	return gnic_proxy_res_off() +
	       (((2 * (size_t)cnt + 1) * sizeof(uint64_t) + 63) & ~(size_t)63);
}
/* Allocate qp->px and its block (after the verbs objects, before fill). */
gnic_status_t gnic_proxy_create(struct gnic_qp *qp);
void gnic_proxy_destroy(struct gnic_qp *qp);
void *gnic_proxy_block(const struct gnic_qp *qp, size_t *len); /* host address */
gnic_status_t gnic_proxy_add(struct gnic_qp *qp);              /* serve it; starts the thread */
void gnic_proxy_remove(struct gnic_qp *qp);                    /* the thread stops with the last */
void gnic_proxy_stop(struct gnic_ctx *ctx);
/* Reset: under gnic_proxy_lock(), the send CQ's consumer index (the proxy
 * owns it), then rewind(ci) starts everything at index 0 again. */
void gnic_proxy_lock(struct gnic_qp *qp);
void gnic_proxy_unlock(struct gnic_qp *qp);
uint64_t gnic_proxy_scq_ci(const struct gnic_qp *qp);
void gnic_proxy_rewind(struct gnic_qp *qp, uint64_t scq_ci);
/* The first error: the proxy's (its QP's record) or the device threads'. */
const struct gnic_dev_err *gnic_proxy_err(const struct gnic_qp *qp);

/* ---- eth.c ring.c: Ethernet queues and the hand-off ring (gnic_eth.h) -- */
/* Host memory of len bytes (page multiple) that device code of ctx can
 * reach: *dev its address there (the same without a GPU); mapped with
 * gnic_hostmap_add for a GPU context. */
gnic_status_t gnic_eth_host_block(struct gnic_ctx *ctx, size_t len, void **host, uint64_t *dev);
void gnic_eth_host_block_free(struct gnic_ctx *ctx, void *host, size_t len);
/* A copy of len bytes at src in device-visible memory: *dev (GPU memory for
 * a GPU context, else *host, a host allocation). */
gnic_status_t gnic_eth_dev_copy(struct gnic_ctx *ctx, const void *src, size_t len, void **host,
                                uint64_t *dev);
void gnic_eth_dev_free(struct gnic_ctx *ctx, void *host, uint64_t dev);

/* ---- util.c -------------------------------------------------------------- */
/* A PCI address "[dddd:]bb:dd.f" (any case) as "dddd:bb:dd.f" lower case;
 * false if it is none. */
bool gnic_pci_norm(const char *in, char out[GNIC_PCI_LEN]);
/* A polling thread (progress, proxy) past its spin after the last work:
 * sleep *sleep_ns (0: the first time), doubling from 1 us up to 100 us. */
void gnic_poll_backoff(uint64_t *sleep_ns);
uint64_t gnic_time_ns(void);
uint32_t gnic_pow2_ceil(uint32_t v);
void gnic_put_le16(uint8_t *p, uint16_t v);
void gnic_put_le32(uint8_t *p, uint32_t v);
void gnic_put_le64(uint8_t *p, uint64_t v);
uint16_t gnic_get_le16(const uint8_t *p);
uint32_t gnic_get_le32(const uint8_t *p);
uint64_t gnic_get_le64(const uint8_t *p);

#endif /* GNIC_INT_H */
