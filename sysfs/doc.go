// Package sysfs discovers RDMA devices, their ports and their character
// devices from sysfs (RDMA netlink, the second source, is package
// rdmanl). It is the Go counterpart of libibumad's sysfs.c and of the discovery half of its API
// (umad_get_cas_names, umad_get_ca, umad_get_port, the umadN lookup of
// umad_open_port), and what ibstat, ibstatus and "rdma dev show" print. Its
// shape follows prometheus/procfs's sysfs/class_infiniband.go: readers take
// a root directory and are tested on fixture trees, and an optional value is
// a pointer, so that absent is never read as zero.
//
// # Files
//
// Under the root (default /sys; see [New] and [NewFS]):
//
//	class/infiniband/<ca>/                  FS.CANames, FS.CAs, FS.CA, FS.ReadCAs
//	    node_type node_guid sys_image_guid  required
//	    fw_ver hca_type hw_rev board_id     optional (driver-dependent)
//	    node_desc parent                    optional
//	    hw_counters/                        device-wide counters, few drivers (CA.HwCounters)
//	    ports/<n>/                          FS.Port, CA.Ports
//	        state phys_state                required: "4: ACTIVE", "5: LinkUp" (also Port.OpenStatus)
//	        rate lid lid_mask_count sm_lid sm_sl cap_mask link_layer
//	        pkeys/<i>                       Port.PKeys
//	        gids/<i>                        Port.GID, Port.GIDs
//	        gid_attrs/types/<i> gid_attrs/ndevs/<i>
//	        counters/                       PMA counters (Port.Counters, Port.OpenCounters)
//	        hw_counters/                    driver counters (Port.HwCounters, Port.OpenHwCounters)
//	class/infiniband/                       its entries: FS.WatchCAs
//	class/infiniband_verbs/abi_version      FS.VerbsABIVersion
//	class/infiniband_verbs/uverbs<N>/{ibdev,abi_version,dev}    FS.CharDevs, CA.Verbs
//	class/infiniband_mad/abi_version        FS.MadABIVersion
//	class/infiniband_mad/{umad,issm}<N>/{ibdev,port,dev}        FS.CharDevs, Port.Umad, Port.ISSM
//
// The formats are the kernel's (drivers/infiniband/core/sysfs.c,
// uverbs_main.c, user_mad.c); the fixtures' READMEs (testdata/) list
// them file by file. The quirks are handled in one place each:
//
//   - an empty GID slot reads as all zeros, and its gid_attrs files fail
//     with EINVAL: [Port.GIDs] leaves such slots out and [GIDEntry] leaves
//     the attributes nil;
//   - gid_attrs/types says "IB/RoCE v1" for an InfiniBand GID and for a
//     RoCE v1 GID: [GIDEntry].Type tells them apart by the port's link
//     layer, as libibverbs does;
//   - a rate the kernel cannot compute fails with EINVAL: [Port.Rate] is
//     nil;
//   - counters/ exists only for drivers with a PMA (not rxe); older kernels
//     wrote "N/A (no PMA)" into it instead: [Port.Counters];
//   - port_xmit_data and port_rcv_data count 4-octet words: [DataOctets];
//   - hw_counters/lifespan is a setting, not a counter:
//     [Port.HwCountersLifespan].
//
// # libibumad semantics
//
// libibumad reads every number with strtoul(s, NULL, 0), so "4: ACTIVE" is
// 4 and "2.5 Gb/sec (1X SDR)" is a rate of 2. The typed fields here parse
// the kernel's formats exactly and fail on anything else. libibumad's
// values follow from them: its integer rate is [Rate].Mbps/1000, and its
// link layer "IB" is a port without link_layer (LinkLayerName nil).
//
// # Netlink
//
// RDMA netlink, the second source (the device list, port statistics read
// fresh from the driver, GET_CHARDEV), is package
// github.com/purerdma/rdma/rdmanl.
//
// # Errors
//
// Errors are [*Error] values: the operation, the device ("mlx5_0", or
// "mlx5_0/1" for a port) and the cause. [errors.Is] matches them against
// os.ErrNotExist (no such device, port or file), os.ErrPermission (a file
// the caller may not read), [ErrNotSupported] (a device without counters/
// or hw_counters/; no RDMA netlink) and the errno itself. A file whose
// contents are not in the kernel's format gives a [*ParseError] naming the
// file, what it held and what was expected.
//
// # A tree that is not the kernel's
//
// A root given to [New] other than /sys is never left: its symbolic links
// are resolved inside it, as openat2(2) resolves with RESOLVE_IN_ROOT (an
// absolute target starts again at the root, ".." stays at the root), so a
// fixture whose rate is a link to /etc/passwd reads the tree's etc/passwd,
// not the host's. The running system's /sys is read as the kernel resolves
// it (its links point inside it).
//
// Every attribute is read bounded: a file that is not a regular file (a
// FIFO, a device node, a directory) is an error naming it, found before
// the file is opened, and a file of more than a page (4096 bytes) is an
// error matching syscall.EFBIG; nothing blocks and nothing is read past
// the page. Discovery isolates faults: a class/infiniband_mad or
// class/infiniband_verbs entry that cannot be read is an error of that
// entry ([FS.CharDevs]), and a device that cannot be read is an error of
// that device ([FS.CAs] returns the others).
package sysfs
