// Command purerdma is purerdma's multi-call tool: one static, cgo-free
// binary that does the work of rdma-core's and iproute2's RDMA tools
// through the library, with their options, their texts and their exit
// statuses, so that scripts written for those keep working.
//
// Run a tool as a subcommand (`purerdma ibstat`) or, busybox-style, through
// a symlink named after it (`ln -s purerdma ibstat; ./ibstat`). `purerdma
// help` lists the tools; `purerdma help TOOL` prints one tool's help.
//
// # Tools
//
// The tools come in families, one package each under internal/:
//
//   - infiniband-diags (internal/diags): ibstat, ibstatus, perfquery,
//     smpquery, sminfo, saquery, ibnetdiscover, iblinkinfo, ibhosts,
//     ibswitches, ibnodes, ibaddr, ibping, ibqueryerrors, ibroute,
//     ibtracert, ibportstate, and umad (send or serve vendor-class MADs).
//     They find the fabric through umad, or through ibsim where
//     PURERDMA_IBSIM names a simulator's socket and node.
//   - libibverbs and librdmacm (internal/verbs): devices (ibv_devices),
//     devinfo (ibv_devinfo), rc_pingpong (ibv_rc_pingpong), asyncwatch
//     (ibv_asyncwatch), rping, ucmatose (cmatose), udaddy, and purerdma's
//     own counters (every counter set of a device) and flowcount (a
//     MAC's packets and bytes through a verbs counters object).
//   - iproute2's rdma (internal/rdmatool): link, resource and statistic,
//     through RDMA netlink.
//   - perftest (internal/perf): ib_send_bw, ib_send_lat, ib_write_bw,
//     ib_write_lat, ib_read_bw, ib_read_lat, ib_atomic_bw, ib_atomic_lat,
//     which interoperate with perftest 4.5's, over its TCP exchange and
//     with -R over the connection manager, and print its report.
//   - purerdma's own (this package): version, and exporter, which runs
//     rdma_exporter (cmd/rdma_exporter, the Prometheus exporter, a binary
//     of its own) in this process's place.
//
// internal/cli holds what the families share: the one getopt_long
// parser, C's number parsing, glibc's errno texts, the Tool type, the
// static tool table (Entry) and ExitError. Each family's Tools(env) binds
// its tools to an Env (the sysfs root, the uverbs options, the netlink
// client, the clock...), and Tool(env, name) the one a run starts: the
// running system in main, doubles in tests.
//
// # Options
//
// The tools that take options read them with cli.GetoptOperands, glibc's
// getopt_long rules as rdma-core's tools are built with: grouped short
// flags (-vl), an argument attached or in the next word (-drxe0, -d rxe0),
// --name=value or --name value, unique prefixes of long names, operands
// anywhere ("--" ends the options), and glibc's messages for what it
// refuses. That is devinfo, counters, flowcount, asyncwatch,
// rc_pingpong, rping, ucmatose, udaddy, ibstat, perfquery, smpquery,
// sminfo, saquery, ibnetdiscover, iblinkinfo, ibaddr, ibping,
// ibqueryerrors, ibroute, ibtracert, ibportstate and umad. The infiniband-diags tools among them (all but ibstat and umad)
// read infiniband-diags' common options (-C -P -t -y -e -v -d -G -L -D
// -s -K -z -h -V) from one table, ibdiag_common.c's, after each tool's
// own and less those the tool excludes, and print C's usage, generated
// from that table, and C's -V line. Options of ours that the C tools
// lack stay out of that usage: --retries (smpquery, sminfo, perfquery,
// ibaddr: the tries after the first, libibmad's 2 by default), and
// perfquery's --dgid (a GID destination, as a RoCE port needs) and
// --json. The others keep the grammar of what they imitate: ibstatus is a
// shell script's positional words, ibv_devices ignores its arguments (but
// --json and -h), link, resource and statistic take iproute2 rdma's
// keywords after -j, version takes none and exporter hands its own to
// rdma_exporter; ibhosts, ibswitches and ibnodes read their words as
// rdma-core's scripts do (usage on standard output, status 255).
//
// # Exit status
//
// A tool returns nil (status 0), a cli.ExitError carrying its status after
// it printed what the user needs, or another error, which purerdma prints
// as "purerdma: ERROR" on standard error with status 1. The statuses:
//
//   - A tool that imitates an rdma-core or iproute2 tool exits with that
//     tool's codes, and prints its messages: devices 0, or 1 when the
//     device list cannot be read; devinfo 255 for a bad option, no device
//     or an unknown -d, 1 for -i ≤ 0, and the per-device failures or'ed;
//     ibstat, perfquery, smpquery, sminfo, ibnetdiscover, iblinkinfo,
//     ibaddr, ibping, ibroute, ibtracert and ibportstate 255 on a failure
//     (libibmad's IBPANIC and IBEXIT, exit(-1)) and 2 on a bad option
//     (ibdiag_show_usage); saquery what
//     its main returns: a failed query's errno (5, EIO, for an SA status),
//     64 (ENONET) for a node name it does not find, 22 for an invalid LID
//     or GID, 255 when it cannot bind to the SA, 2 on a bad option;
//     ibqueryerrors
//     1 when a port has errors beyond its threshold, 255 when the
//     discovery fails or the port does not open; ibping 0 after
//     its count or a SIGINT or SIGTERM, its server 128 plus the signal's
//     number (C's dies of it); ibstatus 255 for -h and
//     a failure (the script's exit -1); ibhosts, ibswitches and ibnodes
//     ibnetdiscover's status, cat's 1 for a topology file that does not
//     read, and 255 for -h and a bad word (the scripts' usage); link, resource and statistic rdma's 1 on a
//     failure ("Wrong device name", "error: " and strerror for a kernel
//     errno) and 0 after an "Unknown ..." line and after link add's usage;
//     asyncwatch 1 for every failure and a bad option, and 0 on SIGINT or
//     SIGTERM; rc_pingpong 1 for every failure and a bad option; rping,
//     ucmatose and udaddy the low byte of what the C tool's main returns
//     (a negative errno shows as 256 minus it), 1 where that byte is 0;
//     the perftest tools perftest's 1 for a bad option, -h and -V and most
//     failures, 17 where its main returns it (a failed run of send_bw,
//     send_lat, read_bw, read_lat, atomic_lat).
//   - Every other tool (umad, counters, flowcount, version) exits 0 when it
//     did its work, 1 on a runtime failure (a device or port that does not
//     exist, an errno from the kernel, a MAD answered with a non-zero
//     status, a timeout), and 2 when the command line cannot be used
//     (unknown option or subcommand, bad value, missing argument), after
//     one line that says what was wrong and the usage.
//   - purerdma itself exits 2 for no tool or an unknown one, after the
//     list of tools; `purerdma help TOOL` prints the tool's help and exits
//     0 whatever the tool's own -h exits.
package main
