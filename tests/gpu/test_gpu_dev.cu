/* SPDX-License-Identifier: MIT */
/*
 * GPU data path, two processes, through gnic-emu: CUDA kernels on the
 * client post puts (thread, warp and CTA scope), signals, atomics and gets
 * into the server's GPU memory; the server waits for the signal in a kernel
 * and checks every byte. Runs once per doorbell mode (SM, BlueFlame,
 * CPU-assisted, CPU proxy).
 *
 *   test_gpu_dev            fork a server and a client, run all, exit 0/1/77
 *   test_gpu_dev --bench    also print put rates (for docs/perf.md)
 *   --host-target           the server's buffer in pinned host memory (the
 *                           default with one GPU: see main())
 *   --host-wait, --query-wait  other ways for the server to wait (diagnostics)
 *
 * Exit 77 (skip) when there is no GPU. Every wait is bounded.
 */
#include <cuda_runtime.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gnic/gnic.h>
#include <gnic/gnic_dev.cuh>

#include "gpu_check.h"

#define SLOT    64
#define CTAS    8
#define THREADS 128
#define NSLOTS  (CTAS * THREADS)
#define TMO_NS  10000000000ull

/* SC_MIXED: thread scope with the lanes of a warp arriving apart, each
 * asking for a ticket and waiting for it (coalesced groups of every size) */
enum scope { SC_THREAD, SC_WARP, SC_CTA, SC_MIXED, SC_COUNT };
static const char *scope_name[] = {"thread", "warp", "cta", "mixed"};

/* What the server publishes to the client. */
struct srv_info {
	struct gnic_blob blob;
	struct gnic_rmem data; /* GPU memory, NSLOTS * SLOT */
	struct gnic_rmem sig;  /* host memory: signal word + atomic counter */
};

static __host__ __device__ uint8_t pattern(uint32_t slot, uint32_t i, uint32_t round)
{
	return (uint8_t)(slot * 13 + i * 7 + round * 101 + 1);
}

__global__ void fill_kernel(uint8_t *src, uint32_t round)
{
	uint32_t slot = blockIdx.x * blockDim.x + threadIdx.x;

	for (uint32_t i = 0; i < SLOT; i++)
		src[slot * SLOT + i] = pattern(slot, i, round);
}

/* One SLOT-byte put at the given scope (warp/CTA: every lane calls).
 * ticket: SC_MIXED's ticket, or NULL. */
__device__ int put_scoped(struct gnic_dev_qp *qp, int scope, const uint8_t *l, uint32_t lkey,
                          uint64_t r, uint32_t rkey, unsigned long long *ticket)
{
	if (scope == SC_MIXED) {
		uint32_t lane = threadIdx.x & 31;
		uint64_t t = 0;
		int rc;

		if (lane % 3)
			__nanosleep(200 * (lane % 5));
		rc = gnic_dev_put(qp, l, lkey, r, rkey, SLOT, GNIC_DEV_F_SIGNAL, &t);
		if (ticket)
			*ticket = t;
		return rc ? rc : gnic_dev_wait(qp, t);
	}
	if (scope == SC_THREAD)
		return gnic_dev_put(qp, l, lkey, r, rkey, SLOT, 0, NULL);
	if (scope == SC_WARP)
		return gnic_dev_put_warp(qp, l, lkey, r, rkey, SLOT, 0);
	return gnic_dev_put_cta(qp, l, lkey, r, rkey, SLOT, 0);
}

/* Client: every thread puts its slot, each CTA then signals once. */
__global__ void put_kernel(struct gnic_dev_qp *qp, const uint8_t *src, uint32_t lkey,
                           struct srv_info info, int scope, unsigned long long *tickets,
                           int *rc_out)
{
	uint32_t slot = blockIdx.x * blockDim.x + threadIdx.x;
	const uint8_t *l = src + (size_t)slot * SLOT;
	uint64_t r = info.data.addr + (uint64_t)slot * SLOT;
	int rc;

	rc = put_scoped(qp, scope, l, lkey, r, info.data.rkey, tickets + slot);
	if (rc)
		atomicCAS(rc_out, 0, rc);
	__syncthreads();
	if (threadIdx.x == 0) {
		rc = gnic_dev_quiet(qp);
		if (rc == 0)
			rc = gnic_dev_signal(qp, info.sig.addr, info.sig.rkey, 1, 0);
		if (rc == 0)
			rc = gnic_dev_quiet(qp);
		if (rc)
			atomicCAS(rc_out, 0, rc);
	}
}

/* Client: atomics and a get, one thread. */
__global__ void misc_kernel(struct gnic_dev_qp *qp, uint8_t *dst, uint32_t lkey,
                            struct srv_info info, unsigned long long *old_out, int *rc_out)
{
	uint64_t old = 0;
	int rc = gnic_dev_atomic_fetch_add(qp, info.sig.addr + 8, info.sig.rkey, 5, &old);

	old_out[0] = old;
	if (rc == 0)
		rc = gnic_dev_atomic_cas(qp, info.sig.addr + 8, info.sig.rkey, old + 5, 1000, &old);
	old_out[1] = old;
	if (rc == 0)
		rc =
		    gnic_dev_get_wait(qp, dst, lkey, info.data.addr, info.data.rkey, NSLOTS * SLOT);
	*rc_out = rc;
}

/* Server: wait in a kernel for the client's CTAs to signal. */
__global__ void wait_kernel(const uint64_t *sig, uint64_t want, int *rc_out)
{
	*rc_out = gnic_dev_wait_signal(sig, GNIC_CMP_GE, want, TMO_NS);
}

/* Client, --bench: puts per second at each scope, many rounds. */
__global__ void bench_kernel(struct gnic_dev_qp *qp, const uint8_t *src, uint32_t lkey,
                             struct srv_info info, int scope, int rounds, int *rc_out)
{
	/* more threads than slots: they share slots (the bench checks no data) */
	uint32_t slot = (blockIdx.x * blockDim.x + threadIdx.x) % NSLOTS;
	int rc = 0;

	for (int k = 0; k < rounds && rc == 0; k++) {
		const uint8_t *l = src + (size_t)slot * SLOT;
		uint64_t r = info.data.addr + (uint64_t)slot * SLOT;

		rc = put_scoped(qp, scope, l, lkey, r, info.data.rkey, NULL);
	}
	__syncthreads();
	if (threadIdx.x == 0 && rc == 0)
		rc = gnic_dev_quiet(qp);
	if (rc)
		atomicCAS(rc_out, 0, rc);
}

static int server_gpu; /* GPU 1 when there are two */

static int cmp_u64(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;

	return x < y ? -1 : x > y;
}

static struct gnic_ctx *open_ctx(int gpu)
{
	struct gnic_ctx_attr ca;
	struct gnic_ctx *ctx;

	CKC(cudaSetDevice(gpu));
	gnic_ctx_attr_init(&ca);
	ca.provider = GNIC_PROVIDER_EMU;
	ca.gpu = gpu;
	CK(gnic_ctx_create(&ca, &ctx));
	return ctx;
}

static struct gnic_qp *make_qp(struct gnic_ctx *ctx, enum gnic_db_mode mode)
{
	struct gnic_qp_attr qa;
	struct gnic_qp *qp;

	gnic_qp_attr_init(&qa);
	qa.db_mode = mode;
	qa.share = GNIC_SHARE_GPU;
	qa.sq_depth = 4096;
	CK(gnic_qp_create(ctx, &qa, &qp));
	return qp;
}

static void report_qp_error(struct gnic_qp *qp, const char *who)
{
	struct gnic_qp_error e;

	if (gnic_qp_error(qp, &e) == GNIC_OK && e.dev_status)
		fprintf(stderr, "%s: QP error: %s\n", who, e.text);
}

static bool host_target; /* --host-target: the server's buffer in pinned host memory */
static bool host_wait;   /* --host-wait: the server waits for the signal on the host */
static bool host_source; /* --host-source: the client puts from pinned host memory */
static bool query_wait;  /* --query-wait: poll cudaStreamQuery, no cudaDeviceSynchronize */

static int server(struct gnic_boot *boot, enum gnic_db_mode mode)
{
	struct gnic_ctx *ctx = open_ctx(server_gpu);
	struct gnic_qp *qp = make_qp(ctx, mode);
	struct srv_info mine, all[2];
	struct gnic_mr *dmr, *smr;
	uint64_t *sig;
	uint8_t *data, *host;
	int *rc_dev, rc = 0, fails = 0;

	if (host_target)
		CKC(cudaHostAlloc((void **)&data, NSLOTS * SLOT, cudaHostAllocMapped));
	else
		CKC(cudaMalloc((void **)&data, NSLOTS * SLOT));
	CKC(cudaMemset(data, 0, NSLOTS * SLOT));
	CKC(cudaHostAlloc((void **)&sig, 4096, cudaHostAllocMapped));
	CKC(cudaMalloc((void **)&rc_dev, sizeof(int)));
	host = (uint8_t *)malloc(NSLOTS * SLOT);
	CK(gnic_mr_reg(ctx, data, NSLOTS * SLOT, GNIC_ACCESS_ALL, &dmr));
	CK(gnic_mr_reg(ctx, sig, 4096, GNIC_ACCESS_ALL, &smr));
	memset(&mine, 0, sizeof(mine));
	CK(gnic_qp_export(qp, &mine.blob));
	gnic_mr_rmem(dmr, &mine.data);
	gnic_mr_rmem(smr, &mine.sig);
	CK(gnic_boot_allgather(boot, &mine, all, sizeof(mine)));
	CK(gnic_qp_connect(qp, &all[1].blob));
	for (int round = 0; round < SC_COUNT; round++) {
		uint64_t *sig_dev;

		sig[0] = 0;
		sig[1] = 100;
		CKC(cudaHostGetDevicePointer((void **)&sig_dev, sig, 0));
		CK(gnic_boot_barrier(boot)); /* ready */
		if (host_wait) {
			struct timespec t0, t;

			clock_gettime(CLOCK_MONOTONIC, &t0);
			rc = GNIC_DEV_ERR_TIMEOUT;
			do {
				if (__atomic_load_n(&sig[0], __ATOMIC_ACQUIRE) >= CTAS)
					rc = 0;
				clock_gettime(CLOCK_MONOTONIC, &t);
			} while (rc && t.tv_sec - t0.tv_sec < 10);
		} else {
			wait_kernel<<<1, 1>>>(sig_dev, CTAS, rc_dev);
			while (query_wait && cudaStreamQuery(0) == cudaErrorNotReady)
				usleep(100);
			CKC(cudaDeviceSynchronize());
			CKC(cudaMemcpy(&rc, rc_dev, sizeof(int), cudaMemcpyDeviceToHost));
		}
		CKC(cudaMemcpy(host, data, NSLOTS * SLOT, cudaMemcpyDeviceToHost));
		for (uint32_t s = 0; s < NSLOTS && !rc; s++)
			for (uint32_t i = 0; i < SLOT; i++)
				if (host[s * SLOT + i] != pattern(s, i, round)) {
					fprintf(stderr,
					        "server: %s scope, slot %u byte %u: %u != %u\n",
					        scope_name[round], s, i, host[s * SLOT + i],
					        pattern(s, i, round));
					rc = 1;
					break;
				}
		if (rc)
			fprintf(stderr, "server: mode %d %s scope: FAIL (rc %d)\n", mode,
			        scope_name[round], rc);
		fails += rc != 0;
		CK(gnic_boot_barrier(boot)); /* checked: client runs atomics/get */
		CK(gnic_boot_barrier(boot)); /* client done with this round */
		if (round == 0 && sig[1] != 1000) {
			fprintf(stderr, "server: atomic counter %llu, want 1000\n",
			        (unsigned long long)sig[1]);
			fails++;
		}
	}
	CK(gnic_boot_barrier(boot)); /* client bench done */
	report_qp_error(qp, "server");
	gnic_mr_dereg(dmr);
	gnic_mr_dereg(smr);
	gnic_qp_destroy(qp);
	gnic_ctx_destroy(ctx);
	return fails ? 1 : 0;
}

static double bench(struct gnic_dev_qp *dqp, const uint8_t *src, uint32_t lkey,
                    const struct srv_info *info, int scope, int ctas, int *rc_dev)
{
	const int rounds = 20;
	cudaEvent_t t0, t1;
	float ms = 0;
	int rc = 0;

	CKC(cudaEventCreate(&t0));
	CKC(cudaEventCreate(&t1));
	CKC(cudaMemset(rc_dev, 0, sizeof(int)));
	CKC(cudaEventRecord(t0));
	bench_kernel<<<ctas, THREADS>>>(dqp, src, lkey, *info, scope, rounds, rc_dev);
	CKC(cudaEventRecord(t1));
	CKC(cudaEventSynchronize(t1));
	CKC(cudaEventElapsedTime(&ms, t0, t1));
	CKC(cudaMemcpy(&rc, rc_dev, sizeof(int), cudaMemcpyDeviceToHost));
	if (rc) {
		fprintf(stderr, "bench: %s scope rc %d\n", scope_name[scope], rc);
		return -1;
	}
	return (double)ctas * THREADS * rounds / (ms / 1000.0) / 1e6;
}

/* Every put of the SC_MIXED round got a ticket of its own: the WQE index
 * after its WQE, which coalesced lanes must not share. */
static int check_tickets(unsigned long long *t, const unsigned long long *t_dev)
{
	CKC(cudaMemcpy(t, t_dev, NSLOTS * sizeof(*t), cudaMemcpyDeviceToHost));
	qsort(t, NSLOTS, sizeof(*t), cmp_u64);
	for (uint32_t i = 0; i < NSLOTS; i++)
		if (t[i] == 0 || (i && t[i] == t[i - 1])) {
			fprintf(stderr, "client: mixed scope: ticket %llu %s\n", t[i],
			        t[i] ? "given twice" : "missing");
			return 1;
		}
	return 0;
}

static int client(struct gnic_boot *boot, enum gnic_db_mode mode, bool do_bench)
{
	struct gnic_ctx *ctx = open_ctx(0);
	struct gnic_qp *qp = make_qp(ctx, mode);
	struct gnic_dev_qp *dqp = gnic_qp_dev(qp);
	struct srv_info mine, all[2];
	unsigned long long *old_dev, old[2], *tickets_dev, *tickets;
	struct gnic_mr *smr, *gmr;
	uint8_t *src, *got, *host;
	int *rc_dev, rc = 0, fails = 0;

	/* gnic-emu reads a GPU-memory source with one CUDA copy per message
	 * (~8 us): --host-source measures the posting path without that */
	if (host_source)
		CKC(cudaHostAlloc((void **)&src, NSLOTS * SLOT, cudaHostAllocMapped));
	else
		CKC(cudaMalloc((void **)&src, NSLOTS * SLOT));
	CKC(cudaMalloc((void **)&got, NSLOTS * SLOT));
	CKC(cudaMalloc((void **)&rc_dev, sizeof(int)));
	CKC(cudaMalloc((void **)&old_dev, 2 * sizeof(*old_dev)));
	CKC(cudaMalloc((void **)&tickets_dev, NSLOTS * sizeof(*tickets_dev)));
	tickets = (unsigned long long *)malloc(NSLOTS * sizeof(*tickets));
	host = (uint8_t *)malloc(NSLOTS * SLOT);
	CK(gnic_mr_reg(ctx, src, NSLOTS * SLOT, GNIC_ACCESS_ALL, &smr));
	CK(gnic_mr_reg(ctx, got, NSLOTS * SLOT, GNIC_ACCESS_ALL, &gmr));
	memset(&mine, 0, sizeof(mine));
	CK(gnic_qp_export(qp, &mine.blob));
	CK(gnic_boot_allgather(boot, &mine, all, sizeof(mine)));
	CK(gnic_qp_connect(qp, &all[0].blob));
	for (int round = 0; round < SC_COUNT; round++) {
		fill_kernel<<<CTAS, THREADS>>>(src, round);
		CKC(cudaMemset(rc_dev, 0, sizeof(int)));
		CKC(cudaDeviceSynchronize());
		CK(gnic_boot_barrier(boot)); /* server ready */
		CKC(cudaMemset(tickets_dev, 0, NSLOTS * sizeof(*tickets_dev)));
		put_kernel<<<CTAS, THREADS>>>(dqp, src, gnic_mr_lkey(smr), all[0], round,
		                              tickets_dev, rc_dev);
		CKC(cudaDeviceSynchronize());
		CKC(cudaMemcpy(&rc, rc_dev, sizeof(int), cudaMemcpyDeviceToHost));
		if (round == SC_MIXED && rc == 0)
			fails += check_tickets(tickets, tickets_dev);
		if (rc)
			fprintf(stderr, "client: mode %d %s scope: put rc %d\n", mode,
			        scope_name[round], rc);
		fails += rc != 0;
		CK(gnic_boot_barrier(boot)); /* server checked */
		if (round == 0) {
			misc_kernel<<<1, 1>>>(dqp, got, gnic_mr_lkey(gmr), all[0], old_dev, rc_dev);
			CKC(cudaDeviceSynchronize());
			CKC(cudaMemcpy(&rc, rc_dev, sizeof(int), cudaMemcpyDeviceToHost));
			CKC(cudaMemcpy(old, old_dev, sizeof(old), cudaMemcpyDeviceToHost));
			CKC(cudaMemcpy(host, got, NSLOTS * SLOT, cudaMemcpyDeviceToHost));
			if (rc || old[0] != 100 || old[1] != 105) {
				fprintf(stderr, "client: atomics rc %d old %llu %llu\n", rc, old[0],
				        old[1]);
				fails++;
			}
			for (uint32_t s = 0; s < NSLOTS && !rc; s++)
				for (uint32_t i = 0; i < SLOT; i++)
					if (host[s * SLOT + i] != pattern(s, i, 0)) {
						fprintf(stderr, "client: get slot %u byte %u\n", s,
						        i);
						fails++;
						s = NSLOTS;
						break;
					}
		}
		CK(gnic_boot_barrier(boot)); /* round done */
	}
	if (do_bench && !fails && mode == GNIC_DB_SM)
		for (int sc = 0; sc < SC_COUNT; sc++)
			for (int ctas = 1; ctas <= 132; ctas = ctas < 8 ? ctas * 2 : ctas * 4) {
				int c = ctas > 132 ? 132 : ctas;

				printf(
				    "bench mode %d scope %-6s ctas %3d threads %d: %.3f Mput/s\n",
				    mode, scope_name[sc], c, THREADS,
				    bench(dqp, src, gnic_mr_lkey(smr), &all[0], sc, c, rc_dev));
			}
	CK(gnic_boot_barrier(boot));
	report_qp_error(qp, "client");
	gnic_mr_dereg(smr);
	gnic_mr_dereg(gmr);
	gnic_qp_destroy(qp);
	gnic_ctx_destroy(ctx);
	return fails ? 1 : 0;
}

static int run_role(int rank, const char *addr, enum gnic_db_mode mode, bool do_bench)
{
	struct gnic_boot *boot;
	int rc;

	CK(gnic_boot_init(addr, rank, 2, 180000, &boot));
	rc = rank == 0 ? server(boot, mode) : client(boot, mode, do_bench);
	gnic_boot_fini(boot);
	return rc;
}

int main(int argc, char **argv)
{
	static const enum gnic_db_mode modes[] = {GNIC_DB_SM, GNIC_DB_BF, GNIC_DB_CPU,
	                                          GNIC_DB_PROXY};
	bool do_bench = false;

	setvbuf(stdout, NULL, _IOLBF, 0); /* children end with _exit() */
	int ngpu = 0, status = 0;
	pid_t probe;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--bench") == 0)
			do_bench = true;
		else if (strcmp(argv[i], "--host-target") == 0)
			host_target = true;
		else if (strcmp(argv[i], "--host-wait") == 0)
			host_wait = true;
		else if (strcmp(argv[i], "--host-source") == 0)
			host_source = true;
		else if (strcmp(argv[i], "--query-wait") == 0)
			query_wait = true;
		else {
			fprintf(stderr,
			        "usage: %s [--bench] [--host-target] [--host-wait] "
			        "[--query-wait]\n",
			        argv[0]);
			return 2;
		}
	}
	/* No CUDA in this process before fork: ask a child. */
	probe = fork();
	if (probe == 0)
		_exit(cudaGetDeviceCount(&ngpu) == cudaSuccess && ngpu > 0 ? (ngpu > 9 ? 9 : ngpu)
		                                                           : 77);
	waitpid(probe, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) == 77) {
		printf("SKIP: no CUDA GPU\n");
		return 77;
	}
	ngpu = WEXITSTATUS(status);
	/* gnic-emu writes a GPU-memory target with CUDA copies. Contexts of two
	 * processes on one GPU are time-sliced, so the server's copies wait
	 * behind the client's persistent kernel (a NIC would write by PCIe
	 * peer-to-peer). One GPU per process, or pinned host memory on one GPU. */
	if (ngpu >= 2)
		server_gpu = 1;
	else if (!host_target) {
		printf("one GPU: the server's buffer is pinned host memory (--host-target)\n");
		host_target = true;
	}
	for (int m = 0; m < (int)(sizeof(modes) / sizeof(modes[0])); m++) {
		char addr[64];
		int st;
		pid_t srv, cli;

		snprintf(addr, sizeof(addr), "127.0.0.1:%d", 19500 + (getpid() % 200) * 4 + m);
		/* both roles in children: a child of a process that initialised
		 * CUDA cannot use CUDA */
		fflush(stdout);
		srv = fork();
		if (srv == 0) {
			alarm(120);
			_exit(run_role(0, addr, modes[m], false));
		}
		cli = fork();
		if (cli == 0) {
			alarm(240);
			_exit(run_role(1, addr, modes[m], do_bench));
		}
		waitpid(cli, &status, 0);
		st = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
		waitpid(srv, &status, 0);
		st |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
		printf("db mode %d: %s\n", modes[m], st ? "FAIL" : "pass");
		if (st)
			return 1;
	}
	printf("all GPU data-path checks passed\n");
	return 0;
}
