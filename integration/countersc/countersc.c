/* countersc: rdma-core's verbs counters API driven line by line from
 * standard input, for the side-by-side test of counters/ (the Go test runs
 * the same script through the Go library and compares). Test
 * infrastructure only: built on the host against libibverbs-dev
 * (rdma-core 44), run in the vmrun guest, where libmlx5 drives mock0.
 *
 * Commands (names are single letters a-z):
 *   open DEV                 ibv_open_device, a PD, a CQ, a RAW_PACKET QP
 *   create C                 ibv_create_counters
 *   attach C DESC INDEX [F]  ibv_attach_counters_point_flow (DESC 0 packets,
 *                            1 bytes), with flow F when given
 *   flow F C MAC             ibv_create_flow: ETH dst MAC (mask all ones)
 *                            with a count action on C
 *   read C N FLAGS           ibv_read_counters into N values
 *   unflow F                 ibv_destroy_flow
 *   destroy C                ibv_destroy_counters
 *   rate C T MS N            T threads call ibv_read_counters(C, N values,
 *                            flags 0) in a loop for MS milliseconds;
 *                            answers "ok READS_PER_SEC READS" or the
 *                            first read's "err ERRNO"
 * Each answers one line: "ok" (read: "ok V0 V1 ...") or "err ERRNO".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <pthread.h>
#include <time.h>
#include <infiniband/verbs.h>

static struct ibv_context *ctx;
static struct ibv_qp *qp;
static struct ibv_counters *cs[26];
static struct ibv_flow *fl[26];

static int idx(const char *s)
{
	return (s && s[0] >= 'a' && s[0] <= 'z' && !s[1]) ? s[0] - 'a' : -1;
}

static void answer(int err)
{
	if (err)
		printf("err %d\n", err);
	else
		printf("ok\n");
}

static int do_open(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp_init_attr qa = {0};
	int i;

	if (!list)
		return errno;
	for (i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			break;
	if (!list[i])
		return ENODEV;
	ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		return errno;
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		return errno;
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!cq)
		return errno;
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RAW_PACKET;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &qa);
	return qp ? 0 : errno;
}

static int do_flow(int f, int c, const char *mac)
{
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_eth eth;
		struct ibv_flow_spec_counter_action count;
	} __attribute__((packed, aligned(8))) a = {0};
	unsigned int m[6];
	int i;

	if (sscanf(mac, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
		return EINVAL;
	a.attr.type = IBV_FLOW_ATTR_NORMAL;
	a.attr.size = sizeof(a);
	a.attr.num_of_specs = 2;
	a.attr.port = 1;
	a.eth.type = IBV_FLOW_SPEC_ETH;
	a.eth.size = sizeof(a.eth);
	for (i = 0; i < 6; i++) {
		a.eth.val.dst_mac[i] = m[i];
		a.eth.mask.dst_mac[i] = 0xff;
	}
	a.count.type = IBV_FLOW_SPEC_ACTION_COUNT;
	a.count.size = sizeof(a.count);
	a.count.counters = cs[c];
	fl[f] = ibv_create_flow(qp, (struct ibv_flow_attr *)(void *)&a);
	return fl[f] ? 0 : errno;
}

/* The read-rate mode: every thread reads the same object until the
 * deadline, with values of its own (no lock in the program either). */
struct rater {
	pthread_t th;
	struct ibv_counters *c;
	uint32_t n;
	const int *stop;
	uint64_t reads;
	int err;
};

static void *rate_loop(void *arg)
{
	struct rater *r = arg;
	uint64_t v[64];

	while (!__atomic_load_n(r->stop, __ATOMIC_RELAXED)) {
		int err = ibv_read_counters(r->c, v, r->n, 0);

		if (err) {
			r->err = err;
			break;
		}
		r->reads++;
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void do_rate(struct ibv_counters *c, int threads, int ms, int n)
{
	struct rater *r;
	int stop = 0;
	struct timespec d = {ms / 1000, (long)(ms % 1000) * 1000000};
	uint64_t total = 0;
	double start, secs;
	int i, started = 0, err = 0;

	if (!c || threads < 1 || threads > 256 || ms < 1 || n < 0 || n > 64) {
		answer(EINVAL);
		return;
	}
	r = calloc(threads, sizeof(*r));
	if (!r) {
		answer(ENOMEM);
		return;
	}
	start = now();
	for (i = 0; i < threads; i++) {
		r[i].c = c;
		r[i].n = n;
		r[i].stop = &stop;
		err = pthread_create(&r[i].th, NULL, rate_loop, &r[i]);
		if (err)
			break;
		started++;
	}
	if (!err)
		nanosleep(&d, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < started; i++) {
		pthread_join(r[i].th, NULL);
		total += r[i].reads;
		if (!err)
			err = r[i].err;
	}
	secs = now() - start;
	free(r);
	if (err)
		answer(err);
	else
		printf("ok %.0f %" PRIu64 "\n", total / secs, total);
}

int main(void)
{
	char line[256];

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		char *w[6] = {0};
		int n = 0;

		for (char *p = strtok(line, " \n"); p && n < 6; p = strtok(NULL, " \n"))
			w[n++] = p;
		if (!n)
			continue;
		if (!strcmp(w[0], "open") && n == 2) {
			answer(do_open(w[1]));
		} else if (!strcmp(w[0], "create") && idx(w[1]) >= 0) {
			struct ibv_counters_init_attr ia = {0};

			cs[idx(w[1])] = ibv_create_counters(ctx, &ia);
			answer(cs[idx(w[1])] ? 0 : errno);
		} else if (!strcmp(w[0], "attach") && n >= 4 && idx(w[1]) >= 0) {
			struct ibv_counter_attach_attr aa = {0};

			aa.counter_desc = atoi(w[2]);
			aa.index = atoi(w[3]);
			answer(ibv_attach_counters_point_flow(cs[idx(w[1])], &aa,
							      n == 5 ? fl[idx(w[4])] : NULL));
		} else if (!strcmp(w[0], "flow") && n == 4 && idx(w[1]) >= 0 && idx(w[2]) >= 0) {
			answer(do_flow(idx(w[1]), idx(w[2]), w[3]));
		} else if (!strcmp(w[0], "read") && n == 4 && idx(w[1]) >= 0) {
			int k = atoi(w[2]), i, err;
			uint64_t *v = calloc(k ? k : 1, sizeof(*v));

			err = ibv_read_counters(cs[idx(w[1])], v, k, atoi(w[3]));
			if (err) {
				answer(err);
			} else {
				printf("ok");
				for (i = 0; i < k; i++)
					printf(" %" PRIu64, v[i]);
				printf("\n");
			}
			free(v);
		} else if (!strcmp(w[0], "unflow") && idx(w[1]) >= 0) {
			answer(ibv_destroy_flow(fl[idx(w[1])]));
		} else if (!strcmp(w[0], "destroy") && idx(w[1]) >= 0) {
			answer(ibv_destroy_counters(cs[idx(w[1])]));
		} else if (!strcmp(w[0], "rate") && n == 5 && idx(w[1]) >= 0) {
			do_rate(cs[idx(w[1])], atoi(w[2]), atoi(w[3]), atoi(w[4]));
		} else {
			printf("err %d\n", EINVAL);
		}
	}
	return 0;
}
