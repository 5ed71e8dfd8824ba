// umadpeer: the C peer of purerdma's umad VM tests (rdma-core 44,
// libibumad). It speaks the vendor-class MADs the Go tests speak: class
// 0x30 (vendor range 2), class version 1, OUI 0x001405, method Get (0x01)
// answered by GetResp (0x81), over QP1 with GRH addressing (rxe is RoCE).
//
//   umadpeer serve CA PORT N
//       registers a replier for Get (umad_register_oui), prints "ready",
//       then answers N requests: the reply is the request with method
//       GetResp, "umadpeer" at byte 40 and the rest of the request kept,
//       sent back to the sender's address. Prints "ok N".
//   umadpeer client CA PORT DGID N
//       registers a client (no methods) and sends N Gets (timeout 1 s,
//       3 retries) to QP1 of the port whose GID is DGID (sysfs's
//       "fe80:0000:…" form), each carrying "umadpeer" at byte 40 and its
//       sequence number at byte 48; checks that each reply is a GetResp
//       with the request's TID, "purerdma" at byte 40 and the sequence
//       number kept. Prints "ok N".
//   umadpeer bench CA0 CA1 DGID1
//       one process, one thread: a client on CA0/1 and a replier on CA1/1
//       (GID DGID1), as in the Go benchmarks. Prints "ready", then reads
//       commands from standard input: "roundtrip N" runs N round trips
//       (request with a timeout, its receipt, the answer, the answer's
//       receipt), "sendrecv N" N unsolicited sends each received by the
//       replier; after each it prints the nanoseconds the N took.
//
// Failures print a message on stderr and exit 1; bad arguments exit 2.
//
// Build on the host (Debian 12: gcc, libibumad-dev 44):
//   sh integration/umadpeer/build.sh
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/umad.h>
#include <infiniband/umad_types.h>

enum {
	MAD_SIZE = 256,
	VENDOR_CLASS = 0x30,
	METHOD_GET = 0x01,
	METHOD_GET_RESP = 0x81,
	OFF_STATUS = 4,
	OFF_TID = 8,
	OFF_OUI = 37,
	OFF_DATA = 40,
	OFF_SEQ = 48,
	RECV_TIMEOUT_MS = 10000,
};

static uint8_t oui[3] = {0x00, 0x14, 0x05};

static void fail(const char *what, int err)
{
	fprintf(stderr, "umadpeer: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static void failf(const char *what)
{
	fprintf(stderr, "umadpeer: %s\n", what);
	exit(1);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// parse_gid reads sysfs's "xxxx:xxxx:…" (or 32 hex digits) into network
// order.
static void parse_gid(const char *s, uint8_t gid[16])
{
	int n = 0;

	for (; *s && n < 32; s++) {
		int v;

		if (*s == ':')
			continue;
		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			v = *s - 'A' + 10;
		else
			break;
		if (n % 2 == 0)
			gid[n / 2] = v << 4;
		else
			gid[n / 2] |= v;
		n++;
	}
	if (n != 32 || *s) {
		fprintf(stderr, "umadpeer: bad GID\n");
		exit(2);
	}
}

static int open_port(const char *ca, int port)
{
	int id = umad_open_port(ca, port);

	if (id < 0)
		fail("umad_open_port", id);
	return id;
}

// reg registers a vendor-class agent: a replier for Get, or a client.
static int reg(int portid, int replier)
{
	long mask[16 / sizeof(long)];
	int agent;

	memset(mask, 0, sizeof(mask));
	if (replier)
		mask[METHOD_GET / (8 * sizeof(long))] |= 1L << (METHOD_GET % (8 * sizeof(long)));
	agent = umad_register_oui(portid, VENDOR_CLASS, 0, oui, mask);
	if (agent < 0)
		fail("umad_register_oui", agent);
	return agent;
}

// request fills umad with a Get to QP1 of the port whose GID is dgid.
static void request(void *umad, const uint8_t dgid[16], uint32_t tid, uint32_t seq)
{
	uint8_t *m = umad_get_mad(umad);
	ib_mad_addr_t grh;
	int r;

	memset(umad, 0, umad_size() + MAD_SIZE);
	m[0] = 1;
	m[1] = VENDOR_CLASS;
	m[2] = 1;
	m[3] = METHOD_GET;
	put64(m + OFF_TID, tid);
	memcpy(m + OFF_OUI, oui, 3);
	memcpy(m + OFF_DATA, "umadpeer", 8);
	put32(m + OFF_SEQ, seq);
	if ((r = umad_set_addr(umad, 0, 1, 0, UMAD_QKEY)) < 0)
		fail("umad_set_addr", r);
	// umad_set_grh copies the GID as given (network order; only the flow
	// label is converted from host order). libibumad 44 declares
	// umad_set_grh_net but does not export it.
	memset(&grh, 0, sizeof(grh));
	memcpy(grh.gid, dgid, 16);
	grh.hop_limit = 64;
	if ((r = umad_set_grh(umad, &grh)) < 0)
		fail("umad_set_grh", r);
}

// recv_one receives one MAD for agent within the timeout.
static void recv_one(int portid, int agent, void *umad, int timeout_ms)
{
	int len = MAD_SIZE;
	int id = umad_recv(portid, umad, &len, timeout_ms);

	if (id < 0)
		fail("umad_recv", id);
	if (id != agent) {
		fprintf(stderr, "umadpeer: umad_recv: agent %d, want %d\n", id, agent);
		exit(1);
	}
	if (umad_status(umad)) {
		fprintf(stderr, "umadpeer: umad_recv: status %d (%s)\n", umad_status(umad),
			strerror(umad_status(umad)));
		exit(1);
	}
}

// answer turns the request in umad into its reply and sends it back.
static void answer(int portid, int agent, void *umad, const char *who)
{
	uint8_t *m = umad_get_mad(umad);
	int r;

	if (m[1] != VENDOR_CLASS || m[3] != METHOD_GET)
		failf("received something other than a vendor Get");
	m[3] = METHOD_GET_RESP;
	if (who)
		memcpy(m + OFF_DATA, who, 8);
	if ((r = umad_send(portid, agent, umad, MAD_SIZE, 0, 0)) < 0)
		fail("umad_send (reply)", r);
}

static int serve(const char *ca, int port, long n)
{
	int portid = open_port(ca, port);
	int agent = reg(portid, 1);
	void *umad = umad_alloc(1, umad_size() + MAD_SIZE);

	if (!umad)
		failf("out of memory");
	printf("ready\n");
	fflush(stdout);
	for (long i = 0; i < n; i++) {
		recv_one(portid, agent, umad, RECV_TIMEOUT_MS);
		if (memcmp((uint8_t *)umad_get_mad(umad) + OFF_DATA, "purerdma", 8))
			failf("a request without \"purerdma\" at byte 40");
		answer(portid, agent, umad, "umadpeer");
	}
	printf("ok %ld\n", n);
	umad_free(umad);
	umad_close_port(portid);
	return 0;
}

static int client(const char *ca, int port, const char *dgid_s, long n)
{
	uint8_t dgid[16];
	int portid, agent, r;
	void *req, *resp;

	parse_gid(dgid_s, dgid);
	portid = open_port(ca, port);
	agent = reg(portid, 0);
	req = umad_alloc(1, umad_size() + MAD_SIZE);
	resp = umad_alloc(1, umad_size() + MAD_SIZE);
	if (!req || !resp)
		failf("out of memory");
	for (long i = 0; i < n; i++) {
		uint8_t *m;
		uint64_t tid;

		request(req, dgid, (uint32_t)i + 1, (uint32_t)i);
		if ((r = umad_send(portid, agent, req, MAD_SIZE, 1000, 3)) < 0)
			fail("umad_send", r);
		recv_one(portid, agent, resp, RECV_TIMEOUT_MS);
		m = umad_get_mad(resp);
		tid = get64(m + OFF_TID);
		// The MAD status too: a Get nobody is registered for comes back
		// from the MAD layer as a GetResp with status 0x000c.
		if (m[3] != METHOD_GET_RESP || get16(m + OFF_STATUS) || (uint32_t)tid != (uint32_t)i + 1 ||
		    tid >> 32 == 0) {
			fprintf(stderr, "umadpeer: reply %ld: method %#x, MAD status %#06x, TID %#llx\n", i, m[3],
				get16(m + OFF_STATUS), (unsigned long long)tid);
			exit(1);
		}
		if (memcmp(m + OFF_DATA, "purerdma", 8) || get32(m + OFF_SEQ) != (uint32_t)i) {
			fprintf(stderr, "umadpeer: reply %ld: data %.8s, sequence %u\n", i, (char *)(m + OFF_DATA),
				get32(m + OFF_SEQ));
			exit(1);
		}
	}
	printf("ok %ld\n", n);
	umad_free(req);
	umad_free(resp);
	umad_close_port(portid);
	return 0;
}

// The two benchmarked operations, on the bench mode's agents.
struct bench {
	int cli, srv, ca, sa;
	void *req, *in;
	uint32_t tid;
};

// round_trip is the Go rig's roundTrip: a request with a timeout, its
// receipt by the replier, the answer, the answer's receipt.
static void round_trip(struct bench *b)
{
	uint8_t *m = umad_get_mad(b->req);
	int r;

	put32(m + OFF_TID + 4, ++b->tid);
	if ((r = umad_send(b->cli, b->ca, b->req, MAD_SIZE, 1000, 1)) < 0)
		fail("umad_send", r);
	recv_one(b->srv, b->sa, b->in, 1000);
	answer(b->srv, b->sa, b->in, NULL);
	recv_one(b->cli, b->ca, b->in, 1000);
	m = umad_get_mad(b->in);
	if (m[3] != METHOD_GET_RESP || get16(m + OFF_STATUS))
		failf("bench: the reply is not a GetResp with status 0");
}

// send_recv is one unsolicited send, received by the replier without a
// timeout.
static void send_recv(struct bench *b)
{
	uint8_t *m = umad_get_mad(b->req);
	int r;

	put32(m + OFF_TID + 4, ++b->tid);
	if ((r = umad_send(b->cli, b->ca, b->req, MAD_SIZE, 0, 0)) < 0)
		fail("umad_send", r);
	recv_one(b->srv, b->sa, b->in, -1);
}

// bench sets up a client on CA0/1 and a replier on CA1/1, prints "ready",
// then reads commands from standard input, "roundtrip N" or "sendrecv N",
// runs N operations for each and prints the nanoseconds they took, until
// end of input. The Go test alternates these with its own, in small
// chunks, so that both sides meet the same noise.
static int bench(const char *ca0, const char *ca1, const char *dgid_s)
{
	uint8_t dgid[16];
	struct bench b = {0};
	char line[64], op[16];
	long n;

	parse_gid(dgid_s, dgid);
	b.cli = open_port(ca0, 1);
	b.srv = open_port(ca1, 1);
	b.ca = reg(b.cli, 0);
	b.sa = reg(b.srv, 1);
	b.req = umad_alloc(1, umad_size() + MAD_SIZE);
	b.in = umad_alloc(1, umad_size() + MAD_SIZE);
	if (!b.req || !b.in)
		failf("out of memory");
	request(b.req, dgid, 0, 0);
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		void (*f)(struct bench *);
		double t;

		if (sscanf(line, "%15s %ld", op, &n) != 2 || n <= 0) {
			fprintf(stderr, "umadpeer: bench: bad command %s", line);
			return 2;
		}
		if (!strcmp(op, "roundtrip"))
			f = round_trip;
		else if (!strcmp(op, "sendrecv"))
			f = send_recv;
		else {
			fprintf(stderr, "umadpeer: bench: unknown operation %s\n", op);
			return 2;
		}
		t = now_ns();
		for (long i = 0; i < n; i++)
			f(&b);
		printf("%.0f\n", now_ns() - t);
		fflush(stdout);
	}
	umad_free(b.req);
	umad_free(b.in);
	umad_close_port(b.cli);
	umad_close_port(b.srv);
	return 0;
}

int main(int argc, char **argv)
{
	int r;

	if ((r = umad_init()) < 0)
		fail("umad_init", r);
	if (argc == 5 && !strcmp(argv[1], "serve"))
		return serve(argv[2], atoi(argv[3]), atol(argv[4]));
	if (argc == 6 && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]), argv[4], atol(argv[5]));
	if (argc == 5 && !strcmp(argv[1], "bench"))
		return bench(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: umadpeer serve CA PORT N | umadpeer client CA PORT DGID N | "
			"umadpeer bench CA0 CA1 DGID1\n");
	return 2;
}
