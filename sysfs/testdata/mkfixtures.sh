#!/bin/sh
# mkfixtures.sh — rebuilds the hand-made sysfs fixture trees of package sysfs:
#
#   rxe-6.1/    transcribed from the Soft-RoCE VM capture
#               (shared/reference/soft-roce-vm/rxe-sysfs.txt, Linux 6.1.0-56)
#   mlx5-ib/    mlx5, InfiniBand link layer   } built from the documented
#   mlx5-eth/   mlx5, Ethernet (RoCE)         } formats (drivers/infiniband/core/sysfs.c and
#   hfi1/       hfi1-like (Omni-Path)         } the kernel sources named in
#   iwarp-old/  older-kernel iWARP RNIC       } each README)
#   ib-switch/  an InfiniBand switch (port 0) }
#   broken/     one CA per way a file can be malformed or unreadable
#
# Run it from anywhere: sh sysfs/testdata/mkfixtures.sh. It empties and
# rewrites those directories only, keeping each README.md (rxe-6.12/ is a
# capture made with capture.sh and is left alone). Every value file ends
# with a newline, as sysfs's show functions print one.
#
# Paths keep the kernel's layout: class/<class>/<name> is a relative symlink
# into devices/…, as in /sys. PCI addresses use '_' instead of ':' because Go
# module zips refuse ':' in file names.
set -eu
cd "$(dirname "$0")"

# w FILE VALUE: write VALUE and a newline to FILE, creating directories.
w() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" >"$1"; }
# ln_class ROOT CLASS NAME TARGET: class/CLASS/NAME -> ../../TARGET
ln_class() { mkdir -p "$1/class/$2"; ln -sfn "../../$4" "$1/class/$2/$3"; }
# clean DIR: empty DIR but keep its README.md.
clean() { mkdir -p "$1"; find "$1" -mindepth 1 ! -name README.md -delete; }
# zgid: an empty GID slot as sysfs shows it (%pI6 of zeros, uncompressed).
zgid=0000:0000:0000:0000:0000:0000:0000:0000

###########################################################################
# (a) rxe-6.1 — rdma_rxe on Linux 6.1.0-56-amd64, two devices on a veth pair.
###########################################################################
rxe() { # rxe ROOT NAME NETDEV GUID GID1 UVERBSMINOR UMADMINOR ISSMMINOR IDX COUNTERS...
	root=$1 name=$2 ndev=$3 guid=$4 gid1=$5 vmin=$6 umin=$7 imin=$8 idx=$9
	shift 9
	d=$root/devices/virtual/infiniband/$name
	w "$d/fw_ver" ""
	w "$d/node_desc" "rxe"
	w "$d/node_guid" "$guid"
	w "$d/node_type" "1: CA"
	w "$d/parent" "$ndev"
	w "$d/sys_image_guid" "$guid"
	w "$d/uevent" "NAME=$name"
	p=$d/ports/1
	w "$p/cap_mask" "0x00010000"
	w "$p/lid" "0x0"
	w "$p/lid_mask_count" "0"
	w "$p/link_layer" "Ethernet"
	w "$p/phys_state" "5: LinkUp"
	w "$p/rate" "10 Gb/sec (1X FDR10)"
	w "$p/sm_lid" "0x0"
	w "$p/sm_sl" "0"
	w "$p/state" "4: ACTIVE"
	w "$p/gids/0" "fe80:0000:0000:0000:$guid"
	w "$p/gids/1" "$gid1"
	w "$p/gids/2" "$zgid"
	w "$p/gids/3" "$zgid"
	for i in 0 1; do
		w "$p/gid_attrs/types/$i" "RoCE v2"
		w "$p/gid_attrs/ndevs/$i" "$ndev"
	done
	w "$p/pkeys/0" "0xffff"
	for kv in "$@"; do w "$p/hw_counters/${kv%%=*}" "${kv#*=}"; done
	ln_class "$root" infiniband "$name" "devices/virtual/infiniband/$name"
	v=$root/devices/virtual/infiniband_verbs/uverbs$idx
	w "$v/ibdev" "$name"
	w "$v/abi_version" "2"
	w "$v/dev" "231:$vmin"
	ln_class "$root" infiniband_verbs "uverbs$idx" "devices/virtual/infiniband_verbs/uverbs$idx"
	for k in umad issm; do
		m=$root/devices/virtual/infiniband_mad/$k$idx
		w "$m/ibdev" "$name"
		w "$m/port" "1"
		if [ $k = umad ]; then w "$m/dev" "231:$umin"; else w "$m/dev" "231:$imin"; fi
		ln_class "$root" infiniband_mad "$k$idx" "devices/virtual/infiniband_mad/$k$idx"
	done
}
clean rxe-6.1
R=rxe-6.1
# hw_counters: the values after the capture's pingpong runs ("after the
# pingpong tests" section; counters it does not list were 0).
rxe $R rxe0 veth0 acad:e8ff:fe37:5f42 0000:0000:0000:0000:0000:ffff:0a4d:0001 192 0 64 0 \
	ack_deferred=1 completer_retry_err=3 duplicate_request=10 lifespan=12 link_downed=0 \
	out_of_seq_request=0 rcvd_pkts=25019 rcvd_rnr_err=0 rcvd_seq_err=0 rdma_recvs=5000 \
	rdma_sends=5000 retry_exceeded_err=0 retry_rnr_exceeded_err=0 send_err=0 send_rnr_err=0 \
	sent_pkts=25019
rxe $R rxe1 veth1 acdf:59ff:fef0:895d 0000:0000:0000:0000:0000:ffff:0a4d:0002 193 1 65 1 \
	ack_deferred=1 completer_retry_err=2 duplicate_request=5 lifespan=12 link_downed=0 \
	out_of_seq_request=0 rcvd_pkts=15011 rcvd_rnr_err=0 rcvd_seq_err=0 rdma_recvs=3000 \
	rdma_sends=3000 retry_exceeded_err=0 retry_rnr_exceeded_err=0 send_err=0 send_rnr_err=0 \
	sent_pkts=15011
w $R/class/infiniband_verbs/abi_version 6
w $R/class/infiniband_mad/abi_version 5

###########################################################################
# Shared pieces of the mlx5 trees (drivers/infiniband/hw/mlx5).
###########################################################################
# PMA counters with extended (64-bit) data/packet counters and the four
# unicast/multicast ones (sysfs.c pma_group_ext + pma_group_noietf layout).
pma() { # pma DIR xmit_data rcv_data xmit_pkts rcv_pkts
	c=$1
	for n in symbol_error link_error_recovery port_rcv_errors port_rcv_remote_physical_errors \
		port_rcv_switch_relay_errors port_xmit_discards port_xmit_constraint_errors \
		port_rcv_constraint_errors local_link_integrity_errors excessive_buffer_overrun_errors \
		VL15_dropped port_xmit_wait; do
		w "$c/$n" 0
	done
	w "$c/link_downed" 1
	w "$c/port_xmit_data" "$2"
	w "$c/port_rcv_data" "$3"
	w "$c/port_xmit_packets" "$4"
	w "$c/port_rcv_packets" "$5"
	w "$c/unicast_xmit_packets" "$4"
	w "$c/unicast_rcv_packets" "$5"
	w "$c/multicast_xmit_packets" 0
	w "$c/multicast_rcv_packets" 7
}
# mlx5 Q counters (mlx5/counters.c basic_q_cnts, out_of_seq_q_cnts,
# retrans_q_cnts, extended_err_cnts, roce_accl_cnts subset).
mlx5_hw() { # mlx5_hw DIR [roce]
	h=$1
	for n in rx_write_requests rx_read_requests rx_atomic_requests rx_dct_connect out_of_buffer \
		out_of_sequence duplicate_request rnr_nak_retry_err packet_seq_err implied_nak_seq_err \
		local_ack_timeout_err resp_local_length_error resp_cqe_error req_cqe_error \
		req_remote_invalid_request req_remote_access_errors resp_remote_access_errors \
		resp_cqe_flush_error req_cqe_flush_error; do
		w "$h/$n" 0
	done
	w "$h/rx_write_requests" 4242
	w "$h/rx_read_requests" 17
	w "$h/out_of_buffer" 3
	if [ "${2-}" = roce ]; then
		# mlx5/counters.c cong_cnts (RoCE only)
		for n in rp_cnp_ignored rp_cnp_handled np_ecn_marked_roce_packets np_cnp_sent \
			roce_adp_retrans roce_adp_retrans_to roce_slow_restart roce_slow_restart_cnps \
			roce_slow_restart_trans; do
			w "$h/$n" 0
		done
		w "$h/np_cnp_sent" 18446744073709551615
	fi
	w "$h/lifespan" 10
}
mlx5_dev() { # mlx5_dev ROOT PCIDIR GUID FW HCATYPE BOARD DESC
	d=$1/$2/infiniband/mlx5_0
	w "$d/node_type" "1: CA"
	w "$d/node_guid" "$3"
	w "$d/sys_image_guid" "$3"
	w "$d/fw_ver" "$4"
	w "$d/hca_type" "$5"
	w "$d/hw_rev" "0"
	w "$d/board_id" "$6"
	w "$d/node_desc" "$7"
	w "$d/fw_pages" "81920"
	w "$d/reg_pages" "0"
	ln_class "$1" infiniband mlx5_0 "$2/infiniband/mlx5_0"
	v=$1/$2/infiniband_verbs/uverbs0
	w "$v/ibdev" mlx5_0
	w "$v/abi_version" 1
	w "$v/dev" "231:192"
	ln_class "$1" infiniband_verbs uverbs0 "$2/infiniband_verbs/uverbs0"
	u=$1/$2/infiniband_mad/umad0
	w "$u/ibdev" mlx5_0
	w "$u/port" 1
	w "$u/dev" "231:0"
	ln_class "$1" infiniband_mad umad0 "$2/infiniband_mad/umad0"
	w "$1/class/infiniband_verbs/abi_version" 6
	w "$1/class/infiniband_mad/abi_version" 5
}

###########################################################################
# (b) mlx5-ib — ConnectX-6 (PCI id 0x101b → "MT4123"), one InfiniBand port.
###########################################################################
clean mlx5-ib
R=mlx5-ib
PCI=devices/pci0000_00/0000_00_02.0/0000_3b_00.0
mlx5_dev $R $PCI 0c42:a103:0016:054e 20.31.1014 MT4123 MT_0000000223 "node01 mlx5_0"
p=$R/$PCI/infiniband/mlx5_0/ports/1
w $p/state "4: ACTIVE"
w $p/phys_state "5: LinkUp"
w $p/rate "200 Gb/sec (4X HDR)"
w $p/lid "0x1a"
w $p/lid_mask_count 0
w $p/sm_lid "0x1"
w $p/sm_sl 0
w $p/cap_mask "0xa651e848"
w $p/link_layer InfiniBand
w $p/gids/0 "fe80:0000:0000:0000:0c42:a103:0016:054e"
i=1
while [ $i -lt 8 ]; do w $p/gids/$i $zgid; i=$((i + 1)); done
w $p/gid_attrs/types/0 "IB/RoCE v1"
w $p/pkeys/0 "0xffff"
w $p/pkeys/1 "0x8001"
i=2
while [ $i -lt 128 ]; do w $p/pkeys/$i "0x0000"; i=$((i + 1)); done
pma $p/counters 1234567890123 9876543210 4000000000 3999999999
mlx5_hw $p/hw_counters
i=$R/$PCI/infiniband_mad/issm0
w $i/ibdev mlx5_0
w $i/port 1
w $i/dev "231:64"
ln_class $R infiniband_mad issm0 "$PCI/infiniband_mad/issm0"

###########################################################################
# (c) mlx5-eth — ConnectX-6 Dx (0x101d → "MT4125"), one RoCE port, as on
# Linux 6.12 (no issm for a port without an SMI).
###########################################################################
clean mlx5-eth
R=mlx5-eth
PCI=devices/pci0000_00/0000_00_03.0/0000_5e_00.0
mlx5_dev $R $PCI b859:9f03:00d4:2a10 22.36.1010 MT4125 MT_0000000359 "node02 mlx5_0"
p=$R/$PCI/infiniband/mlx5_0/ports/1
w $p/state "4: ACTIVE"
w $p/phys_state "5: LinkUp"
w $p/rate "100 Gb/sec (4X EDR)"
w $p/lid "0x0"
w $p/lid_mask_count 0
w $p/sm_lid "0x0"
w $p/sm_sl 0
w $p/cap_mask "0x04010000"
w $p/link_layer Ethernet
w $p/gids/0 "fe80:0000:0000:0000:ba59:9fff:fed4:2a10"
w $p/gids/1 "fe80:0000:0000:0000:ba59:9fff:fed4:2a10"
w $p/gids/2 "0000:0000:0000:0000:0000:ffff:c0a8:0a02"
w $p/gids/3 "0000:0000:0000:0000:0000:ffff:c0a8:0a02"
i=4
while [ $i -lt 16 ]; do w $p/gids/$i $zgid; i=$((i + 1)); done
for i in 0 2; do w $p/gid_attrs/types/$i "IB/RoCE v1"; done
for i in 1 3; do w $p/gid_attrs/types/$i "RoCE v2"; done
for i in 0 1 2 3; do w $p/gid_attrs/ndevs/$i "enp94s0f0np0"; done
w $p/pkeys/0 "0xffff"
pma $p/counters 250000000000 125000000000 900000000 800000000
mlx5_hw $p/hw_counters roce

###########################################################################
# (d) hfi1 — Intel Omni-Path HFI (drivers/infiniband/hw/hfi1), one port.
###########################################################################
clean hfi1
R=hfi1
PCI=devices/pci0000_80/0000_80_03.0/0000_81_00.0
d=$R/$PCI/infiniband/hfi1_0
w $d/node_type "1: CA"
w $d/node_guid "0011:7501:0179:e2d5"
w $d/sys_image_guid "0011:7501:0179:e2d5"
w $d/fw_ver "1.27.0"
w $d/hw_rev "11"
w $d/board_id "Intel Omni-Path Host Fabric Interface Adapter 100 Series"
w $d/boardversion "ChipABI 3.0, ChipRev 7.17, SW Compat 3"
w $d/nctxts 40
w $d/nfreectxts 36
w $d/serial "0x00e2d5aa"
w $d/node_desc "node03 hfi1_0"
# device-wide hw_counters (hfi1_alloc_hw_device_stats): chip dev_cntrs and
# driver_cntr_names
for n in RxTIDInvalid RxTidFLGMs CceErrInt CceSdmaInt CceRcvAvInt DRIVER_KernIntr \
	DRIVER_ErrorIntr DRIVER_Tx_Errs DRIVER_Rcv_Errs DRIVER_HW_Errs DRIVER_NoPIOBufs \
	DRIVER_CtxtsOpen DRIVER_RcvLen_Errs DRIVER_EgrBufFull DRIVER_EgrHdrFull; do
	w $d/hw_counters/$n 0
done
w $d/hw_counters/DRIVER_KernIntr 987654
w $d/hw_counters/DRIVER_CtxtsOpen 4
w $d/hw_counters/lifespan 10
p=$d/ports/1
w $p/state "4: ACTIVE"
w $p/phys_state "5: LinkUp"
w $p/rate "100 Gb/sec (4X EDR)"
w $p/lid "0x1"
w $p/lid_mask_count 0
w $p/sm_lid "0x1"
w $p/sm_sl 0
w $p/cap_mask "0x00490020"
w $p/link_layer InfiniBand
w $p/gids/0 "fe80:0000:0000:0000:0011:7501:0179:e2d5"
for i in 1 2 3; do w $p/gids/$i $zgid; done
w $p/gid_attrs/types/0 "IB/RoCE v1"
w $p/pkeys/0 "0xffff"
w $p/pkeys/1 "0x7fff"
i=2
while [ $i -lt 16 ]; do w $p/pkeys/$i "0x0000"; i=$((i + 1)); done
pma $p/counters 77777777 66666666 5555 4444
# per-port hw_counters (hfi_alloc_hw_port_stats): chip port_cntrs
for n in TxUnVLErr TxInvalLen TxMMLenErr TxUnderrun TxFlowStall TxDropped TxHdrErr TxPkt \
	TxWords TxWait TxFlitVL0; do
	w $p/hw_counters/$n 0
done
w $p/hw_counters/TxPkt 123456
w $p/hw_counters/TxWords 9876543
w $p/hw_counters/lifespan 10
# hfi1's port groups besides the core's (hfi1/sysfs.c): one file of each
w $p/sl2sc/0 0
w $p/vl2mtu/0 10240
ln_class $R infiniband hfi1_0 "$PCI/infiniband/hfi1_0"
v=$R/$PCI/infiniband_verbs/uverbs0
w $v/ibdev hfi1_0
# no abi_version and no dev: exercises the optional reads
ln_class $R infiniband_verbs uverbs0 "$PCI/infiniband_verbs/uverbs0"
for k in umad issm; do
	m=$R/$PCI/infiniband_mad/${k}0
	w $m/ibdev hfi1_0
	w $m/port 1
	ln_class $R infiniband_mad ${k}0 "$PCI/infiniband_mad/${k}0"
done
w $R/class/infiniband_verbs/abi_version 6
w $R/class/infiniband_mad/abi_version 5

###########################################################################
# (e) iwarp-old — a Chelsio T5 iWARP RNIC (iw_cxgb4) on an older kernel
# (before 2018), whose counters/ files said "N/A (no PMA)".
###########################################################################
clean iwarp-old
R=iwarp-old
PCI=devices/pci0000_00/0000_00_01.0/0000_02_00.4
d=$R/$PCI/infiniband/cxgb4_0
w $d/node_type "4: RNIC"
w $d/node_guid "0007:43a1:b2c0:0000"
w $d/sys_image_guid "0007:43a1:b2c0:0000"
w $d/fw_ver "1.16.63.0"
w $d/hw_rev "0"
w $d/hca_type "cxgb4"
w $d/board_id "1425.5401"
w $d/node_desc "cxgb4_0"
for n in 1 2; do
	p=$d/ports/$n
	w $p/lid "0x0"
	w $p/lid_mask_count 0
	w $p/sm_lid "0x0"
	w $p/sm_sl 0
	w $p/cap_mask "0x00010000"
	w $p/link_layer Ethernet
	w $p/gids/0 "0007:43a1:b2c0:000$((n - 1)):0000:0000:0000:0000"
	for c in symbol_error link_error_recovery link_downed port_rcv_errors port_xmit_discards \
		port_xmit_data port_rcv_data port_xmit_packets port_rcv_packets; do
		w $p/counters/$c "N/A (no PMA)"
	done
done
w $d/ports/1/state "4: ACTIVE"
w $d/ports/1/phys_state "5: LinkUp"
w $d/ports/1/rate "20 Gb/sec (4X DDR)"
w $d/ports/2/state "1: DOWN"
w $d/ports/2/phys_state "3: Disabled"
# ports/2/rate: the kernel answers EINVAL for this down port (invalid
# width); a fixture cannot, so the file is left out — read the same way.
ln_class $R infiniband cxgb4_0 "$PCI/infiniband/cxgb4_0"
v=$R/$PCI/infiniband_verbs/uverbs0
w $v/ibdev cxgb4_0
w $v/abi_version 3
ln_class $R infiniband_verbs uverbs0 "$PCI/infiniband_verbs/uverbs0"
w $R/class/infiniband_verbs/abi_version 6
# no class/infiniband_mad: iWARP devices have no MAD interface

###########################################################################
# (g) ib-switch — an InfiniBand switch (node_type 2) as the core lays it
# out: a switch has only its management port 0 (include/rdma/ib_verbs.h
# rdma_start_port and rdma_end_port are 0 when the device is a switch), so
# ports/0 is its only port directory, and its umad and issm nodes say port
# 0 (Documentation/infiniband/user_mad.rst: "a switch will have one device
# of each type (for switch port 0)"). Names and values are invented.
###########################################################################
clean ib-switch
R=ib-switch
PCI=devices/pci0000_00/0000_00_01.0/0000_01_00.0
d=$R/$PCI/infiniband/switch0
w $d/node_type "2: switch"
w $d/node_guid "0c42:a103:00aa:bb00"
w $d/sys_image_guid "0c42:a103:00aa:bb00"
w $d/fw_ver "27.2010.1202"
w $d/hca_type "MT54000"
w $d/hw_rev "0"
w $d/board_id "MT_0000000063"
w $d/node_desc "leaf01 switch0"
p=$d/ports/0
w $p/state "4: ACTIVE"
w $p/phys_state "5: LinkUp"
w $p/rate "100 Gb/sec (4X EDR)"
w $p/lid "0x2"
w $p/lid_mask_count 0
w $p/sm_lid "0x1"
w $p/sm_sl 0
w $p/cap_mask "0x0250084a"
w $p/link_layer InfiniBand
w $p/gids/0 "fe80:0000:0000:0000:0c42:a103:00aa:bb00"
for i in 1 2 3; do w $p/gids/$i $zgid; done
w $p/gid_attrs/types/0 "IB/RoCE v1"
w $p/pkeys/0 "0xffff"
ln_class $R infiniband switch0 "$PCI/infiniband/switch0"
v=$R/$PCI/infiniband_verbs/uverbs0
w $v/ibdev switch0
w $v/abi_version 1
w $v/dev "231:192"
ln_class $R infiniband_verbs uverbs0 "$PCI/infiniband_verbs/uverbs0"
for k in umad issm; do
	m=$R/$PCI/infiniband_mad/${k}0
	w $m/ibdev switch0
	w $m/port 0
	if [ $k = umad ]; then w $m/dev "231:0"; else w $m/dev "231:64"; fi
	ln_class $R infiniband_mad ${k}0 "$PCI/infiniband_mad/${k}0"
done
w $R/class/infiniband_verbs/abi_version 6
w $R/class/infiniband_mad/abi_version 5

###########################################################################
# (f) broken — one CA per malformed or unreadable file. Each starts as a
# valid single-port CA and then breaks one thing.
###########################################################################
clean broken
R=broken
good() { # good NAME
	d=$R/class/infiniband/$1
	w $d/node_type "1: CA"
	w $d/node_guid "0000:0000:0000:0001"
	w $d/sys_image_guid "0000:0000:0000:0001"
	w $d/fw_ver ""
	p=$d/ports/1
	w $p/state "4: ACTIVE"
	w $p/phys_state "5: LinkUp"
	w $p/rate "10 Gb/sec (1X FDR10)"
	w $p/lid "0x0"
	w $p/gids/0 "fe80:0000:0000:0000:0000:0000:0000:0001"
	w $p/hw_counters/good 1
	w $p/counters/good 1
}
for n in badguid badtype badstate badphys badrate badlid badlmc badpkey badportname \
	port0ca nodescdir typeloop badgid badgidtype badhwcounter badcounter noports nostate; do
	good $n
done
w $R/class/infiniband/badguid/node_guid "0c42:a103:0016"
w $R/class/infiniband/badtype/node_type "CA"
w $R/class/infiniband/badstate/ports/1/state "ACTIVE"
w $R/class/infiniband/badphys/ports/1/phys_state "5:LinkUp"
w $R/class/infiniband/badrate/ports/1/rate "fast"
w $R/class/infiniband/badlid/ports/1/lid "0xfffffffff"
w $R/class/infiniband/badlmc/ports/1/lid_mask_count "256"
w $R/class/infiniband/badpkey/ports/1/pkeys/0 "0x1ffff"
mkdir -p $R/class/infiniband/badportname/ports/x
w $R/class/infiniband/badportname/ports/x/state "4: ACTIVE"
# port 0 on a CA (node_type 1): only a switch has one
mkdir -p $R/class/infiniband/port0ca/ports/0
cp -R $R/class/infiniband/port0ca/ports/1/. $R/class/infiniband/port0ca/ports/0/
# a directory where a file is expected: read fails with EISDIR (root too)
mkdir -p $R/class/infiniband/nodescdir/node_desc/sub
w $R/class/infiniband/nodescdir/node_desc/sub/x x
# a symlink to itself: open fails with ELOOP (root too)
rm -f $R/class/infiniband/typeloop/node_type
ln -s node_type $R/class/infiniband/typeloop/node_type
w $R/class/infiniband/badgid/ports/1/gids/0 "fe80::1"
w $R/class/infiniband/badgidtype/ports/1/gid_attrs/types/0 "RoCE v2"
mkdir -p $R/class/infiniband/badgidtype/ports/1/gid_attrs/ndevs/0
w $R/class/infiniband/badgidtype/ports/1/gid_attrs/ndevs/0/x x
w $R/class/infiniband/badhwcounter/ports/1/hw_counters/bad "12abc"
w $R/class/infiniband/badcounter/ports/1/counters/bad "-1"
rm -rf $R/class/infiniband/noports/ports
rm -f $R/class/infiniband/nostate/ports/1/state
