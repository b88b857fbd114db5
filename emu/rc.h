/* SPDX-License-Identifier: MIT */
/*
 * RC, the reliable connected QP type: its requester (requester.c) and
 * responder (responder.c), which the engine and the fabric reach only
 * through emu_rc_qp_ops (rc.c, qp_ops.h). Everything here runs with the
 * QP's worker lock held (worker.h).
 */
#ifndef GNIC_EMU_RC_H
#define GNIC_EMU_RC_H

#include "emu.h"

struct emu_msg;
struct emu_reply_path;

/* requester.c: drain rung WQEs, timers, responses. Returns work done. */
int emu_requester_progress(struct emu_qp *qp, uint64_t now_ns);
void emu_requester_reset(struct emu_qp *qp);
/* Also for the unreliable types (unrel.c) and the SQ of a RAW_PACKET QP
 * (raw.c, which keeps its consumer in req.sq_ci): the newest producer index
 * rung (doorbell record or register); the key and bounds checks of a WQE's local
 * buffers (a syndrome: LOCAL_PROT, LOCAL_LENGTH past 2 GiB, or OK); its
 * payload as one buffer (inline data, a host buffer as is, else the
 * worker's gather scratch: NULL when that fails), *src the host MR it lies
 * in or NULL. */
struct emu_sgl;
uint16_t emu_sq_doorbell(struct emu_qp *qp);
uint8_t emu_requester_check_sgl(struct emu_qp *qp, struct emu_sgl *s, int need);
const void *emu_requester_gather(struct emu_qp *qp, const struct emu_sgl *s, struct emu_mr **src);
/* A response or request whose data the fabric has not buffered (a large
 * message: payload NULL, m->len > 0) is carried out only as far as it goes
 * without its data: refused, dropped, answered as a duplicate or RNR-NAKed,
 * and then true is returned (the fabric skips the data as it arrives). false
 * means it would need its data: nothing was done, and it comes again with
 * the data. With the payload these return true. */
bool emu_requester_on_response(struct emu_qp *qp, const struct emu_msg *m, const void *payload);
/* qp_ops.h's land_dest: of a READ response (requester.c), of a WRITE or
 * SEND (responder.c); emu_rc_land_dest picks. */
void *emu_requester_land_dest(struct emu_qp *qp, const struct emu_msg *m);
void *emu_responder_land_dest(struct emu_qp *qp, const struct emu_msg *m, bool start);
void *emu_rc_land_dest(struct emu_qp *qp, const struct emu_msg *m, bool start);

/* responder.c: execute one request for qp; the reply goes back along from
 * (emu_fabric_reply). */
bool emu_responder_on_request(struct emu_qp *qp, struct emu_reply_path *from,
                              const struct emu_msg *m, const void *payload);
int emu_responder_progress(struct emu_qp *qp); /* flush receives in ERR */
void emu_responder_reset(struct emu_qp *qp);

#endif /* GNIC_EMU_RC_H */
