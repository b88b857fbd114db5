// SPDX-License-Identifier: MIT
/*
 * Fuzz target "devx": gnic-emu's PRM command decoder (emu/devx_cmd.c) and
 * the CQ and QP commands behind it (emu/devx_cq.c, emu/devx_qp.c), through
 * the mlx5dv_devx_* calls.
 *
 * Once per process: a DEVX context with a PD, a umem, a UAR, a CQ and an RC
 * QP (tests/emu/devx_q.c). Per input (all integers little-endian):
 *
 *   byte 0     the call: 0 general_cmd, 1 obj_create, 2 obj_modify on the QP,
 *              3 obj_query on the QP, 4 obj_query on the CQ (others: mod 5)
 *   byte 1     bit 0: write the harness's object ids (PD, umem, UAR, EQ, CQ,
 *              QP) into the inbox where the opcode's layout has them, so
 *              that mutations reach past the lookups
 *   bytes 2-3  inlen (the rest of the input is the inbox, shorter or longer)
 *   bytes 4-5  outlen (at most OUT_MAX)
 *   bytes 6-   the inbox
 *
 * The inbox is a heap copy of exactly inlen bytes and the outbox has guard
 * bytes after outlen, so a read or write past either is a sanitizer report
 * or a broken guard. Invariants: the call returns 0, EINVAL or EREMOTEIO;
 * 0 means status 0, EREMOTEIO a non-zero status and syndrome, EINVAL an
 * outbox left as it was; nothing past outlen changes; an object made is
 * destroyed again at once (0); the harness's QP always answers QUERY_QP.
 */
#include <stdarg.h>

#include "devx_q.h"
#include "prm.h"

#define OUT_MAX   8192
#define GUARD     64
#define FILL      0xab
#define HDR_BYTES 6

static struct dq h;
static bool ready;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "fuzz_devx: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

static void setup(void)
{
	if (ready)
		return;
	dq_create(&h, dq_open());
	ready = true;
}

/* Where the opcode's layout names objects: the harness's own. */
static void patch_ids(uint8_t *in, size_t len)
{
	uint8_t full[PRM_QP_IN_BYTES] = {0};
	uint8_t *cqc = prm_at(full, PRM_CREATE_CQ_IN_CQC_OFF);
	uint8_t *qpc = prm_at(full, PRM_QP_IN_QPC_OFF);
	size_t n = len < sizeof(full) ? len : sizeof(full);
	uint32_t opcode;

	memcpy(full, in, n);
	opcode = prm_get(full, PRM_IN_OPCODE);
	if (opcode == PRM_CMD_CREATE_CQ) {
		prm_set(cqc, PRM_CQC_UAR_PAGE, h.uar->page_id);
		prm_set(cqc, PRM_CQC_C_EQN, h.eqn);
		prm_set(cqc, PRM_CQC_DBR_UMEM_ID, h.umem->umem_id);
		prm_set(full, PRM_CREATE_CQ_IN_UMEM_ID, h.umem->umem_id);
	} else if (opcode == PRM_CMD_CREATE_QP) {
		prm_set(qpc, PRM_QPC_PD, h.pdn);
		prm_set(qpc, PRM_QPC_UAR_PAGE, h.uar->page_id);
		prm_set(qpc, PRM_QPC_CQN_SND, h.cqn);
		prm_set(qpc, PRM_QPC_CQN_RCV, h.cqn);
		prm_set(qpc, PRM_QPC_DBR_UMEM_ID, h.umem->umem_id);
		prm_set(full, PRM_CREATE_QP_IN_UMEM_ID, h.umem->umem_id);
	} else if (opcode == PRM_CMD_QUERY_CQ) {
		prm_set(full, PRM_CQ_IN_CQN, h.cqn);
	} else {
		prm_set(full, PRM_QP_IN_QPN, h.qpn);
	}
	memcpy(in, full, n);
}

static void check_result(int ret, const uint8_t *out, size_t outlen, int call)
{
	for (size_t i = outlen; i < outlen + GUARD; i++)
		if (out[i] != FILL)
			die("call %d wrote past outlen %zu (byte %zu)", call, outlen, i);
	if (ret == EINVAL) {
		for (size_t i = 0; i < outlen; i++)
			if (out[i] != FILL)
				die("call %d: EINVAL but the outbox changed at %zu", call, i);
		return;
	}
	if (ret == 0 && prm_get(out, PRM_OUT_STATUS) != 0)
		die("call %d: 0 with status 0x%x", call, prm_get(out, PRM_OUT_STATUS));
	if (ret == EREMOTEIO && (!prm_get(out, PRM_OUT_STATUS) || !prm_get(out, PRM_OUT_SYND)))
		die("call %d: EREMOTEIO with status 0x%x syndrome 0x%x", call,
		    prm_get(out, PRM_OUT_STATUS), prm_get(out, PRM_OUT_SYND));
	if (ret != 0 && ret != EREMOTEIO)
		die("call %d returned %d (%s)", call, ret, strerror(ret));
}

static int run(int call, const uint8_t *in, size_t inlen, uint8_t *out, size_t outlen)
{
	struct mlx5dv_devx_obj *obj;

	switch (call) {
	case 0:
		return mlx5dv_devx_general_cmd(h.ctx, in, inlen, out, outlen);
	case 1:
		errno = 0;
		obj = mlx5dv_devx_obj_create(h.ctx, in, inlen, out, outlen);
		if (obj) {
			int r = mlx5dv_devx_obj_destroy(obj);

			if (r)
				die("destroying what obj_create made: %d", r);
			return 0;
		}
		return errno;
	case 2:
		return mlx5dv_devx_obj_modify(h.qp, in, inlen, out, outlen);
	case 3:
		return mlx5dv_devx_obj_query(h.qp, in, inlen, out, outlen);
	default:
		return mlx5dv_devx_obj_query(h.cq, in, inlen, out, outlen);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[OUT_MAX + GUARD];
	size_t inlen, outlen;
	uint8_t *in;
	int call, ret;

	if (size < HDR_BYTES)
		return 0;
	setup();
	call = data[0] % 5;
	inlen = (size_t)data[2] | (size_t)data[3] << 8;
	outlen = (size_t)data[4] | (size_t)data[5] << 8;
	if (inlen > size - HDR_BYTES)
		inlen = size - HDR_BYTES;
	if (outlen > OUT_MAX)
		outlen = OUT_MAX;
	in = malloc(inlen ? inlen : 1);
	if (!in)
		return 0;
	memcpy(in, data + HDR_BYTES, inlen);
	if (data[1] & 1)
		patch_ids(in, inlen);
	memset(out, FILL, sizeof(out));
	ret = run(call, in, inlen, out, outlen);
	check_result(ret, out, outlen, call);
	free(in);
	if (dq_query_state(&h, NULL) > PRM_QPS_ERR)
		die("the harness QP's state is out of range");
	return 0;
}
