/* SPDX-License-Identifier: MIT */
/*
 * The first error device code recorded on a QP, as numbers and as text.
 * The record is host memory (mapped into the GPU for a GPU context), so it
 * is read directly, also after the kernel ended or died.
 */
#include <stdio.h>
#include <string.h>

#include "gnic_int.h"

struct name {
	uint8_t code;
	const char *name;
};

static const struct name syndromes[] = {
    {GNIC_MLX5_SYND_LOCAL_LENGTH, "LOCAL_LENGTH_ERR"},
    {GNIC_MLX5_SYND_LOCAL_QP_OP, "LOCAL_QP_OP_ERR"},
    {GNIC_MLX5_SYND_LOCAL_PROT, "LOCAL_PROT_ERR"},
    {GNIC_MLX5_SYND_WR_FLUSH, "WR_FLUSH_ERR"},
    {GNIC_MLX5_SYND_MW_BIND, "MW_BIND_ERR"},
    {GNIC_MLX5_SYND_BAD_RESP, "BAD_RESP_ERR"},
    {GNIC_MLX5_SYND_LOCAL_ACCESS, "LOCAL_ACCESS_ERR"},
    {GNIC_MLX5_SYND_REMOTE_INVAL_REQ, "REMOTE_INVAL_REQ_ERR"},
    {GNIC_MLX5_SYND_REMOTE_ACCESS, "REMOTE_ACCESS_ERR"},
    {GNIC_MLX5_SYND_REMOTE_OP, "REMOTE_OP_ERR"},
    {GNIC_MLX5_SYND_TRANSPORT_RETRY_EXC, "TRANSPORT_RETRY_EXC_ERR"},
    {GNIC_MLX5_SYND_RNR_RETRY_EXC, "RNR_RETRY_EXC_ERR"},
    {GNIC_MLX5_SYND_REMOTE_ABORTED, "REMOTE_ABORTED_ERR"},
};

static const struct name opcodes[] = {
    {GNIC_MLX5_OPCODE_NOP, "NOP"},
    {GNIC_MLX5_OPCODE_SEND_INVAL, "SEND_INVAL"},
    {GNIC_MLX5_OPCODE_RDMA_WRITE, "RDMA_WRITE"},
    {GNIC_MLX5_OPCODE_RDMA_WRITE_IMM, "RDMA_WRITE_IMM"},
    {GNIC_MLX5_OPCODE_SEND, "SEND"},
    {GNIC_MLX5_OPCODE_SEND_IMM, "SEND_IMM"},
    {GNIC_MLX5_OPCODE_RDMA_READ, "RDMA_READ"},
    {GNIC_MLX5_OPCODE_ATOMIC_CS, "ATOMIC_CS"},
    {GNIC_MLX5_OPCODE_ATOMIC_FA, "ATOMIC_FA"},
    {GNIC_MLX5_OPCODE_ATOMIC_MASKED_CS, "ATOMIC_MASKED_CS"},
    {GNIC_MLX5_OPCODE_ATOMIC_MASKED_FA, "ATOMIC_MASKED_FA"},
};

static const char *lookup(const struct name *t, size_t n, uint8_t code)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].code == code)
			return t[i].name;
	return NULL;
}

const char *gnic_syndrome_name(uint8_t syndrome)
{
	const char *s = lookup(syndromes, sizeof(syndromes) / sizeof(syndromes[0]), syndrome);

	return s ? s : "unknown syndrome";
}

const char *gnic_opcode_name(uint8_t opcode)
{
	const char *s = lookup(opcodes, sizeof(opcodes) / sizeof(opcodes[0]), opcode);

	return s ? s : "unknown opcode";
}

static void cqe_text(const struct gnic_dev_err *e, char *buf, size_t size)
{
	char vendor[32] = "";

	if (e->vendor_syndrome)
		snprintf(vendor, sizeof(vendor), ", vendor syndrome 0x%02x", e->vendor_syndrome);
	if (e->cqe_opcode == GNIC_MLX5_CQE_RESP_ERR)
		snprintf(buf, size, "receive at RQ WQE %u: %s (syndrome 0x%02x%s)", e->wqe_counter,
		         gnic_syndrome_name(e->syndrome), e->syndrome, vendor);
	else
		snprintf(buf, size, "%s at WQE %u: %s (syndrome 0x%02x%s)",
		         gnic_opcode_name(e->opcode), e->wqe_counter,
		         gnic_syndrome_name(e->syndrome), e->syndrome, vendor);
}

static void text(const struct gnic_dev_err *e, uint64_t timeout_ns, char *buf, size_t size)
{
	switch ((int32_t)e->status) {
	case GNIC_DEV_OK:
		snprintf(buf, size, "no error");
		break;
	case GNIC_DEV_ERR_CQE:
		cqe_text(e, buf, size);
		break;
	case GNIC_DEV_ERR_TIMEOUT:
		snprintf(buf, size, "a device wait ran out after %llu ns (WQE %u)",
		         (unsigned long long)timeout_ns, e->wqe_counter);
		break;
	case GNIC_DEV_ERR_INVAL:
		snprintf(buf, size, "a device call got a bad argument (WQE %u)", e->wqe_counter);
		break;
	case GNIC_DEV_ERR_QP:
		snprintf(buf, size, "posted on a QP that had failed before");
		break;
	default:
		snprintf(buf, size, "unknown device status %d", (int32_t)e->status);
		break;
	}
}

GNIC_API gnic_status_t gnic_qp_error(struct gnic_qp *qp, struct gnic_qp_error *err)
{
	const struct gnic_dev_err *rec;
	struct gnic_dev_err e;

	if (!qp || !err)
		return gnic_error(GNIC_ERR_INVALID, "qp_error: NULL argument");
	/* GNIC_DB_PROXY: the proxy thread's record, or the device threads' */
	rec = qp->px ? gnic_proxy_err(qp) : qp->err;
	/* written once by the device, status last: acquire it, then the rest */
	e.status = __atomic_load_n(&rec->status, __ATOMIC_ACQUIRE);
	memcpy((char *)&e + sizeof(e.status), (const char *)rec + sizeof(e.status),
	       sizeof(e) - sizeof(e.status));
	memset(err, 0, sizeof(*err));
	err->dev_status = (int32_t)e.status;
	err->syndrome = e.syndrome;
	err->vendor_syndrome = e.vendor_syndrome;
	err->opcode = e.opcode;
	err->wqe_counter = e.wqe_counter;
	text(&e, qp->attr.timeout_ns, err->text, sizeof(err->text));
	return GNIC_OK;
}
