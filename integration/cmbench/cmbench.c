// cmbench: the C peer of purerdma's rdmacm VM benchmark (rdma-core 44,
// librdmacm). It does in C what the Go test does in Go, in one process:
//
//   cmbench serve ADDR PORT   listens on ADDR:PORT, then reads lines "N"
//                             on stdin, runs N connection cycles and
//                             answers each line with the ns per cycle.
//
// A cycle is what a client and a server of the TCP port space do to
// connect and part: the client creates an ID, resolves the address and
// the route, creates its QP (rdma_create_qp, CQs made by librdmacm) and
// connects; the server takes the request, creates the new ID's QP and
// accepts; both see ESTABLISHED; the client disconnects, the server sees
// DISCONNECTED and disconnects; the client sees DISCONNECTED; both
// destroy their QPs and IDs. Two event channels, one thread, blocking
// rdma_get_cm_event, as the Go side's GetEvent with a background context.
//
// Build on the host (Debian 12: gcc, librdmacm-dev 44):
//   sh integration/cmbench/build.sh
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/rdma_cma.h>

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	if (ev->event != want) {
		fprintf(stderr, "event %s (status %d), want %s\n", rdma_event_str(ev->event),
			ev->status, rdma_event_str(want));
		exit(1);
	}
	return ev;
}

static struct ibv_qp_init_attr qp_attr(void)
{
	struct ibv_qp_init_attr a;

	memset(&a, 0, sizeof a);
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = 8;
	a.cap.max_recv_wr = 8;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.cap.max_inline_data = 64;
	return a;
}

static void cycle(struct rdma_event_channel *cch, struct rdma_event_channel *sch, struct sockaddr_in *dst)
{
	struct rdma_conn_param param;
	struct ibv_qp_init_attr a;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c, *s;

	if (rdma_create_id(cch, &c, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_resolve_addr(c, NULL, (struct sockaddr *)dst, 2000))
		die("rdma_resolve_addr");
	rdma_ack_cm_event(expect(cch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(c, 2000))
		die("rdma_resolve_route");
	rdma_ack_cm_event(expect(cch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	a = qp_attr();
	if (rdma_create_qp(c, NULL, &a))
		die("rdma_create_qp");
	memset(&param, 0, sizeof param);
	param.responder_resources = param.initiator_depth = RDMA_MAX_RESP_RES;
	param.retry_count = param.rnr_retry_count = 7;
	if (rdma_connect(c, &param))
		die("rdma_connect");
	ev = expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	s = ev->id;
	rdma_ack_cm_event(ev);
	a = qp_attr();
	if (rdma_create_qp(s, NULL, &a))
		die("rdma_create_qp (server)");
	if (rdma_accept(s, &param))
		die("rdma_accept");
	rdma_ack_cm_event(expect(cch, RDMA_CM_EVENT_ESTABLISHED));
	rdma_ack_cm_event(expect(sch, RDMA_CM_EVENT_ESTABLISHED));
	if (rdma_disconnect(c))
		die("rdma_disconnect");
	rdma_ack_cm_event(expect(sch, RDMA_CM_EVENT_DISCONNECTED));
	if (rdma_disconnect(s))
		die("rdma_disconnect (server)");
	rdma_ack_cm_event(expect(cch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_qp(c);
	rdma_destroy_qp(s);
	if (rdma_destroy_id(c) || rdma_destroy_id(s))
		die("rdma_destroy_id");
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *cch, *sch;
	struct sockaddr_in addr;
	struct rdma_cm_id *l;
	char line[64];

	if (argc != 4 || strcmp(argv[1], "serve")) {
		fprintf(stderr, "usage: cmbench serve ADDR PORT\n");
		return 2;
	}
	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_port = htons(atoi(argv[3]));
	if (inet_pton(AF_INET, argv[2], &addr.sin_addr) != 1) {
		fprintf(stderr, "bad address %s\n", argv[2]);
		return 2;
	}
	cch = rdma_create_event_channel();
	sch = rdma_create_event_channel();
	if (!cch || !sch)
		die("rdma_create_event_channel");
	if (rdma_create_id(sch, &l, NULL, RDMA_PS_TCP))
		die("rdma_create_id (listener)");
	if (rdma_bind_addr(l, (struct sockaddr *)&addr))
		die("rdma_bind_addr");
	if (rdma_listen(l, 8))
		die("rdma_listen");
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof line, stdin)) {
		struct timespec t0, t1;
		long n = atol(line);

		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (long i = 0; i < n; i++)
			cycle(cch, sch, &addr);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("%.0f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (n > 0 ? n : 1));
	}
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
	return 0;
}
