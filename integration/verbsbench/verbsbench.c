// verbsbench: the C peer of purerdma's uverbs VM tests (rdma-core 44,
// libibverbs). It makes the verbs calls the Go tests compare with:
//
//   verbsbench calls DEV        query_port(1), alloc_pd, create_cq(16),
//                               destroy_cq, dealloc_pd: the requests the
//                               golden-bytes test captures with rdmacapture
//   verbsbench serve DEV        reads lines "OP N" on stdin (OP one of
//                               bare: a bare RDMA_VERBS_IOCTL round trip,
//                               an unknown method, EPROTONOSUPPORT;
//                               queryport, pd, cq, qp), runs OP N
//                               times and answers with one line, the
//                               ns/op: the Go test interleaves its own
//                               chunks with these in one process of each
//                               side. qp is ibv_create_qp (RC, 16/16 WRs,
//                               one SGE, on one PD and CQ made once) and
//                               ibv_destroy_qp.
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

/* serve: one chunk of OP per line of stdin, the ns/op on stdout. */
static void serve(struct ibv_context *ctx)
{
	struct ib_uverbs_ioctl_hdr bare;
	struct ibv_qp_init_attr qa;
	struct ibv_port_attr pa;
	struct ibv_pd *qpd;
	struct ibv_cq *qcq;
	char line[64], op[16];
	long n;
	double t;

	memset(&bare, 0, sizeof(bare));
	bare.length = sizeof(bare);
	bare.method_id = 0x14;
	bare.driver_id = 14; /* RDMA_DRIVER_RXE */
	qpd = ibv_alloc_pd(ctx);
	qcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!qpd || !qcq)
		die("qp's pd and cq");
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qcq;
	qa.recv_cq = qcq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "%15s %ld", op, &n) != 2 || n <= 0) {
			fprintf(stderr, "bad line: %s", line);
			exit(2);
		}
		t = now_ns();
		for (long i = 0; i < n; i++) {
			if (!strcmp(op, "bare")) {
				if (ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, &bare) == 0 || errno != EPROTONOSUPPORT)
					die("bare ioctl");
			} else if (!strcmp(op, "queryport")) {
				if (ibv_query_port(ctx, 1, &pa))
					die("ibv_query_port");
			} else if (!strcmp(op, "pd")) {
				struct ibv_pd *pd = ibv_alloc_pd(ctx);

				if (!pd || ibv_dealloc_pd(pd))
					die("alloc/dealloc pd");
			} else if (!strcmp(op, "cq")) {
				struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);

				if (!cq || ibv_destroy_cq(cq))
					die("create/destroy cq");
			} else if (!strcmp(op, "qp")) {
				struct ibv_qp *qp = ibv_create_qp(qpd, &qa);

				if (!qp || ibv_destroy_qp(qp))
					die("create/destroy qp");
			} else {
				fprintf(stderr, "unknown op %s\n", op);
				exit(2);
			}
		}
		printf("%.1f\n", (now_ns() - t) / n);
	}
	if (ibv_destroy_cq(qcq) || ibv_dealloc_pd(qpd))
		die("qp's pd and cq");
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;

	if (argc < 3 || (strcmp(argv[1], "calls") && strcmp(argv[1], "serve"))) {
		fprintf(stderr, "usage: verbsbench calls DEV | verbsbench serve DEV\n");
		return 2;
	}
	ctx = open_dev(argv[2]);
	if (!strcmp(argv[1], "calls"))
		calls(ctx);
	else
		serve(ctx);
	if (ibv_close_device(ctx))
		die("ibv_close_device");
	return 0;
}
