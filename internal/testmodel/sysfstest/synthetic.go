// Package sysfstest builds synthetic sysfs trees of many RDMA devices, for
// the discovery benchmarks and scaling tests of sysfs, umad and the tools,
// and writes the small hand-made trees of unit tests.
package sysfstest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Synthetic writes under root a sysfs tree of n mlx5-like InfiniBand
// devices mlx5_0 … mlx5_(n-1) with ports ports each: the files of
// class/infiniband/DEV (node type, GUIDs, firmware, ports with state, rate,
// LIDs, capability mask, link layer, GID 0, P_Key 0), one umad node per port and
// one uverbs node per device, as Linux lays them out.
func Synthetic(root string, n, ports int) error {
	files := map[string]string{
		"class/infiniband_mad/abi_version":   "5\n",
		"class/infiniband_verbs/abi_version": "6\n",
	}
	umad := 0
	for i := 0; i < n; i++ {
		dev := fmt.Sprintf("mlx5_%d", i)
		d := "class/infiniband/" + dev + "/"
		guid := fmt.Sprintf("0002:c903:%04x:%04x", i>>16, i&0xffff)
		files[d+"node_type"] = "1: CA\n"
		files[d+"node_guid"] = guid + "\n"
		files[d+"sys_image_guid"] = guid + "\n"
		files[d+"fw_ver"] = "16.35.2000\n"
		files[d+"hca_type"] = "MT4119\n"
		files[d+"hw_rev"] = "0x0\n"
		files[d+"board_id"] = "MT_0000000008\n"
		files[d+"node_desc"] = fmt.Sprintf("host %s\n", dev)
		for p := 1; p <= ports; p++ {
			pd := fmt.Sprintf("%sports/%d/", d, p)
			files[pd+"state"] = "4: ACTIVE\n"
			files[pd+"phys_state"] = "5: LinkUp\n"
			files[pd+"rate"] = "100 Gb/sec (4X EDR)\n"
			files[pd+"lid"] = fmt.Sprintf("0x%x\n", 1+umad)
			files[pd+"sm_lid"] = "0x1\n"
			files[pd+"lid_mask_count"] = "0\n"
			files[pd+"sm_sl"] = "0\n"
			files[pd+"cap_mask"] = "0x2651e84a\n"
			files[pd+"link_layer"] = "InfiniBand\n"
			files[pd+"gids/0"] = "fe80:0000:0000:0000:" + guid + "\n"
			files[pd+"pkeys/0"] = "0xffff\n"
			u := fmt.Sprintf("class/infiniband_mad/umad%d/", umad)
			files[u+"ibdev"] = dev + "\n"
			files[u+"port"] = fmt.Sprintf("%d\n", p)
			files[u+"dev"] = fmt.Sprintf("231:%d\n", umad)
			umad++
		}
		v := fmt.Sprintf("class/infiniband_verbs/uverbs%d/", i)
		files[v+"ibdev"] = dev + "\n"
		files[v+"abi_version"] = "1\n"
		files[v+"dev"] = fmt.Sprintf("231:%d\n", 192+i)
	}
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// pmaFiles are the counters/ files of an mlx5 InfiniBand port.
var pmaFiles = []string{
	"VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
	"local_link_integrity_errors", "multicast_rcv_packets", "multicast_xmit_packets",
	"port_rcv_constraint_errors", "port_rcv_data", "port_rcv_errors", "port_rcv_packets",
	"port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
	"port_xmit_constraint_errors", "port_xmit_data", "port_xmit_discards", "port_xmit_packets",
	"port_xmit_wait", "symbol_error", "unicast_rcv_packets", "unicast_xmit_packets",
}

// hwFiles are the hw_counters/ files of an mlx5 InfiniBand port (lifespan
// included).
var hwFiles = []string{
	"duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err", "out_of_buffer",
	"out_of_sequence", "packet_seq_err", "req_cqe_error", "req_cqe_flush_error",
	"req_remote_access_errors", "req_remote_invalid_request", "resp_cqe_error",
	"resp_cqe_flush_error", "resp_local_length_error", "resp_remote_access_errors",
	"rnr_nak_retry_err", "rx_atomic_requests", "rx_dct_connect", "rx_read_requests",
	"rx_write_requests",
}

// SyntheticCounters adds to a tree written by [Synthetic] (same n and
// ports) every port's counters/ (the 21 PMA counters of an mlx5 port) and
// hw_counters/ (its 19 counters and lifespan), with distinct values.
func SyntheticCounters(root string, n, ports int) error {
	for i := 0; i < n; i++ {
		for p := 1; p <= ports; p++ {
			pd := filepath.Join(root, fmt.Sprintf("class/infiniband/mlx5_%d/ports/%d", i, p))
			for _, d := range []string{"counters", "hw_counters"} {
				if err := os.MkdirAll(filepath.Join(pd, d), 0o755); err != nil {
					return err
				}
			}
			for j, f := range pmaFiles {
				if err := os.WriteFile(filepath.Join(pd, "counters", f), []byte(fmt.Sprintf("%d\n", 1000*i+100*p+j)), 0o644); err != nil {
					return err
				}
			}
			for j, f := range hwFiles {
				if err := os.WriteFile(filepath.Join(pd, "hw_counters", f), []byte(fmt.Sprintf("%d\n", 7*i+3*p+j)), 0o644); err != nil {
					return err
				}
			}
			if err := os.WriteFile(filepath.Join(pd, "hw_counters", "lifespan"), []byte("10\n"), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// FileWriter makes dir (and its parents) and returns a function that
// writes one file in it, failing t when that cannot be done: the way a
// test lays out a port's counters/ by hand, and changes a value later.
func FileWriter(t testing.TB, dir string) func(name, content string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
