/*
 * pqroce [-C CA] [-P PORT]: make bench's C twin of `purerdma perfquery`
 * on a RoCE port, the same work done through rdma-core's libraries.
 *
 * rdma-core's perfquery cannot do that work on Soft-RoCE: its
 * mad_rpc_open_port registers the SMI classes too, which need QP0, and
 * the kernel refuses (infiniband-diags/perfquery.c, main: mgmt_classes),
 * so it stops there. This program is perfquery's path with that one
 * difference: it registers the PerfMgmt class alone, as ours does, reads
 * its own port as infiniband-diags' resolve_self does (umad_get_port),
 * and sends the ClassPortInfo Get to that port with a GRH to GID 0, as
 * ours does on RoCE (libibmad's mad_build_pkt sets the GRH from
 * ib_portid_t's gid). On rxe the kernel answers the Get itself with
 * status 0x000c (no agent took the class), and pma_query_via fails:
 * IBEXIT's "classportinfo query", status 255, as in ours.
 *
 * Test infrastructure (integration/), built against rdma-core 44's
 * libibmad and libibumad by build.sh.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/mad.h>
#include <infiniband/umad.h>

int main(int argc, char **argv)
{
	char *ca = NULL;
	int caport = 0, c;
	int classes[1] = { IB_PERFORMANCE_CLASS };
	uint8_t pc[1024];
	struct ibmad_port *src;
	ib_portid_t portid;
	umad_port_t port;
	uint64_t prefix, guid;
	FILE *conf;

	while ((c = getopt(argc, argv, "C:P:")) != -1) {
		switch (c) {
		case 'C':
			ca = optarg;
			break;
		case 'P':
			caport = atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	/* ibdiag_process_opts reads the diags' config file first. */
	conf = fopen("/etc/infiniband-diags/ibdiag.conf", "r");
	if (conf)
		fclose(conf);

	src = mad_rpc_open_port(ca, caport, classes, 1);
	if (!src) {
		fprintf(stderr, "pqroce: can't open UMAD port (%s:%d)\n", ca ? ca : "(null)", caport);
		return 255;
	}
	/* infiniband-diags' resolve_self: the port from sysfs. */
	if (umad_get_port(ca, caport, &port) < 0) {
		printf("perfquery: iberror: failed: can't resolve self port\n");
		mad_rpc_close_port(src);
		return 255;
	}
	memset(&portid, 0, sizeof(portid));
	portid.lid = port.base_lid;
	portid.sl = port.sm_sl;
	portid.grh_present = 1;
	prefix = port.gid_prefix; /* network order, as umad_get_port keeps them */
	guid = port.port_guid;
	memcpy(portid.gid, &prefix, 8);
	memcpy(portid.gid + 8, &guid, 8);
	caport = port.portnum;
	umad_release_port(&port);

	memset(pc, 0, sizeof(pc));
	if (!pma_query_via(pc, &portid, caport, 0, CLASS_PORT_INFO, src)) {
		printf("perfquery: iberror: failed: classportinfo query\n");
		mad_rpc_close_port(src);
		return 255;
	}
	printf("# ClassPortInfo: CapMask 0x%04x\n", (unsigned)mad_get_field(pc, 0, IB_CPI_CAPMASK_F));
	mad_rpc_close_port(src);
	return 0;
}
