// SPDX-License-Identifier: MIT
/*
 * One side of an RC connection for test_netns.sh, which runs the two sides
 * in two network namespaces joined by a veth pair. GNIC_EMU_ADDR must name
 * this side's address, so the fabric listens there and the GID carries it.
 *
 *   netns_peer server ADDR PORT           exchange endpoints over TCP on
 *                                         ADDR:PORT, then wait for the
 *                                         client's verdict and check the
 *                                         last bytes it wrote
 *   netns_peer client ADDR PORT N BOUND   the same from the other end, then
 *                                         stream N 4-KiB WRITEs (window 64)
 *
 * Client exit status: 0 all N completed; 3 the transfer ended in an error
 * completion (printed with the status, how many completed, and how long
 * after the last success it came); 4 no completion at all within BOUND ms
 * (what a hang looks like); 1 anything else.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"

#define REGION (1u << 20)
#define MSG    4096u
#define WINDOW 64
#define SIGNAL 16 /* every 16th WRITE is signaled */
#define OOB_MS 30000

struct side {
	int oob;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf;
	struct ibv_mr *mr;
	struct t_ep peer;
};

static void oob_send(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		T_FAIL("out-of-band write: %s", strerror(errno));
}

static bool oob_recv(int fd, void *p, size_t n, unsigned ms)
{
	uint8_t *b = p;

	while (n) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t r;

		if (poll(&pfd, 1, (int)ms) <= 0)
			return false;
		r = read(fd, b, n);
		if (r <= 0)
			return false;
		b += r;
		n -= (size_t)r;
	}
	return true;
}

static int oob_open(bool server, const char *ip, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, c;
	uint64_t end = t_now_ms() + OOB_MS;

	CHECK(fd >= 0);
	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1)
		T_FAIL("not an IPv4 address: %s", ip);
	if (!server) { /* the server may not listen yet: retry */
		while (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
			if (t_now_ms() > end)
				T_FAIL("cannot reach %s:%d: %s", ip, port, strerror(errno));
			close(fd);
			t_sleep_ms(50);
			fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		}
		return fd;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 1))
		T_FAIL("listen on %s:%d: %s", ip, port, strerror(errno));
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	if (poll(&pfd, 1, OOB_MS) <= 0)
		T_FAIL("no client within %d ms", OOB_MS);
	c = accept(fd, NULL, NULL);
	CHECK(c >= 0);
	close(fd);
	return c;
}

static void setup(struct side *s, bool server, const char *ip, int port)
{
	struct t_conn_opts o;
	struct t_qp_caps caps;
	struct t_ep ep;

	s->ctx = t_open(T_DEVICE);
	s->pd = CHECK_PTR(ibv_alloc_pd(s->ctx));
	s->cq = t_cq(s->ctx, 1024);
	t_qp_caps_default(&caps);
	caps.send_wr = 2 * WINDOW;
	s->qp = t_qp(s->pd, s->cq, s->cq, &caps, NULL);
	s->buf = t_alloc(REGION, 0);
	s->mr = t_reg(s->pd, s->buf, REGION, T_ACCESS_ALL);
	t_local_ep(s->qp, &ep);
	ep.rkey = s->mr->rkey;
	ep.addr = (uintptr_t)s->buf;
	ep.len = REGION;
	s->oob = oob_open(server, ip, port);
	oob_send(s->oob, &ep, sizeof(ep));
	if (!oob_recv(s->oob, &s->peer, sizeof(s->peer), OOB_MS))
		T_FAIL("no endpoint from the other side");
	t_conn_opts_default(&o); /* 67 ms timeout, 7 retries: ~0.5 s to give up */
	t_connect(s->qp, &s->peer, &o);
	printf("%s: connected, GID ...%u.%u.%u.%u:%u -> ...%u.%u.%u.%u:%u\n",
	       server ? "server" : "client", ep.gid.raw[12], ep.gid.raw[13], ep.gid.raw[14],
	       ep.gid.raw[15], ep.gid.raw[8] << 8 | ep.gid.raw[9], s->peer.gid.raw[12],
	       s->peer.gid.raw[13], s->peer.gid.raw[14], s->peer.gid.raw[15],
	       s->peer.gid.raw[8] << 8 | s->peer.gid.raw[9]);
	fflush(stdout);
}

static int run_server(struct side *s)
{
	uint64_t n = 0;
	uint8_t want[MSG];

	/* the client's count of WRITEs done, or nothing if the wire is cut */
	if (!oob_recv(s->oob, &n, sizeof(n), OOB_MS)) {
		printf("server: no verdict from the client within %d ms\n", OOB_MS);
		return 3;
	}
	t_fill(want, MSG, (uint32_t)(n - 1));
	CHECK_MEM(s->buf + ((n - 1) % (REGION / MSG)) * MSG, want, MSG);
	printf("server: the client's %llu WRITEs arrived, the last one checked\n",
	       (unsigned long long)n);
	return T_EXIT_PASS;
}

static void post_write(struct side *s, uint64_t i)
{
	uint32_t slot = (uint32_t)(i % (REGION / MSG));
	struct ibv_sge sge = {
	    .addr = (uintptr_t)s->buf + slot * MSG, .length = MSG, .lkey = s->mr->lkey};
	struct ibv_send_wr wr = {
	    .wr_id = i,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = IBV_WR_RDMA_WRITE,
	    .send_flags = i % SIGNAL == SIGNAL - 1 ? IBV_SEND_SIGNALED : 0,
	    .wr.rdma = {.remote_addr = s->peer.addr + slot * MSG, .rkey = s->peer.rkey}};

	t_fill(s->buf + slot * MSG, MSG, (uint32_t)i);
	t_post_send(s->qp, &wr);
}

static int run_client(struct side *s, uint64_t n, unsigned bound_ms)
{
	uint64_t posted = 0, done = 0, start = t_now_ms(), last = start;

	n -= n % SIGNAL; /* the last WRITE is a signaled one */
	printf("client: streaming %llu WRITEs of %u bytes\n", (unsigned long long)n, MSG);
	fflush(stdout);
	while (done < n) {
		struct ibv_wc wc;
		int r;

		while (posted < n && posted - done < WINDOW)
			post_write(s, posted++);
		r = ibv_poll_cq(s->cq, 1, &wc);
		if (r < 0) {
			printf("client: ibv_poll_cq failed: %d\n", r);
			return 1;
		}
		if (!r) {
			if (t_now_ms() - last > bound_ms) {
				printf(
				    "client: HANG: no completion for %u ms (%llu of %llu done)\n",
				    bound_ms, (unsigned long long)done, (unsigned long long)n);
				return 4;
			}
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			printf("client: transfer failed: %s on WRITE %llu, %llu WRITEs "
			       "completed, %llu ms after the last success\n",
			       t_wc_status_str(wc.status), (unsigned long long)wc.wr_id,
			       (unsigned long long)done, (unsigned long long)(t_now_ms() - last));
			return 3;
		}
		done = wc.wr_id + 1;
		last = t_now_ms();
	}
	printf("client: %llu WRITEs completed in %llu ms\n", (unsigned long long)done,
	       (unsigned long long)(t_now_ms() - start));
	oob_send(s->oob, &done, sizeof(done));
	return T_EXIT_PASS;
}

int main(int argc, char **argv)
{
	struct side s;
	bool server = argc == 4 && !strcmp(argv[1], "server");

	memset(&s, 0, sizeof(s));
	if (!server && !(argc == 6 && !strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: %s server ADDR PORT | client ADDR PORT N BOUND_MS\n",
		        argv[0]);
		return 1;
	}
	setup(&s, server, argv[2], atoi(argv[3]));
	if (server)
		return run_server(&s);
	return run_client(&s, strtoull(argv[4], NULL, 0), (unsigned)atoi(argv[5]));
}
