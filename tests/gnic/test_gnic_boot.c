// SPDX-License-Identifier: MIT
/*
 * TCP bootstrap.
 *   test_gnic_boot spawn     execs 3 ranks (rank 0 last, so the others retry):
 *                            allgather, barriers, then the whole control-path
 *                            workflow: each rank opens gnic-emu, creates a QP
 *                            per peer, exchanges blobs and regions, connects,
 *                            WRITEs to every peer and checks what it got;
 *                            then the same with a QP group and
 *                            gnic_boot_connect_all (one QP per rank, the
 *                            rank's own QP looped back to itself)
 *   test_gnic_boot errors    no rank 0 / no other ranks -> TIMEOUT within the
 *                            bound; mismatched hellos and collectives ->
 *                            PROTOCOL; malformed arguments -> INVALID
 *   test_gnic_boot rank R N PORT   one rank (used by spawn)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gt.h"

#define NRANKS  3
#define BOOT_MS 20000
#define REGION  4096

static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CHECK(fd >= 0);
	CHECK_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* ---- one rank ---------------------------------------------------------------- */

struct hello {
	int32_t rank;
	int32_t pid;
	uint8_t pattern[100];
};

static void collectives(struct gnic_boot *boot, int rank, int n)
{
	struct hello mine = {.rank = rank, .pid = getpid()}, all[NRANKS];

	t_case("rank %d: allgather", rank);
	t_fill(mine.pattern, sizeof(mine.pattern), (uint32_t)rank);
	CHECK_GNIC(gnic_boot_allgather(boot, &mine, all, sizeof(mine)));
	for (int r = 0; r < n; r++) {
		uint8_t want[100];

		t_fill(want, sizeof(want), (uint32_t)r);
		CHECK_EQ(all[r].rank, r);
		CHECK_MEM(all[r].pattern, want, sizeof(want));
	}
	CHECK_EQ(all[rank].pid, getpid());
	t_case("rank %d: barriers, an empty allgather", rank);
	for (int i = 0; i < 5; i++)
		CHECK_GNIC(gnic_boot_barrier(boot));
	CHECK_GNIC(gnic_boot_allgather(boot, NULL, NULL, 0));
}

/* What rank r publishes: a blob per peer (index = peer) and its region. */
struct card {
	struct gnic_blob blobs[NRANKS];
	struct gnic_rmem region;
};

static void workflow(struct gnic_boot *boot, int rank, int n)
{
	struct gnic_ctx *ctx = gt_ctx();
	uint8_t *buf = t_alloc((size_t)REGION * (n + 1), 0);
	struct gnic_qp *qp[NRANKS] = {0};
	struct card mine = {0}, all[NRANKS];
	struct gnic_mr *mr;

	t_case("rank %d: QPs to every peer, exchange, connect", rank);
	CHECK_GNIC(gnic_mr_reg(ctx, buf, (size_t)REGION * (n + 1), GNIC_ACCESS_ALL, &mr));
	gnic_mr_rmem(mr, &mine.region);
	for (int r = 0; r < n; r++) {
		if (r == rank)
			continue;
		CHECK_GNIC(gnic_qp_create(ctx, NULL, &qp[r]));
		CHECK_GNIC(gnic_qp_export(qp[r], &mine.blobs[r]));
	}
	CHECK_GNIC(gnic_boot_allgather(boot, &mine, all, sizeof(mine)));
	for (int r = 0; r < n; r++)
		if (r != rank)
			CHECK_GNIC(gnic_qp_connect(qp[r], &all[r].blobs[rank]));
	CHECK_GNIC(gnic_boot_barrier(boot));

	t_case("rank %d: WRITE into every peer's slot for us", rank);
	t_fill(buf + (size_t)REGION * n, REGION, 1000u + (uint32_t)rank);
	for (int r = 0; r < n; r++)
		if (r != rank)
			gt_write(gnic_qp_dev(qp[r]), buf + (size_t)REGION * n, gnic_mr_lkey(mr),
			         all[r].region.addr + (uint64_t)REGION * rank, all[r].region.rkey,
			         REGION);
	CHECK_GNIC(gnic_boot_barrier(boot));
	for (int r = 0; r < n; r++) {
		uint8_t want[REGION];

		if (r == rank)
			continue;
		t_fill(want, REGION, 1000u + (uint32_t)r);
		CHECK_MEM(buf + (size_t)REGION * r, want, REGION);
	}
	CHECK_GNIC(gnic_boot_barrier(boot)); /* nobody tears down under a peer */
	for (int r = 0; r < n; r++)
		gnic_qp_destroy(qp[r]);
	gnic_mr_dereg(mr);
	gnic_ctx_destroy(ctx);
	free(buf);
}

/* The same exchange with a QP group: gnic_boot_connect_all() pairs QP p of
 * rank r with QP r of rank p, and QP r of rank r with itself. */
static void workflow_group(struct gnic_boot *boot, int rank, int n)
{
	struct gnic_ctx *ctx = gt_ctx();
	uint8_t *buf = t_alloc((size_t)REGION * (n + 1), 0);
	struct gnic_rmem mine, all[NRANKS];
	struct gnic_dev_qp *const *dqp;
	struct gnic_qp_group *g;
	struct gnic_mr *mr;

	t_case("rank %d: QP group, connect_all", rank);
	CHECK_GNIC(gnic_mr_reg(ctx, buf, (size_t)REGION * (n + 1), GNIC_ACCESS_ALL, &mr));
	gnic_mr_rmem(mr, &mine);
	CHECK_GNIC(gnic_qp_group_create(ctx, NULL, (uint32_t)n, &g));
	CHECK_EQ(gnic_qp_group_size(g), (uint32_t)n);
	CHECK_GNIC(gnic_boot_allgather(boot, &mine, all, sizeof(mine)));
	CHECK_GNIC(gnic_boot_connect_all(boot, g));
	dqp = gnic_qp_group_dev(g);
	for (int r = 0; r < n; r++)
		CHECK(dqp[r] == gnic_qp_dev(gnic_qp_group_qp(g, (uint32_t)r)));

	t_case("rank %d: WRITE through the group into every rank, itself included", rank);
	t_fill(buf + (size_t)REGION * n, REGION, 2000u + (uint32_t)rank);
	for (int r = 0; r < n; r++)
		gt_write(dqp[r], buf + (size_t)REGION * n, gnic_mr_lkey(mr),
		         all[r].addr + (uint64_t)REGION * rank, all[r].rkey, REGION);
	CHECK_GNIC(gnic_boot_barrier(boot));
	for (int r = 0; r < n; r++) {
		uint8_t want[REGION];

		t_fill(want, REGION, 2000u + (uint32_t)r);
		CHECK_MEM(buf + (size_t)REGION * r, want, REGION);
	}
	CHECK_GNIC(gnic_boot_barrier(boot));
	gnic_qp_group_destroy(g);
	gnic_mr_dereg(mr);
	gnic_ctx_destroy(ctx);
	free(buf);
}

static int run_rank(int rank, int n, int port)
{
	struct gnic_boot *boot = NULL;
	char addr[64];

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	t_case("rank %d of %d: init at %s", rank, n, addr);
	CHECK_GNIC(gnic_boot_init(addr, rank, n, BOOT_MS, &boot));
	collectives(boot, rank, n);
	workflow(boot, rank, n);
	workflow_group(boot, rank, n);
	gnic_boot_fini(boot);
	printf("rank %d: ok\n", rank);
	return T_EXIT_PASS;
}

/* ---- spawn ------------------------------------------------------------------- */

static pid_t spawn(const char *self, int rank, int port)
{
	char r[16], n[16], p[16];
	pid_t pid;

	snprintf(r, sizeof(r), "%d", rank);
	snprintf(n, sizeof(n), "%d", NRANKS);
	snprintf(p, sizeof(p), "%d", port);
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		execl(self, self, "rank", r, n, p, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Every child must exit 0 within the bound; stragglers are killed. */
static int reap(pid_t *pids, int n, unsigned ms)
{
	uint64_t deadline = t_now_ms() + ms;
	int left = n, failed = 0;

	while (left && t_now_ms() < deadline) {
		for (int i = 0; i < n; i++) {
			int status;

			if (!pids[i] || waitpid(pids[i], &status, WNOHANG) != pids[i])
				continue;
			if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				fprintf(stderr, "rank %d failed (status %#x)\n", i, status);
				failed++;
			}
			pids[i] = 0;
			left--;
		}
		t_sleep_ms(10);
	}
	for (int i = 0; i < n; i++) {
		if (pids[i]) {
			fprintf(stderr, "rank %d did not finish in %u ms\n", i, ms);
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
			failed++;
		}
	}
	return failed;
}

static int run_spawn(const char *self)
{
	int port = free_port();
	pid_t pids[NRANKS];

	t_case("spawn %d ranks on port %d", NRANKS, port);
	for (int r = NRANKS - 1; r >= 0; r--) {
		pids[r] = spawn(self, r, port);
		if (r == 1)
			t_sleep_ms(300); /* rank 0 comes late: the others retry */
	}
	if (reap(pids, NRANKS, 60000))
		T_FAIL("some ranks failed");
	return T_EXIT_PASS;
}

/* ---- errors ------------------------------------------------------------------ */

struct peer_arg {
	const char *addr;
	int rank, nranks;
	size_t len; /* allgather size, 0: none */
	gnic_status_t st;
};

static void *peer_main(void *p)
{
	struct peer_arg *a = p;
	struct gnic_boot *boot = NULL;
	uint8_t mine[8] = {0}, all[64];

	a->st = gnic_boot_init(a->addr, a->rank, a->nranks, 3000, &boot);
	if (!a->st && a->len)
		a->st = gnic_boot_allgather(boot, mine, all, a->len);
	gnic_boot_fini(boot);
	return NULL;
}

static void timeouts(void)
{
	struct gnic_boot *boot = NULL;
	char addr[64];
	uint64_t t0, dt;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
	t_case("rank 1 without rank 0: TIMEOUT within the bound");
	t0 = t_now_ms();
	CHECK_GNIC_ERR(gnic_boot_init(addr, 1, 2, 500, &boot), GNIC_ERR_TIMEOUT);
	dt = t_now_ms() - t0;
	printf("  after %llu ms\n", (unsigned long long)dt);
	CHECK(dt >= 450 && dt < 2000);
	CHECK(boot == NULL);

	t_case("rank 0 alone of 3: TIMEOUT within the bound");
	t0 = t_now_ms();
	CHECK_GNIC_ERR(gnic_boot_init(addr, 0, 3, 300, &boot), GNIC_ERR_TIMEOUT);
	dt = t_now_ms() - t0;
	CHECK(dt >= 250 && dt < 2000);
	CHECK(strstr(gnic_last_error(), "1 of 3"));
}

static void mismatched_hello(void)
{
	struct gnic_boot *boot = NULL;
	char addr[64];
	struct peer_arg p = {.addr = addr, .rank = 1, .nranks = 3};
	pthread_t th;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
	t_case("hello: 2 ranks against 3 -> PROTOCOL on both sides");
	CHECK_EQ(pthread_create(&th, NULL, peer_main, &p), 0);
	CHECK_GNIC_ERR(gnic_boot_init(addr, 0, 2, 3000, &boot), GNIC_ERR_PROTOCOL);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(p.st, GNIC_ERR_PROTOCOL);
}

static void mismatched_collective(void)
{
	struct gnic_boot *boot = NULL;
	char addr[64];
	struct peer_arg p = {.addr = addr, .rank = 1, .nranks = 2, .len = 4};
	uint8_t mine[8] = {0}, all[16];
	pthread_t th;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
	t_case("allgather of 8 bytes against 4 -> PROTOCOL");
	CHECK_EQ(pthread_create(&th, NULL, peer_main, &p), 0);
	CHECK_GNIC(gnic_boot_init(addr, 0, 2, 3000, &boot));
	CHECK_GNIC_ERR(gnic_boot_allgather(boot, mine, all, 8), GNIC_ERR_PROTOCOL);
	gnic_boot_fini(boot); /* the peer sees the connection close */
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_NE(p.st, GNIC_OK);
}

static void bad_args(void)
{
	static const char *const addrs[] = {
	    "127.0.0.1",    "127.0.0.1:", "127.0.0.1:0",   "127.0.0.1:70000",
	    "127.0.0.1:-5", ":99",        "127.0.0.1:12x", "no.such.host.invalid:5000"};
	struct gnic_boot *boot = NULL;
	uint8_t x;

	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		t_case("bad address \"%s\"", addrs[i]);
		CHECK_GNIC_ERR(gnic_boot_init(addrs[i], 1, 2, 100, &boot), GNIC_ERR_INVALID);
	}
	t_case("bad ranks, timeout, pointers");
	CHECK_GNIC_ERR(gnic_boot_init("127.0.0.1:5000", 2, 2, 100, &boot), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_boot_init("127.0.0.1:5000", -1, 2, 100, &boot), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_boot_init("127.0.0.1:5000", 0, 0, 100, &boot), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_boot_init("127.0.0.1:5000", 0, 1, 0, &boot), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_boot_init(NULL, 0, 1, 100, &boot), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_boot_init("127.0.0.1:5000", 0, 1, 100, NULL), GNIC_ERR_INVALID);
	CHECK_GNIC_ERR(gnic_boot_barrier(NULL), GNIC_ERR_INVALID);

	t_case("one rank: no sockets, collectives are copies");
	CHECK_GNIC(gnic_boot_init("127.0.0.1:5000", 0, 1, 100, &boot));
	x = 42;
	CHECK_GNIC(gnic_boot_allgather(boot, &x, &x, 1));
	CHECK_EQ(x, 42);
	CHECK_GNIC(gnic_boot_barrier(boot));
	CHECK_GNIC_ERR(gnic_boot_allgather(boot, NULL, &x, 1), GNIC_ERR_INVALID);
	gnic_boot_fini(boot);
	gnic_boot_fini(NULL);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "spawn";

	if (!strcmp(mode, "rank") && argc == 5)
		return run_rank(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	if (!strcmp(mode, "spawn"))
		return run_spawn(argv[0]);
	if (!strcmp(mode, "errors")) {
		bad_args();
		timeouts();
		mismatched_hello();
		mismatched_collective();
		return T_EXIT_PASS;
	}
	fprintf(stderr, "usage: %s spawn | errors | rank R N PORT\n", argv[0]);
	return T_EXIT_FAIL;
}
