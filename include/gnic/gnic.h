/* SPDX-License-Identifier: MIT */
/*
 * libgnic host API: the control path of GPU-initiated RDMA.
 *
 * The host opens a device, registers memory, creates and connects RC queue
 * pairs and exports each QP to the device as a struct gnic_dev_qp; device
 * threads (CUDA kernels, or CPU threads in a CPU-only build) then post WQEs,
 * ring doorbells and poll completions themselves with gnic_dev.cuh.
 *
 * libgnic loads rdma-core (libibverbs.so.1 + libmlx5.so.1) and the CUDA driver
 * (libcuda.so.1) at run time: it uses a real mlx5 device when one exists and
 * gnic-emu (libgnic_emu.so.0) otherwise, and it works without CUDA (device
 * code then runs on CPU threads).
 *
 * Conventions: every call that can fail returns gnic_status_t (0 = GNIC_OK,
 * negative = error) and sets outputs only on success; gnic_last_error()
 * gives this thread's text of the last failure (what failed, with errno or
 * CUDA error names). Calls that cannot fail (attr_init, destroy, getters)
 * return void or the value. Objects are not thread-safe unless stated; the
 * data path is.
 */
#ifndef GNIC_H
#define GNIC_H

#include <stddef.h>
#include <stdint.h>

#include "gnic_dev.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gnic_status {
	GNIC_OK = 0,
	GNIC_ERR_INVALID = -1, /* bad argument; nothing changed */
	GNIC_ERR_NOMEM = -2,
	GNIC_ERR_NO_DEVICE = -3,     /* no RDMA device and no gnic-emu, or no such GPU */
	GNIC_ERR_NOT_SUPPORTED = -4, /* documented as not (yet) supported */
	GNIC_ERR_SYSTEM = -5,        /* a system or verbs call failed (errno in the text) */
	GNIC_ERR_CUDA = -6,          /* a CUDA driver call failed */
	GNIC_ERR_TIMEOUT = -7,       /* a bounded wait ran out */
	GNIC_ERR_PROTOCOL = -8,      /* malformed or incompatible blob / bootstrap message */
	GNIC_ERR_STATE = -9,         /* object in the wrong state for this call */
	GNIC_ERR_QP = -10,           /* the QP failed: see gnic_qp_error() */
} gnic_status_t;

/* Short name of a status ("GNIC_ERR_TIMEOUT: a bounded wait ran out"). */
const char *gnic_strerror(gnic_status_t status);
/* This thread's description of the last failed call; "" if none. */
const char *gnic_last_error(void);

/* ---- context ------------------------------------------------------------ */

enum gnic_provider {
	GNIC_PROVIDER_AUTO = 0,  /* a real mlx5 device if present, else gnic-emu */
	GNIC_PROVIDER_VERBS = 1, /* rdma-core's libibverbs + libmlx5 only */
	GNIC_PROVIDER_EMU = 2,   /* gnic-emu only */
};

#define GNIC_GPU_NONE (-1) /* device code runs on CPU threads */
#define GNIC_GPU_AUTO (-2) /* GPU 0 when CUDA and a GPU are present, else NONE */

#define GNIC_GID_AUTO (-1) /* RoCE: a RoCE v2 GID, IPv4-mapped first; IB: index 0 */
#define GNIC_FROM_ENV (-1) /* traffic_class / sl: GNIC_TRAFFIC_CLASS / GNIC_SL, else 0 */

struct gnic_ctx_attr {
	enum gnic_provider provider; /* env GNIC_PROVIDER=auto|verbs|emu overrides AUTO */
	const char *device;          /* RDMA device name; NULL: the mlx5 device nearest the GPU */
	int gpu;                     /* CUDA ordinal, GNIC_GPU_NONE or GNIC_GPU_AUTO */
	/* GID table entry of port 1 the QPs send from: 0-255, or GNIC_GID_AUTO,
	 * where env GNIC_GID_INDEX=auto|N decides. An empty entry is refused. */
	int gid_index;
	int traffic_class; /* GRH traffic class 0-255 (RoCE v2: DSCP << 2 | ECN) or FROM_ENV */
	int sl;            /* service level 0-15 (RoCE: VLAN priority) or FROM_ENV */
};

struct gnic_ctx_info {
	enum gnic_provider provider; /* VERBS or EMU: what is in use */
	char device[64];             /* RDMA device name */
	char provider_lib[256];      /* path of the library that provides verbs */
	int gpu;                     /* CUDA ordinal in use, or GNIC_GPU_NONE */
	char gpu_name[128];
	int gid_index;     /* the GID table entry in use */
	int gid_type;      /* its enum ibv_gid_type: 0 IB, 1 RoCE v1, 2 RoCE v2 */
	uint8_t gid[16];   /* its GID: what gnic_qp_export() puts in blobs */
	int link_layer;    /* port 1's IBV_LINK_LAYER_*: 1 InfiniBand, 2 Ethernet */
	int lid;           /* port 1's LID on InfiniBand, 0 on RoCE */
	int traffic_class; /* what QPs' address vectors carry */
	int sl;
};

struct gnic_ctx;

/* Defaults: provider AUTO, device NULL, gpu GNIC_GPU_AUTO, gid_index
 * GNIC_GID_AUTO, traffic_class and sl GNIC_FROM_ENV. */
void gnic_ctx_attr_init(struct gnic_ctx_attr *attr);
/* Open the device (and GPU), allocate a PD. */
gnic_status_t gnic_ctx_create(const struct gnic_ctx_attr *attr, struct gnic_ctx **ctx_p);
/* Free the context; every QP and MR of it must be destroyed first. */
void gnic_ctx_destroy(struct gnic_ctx *ctx);
gnic_status_t gnic_ctx_query(struct gnic_ctx *ctx, struct gnic_ctx_info *info);

/* ---- memory ------------------------------------------------------------- */

enum gnic_access {
	GNIC_ACCESS_LOCAL = 1 << 0, /* local write (results of READ/atomics, receives) */
	GNIC_ACCESS_REMOTE_WRITE = 1 << 1,
	GNIC_ACCESS_REMOTE_READ = 1 << 2,
	GNIC_ACCESS_REMOTE_ATOMIC = 1 << 3,
	GNIC_ACCESS_ALL = 0xf,
};

/* What a peer needs to reach a registered region (exchange it any way). */
struct gnic_rmem {
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	uint32_t rsvd;
};

struct gnic_mr;

/* Register host memory or CUDA device memory (detected from the pointer; on
 * hardware dmabuf first, nvidia-peermem as fallback). */
gnic_status_t gnic_mr_reg(struct gnic_ctx *ctx, void *addr, size_t len, unsigned access,
                          struct gnic_mr **mr_p);
void gnic_mr_dereg(struct gnic_mr *mr);
uint32_t gnic_mr_lkey(const struct gnic_mr *mr);
uint32_t gnic_mr_rkey(const struct gnic_mr *mr);
void gnic_mr_rmem(const struct gnic_mr *mr, struct gnic_rmem *out);

/* ---- queue pairs -------------------------------------------------------- */

/* Where a QP's queues live: the SQ and RQ, both CQs and their doorbell
 * records (the data path is the same in each; only its pointers differ). */
enum gnic_queue {
	/* GPU in a GPU context when the device takes GPU memory as DEVX umem,
	 * else HOST (the reason logged once per context); HOST without a GPU */
	GNIC_QUEUE_AUTO = 0,
	GNIC_QUEUE_HOST = 1, /* ibv_create_qp/create_cq: the provider's host memory */
	/* DEVX (mlx5dv_devx_*): cuMemAlloc'd GPU memory registered as umem
	 * (dma-buf first, nvidia-peermem as fallback); GPU contexts only, db_mode
	 * SM or BF (AUTO becomes SM); without DEVX or GPU umem: NOT_SUPPORTED */
	GNIC_QUEUE_GPU = 2,
	/* DEVX with the queues in host memory libgnic allocates */
	GNIC_QUEUE_HOST_DEVX = 3,
};

struct gnic_qp_attr {
	uint32_t sq_depth;         /* send WQEs of the largest size the SQ holds; 1024 */
	uint32_t rq_depth;         /* receives the RQ holds; 256 (0: no receive queue) */
	uint32_t max_inline;       /* inline bytes per WQE (sizes them); 64 */
	enum gnic_db_mode db_mode; /* AUTO (env GNIC_DB_MODE picks what AUTO becomes) */
	enum gnic_share share;     /* GNIC_SHARE_GPU */
	uint32_t cqe_every;        /* CQE at least every N basic blocks (pow2); 16 */
	uint32_t db_batch;         /* ring after N posts (1 = each post); 1 */
	uint64_t timeout_ns;       /* bound of each device wait; 10 s */
	uint8_t retry_cnt;         /* transport retries; 7 */
	uint8_t rnr_retry;         /* RNR retries (7 = forever); 7 */
	uint8_t timeout;           /* IB ack timeout exponent; 14 (67 ms) */
	uint8_t queue; /* enum gnic_queue; AUTO (env GNIC_QUEUE picks what AUTO becomes) */
};

struct gnic_qp;

void gnic_qp_attr_init(struct gnic_qp_attr *attr);
/* An RC QP with its own send and receive CQs, its queues placed as
 * attr->queue says (see enum gnic_queue), exported to the device (the
 * struct in GPU memory for a GPU context). db_mode AUTO becomes SM when
 * device code can store to the doorbell register, else PROXY (the reason is
 * logged at the default level, once per context); SM and BF without it fail
 * with GNIC_ERR_NOT_SUPPORTED. A BF QP gets a doorbell register no other QP
 * shares (a thread domain of its own); when none can be had, an explicit BF
 * fails with GNIC_ERR_NOT_SUPPORTED and BF from GNIC_DB_MODE becomes SM. A
 * CPU QP starts the progress thread below, a PROXY QP the proxy thread (see
 * the CPU proxy section). */
gnic_status_t gnic_qp_create(struct gnic_ctx *ctx, const struct gnic_qp_attr *attr,
                             struct gnic_qp **qp_p);
void gnic_qp_destroy(struct gnic_qp *qp);
/* The placement the QP got: HOST, GPU or HOST_DEVX (never AUTO); -1 for NULL. */
int gnic_qp_queue(const struct gnic_qp *qp);

/* Connection blob: versioned and checksummed; GID, QPN, PSN, MTU, and (from
 * version 2) LID and link layer. Send it to the peer by any means
 * (gnic_boot_* below, MPI, a file). Version 1 blobs (no LID) still connect
 * on RoCE. */
#define GNIC_BLOB_SIZE 64
struct gnic_blob {
	uint8_t bytes[GNIC_BLOB_SIZE];
};
gnic_status_t gnic_qp_export(struct gnic_qp *qp, struct gnic_blob *blob);
/* RESET -> INIT -> RTR -> RTS towards the peer described by remote: on RoCE
 * by its GID (a GRH), on InfiniBand by its LID (with a GRH only when the
 * peer's GID has another subnet prefix). A blob of an unknown version, a bad
 * checksum, a non-blob, a peer on the other link layer or a version 1 blob
 * on InfiniBand gives GNIC_ERR_PROTOCOL and changes nothing. */
gnic_status_t gnic_qp_connect(struct gnic_qp *qp, const struct gnic_blob *remote);
/* Back to RESET with empty queues (after an error), ready to connect again. */
gnic_status_t gnic_qp_reset(struct gnic_qp *qp);
/* The QP as device code sees it: a device pointer for a GPU context. Valid
 * until gnic_qp_destroy(); gnic_qp_reset() keeps it. */
struct gnic_dev_qp *gnic_qp_dev(struct gnic_qp *qp);

struct gnic_qp_error {
	int dev_status;   /* enum gnic_dev_status; 0 = no error */
	uint8_t syndrome; /* GNIC_MLX5_SYND_* */
	uint8_t vendor_syndrome;
	uint8_t opcode; /* GNIC_MLX5_OPCODE_* of the failed WQE */
	uint8_t rsvd;
	uint16_t wqe_counter; /* its index */
	char text[192];       /* e.g. "RDMA_WRITE at WQE 17: REMOTE_ACCESS_ERR (syndrome 0x13)" */
};
/* The first error the device recorded on this QP (also after the kernel). */
gnic_status_t gnic_qp_error(struct gnic_qp *qp, struct gnic_qp_error *err);

/* ---- QP groups ------------------------------------------------------------
 * n QPs with the same attributes, made, connected and destroyed together,
 * e.g. one per CTA or one per peer. Device code gets one array of their
 * device views: gnic_qp_group_dev(g)[i] == gnic_qp_dev(gnic_qp_group_qp(g, i)). */
#define GNIC_QP_GROUP_MAX 4096

struct gnic_qp_group;

/* 1 <= n <= GNIC_QP_GROUP_MAX; attr NULL = defaults. On failure nothing is
 * left behind and the text names the QP that failed. */
gnic_status_t gnic_qp_group_create(struct gnic_ctx *ctx, const struct gnic_qp_attr *attr,
                                   uint32_t n, struct gnic_qp_group **group_p);
/* Destroys every QP of the group (the group's QPs must not be destroyed
 * one by one). */
void gnic_qp_group_destroy(struct gnic_qp_group *group);
uint32_t gnic_qp_group_size(const struct gnic_qp_group *group);
/* QP i (for export/connect/reset/error one by one), NULL if i >= size. */
struct gnic_qp *gnic_qp_group_qp(struct gnic_qp_group *group, uint32_t i);
/* The array of n device views: in GPU memory for a GPU context (pass it to
 * a kernel), host memory otherwise. Valid until the group is destroyed. */
struct gnic_dev_qp *const *gnic_qp_group_dev(struct gnic_qp_group *group);
/* blobs[i] = QP i's blob; blobs holds size() entries. */
gnic_status_t gnic_qp_group_export(struct gnic_qp_group *group, struct gnic_blob *blobs);
/* QP i connects to remote[i]. All or nothing: on any failure every QP of the
 * group is back in RESET. GNIC_ERR_STATE if any QP is connected already. */
gnic_status_t gnic_qp_group_connect(struct gnic_qp_group *group, const struct gnic_blob *remote);

/* ---- CPU-assisted doorbells ---------------------------------------------- */

/* A host thread that rings doorbells for QPs in GNIC_DB_CPU mode. Started
 * automatically by gnic_qp_create() for such QPs; stop it before destroying
 * the context or to pause. Idempotent. */
gnic_status_t gnic_progress_start(struct gnic_ctx *ctx);
void gnic_progress_stop(struct gnic_ctx *ctx);

/* ---- CPU proxy (GNIC_DB_PROXY) ---------------------------------------------
 * Device threads call gnic_dev.cuh as in every mode; their calls hand 64-byte
 * descriptors to one libgnic thread per context through a ring in host
 * memory (mapped into the GPU), which builds and posts the WQEs, polls the
 * send CQ and reports completions, fetched values and errors back: the
 * device calls' contracts (tickets, quiet, fence, atomics' old values,
 * GNIC_DEV_ERR_CQE then GNIC_DEV_ERR_QP, gnic_qp_error's record) hold
 * unchanged. A full ring holds posters back (bounded by timeout_ns), never
 * drops. The thread starts with the context's first PROXY QP and is joined
 * when the last is destroyed (descriptors still in its ring go with the
 * QP) or by gnic_ctx_destroy. Receives are not proxied. No call of its own:
 * pick it with db_mode GNIC_DB_PROXY (docs/api.md, "CPU proxy"). */

/* ---- local DMA -------------------------------------------------------------
 * The NIC copies between registered regions of this context (host or GPU
 * memory, either way): device code posts copies on a DMA queue with
 * gnic_dev_dma.cuh. A queue is two RC QPs of the context connected to each
 * other (the NIC's loopback on port 1): a copy is an RDMA WRITE from the
 * source (its MR's lkey) to the target (its MR's rkey; the target MR needs
 * GNIC_ACCESS_REMOTE_WRITE). Errors are the QP's: an error completion
 * fails the queue, gnic_dma_error() tells why (syndrome by name) and
 * gnic_dma_reset() makes it usable again. docs/api.md, "Local DMA". */
struct gnic_dma;
struct gnic_dev_dma;

/* attr: the requester QP's (NULL = gnic_qp_attr_init's defaults); rq_depth
 * is ignored (no receives). On failure nothing is left behind. */
gnic_status_t gnic_dma_create(struct gnic_ctx *ctx, const struct gnic_qp_attr *attr,
                              struct gnic_dma **dma_p);
/* Destroys both QPs; the context's destroy needs it gone first. */
void gnic_dma_destroy(struct gnic_dma *dma);
/* The queue as device code sees it (a device pointer for a GPU context),
 * valid until gnic_dma_destroy(); gnic_dma_reset() keeps it. */
struct gnic_dev_dma *gnic_dma_dev(struct gnic_dma *dma);
/* The first error device code recorded on the queue (gnic_qp_error's). */
gnic_status_t gnic_dma_error(struct gnic_dma *dma, struct gnic_qp_error *err);
/* Back to a working queue after an error: both QPs through RESET and
 * connected again, queues empty. */
gnic_status_t gnic_dma_reset(struct gnic_dma *dma);
/* The requester QP (gnic_qp_* calls on it, e.g. gnic_qp_error). */
struct gnic_qp *gnic_dma_qp(struct gnic_dma *dma);

/* ---- bootstrap: exchange blobs among N ranks over TCP (rank 0 listens) ---- */

struct gnic_boot;
/* addr = "host:port" of rank 0. Every wait is bounded by timeout_ms. */
gnic_status_t gnic_boot_init(const char *addr, int rank, int nranks, uint64_t timeout_ms,
                             struct gnic_boot **boot_p);
/* Every rank contributes len bytes; all receives nranks * len, by rank. */
gnic_status_t gnic_boot_allgather(struct gnic_boot *boot, const void *mine, void *all, size_t len);
gnic_status_t gnic_boot_barrier(struct gnic_boot *boot);
/* This rank and the number of ranks (-1 and 0 for NULL). */
void gnic_boot_info(const struct gnic_boot *boot, int *rank, int *nranks);
/* All-to-all connection: group holds one QP per rank (size == nranks); QP p of
 * rank r connects to QP r of rank p (QP r of rank r loops back to itself).
 * Collective: every rank calls it; returns after a barrier, so every peer's
 * QP is ready when it returns. */
gnic_status_t gnic_boot_connect_all(struct gnic_boot *boot, struct gnic_qp_group *group);
void gnic_boot_fini(struct gnic_boot *boot);

#ifdef __cplusplus
}
#endif

/* ---- raw Ethernet queues, steering and the hand-off ring: gnic_eth.h ------ */
#include "gnic_eth.h"

#endif /* GNIC_H */
