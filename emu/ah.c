/* SPDX-License-Identifier: MIT */
/*
 * Address handles: the address vector of a UD destination, in mlx5's layout
 * (av.h), made as rdma-core's mlx5_create_ah makes it. On RoCE a GRH is
 * required (EINVAL without), the SL sits in bits 3:1 of stat_rate_sl, the
 * GRH bit stays clear (every RoCE packet has one) and rmac is the
 * destination's MAC; on InfiniBand the DLID and source path bits are set,
 * the SL takes bits 3:0 and the GRH bit says whether one is sent. post_send
 * copies the 48 bytes into the WQE; the engine decodes them from there.
 *
 * ibv_init_ah_from_wc / ibv_create_ah_from_wc answer a received datagram as
 * libibverbs does: its source LID and SL, and from the GRH the peer's GID
 * (the IPv4 header's source address for RoCE v2 over IPv4).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "av.h"
#include "emu.h"

#define MAC_OUI0 0x02
#define MAC_OUI1 0x47 /* device.c's MAC: 02:47:<ipv4> */

static int check_ah_attr(struct emu_context *ctx, const struct ibv_ah_attr *a)
{
	struct sockaddr_in addr;
	enum ibv_gid_type type;
	union ibv_gid sgid;

	if (a->port_num != 1)
		return EINVAL;
	if (!emu_cfg.link_ib && !a->is_global) {
		emu_info("create_ah: a RoCE address needs a GRH (is_global=1)");
		return EINVAL;
	}
	if (a->is_global && emu_gid_entry(ctx->dev, a->grh.sgid_index, &sgid, &type)) {
		emu_info("create_ah: source GID index %u is not a valid entry", a->grh.sgid_index);
		return EINVAL;
	}
	/* RoCE resolves the destination's MAC from its GID */
	if (!emu_cfg.link_ib && emu_gid_to_addr(&a->grh.dgid, &addr)) {
		emu_info("create_ah: destination GID is not a gnic-emu GID");
		return EINVAL;
	}
	return 0;
}

static void fill_av(struct emu_context *ctx, const struct ibv_ah_attr *a, struct emu_mlx5_av *av)
{
	struct sockaddr_in addr;
	uint32_t grh = 0;

	memset(av, 0, sizeof(*av));
	if (emu_cfg.link_ib) {
		av->fl_mlid = a->src_path_bits & 0x7f;
		av->rlid = gnic_be16(a->dlid);
		av->stat_rate_sl = a->sl & 0xf;
		grh = 1;
	} else {
		enum ibv_gid_type type = IBV_GID_TYPE_ROCE_V1;
		union ibv_gid sgid;

		av->stat_rate_sl = (uint8_t)((a->sl & 0x7) << 1);
		emu_gid_entry(ctx->dev, a->grh.sgid_index, &sgid, &type);
		if (type == IBV_GID_TYPE_ROCE_V2) /* the UDP source port, as mlx5 picks it */
			av->rlid = gnic_be16((uint16_t)(0xc000 | (a->grh.flow_label & 0x3fff)));
		emu_gid_to_addr(&a->grh.dgid, &addr);
		av->rmac[0] = MAC_OUI0;
		av->rmac[1] = MAC_OUI1;
		memcpy(&av->rmac[2], &addr.sin_addr.s_addr, 4);
	}
	if (a->is_global) {
		av->tclass = a->grh.traffic_class;
		av->hop_limit = a->grh.hop_limit;
		av->grh_gid_fl =
		    gnic_be32((grh << 30) | ((uint32_t)a->grh.sgid_index & 0xff) << 20 |
		              (a->grh.flow_label & EMU_AV_FLOW_MASK));
		memcpy(av->rgid, a->grh.dgid.raw, 16);
	}
}

EMU_EXPORT struct ibv_ah *gemu_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct emu_context *ctx;
	struct emu_ah *ah;
	int err;

	if (!pd || !attr || !gemu_is_emu_context(pd->context)) {
		errno = EINVAL;
		return NULL;
	}
	ctx = to_ectx(pd->context);
	err = check_ah_attr(ctx, attr);
	if (err) {
		errno = err;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ah->ibah.context = pd->context;
	ah->ibah.pd = pd;
	ah->pd = to_epd(pd);
	ah->is_global = attr->is_global;
	fill_av(ctx, attr, (struct emu_mlx5_av *)ah->av);
	emu_nic_lock();
	ah->pd->refcnt++; /* dealloc_pd of a PD with AHs: EBUSY */
	emu_nic_unlock();
	return &ah->ibah;
}

EMU_EXPORT int gemu_destroy_ah(struct ibv_ah *ibah)
{
	struct emu_ah *ah;

	if (!ibah || !gemu_is_emu_context(ibah->context))
		return EINVAL;
	ah = to_eah(ibah);
	emu_nic_lock();
	ah->pd->refcnt--;
	emu_nic_unlock();
	free(ah);
	return 0;
}

/* ---- an answer to a received datagram --------------------------------------- */

/* RoCE v2 over IPv4 puts the IPv4 header in the GRH's last 20 bytes; a
 * valid one (version 4, 5 words, right checksum) is taken as that, as
 * libibverbs decides. */
static uint16_t ipv4_csum(const uint8_t *h)
{
	uint32_t sum = 0;

	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static bool grh_is_ipv4(const struct ibv_grh *grh)
{
	const uint8_t *ip = (const uint8_t *)grh + 20;
	uint32_t vtf = ntohl(grh->version_tclass_flow);

	if (ip[0] != 0x45)
		return false;
	return (vtf >> 28) != 6 || ipv4_csum(ip) == 0;
}

static void v4_mapped(union ibv_gid *gid, const uint8_t *ip)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], ip, 4);
}

/* The local GID entry equal to gid of the same RoCE version as the header
 * (v2: ipv4 or a UDP-carried IPv6 header; v1: a GRH). */
static int find_sgid(struct emu_context *ctx, const union ibv_gid *gid, bool v2, uint8_t *index)
{
	for (uint32_t i = 0; i < EMU_GID_VALID; i++) {
		enum ibv_gid_type type;
		union ibv_gid g;

		if (emu_gid_entry(ctx->dev, i, &g, &type))
			continue;
		if (memcmp(&g, gid, sizeof(g)))
			continue;
		if (emu_cfg.link_ib || (type == IBV_GID_TYPE_ROCE_V2) == v2) {
			*index = (uint8_t)i;
			return 0;
		}
	}
	return ENOENT;
}

EMU_EXPORT int gemu_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
                                    struct ibv_wc *wc, struct ibv_grh *grh, struct ibv_ah_attr *ah)
{
	struct emu_context *ctx;
	union ibv_gid dgid;
	bool v2 = false;
	int err;

	if (!context || !wc || !ah || !gemu_is_emu_context(context) || port_num != 1)
		return EINVAL;
	ctx = to_ectx(context);
	memset(ah, 0, sizeof(*ah));
	ah->dlid = wc->slid;
	ah->sl = wc->sl;
	ah->src_path_bits = wc->dlid_path_bits;
	ah->port_num = port_num;
	if (!(wc->wc_flags & IBV_WC_GRH))
		return emu_cfg.link_ib ? 0 : EINVAL;
	if (!grh)
		return EINVAL;
	ah->is_global = 1;
	if (!emu_cfg.link_ib && grh_is_ipv4(grh)) {
		const uint8_t *ip = (const uint8_t *)grh + 20;

		v4_mapped(&ah->grh.dgid, ip + 12); /* the sender's address */
		v4_mapped(&dgid, ip + 16);
		ah->grh.traffic_class = ip[1];
		ah->grh.hop_limit = 0xff;
		v2 = true;
	} else {
		uint32_t vtf = ntohl(grh->version_tclass_flow);

		ah->grh.dgid = grh->sgid;
		dgid = grh->dgid;
		ah->grh.flow_label = vtf & EMU_AV_FLOW_MASK;
		ah->grh.traffic_class = (uint8_t)(vtf >> 20);
		ah->grh.hop_limit = 0xff;
		v2 = !emu_cfg.link_ib && grh->next_hdr == 17; /* UDP: RoCE v2 over IPv6 */
	}
	err = find_sgid(ctx, &dgid, v2, &ah->grh.sgid_index);
	return err ? err : 0;
}

EMU_EXPORT struct ibv_ah *gemu_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
                                                 struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr attr;
	int err;

	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	err = gemu_init_ah_from_wc(pd->context, port_num, wc, grh, &attr);
	if (err) {
		errno = err;
		return NULL;
	}
	return gemu_create_ah(pd, &attr);
}
