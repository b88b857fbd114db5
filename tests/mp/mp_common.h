/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the forked-process tests (test_mp_stop, test_mp_peer): a
 * parent forks and execs itself once per role, joined to each child by a
 * socketpair on which they swap endpoints and one-byte words, and stops,
 * continues or kills the children. Every wait is bounded (MP_WAIT_MS); a
 * failure ends the calling process through T_FAIL.
 */
#ifndef GNIC_TEST_MP_COMMON_H
#define GNIC_TEST_MP_COMMON_H

#include <stddef.h>
#include <sys/types.h>

#include "common.h"

#define MP_WAIT_MS 10000

void mp_send(int fd, char c);
/* The next byte on fd within ms; 0 if none came in time. */
char mp_recv_within(int fd, unsigned ms, const char *what);
/* The next byte within MP_WAIT_MS, else a failure. */
char mp_recv(int fd, const char *what);
/* The next byte must be want. */
void mp_expect(int fd, char want, const char *what);
void mp_blob_send(int fd, const void *buf, size_t len);
void mp_blob_recv(int fd, void *buf, size_t len, const char *what);

/* Fork and exec this program as `name --role role --fd N [extra]`, the child
 * keeping fd (its end of a socketpair) and closing other_fd (the parent's
 * end). The child is killed when the parent dies, even while stopped. */
pid_t mp_spawn(const char *name, const char *role, int fd, int other_fd, const char *extra);
/* SIGSTOP pid and wait until it is stopped. */
void mp_stop(pid_t pid);
/* Bytes waiting to be read in pid's TCP sockets (their receive queues in
 * /proc/net/tcp), or -1 when that cannot be read. */
long mp_rx_queued(pid_t pid);
/* SIGKILL pid and reap it. */
void mp_kill(pid_t pid);

/* One child's verbs objects: a QP on CQs of its own and one region
 * registered with every access right. */
struct mp_side {
	const char *role;
	int fd; /* to the parent */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	uint8_t *buf;
	struct ibv_mr *mr;
	struct t_ep peer;
	struct t_conn_opts opts;
};

/* Open T_DEVICE and make s's objects, a region of len bytes; the QP will
 * connect with the default options but timeout and retry_cnt. */
void mp_side_open(struct mp_side *s, size_t len, uint8_t timeout, uint8_t retry_cnt);
/* Swap endpoints with the peer through the parent, connect, say 'C'. */
void mp_side_connect(struct mp_side *s, size_t len);
void mp_side_close(struct mp_side *s);

#endif
