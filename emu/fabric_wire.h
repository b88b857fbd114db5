/* SPDX-License-Identifier: MIT */
/*
 * gnic-emu fabric wire format and its parsers: no sockets, no engine state.
 *
 * A TCP connection carries, in order:
 *
 *   connector -> acceptor   struct emu_hello      magic, version, GID, nonce
 *   acceptor -> connector   struct emu_challenge  its own hello + MAC_acc
 *   connector -> acceptor   struct emu_proof      MAC_con
 *   then, both ways         struct emu_msg + payload, any number
 *
 * MAC_x = HMAC-SHA256(secret, label_x || version || nonce_con || nonce_acc ||
 * gid_con || gid_acc), with a different label per direction so one side's
 * answer is never valid as the other's. Each side proves it knows the secret
 * for the other's fresh nonce (mutual, and a recorded session replays into
 * nothing). The acceptor parses no emu_msg before the proof checked out; the
 * connector sends none before the challenge did.
 *
 * The MAC binds both GIDs, so each side also checks whose they are: the
 * connector accepts only the GID it dialed, and neither side accepts a hello
 * that carries its own GID or nonce (or, for the acceptor, the GID of another
 * device of its process, which never dials over the fabric). Without that,
 * someone holding no secret could dial a process's listener with the hello
 * that process itself sent to a dead peer's port, and hand each of its two
 * ends the other's answers (a reflection).
 *
 * Host byte order throughout (x86-64/aarch64 only). fabric_conn.c and
 * fabric_hs.c drive these functions on socket input; tests/fuzz/fuzz_fabric.c drives the same ones
 * on arbitrary bytes.
 */
#ifndef GNIC_EMU_FABRIC_WIRE_H
#define GNIC_EMU_FABRIC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>

#define EMU_FABRIC_MAGIC   0x43494e47u /* "GNIC" */
#define EMU_FABRIC_VERSION 2u          /* 2: authenticated handshake */
#define EMU_WIRE_MAX_MSG   (1u << 31)  /* largest payload (= EMU_MAX_MSG_SIZE) */
#define EMU_AUTH_NONCE_LEN 32
#define EMU_AUTH_MAC_LEN   32 /* SHA-256 */

enum emu_msg_type {
	/* requests: requester -> responder */
	EMU_MSG_WRITE = 1,
	EMU_MSG_WRITE_IMM,
	EMU_MSG_SEND,
	EMU_MSG_SEND_IMM,
	EMU_MSG_READ, /* no payload; operand[0] = bytes to read */
	EMU_MSG_ATOMIC_CS,
	EMU_MSG_ATOMIC_FA,
	/* UD datagrams (no answer): payload = the network header the receiver
	 * may write (EMU_UD_F_GRH: the first EMU_GRH_BYTES of it) + the data;
	 * rkey = Q_Key, raddr = EMU_UD_* fields, dst_qpn/src_qpn the QPs */
	EMU_MSG_UD_SEND,
	EMU_MSG_UD_SEND_IMM,
	/* responses: responder -> requester */
	EMU_MSG_ACK = 16,   /* every request up to and including psn succeeded */
	EMU_MSG_NAK,        /* request psn failed: syndrome (requester view) */
	EMU_MSG_RNR_NAK,    /* no receive posted for psn: retry after rnr_timer */
	EMU_MSG_READ_RESP,  /* payload = data read */
	EMU_MSG_ATOMIC_RESP /* operand[0] = value before the atomic */
};

/* raddr of a UD datagram */
#define EMU_UD_F_GRH      (1ull << 56) /* a GRH (or IP header) leads the payload */
#define EMU_UD_SL_SHIFT   36           /* 4 bits */
#define EMU_UD_SLID_SHIFT 40           /* 16 bits: the sender's LID (InfiniBand) */
#define EMU_UD_L3_SHIFT   57           /* 2 bits: EMU_CQE_L3_* of the header (av.h) */

enum {
	EMU_MSG_F_SOLICITED = 1 << 0,
	/* Requester wants an ACK for this request (cumulative: it covers every
	 * earlier psn too). Unflagged WRITE/SEND are acknowledged by a later ACK;
	 * errors are always NAKed; READ/ATOMIC always answer. */
	EMU_MSG_F_ACKREQ = 1 << 1,
	/* On an ACK: request psn is arriving, not complete (a message is one
	 * request whatever its size, where a ConnectX sends MTU packets and
	 * acknowledges them as they come). It acknowledges nothing; it restarts
	 * the requester's transport timer, as those packets' ACKs would: a large
	 * message takes longer to cross than the timeout here. Sent by the
	 * fabric for each EMU_PROGRESS_BYTES of a request (with ACKREQ) that has
	 * arrived, and raised locally for READ response data. */
	EMU_MSG_F_PROGRESS = 1 << 2,
};

#define EMU_PROGRESS_BYTES (128u * 1024) /* 32 packets at a 4096-byte MTU */

struct emu_msg {
	uint8_t type;      /* enum emu_msg_type */
	uint8_t syndrome;  /* NAK: GNIC_MLX5_SYND_* for the requester */
	uint8_t flags;     /* EMU_MSG_F_* */
	uint8_t rnr_timer; /* RNR_NAK: responder's min_rnr_timer code */
	uint32_t len;      /* payload bytes that follow (payload types only) */
	uint32_t dst_qpn;  /* QP this message is for */
	uint32_t src_qpn;  /* QP it came from */
	uint32_t psn;      /* request sequence number (responses: echoed) */
	uint32_t imm;      /* *_IMM: immediate, big-endian as in the WQE */
	uint64_t raddr;    /* WRITE/READ/ATOMIC target address */
	uint32_t rkey;
	uint8_t gid_type; /* enum ibv_gid_type of the sender's source GID (RoCE v1/v2 framing) */
	uint8_t rsvd[3];
	uint64_t operand[2]; /* ATOMIC: swap_add, compare (host order) */
};
_Static_assert(sizeof(struct emu_msg) == 56, "emu_msg is a wire format");

/* First frame of a connection, and the first part of the acceptor's answer.
 * magic and version sit where version 1 had them, so either side of a
 * mismatch reports the version rather than garbage. */
struct emu_hello {
	uint32_t magic;   /* EMU_FABRIC_MAGIC */
	uint32_t version; /* EMU_FABRIC_VERSION */
	union ibv_gid src_gid;
	uint8_t nonce[EMU_AUTH_NONCE_LEN]; /* fresh random bytes per connection */
};
_Static_assert(sizeof(struct emu_hello) == 56, "emu_hello is a wire format");

struct emu_challenge {
	struct emu_hello hello;
	uint8_t mac[EMU_AUTH_MAC_LEN]; /* MAC_acc */
};
_Static_assert(sizeof(struct emu_challenge) == 88, "emu_challenge is a wire format");

struct emu_proof {
	uint8_t mac[EMU_AUTH_MAC_LEN]; /* MAC_con */
};

/* ---- messages ------------------------------------------------------------ */

static inline bool emu_wire_is_request(uint8_t type)
{
	return type < EMU_MSG_ACK;
}

/* Bytes that follow the header of m on the wire (0 for types without data,
 * whatever m->len says): a READ request carries its length in operand[0],
 * atomics and acknowledgements carry no data either. */
static inline uint32_t emu_wire_payload_len(const struct emu_msg *m)
{
	switch (m->type) {
	case EMU_MSG_WRITE:
	case EMU_MSG_WRITE_IMM:
	case EMU_MSG_SEND:
	case EMU_MSG_SEND_IMM:
	case EMU_MSG_UD_SEND:
	case EMU_MSG_UD_SEND_IMM:
	case EMU_MSG_READ_RESP:
		return m->len;
	default:
		return 0;
	}
}

/* A known type and a length within EMU_WIRE_MAX_MSG. */
static inline bool emu_wire_msg_valid(const struct emu_msg *m)
{
	if (m->len > EMU_WIRE_MAX_MSG)
		return false;
	return (m->type >= EMU_MSG_WRITE && m->type <= EMU_MSG_UD_SEND_IMM) ||
	       (m->type >= EMU_MSG_ACK && m->type <= EMU_MSG_ATOMIC_RESP);
}

enum emu_wire_frame {
	EMU_WIRE_PARTIAL, /* *size = bytes the frame needs; wait for them */
	EMU_WIRE_MSG,     /* *m is the header, *size header + payload <= avail */
	EMU_WIRE_BAD,     /* *m is a malformed header: close the connection */
};

/* What the avail bytes at p start with. Reads at most avail bytes; *m is
 * filled whenever a whole header is there. Inline: it runs per message. */
static inline enum emu_wire_frame emu_wire_frame(const void *p, size_t avail, struct emu_msg *m,
                                                 size_t *size)
{
	size_t total;

	if (avail < sizeof(*m)) {
		*size = sizeof(*m);
		return EMU_WIRE_PARTIAL;
	}
	memcpy(m, p, sizeof(*m)); /* the buffer need not be aligned */
	if (!emu_wire_msg_valid(m)) {
		*size = sizeof(*m);
		return EMU_WIRE_BAD;
	}
	total = sizeof(*m) + emu_wire_payload_len(m);
	*size = total;
	return avail >= total ? EMU_WIRE_MSG : EMU_WIRE_PARTIAL;
}

/* ---- handshake ----------------------------------------------------------- */

enum emu_hs_role { EMU_HS_CONNECTOR, EMU_HS_ACCEPTOR };

enum emu_hs_state {
	EMU_HS_WAIT_HELLO,     /* acceptor */
	EMU_HS_WAIT_CHALLENGE, /* connector */
	EMU_HS_WAIT_PROOF,     /* acceptor */
	EMU_HS_DONE,
	EMU_HS_FAILED,
};

enum emu_hs_result {
	EMU_HS_OK,
	EMU_HS_ERR_MAGIC,      /* not a gnic-emu fabric peer */
	EMU_HS_ERR_VERSION,    /* another fabric version */
	EMU_HS_ERR_SECRET,     /* the peer's MAC is wrong: another secret (or a replay) */
	EMU_HS_ERR_CRYPTO,     /* HMAC could not be computed */
	EMU_HS_ERR_STATE,      /* step() after DONE or FAILED */
	EMU_HS_ERR_NOT_DIALED, /* connector: the acceptor names another GID */
	EMU_HS_ERR_SELF,       /* the peer's hello is our own GID or nonce, or
	                        * a GID of this process: a reflected handshake */
};

#define EMU_HS_REFUSED_MAX 8 /* GIDs an acceptor refuses besides its own */

struct emu_hs {
	enum emu_hs_role role;
	enum emu_hs_state state;
	const uint8_t *key; /* the secret, owned by the caller, kept alive */
	size_t key_len;
	union ibv_gid gid[2]; /* [0] connector's, [1] acceptor's */
	uint8_t nonce[2][EMU_AUTH_NONCE_LEN];
	union ibv_gid dialed; /* connector: the only GID the acceptor may have */
	union ibv_gid refused[EMU_HS_REFUSED_MAX]; /* acceptor: no peer has these */
	unsigned int nrefused;
	uint32_t peer_magic, peer_version; /* from the peer's hello, for logs */
	union ibv_gid peer_claim;          /* GID the peer's hello named, for logs */
};

#define EMU_HS_OUT_MAX sizeof(struct emu_challenge)

/* Begin a handshake with local_gid and a fresh random nonce. The connector
 * passes the GID it dialed as peer_gid (required: without it the handshake
 * starts FAILED); the acceptor passes NULL. The connector's hello is written
 * to out (*out_len bytes); the acceptor writes nothing. */
void emu_hs_start(struct emu_hs *hs, enum emu_hs_role role, const void *key, size_t key_len,
                  const union ibv_gid *local_gid, const union ibv_gid *peer_gid,
                  const uint8_t nonce[EMU_AUTH_NONCE_LEN], uint8_t out[EMU_HS_OUT_MAX],
                  size_t *out_len);

/* Acceptor, before the first step: a hello naming gid is refused
 * (EMU_HS_ERR_SELF), as one naming the acceptor's own GID is. For the GIDs
 * of the process's other devices. false when EMU_HS_REFUSED_MAX are set. */
bool emu_hs_refuse_gid(struct emu_hs *hs, const union ibv_gid *gid);

/* Size of the frame the handshake waits for; 0 once DONE or FAILED. */
size_t emu_hs_need(const struct emu_hs *hs);

/* Consume one frame of exactly emu_hs_need() bytes; what must be sent in
 * reply goes to out (*out_len bytes, possibly 0). Any error moves the
 * handshake to FAILED for good; EMU_HS_OK with state DONE means the peer
 * proved it holds the secret. MACs are compared in constant time. */
enum emu_hs_result emu_hs_step(struct emu_hs *hs, const void *frame, uint8_t out[EMU_HS_OUT_MAX],
                               size_t *out_len);

const char *emu_hs_result_str(enum emu_hs_result r);

/* The peer's GID as its hello or challenge stated it (valid from the first
 * step on, trusted only once DONE). */
static inline const union ibv_gid *emu_hs_peer_gid(const struct emu_hs *hs)
{
	return &hs->gid[hs->role == EMU_HS_CONNECTOR ? 1 : 0];
}

/* ---- a connection's input ------------------------------------------------ */

enum emu_wire_event {
	EMU_WIRE_EV_NEED,    /* no whole frame yet: .size = bytes it needs in all */
	EMU_WIRE_EV_HS,      /* a handshake frame of .size bytes was taken; send
	                      * .out[0, .out_len); the handshake may be DONE now */
	EMU_WIRE_EV_HS_FAIL, /* the handshake failed (.result): close */
	EMU_WIRE_EV_MSG,     /* .msg, its payload right behind it, .size in all */
	EMU_WIRE_EV_BAD,     /* .msg is a malformed header: close */
};

struct emu_wire_step {
	enum emu_wire_event ev;
	size_t size;
	struct emu_msg msg;
	enum emu_hs_result result;
	size_t out_len;
	uint8_t out[EMU_HS_OUT_MAX];
};

/* emu_wire_input() before the handshake is DONE (fabric_wire.c). */
void emu_wire_input_handshake(struct emu_hs *hs, const void *p, size_t avail,
                              struct emu_wire_step *st);

/* The next thing in a connection's input p[0, avail), where hs tells what
 * is expected: handshake frames until hs is DONE, messages after. A
 * handshake frame is consumed by this call (hs moves on; the caller drops
 * .size bytes); a message is only looked at, and the caller drops .size
 * bytes when it takes it. Never returns a message before hs is DONE. */
static inline void emu_wire_input(struct emu_hs *hs, const void *p, size_t avail,
                                  struct emu_wire_step *st)
{
	if (hs->state != EMU_HS_DONE) {
		emu_wire_input_handshake(hs, p, avail, st);
		return;
	}
	st->out_len = 0;
	st->result = EMU_HS_OK;
	switch (emu_wire_frame(p, avail, &st->msg, &st->size)) {
	case EMU_WIRE_MSG:
		st->ev = EMU_WIRE_EV_MSG;
		break;
	case EMU_WIRE_BAD:
		st->ev = EMU_WIRE_EV_BAD;
		break;
	default:
		st->ev = EMU_WIRE_EV_NEED;
	}
}

/* Bytes the next frame needs in all, without consuming anything. */
static inline size_t emu_wire_need(const struct emu_hs *hs, const void *p, size_t avail)
{
	struct emu_msg m;
	size_t size;

	if (hs->state != EMU_HS_DONE)
		return emu_hs_need(hs);
	emu_wire_frame(p, avail, &m, &size);
	return size;
}

#endif /* GNIC_EMU_FABRIC_WIRE_H */
