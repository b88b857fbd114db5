// SPDX-License-Identifier: MIT
/*
 * An ordinary UDP program (kernel sockets, nothing of verbs) that sends
 * COUNT datagrams of mixed sizes (IPv4 packets of 64..1500 bytes) to
 * DST:PORT, at most WINDOW unanswered at a time, and checks that each comes
 * back byte for byte (an echo swaps addresses and ports, so the reply
 * arrives on the sending socket). Between them, every 10th datagram, one
 * goes to DST:PORT+1, which nothing may answer.
 *
 *   udp_blast DST PORT COUNT [WINDOW]
 *   udp_blast DST PORT COUNT once [RCVBUF]
 *
 * A datagram unanswered for RESEND_MS is sent again (UDP may drop); one
 * unanswered after MAX_TRIES sends fails the run, as does any echo that
 * differs from what was sent or any answer to PORT+1. Prints one line:
 * "sent N others M echoed N resent R seconds S rate P/s"; exit 0 on success.
 *
 * "once" (overload): COUNT datagrams to PORT sent back to back, each once,
 * none to PORT+1; echoes are taken meanwhile and until none came for
 * QUIET_MS. An echo that differs, or one twice, fails the run; the ones that
 * never came are counted, not failed. Prints "sent N send_failed F echoed E
 * lost L seconds S" (L = N - E; a send() that failed is not sent). RCVBUF
 * sets the socket's receive buffer (bytes; the kernel doubles it): a small
 * one makes the kernel drop echoes the program has not read yet.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RESEND_MS 300
#define MAX_TRIES 20
#define MAX_LEN   1472 /* 1500 - IPv4 - UDP */
#define QUIET_MS  2000
#define ONCE_MS   60000 /* the most a "once" run waits for echoes */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Datagram seq's length (UDP payload) and bytes. */
static size_t dgram(uint64_t seq, uint8_t *p)
{
	size_t len = 64 - 28 + (size_t)((seq * 7919u) % (1500 - 64 + 1));

	memcpy(p, &seq, sizeof(seq));
	for (size_t i = sizeof(seq); i < len; i++)
		p[i] = (uint8_t)(seq * 31 + i * 17 + (i >> 8));
	return len;
}

static int sock(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	int sz = 4 << 20;

	if (fd < 0) {
		perror("socket");
		exit(2);
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	return fd;
}

/* Take the echoes waiting on fd; answered[seq] marks each. 1: one differs or
 * came twice (the run fails); 0 otherwise, *got += how many. */
static int take_once(int fd, uint64_t sent, uint8_t *answered, uint64_t *got)
{
	uint8_t in[2048], out[MAX_LEN];

	for (;;) {
		ssize_t n = recv(fd, in, sizeof(in), MSG_DONTWAIT);
		uint64_t seq;

		if (n < 0)
			return 0;
		if (n < 8) {
			fprintf(stderr, "udp_blast: a %zd-byte answer\n", n);
			return 1;
		}
		memcpy(&seq, in, sizeof(seq));
		if (seq >= sent || (size_t)n != dgram(seq, out) || memcmp(in, out, (size_t)n)) {
			fprintf(stderr,
			        "udp_blast: the echo of datagram %llu (%zd bytes) differs\n",
			        (unsigned long long)seq, n);
			return 1;
		}
		if (answered[seq]++) {
			fprintf(stderr, "udp_blast: datagram %llu echoed twice\n",
			        (unsigned long long)seq);
			return 1;
		}
		(*got)++;
	}
}

/* The overload run ("once"). */
static int blast_once(int fd, uint64_t count)
{
	uint64_t sent = 0, failed = 0, got = 0, t0 = now_ms(), last;
	uint8_t out[MAX_LEN], *answered = calloc(count + 1, 1);
	int rc = 1;

	if (!answered)
		return 2;

	for (uint64_t seq = 0; seq < count; seq++) {
		size_t len = dgram(sent, out);

		if (send(fd, out, len, 0) == (ssize_t)len)
			sent++;
		else
			failed++; /* not sent: the next datagram takes its number */
		if (seq % 32 == 31 && take_once(fd, sent, answered, &got))
			goto out;
	}
	last = now_ms();
	while (now_ms() - last < QUIET_MS && now_ms() - t0 < ONCE_MS) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t before = got;

		if (poll(&p, 1, 100) > 0 && take_once(fd, sent, answered, &got))
			goto out;
		if (got != before)
			last = now_ms();
	}
	printf("sent %llu send_failed %llu echoed %llu lost %llu seconds %.2f\n",
	       (unsigned long long)sent, (unsigned long long)failed, (unsigned long long)got,
	       (unsigned long long)(sent - got), (double)(now_ms() - t0) / 1000.0);
	rc = 0;
out:
	free(answered);
	return rc;
}

/* The run; main frees what it allocated whatever this returns. */
static int blast(int argc, char **argv, uint64_t **sent_at_p, uint64_t **tries_p)
{
	struct sockaddr_in dst = {.sin_family = AF_INET}, other;
	uint64_t count, window, next = 0, done = 0, resent = 0, others = 0;
	uint64_t *sent_at, *tries, t0;
	uint8_t out[MAX_LEN], in[2048];
	int fd, fd2;

	if (argc < 4) {
		fprintf(stderr, "usage: udp_blast DST PORT COUNT [WINDOW]\n");
		return 2;
	}
	if (inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1)
		return 2;
	dst.sin_port = htons((uint16_t)atoi(argv[2]));
	other = dst;
	other.sin_port = htons((uint16_t)(atoi(argv[2]) + 1));
	count = strtoull(argv[3], NULL, 0);
	window = argc > 4 ? strtoull(argv[4], NULL, 0) : 64;
	sent_at = *sent_at_p = calloc(count + 1, sizeof(*sent_at));
	tries = *tries_p = calloc(count + 1, sizeof(*tries));
	if (!sent_at || !tries)
		return 2;
	fd = sock();
	if (connect(fd, (struct sockaddr *)&dst, sizeof(dst))) {
		perror("connect");
		return 2;
	}
	if (argc > 4 && !strcmp(argv[4], "once")) {
		if (argc > 5) {
			int sz = atoi(argv[5]);

			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
		}
		return blast_once(fd, count);
	}
	fd2 = sock();
	t0 = now_ms();
	while (done < count) {
		struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = fd2, .events = POLLIN}};
		uint64_t now = now_ms();

		/* fill the window, oldest resends first */
		for (uint64_t s = done; s < next && s < done + window; s++) {
			if (sent_at[s] == UINT64_MAX || now - sent_at[s] < RESEND_MS)
				continue;
			if (++tries[s] > MAX_TRIES) {
				fprintf(stderr, "udp_blast: datagram %llu never answered\n",
				        (unsigned long long)s);
				return 1;
			}
			send(fd, out, dgram(s, out), 0);
			sent_at[s] = now;
			resent++;
		}
		while (next < count && next - done < window) {
			size_t len = dgram(next, out);

			if (send(fd, out, len, 0) != (ssize_t)len && errno != ENOBUFS) {
				perror("send");
				return 2;
			}
			sent_at[next] = now;
			tries[next] = 1;
			if (next % 10 == 0) {
				sendto(fd2, out, len, 0, (struct sockaddr *)&other, sizeof(other));
				others++;
			}
			next++;
		}
		if (poll(p, 2, 50) <= 0)
			continue;
		if (p[1].revents) {
			fprintf(stderr, "udp_blast: an answer came to the port nothing serves\n");
			return 1;
		}
		for (;;) {
			ssize_t n = recv(fd, in, sizeof(in), MSG_DONTWAIT);
			uint64_t seq;

			if (n < 0)
				break;
			if (n < 8) {
				fprintf(stderr, "udp_blast: a %zd-byte answer\n", n);
				return 1;
			}
			memcpy(&seq, in, sizeof(seq));
			if (seq >= next || (size_t)n != dgram(seq, out) ||
			    memcmp(in, out, (size_t)n)) {
				fprintf(
				    stderr,
				    "udp_blast: the echo of datagram %llu (%zd bytes) differs\n",
				    (unsigned long long)seq, n);
				return 1;
			}
			sent_at[seq] = UINT64_MAX; /* answered (a resent one may come twice) */
			while (done < next && sent_at[done] == UINT64_MAX)
				done++;
		}
	}
	{
		struct pollfd p = {.fd = fd2, .events = POLLIN};
		double s = (double)(now_ms() - t0) / 1000.0;

		if (poll(&p, 1, 300) > 0) {
			fprintf(stderr, "udp_blast: an answer came to the port nothing serves\n");
			return 1;
		}
		printf("sent %llu others %llu echoed %llu resent %llu seconds %.2f rate %.0f/s\n",
		       (unsigned long long)count, (unsigned long long)others,
		       (unsigned long long)done, (unsigned long long)resent, s,
		       s > 0 ? (double)count / s : 0.0);
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t *sent_at = NULL, *tries = NULL;
	int rc = blast(argc, argv, &sent_at, &tries);

	free(sent_at);
	free(tries);
	return rc;
}
