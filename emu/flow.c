/* SPDX-License-Identifier: MIT */
/*
 * Flow steering of a device's Ethernet port: ibv_create_flow and
 * ibv_destroy_flow for RAW_PACKET QPs, and the lookup that picks the QP a
 * received frame goes to, as mlx5_ib's steering tables do.
 *
 * A frame is taken by the first rule that matches it, in this order:
 * NORMAL rules by priority (lower first; rules of one priority in creation
 * order), then, for a multicast destination MAC, the MC_DEFAULT rules, then
 * the ALL_DEFAULT rules. A frame that no rule takes is dropped and counted
 * (rx_no_rule): a port without rules receives nothing. A rule's action is
 * delivery to its QP, with the flow tag of an ACTION_TAG spec (0 without),
 * or, with ACTION_DROP, dropping the frame (counted, rx_drop_rule).
 * SNIFFER rules take a copy of every frame the port receives and of every
 * frame its QPs send, whatever the other rules do with it.
 *
 * Specs: ETH (destination and source MAC, EtherType, VLAN tag), IPV4 (source
 * and destination), IPV4_EXT (+ protocol, TOS, TTL), IPV6 (source,
 * destination, flow label, next header, traffic class, hop limit), TCP and
 * UDP (ports), each with a mask; an L3 spec also matches the IP version, an
 * L4 spec the protocol, as mlx5 sets them. Priorities 0..15 (mlx5's 16
 * regular ones; above: ENOMEM); a rule whose first spec names a multicast
 * destination (mlx5_ib's flow_is_multicast_only) goes after all of them,
 * into mlx5_ib's multicast table. Not emulated (EOPNOTSUPP):
 * DONT_TRAP and EGRESS flags, ESP, tunnel, GRE, MPLS and
 * inner specs, flow actions by handle, counters, IPv4 flags.
 *
 * The rules are read by steering with worker 0's lock held (eth.h), so
 * create and destroy change them under that lock too (emu_qp_ctl_lock of
 * the QP: RAW_PACKET QPs are all worker 0's).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "eth.h"
#include "worker.h"

#define FLOW_TAG_MAX 0xffffffu
/* mlx5_ib's MLX5_IB_FLOW_LAST_PRIO: 16 regular bypass priorities
 * (MLX5_BY_PASS_NUM_REGULAR_PRIOS); a rule above them is refused with
 * ENOMEM, as mlx5_ib_create_flow does */
#define FLOW_LAST_PRIO 15u
/* mlx5_ib's MLX5_IB_FLOW_MCAST_PRIO: where a multicast-only rule goes */
#define FLOW_MCAST_PRIO (FLOW_LAST_PRIO + 1)

struct emu_flow {
	struct ibv_flow ibflow; /* first: ibv_flow * casts back */
	struct emu_flow *next;
	struct emu_qp *qp;
	enum ibv_flow_attr_type type;
	uint16_t priority;
	bool mcast_only; /* steered in mlx5_ib's multicast table, after every priority */
	bool drop;
	uint32_t tag;
	/* the match: a field counts where its mask has bits */
	struct ibv_flow_eth_filter eth_v, eth_m;
	enum emu_l3 l3; /* EMU_L3_NONE: any */
	struct ibv_flow_ipv4_ext_filter v4_v, v4_m;
	struct ibv_flow_ipv6_filter v6_v, v6_m;
	enum emu_l4 l4; /* EMU_L4_NONE: any */
	struct ibv_flow_tcp_udp_filter l4_v, l4_m;
};

/* Per device: its rules (sorted as steering reads them) and counters. */
static struct {
	struct emu_flow *rules;
	int sniffers; /* SNIFFER rules among them */
	struct emu_eth_counters cnt;
} steer[EMU_MAX_DEVICES];

struct emu_eth_counters *emu_eth_counters(const struct emu_device *dev)
{
	return &steer[dev->index].cnt;
}

/* ---- matching --------------------------------------------------------------- */

static bool bytes_match(const uint8_t *pkt, const uint8_t *val, const uint8_t *mask, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((pkt[i] ^ val[i]) & mask[i])
			return false;
	return true;
}

/* A 16- or 32-bit spec field (network order, as verbs defines it) against
 * the same bytes of the frame. */
static bool be_match(const uint8_t *pkt, const void *val, const void *mask, size_t n)
{
	return bytes_match(pkt, val, mask, n);
}

static bool eth_match(const struct emu_flow *f, const struct emu_pkt *p)
{
	uint8_t et[2] = {(uint8_t)(p->ethertype >> 8), (uint8_t)p->ethertype};
	uint8_t tci[2] = {(uint8_t)(p->vlan_tci >> 8), (uint8_t)p->vlan_tci};

	if (p->len < EMU_ETH_HLEN)
		return false;
	if (!bytes_match(p->data, f->eth_v.dst_mac, f->eth_m.dst_mac, 6) ||
	    !bytes_match(p->data + 6, f->eth_v.src_mac, f->eth_m.src_mac, 6) ||
	    !be_match(et, &f->eth_v.ether_type, &f->eth_m.ether_type, 2))
		return false;
	if (!f->eth_m.vlan_tag)
		return true;
	return p->vlan && be_match(tci, &f->eth_v.vlan_tag, &f->eth_m.vlan_tag, 2);
}

static bool ipv4_match(const struct emu_flow *f, const struct emu_pkt *p)
{
	const uint8_t *ip = p->data + p->l3_off;

	return be_match(ip + 12, &f->v4_v.src_ip, &f->v4_m.src_ip, 4) &&
	       be_match(ip + 16, &f->v4_v.dst_ip, &f->v4_m.dst_ip, 4) &&
	       !((ip[9] ^ f->v4_v.proto) & f->v4_m.proto) &&
	       !((ip[1] ^ f->v4_v.tos) & f->v4_m.tos) && !((ip[8] ^ f->v4_v.ttl) & f->v4_m.ttl);
}

static bool ipv6_match(const struct emu_flow *f, const struct emu_pkt *p)
{
	const uint8_t *ip = p->data + p->l3_off;
	uint32_t word0 =
	    (uint32_t)ip[0] << 24 | (uint32_t)ip[1] << 16 | (uint32_t)ip[2] << 8 | ip[3];
	uint32_t label = word0 & 0xfffff, tclass = (word0 >> 20) & 0xff;
	uint32_t lv = gnic_be32(f->v6_v.flow_label), lm = gnic_be32(f->v6_m.flow_label);

	return bytes_match(ip + 8, f->v6_v.src_ip, f->v6_m.src_ip, 16) &&
	       bytes_match(ip + 24, f->v6_v.dst_ip, f->v6_m.dst_ip, 16) && !((label ^ lv) & lm) &&
	       !((ip[6] ^ f->v6_v.next_hdr) & f->v6_m.next_hdr) &&
	       !((tclass ^ f->v6_v.traffic_class) & f->v6_m.traffic_class) &&
	       !((ip[7] ^ f->v6_v.hop_limit) & f->v6_m.hop_limit);
}

static bool l4_match(const struct emu_flow *f, const struct emu_pkt *p)
{
	const uint8_t *l4 = p->data + p->l4_off;

	return p->l4 == f->l4 && be_match(l4, &f->l4_v.src_port, &f->l4_m.src_port, 2) &&
	       be_match(l4 + 2, &f->l4_v.dst_port, &f->l4_m.dst_port, 2);
}

static bool rule_match(const struct emu_flow *f, const struct emu_pkt *p)
{
	if (!eth_match(f, p))
		return false;
	if (f->l3 != EMU_L3_NONE && p->l3 != f->l3)
		return false;
	if (f->l3 == EMU_L3_IPV4 && !ipv4_match(f, p))
		return false;
	if (f->l3 == EMU_L3_IPV6 && !ipv6_match(f, p))
		return false;
	return f->l4 == EMU_L4_NONE || l4_match(f, p);
}

/* The rule that takes frame p, or NULL. */
static const struct emu_flow *lookup(const struct emu_flow *rules, const struct emu_pkt *p)
{
	bool mcast = p->len >= EMU_ETH_HLEN && (p->data[0] & 1);

	for (const struct emu_flow *f = rules; f; f = f->next) {
		switch (f->type) {
		case IBV_FLOW_ATTR_NORMAL:
			if (rule_match(f, p))
				return f;
			break;
		case IBV_FLOW_ATTR_MC_DEFAULT:
			if (mcast)
				return f;
			break;
		case IBV_FLOW_ATTR_ALL_DEFAULT:
			return f;
		default:
			break;
		}
	}
	return NULL;
}

/* A copy of p to every sniffer rule's QP (they sort last). */
static void sniff(const struct emu_flow *rules, const struct emu_pkt *p)
{
	for (const struct emu_flow *f = rules; f; f = f->next)
		if (f->type == IBV_FLOW_ATTR_SNIFFER)
			emu_raw_deliver(f->qp, p, f->tag);
}

void emu_flow_sniff_tx(struct emu_device *dev, const uint8_t *frame, uint32_t len)
{
	struct emu_pkt p;

	if (!steer[dev->index].sniffers)
		return;
	emu_pkt_parse(&p, frame, len);
	sniff(steer[dev->index].rules, &p);
}

void emu_flow_rx(struct emu_device *dev, const uint8_t *frame, uint32_t len)
{
	struct emu_eth_counters *c = &steer[dev->index].cnt;
	const struct emu_flow *f;
	struct emu_pkt p;

	atomic_fetch_add_explicit(&c->rx_frames, 1, memory_order_relaxed);
	emu_pkt_parse(&p, frame, len);
	if (steer[dev->index].sniffers)
		sniff(steer[dev->index].rules, &p);
	f = lookup(steer[dev->index].rules, &p);
	if (!f)
		atomic_fetch_add_explicit(&c->rx_no_rule, 1, memory_order_relaxed);
	else if (f->drop)
		atomic_fetch_add_explicit(&c->rx_drop_rule, 1, memory_order_relaxed);
	else
		emu_raw_deliver(f->qp, &p, f->tag);
}

/* ---- rule parsing ----------------------------------------------------------- */

static bool zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* The L3 spec of a rule; a second one contradicts the first. */
static int set_l3(struct emu_flow *f, enum emu_l3 l3)
{
	if (f->l3 != EMU_L3_NONE)
		return EINVAL;
	f->l3 = l3;
	return 0;
}

static int parse_ipv4(struct emu_flow *f, const struct ibv_flow_spec *s, bool ext)
{
	if (ext) {
		if (s->hdr.size != sizeof(s->ipv4_ext))
			return EINVAL;
		if (s->ipv4_ext.mask.flags) {
			emu_info("create_flow: IPv4 flags are not matched by gnic-emu");
			return EOPNOTSUPP;
		}
		f->v4_v = s->ipv4_ext.val;
		f->v4_m = s->ipv4_ext.mask;
	} else {
		if (s->hdr.size != sizeof(s->ipv4))
			return EINVAL;
		f->v4_v.src_ip = s->ipv4.val.src_ip;
		f->v4_v.dst_ip = s->ipv4.val.dst_ip;
		f->v4_m.src_ip = s->ipv4.mask.src_ip;
		f->v4_m.dst_ip = s->ipv4.mask.dst_ip;
	}
	return set_l3(f, EMU_L3_IPV4);
}

static int parse_l4(struct emu_flow *f, const struct ibv_flow_spec *s)
{
	if (s->hdr.size != sizeof(s->tcp_udp) || f->l4 != EMU_L4_NONE)
		return EINVAL;
	f->l4 = s->hdr.type == IBV_FLOW_SPEC_TCP ? EMU_L4_TCP : EMU_L4_UDP;
	f->l4_v = s->tcp_udp.val;
	f->l4_m = s->tcp_udp.mask;
	/* an L4 spec names the protocol; an IPv4_EXT proto saying otherwise
	 * can never match: mlx5 refuses it */
	if (f->v4_m.proto &&
	    (f->v4_v.proto & f->v4_m.proto) !=
	        ((f->l4 == EMU_L4_TCP ? EMU_IPPROTO_TCP : EMU_IPPROTO_UDP) & f->v4_m.proto))
		return EINVAL;
	return 0;
}

static int parse_action(struct emu_flow *f, const struct ibv_flow_spec *s)
{
	if (s->hdr.type == IBV_FLOW_SPEC_ACTION_TAG) {
		if (s->hdr.size != sizeof(s->flow_tag) || s->flow_tag.tag_id > FLOW_TAG_MAX)
			return EINVAL;
		f->tag = s->flow_tag.tag_id;
		return 0;
	}
	if (s->hdr.size != sizeof(s->drop))
		return EINVAL;
	f->drop = true;
	return 0;
}

static int parse_spec(struct emu_flow *f, const struct ibv_flow_spec *s)
{
	switch (s->hdr.type) {
	case IBV_FLOW_SPEC_ETH:
		if (s->hdr.size != sizeof(s->eth) || !zero(&f->eth_m, sizeof(f->eth_m)))
			return EINVAL;
		f->eth_v = s->eth.val;
		f->eth_m = s->eth.mask;
		return 0;
	case IBV_FLOW_SPEC_IPV4:
		return parse_ipv4(f, s, false);
	case IBV_FLOW_SPEC_IPV4_EXT:
		return parse_ipv4(f, s, true);
	case IBV_FLOW_SPEC_IPV6:
		if (s->hdr.size != sizeof(s->ipv6))
			return EINVAL;
		f->v6_v = s->ipv6.val;
		f->v6_m = s->ipv6.mask;
		return set_l3(f, EMU_L3_IPV6);
	case IBV_FLOW_SPEC_TCP:
	case IBV_FLOW_SPEC_UDP:
		return parse_l4(f, s);
	case IBV_FLOW_SPEC_ACTION_TAG:
	case IBV_FLOW_SPEC_ACTION_DROP:
		return parse_action(f, s);
	case IBV_FLOW_SPEC_ESP:
	case IBV_FLOW_SPEC_VXLAN_TUNNEL:
	case IBV_FLOW_SPEC_GRE:
	case IBV_FLOW_SPEC_MPLS:
	case IBV_FLOW_SPEC_ACTION_HANDLE:
	case IBV_FLOW_SPEC_ACTION_COUNT:
		emu_info("create_flow: spec type 0x%x is not emulated", (unsigned)s->hdr.type);
		return EOPNOTSUPP;
	default:
		if (s->hdr.type & IBV_FLOW_SPEC_INNER) {
			emu_info("create_flow: inner (tunnelled) specs are not emulated");
			return EOPNOTSUPP;
		}
		return EINVAL;
	}
}

static int check_attr(const struct ibv_flow_attr *a)
{
	if (a->priority > FLOW_LAST_PRIO) {
		emu_info("create_flow: priority %u above mlx5's last, %u", a->priority,
		         FLOW_LAST_PRIO);
		return ENOMEM;
	}
	if (a->comp_mask || a->port != 1)
		return EINVAL;
	if (a->flags & ~(uint32_t)(IBV_FLOW_ATTR_FLAGS_DONT_TRAP | IBV_FLOW_ATTR_FLAGS_EGRESS))
		return EINVAL;
	if (a->flags) {
		emu_info("create_flow: DONT_TRAP and EGRESS rules are not emulated");
		return EOPNOTSUPP;
	}
	switch (a->type) {
	case IBV_FLOW_ATTR_NORMAL:
		return 0;
	case IBV_FLOW_ATTR_ALL_DEFAULT:
	case IBV_FLOW_ATTR_MC_DEFAULT:
	case IBV_FLOW_ATTR_SNIFFER:
		return a->num_of_specs ? EINVAL : 0;
	default:
		return EINVAL;
	}
}

/* mlx5_ib's flow_is_multicast_only(), on the rule's first spec: an ETH
 * spec whose destination MAC mask and value are both multicast, or an IPv4
 * spec whose destination value is multicast. Such a NORMAL rule goes into
 * the multicast table, after every priority, whatever its own. */
static bool multicast_only(const struct ibv_flow_spec *first)
{
	const uint8_t *ip = (const uint8_t *)&first->ipv4.val.dst_ip;

	switch (first->hdr.type) {
	case IBV_FLOW_SPEC_ETH:
		return (first->eth.mask.dst_mac[0] & 1) && (first->eth.val.dst_mac[0] & 1);
	case IBV_FLOW_SPEC_IPV4:
	case IBV_FLOW_SPEC_IPV4_EXT: /* the kernel's IPV4 spec either way */
		return (ip[0] & 0xf0) == 0xe0;
	default:
		return false;
	}
}

/* The specs follow the attr; attr->size covers them all. */
static int parse_rule(struct emu_flow *f, const struct ibv_flow_attr *a)
{
	const uint8_t *p = (const uint8_t *)(a + 1);
	size_t left, size = a->size;
	int err = check_attr(a);

	if (err)
		return err;
	if (size < sizeof(*a))
		return EINVAL;
	left = size - sizeof(*a);
	for (unsigned i = 0; i < a->num_of_specs; i++) {
		struct ibv_flow_spec s;
		uint16_t ssize;

		if (left < sizeof(s.hdr))
			return EINVAL;
		memcpy(&s.hdr, p, sizeof(s.hdr));
		ssize = s.hdr.size;
		if (ssize < sizeof(s.hdr) || ssize > left || ssize > sizeof(s))
			return EINVAL;
		memcpy(&s, p, ssize);
		err = parse_spec(f, &s);
		if (err)
			return err;
		if (i == 0)
			f->mcast_only = a->type == IBV_FLOW_ATTR_NORMAL && multicast_only(&s);
		p += ssize;
		left -= ssize;
	}
	if (f->drop && f->tag)
		return EINVAL;
	f->type = a->type;
	f->priority = a->priority;
	return 0;
}

/* Where f goes: NORMAL rules by priority (after those of its own; the
 * multicast-only ones after every priority), then MC_DEFAULT, then
 * ALL_DEFAULT, then SNIFFER. */
static int rank(const struct emu_flow *f)
{
	switch (f->type) {
	case IBV_FLOW_ATTR_NORMAL:
		return 0;
	case IBV_FLOW_ATTR_MC_DEFAULT:
		return 1;
	case IBV_FLOW_ATTR_ALL_DEFAULT:
		return 2;
	default:
		return 3;
	}
}

/* The table a NORMAL rule sits in: its priority, or the multicast one. */
static unsigned table(const struct emu_flow *f)
{
	return f->mcast_only ? FLOW_MCAST_PRIO : f->priority;
}

static bool goes_before(const struct emu_flow *f, const struct emu_flow *g)
{
	if (rank(f) != rank(g))
		return rank(f) < rank(g);
	return rank(f) == 0 && table(f) < table(g);
}

static void insert(struct emu_flow **head, struct emu_flow *f)
{
	while (*head && !goes_before(f, *head))
		head = &(*head)->next;
	f->next = *head;
	*head = f;
}

EMU_EXPORT struct ibv_flow *gemu_create_flow(struct ibv_qp *ibqp, struct ibv_flow_attr *attr)
{
	struct emu_flow *f;
	struct emu_qp *qp;
	int err;

	if (!ibqp || !attr || !gemu_is_emu_context(ibqp->context)) {
		errno = EINVAL;
		return NULL;
	}
	qp = to_eqp(ibqp);
	if (ibqp->qp_type != IBV_QPT_RAW_PACKET) {
		emu_info("create_flow: QP 0x%x is not a RAW_PACKET QP", ibqp->qp_num);
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		errno = ENOMEM;
		return NULL;
	}
	err = parse_rule(f, attr);
	if (err) {
		free(f);
		errno = err;
		return NULL;
	}
	f->qp = qp;
	f->ibflow.context = ibqp->context;
	f->ibflow.handle = qp->ibqp.qp_num;
	emu_qp_ctl_lock(qp);
	insert(&steer[qp->ctx->dev->index].rules, f);
	steer[qp->ctx->dev->index].sniffers += f->type == IBV_FLOW_ATTR_SNIFFER;
	emu_qp_ctl_unlock(qp);
	emu_dbg("QP 0x%x: flow rule type %d priority %u%s tag 0x%x", ibqp->qp_num, f->type,
	        f->priority, f->drop ? " drop" : "", f->tag);
	return &f->ibflow;
}

/* Unlink f from its device's list: true if it was there. */
static bool unlink_rule(struct emu_flow *f)
{
	for (struct emu_flow **pp = &steer[f->qp->ctx->dev->index].rules; *pp; pp = &(*pp)->next) {
		if (*pp == f) {
			*pp = f->next;
			steer[f->qp->ctx->dev->index].sniffers -= f->type == IBV_FLOW_ATTR_SNIFFER;
			return true;
		}
	}
	return false;
}

/* The caller's flow must be one that gemu_create_flow returned and not yet
 * destroyed (as with verbs: its QP is still there, a QP with rules cannot be
 * destroyed). */
EMU_EXPORT int gemu_destroy_flow(struct ibv_flow *flow)
{
	struct emu_flow *f = (struct emu_flow *)flow;
	struct emu_qp *qp;
	bool found;

	if (!flow || !gemu_is_emu_context(flow->context))
		return EINVAL;
	qp = f->qp;
	emu_qp_ctl_lock(qp);
	found = unlink_rule(f);
	emu_qp_ctl_unlock(qp);
	if (!found)
		return EINVAL;
	free(f);
	return 0;
}

bool emu_flow_qp_busy(const struct emu_qp *qp)
{
	for (const struct emu_flow *f = steer[qp->ctx->dev->index].rules; f; f = f->next)
		if (f->qp == qp)
			return true;
	return false;
}

EMU_EXPORT int gemu_eth_stats(struct ibv_context *context, struct gemu_eth_stats *out)
{
	struct emu_eth_counters *c;

	if (!context || !out || !gemu_is_emu_context(context))
		return EINVAL;
	c = &steer[to_ectx(context)->dev->index].cnt;
	out->rx_frames = atomic_load(&c->rx_frames);
	out->rx_delivered = atomic_load(&c->rx_delivered);
	out->rx_no_rule = atomic_load(&c->rx_no_rule);
	out->rx_drop_rule = atomic_load(&c->rx_drop_rule);
	out->rx_no_wqe = atomic_load(&c->rx_no_wqe);
	out->rx_too_long = atomic_load(&c->rx_too_long);
	out->rx_bad_wqe = atomic_load(&c->rx_bad_wqe);
	out->rx_overrun = atomic_load(&c->rx_overrun);
	out->tx_frames = atomic_load(&c->tx_frames);
	out->tx_dropped = atomic_load(&c->tx_dropped);
	return 0;
}
