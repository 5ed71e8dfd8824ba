package diags

// ibstat and ibstatus on an ibsim fabric (PURERDMA_IBSIM): the C tools
// under libumad2sim see, instead of the host's /sys, the tree
// libumad2sim writes for its one device, ibsim0, from what ibsim says
// about the node the client is attached at (umad2sim/umad2sim.c,
// dev_sysfs_create). Ours write the same tree, file for file and byte for
// byte, into a temporary directory and read it as they read /sys.

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"github.com/purerdma/rdma/cmd/internal/umadenv"
	"github.com/purerdma/rdma/umad"
)

// simView returns env itself, or on an ibsim fabric a copy whose sysfs is
// the tree libumad2sim shows for the port the fabric gives the tool, and
// a function that removes that tree.
func (env *Env) simView() (*Env, func(), error) {
	if env.IBSim == "" {
		return env, func() {}, nil
	}
	p, err := env.openPort(env.host(), "", 0)
	if err != nil {
		return nil, nil, err
	}
	n, err := p.SimNode()
	p.Close()
	if err != nil {
		return nil, nil, err
	}
	root, err := os.MkdirTemp("", "purerdma-ibsim-sysfs-")
	if err != nil {
		return nil, nil, err
	}
	done := func() { os.RemoveAll(root) }
	if err := writeSimSysfs(root, &n); err != nil {
		done()
		return nil, nil, err
	}
	v := *env
	v.SysfsRoot, v.sysfsShown, v.IBSim = root, "/sys", ""
	return &v, done, nil
}

// writeSimSysfs writes under root the files dev_sysfs_create writes, in
// its formats (some without a newline, as it writes them), for the
// device SimCA and the client's port.
func writeSimSysfs(root string, n *umad.SimNode) error {
	var ferr error
	file := func(dir, name, format string, args ...any) {
		if ferr != nil {
			return
		}
		d := filepath.Join(root, dir)
		if ferr = os.MkdirAll(d, 0o755); ferr == nil {
			ferr = os.WriteFile(filepath.Join(d, name), []byte(fmt.Sprintf(format, args...)), 0o644)
		}
	}
	ni, pi := n.NodeInfo[:], n.PortInfo[:]
	guids := func(g uint64) string {
		return fmt.Sprintf("%04x:%04x:%04x:%04x", g>>48&0xffff, g>>32&0xffff, g>>16&0xffff, g&0xffff)
	}
	pick := func(v uint64, names []string) string {
		if v < uint64(len(names)) && names[v] != "" {
			return names[v]
		}
		return "<unknown>"
	}
	const mad = "class/infiniband_mad"
	file(mad, "abi_version", "%d\n", 5) // IB_UMAD_ABI_VERSION
	dev := "class/infiniband/" + umadenv.SimCA
	typ := uint64(ni[2])
	file(dev, "node_type", "%x: %s\n", typ, pick(typ, []string{1: "CA", 2: "SWITCH", 3: "ROUTER"}))
	file(dev, "fw_ver", "%x\n", n.FWVersion)
	file(dev, "hw_rev", "%x\n", n.HWVersion)
	file(dev, "hca_type", "%s\n", "simulator")
	nodeGUID := binary.BigEndian.Uint64(ni[12:20])
	file(dev, "node_guid", "%s\n", guids(nodeGUID))
	file(dev, "sys_image_guid", "%s\n", guids(binary.BigEndian.Uint64(ni[4:12])))

	num := uint64(pi[28]) // LocalPortNum
	port := fmt.Sprintf("%s/ports/%d", dev, num)
	file(port, "lid_mask_count", "%d", bits(pi, 277, 3))
	file(port, "sm_lid", "0x%x", bits(pi, 144, 16))
	file(port, "sm_sl", "%d", bits(pi, 292, 4))
	file(port, "lid", "0x%x", bits(pi, 128, 16))
	state := bits(pi, 260, 4)
	file(port, "state", "%d: %s\n", state, pick(state, []string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}))
	phys := bits(pi, 264, 4)
	file(port, "phys_state", "%d: %s\n", phys, pick(phys, []string{1: "Sleep", 2: "Polling", 3: "Disabled",
		4: "PortConfigurationTraining", 5: "LinkUp", 6: "LinkErrorRecovery", 7: "Phy Test"}))
	file(port, "rate", "%s", simRate(pi))
	file(port, "cap_mask", "0x%08x", bits(pi, 160, 32))
	// The GID: the port's prefix and, as libumad2sim makes it, the
	// node GUID plus the port number.
	g := []uint64{binary.BigEndian.Uint64(pi[8:16]), nodeGUID + num}
	file(port+"/gids", "0", "%s:%s\n", guids(g[0]), guids(g[1]))
	for i, k := range n.PKeys {
		file(port+"/pkeys", fmt.Sprint(i), "0x%04x\n", k)
	}
	for _, c := range []string{"umad0", "issm0"} {
		file(mad+"/"+c, "ibdev", "%s\n", umadenv.SimCA)
		file(mad+"/"+c, "port", "%d\n", num)
	}
	return ferr
}

// simRate is dev_sysfs_create's rate file: from the active width and
// speed, the extended speed where the port has one (FDR, EDR, HDR).
func simRate(pi []byte) string {
	speed := uint64(0)
	if bits(pi, 160, 32)&(1<<14) != 0 { // IsExtendedSpeedsSupported
		speed = bits(pi, 496, 4)
	}
	width := map[uint64]uint64{1: 1, 2: 4, 4: 8, 8: 12}[bits(pi, 248, 8)]
	if speed == 0 {
		speed = bits(pi, 280, 4)
		name := map[uint64]string{2: " DDR", 4: " QDR"}[speed]
		half := ""
		if width*speed*25%10 != 0 {
			half = ".5"
		}
		return fmt.Sprintf("%d%s Gb/sec (%dX%s)\n", width*speed*25/10, half, width, name)
	}
	name := map[uint64]string{1: " FDR", 2: " EDR", 4: " HDR"}[speed]
	gbps := 26 * width
	if speed == 1 {
		gbps = 14 * width
	}
	return fmt.Sprintf("%d Gb/sec (%dX%s)\n", gbps, width, name)
}
