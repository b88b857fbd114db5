/* SPDX-License-Identifier: MIT */
/*
 * What the unreliable QP types (UC: uc.c, UD: ud.c) share: a send queue
 * that completes each WQE once it is on the wire (no ACKs, no
 * retransmission, no outstanding ring), and the receive side's scatter and
 * CQE. Each type's table (qp_ops.h) supplies how one WQE becomes a message
 * and what a message does at the receiver. Runs on the QP's worker with its
 * lock held, like the rest of the engine.
 */
#ifndef GNIC_EMU_UNREL_H
#define GNIC_EMU_UNREL_H

#include "emu.h"
#include "wqe.h"

/* Send WQE w (not a NOP) of qp: GNIC_MLX5_SYND_OK once it went out (or was
 * lost on the way: unreliable), another syndrome for a WQE that fails
 * locally (the QP then goes to ERR, as hardware's), or -EAGAIN when the
 * output is full (nothing done; it is tried again). */
typedef int (*emu_unrel_send_fn)(struct emu_qp *qp, struct emu_wqe *w);

/* One engine pass: in RTS the rung WQEs in order, each completed (a CQE if
 * signaled) as it is sent; in ERR the SQ flushed, then the receives. */
int emu_unrel_progress(struct emu_qp *qp, emu_unrel_send_fn send);
/* The engine state as after RESET. */
void emu_unrel_reset(struct emu_qp *qp);

/* Bytes the receive WQE w holds. */
uint64_t emu_unrel_recv_room(const struct emu_recv_wqe *w);
/* Write a then b (either may be empty) from the start of w's buffers:
 * GNIC_MLX5_SYND_OK, LOCAL_LENGTH (does not fit: nothing written) or
 * LOCAL_PROT (a bad key or range). */
uint8_t emu_unrel_scatter(struct emu_qp *qp, const struct emu_recv_wqe *w, const void *a,
                          uint32_t alen, const void *b, uint32_t blen);
/* The receive CQE of the WQE just peeked (which it takes), ci's fields
 * otherwise as given; an error CQE puts the QP in ERR first. */
void emu_unrel_recv_cqe(struct emu_qp *qp, struct emu_cqe_info *ci);

#endif /* GNIC_EMU_UNREL_H */
