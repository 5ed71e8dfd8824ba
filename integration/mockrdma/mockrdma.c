// SPDX-License-Identifier: GPL-2.0
/*
 * mockrdma: a test-only RDMA device for purerdma's VM test bed.
 *
 * It registers one ib_device, "mock0" (one port, link layer Ethernet, core
 * capability RAW_PACKET, bound to a netdev, veth1 by default) that says it is
 * an mlx5 device (driver id RDMA_DRIVER_MLX5, uverbs ABI 1), so that the real
 * ib_uverbs core validates and dispatches verbs counters and flow steering
 * requests to it, and rdma-core's libmlx5 opens it like a ConnectX.
 *
 * It is a model, not a driver (no DEVX, nothing on PCIe), but it executes
 * the queues userspace writes (RC, UC and UD between its own QPs: see "the
 * data path" below, where UAR doorbells fault into an executor thread).
 * Each rule it applies
 * is read from Linux's drivers/infiniband/hw/mlx5/ and names the function it
 * models ("mlx5: fs.c mlx5_ib_create_flow"). Rules the core applies before a
 * driver is called (handles, CAP_NET_RAW, usecnt, the flow spec sizes) are
 * left to the core and are not repeated here.
 *
 * Frames: an rx_handler on the netdev sees every frame that arrives on the
 * port, whatever its destination MAC, and matches it against the live
 * ingress flows, highest priority (lowest number) first, as mlx5's steering
 * does: the first matching flow counts it (packets, and bytes from the
 * destination MAC to the end of the payload, without FCS) on its counters
 * object; a DONT_TRAP flow then lets the frame go on to the next matching
 * flow (MLX5_FLOW_CONTEXT_ACTION_FWD_NEXT_PRIO in fs.c _create_flow_rule); any
 * other flow takes the frame: it is steered to the QP, whose RAW_PACKET
 * receive queue the model does not fill yet, so it is dropped (steal=0
 * passes it to the kernel instead).
 *
 * The device's own record of what it received: debugfs
 * mockrdma/<dev>/requests, one line per driver call (counters, flows, and the
 * context, PD, CQ, QP and UAR calls), without pointers or handles, so that
 * two programs doing the same thing leave the same lines. Writing to the file
 * clears it. mockrdma/<dev>/flows lists the live flows and their hits;
 * mockrdma/<dev>/fence the number of the last fence frame (see
 * MOCK_FENCE_TYPE) and how many other frames the port saw.
 *
 * Per-QP counters: the counter ops of struct ib_device_ops (see "per-QP
 * counters" below) let the core bind QPs to rdma_counters (rdma statistic
 * qp); each counts out_of_buffer, the frames steered to its QPs.
 *
 * Parameters: netdev= (default veth1), driver_id= (default 1, mlx5),
 * dyn_uar= (default 1: answer MLX5_LIB_CAP_DYN_UAR like a modern mlx5;
 * 0: static bfregs), steal= (default 1).
 *
 * Built for Debian's 6.1 and 6.12 kernels; the only API difference met is
 * the signature of .create_cq.
 */
#include <linux/module.h>
#include <linux/version.h>
#include <linux/netdevice.h>
#include <linux/etherdevice.h>
#include <linux/if_ether.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/tcp.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/list.h>
#include <linux/rtnetlink.h>
#include <linux/mm.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/mlx5-abi.h>
#include <linux/mlx5/qp.h>		/* WQE segments, MLX5_OPCODE_* */
#include <linux/mlx5/cq.h>		/* CQE opcodes and syndromes */
#include <linux/mlx5/doorbell.h>	/* MLX5_CQ_DOORBELL */
#include <linux/highmem.h>
#include <linux/sched/mm.h>
#include <linux/kthread.h>
#include <linux/wait.h>
#include <linux/xarray.h>
#include <rdma/mlx5_user_ioctl_cmds.h>
#include <rdma/mlx5_user_ioctl_verbs.h>
#define UVERBS_MODULE_NAME mockrdma
#include <rdma/uverbs_named_ioctl.h>

static char *netdev = "veth1";
module_param(netdev, charp, 0444);
MODULE_PARM_DESC(netdev, "netdev the port is bound to");
static int driver_id = RDMA_DRIVER_MLX5;
module_param(driver_id, int, 0444);
MODULE_PARM_DESC(driver_id, "enum rdma_driver_id reported to userspace (1 = mlx5)");
static bool dyn_uar = true;
module_param(dyn_uar, bool, 0444);
MODULE_PARM_DESC(dyn_uar, "honour MLX5_LIB_CAP_DYN_UAR (0: always static bfregs)");
static bool steal = true;
module_param(steal, bool, 0444);
MODULE_PARM_DESC(steal, "drop frames a flow without DONT_TRAP takes (0: pass them on)");

/* Values of mlx5 the model uses (mlx5_ib.h, fs.c, counters.c). */
#define MOCK_FLOW_LAST_PRIO 15	/* MLX5_IB_FLOW_LAST_PRIO */
#define MOCK_MAX_COUNTERS_NUM (USHRT_MAX / (sizeof(u32) * 2)) /* counters.c */
#define MOCK_NON_FP_BFREGS_PER_UAR 2	/* MLX5_NON_FP_BFREGS_PER_UAR */
#define MOCK_VXLAN_PORT 4789	/* the port mlx5 firmware parses VXLAN on */

/* UAR pages of a context: static ones at index 0..MOCK_STATIC_PAGES-1
 * (mmap command MLX5_IB_MMAP_REGULAR_PAGE), dynamic ones after them, mapped
 * at an offset the UAR object returns (opaque to userspace, as in mlx5). */
#define MOCK_STATIC_PAGES 32
#define MOCK_UAR_PAGES 64
#define MOCK_DYN_CMD 0x80
#define MOCK_LOG_MAX (256 * 1024)

/* The test bed's fence frame: EtherType 0x88b5 (IEEE local experimental),
 * payload "MOCKFENCE" and a 64-bit number. The rx_handler records the
 * number instead of matching the frame, so that a sender that sent frames
 * and then a fence from one CPU knows, once the fence file shows its
 * number, that every frame before it was counted. */
#define MOCK_FENCE_TYPE 0x88b5
#define MOCK_FENCE_MAGIC "MOCKFENCE"

/* Per-QP counters (mlx5: counters.c mlx5_ib_counter_bind_qp and friends,
 * a q counter set per rdma_counter): the counter ids the device hands out
 * and each one's values. */
#define MOCK_QCOUNTERS 64

struct mock_dev {
	struct ib_device ibdev;
	struct net_device *ndev;
	spinlock_t lock;	/* flows and counter values, taken in softirq */
	struct list_head flows;	/* sorted by priority, then creation */
	u64 flow_seq;
	bool rx_registered;
	atomic_t next_qpn, next_cqn, next_pdn;
	struct dentry *dbg_root, *dbg;
	struct mutex log_lock;
	char *log;
	size_t log_len;
	u64 log_dropped;
	u64 fence;		/* the last fence frame's number */
	u64 frames;		/* frames seen, fences not included */
	/* q counters: [0] is the port's default set (QPs bound to no
	 * rdma_counter), [id] the set of the rdma_counter with that id. */
	u64 qcnt[MOCK_QCOUNTERS];
	struct ida qcnt_ida;
	/* the data path (see "the data path" below): what the executor
	 * walks, under dp_lock */
	struct mutex dp_lock;
	struct xarray qps;	/* by QP number */
	struct xarray cqs;	/* by CQ number */
	struct xarray mrs;	/* by mkey index (lkey >> 8) */
	struct list_head ctxs;	/* mock_ucontext.node */
	struct task_struct *dp_thread;
	wait_queue_head_t dp_wait;
	atomic_t dp_kick;
	u8 mkey_seq;
	u8 *msg;		/* the message being moved (MOCK_MSG_MAX) */
	struct sk_buff_head rxq;	/* frames for RAW_PACKET receive queues */
	struct mock_exec *x;
};

struct mock_ucontext {
	struct ib_ucontext ibuc;
	struct mutex lock;
	bool dyn;		/* lib_uar_dyn */
	u32 static_pages;	/* static UAR pages (tot_bfregs / 2) */
	struct page *uar[MOCK_UAR_PAGES];
	bool dyn_used[MOCK_UAR_PAGES];
	u32 counters_seq;	/* names counters objects c1, c2, ... in the record */
	u8 cqe_version;
	/* the data path: the UAR pages' mappings, which the executor
	 * unmaps after each doorbell so that the next one faults again
	 * (under mm's mmap lock; the vma's close clears its slot) */
	struct list_head node;	/* mock_dev.ctxs, under dp_lock */
	struct mm_struct *mm;	/* mmgrab'bed at the first UAR mmap */
	struct vm_area_struct *uar_vma[MOCK_UAR_PAGES];
	unsigned long fresh;	/* pages mapped by a fault since the last pass */
};

/* User memory pinned for the model's data path (mlx5: ib_umem_get and
 * mlx5_ib_db_map_user): the pages of [addr, addr + len). */
struct mock_umem {
	struct page **pages;
	unsigned long npages;
	u64 base;		/* the user address of pages[0] */
	u64 addr, len;
};

struct mock_pd { struct ib_pd ibpd; u32 pdn; };

/* A user CQ (mlx5: cq.c create_cq_user): its CQE buffer and doorbell
 * record, and what the "hardware" keeps: the producer index and the arm
 * state (see mock_cq_events). */
struct mock_cq {
	struct ib_cq ibcq;
	u32 cqn;
	bool dp;		/* a user CQ with pinned buffers */
	struct mock_umem buf, db;
	u32 ncqe, cqe_size;
	u32 pi;			/* CQEs written */
	u32 arm_last;		/* the arm word last seen in the record */
	bool armed, ever_armed;
	u32 arm_ci;
	struct mock_ucontext *mu;
};

/* cnt_id: the id of the rdma_counter the QP is bound to (0: none), read
 * by the rx_handler under mock_dev.lock. The rest is the data path's, under
 * mock_dev.dp_lock: the QP buffer (receive queue first, then the send
 * queue, as mlx5 qp.c set_user_buf_size lays it out) and doorbell record
 * pinned, the state and the remote QP modify_qp gave, and how far the
 * "hardware" has consumed each queue. */
struct mock_qp {
	struct ib_qp ibqp;
	u32 cnt_id;
	bool dp;
	struct mock_umem buf, db;
	struct mock_umem sqbuf;	/* RAW_PACKET: the send queue's own buffer */
	struct mock_umem *sqm;	/* where the send queue is: buf or sqbuf */
	u64 sq_base;		/* its user address */
	atomic_t rx_pending;	/* RAW_PACKET: frames on their way to the RQ */
	u32 sq_cnt;		/* send queue basic blocks (64 bytes) */
	u32 rq_cnt, rq_shift;
	u32 sq_tail;		/* basic blocks consumed */
	u32 rq_tail;		/* receive WQEs consumed */
	u32 uidx;		/* the user index CQEs carry (cqe_version 1) */
	enum ib_qp_state state;
	u32 dest_qpn;
	u32 qkey;
};

/* A registered memory region (mlx5: mr.c mlx5_ib_reg_user_mr): its
 * pages, where it starts in the QP's address space (iova), its access. */
struct mock_mr {
	struct ib_mr ibmr;
	struct mock_umem um;
	u64 iova, length;
	int access;
	u32 index;
};



struct mock_counters {
	struct ib_counters ibc;
	u32 id;			/* cN within its context, for the record */
	/* struct mlx5_ib_mcounters: the description (counters_data,
	 * ncounters, cntrs_max_index) and the hardware counter (hw_cntrs_hndl,
	 * here two values). */
	struct mlx5_ib_flow_counters_desc *desc;
	u32 ndesc;
	u32 max_index;
	bool hw;
	u64 packets, bytes;
};

/* A flow's match, from the specs the core converted (struct ib_flow_spec_*):
 * outer headers [0], inner (after VXLAN) [1]. */
struct mock_match {
	bool eth, ipv4, ipv6, tcp, udp;
	struct ib_flow_eth_filter eth_v, eth_m;
	struct ib_flow_ipv4_filter ip4_v, ip4_m;
	struct ib_flow_ipv6_filter ip6_v, ip6_m;
	struct ib_flow_tcp_udp_filter l4_v, l4_m;
};

struct mock_flow {
	struct ib_flow ibflow;
	struct list_head node;
	u64 seq;
	u16 priority;
	u32 type, flags;
	struct mock_counters *counters;
	struct mock_qp *qp;	/* the QP the flow steers to */
	bool drop, vxlan, never;	/* never: a spec with no frame meaning here */
	__be32 vni_v, vni_m;
	struct mock_match m[2];
	u64 hits;
};

static struct mock_dev *mdev;

static inline struct mock_dev *to_mdev(struct ib_device *d)
{
	return container_of(d, struct mock_dev, ibdev);
}
static inline struct mock_counters *to_mc(struct ib_counters *c)
{
	return container_of(c, struct mock_counters, ibc);
}
static inline struct mock_ucontext *to_mu(struct ib_ucontext *u)
{
	return container_of(u, struct mock_ucontext, ibuc);
}

/* ---- the record ---- */

static __printf(2, 3) void mock_rec(struct mock_dev *md, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vscnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	line[n++] = '\n';
	mutex_lock(&md->log_lock);
	if (md->log && md->log_len + n <= MOCK_LOG_MAX) {
		memcpy(md->log + md->log_len, line, n);
		md->log_len += n;
	} else {
		md->log_dropped++;
	}
	mutex_unlock(&md->log_lock);
}

static ssize_t mock_log_read(struct file *f, char __user *buf, size_t len,
			     loff_t *pos)
{
	struct mock_dev *md = f->private_data;
	ssize_t ret;

	mutex_lock(&md->log_lock);
	ret = simple_read_from_buffer(buf, len, pos, md->log, md->log_len);
	mutex_unlock(&md->log_lock);
	return ret;
}

static ssize_t mock_log_write(struct file *f, const char __user *buf,
			      size_t len, loff_t *pos)
{
	struct mock_dev *md = f->private_data;

	mutex_lock(&md->log_lock);
	md->log_len = 0;
	md->log_dropped = 0;
	mutex_unlock(&md->log_lock);
	return len;
}

static const struct file_operations mock_log_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = mock_log_read,
	.write = mock_log_write,
	.llseek = default_llseek,
};

static int mock_flows_show(struct seq_file *s, void *unused)
{
	struct mock_dev *md = s->private;
	struct mock_flow *f;

	spin_lock_bh(&md->lock);
	list_for_each_entry(f, &md->flows, node)
		seq_printf(s, "flow %llu type=%u priority=%u flags=%#x counters=%u hits=%llu\n",
			   f->seq, f->type, f->priority, f->flags,
			   f->counters ? f->counters->id : 0, f->hits);
	spin_unlock_bh(&md->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mock_flows);

static int mock_fence_show(struct seq_file *s, void *unused)
{
	struct mock_dev *md = s->private;

	spin_lock_bh(&md->lock);
	seq_printf(s, "%llu %llu\n", md->fence, md->frames);
	spin_unlock_bh(&md->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mock_fence);

/* ---- device and port ---- */

static void mock_guid(struct mock_dev *md, u8 *g)
{
	const u8 *mac = md->ndev->dev_addr;

	/* EUI-64 from the MAC, as mlx5 and rxe derive theirs */
	g[0] = mac[0] ^ 2;
	g[1] = mac[1];
	g[2] = mac[2];
	g[3] = 0xff;
	g[4] = 0xfe;
	g[5] = mac[3];
	g[6] = mac[4];
	g[7] = mac[5];
}

static int mock_query_device(struct ib_device *ibdev, struct ib_device_attr *a,
			     struct ib_udata *uhw)
{
	/* mlx5: main.c mlx5_ib_query_device; the driver part of the
	 * response (struct mlx5_ib_query_device_resp) stays zero: no TSO, RSS,
	 * CQE compression or packet pacing. */
	memset(a, 0, sizeof(*a));
	a->fw_ver = (16ULL << 32) | (35ULL << 16) | 1000;
	mock_guid(to_mdev(ibdev), (u8 *)&a->sys_image_guid);
	a->max_mr_size = ~0ULL;
	a->page_size_cap = PAGE_SIZE;
	a->vendor_id = 0x02c9;		/* Mellanox */
	a->vendor_part_id = 4119;	/* ConnectX-5 */
	a->max_qp = 1 << 16;
	a->max_qp_wr = 1 << 15;
	a->max_send_sge = 30;
	a->max_recv_sge = 30;
	a->max_sge_rd = 30;
	a->max_cq = 1 << 16;
	a->max_cqe = (1 << 22) - 1;
	a->max_mr = 1 << 16;
	a->max_pd = 1 << 16;
	a->max_qp_rd_atom = 16;
	a->max_qp_init_rd_atom = 16;
	/* mlx5_ib_query_device: IB_ATOMIC_HCA where the device does
	 * 8-byte compare-and-swap and fetch-and-add; libmlx5 posts atomics
	 * only then (mlx5_query_device_ctx, qp->atomics_enabled). */
	a->atomic_cap = IB_ATOMIC_HCA;
	a->max_res_rd_atom = 16 << 16;
	a->max_srq = 1 << 16;
	a->max_srq_wr = 1 << 15;
	a->max_srq_sge = 31;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 16;
	a->raw_packet_caps = IB_RAW_PACKET_CAP_CVLAN_STRIPPING |
			     IB_RAW_PACKET_CAP_IP_CSUM;
	return 0;
}

static bool mock_port_up(struct mock_dev *md)
{
	return netif_running(md->ndev) && netif_carrier_ok(md->ndev);
}

static int mock_query_port(struct ib_device *ibdev, u32 port,
			   struct ib_port_attr *pa)
{
	bool up = mock_port_up(to_mdev(ibdev));

	/* the core zeroed *pa */
	pa->state = up ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	pa->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP :
			      IB_PORT_PHYS_STATE_DISABLED;
	pa->max_mtu = IB_MTU_4096;
	pa->active_mtu = IB_MTU_1024;
	pa->gid_tbl_len = 1;
	pa->pkey_tbl_len = 1;
	pa->max_msg_sz = 1 << 30;
	pa->active_width = IB_WIDTH_4X;
	pa->active_speed = IB_SPEED_EDR;
	return 0;
}

static int mock_get_port_immutable(struct ib_device *ibdev, u32 port,
				   struct ib_port_immutable *im)
{
	/* A raw Ethernet port: no MAD, no CM, no RoCE GID management, so the
	 * core never calls kernel verbs on the device. */
	im->core_cap_flags = RDMA_CORE_PORT_RAW_PACKET;
	im->gid_tbl_len = 1;
	im->pkey_tbl_len = 1;
	return 0;
}

static enum rdma_link_layer mock_get_link_layer(struct ib_device *ibdev,
						u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int mock_query_gid(struct ib_device *ibdev, u32 port, int index,
			  union ib_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[0] = 0xfe;
	gid->raw[1] = 0x80;
	mock_guid(to_mdev(ibdev), &gid->raw[8]);
	return 0;
}

static int mock_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			   u16 *pkey)
{
	*pkey = 0xffff;
	return 0;
}

/* ---- context: struct mlx5_ib_alloc_ucontext_req_v2 / _resp ---- */

static int mock_alloc_uctx(struct ib_ucontext *uctx, struct ib_udata *udata)
{
	struct mock_dev *md = to_mdev(uctx->device);
	struct mock_ucontext *mu = to_mu(uctx);
	struct mlx5_ib_alloc_ucontext_req_v2 req = {};
	struct mlx5_ib_alloc_ucontext_resp resp = {};
	int err;

	mutex_init(&mu->lock);
	if (driver_id != RDMA_DRIVER_MLX5)
		return 0;
	/* mlx5: main.c mlx5_ib_alloc_ucontext */
	if (udata->inlen < sizeof(struct mlx5_ib_alloc_ucontext_req))
		return -EINVAL;
	err = ib_copy_from_udata(&req, udata, min(udata->inlen, sizeof(req)));
	if (err)
		return err;
	mock_rec(md, "alloc_ucontext inlen=%zu total_num_bfregs=%u num_low_latency_bfregs=%u flags=%#x comp_mask=%#x max_cqe_version=%u lib_caps=%#llx",
		 udata->inlen, req.total_num_bfregs, req.num_low_latency_bfregs,
		 req.flags, req.comp_mask, req.max_cqe_version,
		 (unsigned long long)req.lib_caps);
	/* A DEVX context is accepted (a ConnectX with DEVX would create a
	 * uid); no DEVX object exists on the model. */
	if (req.flags & ~MLX5_IB_ALLOC_UCTX_DEVX)
		return -EOPNOTSUPP;
	if (req.comp_mask || req.reserved0 || req.reserved1)
		return -EOPNOTSUPP;
	req.total_num_bfregs = ALIGN(req.total_num_bfregs,
				     MOCK_NON_FP_BFREGS_PER_UAR);
	if (req.num_low_latency_bfregs > req.total_num_bfregs - 1)
		return -EINVAL;
	if (dyn_uar && (req.lib_caps & MLX5_LIB_CAP_DYN_UAR)) {
		/* lib_uar_dyn: no static bfregs, UARs come from
		 * MLX5_IB_OBJECT_UAR */
		mu->dyn = true;
		resp.num_dyn_bfregs = (MOCK_UAR_PAGES - MOCK_STATIC_PAGES) *
				      MOCK_NON_FP_BFREGS_PER_UAR;
	} else {
		/* calc_total_bfregs: one 4K UAR page per two bfregs; the
		 * model has fewer pages than MLX5_MAX_BFREGS allows */
		if (req.total_num_bfregs >
		    MOCK_STATIC_PAGES * MOCK_NON_FP_BFREGS_PER_UAR)
			return -ENOMEM;
		if (!req.total_num_bfregs)
			req.total_num_bfregs = MOCK_NON_FP_BFREGS_PER_UAR;
		mu->static_pages = req.total_num_bfregs /
				   MOCK_NON_FP_BFREGS_PER_UAR;
		resp.tot_bfregs = req.total_num_bfregs;
	}
	resp.qp_tab_size = 1 << 18;
	resp.bf_reg_size = 512;
	resp.cache_line_size = L1_CACHE_BYTES;
	resp.max_sq_desc_sz = 512;
	resp.max_rq_desc_sz = 512;
	resp.max_send_wqebb = 1 << 15;
	resp.max_recv_wr = 1 << 15;
	resp.max_srq_recv_wr = 1 << 15;
	resp.num_ports = 1;
	resp.cqe_version = min_t(u8, req.max_cqe_version, 1);
	mu->cqe_version = resp.cqe_version;
	/* main.c: on an Ethernet port mlx5 resolves a RoCE AH's MAC for
	 * userspace (create_ah's driver output) */
	resp.cmds_supp_uhw = MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE |
			     MLX5_USER_CMDS_SUPP_UHW_CREATE_AH;
	resp.eth_min_inline = MLX5_USER_INLINE_MODE_NONE + 1;
	resp.log_uar_size = PAGE_SHIFT;
	resp.num_uars_per_page = 1;
	resp.response_length = min(udata->outlen, sizeof(resp));
	return ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
}

static int mock_alloc_ucontext(struct ib_ucontext *uctx, struct ib_udata *udata)
{
	struct mock_dev *md = to_mdev(uctx->device);
	struct mock_ucontext *mu = to_mu(uctx);
	int err = mock_alloc_uctx(uctx, udata);

	if (err)
		return err;
	mutex_lock(&md->dp_lock);
	list_add_tail(&mu->node, &md->ctxs);
	mutex_unlock(&md->dp_lock);
	return 0;
}

static void mock_dealloc_ucontext(struct ib_ucontext *uctx)
{
	struct mock_ucontext *mu = to_mu(uctx);
	struct mock_dev *md = to_mdev(uctx->device);
	int i;

	mutex_lock(&md->dp_lock);
	list_del(&mu->node);
	mutex_unlock(&md->dp_lock);
	if (mu->mm)
		mmdrop(mu->mm);

	for (i = 0; i < MOCK_UAR_PAGES; i++)
		if (mu->uar[i])
			__free_page(mu->uar[i]);
}

/* ---- user memory (mlx5: ib_umem_get, mlx5_ib_db_map_user) ---- */

/* The model pins at most this much per buffer or region. */
#define MOCK_UMEM_MAX (256UL << 20)

static int mock_umem_get(struct mock_umem *u, u64 addr, u64 len, bool write)
{
	u64 end, base = addr & PAGE_MASK;
	long got;

	memset(u, 0, sizeof(*u));
	if (!len || check_add_overflow(addr, len, &end) || len > MOCK_UMEM_MAX)
		return -EINVAL;
	u->npages = (PAGE_ALIGN(end) - base) >> PAGE_SHIFT;
	u->pages = kvcalloc(u->npages, sizeof(*u->pages), GFP_KERNEL);
	if (!u->pages)
		return -ENOMEM;
	got = pin_user_pages_fast(base, u->npages,
				  (write ? FOLL_WRITE : 0) | FOLL_LONGTERM,
				  u->pages);
	if (got != u->npages) {
		if (got > 0)
			unpin_user_pages(u->pages, got);
		kvfree(u->pages);
		u->pages = NULL;
		return got < 0 ? got : -EFAULT;
	}
	u->base = base;
	u->addr = addr;
	u->len = len;
	return 0;
}

static void mock_umem_put(struct mock_umem *u)
{
	if (!u->pages)
		return;
	unpin_user_pages_dirty_lock(u->pages, u->npages, true);
	kvfree(u->pages);
	u->pages = NULL;
}

/* mock_umem_rw copies n bytes between buf and u's memory at user address
 * va, which the caller has checked lies in u: into the memory when write. */
static void mock_umem_rw(struct mock_umem *u, u64 va, void *buf, size_t n,
			 bool write)
{
	u64 off = va - u->base;

	while (n) {
		size_t po = off & ~PAGE_MASK;
		size_t c = min_t(size_t, n, PAGE_SIZE - po);
		u8 *p = kmap_local_page(u->pages[off >> PAGE_SHIFT]);

		if (write)
			memcpy(p + po, buf, c);
		else
			memcpy(buf, p + po, c);
		kunmap_local(p);
		buf += c;
		off += c;
		n -= c;
	}
}

static u32 mock_be32_at(struct mock_umem *u, u64 va)
{
	__be32 v;

	mock_umem_rw(u, va, &v, sizeof(v), false);
	return be32_to_cpu(v);
}

/* mock_dp_kick wakes the executor (mock_dp_thread). */
static void mock_dp_kick(struct mock_dev *md)
{
	atomic_set(&md->dp_kick, 1);
	wake_up(&md->dp_wait);
}

/* ---- UAR pages: doorbells the model sees ----
 *
 * A UAR page is a zeroed kernel page mapped into the process, but not up
 * front: the mapping is VM_PFNMAP and starts empty, so the first write to
 * it (a doorbell: libmlx5's post_send_db, mlx5_arm_cq) faults; the fault
 * maps the page, so the write lands there, and wakes the executor, which
 * first unmaps the page again (zap_vma_ptes, so that the next doorbell
 * faults too), then reads the doorbell records and executes what they say
 * (mlx5 keeps the records authoritative: libmlx5 writes a record before
 * it rings, udma_to_device_barrier between). A doorbell written while the
 * page is mapped, before the executor unmaps it, is seen by that run. */
static vm_fault_t mock_uar_fault(struct vm_fault *vmf)
{
	struct mock_ucontext *mu = vmf->vma->vm_private_data;
	struct page *page = mu->uar[vmf->vma->vm_pgoff & 0xff];
	vm_fault_t ret;

	ret = vmf_insert_pfn(vmf->vma, vmf->address, page_to_pfn(page));
	set_bit(vmf->vma->vm_pgoff & 0xff, &mu->fresh);
	mock_dp_kick(mdev);
	return ret;
}

/* The slots of uar_vma change under the mm's mmap lock, held for writing
 * by mmap and munmap (and the executor reads them holding it for reading),
 * so they need no lock of the model's. */
static void mock_uar_close(struct vm_area_struct *vma)
{
	struct mock_ucontext *mu = vma->vm_private_data;
	unsigned long idx = vma->vm_pgoff & 0xff;

	if (idx < MOCK_UAR_PAGES && mu->uar_vma[idx] == vma)
		mu->uar_vma[idx] = NULL;
}

static const struct vm_operations_struct mock_uar_vm_ops = {
	.fault = mock_uar_fault,
	.close = mock_uar_close,
};

static int mock_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct mock_ucontext *mu = to_mu(uctx);
	struct mock_dev *md = to_mdev(uctx->device);
	unsigned long cmd = (vma->vm_pgoff >> 8) & 0xff;
	unsigned long idx = vma->vm_pgoff & 0xff;
	int ret = -EINVAL;

	/* mlx5: main.c mlx5_ib_mmap, uar_mmap: one page at a time */
	if (vma->vm_end - vma->vm_start != PAGE_SIZE)
		return -EINVAL;
	mutex_lock(&mu->lock);
	if (cmd == MLX5_IB_MMAP_REGULAR_PAGE && idx < mu->static_pages) {
		if (!mu->uar[idx])
			mu->uar[idx] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		ret = mu->uar[idx] ? 0 : -ENOMEM;
	} else if (cmd == MOCK_DYN_CMD && idx >= MOCK_STATIC_PAGES &&
		   idx < MOCK_UAR_PAGES && mu->dyn_used[idx]) {
		ret = 0;
	}
	/* anything else (the core clock page, WC pages): EINVAL */
	if (!ret) {
		vma->vm_private_data = mu;
		vma->vm_ops = &mock_uar_vm_ops;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
		vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND |
			     VM_DONTDUMP | VM_DONTCOPY);
#else
		vma->vm_flags |= VM_PFNMAP | VM_IO | VM_DONTEXPAND |
				 VM_DONTDUMP | VM_DONTCOPY;
#endif
	}
	mutex_unlock(&mu->lock);
	if (!ret) {
		/* mmap runs under the mmap lock, which the executor takes
		 * inside dp_lock: no dp_lock here */
		if (!cmpxchg(&mu->mm, NULL, current->mm))
			mmgrab(current->mm);
		mu->uar_vma[idx] = vma;
	}
	mock_rec(md, "mmap command=%lu index=%lu -> %d", cmd, idx, ret);
	return ret;
}

/* ---- PD, CQ, QP ---- */

static int mock_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct mock_pd *pd = container_of(ibpd, struct mock_pd, ibpd);
	struct mlx5_ib_alloc_pd_resp resp = {};

	pd->pdn = atomic_inc_return(&to_mdev(ibpd->device)->next_pdn);
	mock_rec(to_mdev(ibpd->device), "alloc_pd outlen=%zu",
		 udata ? udata->outlen : 0);
	/* mlx5: main.c mlx5_ib_alloc_pd copies the pdn out */
	if (udata && driver_id == RDMA_DRIVER_MLX5) {
		resp.pdn = pd->pdn;
		return ib_copy_to_udata(udata, &resp, sizeof(resp));
	}
	return 0;
}

static int mock_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	return 0;
}

/* .create_cq takes the uverbs_attr_bundle since 6.11 (an ib_udata before) */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
static int mock_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			  struct uverbs_attr_bundle *attrs)
{
	struct ib_udata *udata = attrs ? &attrs->driver_udata : NULL;
#else
static int mock_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			  struct ib_udata *udata)
{
#endif
	struct mock_dev *md = to_mdev(ibcq->device);
	struct mock_cq *cq = container_of(ibcq, struct mock_cq, ibcq);
	struct mlx5_ib_create_cq ucmd = {};
	struct mlx5_ib_create_cq_resp resp = {};
	struct mock_ucontext *mu;
	size_t ucmdlen;
	int err = 0;

	cq->cqn = atomic_inc_return(&md->next_cqn);
	ibcq->cqe = attr->cqe;
	if (!udata || driver_id != RDMA_DRIVER_MLX5)
		return 0;
	mu = rdma_udata_to_drv_context(udata, struct mock_ucontext, ibuc);
	/* mlx5: cq.c create_cq_user */
	ucmdlen = min(udata->inlen, sizeof(ucmd));
	if (ucmdlen < offsetof(struct mlx5_ib_create_cq, flags))
		err = -EINVAL;
	else if (ib_copy_from_udata(&ucmd, udata, ucmdlen))
		err = -EFAULT;
	else if (ucmd.flags & ~(MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD |
				MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX |
				MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS))
		err = -EINVAL;
	else if ((ucmd.cqe_size != 64 && ucmd.cqe_size != 128) ||
		 ucmd.reserved0 || ucmd.reserved1)
		err = -EINVAL;
	else if (!ucmd.buf_addr || !ucmd.db_addr)
		err = -EFAULT;	/* ib_umem_get, mlx5_ib_db_map_user */
	else if (ucmd.flags & MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX) {
		/* the firmware refuses a UAR page the context does not own */
		if (ucmd.uar_page_index < MOCK_STATIC_PAGES ||
		    ucmd.uar_page_index >= MOCK_UAR_PAGES ||
		    !mu->dyn_used[ucmd.uar_page_index])
			err = -EINVAL;
	} else if (mu->dyn) {
		err = -EINVAL;	/* lib_uar_dyn needs a UAR page index */
	}
	if (!err) {
		/* cq.c mlx5_ib_create_cq: entries = roundup_pow_of_two(cqe
		 * + 1); create_cq_user pins entries * cqe_size bytes and
		 * the doorbell record */
		cq->ncqe = roundup_pow_of_two(attr->cqe + 1);
		cq->cqe_size = ucmd.cqe_size;
		err = mock_umem_get(&cq->buf, ucmd.buf_addr,
				    (u64)cq->ncqe * cq->cqe_size, true);
		if (!err) {
			err = mock_umem_get(&cq->db, ucmd.db_addr, 8, true);
			if (err)
				mock_umem_put(&cq->buf);
		}
	}
	mock_rec(md, "create_cq cqe=%u inlen=%zu cqe_size=%u flags=%#x uar=%s -> %d",
		 attr->cqe, udata->inlen, ucmd.cqe_size, ucmd.flags,
		 (ucmd.flags & MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX) ?
		 "dynamic" : "static", err);
	if (err)
		return err;
	resp.cqn = cq->cqn;
	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (!err) {
		ibcq->cqe = cq->ncqe - 1;	/* libmlx5's index mask */
		cq->mu = mu;
		cq->arm_last = 0;
		cq->dp = true;
		mutex_lock(&md->dp_lock);
		err = xa_err(xa_store(&md->cqs, cq->cqn, cq, GFP_KERNEL));
		mutex_unlock(&md->dp_lock);
	}
	if (err) {
		cq->dp = false;
		mock_umem_put(&cq->db);
		mock_umem_put(&cq->buf);
	}
	return err;
}

static int mock_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct mock_dev *md = to_mdev(ibcq->device);
	struct mock_cq *cq = container_of(ibcq, struct mock_cq, ibcq);

	mock_rec(md, "destroy_cq");
	if (cq->dp) {
		mutex_lock(&md->dp_lock);
		xa_erase(&md->cqs, cq->cqn);
		cq->dp = false;
		mutex_unlock(&md->dp_lock);
		mock_umem_put(&cq->db);
		mock_umem_put(&cq->buf);
	}
	return 0;
}

static int mock_poll_cq(struct ib_cq *ibcq, int n, struct ib_wc *wc)
{
	return 0;
}

static int mock_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags f)
{
	return 0;
}

/* An address handle: the core resolves a RoCE destination's MAC before it
 * calls the driver (rdma_create_user_ah, ib_resolve_eth_dmac); mlx5 hands
 * it to userspace (ah.c mlx5_ib_create_ah, struct mlx5_ib_create_ah_resp),
 * which puts it in its UD sends' address vectors. The model's UD delivery
 * needs only the destination QP and Q_Key of the send. */
struct mock_ah { struct ib_ah ibah; };

static int mock_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
			  struct ib_udata *udata)
{
	struct rdma_ah_attr *a = init->ah_attr;
	struct mlx5_ib_create_ah_resp resp = {};

	mock_rec(to_mdev(ibah->device), "create_ah global=%d", !!(rdma_ah_get_ah_flags(a) & IB_AH_GRH));
	if (!udata || driver_id != RDMA_DRIVER_MLX5 || a->type != RDMA_AH_ATTR_TYPE_ROCE)
		return 0;
	resp.response_length = offsetofend(struct mlx5_ib_create_ah_resp, dmac);
	memcpy(resp.dmac, a->roce.dmac, ETH_ALEN);
	return ib_copy_to_udata(udata, &resp, min_t(size_t, udata->outlen, resp.response_length));
}

static int mock_destroy_ah(struct ib_ah *ah, u32 flags)
{
	return 0;
}

static const char *qpt_name(enum ib_qp_type t)
{
	switch (t) {
	case IB_QPT_RAW_PACKET: return "RAW_PACKET";
	case IB_QPT_UD: return "UD";
	case IB_QPT_RC: return "RC";
	case IB_QPT_UC: return "UC";
	default: return "?";
	}
}

/* mlx5: qp.c set_user_buf_size (the receive queue at offset 0, the send
 * queue after it, in 64-byte basic blocks), _create_user_qp (ib_umem_get
 * of the buffer, mlx5_ib_db_map_user of the record), get_qp_user_index. */
static int mock_qp_pin(struct mock_qp *qp, struct mock_ucontext *mu,
		       const struct mlx5_ib_create_qp *ucmd, bool raw)
{
	u64 rq_size, sq_size;
	int err = 0;

	if (ucmd->rq_wqe_shift > 16 || (ucmd->rq_wqe_count &&
	    !is_power_of_2(ucmd->rq_wqe_count)) ||
	    (ucmd->sq_wqe_count && !is_power_of_2(ucmd->sq_wqe_count)))
		return -EINVAL;
	rq_size = (u64)ucmd->rq_wqe_count << ucmd->rq_wqe_shift;
	sq_size = (u64)ucmd->sq_wqe_count << 6;
	qp->rq_cnt = ucmd->rq_wqe_count;
	qp->rq_shift = ucmd->rq_wqe_shift;
	qp->sq_cnt = ucmd->sq_wqe_count;
	atomic_set(&qp->rx_pending, 0);
	if (raw) {
		/* qp.c create_raw_packet_qp: the receive queue at buf_addr,
		 * the send queue in a buffer of its own, sq_buf_addr */
		if (rq_size)
			err = mock_umem_get(&qp->buf, ucmd->buf_addr, rq_size, true);
		if (!err && sq_size)
			err = ucmd->sq_buf_addr ?
			      mock_umem_get(&qp->sqbuf, ucmd->sq_buf_addr, sq_size, true) :
			      -EINVAL;
		qp->sqm = &qp->sqbuf;
		qp->sq_base = ucmd->sq_buf_addr;
	} else {
		if (rq_size + sq_size)
			err = mock_umem_get(&qp->buf, ucmd->buf_addr, rq_size + sq_size, true);
		qp->sqm = &qp->buf;
		qp->sq_base = ucmd->buf_addr + rq_size;
	}
	if (!err)
		err = mock_umem_get(&qp->db, ucmd->db_addr, 8, true);
	if (err) {
		mock_umem_put(&qp->sqbuf);
		mock_umem_put(&qp->buf);
		return err;
	}
	qp->uidx = mu->cqe_version ? ucmd->uidx & 0xffffff : 0xffffff;
	qp->state = IB_QPS_RESET;
	qp->dp = true;
	return 0;
}

static void mock_qp_unpin(struct mock_qp *qp)
{
	qp->dp = false;
	mock_umem_put(&qp->db);
	mock_umem_put(&qp->sqbuf);
	mock_umem_put(&qp->buf);
}

static int mock_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
			  struct ib_udata *udata)
{
	struct mock_qp *mqp = container_of(ibqp, struct mock_qp, ibqp);
	struct mock_dev *md = to_mdev(ibqp->device);
	struct mlx5_ib_create_qp ucmd = {};
	struct mlx5_ib_create_qp_resp resp = {};
	struct mock_ucontext *mu;
	int err = 0;

	ibqp->qp_num = atomic_inc_return(&md->next_qpn) + 0x100;
	switch (init->qp_type) {
	case IB_QPT_RAW_PACKET:
	case IB_QPT_UD:
	case IB_QPT_RC:
	case IB_QPT_UC:
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (!udata || driver_id != RDMA_DRIVER_MLX5)
		return 0;
	mu = rdma_udata_to_drv_context(udata, struct mock_ucontext, ibuc);
	/* mlx5: qp.c process_udata_size, _create_user_qp */
	if (udata->inlen < offsetofend(struct mlx5_ib_create_qp, buf_addr) ||
	    ib_copy_from_udata(&ucmd, udata, min(udata->inlen, sizeof(ucmd))))
		err = -EINVAL;
	else if (ucmd.flags & MLX5_QP_FLAG_UAR_PAGE_INDEX) {
		if (ucmd.bfreg_index < MOCK_STATIC_PAGES ||
		    ucmd.bfreg_index >= MOCK_UAR_PAGES ||
		    !mu->dyn_used[ucmd.bfreg_index])
			err = -EINVAL;
	} else if (mu->dyn) {
		err = -EINVAL;	/* alloc_bfreg: lib_uar_dyn has no bfregs */
	}
	if (!err)
		err = mock_qp_pin(mqp, mu, &ucmd, init->qp_type == IB_QPT_RAW_PACKET);
	mock_rec(md, "create_qp type=%s send_wr=%u recv_wr=%u inlen=%zu flags=%#x sq_wqe_count=%u rq_wqe_count=%u uar=%s -> %d",
		 qpt_name(init->qp_type), init->cap.max_send_wr,
		 init->cap.max_recv_wr, udata->inlen, ucmd.flags,
		 ucmd.sq_wqe_count, ucmd.rq_wqe_count,
		 (ucmd.flags & MLX5_QP_FLAG_UAR_PAGE_INDEX) ? "dynamic" : "static",
		 err);
	if (err)
		return err;
	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (!err && mqp->dp) {
		mutex_lock(&md->dp_lock);
		err = xa_err(xa_store(&md->qps, ibqp->qp_num, mqp, GFP_KERNEL));
		mutex_unlock(&md->dp_lock);
	}
	if (err)
		mock_qp_unpin(mqp);
	return err;
}

/* mlx5: qp.c __mlx5_ib_modify_qp. The core has checked the transition
 * and the mask (ib_modify_qp_is_ok); the model keeps what its executor
 * needs. To RESET, the queues start over (as libmlx5's mlx5_modify_qp
 * clears the doorbell record). */
static int mock_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
			  struct ib_udata *udata)
{
	struct mock_dev *md = to_mdev(ibqp->device);
	struct mock_qp *qp = container_of(ibqp, struct mock_qp, ibqp);

	mutex_lock(&md->dp_lock);
	if (mask & IB_QP_DEST_QPN)
		qp->dest_qpn = attr->dest_qp_num & 0xffffff;
	if (mask & IB_QP_QKEY)
		qp->qkey = attr->qkey;
	if (mask & IB_QP_STATE) {
		qp->state = attr->qp_state;
		if (attr->qp_state == IB_QPS_RESET)
			qp->sq_tail = qp->rq_tail = 0;
	}
	mutex_unlock(&md->dp_lock);
	if (qp->dp && (mask & IB_QP_STATE))
		mock_dp_kick(md);
	return 0;
}

static int mock_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
			 struct ib_qp_init_attr *init)
{
	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	attr->qp_state = IB_QPS_RESET;
	return 0;
}

static int mock_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct mock_dev *md = to_mdev(ibqp->device);
	struct mock_qp *qp = container_of(ibqp, struct mock_qp, ibqp);

	mock_rec(md, "destroy_qp type=%s", qpt_name(ibqp->qp_type));
	if (qp->dp) {
		mutex_lock(&md->dp_lock);
		xa_erase(&md->qps, ibqp->qp_num);
		mutex_unlock(&md->dp_lock);
		mock_qp_unpin(qp);
	}
	return 0;
}

static int mock_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
			  const struct ib_send_wr **bad)
{
	*bad = wr;
	return -EOPNOTSUPP;
}

static int mock_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
			  const struct ib_recv_wr **bad)
{
	*bad = wr;
	return -EOPNOTSUPP;
}

static struct ib_mr *mock_get_dma_mr(struct ib_pd *pd, int acc)
{
	return ERR_PTR(-EOPNOTSUPP);
}

/* mlx5: mr.c mlx5_ib_reg_user_mr (ib_umem_get, writable when the access
 * asks for any write), an mkey of index << 8 | key, lkey = rkey. */
static struct ib_mr *mock_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
				      u64 virt, int acc, struct ib_udata *udata)
{
	struct mock_dev *md = to_mdev(pd->device);
	struct mock_mr *mr;
	int err;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	err = mock_umem_get(&mr->um, start, length, ib_access_writable(acc));
	if (!err) {
		mutex_lock(&md->dp_lock);
		err = xa_alloc(&md->mrs, &mr->index, mr, XA_LIMIT(1, 0xffffff),
			       GFP_KERNEL);
		/* the key byte is never 0, so that no lkey is 0x100, which
		 * ends a receive WQE (MLX5_INVALID_LKEY) */
		if (!err) {
			if (!++md->mkey_seq)
				md->mkey_seq = 1;
			mr->ibmr.lkey = mr->ibmr.rkey =
				mr->index << 8 | md->mkey_seq;
		}
		mutex_unlock(&md->dp_lock);
		if (err)
			mock_umem_put(&mr->um);
	}
	mock_rec(md, "reg_mr length=%llu access=%#x -> %d",
		 (unsigned long long)length, acc, err);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	mr->iova = virt;
	mr->length = length;
	mr->access = acc;
	return &mr->ibmr;
}

static int mock_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct mock_dev *md = to_mdev(ibmr->device);
	struct mock_mr *mr = container_of(ibmr, struct mock_mr, ibmr);

	mutex_lock(&md->dp_lock);
	xa_erase(&md->mrs, mr->index);
	mutex_unlock(&md->dp_lock);
	mock_umem_put(&mr->um);
	mock_rec(md, "dereg_mr");
	kfree(mr);
	return 0;
}

/* ---- the data path: the executor ----
 *
 * What a ConnectX does with the queues userspace writes, for the verbs
 * libmlx5 and this library post: RC and UC SEND, SEND_IMM, RDMA_WRITE,
 * RDMA_WRITE_IMM and RDMA_READ, UD SEND and SEND_IMM, between QPs of this
 * device. One run (mock_dp_run, on the executor thread, woken by a UAR
 * doorbell's fault, a modify_qp, or its own retry timeout) unmaps the UAR
 * pages, then, for each QP, executes the send WQEs its doorbell record
 * announces (the send counter, in basic blocks), consuming the responder's
 * receive WQEs (the receive counter), writing CQEs with the owner bit
 * (mock_cqe_put), and last looks at each CQ's arm word to call its
 * completion handler (mock_cq_events). Formats: the kernel's
 * include/linux/mlx5/qp.h (struct mlx5_wqe_ctrl_seg, mlx5_wqe_data_seg,
 * mlx5_wqe_raddr_seg, mlx5_wqe_inline_seg, mlx5_av) and device.h (struct
 * mlx5_cqe64, mlx5_err_cqe), which rdma-core's providers/mlx5/mlx5dv.h
 * repeats. A send that finds no receive WQE, or a CQ with no room, waits
 * for the next run (a retry MOCK_RETRY_NS later): RNR retries are not
 * counted. */

#define MOCK_MSG_MAX (16U << 20)	/* the largest message the model moves */
/* ends a short receive WQE: qp.h MLX5_INVALID_LKEY (6.1),
 * MLX5_TERMINATE_SCATTER_LIST_LKEY (6.12); rdma-core mlx5dv.h */
#define MOCK_INVALID_LKEY 0x100

struct mock_wqe {
	u32 bb;			/* its first basic block */
	u32 nbb;
	u32 ds;			/* 16-byte units, the control segment included */
	u8 opcode;
	u16 idx;		/* wqe_index, which the CQE's wqe_counter echoes */
	u8 fm_ce_se;
	__be32 imm;
};

/* mock_sq_unit reads 16-byte unit k of the send WQE at basic block bb,
 * wrapping at the end of the send queue as libmlx5 writes it (a segment
 * past the end continues at the start: qp.c mlx5_get_send_wqe). */
static void mock_sq_unit(struct mock_qp *qp, u32 bb, u32 k, void *out)
{
	u64 size = (u64)qp->sq_cnt * MLX5_SEND_WQE_BB;
	u64 off = ((u64)bb * MLX5_SEND_WQE_BB + (u64)k * 16) % size;

	mock_umem_rw(qp->sqm, qp->sq_base + off, out, 16, false);
}

static struct mock_mr *mock_mr_find(struct mock_dev *md, u32 key,
				    struct ib_pd *pd, u64 addr, u64 len,
				    int need)
{
	struct mock_mr *mr = xa_load(&md->mrs, key >> 8);

	if (!mr || mr->ibmr.lkey != key || mr->ibmr.pd != pd)
		return NULL;
	if (addr < mr->iova || len > mr->length ||
	    addr - mr->iova > mr->length - len)
		return NULL;
	if ((mr->access & need) != need)
		return NULL;
	return mr;
}

static void mock_mr_rw(struct mock_mr *mr, u64 addr, void *buf, u32 n,
		       bool write)
{
	if (n)
		mock_umem_rw(&mr->um, mr->um.addr + (addr - mr->iova), buf, n,
			     write);
}

#define MOCK_VENDOR_SYND 0x80

/* A CQE to write: the fields of struct mlx5_cqe64 the model fills. */
struct mock_cqe {
	u8 opcode;		/* MLX5_CQE_* */
	u32 qpn, uidx;
	u16 wqe_counter;
	u32 byte_cnt;
	__be32 imm;
	u32 flags_rqpn;		/* UD: the source QP, and the GRH bits */
	u8 sop_op;		/* a requester CQE: the WQE's opcode */
	u8 syndrome;		/* an error CQE */
};

/* mock_cq_room reports whether cq has a free CQE: the consumer index is
 * the record's word MLX5_CQ_SET_CI (libmlx5 cq.c update_cons_index). */
static bool mock_cq_room(struct mock_cq *cq)
{
	u32 ci = mock_be32_at(&cq->db, cq->db.addr) & 0xffffff;

	return ((cq->pi - ci) & 0xffffff) < cq->ncqe;
}

/* mock_cqe_put writes the next CQE: the 64-byte CQE is the second half of
 * a 128-byte entry; the owner bit is bit log2(ncqe) of the producer index
 * (libmlx5 cq.c get_sw_cqe takes a CQE whose owner bit equals
 * !!(index & ncqe)); the byte holding it is written last. */
static void mock_cqe_put(struct mock_cq *cq, const struct mock_cqe *e)
{
	union {
		struct mlx5_cqe64 ok;
		struct mlx5_err_cqe err;
		u8 b[64];
	} c = {};
	u64 va = cq->buf.addr + (u64)(cq->pi & (cq->ncqe - 1)) * cq->cqe_size +
		 (cq->cqe_size == 128 ? 64 : 0);
	u8 owner = !!(cq->pi & cq->ncqe);

	if (e->opcode == MLX5_CQE_REQ_ERR || e->opcode == MLX5_CQE_RESP_ERR) {
		c.err.srqn = cpu_to_be32(e->uidx);
		/* ConnectX firmware's vendor syndromes are its own and not
		 * published; the model's is MOCK_VENDOR_SYND | syndrome, so
		 * that a reader that takes the wrong byte shows it */
		c.err.vendor_err_synd = MOCK_VENDOR_SYND | e->syndrome;
		c.err.syndrome = e->syndrome;
		c.err.s_wqe_opcode_qpn = cpu_to_be32((u32)e->sop_op << 24 |
						     e->qpn);
		c.err.wqe_counter = cpu_to_be16(e->wqe_counter);
	} else {
		c.ok.flags_rqpn = cpu_to_be32(e->flags_rqpn);
		c.ok.srqn = cpu_to_be32(e->uidx);
		c.ok.immediate = e->imm;
		c.ok.byte_cnt = cpu_to_be32(e->byte_cnt);
		c.ok.sop_drop_qpn = cpu_to_be32((u32)e->sop_op << 24 | e->qpn);
		c.ok.wqe_counter = cpu_to_be16(e->wqe_counter);
	}
	mock_umem_rw(&cq->buf, va, c.b, 63, true);
	smp_wmb();
	c.b[63] = e->opcode << 4 | owner;
	mock_umem_rw(&cq->buf, va + 63, &c.b[63], 1, true);
	cq->pi++;
}

/* mock_cq_events arms and fires cq (mlx5: the EQ's completion event,
 * mlx5_ib_cq_comp, calls the CQ's handler once per arm). The arm word is
 * the doorbell record's MLX5_CQ_ARM_DB (sn << 28 | cmd | ci, libmlx5
 * mlx5_arm_cq and the kernel's mlx5_cq_arm): a new value is a new arm.
 * The first arm of a CQ may leave the word as it was (sn 0, ci 0: all
 * zero), so until the CQ has been armed once, the arm doorbell itself (at
 * MLX5_CQ_DOORBELL of a UAR page: the same word, then the CQ number) is
 * read too. An armed CQ fires once it holds a CQE at or past the arm's
 * consumer index; solicited-only arms are treated as plain ones. */
static void mock_cq_events(struct mock_cq *cq)
{
	u32 arm = mock_be32_at(&cq->db, cq->db.addr + 4);
	bool newarm = arm != cq->arm_last;
	int i;

	if (!newarm && !cq->ever_armed && cq->mu) {
		for (i = 0; i < MOCK_UAR_PAGES && !newarm; i++) {
			__be32 d[2];
			u8 *p;

			if (!cq->mu->uar[i])
				continue;
			p = kmap_local_page(cq->mu->uar[i]);
			memcpy(d, p + MLX5_CQ_DOORBELL, sizeof(d));
			kunmap_local(p);
			newarm = be32_to_cpu(d[1]) == cq->cqn &&
				 be32_to_cpu(d[0]) == arm;
		}
	}
	if (newarm) {
		cq->arm_last = arm;
		cq->armed = true;
		cq->ever_armed = true;
		cq->arm_ci = arm & 0xffffff;
	}
	if (cq->armed && ((cq->pi - cq->arm_ci) & 0xffffff) != 0 &&
	    ((cq->pi - cq->arm_ci) & 0xffffff) <= cq->ncqe) {
		cq->armed = false;
		if (cq->ibcq.comp_handler)
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	}
}

/* A scatter or gather list read from a WQE: up to MOCK_SGL entries. */
#define MOCK_SGL 32
struct mock_sgl {
	int n;
	u64 len;
	struct { struct mock_mr *mr; u64 addr; u32 len; } e[MOCK_SGL];
};

/* mock_recv_sgl reads receive WQE (tail) of qp: data segments up to the
 * WQE's size, ended early by one with MLX5_INVALID_LKEY (libmlx5 qp.c
 * mlx5_post_recv). Each must name a local-write MR of qp's PD. */
static int mock_recv_sgl(struct mock_dev *md, struct mock_qp *qp, u32 tail,
			 struct mock_sgl *sgl)
{
	u32 nseg = (1U << qp->rq_shift) / sizeof(struct mlx5_wqe_data_seg);
	u64 base = qp->buf.addr +
		   ((u64)(tail & (qp->rq_cnt - 1)) << qp->rq_shift);
	u32 i;

	sgl->n = 0;
	sgl->len = 0;
	for (i = 0; i < nseg && i < MOCK_SGL; i++) {
		struct mlx5_wqe_data_seg d;
		u32 len, key;
		u64 addr;

		mock_umem_rw(&qp->buf, base + i * sizeof(d), &d, sizeof(d), false);
		key = be32_to_cpu(d.lkey);
		if (key == MOCK_INVALID_LKEY)
			break;
		len = be32_to_cpu(d.byte_count);
		addr = be64_to_cpu(d.addr);
		sgl->e[i].mr = mock_mr_find(md, key, qp->ibqp.pd, addr, len,
					    IB_ACCESS_LOCAL_WRITE);
		if (!sgl->e[i].mr)
			return -EACCES;
		sgl->e[i].addr = addr;
		sgl->e[i].len = len;
		sgl->len += len;
		sgl->n++;
	}
	return 0;
}

/* mock_sgl_skip drops the first n bytes of a scatter list. */
static void mock_sgl_skip(struct mock_sgl *sgl, u64 n)
{
	int i = 0, j = 0;

	for (; i < sgl->n; i++) {
		u32 c = min_t(u64, n, sgl->e[i].len);

		sgl->e[i].addr += c;
		sgl->e[i].len -= c;
		n -= c;
		if (sgl->e[i].len)
			sgl->e[j++] = sgl->e[i];
	}
	sgl->n = j;
}

/* mock_sgl_rw moves msg to (write) or from a scatter/gather list. */
static void mock_sgl_rw(struct mock_sgl *sgl, u8 *msg, u64 n, bool write)
{
	int i;

	for (i = 0; i < sgl->n && n; i++) {
		u32 c = min_t(u64, n, sgl->e[i].len);

		mock_mr_rw(sgl->e[i].mr, sgl->e[i].addr, msg, c, write);
		msg += c;
		n -= c;
	}
}

/* Outcomes of one send WQE. */
enum { MOCK_DONE, MOCK_WAIT, MOCK_ERR };

struct mock_exec {
	struct mock_wqe w;
	u8 *msg;		/* the gathered message */
	u32 len;
	u64 raddr;
	u32 rkey;
	u32 dqpn, qkey;		/* UD: from the address vector */
	struct mock_sgl local;	/* RDMA_READ, atomics: where the data goes */
	u64 swap_add, compare;	/* atomics: struct mlx5_wqe_atomic_seg */
	u8 syndrome;		/* MOCK_ERR: the requester's */
};

static bool mock_is_atomic(u8 op)
{
	return op == MLX5_OPCODE_ATOMIC_CS || op == MLX5_OPCODE_ATOMIC_FA;
}

/* mock_is_rdma: the opcodes with a remote address segment */
static bool mock_is_rdma(u8 op)
{
	return op == MLX5_OPCODE_RDMA_WRITE || op == MLX5_OPCODE_RDMA_WRITE_IMM ||
	       op == MLX5_OPCODE_RDMA_READ || mock_is_atomic(op);
}

/* mock_gather parses a send WQE after its control segment: the remote
 * address segment (RDMA), the address vector (UD), then data and inline
 * segments, gathering the message into x->msg (RDMA_READ: the local list
 * instead). A bad lkey or length: MOCK_ERR with the requester's syndrome. */
static int mock_gather(struct mock_dev *md, struct mock_qp *qp,
		       struct mock_exec *x)
{
	u32 k = 1;
	u8 u[16];

	if (mock_is_rdma(x->w.opcode)) {
		struct mlx5_wqe_raddr_seg *r = (void *)u;

		mock_sq_unit(qp, x->w.bb, k++, u);
		x->raddr = be64_to_cpu(r->raddr);
		x->rkey = be32_to_cpu(r->rkey);
	}
	if (mock_is_atomic(x->w.opcode)) {
		/* struct mlx5_wqe_atomic_seg: swap_add, compare (libmlx5
		 * qp.c set_atomic_seg) */
		struct mlx5_wqe_atomic_seg *a = (void *)u;

		mock_sq_unit(qp, x->w.bb, k++, u);
		x->swap_add = be64_to_cpu(a->swap_add);
		x->compare = be64_to_cpu(a->compare);
	}
	if (qp->ibqp.qp_type == IB_QPT_RAW_PACKET) {
		/* struct mlx5_wqe_eth_seg: the frame's first inline_hdr.sz
		 * bytes, the first two in the segment, the rest in the units
		 * after it (libmlx5 qp.c copy_eth_inline_headers) */
		struct mlx5_wqe_eth_seg *eth = (void *)u;
		u32 sz, done;

		mock_sq_unit(qp, x->w.bb, k++, u);
		sz = be16_to_cpu(eth->inline_hdr.sz);
		if (sz > 256 || k + DIV_ROUND_UP(sz > 2 ? sz - 2 : 0, 16) > x->w.ds) {
			x->syndrome = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
			return MOCK_ERR;
		}
		done = min(sz, 2U);
		memcpy(x->msg, eth->inline_hdr.start, done);
		while (done < sz) {
			u32 c = min(sz - done, 16U);

			mock_sq_unit(qp, x->w.bb, k++, u);
			memcpy(x->msg + done, u, c);
			done += c;
		}
		x->len = sz;
	}
	if (qp->ibqp.qp_type == IB_QPT_UD) {
		struct mlx5_av av;

		mock_sq_unit(qp, x->w.bb, k, (u8 *)&av);
		mock_sq_unit(qp, x->w.bb, k + 1, (u8 *)&av + 16);
		mock_sq_unit(qp, x->w.bb, k + 2, (u8 *)&av + 32);
		k += 3;
		x->dqpn = be32_to_cpu(av.dqp_dct) & 0xffffff;
		x->qkey = be32_to_cpu(av.key.qkey.qkey);
	}
	if (qp->ibqp.qp_type != IB_QPT_RAW_PACKET)
		x->len = 0;
	x->local.n = 0;
	x->local.len = 0;
	while (k < x->w.ds) {
		struct mlx5_wqe_data_seg *d = (void *)u;
		u32 bc;

		mock_sq_unit(qp, x->w.bb, k, u);
		bc = be32_to_cpu(d->byte_count);
		if (bc & MLX5_INLINE_SEG) {
			/* struct mlx5_wqe_inline_seg: the byte count, then
			 * the data, to the next 16-byte boundary */
			u32 n = bc & ~MLX5_INLINE_SEG, done = 0, off = 4;

			if (x->len + n > MOCK_MSG_MAX || 4 + n > (x->w.ds - k) * 16) {
				x->syndrome = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
				return MOCK_ERR;
			}
			while (done < n) {
				u32 c = min(n - done, 16 - off);

				memcpy(x->msg + x->len + done, u + off, c);
				done += c;
				off += c;
				if (off == 16 && done < n) {
					mock_sq_unit(qp, x->w.bb, ++k, u);
					off = 0;
				}
			}
			x->len += n;
			k++;
			continue;
		}
		{
			u32 key = be32_to_cpu(d->lkey);
			u64 addr = be64_to_cpu(d->addr);
			bool into = x->w.opcode == MLX5_OPCODE_RDMA_READ ||
				    mock_is_atomic(x->w.opcode);
			int need = into ? IB_ACCESS_LOCAL_WRITE : 0;
			struct mock_mr *mr;

			if (x->len + (u64)bc > MOCK_MSG_MAX) {
				x->syndrome = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
				return MOCK_ERR;
			}
			mr = mock_mr_find(md, key, qp->ibqp.pd, addr, bc, need);
			if (!mr) {
				x->syndrome = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
				return MOCK_ERR;
			}
			if (into) {
				if (x->local.n == MOCK_SGL) {
					x->syndrome = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
					return MOCK_ERR;
				}
				x->local.e[x->local.n].mr = mr;
				x->local.e[x->local.n].addr = addr;
				x->local.e[x->local.n].len = bc;
				x->local.n++;
				x->local.len += bc;
			} else {
				mock_mr_rw(mr, addr, x->msg + x->len, bc, false);
			}
			x->len += bc;
		}
		k++;
	}
	/* an atomic returns 8 bytes: libmlx5 writes one data segment of
	 * MLX5_ATOMIC_SIZE (set_data_ptr_seg_atomic) */
	if (mock_is_atomic(x->w.opcode) && x->local.len != 8) {
		x->syndrome = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
		return MOCK_ERR;
	}
	return MOCK_DONE;
}

/* mock_respond delivers x at the responder dqp: a receive WQE for the
 * SENDs and the WRITE_IMM, the remote MR for the RDMA operations. */
static int mock_respond(struct mock_dev *md, struct mock_qp *qp,
			struct mock_qp *dqp, struct mock_exec *x)
{
	u8 op = x->w.opcode;
	bool consume = op == MLX5_OPCODE_SEND || op == MLX5_OPCODE_SEND_IMM ||
		       op == MLX5_OPCODE_RDMA_WRITE_IMM;
	struct mock_cq *rcq = container_of(dqp->ibqp.recv_cq, struct mock_cq, ibcq);
	u32 grh = qp->ibqp.qp_type == IB_QPT_UD ? 40 : 0;
	struct mock_sgl sgl;
	struct mock_cqe e = {};
	u32 head;

	if (mock_is_atomic(op)) {
		/* 8 bytes at an 8-byte aligned address of a remote-atomic MR,
		 * big-endian as a ConnectX keeps them; the original value
		 * goes back into the local segment. The executor is one
		 * thread: nothing else touches the memory meanwhile. */
		struct mock_mr *mr;
		__be64 v;
		u64 old;

		if (x->raddr & 7) {
			x->syndrome = MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
			return MOCK_ERR;
		}
		mr = mock_mr_find(md, x->rkey, dqp->ibqp.pd, x->raddr, 8,
				  IB_ACCESS_REMOTE_ATOMIC);
		if (!mr) {
			x->syndrome = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
			return MOCK_ERR;
		}
		mock_mr_rw(mr, x->raddr, (u8 *)&v, 8, false);
		old = be64_to_cpu(v);
		if (op == MLX5_OPCODE_ATOMIC_FA)
			v = cpu_to_be64(old + x->swap_add);
		else if (old == x->compare)
			v = cpu_to_be64(x->swap_add);
		mock_mr_rw(mr, x->raddr, (u8 *)&v, 8, true);
		v = cpu_to_be64(old);
		mock_sgl_rw(&x->local, (u8 *)&v, 8, true);
		return MOCK_DONE;
	}
	if (mock_is_rdma(op)) {
		int need = op == MLX5_OPCODE_RDMA_READ ? IB_ACCESS_REMOTE_READ :
			   IB_ACCESS_REMOTE_WRITE;
		struct mock_mr *mr = mock_mr_find(md, x->rkey, dqp->ibqp.pd,
						  x->raddr, x->len, need);

		if (!mr) {
			x->syndrome = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
			return MOCK_ERR;
		}
		if (consume && (dqp->rq_tail & 0xffff) ==
		    (mock_be32_at(&dqp->db, dqp->db.addr) & 0xffff))
			return MOCK_WAIT;
		if (consume && (!rcq->dp || !mock_cq_room(rcq)))
			return MOCK_WAIT;
		if (op == MLX5_OPCODE_RDMA_READ) {
			u8 *buf = x->msg;

			mock_mr_rw(mr, x->raddr, buf, x->local.len, false);
			mock_sgl_rw(&x->local, buf, x->local.len, true);
			return MOCK_DONE;
		}
		mock_mr_rw(mr, x->raddr, x->msg, x->len, true);
		if (!consume)
			return MOCK_DONE;
		x->len = 0;	/* WRITE_IMM: the receive takes no data */
	}
	head = mock_be32_at(&dqp->db, dqp->db.addr) & 0xffff;
	if ((dqp->rq_tail & 0xffff) == head)
		return MOCK_WAIT;	/* RNR: the responder has not posted */
	if (!rcq->dp || !mock_cq_room(rcq))
		return MOCK_WAIT;
	if (mock_recv_sgl(md, dqp, dqp->rq_tail, &sgl)) {
		e.syndrome = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		x->syndrome = MLX5_CQE_SYNDROME_REMOTE_OP_ERR;
	} else if (sgl.len < (u64)x->len + grh) {
		e.syndrome = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
		x->syndrome = MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
	}
	if (e.syndrome) {
		if (qp->ibqp.qp_type == IB_QPT_UD)
			x->syndrome = 0;	/* UD: the requester never knows */
		e.opcode = MLX5_CQE_RESP_ERR;
	} else {
		if (grh) {
			/* the GRH's 40 bytes first (a RoCE UD receive) */
			u8 g[40] = {};

			mock_sgl_rw(&sgl, g, 40, true);
			mock_sgl_skip(&sgl, 40);
		}
		mock_sgl_rw(&sgl, x->msg, x->len, true);
		e.opcode = op == MLX5_OPCODE_RDMA_WRITE_IMM ? MLX5_CQE_RESP_WR_IMM :
			   op == MLX5_OPCODE_SEND_IMM ? MLX5_CQE_RESP_SEND_IMM :
			   MLX5_CQE_RESP_SEND;
		e.imm = x->w.imm;
		e.byte_cnt = x->len + grh;
		if (grh)
			e.flags_rqpn = qp->ibqp.qp_num | 1U << 28; /* GRH present */
	}
	e.qpn = dqp->ibqp.qp_num;
	e.uidx = dqp->uidx;
	e.wqe_counter = dqp->rq_tail;
	mock_cqe_put(rcq, &e);
	dqp->rq_tail++;
	if (e.syndrome)
		dqp->state = IB_QPS_ERR;
	return x->syndrome ? MOCK_ERR : MOCK_DONE;
}
/* mock_raw_xmit puts a frame a RAW_PACKET QP sent on the port's netdev
 * (mlx5: the send queue's Ethernet segment and data, out of the NIC). */
static void mock_raw_xmit(struct mock_dev *md, const u8 *frame, u32 len)
{
	struct sk_buff *skb;

	if (len < ETH_HLEN || len > md->ndev->mtu + VLAN_ETH_HLEN)
		return;
	skb = netdev_alloc_skb(md->ndev, len);
	if (!skb)
		return;
	skb_put_data(skb, frame, len);
	skb_reset_mac_header(skb);
	skb->protocol = ((const struct ethhdr *)frame)->h_proto;
	skb->dev = md->ndev;
	dev_queue_xmit(skb);
}

/* The frames the rx_handler steered to a RAW_PACKET QP with a receive WQE
 * posted, on their way to the executor: the QP's number rides in the
 * control buffer. */
struct mock_rx_cb {
	u32 qpn;
};

/* mock_rx_deliver writes a frame into the next receive WQE of its QP and
 * completes it (mlx5: a RAW_PACKET receive, a RESP_SEND CQE whose byte
 * count is the frame's length); it reports whether it must wait (the CQ is
 * full). A VLAN tag the core took off the frame goes back in. */
static bool mock_rx_deliver(struct mock_dev *md, struct sk_buff *skb)
{
	struct mock_rx_cb *cb = (void *)skb->cb;
	struct mock_qp *qp = xa_load(&md->qps, cb->qpn);
	struct mock_cq *rcq;
	struct mock_sgl sgl;
	struct mock_cqe e = {};
	u32 len = skb->len + ETH_HLEN, head;
	u8 *f = md->msg;

	if (!qp || !qp->dp || qp->ibqp.qp_type != IB_QPT_RAW_PACKET)
		return false;
	rcq = container_of(qp->ibqp.recv_cq, struct mock_cq, ibcq);
	if (!rcq->dp)
		return false;
	if (!mock_cq_room(rcq))
		return true;
	atomic_dec(&qp->rx_pending);
	head = mock_be32_at(&qp->db, qp->db.addr) & 0xffff;
	if ((qp->rq_tail & 0xffff) == head || (qp->state != IB_QPS_RTR &&
	    qp->state != IB_QPS_RTS)) {
		spin_lock_bh(&md->lock);
		md->qcnt[qp->cnt_id]++;	/* out_of_buffer */
		spin_unlock_bh(&md->lock);
		return false;
	}
	if (skb_copy_bits(skb, -ETH_HLEN, f, 2 * ETH_ALEN))
		return false;
	if (skb_vlan_tag_present(skb)) {
		__be16 tag[2] = { skb->vlan_proto, htons(skb_vlan_tag_get(skb)) };

		memcpy(f + 2 * ETH_ALEN, tag, VLAN_HLEN);
		f += VLAN_HLEN;
		len += VLAN_HLEN;
	}
	if (skb_copy_bits(skb, -ETH_HLEN + 2 * ETH_ALEN, f + 2 * ETH_ALEN,
			  skb->len + ETH_HLEN - 2 * ETH_ALEN))
		return false;
	if (mock_recv_sgl(md, qp, qp->rq_tail, &sgl)) {
		e.opcode = MLX5_CQE_RESP_ERR;
		e.syndrome = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
	} else if (sgl.len < len) {
		e.opcode = MLX5_CQE_RESP_ERR;
		e.syndrome = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
	} else {
		mock_sgl_rw(&sgl, md->msg, len, true);
		e.opcode = MLX5_CQE_RESP_SEND;
		e.byte_cnt = len;
	}
	e.qpn = qp->ibqp.qp_num;
	e.uidx = qp->uidx;
	e.wqe_counter = qp->rq_tail;
	mock_cqe_put(rcq, &e);
	qp->rq_tail++;
	if (e.syndrome)
		qp->state = IB_QPS_ERR;
	return false;
}

/* mock_rx_run delivers the frames the rx_handler queued. */
static bool mock_rx_run(struct mock_dev *md)
{
	struct sk_buff *skb;

	while ((skb = skb_dequeue(&md->rxq))) {
		if (mock_rx_deliver(md, skb)) {
			skb_queue_head(&md->rxq, skb);
			return true;
		}
		kfree_skb(skb);
	}
	return false;
}

/* mock_rx_take is the rx_handler's half (under md->lock, in softirq): a
 * frame a flow steers to a RAW_PACKET QP that has a receive WQE posted
 * not yet claimed by an earlier frame goes to the executor; otherwise mlx5
 * drops it and counts out_of_buffer on the QP's q counter. */
static void mock_rx_take(struct mock_dev *md, struct mock_qp *qp,
			 struct sk_buff *skb)
{
	struct sk_buff *c;
	u32 free;

	if (qp->dp && qp->rq_cnt && qp->ibqp.qp_type == IB_QPT_RAW_PACKET &&
	    (READ_ONCE(qp->state) == IB_QPS_RTR || READ_ONCE(qp->state) == IB_QPS_RTS)) {
		free = (mock_be32_at(&qp->db, qp->db.addr) - READ_ONCE(qp->rq_tail) -
			atomic_read(&qp->rx_pending)) & 0xffff;
		if (free && free <= qp->rq_cnt && (c = skb_clone(skb, GFP_ATOMIC))) {
			((struct mock_rx_cb *)c->cb)->qpn = qp->ibqp.qp_num;
			atomic_inc(&qp->rx_pending);
			skb_queue_tail(&md->rxq, c);
			mock_dp_kick(md);
			return;
		}
	}
	md->qcnt[qp->cnt_id]++;
}

/* mock_rq_flush completes every posted receive WQE of qp, in error,
 * with WR_FLUSH_ERR (mlx5 flushes a QP's queues when it enters ERR). */
static bool mock_rq_flush(struct mock_dev *md, struct mock_qp *qp)
{
	struct mock_cq *rcq = container_of(qp->ibqp.recv_cq, struct mock_cq, ibcq);
	u32 head;

	if (!qp->rq_cnt || !rcq->dp)
		return false;
	head = mock_be32_at(&qp->db, qp->db.addr) & 0xffff;
	while ((qp->rq_tail & 0xffff) != head) {
		struct mock_cqe e = {
			.opcode = MLX5_CQE_RESP_ERR,
			.syndrome = MLX5_CQE_SYNDROME_WR_FLUSH_ERR,
			.qpn = qp->ibqp.qp_num, .uidx = qp->uidx,
			.wqe_counter = qp->rq_tail,
		};

		if (!mock_cq_room(rcq))
			return true;
		mock_cqe_put(rcq, &e);
		qp->rq_tail++;
	}
	return false;
}

/* mock_sq_run executes qp's new send WQEs; it reports whether some must
 * wait for a later run. */
static bool mock_sq_run(struct mock_dev *md, struct mock_qp *qp)
{
	struct mock_cq *scq = container_of(qp->ibqp.send_cq, struct mock_cq, ibcq);
	struct mock_exec *x = md->x;
	u32 head;

	if (qp->state == IB_QPS_ERR && mock_rq_flush(md, qp))
		return true;
	if (!qp->sq_cnt || !scq->dp || (qp->state != IB_QPS_RTS &&
	    qp->state != IB_QPS_SQD && qp->state != IB_QPS_ERR))
		return false;
	head = mock_be32_at(&qp->db, qp->db.addr + 4) & 0xffff;
	while ((qp->sq_tail & 0xffff) != head) {
		struct mlx5_wqe_ctrl_seg c;
		struct mock_cqe e = {};
		struct mock_qp *dqp;
		u32 oi, qd;
		int r = MOCK_DONE;

		if (!mock_cq_room(scq))
			return true;
		memset(&x->w, 0, sizeof(x->w));
		x->w.bb = qp->sq_tail & (qp->sq_cnt - 1);
		mock_sq_unit(qp, x->w.bb, 0, &c);
		oi = be32_to_cpu(c.opmod_idx_opcode);
		qd = be32_to_cpu(c.qpn_ds);
		x->w.opcode = oi & MLX5_WQE_CTRL_OPCODE_MASK;
		x->w.idx = (oi & MLX5_WQE_CTRL_WQE_INDEX_MASK) >>
			   MLX5_WQE_CTRL_WQE_INDEX_SHIFT;
		x->w.ds = qd & MLX5_WQE_CTRL_DS_MASK;
		x->w.fm_ce_se = c.fm_ce_se;
		x->w.imm = c.imm;
		x->w.nbb = DIV_ROUND_UP(x->w.ds * 16, MLX5_SEND_WQE_BB);
		x->msg = md->msg;
		x->syndrome = 0;
		if (qp->state == IB_QPS_ERR) {
			x->syndrome = MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
			r = MOCK_ERR;
		} else if (!x->w.ds || x->w.nbb > qp->sq_cnt ||
			   (x->w.opcode != MLX5_OPCODE_SEND &&
			    x->w.opcode != MLX5_OPCODE_SEND_IMM &&
			    !(mock_is_rdma(x->w.opcode) &&
			      qp->ibqp.qp_type != IB_QPT_UD &&
			      (qp->ibqp.qp_type == IB_QPT_RC ||
			       (x->w.opcode != MLX5_OPCODE_RDMA_READ &&
				!mock_is_atomic(x->w.opcode)))))) {
			x->syndrome = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
			x->w.nbb = max(1U, min(x->w.nbb, qp->sq_cnt));
			r = MOCK_ERR;
		} else {
			r = mock_gather(md, qp, x);
		}
		if (r == MOCK_DONE && qp->ibqp.qp_type == IB_QPT_RAW_PACKET) {
			mock_raw_xmit(md, x->msg, x->len);
		} else if (r == MOCK_DONE) {
			u32 dqpn = qp->ibqp.qp_type == IB_QPT_UD ? x->dqpn : qp->dest_qpn;

			dqp = xa_load(&md->qps, dqpn);
			if (!dqp || dqp->ibqp.qp_type != qp->ibqp.qp_type ||
			    (dqp->state != IB_QPS_RTR && dqp->state != IB_QPS_RTS &&
			     dqp->state != IB_QPS_SQD)) {
				/* nobody answers: RC retries and gives up;
				 * UC and UD messages are lost */
				if (qp->ibqp.qp_type == IB_QPT_RC) {
					x->syndrome = MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR;
					r = MOCK_ERR;
				}
			} else if (qp->ibqp.qp_type == IB_QPT_UD &&
				   x->qkey != dqp->qkey) {
				/* a wrong Q_Key: the responder drops it */
			} else {
				r = mock_respond(md, qp, dqp, x);
			}
		}
		if (r == MOCK_WAIT)
			return true;
		e.qpn = qp->ibqp.qp_num;
		e.uidx = qp->uidx;
		e.wqe_counter = x->w.idx;
		e.sop_op = x->w.opcode;
		if (r == MOCK_ERR) {
			e.opcode = MLX5_CQE_REQ_ERR;
			e.syndrome = x->syndrome;
			mock_cqe_put(scq, &e);
			qp->state = IB_QPS_ERR;
		} else if (x->w.fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE) {
			e.opcode = MLX5_CQE_REQ;
			if (x->w.opcode == MLX5_OPCODE_RDMA_READ ||
			    mock_is_atomic(x->w.opcode))
				e.byte_cnt = x->len;
			mock_cqe_put(scq, &e);
		}
		qp->sq_tail += x->w.nbb;
	}
	return false;
}

/* mock_uar_unmap takes the UAR pages of mu out of its process's page
 * tables, so that the next doorbell faults (see mock_uar_fault), except a
 * page a fault mapped since the last pass: the write that faulted may not
 * have landed yet (the executor, a real-time thread, can run between the
 * fault and the write's retry, and unmapping then would fault the write
 * again, for ever). Its record was written before it and is executed
 * now; the page is unmapped on the next pass, which the caller schedules
 * (true). */
static bool mock_uar_unmap(struct mock_ucontext *mu)
{
	struct mm_struct *mm = READ_ONCE(mu->mm);
	bool again = false;
	int i;

	if (!mm || !mmget_not_zero(mm))
		return false;
	mmap_read_lock(mm);
	for (i = 0; i < MOCK_UAR_PAGES; i++) {
		if (!mu->uar_vma[i])
			continue;
		if (test_and_clear_bit(i, &mu->fresh)) {
			again = true;
			continue;
		}
		zap_vma_ptes(mu->uar_vma[i], mu->uar_vma[i]->vm_start, PAGE_SIZE);
	}
	mmap_read_unlock(mm);
	mmput_async(mm);
	return again;
}

/* mock_dp_run is one pass of the executor; it reports whether some work
 * must wait for a later pass. */
static bool mock_dp_run(struct mock_dev *md)
{
	struct mock_ucontext *mu;
	struct mock_qp *qp;
	struct mock_cq *cq;
	unsigned long i;
	bool wait = false;

	mutex_lock(&md->dp_lock);
	list_for_each_entry(mu, &md->ctxs, node)
		wait |= mock_uar_unmap(mu);
	smp_rmb();	/* the records, after the doorbells that announced them */
	wait |= mock_rx_run(md);
	xa_for_each(&md->qps, i, qp)
		wait |= mock_sq_run(md, qp);
	xa_for_each(&md->cqs, i, cq)
		mock_cq_events(cq);
	mutex_unlock(&md->dp_lock);
	return wait;
}

/* The executor is a SCHED_FIFO kernel thread, woken by each doorbell
 * (mock_dp_kick): programs that poll their CQs in a loop keep every CPU
 * busy, and a device's work must not wait for the scheduler to give it a
 * turn. Work that waits (a receiver that has not posted, a full CQ, a
 * UAR page to unmap) is retried every MOCK_RETRY_NS. */
#define MOCK_RETRY_NS (200 * NSEC_PER_USEC)
static int mock_dp_thread(void *arg)
{
	struct mock_dev *md = arg;
	bool wait = false;

	while (!kthread_should_stop()) {
		if (wait)
			wait_event_interruptible_hrtimeout(md->dp_wait,
				atomic_read(&md->dp_kick) || kthread_should_stop(),
				ns_to_ktime(MOCK_RETRY_NS));
		else
			wait_event_interruptible(md->dp_wait,
				atomic_read(&md->dp_kick) || kthread_should_stop());
		atomic_set(&md->dp_kick, 0);
		wait = mock_dp_run(md);
	}
	return 0;
}

/* dp: the data path's state, one line per QP and CQ (debugfs). */
static int mock_dp_show(struct seq_file *sf, void *unused)
{
	struct mock_dev *md = sf->private;
	struct mock_qp *qp;
	struct mock_cq *cq;
	unsigned long i;

	mutex_lock(&md->dp_lock);
	xa_for_each(&md->qps, i, qp)
		seq_printf(sf, "qp %#x type %d state %d dest %#x sq %u/%u rq %u/%u\n",
			   qp->ibqp.qp_num, qp->ibqp.qp_type, qp->state,
			   qp->dest_qpn, qp->sq_tail & 0xffff,
			   mock_be32_at(&qp->db, qp->db.addr + 4) & 0xffff,
			   qp->rq_tail & 0xffff,
			   mock_be32_at(&qp->db, qp->db.addr) & 0xffff);
	xa_for_each(&md->cqs, i, cq)
		seq_printf(sf, "cq %u ncqe %u pi %u ci %u arm %#x armed %d\n",
			   cq->cqn, cq->ncqe, cq->pi,
			   mock_be32_at(&cq->db, cq->db.addr) & 0xffffff,
			   mock_be32_at(&cq->db, cq->db.addr + 4), cq->armed);
	mutex_unlock(&md->dp_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mock_dp);

/* ---- counters: counters.c ---- */

static int mock_create_counters(struct ib_counters *ibc,
				struct uverbs_attr_bundle *attrs)
{
	struct mock_counters *mc = to_mc(ibc);
	struct ib_ucontext *uctx = ib_uverbs_get_ucontext(attrs);

	/* mlx5_ib_create_counters: nothing until the first flow */
	if (!IS_ERR(uctx)) {
		struct mock_ucontext *mu = to_mu(uctx);

		mutex_lock(&mu->lock);
		mc->id = ++mu->counters_seq;
		mutex_unlock(&mu->lock);
	}
	mock_rec(to_mdev(ibc->device), "create_counters c%u", mc->id);
	return 0;
}

static int mock_destroy_counters(struct ib_counters *ibc)
{
	struct mock_counters *mc = to_mc(ibc);

	/* mlx5_ib_destroy_counters; the core refused while a flow uses it */
	mock_rec(to_mdev(ibc->device), "destroy_counters c%u", mc->id);
	kfree(mc->desc);
	mc->desc = NULL;
	return 0;
}

static int mock_read_counters(struct ib_counters *ibc,
			      struct ib_counters_read_attr *ra,
			      struct uverbs_attr_bundle *attrs)
{
	struct mock_dev *md = to_mdev(ibc->device);
	struct mock_counters *mc = to_mc(ibc);
	u64 vals[2];
	u32 i;
	int ret = 0;

	/* mlx5_ib_read_counters: room for every index described, else
	 * EINVAL; then each (description, index) pair adds the hardware
	 * value to its index (pairs on one index add up). read_flow_counters
	 * queries the counter whatever the flags (PREFER_CACHED included). */
	spin_lock_bh(&md->lock);
	if (mc->max_index > ra->ncounters) {
		ret = -EINVAL;
	} else {
		vals[IB_COUNTER_PACKETS] = mc->packets;
		vals[IB_COUNTER_BYTES] = mc->bytes;
		for (i = 0; i < mc->ndesc; i++)
			ra->counters_buff[mc->desc[i].index] +=
				vals[mc->desc[i].description];
	}
	spin_unlock_bh(&md->lock);
	mock_rec(md, "read_counters c%u ncounters=%u flags=%#x -> %d", mc->id,
		 ra->ncounters, ra->flags, ret);
	return ret;
}

/* mlx5_ib_flow_counters_set_data for a flow with a COUNT action. ucmd is
 * NULL when the flow carried no driver data. */
static int mock_counters_set_data(struct mock_dev *md, struct mock_counters *mc,
				  struct mlx5_ib_create_flow *ucmd, char *rec,
				  size_t reclen)
{
	struct mlx5_ib_flow_counters_desc *desc = NULL;
	struct mlx5_ib_flow_counters_data *data;
	bool created = false;
	u32 i, n = 0, max_index = 0;
	size_t off = 0;
	int ret = 0;

	if (ucmd && ucmd->ncounters_data) {
		data = &ucmd->data[0];
		n = data->ncounters;
		if (n > MOCK_MAX_COUNTERS_NUM)
			return -EINVAL;
		desc = kcalloc(n, sizeof(*desc), GFP_KERNEL);
		if (!desc)
			return -ENOMEM;
		if (copy_from_user(desc, u64_to_user_ptr(data->counters_data),
				   sizeof(*desc) * n)) {
			kfree(desc);
			return -EFAULT;
		}
		/* description@index, the first 16 of them */
		off += scnprintf(rec + off, reclen - off, " points=[");
		for (i = 0; i < n && i < 16; i++)
			off += scnprintf(rec + off, reclen - off, "%s%u@%u",
					 i ? "," : "", desc[i].description,
					 desc[i].index);
		scnprintf(rec + off, reclen - off, "%s]", n > 16 ? ",..." : "");
	}
	spin_lock_bh(&md->lock);
	if (!mc->hw) {
		/* mlx5_fc_create: a new hardware counter starts at zero */
		mc->hw = true;
		mc->packets = mc->bytes = 0;
		created = true;
	}
	if (desc) {
		if (mc->max_index) {
			ret = -EINVAL;	/* already bound to a flow */
		} else {
			/* counters_set_description */
			for (i = 0; i < n; i++) {
				if (desc[i].description > IB_COUNTER_BYTES) {
					ret = -EINVAL;
					break;
				}
				if (max_index <= desc[i].index)
					max_index = desc[i].index + 1;
			}
		}
		if (!ret) {
			kfree(mc->desc);
			mc->desc = desc;
			mc->ndesc = n;
			mc->max_index = max_index;
			desc = NULL;
		}
	} else if (!mc->max_index) {
		ret = -EINVAL;	/* not bound yet: the first flow describes */
	}
	if (ret && created)
		mc->hw = false;	/* mlx5_fc_destroy of the counter just made */
	spin_unlock_bh(&md->lock);
	kfree(desc);
	return ret;
}

/* mlx5_ib_counters_clear_description: when the flow going away is the
 * object's last user, the description is forgotten; the hardware counter
 * (and its values) stays until the object is destroyed. */
static void mock_counters_clear(struct mock_dev *md, struct mock_counters *mc)
{
	if (!mc || atomic_read(&mc->ibc.usecnt) != 1)
		return;
	spin_lock_bh(&md->lock);
	kfree(mc->desc);
	mc->desc = NULL;
	mc->ndesc = 0;
	mc->max_index = 0;
	spin_unlock_bh(&md->lock);
}

/* ---- flows: fs.c ---- */

static const char *spec_name(u32 t)
{
	switch (t & ~IB_FLOW_SPEC_INNER) {
	case IB_FLOW_SPEC_ETH: return "ETH";
	case IB_FLOW_SPEC_IB: return "IB";
	case IB_FLOW_SPEC_IPV4: return "IPV4";
	case IB_FLOW_SPEC_IPV6: return "IPV6";
	case IB_FLOW_SPEC_ESP: return "ESP";
	case IB_FLOW_SPEC_TCP: return "TCP";
	case IB_FLOW_SPEC_UDP: return "UDP";
	case IB_FLOW_SPEC_VXLAN_TUNNEL: return "VXLAN";
	case IB_FLOW_SPEC_GRE: return "GRE";
	case IB_FLOW_SPEC_MPLS: return "MPLS";
	case IB_FLOW_SPEC_ACTION_TAG: return "TAG";
	case IB_FLOW_SPEC_ACTION_DROP: return "DROP";
	case IB_FLOW_SPEC_ACTION_HANDLE: return "HANDLE";
	case IB_FLOW_SPEC_ACTION_COUNT: return "COUNT";
	}
	return "?";
}

/* FIELDS_NOT_SUPPORTED: mask bytes from field to the end of the filter */
static bool mask_set(const void *mask, size_t from, size_t size)
{
	return memchr_inv((const u8 *)mask + from, 0, size - from) != NULL;
}

/* set_proto: the ip_protocol a flow matches, set once or equal */
static int set_proto(u8 *pmask, u8 *pval, u8 mask, u8 val)
{
	if (!mask)
		return 0;
	if (*pmask && (*pmask != mask || *pval != val))
		return -EINVAL;
	*pmask = mask;
	*pval = val;
	return 0;
}

/* is_valid_ethertype: an ETH spec that matches the ethertype matches it
 * whole and agrees with an IPv4 or IPv6 spec of the same headers */
static bool valid_ethertype(const struct ib_flow_attr *fa, bool inner)
{
	const union ib_flow_spec *s = (const void *)(fa + 1);
	u32 bit = inner ? IB_FLOW_SPEC_INNER : 0, ip = 0;
	bool has = false, mask_ok = true;
	u16 et = 0;
	unsigned int i;

	for (i = 0; i < fa->num_of_specs; i++) {
		if (s->type == (IB_FLOW_SPEC_ETH | bit) && s->eth.mask.ether_type) {
			mask_ok = s->eth.mask.ether_type == htons(0xffff);
			has = true;
			et = ntohs(s->eth.val.ether_type);
		} else if (s->type == (IB_FLOW_SPEC_IPV4 | bit) ||
			   s->type == (IB_FLOW_SPEC_IPV6 | bit)) {
			ip = s->type;
		}
		s = (const void *)s + s->size;
	}
	if (!has || !ip)
		return true;
	return mask_ok &&
	       ((et == ETH_P_IP && ip == (IB_FLOW_SPEC_IPV4 | bit)) ||
		(et == ETH_P_IPV6 && ip == (IB_FLOW_SPEC_IPV6 | bit)));
}

static int rec_mac(char *b, size_t n, const u8 *v, const u8 *m)
{
	return scnprintf(b, n, "%pM/%pM", v, m);
}

/* parse_flow_attr, spec by spec, into the model's match; rec gets the
 * spec as the driver saw it */
static int mock_parse_specs(struct mock_flow *f, const struct ib_flow_attr *fa,
			    char *rec, size_t reclen)
{
	const union ib_flow_spec *s = (const void *)(fa + 1);
	u8 pmask[2] = {}, pval[2] = {};
	size_t off = strlen(rec);
	unsigned int i;
	int err;

	if (!valid_ethertype(fa, false) || !valid_ethertype(fa, true))
		return -EINVAL;
	for (i = 0; i < fa->num_of_specs; i++) {
		bool in = s->type & IB_FLOW_SPEC_INNER;
		struct mock_match *m = &f->m[in];

		off += scnprintf(rec + off, reclen - off, " %s%s{",
				 in ? "INNER_" : "", spec_name(s->type));
		switch (s->type & ~IB_FLOW_SPEC_INNER) {
		case IB_FLOW_SPEC_ETH:
			off += rec_mac(rec + off, reclen - off, s->eth.val.dst_mac,
				       s->eth.mask.dst_mac);
			off += scnprintf(rec + off, reclen - off, " ");
			off += rec_mac(rec + off, reclen - off, s->eth.val.src_mac,
				       s->eth.mask.src_mac);
			off += scnprintf(rec + off, reclen - off,
					 " type=%04x/%04x vlan=%04x/%04x",
					 ntohs(s->eth.val.ether_type),
					 ntohs(s->eth.mask.ether_type),
					 ntohs(s->eth.val.vlan_tag),
					 ntohs(s->eth.mask.vlan_tag));
			m->eth = true;
			m->eth_v = s->eth.val;
			m->eth_m = s->eth.mask;
			break;
		case IB_FLOW_SPEC_IPV4:
			off += scnprintf(rec + off, reclen - off,
					 "%pI4/%pI4 %pI4/%pI4 proto=%u/%02x tos=%u/%02x",
					 &s->ipv4.val.src_ip, &s->ipv4.mask.src_ip,
					 &s->ipv4.val.dst_ip, &s->ipv4.mask.dst_ip,
					 s->ipv4.val.proto, s->ipv4.mask.proto,
					 s->ipv4.val.tos, s->ipv4.mask.tos);
			if (mask_set(&s->ipv4.mask,
				     offsetof(struct ib_flow_ipv4_filter, ttl),
				     sizeof(s->ipv4.mask)))
				return -EOPNOTSUPP;
			err = set_proto(&pmask[in], &pval[in], s->ipv4.mask.proto,
					s->ipv4.val.proto);
			if (err)
				return err;
			m->ipv4 = true;
			m->ip4_v = s->ipv4.val;
			m->ip4_m = s->ipv4.mask;
			break;
		case IB_FLOW_SPEC_IPV6:
			off += scnprintf(rec + off, reclen - off,
					 "%pI6c/%pI6c %pI6c/%pI6c flow_label=%x/%x next_hdr=%u/%02x tclass=%u/%02x",
					 s->ipv6.val.src_ip, s->ipv6.mask.src_ip,
					 s->ipv6.val.dst_ip, s->ipv6.mask.dst_ip,
					 ntohl(s->ipv6.val.flow_label),
					 ntohl(s->ipv6.mask.flow_label),
					 s->ipv6.val.next_hdr, s->ipv6.mask.next_hdr,
					 s->ipv6.val.traffic_class,
					 s->ipv6.mask.traffic_class);
			if (mask_set(&s->ipv6.mask,
				     offsetof(struct ib_flow_ipv6_filter, hop_limit),
				     sizeof(s->ipv6.mask)))
				return -EOPNOTSUPP;
			err = set_proto(&pmask[in], &pval[in], s->ipv6.mask.next_hdr,
					s->ipv6.val.next_hdr);
			if (err)
				return err;
			m->ipv6 = true;
			m->ip6_v = s->ipv6.val;
			m->ip6_m = s->ipv6.mask;
			break;
		case IB_FLOW_SPEC_TCP:
		case IB_FLOW_SPEC_UDP:
			off += scnprintf(rec + off, reclen - off,
					 "dst=%u/%04x src=%u/%04x",
					 ntohs(s->tcp_udp.val.dst_port),
					 ntohs(s->tcp_udp.mask.dst_port),
					 ntohs(s->tcp_udp.val.src_port),
					 ntohs(s->tcp_udp.mask.src_port));
			err = set_proto(&pmask[in], &pval[in], 0xff,
					(s->type & ~IB_FLOW_SPEC_INNER) == IB_FLOW_SPEC_TCP ?
					IPPROTO_TCP : IPPROTO_UDP);
			if (err)
				return err;
			if ((s->type & ~IB_FLOW_SPEC_INNER) == IB_FLOW_SPEC_TCP)
				m->tcp = true;
			else
				m->udp = true;
			m->l4_v = s->tcp_udp.val;
			m->l4_m = s->tcp_udp.mask;
			break;
		case IB_FLOW_SPEC_VXLAN_TUNNEL:
			off += scnprintf(rec + off, reclen - off, "vni=%u/%06x",
					 ntohl(s->tunnel.val.tunnel_id),
					 ntohl(s->tunnel.mask.tunnel_id));
			f->vxlan = true;
			f->vni_v = s->tunnel.val.tunnel_id;
			f->vni_m = s->tunnel.mask.tunnel_id;
			break;
		case IB_FLOW_SPEC_GRE:
			off += scnprintf(rec + off, reclen - off,
					 "protocol=%04x/%04x key=%x/%x",
					 ntohs(s->gre.val.protocol),
					 ntohs(s->gre.mask.protocol),
					 ntohl(s->gre.val.key), ntohl(s->gre.mask.key));
			if (s->gre.mask.c_ks_res0_ver)
				return -EOPNOTSUPP;
			err = set_proto(&pmask[in], &pval[in], 0xff, IPPROTO_GRE);
			if (err)
				return err;
			f->never = true;
			break;
		case IB_FLOW_SPEC_MPLS:
			off += scnprintf(rec + off, reclen - off, "tag=%x/%x",
					 ntohl(s->mpls.val.tag),
					 ntohl(s->mpls.mask.tag));
			f->never = true;
			break;
		case IB_FLOW_SPEC_ESP:
			/* needs IPsec offload, which the model has not */
			return -EOPNOTSUPP;
		case IB_FLOW_SPEC_ACTION_TAG:
			off += scnprintf(rec + off, reclen - off, "%u",
					 s->flow_tag.tag_id);
			if (s->flow_tag.tag_id >= BIT(24))
				return -EINVAL;
			break;
		case IB_FLOW_SPEC_ACTION_DROP:
			f->drop = true;
			break;
		case IB_FLOW_SPEC_ACTION_HANDLE:
			/* no flow action object exists on the model */
			return -EOPNOTSUPP;
		case IB_FLOW_SPEC_ACTION_COUNT:
			/* one counters spec per flow */
			if (f->counters)
				return -EINVAL;
			f->counters = to_mc(s->flow_count.counters);
			off += scnprintf(rec + off, reclen - off, "c%u usecnt=%d",
					 f->counters->id,
					 atomic_read(&s->flow_count.counters->usecnt));
			break;
		default:
			return -EINVAL;
		}
		off += scnprintf(rec + off, reclen - off, "}");
		s = (const void *)s + s->size;
	}
	return 0;
}

/* mlx5_ib_create_flow, then _create_flow_rule for a NORMAL flow */
static struct ib_flow *mock_create_flow(struct ib_qp *qp,
					struct ib_flow_attr *fa,
					struct ib_udata *udata)
{
	struct mock_dev *md = to_mdev(qp->device);
	struct mlx5_ib_create_flow *ucmd = NULL, hdr = {};
	size_t min_sz = offsetofend(struct mlx5_ib_create_flow, reserved), req_sz;
	struct mock_flow *f, *pos;
	char *rec;
	size_t off;
	int err = 0;

	rec = kzalloc(2048, GFP_KERNEL);
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!rec || !f) {
		err = -ENOMEM;
		goto out;
	}
	off = scnprintf(rec, 2048, "create_flow qp=%s type=%u priority=%u flags=%#x port=%u specs=%u",
			qpt_name(qp->qp_type), fa->type, fa->priority, fa->flags,
			fa->port, fa->num_of_specs);
	if (udata && udata->inlen) {
		if (udata->inlen < min_sz) {
			err = -EOPNOTSUPP;
			goto out;
		}
		err = ib_copy_from_udata(&hdr, udata, min_sz);
		if (err)
			goto out;
		/* currently supports only one counters data */
		if (hdr.ncounters_data > 1) {
			err = -EINVAL;
			goto out;
		}
		req_sz = min_sz + sizeof(struct mlx5_ib_flow_counters_data) *
				  hdr.ncounters_data;
		if (udata->inlen > req_sz &&
		    !ib_is_udata_cleared(udata, req_sz, udata->inlen - req_sz)) {
			err = -EOPNOTSUPP;
			goto out;
		}
		ucmd = kzalloc(req_sz, GFP_KERNEL);
		if (!ucmd) {
			err = -ENOMEM;
			goto out;
		}
		err = ib_copy_from_udata(ucmd, udata, req_sz);
		if (err)
			goto out;
		off += scnprintf(rec + off, 2048 - off, " ucmd{ncounters_data=%u",
				 hdr.ncounters_data);
		if (hdr.ncounters_data)
			off += scnprintf(rec + off, 2048 - off, " ncounters=%u",
					 ucmd->data[0].ncounters);
		off += scnprintf(rec + off, 2048 - off, "}");
	}
	if (fa->priority > MOCK_FLOW_LAST_PRIO) {
		err = -ENOMEM;
		goto out;
	}
	if (fa->flags & ~(IB_FLOW_ATTR_FLAGS_DONT_TRAP | IB_FLOW_ATTR_FLAGS_EGRESS)) {
		err = -EINVAL;
		goto out;
	}
	if ((fa->flags & IB_FLOW_ATTR_FLAGS_EGRESS) &&
	    (fa->type == IB_FLOW_ATTR_ALL_DEFAULT ||
	     fa->type == IB_FLOW_ATTR_MC_DEFAULT)) {
		err = -EINVAL;
		goto out;
	}
	f->type = fa->type;
	f->qp = container_of(qp, struct mock_qp, ibqp);
	f->priority = fa->priority;
	f->flags = fa->flags;
	switch (fa->type) {
	case IB_FLOW_ATTR_NORMAL:
		err = mock_parse_specs(f, fa, rec, 2048);
		if (!err && f->counters) {
			off = strlen(rec);
			/* on failure mlx5 has not yet set handler->ibcounters:
			 * nothing to clear */
			err = mock_counters_set_data(md, f->counters, ucmd,
						     rec + off, 2048 - off);
		}
		break;
	case IB_FLOW_ATTR_ALL_DEFAULT:
	case IB_FLOW_ATTR_MC_DEFAULT:
	case IB_FLOW_ATTR_SNIFFER:
		/* create_leftovers_rule, create_sniffer_rule: built from the
		 * driver's own specs; they count nothing here */
		f->never = true;
		break;
	default:
		err = -EINVAL;
	}
	if (err)
		goto out;
	spin_lock_bh(&md->lock);
	f->seq = ++md->flow_seq;
	/* keep the list in steering order: priority, then creation */
	list_for_each_entry(pos, &md->flows, node)
		if (pos->priority > f->priority)
			break;
	list_add_tail(&f->node, &pos->node);
	spin_unlock_bh(&md->lock);
out:
	if (rec) {
		mock_rec(md, "%s -> %d", rec, err);
		kfree(rec);
	}
	kfree(ucmd);
	if (err) {
		kfree(f);
		return ERR_PTR(err);
	}
	return &f->ibflow;
}

/* mlx5_ib_destroy_flow */
static int mock_destroy_flow(struct ib_flow *ibflow)
{
	struct mock_flow *f = container_of(ibflow, struct mock_flow, ibflow);
	struct mock_dev *md = to_mdev(ibflow->device);

	spin_lock_bh(&md->lock);
	list_del(&f->node);
	spin_unlock_bh(&md->lock);
	mock_counters_clear(md, f->counters);
	mock_rec(md, "destroy_flow counters=c%u hits=%llu",
		 f->counters ? f->counters->id : 0, f->hits);
	kfree(f);
	return 0;
}

/* ---- frames ---- */

/* The headers of one Ethernet frame: eth at its start, l3 the network
 * header's offset in the skb's data. */
struct mock_hdrs {
	const u8 *dst, *src;
	u16 ethertype;		/* after a VLAN tag */
	bool tagged;
	u16 tci;
	int l3;			/* offset in skb->data, -1: none */
};

static bool match_mac(const u8 *a, const u8 *v, const u8 *m)
{
	int i;

	for (i = 0; i < ETH_ALEN; i++)
		if ((a[i] ^ v[i]) & m[i])
			return false;
	return true;
}

/* Does one level of headers (outer or inner) match m? next gets the offset
 * of the L4 payload (after TCP/UDP header) for VXLAN. */
static bool match_level(const struct mock_match *m, const struct sk_buff *skb,
			const struct mock_hdrs *h, int *l4off, u8 *proto)
{
	u8 buf[40];
	int l4 = -1;

	*proto = 0;
	if (m->eth) {
		if (!match_mac(h->dst, m->eth_v.dst_mac, m->eth_m.dst_mac) ||
		    !match_mac(h->src, m->eth_v.src_mac, m->eth_m.src_mac))
			return false;
		if ((htons(h->ethertype) ^ m->eth_v.ether_type) & m->eth_m.ether_type)
			return false;
		if (m->eth_m.vlan_tag) {
			/* mlx5 matches cvlan_tag: only tagged frames */
			if (!h->tagged ||
			    ((htons(h->tci) ^ m->eth_v.vlan_tag) & m->eth_m.vlan_tag))
				return false;
		}
	}
	if (h->l3 < 0)
		return !(m->ipv4 || m->ipv6 || m->tcp || m->udp);
	if (h->ethertype == ETH_P_IP) {
		const struct iphdr *ip = skb_header_pointer(skb, h->l3, sizeof(*ip), buf);

		if (m->ipv6 || !ip || ip->version != 4 || ip->ihl < 5)
			return false;
		if (m->ipv4 &&
		    (((ip->saddr ^ m->ip4_v.src_ip) & m->ip4_m.src_ip) ||
		     ((ip->daddr ^ m->ip4_v.dst_ip) & m->ip4_m.dst_ip) ||
		     ((ip->protocol ^ m->ip4_v.proto) & m->ip4_m.proto) ||
		     ((ip->tos ^ m->ip4_v.tos) & m->ip4_m.tos)))
			return false;
		*proto = ip->protocol;
		l4 = h->l3 + ip->ihl * 4;
	} else if (h->ethertype == ETH_P_IPV6) {
		const struct ipv6hdr *ip = skb_header_pointer(skb, h->l3, sizeof(*ip), buf);
		__be32 w0;
		int i;

		if (m->ipv4 || !ip || ip->version != 6)
			return false;
		memcpy(&w0, ip, 4);
		if (m->ipv6) {
			for (i = 0; i < 16; i++)
				if (((ip->saddr.s6_addr[i] ^ m->ip6_v.src_ip[i]) & m->ip6_m.src_ip[i]) ||
				    ((ip->daddr.s6_addr[i] ^ m->ip6_v.dst_ip[i]) & m->ip6_m.dst_ip[i]))
					return false;
			if (((ntohl(w0) & 0xfffff) ^ ntohl(m->ip6_v.flow_label)) &
			    ntohl(m->ip6_m.flow_label))
				return false;
			if ((ip->nexthdr ^ m->ip6_v.next_hdr) & m->ip6_m.next_hdr)
				return false;
			if ((((ntohl(w0) >> 20) & 0xff) ^ m->ip6_v.traffic_class) &
			    m->ip6_m.traffic_class)
				return false;
		}
		*proto = ip->nexthdr;
		l4 = h->l3 + sizeof(*ip);
	} else {
		return !(m->ipv4 || m->ipv6 || m->tcp || m->udp);
	}
	if (m->tcp || m->udp) {
		const struct udphdr *p;

		if (*proto != (m->tcp ? IPPROTO_TCP : IPPROTO_UDP))
			return false;
		p = skb_header_pointer(skb, l4, sizeof(*p), buf);
		if (!p || ((p->dest ^ m->l4_v.dst_port) & m->l4_m.dst_port) ||
		    ((p->source ^ m->l4_v.src_port) & m->l4_m.src_port))
			return false;
	}
	*l4off = l4;
	return true;
}

static bool mock_match_frame(const struct mock_flow *f, const struct sk_buff *skb,
			     const struct mock_hdrs *outer)
{
	struct mock_hdrs in = {};
	const struct udphdr *uh;
	const u8 *vx;
	u8 ubuf[8], vbuf[8], ebuf[ETH_HLEN + VLAN_HLEN], proto;
	const u8 *eh;
	int l4 = -1, off;
	u32 vni;

	if (f->never)
		return false;
	if (!match_level(&f->m[0], skb, outer, &l4, &proto))
		return false;
	if (!f->vxlan && !f->m[1].eth && !f->m[1].ipv4 && !f->m[1].ipv6 &&
	    !f->m[1].tcp && !f->m[1].udp)
		return true;
	/* VXLAN: UDP to the VXLAN port, an 8-byte header, the inner frame */
	if (l4 < 0 || proto != IPPROTO_UDP)
		return false;
	uh = skb_header_pointer(skb, l4, sizeof(*uh), ubuf);
	if (!uh || uh->dest != htons(MOCK_VXLAN_PORT))
		return false;
	vx = skb_header_pointer(skb, l4 + 8, 8, vbuf);
	if (!vx || !(vx[0] & 0x08))
		return false;
	vni = (vx[4] << 16) | (vx[5] << 8) | vx[6];
	if (f->vxlan && ((vni ^ ntohl(f->vni_v)) & ntohl(f->vni_m) & 0xffffff))
		return false;
	off = l4 + 16;
	eh = skb_header_pointer(skb, off, ETH_HLEN, ebuf);
	if (!eh)
		return false;
	in.dst = eh;
	in.src = eh + ETH_ALEN;
	in.ethertype = (eh[12] << 8) | eh[13];
	in.l3 = off + ETH_HLEN;
	if (eth_type_vlan(htons(in.ethertype))) {
		eh = skb_header_pointer(skb, off, sizeof(ebuf), ebuf);
		if (!eh)
			return false;
		in.dst = eh;
		in.src = eh + ETH_ALEN;
		in.tagged = true;
		in.tci = (eh[14] << 8) | eh[15];
		in.ethertype = (eh[16] << 8) | eh[17];
		in.l3 += VLAN_HLEN;
	}
	return match_level(&f->m[1], skb, &in, &l4, &proto);
}

static rx_handler_result_t mock_rx(struct sk_buff **pskb)
{
	struct sk_buff *skb = *pskb;
	struct mock_dev *md = rcu_dereference(skb->dev->rx_handler_data);
	const struct ethhdr *eth = eth_hdr(skb);
	struct mock_hdrs h = {
		.dst = eth->h_dest,
		.src = eth->h_source,
		.ethertype = ntohs(skb->protocol),
		.l3 = 0,
	};
	struct mock_flow *f;
	bool take = false;
	u64 len;

	if (skb->protocol == htons(MOCK_FENCE_TYPE) && !skb_vlan_tag_present(skb)) {
		u8 buf[sizeof(MOCK_FENCE_MAGIC) - 1 + 8];
		const u8 *p = skb_header_pointer(skb, 0, sizeof(buf), buf);

		if (p && !memcmp(p, MOCK_FENCE_MAGIC, sizeof(MOCK_FENCE_MAGIC) - 1)) {
			u64 n;

			memcpy(&n, p + sizeof(MOCK_FENCE_MAGIC) - 1, 8);
			spin_lock(&md->lock);
			md->fence = le64_to_cpu((__force __le64)n);
			spin_unlock(&md->lock);
			return RX_HANDLER_PASS;
		}
	}
	/* The core untagged a VLAN frame before the rx_handler runs: the
	 * tag is in the skb, the protocol is the inner one. */
	if (skb_vlan_tag_present(skb)) {
		h.tagged = true;
		h.tci = skb_vlan_tag_get(skb);
	}
	/* bytes from the destination MAC to the end of the payload */
	len = skb->len + ETH_HLEN + (h.tagged ? VLAN_HLEN : 0);
	spin_lock(&md->lock);
	md->frames++;
	list_for_each_entry(f, &md->flows, node) {
		if (f->type != IB_FLOW_ATTR_NORMAL ||
		    (f->flags & IB_FLOW_ATTR_FLAGS_EGRESS))
			continue;
		if (!mock_match_frame(f, skb, &h))
			continue;
		f->hits++;
		if (f->counters && f->counters->hw) {
			f->counters->packets++;
			f->counters->bytes += len;
		}
		/* Steered to the QP (a DONT_TRAP flow's frame too: mlx5 sends
		 * it to the QP and on to the next priority): into its receive
		 * queue, or, with no receive WQE posted, counted as
		 * out_of_buffer on the QP's q counter (mock_rx_take). */
		if (!f->drop)
			mock_rx_take(md, f->qp, skb);
		if (f->drop || !(f->flags & IB_FLOW_ATTR_FLAGS_DONT_TRAP)) {
			take = true;
			break;
		}
	}
	spin_unlock(&md->lock);
	if (take && steal) {
		kfree_skb(skb);
		return RX_HANDLER_CONSUMED;
	}
	return RX_HANDLER_PASS;
}

/* ---- MLX5_IB_OBJECT_UAR (main.c, mlx5_ib_alloc_uar / UAR_OBJ_ALLOC) ---- */

struct mock_uar_obj {
	struct mock_ucontext *mu;
	u32 idx;
};

static int mock_uar_obj_cleanup(struct ib_uobject *uobj,
				enum rdma_remove_reason why,
				struct uverbs_attr_bundle *attrs)
{
	struct mock_uar_obj *o = uobj->object;

	mutex_lock(&o->mu->lock);
	o->mu->dyn_used[o->idx] = false; /* the page stays until the context goes */
	mutex_unlock(&o->mu->lock);
	mock_rec(mdev, "uar_destroy");
	kfree(o);
	return 0;
}

static int UVERBS_HANDLER(MLX5_IB_METHOD_UAR_OBJ_ALLOC)(
	struct uverbs_attr_bundle *attrs)
{
	struct ib_uobject *uobj = uverbs_attr_get_uobject(
		attrs, MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE);
	struct ib_ucontext *uctx = ib_uverbs_get_ucontext(attrs);
	struct mock_ucontext *mu;
	struct mock_uar_obj *o;
	u32 type, idx, length = PAGE_SIZE;
	u64 offset;
	int ret;

	if (IS_ERR(uctx))
		return PTR_ERR(uctx);
	mu = to_mu(uctx);
	ret = uverbs_get_const(&type, attrs, MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE);
	if (ret)
		return ret;
	mock_rec(mdev, "uar_alloc type=%s",
		 type == MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF ? "BF" :
		 type == MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC ? "NC" : "?");
	if (type != MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF &&
	    type != MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC)
		return -EOPNOTSUPP;
	o = kzalloc(sizeof(*o), GFP_KERNEL);
	if (!o)
		return -ENOMEM;
	mutex_lock(&mu->lock);
	for (idx = MOCK_STATIC_PAGES; idx < MOCK_UAR_PAGES; idx++)
		if (!mu->dyn_used[idx])
			break;
	if (idx == MOCK_UAR_PAGES) {
		ret = -ENOSPC;
	} else {
		if (!mu->uar[idx])
			mu->uar[idx] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		ret = mu->uar[idx] ? 0 : -ENOMEM;
		if (!ret)
			mu->dyn_used[idx] = true;
	}
	mutex_unlock(&mu->lock);
	if (ret) {
		kfree(o);
		return ret;
	}
	o->mu = mu;
	o->idx = idx;
	uobj->object = o;
	uverbs_finalize_uobj_create(attrs, MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE);
	offset = (u64)((MOCK_DYN_CMD << 8) | idx) << PAGE_SHIFT;
	ret = uverbs_copy_to(attrs, MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET,
			     &offset, sizeof(offset));
	if (ret)
		return ret;
	ret = uverbs_copy_to(attrs, MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH,
			     &length, sizeof(length));
	if (ret)
		return ret;
	return uverbs_copy_to(attrs, MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, &idx,
			      sizeof(idx));
}

DECLARE_UVERBS_NAMED_METHOD(
	MLX5_IB_METHOD_UAR_OBJ_ALLOC,
	UVERBS_ATTR_IDR(MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE, MLX5_IB_OBJECT_UAR,
			UVERBS_ACCESS_NEW, UA_MANDATORY),
	UVERBS_ATTR_CONST_IN(MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE,
			     enum mlx5_ib_uapi_uar_alloc_type, UA_MANDATORY),
	UVERBS_ATTR_PTR_OUT(MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID,
			    UVERBS_ATTR_TYPE(u32), UA_MANDATORY),
	UVERBS_ATTR_PTR_OUT(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH,
			    UVERBS_ATTR_TYPE(u32), UA_MANDATORY),
	UVERBS_ATTR_PTR_OUT(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET,
			    UVERBS_ATTR_TYPE(u64), UA_MANDATORY));

DECLARE_UVERBS_NAMED_METHOD_DESTROY(
	MLX5_IB_METHOD_UAR_OBJ_DESTROY,
	UVERBS_ATTR_IDR(MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE, MLX5_IB_OBJECT_UAR,
			UVERBS_ACCESS_DESTROY, UA_MANDATORY));

DECLARE_UVERBS_NAMED_OBJECT(MLX5_IB_OBJECT_UAR,
			    UVERBS_TYPE_ALLOC_IDR(mock_uar_obj_cleanup),
			    &UVERBS_METHOD(MLX5_IB_METHOD_UAR_OBJ_ALLOC),
			    &UVERBS_METHOD(MLX5_IB_METHOD_UAR_OBJ_DESTROY));

static const struct uapi_definition mock_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE_NAMED(MLX5_IB_OBJECT_UAR),
	{},
};

/* ---- per-QP counters (rdma statistic qp) ----
 *
 * The core (counters.c rdma_counter_bind_qp_auto, rdma_counter_bind_qpn,
 * alloc_and_bind, counter_release; nldev.c RDMA_NLDEV_CMD_STAT_*) binds
 * QPs to rdma_counters; the driver gives each counter a hardware counter
 * set and an id (mlx5: counters.c mlx5_ib_counter_bind_qp, which allocates
 * a q counter on the first bind, and qp.c mlx5_ib_qp_set_counter, which
 * sets qp->counter). Here a counter's set is qcnt[id]; a QP bound to none
 * counts on qcnt[0], the port's set, which hw_counters shows (the core adds
 * the counters' values for rdma statistic show: nldev.c
 * stat_get_doit_default_counter, counters.c rdma_counter_get_hwstat_value).
 * One counter: out_of_buffer, the frames the QP's flows steered to it
 * (there is no receive queue, see mock_rx). */

static const struct rdma_stat_desc mock_qcnt_descs[] = {
	{ .name = "out_of_buffer" },
};

static struct rdma_hw_stats *mock_alloc_hw_port_stats(struct ib_device *ibdev, u32 port)
{
	return rdma_alloc_hw_stats_struct(mock_qcnt_descs, ARRAY_SIZE(mock_qcnt_descs),
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int mock_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
			     u32 port, int index)
{
	struct mock_dev *md = to_mdev(ibdev);

	if (port != 1)
		return -EINVAL;
	spin_lock_bh(&md->lock);
	stats->value[0] = md->qcnt[0];
	spin_unlock_bh(&md->lock);
	return ARRAY_SIZE(mock_qcnt_descs);
}

static struct rdma_hw_stats *mock_counter_alloc_stats(struct rdma_counter *counter)
{
	return rdma_alloc_hw_stats_struct(mock_qcnt_descs, ARRAY_SIZE(mock_qcnt_descs),
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int mock_counter_update_stats(struct rdma_counter *counter)
{
	struct mock_dev *md = to_mdev(counter->device);

	if (!counter->id || counter->id >= MOCK_QCOUNTERS)
		return -EINVAL;
	spin_lock_bh(&md->lock);
	counter->stats->value[0] = md->qcnt[counter->id];
	spin_unlock_bh(&md->lock);
	return 0;
}

/* mlx5: counters.c mlx5_ib_counter_bind_qp, qp.c mlx5_ib_qp_set_counter */
static int mock_counter_bind_qp(struct rdma_counter *counter, struct ib_qp *qp)
{
	struct mock_dev *md = to_mdev(qp->device);
	struct mock_qp *mqp = container_of(qp, struct mock_qp, ibqp);
	int id;

	if (!counter->id) {
		id = ida_alloc_range(&md->qcnt_ida, 1, MOCK_QCOUNTERS - 1, GFP_KERNEL);
		if (id < 0)
			return id;
		spin_lock_bh(&md->lock);
		md->qcnt[id] = 0;
		spin_unlock_bh(&md->lock);
		counter->id = id;
	}
	spin_lock_bh(&md->lock);
	mqp->cnt_id = counter->id;
	spin_unlock_bh(&md->lock);
	qp->counter = counter;
	mock_rec(md, "counter_bind_qp counter=%u qp=%s", counter->id, qpt_name(qp->qp_type));
	return 0;
}

/* mlx5: counters.c mlx5_ib_counter_unbind_qp */
static int mock_counter_unbind_qp(struct ib_qp *qp)
{
	struct mock_dev *md = to_mdev(qp->device);
	struct mock_qp *mqp = container_of(qp, struct mock_qp, ibqp);

	spin_lock_bh(&md->lock);
	mqp->cnt_id = 0;
	spin_unlock_bh(&md->lock);
	mock_rec(md, "counter_unbind_qp counter=%u qp=%s", qp->counter ? qp->counter->id : 0, qpt_name(qp->qp_type));
	qp->counter = NULL;
	return 0;
}

/* mlx5: counters.c mlx5_ib_counter_dealloc */
static int mock_counter_dealloc(struct rdma_counter *counter)
{
	struct mock_dev *md = to_mdev(counter->device);

	if (!counter->id || counter->id >= MOCK_QCOUNTERS)
		return 0;
	mock_rec(md, "counter_dealloc counter=%u", counter->id);
	ida_free(&md->qcnt_ida, counter->id);
	return 0;
}

/* ---- registration ---- */

static struct ib_device_ops mock_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_MLX5,	/* replaced by the parameter */
	.uverbs_abi_ver = 1,		/* MLX5_IB_UVERBS_ABI_VERSION */

	.query_device = mock_query_device,
	.query_port = mock_query_port,
	.get_port_immutable = mock_get_port_immutable,
	.get_link_layer = mock_get_link_layer,
	.query_gid = mock_query_gid,
	.query_pkey = mock_query_pkey,
	.alloc_ucontext = mock_alloc_ucontext,
	.dealloc_ucontext = mock_dealloc_ucontext,
	.mmap = mock_mmap,
	.alloc_pd = mock_alloc_pd,
	.dealloc_pd = mock_dealloc_pd,
	.create_cq = mock_create_cq,
	.destroy_cq = mock_destroy_cq,
	.poll_cq = mock_poll_cq,
	.req_notify_cq = mock_req_notify_cq,
	.create_ah = mock_create_ah,
	.create_user_ah = mock_create_ah,
	.destroy_ah = mock_destroy_ah,
	.create_qp = mock_create_qp,
	.modify_qp = mock_modify_qp,
	.query_qp = mock_query_qp,
	.destroy_qp = mock_destroy_qp,
	.post_send = mock_post_send,
	.post_recv = mock_post_recv,
	.get_dma_mr = mock_get_dma_mr,
	.reg_user_mr = mock_reg_user_mr,
	.dereg_mr = mock_dereg_mr,
	.create_counters = mock_create_counters,
	.destroy_counters = mock_destroy_counters,
	.read_counters = mock_read_counters,
	.create_flow = mock_create_flow,
	.destroy_flow = mock_destroy_flow,
	.alloc_hw_port_stats = mock_alloc_hw_port_stats,
	.get_hw_stats = mock_get_hw_stats,
	.counter_bind_qp = mock_counter_bind_qp,
	.counter_unbind_qp = mock_counter_unbind_qp,
	.counter_dealloc = mock_counter_dealloc,
	.counter_alloc_stats = mock_counter_alloc_stats,
	.counter_update_stats = mock_counter_update_stats,

	INIT_RDMA_OBJ_SIZE(ib_ucontext, mock_ucontext, ibuc),
	INIT_RDMA_OBJ_SIZE(ib_pd, mock_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_cq, mock_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_qp, mock_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_ah, mock_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_counters, mock_counters, ibc),
};

static int __init mock_init(void)
{
	struct net_device *ndev;
	int ret;

	ndev = dev_get_by_name(&init_net, netdev);
	if (!ndev) {
		pr_err("mockrdma: no netdev %s\n", netdev);
		return -ENODEV;
	}
	mdev = ib_alloc_device(mock_dev, ibdev);
	if (!mdev) {
		ret = -ENOMEM;
		goto put;
	}
	spin_lock_init(&mdev->lock);
	mutex_init(&mdev->log_lock);
	INIT_LIST_HEAD(&mdev->flows);
	ida_init(&mdev->qcnt_ida);
	mutex_init(&mdev->dp_lock);
	xa_init(&mdev->qps);
	xa_init(&mdev->cqs);
	xa_init_flags(&mdev->mrs, XA_FLAGS_ALLOC1);
	INIT_LIST_HEAD(&mdev->ctxs);
	init_waitqueue_head(&mdev->dp_wait);
	skb_queue_head_init(&mdev->rxq);
	mdev->log = kvzalloc(MOCK_LOG_MAX, GFP_KERNEL);
	mdev->msg = kvmalloc(MOCK_MSG_MAX, GFP_KERNEL);
	mdev->x = kzalloc(sizeof(*mdev->x), GFP_KERNEL);
	if (!mdev->log || !mdev->msg || !mdev->x) {
		ret = -ENOMEM;
		goto dealloc;
	}
	mdev->dp_thread = kthread_run(mock_dp_thread, mdev, "mockrdma-dp");
	if (IS_ERR(mdev->dp_thread)) {
		ret = PTR_ERR(mdev->dp_thread);
		mdev->dp_thread = NULL;
		goto dealloc;
	}
	sched_set_fifo_low(mdev->dp_thread);
	mdev->ndev = ndev;
	mdev->ibdev.node_type = RDMA_NODE_IB_CA;
	mdev->ibdev.phys_port_cnt = 1;
	mdev->ibdev.num_comp_vectors = 1;
	mock_guid(mdev, (u8 *)&mdev->ibdev.node_guid);
	strscpy(mdev->ibdev.node_desc, "mockrdma", sizeof(mdev->ibdev.node_desc));
	mock_ops.driver_id = driver_id;
	ib_set_device_ops(&mdev->ibdev, &mock_ops);
	if (driver_id == RDMA_DRIVER_MLX5)
		mdev->ibdev.driver_def = mock_uapi_defs;
	ret = ib_device_set_netdev(&mdev->ibdev, ndev, 1);
	if (ret)
		goto dealloc;
	ret = ib_register_device(&mdev->ibdev, "mock%d", NULL);
	if (ret) {
		pr_err("mockrdma: ib_register_device: %d\n", ret);
		goto dealloc;
	}
	rtnl_lock();
	ret = netdev_rx_handler_register(ndev, mock_rx, mdev);
	rtnl_unlock();
	if (ret) {
		pr_err("mockrdma: rx_handler on %s: %d\n", netdev, ret);
		goto unregister;
	}
	mdev->rx_registered = true;
	mdev->dbg_root = debugfs_create_dir("mockrdma", NULL);
	mdev->dbg = debugfs_create_dir(dev_name(&mdev->ibdev.dev), mdev->dbg_root);
	debugfs_create_file("requests", 0600, mdev->dbg, mdev, &mock_log_fops);
	debugfs_create_file("flows", 0400, mdev->dbg, mdev, &mock_flows_fops);
	debugfs_create_file("fence", 0400, mdev->dbg, mdev, &mock_fence_fops);
	debugfs_create_file("dp", 0400, mdev->dbg, mdev, &mock_dp_fops);
	pr_info("mockrdma: %s on %s (driver_id %d, dyn_uar %d, steal %d)\n",
		dev_name(&mdev->ibdev.dev), ndev->name, driver_id, dyn_uar, steal);
	return 0;
unregister:
	ib_unregister_device(&mdev->ibdev);
dealloc:
	if (mdev->dp_thread)
		kthread_stop(mdev->dp_thread);
	skb_queue_purge(&mdev->rxq);
	kfree(mdev->x);
	kvfree(mdev->msg);
	kvfree(mdev->log);
	ib_dealloc_device(&mdev->ibdev);
put:
	dev_put(ndev);
	return ret;
}

static void __exit mock_exit(void)
{
	struct net_device *ndev = mdev->ndev;

	debugfs_remove(mdev->dbg_root);
	rtnl_lock();
	netdev_rx_handler_unregister(ndev);
	rtnl_unlock();
	ib_unregister_device(&mdev->ibdev);
	kthread_stop(mdev->dp_thread);
	skb_queue_purge(&mdev->rxq);
	kfree(mdev->x);
	kvfree(mdev->msg);
	ida_destroy(&mdev->qcnt_ida);
	kvfree(mdev->log);
	ib_dealloc_device(&mdev->ibdev);
	dev_put(ndev);
}

module_init(mock_init);
module_exit(mock_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("purerdma test bed: an mlx5-model RDMA device with verbs counters and flow steering");
