/* SPDX-License-Identifier: MIT */
/*
 * A QP type's behaviour in the engine: one table per type (RC: rc.c), set
 * when the QP is created and never changed. The engine (engine.c) and the
 * fabric reach a QP only through qp->ops, so a new type (UC, UD, raw
 * Ethernet) is a new file with its own table and no new branch in theirs.
 *
 * Every operation runs on the QP's engine worker or on the control path,
 * with that worker's lock held (emu.h's threading note), and every one but
 * land_dest is required.
 */
#ifndef GNIC_EMU_QP_OPS_H
#define GNIC_EMU_QP_OPS_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

struct emu_qp;
struct emu_msg;
struct emu_reply_path;

struct emu_qp_ops {
	/* The engine's per-QP state of a new QP, as after RESET: 0 or -errno
	 * (emu_engine_qp_add). remove frees it, and detaches the QP from the
	 * fabric, before the QP is freed (emu_engine_qp_remove). */
	int (*add)(struct emu_qp *qp);
	void (*remove)(struct emu_qp *qp);
	/* After the verbs side committed a state change (emu_engine_qp_state):
	 * a change to RESET must leave the engine state as add() made it. */
	void (*state_change)(struct emu_qp *qp, enum ibv_qp_state old_state);
	/* One engine pass over the QP, whatever its state: rung WQEs, timers,
	 * flushing in ERR. Returns work done (0: nothing to do). */
	int (*progress)(struct emu_qp *qp, uint64_t now_ns);
	/* Responder side: request m for this QP arrived along from (a
	 * connection, or a requester of this process). false: it needs its
	 * data, which the fabric has not buffered (payload NULL: see
	 * emu_requester_on_response in rc.h); nothing was done then. */
	bool (*on_request)(struct emu_qp *qp, struct emu_reply_path *from, const struct emu_msg *m,
	                   const void *payload);
	/* Requester side: response m to one of this QP's requests; false as
	 * for on_request. */
	bool (*on_response)(struct emu_qp *qp, const struct emu_msg *m, const void *payload);
	/* Optional. Large request or response m, which on_request or
	 * on_response just declined without its data: the host address its
	 * m->len bytes of data go to, one contiguous stretch of a live MR, when
	 * they may be received straight there (fabric_land.c), else NULL. Asked
	 * again before every read of the data (start false): NULL then when the
	 * QP, its state, the WQE or the MR changed. on_request / on_response
	 * later get this address as the payload. */
	void *(*land_dest)(struct emu_qp *qp, const struct emu_msg *m, bool start);
};

/* For the connected types' state_change (RC, UC) at INIT -> RTR: the
 * responder expects the QP's rq_psn next, and the QP gets its fabric
 * connection to the destination; a destination GID that is not a gnic-emu
 * address is warned about, saying what becomes of the traffic sent there
 * (what "requests", fate "will time out"). engine.c. */
void emu_qp_connected_rtr(struct emu_qp *qp, const char *what, const char *fate);

extern const struct emu_qp_ops emu_rc_qp_ops;  /* rc.c */
extern const struct emu_qp_ops emu_uc_qp_ops;  /* uc.c */
extern const struct emu_qp_ops emu_ud_qp_ops;  /* ud.c */
extern const struct emu_qp_ops emu_raw_qp_ops; /* raw.c: RAW_PACKET */

#endif /* GNIC_EMU_QP_OPS_H */
