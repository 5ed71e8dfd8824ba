// verbsbench: the C peer of purerdma's uverbs VM tests (rdma-core 44,
// libibverbs). It makes the verbs calls the Go tests compare with:
//
//   verbsbench calls DEV        query_port(1), alloc_pd, create_cq(16),
//                               destroy_cq, dealloc_pd: the requests the
//                               golden-bytes test captures with rdmacapture
//   verbsbench bench DEV N      N iterations each of: a bare
//                               RDMA_VERBS_IOCTL round trip (an unknown
//                               method, EPROTONOSUPPORT), ibv_query_port,
//                               ibv_alloc_pd+ibv_dealloc_pd,
//                               ibv_create_cq+ibv_destroy_cq; prints
//                               "NAME ns/op" lines
//
// Build on the host (Debian 12: gcc, libibverbs-dev 44):
//   sh integration/verbsbench/build.sh
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

static struct ibv_context *open_dev(const char *name)
{
	int n;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_context *ctx = NULL;

	if (!list) {
		perror("ibv_get_device_list");
		exit(1);
	}
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "cannot open %s\n", name);
		exit(1);
	}
	return ctx;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "%s: %s\n", what, strerror(errno));
	exit(1);
}

static void calls(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;
	struct ibv_pd *pd;
	struct ibv_cq *cq;

	if (ibv_query_port(ctx, 1, &pa))
		die("ibv_query_port");
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd");
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!cq)
		die("ibv_create_cq");
	if (ibv_destroy_cq(cq))
		die("ibv_destroy_cq");
	if (ibv_dealloc_pd(pd))
		die("ibv_dealloc_pd");
}

static void bench(struct ibv_context *ctx, long n)
{
	struct ibv_port_attr pa;
	double t;
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
	} bare;

	/* The floor: the kernel parses the header and finds no such method. */
	memset(&bare, 0, sizeof(bare));
	bare.hdr.length = sizeof(bare.hdr);
	bare.hdr.object_id = 0;
	bare.hdr.method_id = 0x14;
	bare.hdr.driver_id = 14; /* RDMA_DRIVER_RXE; the Go side uses the device's */
	t = now_ns();
	for (long i = 0; i < n; i++)
		if (ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, &bare) == 0 || errno != EPROTONOSUPPORT)
			die("bare ioctl");
	printf("BareIoctl %.0f\n", (now_ns() - t) / n);

	t = now_ns();
	for (long i = 0; i < n; i++)
		if (ibv_query_port(ctx, 1, &pa))
			die("ibv_query_port");
	printf("QueryPort %.0f\n", (now_ns() - t) / n);

	t = now_ns();
	for (long i = 0; i < n; i++) {
		struct ibv_pd *pd = ibv_alloc_pd(ctx);

		if (!pd || ibv_dealloc_pd(pd))
			die("alloc/dealloc pd");
	}
	printf("AllocDeallocPD %.0f\n", (now_ns() - t) / n);

	t = now_ns();
	for (long i = 0; i < n; i++) {
		struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);

		if (!cq || ibv_destroy_cq(cq))
			die("create/destroy cq");
	}
	printf("CreateDestroyCQ %.0f\n", (now_ns() - t) / n);
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;

	if (argc < 3 || (strcmp(argv[1], "calls") && strcmp(argv[1], "bench"))) {
		fprintf(stderr, "usage: verbsbench calls DEV | verbsbench bench DEV N\n");
		return 2;
	}
	ctx = open_dev(argv[2]);
	if (!strcmp(argv[1], "calls"))
		calls(ctx);
	else
		bench(ctx, argc > 3 ? atol(argv[3]) : 1000);
	if (ibv_close_device(ctx))
		die("ibv_close_device");
	return 0;
}
