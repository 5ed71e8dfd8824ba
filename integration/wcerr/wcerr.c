/* wcerr: the work completions rdma-core reports for a QP's mistakes, the
 * C half of uverbs' TestVMMlx5ErrorCompletions (the Go half makes the
 * same calls through the library and prints the same lines).
 *
 *   wcerr DEV
 *
 * For each case, on a fresh pair of RC QPs A and B of DEV (port 1, GID 0,
 * connected to each other; each with its own CQ), it posts what the case
 * says, waits for the completions it expects, and prints one line per
 * completion, A's then B's:
 *
 *   CASE QP wr=ID status=N vendor_err=0xV opcode=N byte_len=N
 *
 * (opcode and byte_len only for a successful completion: libibverbs
 * leaves them undefined otherwise.)
 *   bad-lkey      A sends from an lkey that is not the MR's
 *   bad-rkey      A writes to B's MR with an rkey that is not its
 *   no-remote-wr  A writes to an MR of B's registered without REMOTE_WRITE
 *   short-recv    A sends 4096 bytes to B's 64-byte receive
 *   flush         after short-recv: B's next receive, then A's next send
 *   ok            A sends 4096 bytes to B's 4096-byte receive
 *   atomic-fa     A fetches and adds 5 to 8 bytes of B's remote-atomic MR
 *   atomic-cs     then compares them with 5 and swaps in 9 (each case
 *                 prints a line more: the value returned and the value in
 *                 B's memory, as big-endian u64s, mlx5's byte order)
 *   no-remote-atomic  A adds to an MR of B's without REMOTE_ATOMIC
 *   misaligned-atomic A adds at an address 4 bytes off the alignment
 *                 (libmlx5 posts it; the device answers)
 * Exit status 0, or 1 with a message on a setup failure. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

static void die(const char *what)
{
	fprintf(stderr, "wcerr: %s: %s\n", what, strerror(errno));
	exit(1);
}

struct side {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;
static char buf[2][8192];
static struct ibv_mr *mr[2], *ro;	/* ro: B's, no remote access */
static struct ibv_mr *at;		/* B's, remote atomic access */

static void to_rts(struct ibv_qp *qp, uint32_t remote)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
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
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify to RTR");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 1;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify to RTS");
}

static void make(struct side *s)
{
	struct ibv_qp_init_attr qa;

	s->cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!s->cq)
		die("create_cq");
	memset(&qa, 0, sizeof qa);
	qa.send_cq = qa.recv_cq = s->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	s->qp = ibv_create_qp(pd, &qa);
	if (!s->qp)
		die("create_qp");
}

static void pair(struct side *a, struct side *b)
{
	make(a);
	make(b);
	to_rts(a->qp, b->qp->qp_num);
	to_rts(b->qp, a->qp->qp_num);
}

static void unpair(struct side *a, struct side *b)
{
	ibv_destroy_qp(a->qp);
	ibv_destroy_qp(b->qp);
	ibv_destroy_cq(a->cq);
	ibv_destroy_cq(b->cq);
}

static void post_send(struct side *s, uint64_t id, enum ibv_wr_opcode op, uint32_t len,
		      uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf[0], .length = len, .lkey = lkey};
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof wr);
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(s->qp, &wr, &bad))
		die("post_send");
}

static void post_atomic(struct side *s, uint64_t id, enum ibv_wr_opcode op, uint64_t raddr,
			uint32_t rkey, uint64_t compare_add, uint64_t swap)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf[0], .length = 8, .lkey = mr[0]->lkey};
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof wr);
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	if (ibv_post_send(s->qp, &wr, &bad))
		die("post_send atomic");
}

static uint64_t be64_at(const char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | (unsigned char)p[i];
	return v;
}

static void post_recv(struct side *s, uint64_t id, uint32_t len)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf[1], .length = len, .lkey = mr[1]->lkey};
	struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1}, *bad;

	if (ibv_post_recv(s->qp, &wr, &bad))
		die("post_recv");
}

/* report waits (at most 10 s) for n completions of s and prints them. */
static void report(const char *c, const char *name, struct side *s, int n)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (n > 0) {
		struct ibv_wc wc;
		int got;

		/* libmlx5 leaves what a completion does not define (the
		 * vendor syndrome of a good one) as it was: zero, as Go's */
		memset(&wc, 0, sizeof wc);
		got = ibv_poll_cq(s->cq, 1, &wc);

		if (got < 0) {
			errno = -got;
			die("poll_cq");
		}
		if (got == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec - t0.tv_sec > 10) {
				printf("%s %s timeout\n", c, name);
				return;
			}
			continue;
		}
		n--;
		if (wc.status == IBV_WC_SUCCESS)
			printf("%s %s wr=%llu status=0 vendor_err=0x%x opcode=%d byte_len=%u\n", c, name,
			       (unsigned long long)wc.wr_id, wc.vendor_err, wc.opcode, wc.byte_len);
		else
			printf("%s %s wr=%llu status=%d vendor_err=0x%x\n", c, name,
			       (unsigned long long)wc.wr_id, wc.status, wc.vendor_err);
	}
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct side a, b;
	int i;

	if (argc != 2) {
		fprintf(stderr, "usage: wcerr DEV\n");
		return 2;
	}
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		die(argv[1]);
	ibv_free_device_list(list);
	if (ibv_query_gid(ctx, 1, 0, &gid))
		die("query_gid");
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("alloc_pd");
	for (i = 0; i < 2; i++) {
		mr[i] = ibv_reg_mr(pd, buf[i], sizeof buf[i],
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
		if (!mr[i])
			die("reg_mr");
	}
	ro = ibv_reg_mr(pd, buf[1], 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!ro)
		die("reg_mr");
	at = ibv_reg_mr(pd, buf[1] + 4096, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	if (!at)
		die("reg_mr");

	pair(&a, &b);
	post_recv(&b, 2, 4096);
	post_send(&a, 1, IBV_WR_SEND, 64, mr[0]->lkey ^ 0x80, 0, 0);
	report("bad-lkey", "A", &a, 1);
	unpair(&a, &b);

	pair(&a, &b);
	post_send(&a, 1, IBV_WR_RDMA_WRITE, 64, mr[0]->lkey, (uintptr_t)buf[1], mr[1]->rkey ^ 0x80);
	report("bad-rkey", "A", &a, 1);
	unpair(&a, &b);

	pair(&a, &b);
	post_send(&a, 1, IBV_WR_RDMA_WRITE, 64, mr[0]->lkey, (uintptr_t)buf[1], ro->rkey);
	report("no-remote-wr", "A", &a, 1);
	unpair(&a, &b);

	pair(&a, &b);
	post_recv(&b, 2, 64);
	post_send(&a, 1, IBV_WR_SEND, 4096, mr[0]->lkey, 0, 0);
	report("short-recv", "A", &a, 1);
	report("short-recv", "B", &b, 1);
	post_recv(&b, 4, 64);
	post_send(&a, 3, IBV_WR_SEND, 64, mr[0]->lkey, 0, 0);
	report("flush", "A", &a, 1);
	report("flush", "B", &b, 1);
	unpair(&a, &b);

	pair(&a, &b);
	post_recv(&b, 2, 4096);
	post_send(&a, 1, IBV_WR_SEND, 4096, mr[0]->lkey, 0, 0);
	report("ok", "A", &a, 1);
	report("ok", "B", &b, 1);
	unpair(&a, &b);

	pair(&a, &b);
	post_atomic(&a, 1, IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)buf[1] + 4096, at->rkey, 5, 0);
	report("atomic-fa", "A", &a, 1);
	printf("atomic-fa A old=%llu now=%llu\n", (unsigned long long)be64_at(buf[0]),
	       (unsigned long long)be64_at(buf[1] + 4096));
	post_atomic(&a, 2, IBV_WR_ATOMIC_CMP_AND_SWP, (uintptr_t)buf[1] + 4096, at->rkey, 5, 9);
	report("atomic-cs", "A", &a, 1);
	printf("atomic-cs A old=%llu now=%llu\n", (unsigned long long)be64_at(buf[0]),
	       (unsigned long long)be64_at(buf[1] + 4096));
	unpair(&a, &b);

	pair(&a, &b);
	post_atomic(&a, 1, IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)buf[1], mr[1]->rkey, 1, 0);
	report("no-remote-atomic", "A", &a, 1);
	unpair(&a, &b);

	pair(&a, &b);
	post_atomic(&a, 1, IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)buf[1] + 4100, at->rkey, 1, 0);
	report("misaligned-atomic", "A", &a, 1);
	unpair(&a, &b);
	return 0;
}
