// Package sysfstest builds synthetic sysfs trees of many RDMA devices, for
// the discovery benchmarks and scaling tests of sysfs, umad and the tools.
package sysfstest

import (
	"fmt"
	"os"
	"path/filepath"
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
