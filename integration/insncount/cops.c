/* cops: rdma-core's operations between insnmark markers, the C half of
 * make bench's per-operation instruction table (goops is the Go half; both
 * make the same calls with the same arguments, in the same order).
 *
 *   cops N      N samples of each operation, pinned to CPU 1
 *   cops warm W W PDs, CQs and QPs created and destroyed on rxe0, no
 *               windows (see warm)
 *   cops rate T R  T threads each calling ibv_read_counters R times on one
 *               object (the setup of sample 14), unpinned, no windows:
 *               guest.sh counts the whole run on every CPU
 *
 * Sample codes (the plugin's "op" column; goops uses 64 + the same code):
 *   1 open + close device (ibv_get_device_list, ibv_open_device,
 *     ibv_free_device_list, ibv_close_device)   rxe0
 *   2 ibv_query_port(1)                          3 ibv_query_gid_table
 *   4,5 ibv_alloc_pd + ibv_dealloc_pd, twice (Go: 4 Into, 5 plain)
 *   6,7 ibv_create_cq(16) + ibv_destroy_cq, twice (Go: 6 Into, 7 plain)
 *   8,9 ibv_create_qp(RC, 16/16 WRs, 1 SGE) + ibv_destroy_qp, twice (Go:
 *     8 Into, 9 plain)
 *  10 ibv_modify_qp RESET->INIT->RTR->RTS (three calls)
 *  11 ibv_reg_mr(4 KiB) + ibv_dereg_mr
 *  12 ibv_post_send: a signaled 64-byte RDMA WRITE on a connected RC QP
 *  13 ibv_poll_cq returning that completion (waited for outside the window)
 *  14 ibv_read_counters(2 values) of a counters object bound to a flow (mock0)
 *  15 umad_send of a vendor MAD, rxe0 to rxe1
 *  16 umad_recv of it (waited for outside the window)
 *  17 ibv_post_send on mock0 (libmlx5): a signaled 64-byte RDMA WRITE
 *  18 ibv_poll_cq on mock0 returning that completion
 * Samples that found nothing to poll or receive are recorded as 63 and
 * dropped by the report. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/umad.h>
#include <infiniband/verbs.h>

#define MARK(c) __asm__ volatile(".byte 0x0f,0x1f,0x80,%c0,%c1,0xfe,0x5a" ::"i"((c) & 0xff), "i"(((c) >> 8) & 0xff) : "memory")
#define START() MARK(0x0001)
#define STOP(n) MARK(0x0100 | (n))

static void die(const char *what)
{
	fprintf(stderr, "cops: %s: %s\n", what, strerror(errno));
	exit(1);
}

static struct ibv_context *open_dev(const char *name)
{
	int n;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_context *ctx = NULL;

	if (!list)
		return NULL;
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

static void to_rts(struct ibv_qp *qp, uint32_t remote, union ibv_gid *dgid)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify to INIT");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = remote;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.hop_limit = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify to RTR");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 1;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				      IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify to RTS");
}

/* rc_attr is the QP of the create samples: RC, 16/16 WRs, one SGE, on cq. */
static void rc_attr(struct ibv_qp_init_attr *qa, struct ibv_cq *cq)
{
	memset(qa, 0, sizeof *qa);
	qa->send_cq = cq;
	qa->recv_cq = cq;
	qa->qp_type = IBV_QPT_RC;
	qa->cap.max_send_wr = 16;
	qa->cap.max_recv_wr = 16;
	qa->cap.max_send_sge = 1;
	qa->cap.max_recv_sge = 1;
}

static void verbs_ops(int n)
{
	struct ibv_context *ctx;
	struct ibv_port_attr pa;
	struct ibv_qp_init_attr qa;
	struct ibv_gid_entry gids[64];
	union ibv_gid gid;

	for (int i = 0; i < n; i++) {
		START();
		struct ibv_context *c = open_dev("rxe0");
		int r = c ? ibv_close_device(c) : -1;
		STOP(1);
		if (r)
			die("open/close");
	}
	if (!(ctx = open_dev("rxe0")))
		die("open rxe0");
	struct ibv_pd *qpd = ibv_alloc_pd(ctx);
	struct ibv_cq *qcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!qpd || !qcq)
		die("pd/cq");
	if (ibv_query_gid(ctx, 1, 0, &gid))
		die("query gid");
	rc_attr(&qa, qcq);
	for (int i = 0; i < n; i++) {
		START();
		int r = ibv_query_port(ctx, 1, &pa);
		STOP(2);
		if (r)
			die("query_port");
	}
	for (int i = 0; i < n; i++) {
		START();
		ssize_t r = ibv_query_gid_table(ctx, gids, 64, 0);
		STOP(3);
		if (r < 0)
			die("query_gid_table");
	}
	/* Each create + destroy loop runs twice, as goops runs its Into and
	 * plain variants one after the other: the kernel's state (its handle
	 * allocator, its slabs) then moves through the same phases for both. */
	for (int i = 0; i < n; i++) {
		START();
		struct ibv_pd *pd = ibv_alloc_pd(ctx);
		int r = !pd || ibv_dealloc_pd(pd);
		STOP(4);
		if (r)
			die("pd");
	}
	for (int i = 0; i < n; i++) {
		START();
		struct ibv_pd *pd = ibv_alloc_pd(ctx);
		int r = !pd || ibv_dealloc_pd(pd);
		STOP(5);
		if (r)
			die("pd");
	}
	for (int i = 0; i < n; i++) {
		START();
		struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		int r = !cq || ibv_destroy_cq(cq);
		STOP(6);
		if (r)
			die("cq");
	}
	for (int i = 0; i < n; i++) {
		START();
		struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		int r = !cq || ibv_destroy_cq(cq);
		STOP(7);
		if (r)
			die("cq");
	}
	for (int i = 0; i < n; i++) {
		START();
		struct ibv_qp *qp = ibv_create_qp(qpd, &qa);
		int r = !qp || ibv_destroy_qp(qp);
		STOP(8);
		if (r)
			die("qp");
	}
	for (int i = 0; i < n; i++) {
		START();
		struct ibv_qp *qp = ibv_create_qp(qpd, &qa);
		int r = !qp || ibv_destroy_qp(qp);
		STOP(9);
		if (r)
			die("qp");
	}
	/* A pair of connected RC QPs on rxe0 for modify, post and poll. */
	struct ibv_qp *a = ibv_create_qp(qpd, &qa), *b = ibv_create_qp(qpd, &qa);
	if (!a || !b)
		die("qp pair");
	to_rts(b, a->qp_num, &gid);
	for (int i = 0; i < n; i++) {
		struct ibv_qp *q = ibv_create_qp(qpd, &qa);
		if (!q)
			die("qp");
		START();
		to_rts(q, b->qp_num, &gid);
		STOP(10);
		if (ibv_destroy_qp(q))
			die("destroy qp");
	}
	to_rts(a, b->qp_num, &gid);
	static char buf[4096] __attribute__((aligned(4096))), dst[4096] __attribute__((aligned(4096)));
	for (int i = 0; i < n; i++) {
		START();
		struct ibv_mr *mr = ibv_reg_mr(qpd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
		int r = !mr || ibv_dereg_mr(mr);
		STOP(11);
		if (r)
			die("reg_mr");
	}
	struct ibv_mr *lmr = ibv_reg_mr(qpd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *rmr = ibv_reg_mr(qpd, dst, sizeof dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!lmr || !rmr)
		die("mr");
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 64, .lkey = lmr->lkey};
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc[1];
	for (int i = 0; i < n; i++) {
		memset(&wr, 0, sizeof wr);
		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = (uintptr_t)dst;
		wr.wr.rdma.rkey = rmr->rkey;
		START();
		int r = ibv_post_send(a, &wr, &bad);
		STOP(12);
		if (r) {
			errno = r;
			die("post_send");
		}
		usleep(20000);
		START();
		int got = ibv_poll_cq(qcq, 1, wc);
		MARK(0x0100 | (got == 1 ? 13 : 63));
		while (got == 0)
			got = ibv_poll_cq(qcq, 1, wc);
		if (got < 0 || wc[0].status != IBV_WC_SUCCESS) {
			errno = EIO;
			die("poll_cq");
		}
	}
	ibv_dereg_mr(lmr);
	ibv_dereg_mr(rmr);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(qcq);
	ibv_dealloc_pd(qpd);
	ibv_close_device(ctx);
}

/* mlx5_ops posts and polls on mock0, libmlx5's data path: a pair of RC
 * QPs on mock0 connected to each other, 17 a signaled 64-byte RDMA WRITE
 * (WQE, doorbell record, the UAR doorbell, which on mock0 faults: the
 * model's doorbell), 18 the poll returning its completion. */
static void mlx5_ops(int n)
{
	struct ibv_context *ctx = open_dev("mock0");
	if (!ctx) {
		fprintf(stderr, "cops: no mock0: no mlx5 data-path samples\n");
		return;
	}
	union ibv_gid gid;
	if (ibv_query_gid(ctx, 1, 0, &gid))
		die("mock0 gid");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	if (!cq)
		die("mock0 pd/cq");
	struct ibv_qp_init_attr qa;
	memset(&qa, 0, sizeof qa);
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	struct ibv_qp *a = ibv_create_qp(pd, &qa), *b = ibv_create_qp(pd, &qa);
	if (!a || !b)
		die("mock0 qp pair");
	to_rts(a, b->qp_num, &gid);
	to_rts(b, a->qp_num, &gid);
	static char buf[4096] __attribute__((aligned(4096))), dst[4096] __attribute__((aligned(4096)));
	struct ibv_mr *lmr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *rmr = ibv_reg_mr(pd, dst, sizeof dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!lmr || !rmr)
		die("mock0 mr");
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 64, .lkey = lmr->lkey};
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc[1];
	for (int i = 0; i < n; i++) {
		memset(&wr, 0, sizeof wr);
		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = (uintptr_t)dst;
		wr.wr.rdma.rkey = rmr->rkey;
		START();
		int r = ibv_post_send(a, &wr, &bad);
		STOP(17);
		if (r) {
			errno = r;
			die("post_send");
		}
		usleep(20000);
		START();
		int got = ibv_poll_cq(cq, 1, wc);
		MARK(0x0100 | (got == 1 ? 18 : 63));
		while (got == 0)
			got = ibv_poll_cq(cq, 1, wc);
		if (got < 0 || wc[0].status != IBV_WC_SUCCESS) {
			errno = EIO;
			die("poll_cq");
		}
	}
	ibv_dereg_mr(lmr);
	ibv_dereg_mr(rmr);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
}

/* The readers of cops rate: each reads the object reads times. */
struct reader {
	pthread_t th;
	struct ibv_counters *cs;
	int reads;
};

static void *read_loop(void *arg)
{
	struct reader *r = arg;
	uint64_t v[2];
	for (int i = 0; i < r->reads; i++) {
		int err = ibv_read_counters(r->cs, v, 2, 0);
		if (err) {
			errno = err;
			die("read_counters");
		}
	}
	return NULL;
}

/* counters_ops reads a counters object bound to an L2 flow on mock0: n
 * samples on this thread, or, when threads > 0, threads threads reading it
 * n times each at once, with no windows (cops rate). */
static void counters_ops(int n, int threads)
{
	struct ibv_context *ctx = open_dev("mock0");
	if (!ctx) {
		fprintf(stderr, "cops: no mock0: no counters samples\n");
		return;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr qa;
	memset(&qa, 0, sizeof qa);
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RAW_PACKET;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_recv_sge = 1;
	struct ibv_qp *qp = pd && cq ? ibv_create_qp(pd, &qa) : NULL;
	struct ibv_counters_init_attr ia = {0};
	struct ibv_counters *cs = qp ? ibv_create_counters(ctx, &ia) : NULL;
	if (!cs)
		die("mock0 qp/counters");
	for (uint32_t i = 0; i < 2; i++) {
		struct ibv_counter_attach_attr aa = {.counter_desc = i ? IBV_COUNTER_BYTES : IBV_COUNTER_PACKETS, .index = i};
		if (ibv_attach_counters_point_flow(cs, &aa, NULL))
			die("attach");
	}
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_eth eth;
		struct ibv_flow_spec_counter_action count;
	} __attribute__((packed, aligned(8))) fa = {0};
	fa.attr.type = IBV_FLOW_ATTR_NORMAL;
	fa.attr.size = sizeof fa;
	fa.attr.num_of_specs = 2;
	fa.attr.port = 1;
	fa.eth.type = IBV_FLOW_SPEC_ETH;
	fa.eth.size = sizeof fa.eth;
	for (int i = 0; i < 6; i++) {
		fa.eth.val.dst_mac[i] = i;
		fa.eth.mask.dst_mac[i] = 0xff;
	}
	fa.count.type = IBV_FLOW_SPEC_ACTION_COUNT;
	fa.count.size = sizeof fa.count;
	fa.count.counters = cs;
	struct ibv_flow *fl = ibv_create_flow(qp, (struct ibv_flow_attr *)(void *)&fa);
	if (!fl)
		die("create_flow");
	struct reader r[64];
	for (int i = 0; i < threads && i < 64; i++) {
		r[i].cs = cs;
		r[i].reads = n;
		int err = pthread_create(&r[i].th, NULL, read_loop, &r[i]);
		if (err) {
			errno = err;
			die("pthread_create");
		}
	}
	for (int i = 0; i < threads && i < 64; i++)
		pthread_join(r[i].th, NULL);
	uint64_t v[2];
	for (int i = 0; i < n && threads == 0; i++) {
		START();
		int r = ibv_read_counters(cs, v, 2, 0);
		STOP(14);
		if (r) {
			errno = r;
			die("read_counters");
		}
	}
	ibv_destroy_flow(fl);
	ibv_destroy_counters(cs);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
}

/* mad_ops sends a vendor-class Get (class 0x30, OUI 00-14-05) from rxe0
 * port 1 to QP1 of rxe1 port 1, where an agent for it receives it. */
static void mad_ops(int n, union ibv_gid *dgid)
{
	static const uint8_t oui[3] = {0x00, 0x14, 0x05};
	long mask[16 / sizeof(long)] = {0};
	int cli = umad_open_port("rxe0", 1), srv = umad_open_port("rxe1", 1);
	if (cli < 0 || srv < 0)
		die("umad_open_port");
	int ca = umad_register_oui(cli, 0x30, 0, (uint8_t *)oui, NULL);
	mask[0] = 1L << 1; /* Get */
	int sa = umad_register_oui(srv, 0x30, 0, (uint8_t *)oui, mask);
	if (ca < 0 || sa < 0)
		die("umad_register_oui");
	void *req = umad_alloc(1, umad_size() + 256), *in = umad_alloc(1, umad_size() + 256);
	if (!req || !in)
		die("umad_alloc");
	uint8_t *m = umad_get_mad(req);
	memset(m, 0, 256);
	m[0] = 1, m[1] = 0x30, m[2] = 1, m[3] = 1;
	m[37] = oui[0], m[38] = oui[1], m[39] = oui[2];
	umad_set_addr(req, 0, 1, 0, 0x80010000);
	struct ib_mad_addr *addr = umad_get_mad_addr(req);
	addr->grh_present = 1;
	memcpy(addr->gid, dgid->raw, 16);
	addr->hop_limit = 64;
	addr->gid_index = 0;
	for (int i = 0; i < n; i++) {
		uint32_t tid = htobe32(i + 1);
		memcpy(m + 12, &tid, 4);
		START();
		int r = umad_send(cli, ca, req, 256, 0, 0);
		STOP(15);
		if (r < 0) {
			errno = -r;
			die("umad_send");
		}
		struct pollfd pfd = {.fd = srv, .events = POLLIN};
		if (poll(&pfd, 1, 10000) != 1)
			die("poll umad");
		int len = 256;
		START();
		r = umad_recv(srv, in, &len, 0);
		MARK(0x0100 | (r == sa ? 16 : 63));
		if (r != sa) {
			errno = r < 0 ? -r : EIO;
			die("umad_recv");
		}
	}
	umad_close_port(cli);
	umad_close_port(srv);
}

/* warm allocates and frees w PDs, CQs and QPs on rxe0, outside any
 * window, before either program's samples: rxe's object pools and the
 * core's resource tracker number the objects of a device cyclically
 * (xa_alloc_cyclic in rxe_pool.c and restrack.c), and a create's kernel
 * work depends on where that number stands (below 64 the xarray is one
 * node deep). Without it rdma-core's first loops ran in the one-node
 * range, which the Go loops after them never see. */
static void warm(int w)
{
	struct ibv_context *ctx = open_dev("rxe0");
	struct ibv_qp_init_attr qa;

	if (!ctx)
		die("open rxe0");
	struct ibv_pd *qpd = ibv_alloc_pd(ctx);
	struct ibv_cq *qcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!qpd || !qcq)
		die("pd/cq");
	rc_attr(&qa, qcq);
	for (int i = 0; i < w; i++) {
		struct ibv_pd *pd = ibv_alloc_pd(ctx);
		struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		struct ibv_qp *qp = ibv_create_qp(qpd, &qa);
		if (!pd || !cq || !qp || ibv_destroy_qp(qp) || ibv_destroy_cq(cq) || ibv_dealloc_pd(pd))
			die("warm");
	}
	ibv_destroy_cq(qcq);
	ibv_dealloc_pd(qpd);
	ibv_close_device(ctx);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "warm")) {
		warm(atoi(argv[2]));
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "rate")) {
		/* Unpinned: the threads spread over the CPUs, and a window
		 * around the whole run (marker) counts them all. */
		counters_ops(atoi(argv[3]), atoi(argv[2]));
		return 0;
	}
	int n = argc > 1 ? atoi(argv[1]) : 40;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(1, &set);
	if (sched_setaffinity(0, sizeof set, &set))
		die("sched_setaffinity");
	verbs_ops(n);
	counters_ops(n, 0);
	mlx5_ops(n);
	struct ibv_context *c1 = open_dev("rxe1");
	union ibv_gid g1;
	if (!c1 || ibv_query_gid(c1, 1, 0, &g1))
		die("rxe1 gid");
	ibv_close_device(c1);
	mad_ops(n, &g1);
	printf("cops: done, %d samples each\n", n);
	return 0;
}
