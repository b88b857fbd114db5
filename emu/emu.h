/* SPDX-License-Identifier: MIT */
/*
 * gnic-emu internals: the objects of the emulated NIC and the interfaces
 * between its three sides.
 *
 *   verbs side (device.c pd.c mr.c cq.c qp.c wq.c post.c channel.c): what
 *       the rdma-core mlx5 provider does in user space. It writes WQE bytes
 *       into the SQ/RQ buffers, updates doorbell records, writes the doorbell
 *       register and parses CQEs. It never executes anything.
 *   engine (engine.c, wqe.c, cqe.c, and per QP type an ops table: RC's is
 *       rc.c over requester.c responder.c, RAW_PACKET's raw.c with the
 *       Ethernet port's steering and socket, eth.h): the NIC's processor. Its only
 *       inputs are WQE bytes + doorbells (written by the verbs side or by a
 *       GPU thread through mlx5dv) and fabric messages; its only outputs are
 *       CQE bytes, target memory and fabric messages. The engine and the
 *       fabric reach a QP only through its type's table (qp_ops.h).
 *   fabric (fabric.c and the fabric_*.c that fabric_int.h lists): carries
 *       requests and responses between QPs: a direct call when both QPs
 *       live in this process, TCP otherwise.
 *
 * Threading: GNIC_EMU_THREADS engine workers per process (worker.h), each a
 * thread serving its own share of the QPs, under its own lock, which it holds
 * for one pass at a time. A QP is placed on a worker at creation and may be
 * moved once more when it enters RTR, before it does any engine work: to
 * its in-process peer's worker (worker.h says the rule); from then on its
 * requester, responder, fabric connection and timers are that worker's. QPs of different workers
 * talk through the workers' inboxes (copies, in order), never by one worker touching another's QP.
 *
 * nic.lock is only the control path's: it guards the object tables and
 * reference counts (create/destroy/reg/dereg, pd, cq). A control-path call
 * that changes what a worker sees also takes that worker's lock, after
 * nic.lock (never the other way round; workers never take nic.lock):
 *   - QP create (publication on its worker), modify (state, attributes,
 *     fabric attach), destroy (unpublication): nic.lock + the QP's worker
 *     lock, so a worker never sees a QP half made or half gone, and a QP is
 *     freed only when its worker is between passes.
 *   - MR reg publishes with a release store; dereg unpublishes, then waits
 *     for every worker to end the pass it is in (emu_workers_sync) before
 *     freeing: a worker looks MRs up without locks and uses them only within
 *     one pass (an RCU-like grace period).
 *   - CQs may be shared by QPs of different workers: CQE writes to one CQ are
 *     serialised by its write lock (cqe.c); destroy needs no QP to use it.
 * RDMA atomics on host memory are __atomic operations, exact across workers
 * (and against the CPU); on GPU memory a read-modify-write under one lock.
 * Data-path calls (post_send/recv, poll_cq) never take these locks: they
 * talk to the engine only through the hardware-format queues, like real
 * software does, and kick the QP's worker.
 */
#ifndef GNIC_EMU_H
#define GNIC_EMU_H

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evq.h"
#include "gnic/gnic_mlx5.h"
#include "qp_ops.h"
#include "wq.h"

#define EMU_EXPORT __attribute__((visibility("default")))
/* A thread-local of the emulator: initial-exec, a fixed offset from the
 * thread pointer. The default for a shared library (global or local dynamic)
 * calls __tls_get_addr on every access, and the engine reads its current
 * worker several times a message. The few bytes come from the static TLS
 * surplus glibc keeps for libraries loaded later (GNIC_EMU_LIB's dlopen). */
#define EMU_TLS           __thread __attribute__((tls_model("initial-exec")))
#define EMU_PAGE          4096u
#define EMU_MAX_DEVICES   8
#define EMU_MAX_QP        65536u /* qpn = EMU_QPN_BASE + index */
#define EMU_QPN_BASE      0x100u
#define EMU_MAX_MR        65536u /* key = index << 8 | random key byte */
#define EMU_MAX_CQ        65536u
#define EMU_MAX_SGE       30    /* query_device's max_sge, as mlx5 derives it */
#define EMU_MAX_QP_WR     32768 /* 1 << log_max_qp_sz: WRs of an RQ, BBs of an SQ */
#define EMU_MAX_SQ_DESC   1024  /* max_wqe_sz_sq: bytes of one send WQE */
#define EMU_MAX_RQ_DESC   512   /* max_wqe_sz_rq: bytes of one receive WQE */
#define EMU_MAX_CQE       ((1 << 22) - 1)
#define EMU_MAX_RD_ATOMIC 16
#define EMU_MAX_MSG_SIZE  (1u << 31)
#define EMU_MAX_SRQ       65536u /* srqn = index */
#define EMU_MAX_SRQ_WR    32767  /* (1 << log_max_srq_sz) - 1 */
#define EMU_MAX_SRQ_SGE   31     /* max_rq_desc_sz / 16 - 1, as mlx5_ib reports it */
#define EMU_DGRAM_CONNS   8      /* remote devices a UD QP keeps a connection to */

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* ---- configuration (config.c): one table of GNIC_EMU_* knobs ---------- */
struct emu_config {
	int num_devices;        /* GNIC_EMU_DEVICES, default 1 */
	char bind_addr[64];     /* GNIC_EMU_ADDR; "" = a loopback address per device */
	char dev_name[32];      /* GNIC_EMU_NAME: device 0's name */
	int base_port;          /* GNIC_EMU_PORT: the fabric port, every device's */
	int log_level;          /* GNIC_EMU_LOG: 0 error,1 warn,2 info,3 debug */
	int spin_us;            /* GNIC_EMU_SPIN_US: busy-poll after last work */
	int poll_us;            /* GNIC_EMU_POLL_US: epoll period on a shared core */
	int threads;            /* GNIC_EMU_THREADS: engine workers */
	int sleep_us;           /* GNIC_EMU_SLEEP_US: longest idle sleep */
	int default_timeout_ms; /* GNIC_EMU_TIMEOUT_MS: used when qp timeout=0 */
	int handshake_ms;       /* GNIC_EMU_HANDSHAKE_MS: connect + authentication */
	int max_rd_atom;        /* GNIC_EMU_MAX_RD_ATOM: reads/atomics in flight per QP */
	int pending_max;        /* GNIC_EMU_PENDING_MAX: inbound handshakes at once */
	int pending_per_ip;     /* GNIC_EMU_PENDING_PER_IP: of those, from one address */
	int fabric_local;       /* GNIC_EMU_FABRIC_LOCAL: AF_UNIX to peers of this host */
	uint64_t node_guid;     /* GNIC_EMU_GUID: device 0's node GUID; 0 = from its address */
	int atomic_be;          /* GNIC_EMU_ATOMIC_ENDIAN=big: fetched values land big-endian */
	int link_ib;            /* GNIC_EMU_LINK=ib: InfiniBand ports (LIDs), else RoCE */
	int devx;               /* GNIC_EMU_DEVX=0: mlx5dv_open_device refuses DEVX */
	int cuda_inflight;      /* GNIC_EMU_CUDA_INFLIGHT: GPU copies in flight per worker */
	int cuda_stage_kb;      /* GNIC_EMU_CUDA_STAGE_KB: pinned bounce ring per worker */
	int cuda_batch;         /* GNIC_EMU_CUDA_BATCH: use cuMemcpyBatchAsync (0/1) */
	int cuda_timeout_ms;    /* GNIC_EMU_CUDA_TIMEOUT_MS: longest wait for one copy */
	int cuda_d2d;           /* GNIC_EMU_CUDA_D2D: GPU to GPU device-to-device (0/1) */
	int cuda_kernel_max;    /* GNIC_EMU_CUDA_KERNEL_MAX: copy kernel up to this size */
	char secret[1024];      /* GNIC_EMU_SECRET; "" = unset. Never printed */
	char secret_file[4096]; /* GNIC_EMU_SECRET_FILE; "" = the per-user file */
	char eth_if[256];       /* GNIC_EMU_ETH_IF: interfaces of the Ethernet ports */
	int uar_pages;          /* GNIC_EMU_UAR_PAGES: dynamic UAR pages of a device */
};
extern struct emu_config emu_cfg;
void emu_config_load(void);
/* rdma-core's MLX5_SCATTER_TO_CQE, read at each QP creation as rdma-core
 * does: false only when it is "0". */
bool emu_env_scatter_to_cqe(void);
void emu_config_print(void *file);           /* FILE *, for gnic-emu-info */
int emu_config_home(char *buf, size_t size); /* $HOME or the passwd entry; 0 or -ENOENT */
/* Why addr cannot be a fabric address (broadcast, multicast, ...), or NULL
 * for a unicast address. */
const char *emu_addr_not_unicast(struct in_addr addr);

/* ---- logging (log.c) ---------------------------------------------------- */
enum { EMU_LOG_ERR, EMU_LOG_WARN, EMU_LOG_INFO, EMU_LOG_DEBUG };
void emu_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define emu_err(...)  emu_log(EMU_LOG_ERR, __VA_ARGS__)
#define emu_warn(...) emu_log(EMU_LOG_WARN, __VA_ARGS__)
#define emu_info(...) emu_log(EMU_LOG_INFO, __VA_ARGS__)
#define emu_dbg(...)                                                                               \
	do {                                                                                       \
		if (emu_cfg.log_level >= EMU_LOG_DEBUG)                                            \
			emu_log(EMU_LOG_DEBUG, __VA_ARGS__);                                       \
	} while (0)
const char *emu_syndrome_str(uint8_t syndrome);

/* Warnings that garbage input can trigger once per WQE or message (a bad
 * WQE, a stray request) are rate-limited per call site: EMU_LOG_BURST lines
 * per EMU_LOG_PERIOD_NS, the rest counted and the count given with the next
 * line let through. One static per call site, shared by the workers (log.c
 * serialises them). */
#define EMU_LOG_BURST     10
#define EMU_LOG_PERIOD_NS 5000000000ull
struct emu_log_limit {
	uint64_t window_end;
	unsigned int lines, quiet;
};
/* true: print (with *quiet lines suppressed since the last one printed). */
bool emu_log_allow(struct emu_log_limit *l, unsigned int *quiet);
#define emu_warn_limited(l, fmt, ...)                                                              \
	do {                                                                                       \
		unsigned int q_;                                                                   \
		if (!emu_log_allow((l), &q_))                                                      \
			break;                                                                     \
		if (q_)                                                                            \
			emu_warn(fmt " (and %u more like it not shown)", __VA_ARGS__, q_);         \
		else                                                                               \
			emu_warn(fmt, __VA_ARGS__);                                                \
	} while (0)
enum ibv_wc_status emu_syndrome_to_status(uint8_t syndrome);

/* ---- one send work request ----------------------------------------------
 * What the WQE encoder (post.c) takes, whichever way it was posted:
 * ibv_post_send's ibv_send_wr or the ibv_wr_* builder calls (qp_ex.c). */
struct emu_send_req {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	unsigned int send_flags; /* IBV_SEND_*; INLINE: the payload goes into the WQE */
	__be32 imm;              /* WITH_IMM opcodes */
	uint64_t raddr;          /* RDMA and atomic opcodes */
	uint32_t rkey;
	uint64_t compare_add, swap; /* atomics */
	const struct ibv_sge *sge;  /* gather list; ibv_post_send's inline data too */
	size_t num_sge;
	const struct ibv_data_buf *inl; /* or the inline buffers (ibv_wr_set_inline_*) */
	size_t num_inl;
	struct ibv_ah *ah; /* UD: the destination, its QP and Q_Key */
	uint32_t remote_qpn, remote_qkey;
};

/* ---- objects ------------------------------------------------------------- */
struct emu_listener; /* fabric_int.h */
struct emu_conn;     /* fabric_int.h */
struct emu_worker;   /* worker.h */
struct emu_dma_job;  /* dma.h */

struct emu_device {
	struct ibv_device ibdev; /* first: ibv_device * casts back */
	int index;
	__be64 guid;
	/* the device's fabric identity, ::<port>:ffff:<ipv4> (emu_gid_make()):
	 * named in the handshake; not an entry of the GID table */
	union ibv_gid gid;
	struct sockaddr_in addr; /* where this device's fabric listens */
	struct emu_listener *listener;
	int open_count;
	_Atomic int uar_pages; /* dynamic UAR pages its contexts hold (uar.c) */
};

struct emu_context {
	struct verbs_context vctx; /* vctx.context is the ibv_context */
	struct emu_device *dev;
	struct emu_evq async_q; /* async events; async_fd is its fd */
	struct emu_uars *uars;  /* its doorbell registers (uar.c) */
	bool devx;              /* opened by mlx5dv_open_device with MLX5DV_CONTEXT_FLAGS_DEVX */
};

/* One doorbell (BlueFlame) register of a context, as rdma-core's mlx5 hands
 * them out (uar.c): to QPs, dedicated to one or shared by several, or to a
 * thread domain, whose QPs use it without a lock. */
struct emu_bfreg {
	volatile uint64_t *reg; /* UAR page + 0x800 or 0xa00: two halves of buf_size */
	uint32_t buf_size;      /* a half, 256; 0: no BlueFlame (8-byte doorbells at reg) */
	uint32_t offset;        /* the half the next doorbell goes to (posters, under lock) */
	bool shared;            /* posters take lock for the write and the toggle */
	bool td;                /* a thread domain's (from the pool of emu_uar_td_attach) */
	bool no_copy;           /* MLX5_SHUT_UP_BF: posts write 8-byte doorbells only */
	pthread_spinlock_t lock;
	int count, index; /* QPs (or the TD) using it, its number: under the UAR lock */
	struct emu_uars *owner;
	struct emu_bfreg *next_free; /* a free thread-domain register's successor */
};
/* uar.c: at open (0, EINVAL or ENOMEM for MLX5_TOTAL_UUARS /
 * MLX5_NUM_LOW_LAT_UUARS that rdma-core refuses) and close of a context; a
 * QP's register (NULL: ENOMEM) and its release (nothing for a TD's). */
int emu_uars_open(struct emu_context *ctx);
void emu_uars_close(struct emu_context *ctx);
struct emu_bfreg *emu_uar_get(struct emu_context *ctx);
void emu_uar_put(struct emu_bfreg *b);
/* A thread domain's register, not shared with any QP outside it
 * (mlx5_attach_dedicated_uar): the first free one, else one of a new page
 * whose other register is kept for the next (NULL: ENOMEM, no page left);
 * detach puts it back at the end of the free list. */
struct emu_bfreg *emu_uar_td_attach(struct emu_context *ctx);
void emu_uar_td_detach(struct emu_bfreg *b);
void emu_bfreg_lock(struct emu_bfreg *b); /* only shared registers have a lock */
void emu_bfreg_unlock(struct emu_bfreg *b);

/* A thread domain (td.c): one dedicated doorbell register for the QPs of
 * the parent domains made with it. */
struct emu_td {
	struct ibv_td ibtd;
	struct emu_bfreg *bf;
	int refcnt; /* parent domains using it (under nic.lock): dealloc -> EBUSY */
};

/* A protection domain, or a parent domain (ibv_alloc_parent_domain): then
 * protection is the PD it contains, which the NIC checks QPs and MRs
 * against, and td its thread domain, if any. */
struct emu_pd {
	struct ibv_pd ibpd;
	uint32_t pdn;
	int refcnt;          /* QPs + MRs (+ parent domains) using it, under nic.lock */
	struct emu_pd *next; /* every PD, for emu_pd_lookup (under nic.lock) */
	struct emu_pd *protection;
	struct emu_td *td;
	void *pd_context; /* IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT */
};
/* The parent domain ibpd is, or NULL (a plain PD). */
struct emu_pd *emu_parent_domain(struct ibv_pd *ibpd);

enum emu_mem_type { EMU_MEM_HOST, EMU_MEM_CUDA };

/* The context that copies of a device range run in. Memory of the VMM API
 * (cuMemCreate + cuMemMap) belongs to no context: then it is the primary
 * context of the device holding it, retained by the lookup (primary_dev >= 0)
 * until emu_cuda_put(). */
struct emu_devx_umem;
struct emu_cuda_ctx {
	void *ctx;       /* CUcontext */
	int primary_dev; /* CUdevice whose primary context ctx is (retained), else -1 */
};

struct emu_mr {
	struct ibv_mr ibmr; /* addr = user VA, lkey == rkey */
	struct emu_pd *pd;
	uint64_t iova; /* address remote peers use */
	uint64_t length;
	int access;             /* IBV_ACCESS_* */
	int mem_type;           /* enum emu_mem_type */
	void *host_base;        /* host VA of byte 0 (EMU_MEM_HOST) */
	uint64_t dev_base;      /* CUdeviceptr of byte 0 (EMU_MEM_CUDA) */
	struct emu_cuda_ctx cu; /* the context copies of dev_base run in */
	bool pinned;            /* host memory that CUDA knows as page-locked */
	_Atomic int inbox_refs; /* inbox items reading its memory (worker.c) */
	_Atomic int wire_refs;  /* output pieces pointing into it (fabric_out.c) */
	_Atomic int dma_refs;   /* asynchronous copies in flight through it (dma.c) */
};

struct emu_cq {
	union { /* an ibv_cq_ex begins with the fields of an ibv_cq */
		struct ibv_cq ibcq;
		struct ibv_cq_ex ibcqx; /* ibv_create_cq_ex's view (cq_ex.c) */
	};
	uint32_t cqn;
	/* hardware layout (page-aligned; handed out by mlx5dv_init_obj) */
	struct gnic_mlx5_cqe64 *buf;
	uint32_t cqe_cnt; /* power of two */
	__be32 *dbrec;    /* [0] consumer index & 0xffffff, [1] arm */
	bool ignore_overrun;
	bool ext_bufs; /* DEVX: buf and dbrec are the user's (umem), not freed here */
	/* DEVX umem in GPU memory (devx_umem.c): buf / dbrec are its host
	 * shadow; CQEs are pushed, the consumer index pulled. NULL: host memory */
	struct emu_devx_umem *gpu_buf, *gpu_dbr;
	/* engine side: any worker, under write_lock (cqe.c) */
	_Atomic int write_lock;
	uint32_t pi;  /* next CQE the engine writes */
	bool overrun; /* CQ error: engine writes no more CQEs */
	/* verbs side */
	pthread_spinlock_t poll_lock;
	uint32_t ci;       /* next CQE software reads */
	_Atomic int armed; /* 0 none, 1 any CQE, 2 solicited/error only */
	bool dv_owned;     /* mlx5dv_init_obj was called: user owns ci */
	/* ibv_start_poll .. ibv_end_poll (cq_ex.c), under poll_lock, which is
	 * held in between: the completion the ibv_wc_read_* calls read */
	struct ibv_wc cur;
	uint32_t cur_flow_tag; /* its flow tag (Ethernet receives), for read_flow_tag */
	/* control path */
	int refcnt;                     /* QPs using it (under nic.lock): destroy -> EBUSY */
	uint32_t comp_events_reported;  /* handed out by get_cq_event (its channel's evq lock) */
	uint32_t async_events_reported; /* CQ errors handed out (the context's evq lock) */
	bool devx;                      /* made by DEVX CREATE_CQ (devx_cq.c) */
	struct emu_pd *parent;          /* the parent domain it was made on, or NULL */
};

/* A shared receive queue, in mlx5's format (providers/mlx5/srq.c): wq.wqe_cnt
 * WQEs of wq.stride bytes, each a 16-byte next segment (next_wqe_index, big
 * endian, at byte 2) and data segments ended by an INVALID_LKEY one. Free
 * WQEs form a list from next_free to last_free along next_wqe_index;
 * ibv_post_srq_recv fills next_free and moves on along the list, poll_cq
 * appends a WQE whose CQE it read at last_free. The NIC follows the same
 * list from WQE 0 and learns how many WQEs were posted from dbrec[0].
 *
 * Who touches what:
 *   wq.buf, wq.wqe_cnt, wq.stride, max_*: set at creation;
 *   wq.head (WQEs posted), next_free, last_free, wq.wrid[]: the posting and
 *       polling sides, under wq.lock (wq.tail is not used);
 *   eng_*: the engine's consumer (WQEs taken, next WQE), under nic.lock;
 *   limit: modify_srq and the engine, under nic.lock. */
/* An address handle (ah.c): mlx5's address vector, which post_send copies
 * into a UD WQE's datagram segment (av.h); read-only once made. */
struct emu_ah {
	struct ibv_ah ibah;
	struct emu_pd *pd;
	uint8_t av[48]; /* struct emu_mlx5_av */
	bool is_global;
};

struct emu_srq {
	struct ibv_srq ibsrq;
	struct emu_context *ctx;
	uint32_t events_reported; /* async events handed out (the context's evq lock) */
	struct emu_pd *pd;
	uint32_t srqn;
	struct emu_wq wq;
	__be32 *dbrec;      /* own page: [0] WQEs posted, 16 bits */
	uint32_t next_free; /* the WQE the next post fills */
	uint32_t last_free; /* the end of the free list */
	uint32_t max_wr;    /* what create reports: WQEs that can be posted */
	int max_sge;        /* data segments of a WQE */
	uint16_t eng_taken; /* WQEs the responder took */
	uint16_t eng_next;  /* the WQE it takes next */
	uint32_t limit;     /* armed SRQ limit, 0: none (IBV_EVENT_SRQ_LIMIT_REACHED) */
	int refcnt;         /* QPs using it (under nic.lock): destroy -> EBUSY */
	/* the engine worker of all its QPs, set with the first (under nic.lock):
	 * eng_* and limit are that worker's (worker.c) */
	struct emu_worker *_Atomic worker;
};

/* One receive WQE as the responder sees it: in the QP's RQ or its SRQ. */
struct emu_recv_wqe {
	const struct gnic_mlx5_data_seg *seg; /* the data segments */
	unsigned int nseg;
	uint16_t idx; /* its index: the receive CQE's wqe_counter */
};

/* One request the requester sent and awaits an answer for. */
struct emu_outstanding {
	uint32_t psn;
	uint16_t wqe_idx; /* first basic block of the WQE */
	uint8_t wqe_bb;   /* its size in basic blocks */
	uint8_t opcode;   /* GNIC_MLX5_OPCODE_* */
	uint8_t fm_ce_se;
	bool rd_atomic;
	bool done;         /* answered (or local): retire() may complete it */
	bool copying;      /* answered; its data is still being copied (dma.c) */
	uint8_t syndrome;  /* non-zero: complete with this error */
	uint32_t byte_cnt; /* message length, for the CQE */
	uint64_t tx_mark;  /* transmitted once emu_fabric_tx_done() says so */
	uint8_t inl_len;   /* requester scatter-to-CQE: data for the CQE */
	uint8_t inl[GNIC_MLX5_SCATTER_32_MAX];
};

/* The requester's state (RC: requester.c), its worker's own. */
struct emu_req_state {
	uint16_t sq_ci;          /* next basic block to fetch */
	uint16_t db_pi;          /* newest producer index rung */
	uint32_t db_last_rec;    /* raw doorbell record / register halves last seen: */
	uint64_t db_last_reg[2]; /* only a changed value is a new doorbell */
	/* the register halves as last seen: bytes beyond the first 8 that
	 * changed are a BlueFlame copy of the WQE, which must match the SQ.
	 * Two buffers a half, db_snap_at[half] the current one: a look reads
	 * the register into the other and takes it, rather than copying it. */
	uint8_t db_snap[2][2][GNIC_MLX5_BF_SIZE];
	uint8_t db_snap_at[2];
	/* a copy that did not match, kept to see whether it was still being
	 * written (it is dropped if the next look finds the same bytes) */
	uint8_t db_pend[2][GNIC_MLX5_BF_SIZE];
	bool db_pend_set[2];
	uint32_t psn_next;           /* next request sequence number */
	uint32_t psn_end;            /* one past the newest PSN ever sent (a rewind keeps it) */
	uint64_t noack_bytes;        /* payload sent since the last ACK request */
	struct emu_outstanding *ost; /* ring of sq.wqe_cnt entries */
	uint32_t ost_head, ost_tail; /* tail = oldest unanswered */
	uint32_t rd_atomic_out;      /* outstanding READ/ATOMIC */
	uint64_t timer_deadline_ns;  /* retransmit when the oldest waits this long */
	bool timer_tx_wait;          /* armed, but the oldest is not transmitted yet */
	uint64_t tx_wait_ns;         /* ... since then */
	int retries_left, rnr_retries_left;
	uint64_t rnr_resume_ns; /* after an RNR NAK: resend at this time */
	bool sq_stalled;        /* a local error waits in ost: fetch nothing more */
};

/* The responder's state (RC: responder.c), its worker's own. */
struct emu_resp_state {
	uint16_t rq_ci; /* next RQ WQE to consume */
	uint32_t psn_expected;
	bool last_wqe_reached;     /* SRQ QPs in ERR: IBV_EVENT_QP_LAST_WQE_REACHED raised */
	struct emu_atomic_result { /* answers of recent atomics, for duplicates */
		uint32_t psn;
		uint64_t old;
	} atomic_cache[EMU_MAX_RD_ATOMIC];
	/* asynchronous copies (dma.c): jobs of this QP not retired yet (its
	 * answers and CQEs wait behind them, in order), the one the request
	 * being executed builds, and whether one failed (what follows is
	 * flushed) */
	int dma_jobs;
	struct emu_dma_job *job;
	bool dma_failed;
};

/* The ibv_wr_* builder's state between ibv_wr_start and ibv_wr_complete /
 * ibv_wr_abort (qp_ex.c), under sq.lock, which is held in between, as
 * rdma-core's mlx5 holds its SQ lock. */
struct emu_wr_batch {
	uint32_t head_rb;        /* sq.head at wr_start: abort and errors return to it */
	uint32_t posted;         /* WQEs written since wr_start */
	uint64_t ctrl8;          /* the newest one's first 8 bytes, for the doorbell */
	int err;                 /* the first error since wr_start: wr_complete returns it */
	bool open;               /* an opcode call waits for its data setter */
	struct emu_send_req req; /* that WQE */
	struct ibv_sge sge;      /* wr_set_sge's one entry */
	struct ibv_data_buf buf; /* wr_set_inline_data's one buffer */
};

/* One QP, by concern; each group says who writes it and under what. Its
 * worker runs with the worker's lock held; the data path (post_*, poll_cq)
 * never takes it and meets the engine only in the hardware layout. */
struct emu_qp {
	/* identity: set at creation, read by everyone; the references it holds
	 * (pd, CQs) are counted under nic.lock */
	union { /* an ibv_qp_ex begins with its ibv_qp */
		struct ibv_qp ibqp;
		struct ibv_qp_ex ibqpx; /* ibv_wr_* API (qp_ex.c): wr_api QPs only */
	};
	bool wr_api;                  /* made with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS */
	struct mlx5dv_qp_ex dvqpx;    /* mlx5dv_qp_ex_from_ibv_qp_ex's view (qp_ex.c) */
	const struct emu_qp_ops *ops; /* its type's engine behaviour (qp_ops.h) */
	struct emu_context *ctx;
	uint32_t events_reported; /* async events handed out (the context's evq lock) */
	struct emu_pd *pd;        /* the protection domain (a parent domain's own PD) */
	struct emu_pd *parent;    /* the parent domain it was made on, or NULL */
	struct emu_cq *scq, *rcq;
	struct emu_srq *srq; /* receives come from it (no RQ then), or NULL */
	struct emu_rss *rss; /* an RSS QP (rwq.h): receives go to its table's WQs, or NULL */
	/* the engine worker serving it (worker.h): set at creation, may change
	 * once at each INIT->RTR (emu_worker_rtr) under nic.lock and both
	 * workers' locks; atomic for the data path's kick */
	struct emu_worker *_Atomic worker;
	bool placed; /* counted in its worker's nrun: RTR or later (nic.lock) */

	/* hardware layout (page-aligned host memory), allocated at creation:
	 * written by the verbs side or a GPU thread through mlx5dv, read by the
	 * engine, which sees a WQE through the doorbell that follows it (acquire
	 * loads of dbrec and the register: post.c says the order) */
	void *buf; /* RQ at offset 0, SQ after it (like mlx5) */
	size_t buf_size;
	/* the work queues (wq.h says who touches which field): the SQ's
	 * entries are 64-byte basic blocks, the RQ's are WQEs of a power-of-two
	 * stride >= 16; either may have none (wqe_cnt 0, stride 1, and an RQ's
	 * buf NULL then) */
	struct emu_wq sq, rq;
	__be32 *dbrec;        /* own page: [0] RQ head, [1] SQ producer */
	struct emu_bfreg *bf; /* its doorbell register, maybe shared (uar.c) */
	/* DEVX umem in GPU memory: sq/rq buf and dbrec are its host shadow,
	 * pulled when a doorbell comes (devx_umem.c). NULL: host memory */
	struct emu_devx_umem *gpu_wq, *gpu_dbr;
	volatile uint64_t *bf_reg;   /* bf->reg */
	_Atomic uint64_t bf_dropped; /* register writes the NIC dropped (requester.c) */

	/* verbs side (post.c / cq.c poll); sq.lock guards the sq_* fields,
	 * poll_cq reads an entry's after its CQE; the rest is set
	 * at creation (scat_* are read by the engine too) */
	uint32_t *sq_wqe_end;                       /* sq.head after that WQE: tail on retire */
	uint8_t *sq_opcode;                         /* ibv_wc_opcode of that WQE */
	struct emu_wr_batch wrb;                    /* the ibv_wr_* batch being built */
	int max_send_sge, max_recv_sge, max_inline; /* what post_* allows */
	bool sq_sig_all;
	bool dv_owned; /* mlx5dv_init_obj was called */
	/* a DEVX QP (devx_qp.c): its queues and doorbell record are the user's
	 * umem, its register is in a UAR page of the user's (maybe shared), and
	 * nothing of the user's is written or freed on its behalf */
	bool devx;
	/* scatter-to-CQE (on by default, as rdma-core creates QPs): SEND data of
	 * up to 32 bytes lands in the receive CQE, READ/atomic data of up to 32
	 * bytes in the send CQE (requester: sq_sig_all or ALLOW only), and not
	 * in memory; the provider's poll_cq copies it out */
	bool scat_recv, scat_req;

	/* attributes: written under nic.lock + worker lock by modify_qp; state also by the
	 * engine (to ERR) and read by the data path, hence atomic */
	_Atomic int state;       /* enum ibv_qp_state; engine may set ERR */
	struct ibv_qp_attr attr; /* last values set through modify_qp */
	/* the peer as the fabric routes to it: the GRH's dgid (RoCE), or the
	 * identity of the DLID's device (InfiniBand) */
	union ibv_gid dgid;
	/* emu_gid_identity(dgid), made with it: the responder compares every
	 * request's sender with it (peer_id_ok false: dgid names no device) */
	union ibv_gid peer_id;
	bool peer_id_ok;
	/* emu_device_by_gid(dgid), made with it: the in-process device every
	 * send goes to, or NULL (another process, or none) */
	struct emu_device *peer_dev;
	uint32_t dest_qpn;
	uint8_t gid_type; /* enum ibv_gid_type of the sgid entry: its requests' framing */

	/* engine state: its worker's under the worker's lock, set up by the
	 * type's add() and state_change() (control path, worker lock too) */
	struct emu_req_state req;
	struct emu_resp_state resp;
	/* diagnostics: last error seen by the engine, for libgnic's error query */
	struct {
		uint8_t syndrome, vendor_syndrome, opcode;
		uint16_t wqe_counter;
	} last_err;

	/* fabric: its worker's; set at RTR (emu_fabric_attach) */
	struct emu_conn *conn; /* a connection of its worker (NULL: local peer) */
	/* UD: the connections its datagrams went out on (emu_fabric_send_dgram),
	 * one reference each, dropped at RESET and destroy */
	struct emu_conn *dgram[EMU_DGRAM_CONNS];
	unsigned int dgram_next; /* the slot a new destination takes */
};

struct emu_channel {
	struct ibv_comp_channel ibch; /* fd = q.fd */
	struct emu_evq q;             /* completion events: element.cq names the CQ */
};

/* Process-wide NIC: devices and object tables (the workers are worker.c's). */
struct emu_nic {
	pthread_mutex_t lock; /* control path only: see the threading note at the top */
	int num_devices;
	struct emu_device devices[EMU_MAX_DEVICES];
	struct ibv_device *dev_list[EMU_MAX_DEVICES + 1];
	struct emu_qp *qps[EMU_MAX_QP];         /* by qpn - EMU_QPN_BASE */
	struct emu_srq *srqs[EMU_MAX_SRQ];      /* by srqn */
	struct emu_mr *_Atomic mrs[EMU_MAX_MR]; /* by key >> 8 */
	struct emu_cq *cqs[EMU_MAX_CQ];         /* by cqn */
	uint32_t next_pdn;
};
extern struct emu_nic emu_nic;

/* pd.c: the PD with number pdn (under nic.lock), or NULL. */
struct emu_pd *emu_pd_lookup(uint32_t pdn);

/* qp.c: an RC QP over queues the caller placed (DEVX): RQ of rq_cnt WQEs of
 * rq_stride bytes and SQ of sq_cnt basic blocks (either may be 0), doorbell
 * record dbrec, doorbell register at uar + GNIC_MLX5_BF_OFFSET. NULL + *err. */
struct emu_qp_bufs {
	void *rq_buf, *sq_buf;
	uint32_t rq_cnt, rq_stride, sq_cnt;
	__be32 *dbrec;
	void *uar;
	bool scat_recv, scat_req;
};
struct emu_qp *emu_create_qp_ext(struct emu_context *ctx, struct emu_pd *pd, struct emu_cq *scq,
                                 struct emu_cq *rcq, const struct emu_qp_bufs *b, int *err);
/* cq.c: a CQ over a ring the caller placed (DEVX): cqe_cnt (a power of two)
 * 64-byte CQEs at buf, doorbell record dbrec. 0 or an errno (cq freed). */
int emu_cq_init_ext(struct emu_cq *cq, struct ibv_context *context, void *buf, uint32_t cqe_cnt,
                    __be32 *dbrec, bool ignore_overrun);

/* nic.c */
int emu_nic_init(void);  /* idempotent; devices + config */
void emu_nic_lock(void); /* control path only */
void emu_nic_unlock(void);
struct emu_qp *emu_qp_lookup(uint32_t qpn); /* NULL if none */
struct emu_mr *emu_mr_lookup(uint32_t key); /* NULL if none */
uint64_t emu_now_ns(void);
void *emu_alloc_pages(size_t size); /* zeroed, whole pages of its own; NULL on failure */

/* engine.c */
int emu_engine_start(void);              /* with the first open context: every worker */
void emu_engine_stop(void);              /* with the last close */
void emu_engine_kick(struct emu_qp *qp); /* software rang qp's doorbell: wake its worker */
/* Called by qp.c with nic.lock and the QP's worker lock held (emu_qp_ctl_lock);
 * each goes to the QP type's table
 * (qp_ops.h). qp_add allocates the engine's per-QP state (0 or -errno);
 * qp_state runs after the verbs side committed a state change (for RC:
 * RESET clears engine state, RTR attaches the fabric, RTS arms the
 * requester, ERR starts the flush). */
int emu_engine_qp_add(struct emu_qp *qp);
void emu_engine_qp_remove(struct emu_qp *qp);
void emu_engine_qp_state(struct emu_qp *qp, enum ibv_qp_state old_state);

/* cqe.c: the engine's CQE writer. Returns false if the CQ overran. */
struct emu_cqe_info {
	uint8_t opcode;     /* GNIC_MLX5_CQE_* */
	uint8_t wqe_opcode; /* requester: GNIC_MLX5_OPCODE_* */
	uint8_t syndrome;   /* error CQEs */
	uint8_t vendor_syndrome;
	uint16_t wqe_counter;
	uint32_t qpn;
	uint32_t byte_cnt;
	uint32_t imm; /* as it sits in the WQE (already big-endian) */
	bool solicited;
	const void *inl; /* scatter-to-CQE: inl_len (<= 32) data bytes for the CQE */
	uint32_t inl_len;
	/* responder CQEs of UD QPs (av.h's emu_cqe_resp), host order */
	uint32_t flags_rqpn;
	uint16_t slid;
	uint8_t l3_hdr_type;
	/* a receive CQE of an Ethernet RQ (RAW_PACKET QP, raw.c): srqn_uidx
	 * names the QP, sop_drop_qpn carries flow_tag, and the header types and
	 * checksum bits (gnic_mlx5.h) are set */
	bool eth;
	uint32_t flow_tag;
	uint8_t hds_ip_ext, l4_hdr_type_etc;
	/* a receive CQE of a WQ (rwq_stride.c): a striding RQ's WQE index (its
	 * wqe_counter then holds the stride index), and the RSS hash */
	bool mprq;
	uint16_t wqe_id;
	uint32_t rss_hash;
	uint8_t rss_htype;
};
bool emu_cqe_write(struct emu_cq *cq, const struct emu_cqe_info *info);
/* A QP's CQE: false if the CQ is (or just became) full, and then qp is put in
 * ERR (why is logged) before IBV_EVENT_CQ_ERR is raised. */
bool emu_qp_cqe_write(struct emu_qp *qp, struct emu_cq *cq, const struct emu_cqe_info *info,
                      const char *why);

void emu_cqe_lock(struct emu_cq *cq); /* the CQ's write lock (cqe.c) */
void emu_cqe_unlock(struct emu_cq *cq);

/* cq.c: drop the CQEs of QP qpn that software has not polled yet (destroy
 * and reset of that QP, like mlx5's cq clean). Called with the QP's worker
 * lock held; takes the CQ's write lock. */
void emu_cq_clean(struct emu_cq *cq, uint32_t qpn, struct emu_srq *srq);

/* recv.c: the responder's receive queue, the QP's RQ or its SRQ (the QP's
 * worker; an SRQ's QPs all share one worker, worker.c). emu_recv_peek: the WQE the next receive
 * takes (false: none posted). emu_recv_take: take it (it was peeked), returning its index for the
 * CQE; an SRQ's armed limit may raise IBV_EVENT_SRQ_LIMIT_REACHED. */
bool emu_recv_peek(struct emu_qp *qp, struct emu_recv_wqe *w);
uint16_t emu_recv_take(struct emu_qp *qp);

/* srq.c: a receive CQE of an SRQ WQE was read (poll_cq, CQ clean): the WQE
 * goes back to the free list. emu_srq_wqe: WQE idx's data segments. */
void emu_srq_free_wqe(struct emu_srq *srq, uint16_t idx);
uint16_t emu_srq_next_index(const struct emu_srq *srq, uint32_t idx);
struct gnic_mlx5_data_seg *emu_srq_wqe(const struct emu_srq *srq, uint16_t idx, unsigned *nseg);

/* qp.c: the control path's lock for a change to qp: nic.lock, then qp's
 * worker lock. */
void emu_qp_ctl_lock(struct emu_qp *qp);
void emu_qp_ctl_unlock(struct emu_qp *qp);
/* qp.c: the engine's own state change (any QP type): to ERR, logging why
 * the first time. */
void emu_qp_enter_error(struct emu_qp *qp, const char *why);

/* mr.c: key and bounds checks shared by requester and responder. */
enum { EMU_MR_BAD_KEY = -1, EMU_MR_BAD_RANGE = -2 }; /* emu_mr_check() failures */
int emu_mr_check(struct emu_pd *pd, uint32_t key, uint64_t addr, uint64_t len, int need_access,
                 struct emu_mr **out); /* 0, EMU_MR_BAD_KEY (no such key in pd) or
                                        * EMU_MR_BAD_RANGE (bounds or access), see mr.c */
int emu_mem_read(const struct emu_mr *mr, uint64_t addr, void *dst, uint64_t len);
int emu_mem_write(const struct emu_mr *mr, uint64_t addr, const void *src, uint64_t len);
/* Host memory to host memory as a NIC's DMA lands it: last byte last
 * (release), overlap allowed. */
void emu_mem_place(void *dst, const void *src, size_t len);
void *emu_mem_host_ptr(const struct emu_mr *mr, uint64_t addr); /* NULL if not host */

/* cuda.c: CUDA device memory, through the process's own libcuda.so.1 (never
 * required: without CUDA every address is host memory). */
/* devx_umem.c: a DEVX umem in GPU memory is seen through a host shadow of
 * the same layout: pull brings [p, p + len) of it up to date from the GPU,
 * push writes it out. 0, or -EIO (logged). */
int emu_devx_umem_pull(const struct emu_devx_umem *u, void *p, uint64_t len);
int emu_devx_umem_push(const struct emu_devx_umem *u, const void *p, uint64_t len);
int emu_cuda_lookup(uint64_t va, uint64_t len,
                    struct emu_cuda_ctx *c); /* 1 device, 0 host, -errno */
void emu_cuda_put(struct emu_cuda_ctx *c);   /* releases what the lookup retained */
int emu_cuda_read(void *cu_ctx, uint64_t dev_va, void *dst, uint64_t len);        /* 0 or -EIO */
int emu_cuda_write(void *cu_ctx, uint64_t dev_va, const void *src, uint64_t len); /* 0 or -EIO */
/* cuda.c: the asynchronous primitives of the engine's copy queue (dma.c).
 * Each makes ctx current for the call only. Calls that return a CUDA error
 * return it as is (> 0; emu_cuda_error_str names it), -EIO without a
 * driver. None waits. */
bool emu_cuda_async_ok(void); /* the driver has streams, events, async copies */
/* Changes whenever the emulator saw a context it used go away (the last
 * reference to a primary context released): streams, events and pinned
 * memory made in it are gone with it. */
unsigned emu_cuda_ctx_gen(void);
bool emu_cuda_batch_ok(void); /* ... and cuMemcpyBatchAsync */
const char *emu_cuda_error_str(int r);
bool emu_cuda_host_pinned(const void *p, uint64_t len); /* page-locked, known to CUDA */
int emu_cuda_stream_new(void *ctx, void **stream);
int emu_cuda_event_new(void *ctx, void **ev);
int emu_cuda_event_record(void *ctx, void *ev, void *stream);
int emu_cuda_query(void *ctx, void *ev, void *stream); /* 0 done, 1 not yet, or error */
void *emu_cuda_pinned_alloc(void *ctx, size_t n);      /* portable pinned memory, or NULL */
/* Is pinned p (emu_cuda_pinned_alloc's) at the same address on ctx's device? */
bool emu_cuda_pinned_mapped(void *ctx, void *p);
enum emu_cuda_kind { EMU_CUDA_HTOD, EMU_CUDA_DTOH, EMU_CUDA_DTOD };
struct emu_cuda_copy {
	uint64_t dst, src; /* device addresses, or host addresses as integers */
	uint64_t n;
	uint8_t kind;  /* enum emu_cuda_kind */
	void *src_ctx; /* DTOD: the source's context (peer copy when it differs) */
};
int emu_cuda_copy_async(void *ctx, void *stream, const struct emu_cuda_copy *c);
/* n copies as one cuMemcpyBatchAsync (no order among them); -ENOSYS
 * without it; *fail_idx: the copy that failed (SIZE_MAX: none named). */
int emu_cuda_copy_batch(void *ctx, void *stream, uint64_t *dsts, uint64_t *srcs, size_t *sizes,
                        size_t n, size_t *fail_idx);
/* n (1..EMU_CUDA_KCOPY_MAX) copies as one launch of the copy kernel
 * (copy_kernel.c), no order among them; addresses the device can reach
 * (its memory, mapped pinned memory). -ENOSYS when the kernel cannot be
 * loaded; ctx's stream must come from emu_cuda_stream_new. */
#define EMU_CUDA_KCOPY_MAX  168
#define EMU_CUDA_KCOPY_LAST (1ull << 63) /* in n: the last byte after the rest */
struct emu_cuda_kcopy {
	uint64_t dst, src, n;
};
int emu_cuda_copy_kernel(void *ctx, void *stream, const struct emu_cuda_kcopy *c, size_t n);
extern const char emu_copy_kernel_ptx[];

/* channel.c */
void emu_channel_notify(struct emu_cq *cq); /* engine: CQE written and armed */
void emu_async_event(struct emu_context *ctx, const struct ibv_async_event *ev);
/* At destroy, once the engine can no longer raise events for the object: drop
 * its unread events; return how many were handed out (to wait for). */
uint32_t emu_channel_drop(struct emu_cq *cq);
uint32_t emu_async_drop(struct emu_context *ctx, const void *owner, const uint32_t *reads);
void emu_events_wait(pthread_mutex_t *mutex, pthread_cond_t *cond, const uint32_t *completed,
                     uint32_t reported);

/* gid helpers (device.c). A port's GID table is that of a RoCE port with
 * one IPv4 address, as the kernel fills it: 0 RoCE v1 fe80::<EUI-64 of the
 * MAC>, 1 the same as RoCE v2, 2 RoCE v1 ::ffff:<ipv4>, 3 the same as RoCE
 * v2; entries 4 .. EMU_GID_TBL_LEN - 1 are empty. Every entry names the
 * device's fabric address (the MAC is made of its IPv4 address, and every
 * device listens on the fabric port GNIC_EMU_PORT). */
#define EMU_GID_TBL_LEN 256 /* gid_tbl_len of a ConnectX RoCE port */
#define EMU_GID_VALID   4   /* the entries in use */
/* On InfiniBand (GNIC_EMU_LINK=ib) the table has one entry, 0: fe80:: +
 * the port GUID, type IB; the port has a LID, the low 16 bits of the IPv4
 * address (a unicast LID), and the subnet is the /16 around it, so a DLID
 * names the device at <the /16>.<lid>, as a subnet manager's routes would. */
#define EMU_LID_UNICAST_MAX 0xbfff
uint16_t emu_device_lid(const struct emu_device *dev); /* 0 on RoCE */
/* The fabric identity of the device with LID lid in dev's subnet. */
void emu_lid_identity(const struct emu_device *dev, uint16_t lid, union ibv_gid *id);
/* Entry index of dev's table: 0, -ENODATA (empty) or -EINVAL (no such). */
int emu_gid_entry(const struct emu_device *dev, uint32_t index, union ibv_gid *gid,
                  enum ibv_gid_type *type);
/* The fabric identity of the device at addr (the handshake's GID). */
void emu_gid_make(union ibv_gid *gid, const struct sockaddr_in *addr);
/* The fabric address a GID names: a table entry of some device, or an
 * identity. 0 or -EINVAL. */
int emu_gid_to_addr(const union ibv_gid *gid, struct sockaddr_in *addr);
/* The identity of the device gid names; 0 or -EINVAL. */
int emu_gid_identity(const union ibv_gid *gid, union ibv_gid *id);
/* The in-process device gid names (an entry or its identity), or NULL. */
struct emu_device *emu_device_by_gid(const union ibv_gid *gid);

/* ---- verbs entry points ------------------------------------------------
 * gemu_* have exactly the signatures of the libibverbs / mlx5dv calls they
 * implement and are the only symbols libgnic_emu.so exports; the shims
 * (verbs_shim.c, mlx5_shim.c) forward to them, and libgnic may dlsym them.
 * Conventions are libibverbs': create calls return NULL and set errno, int
 * calls return 0 or a positive errno, post calls also set *bad_wr. */
/* device.c */
EMU_EXPORT struct ibv_device **gemu_get_device_list(int *num_devices);
EMU_EXPORT void gemu_free_device_list(struct ibv_device **list);
EMU_EXPORT const char *gemu_get_device_name(struct ibv_device *device);
EMU_EXPORT __be64 gemu_get_device_guid(struct ibv_device *device);
EMU_EXPORT int gemu_get_device_index(struct ibv_device *device);
EMU_EXPORT struct ibv_context *gemu_open_device(struct ibv_device *device);
EMU_EXPORT int gemu_close_device(struct ibv_context *context);
EMU_EXPORT int gemu_query_device(struct ibv_context *context, struct ibv_device_attr *attr);
EMU_EXPORT int gemu_query_device_ex(struct ibv_context *context,
                                    const struct ibv_query_device_ex_input *input,
                                    struct ibv_device_attr_ex *attr, size_t attr_size);
EMU_EXPORT int gemu_query_port(struct ibv_context *context, uint8_t port_num,
                               struct ibv_port_attr *attr, size_t attr_len);
EMU_EXPORT int gemu_query_gid(struct ibv_context *context, uint8_t port_num, int index,
                              union ibv_gid *gid);
EMU_EXPORT int gemu_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
                                 struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size);
EMU_EXPORT int gemu_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
                               __be16 *pkey);
/* The identity files of an emulated device's sysfs directory (board_id,
 * fw_ver, node_guid, ...): length, or -ENODEV (not an emulated device's
 * directory), -ENOENT (no such file), -EOVERFLOW (buf too small). */
EMU_EXPORT int gemu_read_sysfs_attr(const char *dir, const char *file, char *buf, size_t size);
/* pd.c */
EMU_EXPORT struct ibv_pd *gemu_alloc_pd(struct ibv_context *context);
EMU_EXPORT int gemu_dealloc_pd(struct ibv_pd *pd);
/* pd.c: parent domains; td.c: thread domains (the verbs_context ops that
 * verbs.h's inline ibv_alloc_parent_domain / ibv_alloc_td / ibv_dealloc_td
 * call; ibv_dealloc_pd frees a parent domain) */
struct ibv_parent_domain_init_attr;
struct ibv_td_init_attr;
EMU_EXPORT struct ibv_pd *gemu_alloc_parent_domain(struct ibv_context *context,
                                                   struct ibv_parent_domain_init_attr *attr);
EMU_EXPORT struct ibv_td *gemu_alloc_td(struct ibv_context *context, struct ibv_td_init_attr *attr);
EMU_EXPORT int gemu_dealloc_td(struct ibv_td *td);
/* mr.c */
EMU_EXPORT struct ibv_mr *gemu_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
                                            uint64_t iova, unsigned int access);
EMU_EXPORT struct ibv_mr *gemu_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
                                             uint64_t iova, int fd, int access);
EMU_EXPORT int gemu_dereg_mr(struct ibv_mr *mr);
/* cq.c */
EMU_EXPORT struct ibv_cq *gemu_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                                         struct ibv_comp_channel *channel, int comp_vector);
EMU_EXPORT int gemu_destroy_cq(struct ibv_cq *cq);
EMU_EXPORT int gemu_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
EMU_EXPORT int gemu_req_notify_cq(struct ibv_cq *cq, int solicited_only);
/* cq.c, for cq_ex.c: the poll loop's pieces. emu_cq_parse decodes CQE n
 * (retiring its WQE, copying scatter-to-CQE data) into wc: 1, or 0 when the
 * CQE carries no completion (its QP is gone); emu_cq_next is CQE n if
 * software owns it; emu_cq_publish_ci writes ci to the doorbell record. */
struct gnic_mlx5_cqe64 *emu_cq_next(struct emu_cq *cq, uint32_t n);
int emu_cq_parse(struct emu_cq *cq, const struct gnic_mlx5_cqe64 *cqe, struct ibv_wc *wc);
void emu_cq_publish_ci(struct emu_cq *cq);
int emu_cq_init(struct emu_cq *cq, struct ibv_context *context, int cqe, void *cq_context,
                struct ibv_comp_channel *channel, int comp_vector);
/* cq_ex.c */
EMU_EXPORT struct ibv_cq_ex *gemu_create_cq_ex(struct ibv_context *context,
                                               struct ibv_cq_init_attr_ex *attr);
struct mlx5dv_cq_init_attr;
EMU_EXPORT struct ibv_cq_ex *gemu_mlx5dv_create_cq(struct ibv_context *context,
                                                   struct ibv_cq_init_attr_ex *attr,
                                                   struct mlx5dv_cq_init_attr *mlx5_attr);
/* channel.c */
EMU_EXPORT struct ibv_comp_channel *gemu_create_comp_channel(struct ibv_context *context);
EMU_EXPORT int gemu_destroy_comp_channel(struct ibv_comp_channel *channel);
EMU_EXPORT int gemu_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
                                 void **cq_context);
EMU_EXPORT void gemu_ack_cq_events(struct ibv_cq *cq, unsigned int nevents);
EMU_EXPORT int gemu_get_async_event(struct ibv_context *context, struct ibv_async_event *event);
EMU_EXPORT void gemu_ack_async_event(struct ibv_async_event *event);
/* qp.c */
EMU_EXPORT struct ibv_qp *gemu_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
EMU_EXPORT struct ibv_qp *gemu_create_qp_ex(struct ibv_context *context,
                                            struct ibv_qp_init_attr_ex *attr);
/* What mlx5dv_create_qp's create flags ask of scatter-to-CQE (qp.c). */
enum emu_scatter { EMU_SCATTER_DEFAULT, EMU_SCATTER_DISABLE, EMU_SCATTER_ALLOW };
struct ibv_qp *emu_create_qp(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr,
                             enum emu_scatter scatter);
/* The same with mlx5dv_create_qp's send_ops_flags (0: none). */
struct ibv_qp *emu_create_qp_dv(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr,
                                enum emu_scatter scatter, uint64_t dv_ops);
EMU_EXPORT int gemu_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
EMU_EXPORT int gemu_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
                             struct ibv_qp_init_attr *init_attr);
EMU_EXPORT int gemu_destroy_qp(struct ibv_qp *qp);
/* post.c: the WQE encoder, for ibv_post_send and the ibv_wr_* calls. The
 * caller holds sq.lock. emu_post_one writes one WQE at sq.head and moves it
 * on (0), or writes nothing: EINVAL (bad opcode, flags, SGEs, inline data),
 * ENOMEM (the SQ is full). The doorbell then carries the newest WQE's first
 * 8 bytes. emu_send_allowed: may a QP in this state post sends? */
int emu_post_one(struct emu_qp *qp, const struct emu_send_req *r, uint64_t *ctrl8);
uint64_t emu_send_inline_len(const struct emu_send_req *r);
void emu_ring_send_doorbell(struct emu_qp *qp, uint64_t ctrl8);
/* The same for nreq WQEs: one (of 2 to 16 segments) is copied whole into a
 * BlueFlame register, as rdma-core's post_send_db does. */
void emu_ring_send_doorbell_nreq(struct emu_qp *qp, uint64_t ctrl8, unsigned int nreq);
bool emu_send_allowed(int state);
/* qp_ex.c: the ibv_wr_* function pointers of a wr_api QP (at creation). */
void emu_qp_ex_init(struct emu_qp *qp);
EMU_EXPORT struct ibv_qp_ex *gemu_qp_to_qp_ex(struct ibv_qp *qp);
/* qp_ex.c: mlx5dv_create_qp's send_ops_flags (MLX5DV_QP_EX_WITH_*) as mlx5
 * judges them for RC on this device: 0 or EOPNOTSUPP. emu_qp_ex_init_dv sets
 * the mlx5dv_wr_* pointers they give an RC QP (at creation). */
int emu_qp_ex_check_dv(uint64_t dv_ops);
void emu_qp_ex_init_dv(struct emu_qp *qp, uint64_t dv_ops);
EMU_EXPORT struct mlx5dv_qp_ex *gemu_mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qpx);
/* post.c */
EMU_EXPORT int gemu_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
EMU_EXPORT int gemu_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
/* srq.c */
EMU_EXPORT struct ibv_srq *gemu_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
EMU_EXPORT int gemu_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int attr_mask);
EMU_EXPORT int gemu_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
EMU_EXPORT int gemu_destroy_srq(struct ibv_srq *srq);
EMU_EXPORT int gemu_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
                                  struct ibv_recv_wr **bad);
/* ah.c: address handles, as rdma-core's mlx5 makes them */
EMU_EXPORT struct ibv_ah *gemu_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
EMU_EXPORT int gemu_destroy_ah(struct ibv_ah *ah);
EMU_EXPORT int gemu_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
                                    struct ibv_wc *wc, struct ibv_grh *grh,
                                    struct ibv_ah_attr *ah_attr);
EMU_EXPORT struct ibv_ah *gemu_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
                                                 struct ibv_grh *grh, uint8_t port_num);
/* dv.c (mlx5 direct verbs); obj/attr are struct mlx5dv_obj / mlx5dv_context */
struct mlx5dv_obj;
struct mlx5dv_context;
EMU_EXPORT int gemu_mlx5dv_init_obj(struct mlx5dv_obj *obj, uint64_t obj_type);
EMU_EXPORT int gemu_mlx5dv_query_device(struct ibv_context *context, struct mlx5dv_context *attr);
EMU_EXPORT bool gemu_mlx5dv_is_supported(struct ibv_device *device);
struct mlx5dv_qp_init_attr;
EMU_EXPORT struct ibv_qp *gemu_mlx5dv_create_qp(struct ibv_context *context,
                                                struct ibv_qp_init_attr_ex *attr,
                                                struct mlx5dv_qp_init_attr *mlx5_attr);
/* devx.c, devx_umem.c, devx_uar.c: DEVX (devx.h) */
struct mlx5dv_context_attr;
struct mlx5dv_devx_obj;
struct mlx5dv_devx_umem;
struct mlx5dv_devx_umem_in;
struct mlx5dv_devx_uar;
EMU_EXPORT struct ibv_context *gemu_mlx5dv_open_device(struct ibv_device *device,
                                                       struct mlx5dv_context_attr *attr);
EMU_EXPORT int gemu_mlx5dv_devx_general_cmd(struct ibv_context *context, const void *in,
                                            size_t inlen, void *out, size_t outlen);
EMU_EXPORT struct mlx5dv_devx_obj *gemu_mlx5dv_devx_obj_create(struct ibv_context *context,
                                                               const void *in, size_t inlen,
                                                               void *out, size_t outlen);
EMU_EXPORT int gemu_mlx5dv_devx_obj_query(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen,
                                          void *out, size_t outlen);
EMU_EXPORT int gemu_mlx5dv_devx_obj_modify(struct mlx5dv_devx_obj *obj, const void *in,
                                           size_t inlen, void *out, size_t outlen);
EMU_EXPORT int gemu_mlx5dv_devx_obj_destroy(struct mlx5dv_devx_obj *obj);
EMU_EXPORT int gemu_mlx5dv_devx_query_eqn(struct ibv_context *context, uint32_t vector,
                                          uint32_t *eqn);
EMU_EXPORT struct mlx5dv_devx_umem *
gemu_mlx5dv_devx_umem_reg(struct ibv_context *context, void *addr, size_t size, uint32_t access);
EMU_EXPORT struct mlx5dv_devx_umem *gemu_mlx5dv_devx_umem_reg_ex(struct ibv_context *context,
                                                                 struct mlx5dv_devx_umem_in *in);
EMU_EXPORT int gemu_mlx5dv_devx_umem_dereg(struct mlx5dv_devx_umem *umem);
EMU_EXPORT struct mlx5dv_devx_uar *gemu_mlx5dv_devx_alloc_uar(struct ibv_context *context,
                                                              uint32_t flags);
EMU_EXPORT void gemu_mlx5dv_devx_free_uar(struct mlx5dv_devx_uar *uar);
/* devx.c: destroy what a DevX context still has (its close). */
void emu_devx_close(struct emu_context *ctx);
/* worker.c: the engine worker serving qp (0 .. GNIC_EMU_THREADS-1), or -1
 * for a QP that is not gnic-emu's; for tests and diagnostics. */
EMU_EXPORT int gemu_qp_engine_worker(struct ibv_qp *qp);
/* worker.c: requests the workers took from a fabric connection and handed
 * to another worker's inbox since the process began (their QP is served by
 * another worker than the connection); for tests and diagnostics. */
EMU_EXPORT uint64_t gemu_engine_forwarded(void);
/* requester.c: doorbell register writes naming a QP that the NIC dropped
 * because they do not match its SQ (a BlueFlame copy torn by another QP's
 * write, say): of one QP (-1 if not gnic-emu's), and of every QP since the
 * process began; for tests and diagnostics. */
EMU_EXPORT int64_t gemu_qp_bf_dropped(struct ibv_qp *qp);
EMU_EXPORT uint64_t gemu_engine_bf_dropped(void);
/* Is this ibv_context one of gnic-emu's? (libgnic asks before using gemu_*) */
EMU_EXPORT bool gemu_is_emu_context(struct ibv_context *context);

static inline struct emu_context *to_ectx(struct ibv_context *c)
{
	return container_of(c, struct emu_context, vctx.context);
}
static inline struct emu_qp *to_eqp(struct ibv_qp *q)
{
	return container_of(q, struct emu_qp, ibqp);
}
static inline struct emu_cq *to_ecq(struct ibv_cq *c)
{
	return container_of(c, struct emu_cq, ibcq);
}
static inline struct emu_mr *to_emr(struct ibv_mr *m)
{
	return container_of(m, struct emu_mr, ibmr);
}
/* The protection domain: a parent domain's own PD (as rdma-core's to_mpd). */
static inline struct emu_pd *to_epd(struct ibv_pd *p)
{
	struct emu_pd *pd = container_of(p, struct emu_pd, ibpd);

	return pd->protection ? pd->protection : pd;
}
static inline struct emu_ah *to_eah(struct ibv_ah *a)
{
	return container_of(a, struct emu_ah, ibah);
}
static inline struct emu_srq *to_esrq(struct ibv_srq *s)
{
	return container_of(s, struct emu_srq, ibsrq);
}

#endif /* GNIC_EMU_H */
