package uverbs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"

	"github.com/purerdma/rdma/internal/verbs"
	"github.com/purerdma/rdma/rdmanl"
	"github.com/purerdma/rdma/sysfs"
)

// KernelABIVersion is the uverbs ABI this package speaks
// (IB_USER_VERBS_ABI_VERSION); /sys/class/infiniband_verbs/abi_version
// must say the same.
const KernelABIVersion = 6

// Options say where devices are found and how they are opened. A nil
// *Options means the defaults: the running system.
type Options struct {
	// Sysfs is the sysfs tree devices are found in; nil means the
	// running system's (/sys). With a tree other than the host's /sys
	// (sysfs.New on a fixture, sysfs.NewFS) discovery reads only that
	// tree and does not ask RDMA netlink, which describes the running
	// system.
	Sysfs *sysfs.FS
	// DevDir is where the uverbs character devices are; "" means
	// "/dev/infiniband".
	DevDir string
	// Generic lets Open use the generic provider for drivers this
	// package has no provider for: it sends no driver data, which is
	// enough for the context, the device, port and GID queries, PDs and
	// async events of drivers that accept that; CQ and QP creation then
	// fail with ErrNotSupported. Without Generic such drivers fail Open
	// with ErrNotSupported.
	Generic bool

	// Opener opens the device files in place of open(2). It is for the
	// unit tests of this module, which put a fake kernel behind the
	// device node; code outside the module can leave it only as it is,
	// the zero value (open(2)): only internal/verbs makes others.
	Opener verbs.Opener
}

// sysfs returns the tree to read; nil reads the running system's.
func (o *Options) sysfs() *sysfs.FS {
	if o == nil {
		return nil
	}
	return o.Sysfs
}

func (o *Options) devDir() string {
	if o == nil || o.DevDir == "" {
		return "/dev/infiniband"
	}
	return o.DevDir
}

func (o *Options) useNetlink() bool { return o.sysfs().IsHost() }

func (o *Options) opener() verbs.Opener {
	if o == nil {
		return verbs.Opener{}
	}
	return o.Opener
}

// Device describes one RDMA device with a uverbs node: what
// ibv_get_device_list returns.
type Device struct {
	// Name is the IB device name ("rxe0", "mlx5_0").
	Name string
	// Node is the uverbs node's name ("uverbs0") and Path its character
	// device ("/dev/infiniband/uverbs0").
	Node, Path string
	// SysfsPath is the device's directory under class/infiniband; empty
	// when Options.Sysfs is a tree without a directory (sysfs.NewFS).
	SysfsPath string
	// ABIVersion is the driver's uverbs ABI version (sysfs
	// infiniband_verbs/uverbsN/abi_version): 1 for mlx5, 2 for rxe.
	ABIVersion int
	// DriverID is the driver (enum rdma_driver_id), rdma.DriverUnknown
	// when it could not be learnt; its String names it ("mlx5", "rxe").
	DriverID rdma.DriverID
	// NodeGUID is the node GUID in host order (0xacade8fffe375f42 prints
	// as acad:e8ff:fe37:5f42).
	NodeGUID rdma.GUID
	// NodeType is the node type from sysfs.
	NodeType rdma.NodeType
	// Index is the kernel's device index (from netlink, where the first
	// device is 0), -1 when netlink did not answer.
	Index int
}

// Transport returns the device's transport, as libibverbs derives it from
// the node type.
func (d Device) Transport() Transport { return transportOf(d.NodeType) }

// Devices lists the RDMA devices that have a uverbs node, like
// ibv_get_device_list: in the kernel's device index order when netlink
// answers, else by name. No devices (no infiniband_verbs class at all) is
// an empty list, not an error.
//
// The driver of each device comes from RDMA netlink (GET_CHARDEV "uverbs"
// reports RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID); when netlink is not
// available, or opts.Sysfs is not the host's /sys, it is inferred from sysfs: the
// PCI driver's name (mlx5_core, mlx4_core, efa) or the device name (rxe*,
// siw*), as rdma-core's providers match them.
//
// Errors: an *Error wrapping ErrNotSupported when the kernel's uverbs ABI
// is not 6; one wrapping the read error when sysfs cannot be read.
func Devices(opts *Options) ([]Device, error) {
	fsys := opts.sysfs()
	v, err := fsys.VerbsABIVersion()
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, errs.New("list devices", "", err)
	}
	if v != KernelABIVersion {
		return nil, errs.New("list devices", "", fmt.Errorf("kernel uverbs ABI version %d, this package speaks %d: %w", v, KernelABIVersion, ErrNotSupported))
	}
	// An entry that cannot be read (the device went away while we
	// looked) is left out; only a class that cannot be listed fails.
	cds, err := fsys.CharDevs()
	if err != nil && len(cds) == 0 {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, errs.New("list devices", "", err)
	}
	var devs []Device
	root := fsys.Root()
	for _, cd := range cds {
		if cd.Kind != sysfs.KindUverbs || cd.CA == "" {
			continue
		}
		d := Device{
			Name:     cd.CA,
			Node:     cd.Name,
			Path:     filepath.Join(opts.devDir(), cd.Name),
			NodeType: rdma.NodeUnknown,
			Index:    -1,
		}
		if root != "" {
			d.SysfsPath = filepath.Join(root, "class", "infiniband", cd.CA)
		}
		if cd.ABIVersion != nil {
			d.ABIVersion = *cd.ABIVersion
		}
		if ca, err := fsys.CAAttrs(cd.CA); err == nil {
			d.NodeType, d.NodeGUID = ca.NodeType, ca.NodeGUID
		}
		devs = append(devs, d)
	}
	if opts.useNetlink() {
		netlinkDriverIDs(devs)
	}
	for i := range devs {
		if devs[i].DriverID == rdma.DriverUnknown {
			devs[i].DriverID = sysfsDriverID(fsys, devs[i])
		}
	}
	sort.SliceStable(devs, func(i, j int) bool {
		a, b := devs[i], devs[j]
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		return naturalLess(a.Name, b.Name)
	})
	return devs, nil
}

// LookupDevice returns the device named name (an IB device name such as
// "rxe0", or a uverbs node name such as "uverbs0").
//
// Errors: those of Devices, or an *Error wrapping syscall.ENODEV (which
// matches os.ErrNotExist) when there is no such device.
func LookupDevice(name string, opts *Options) (Device, error) {
	if d, ok := lookupNetlink(name, opts); ok {
		return d, nil
	}
	devs, err := Devices(opts)
	if err != nil {
		return Device{}, err
	}
	for _, d := range devs {
		if d.Name == name || d.Node == name {
			return d, nil
		}
	}
	return Device{}, errs.New("open", name, syscall.ENODEV)
}

// lookupNetlink finds the device named name the way libibverbs finds
// devices on a kernel with RDMA netlink (find_sysfs_devs_nl): one
// RDMA_NLDEV_CMD_GET dump for the device's index, GUID and node type, then
// RDMA_NLDEV_CMD_GET_CHARDEV "uverbs" for its node, ABI version and
// driver id: two netlink requests and the class ABI check, where Devices
// lists every device's uverbs and umad nodes and reads each device's
// sysfs attributes. ok is false when any of it fails (no netlink, a
// kernel without the chardev query, no such device, a uverbs node name
// rather than a device name, a tree other than the host's): LookupDevice
// then goes the long way, which also gives its errors.
func lookupNetlink(name string, opts *Options) (d Device, ok bool) {
	if !opts.useNetlink() || name == "" || strings.HasPrefix(name, "uverbs") {
		return Device{}, false
	}
	fsys := opts.sysfs()
	if v, err := fsys.VerbsABIVersion(); err != nil || v != KernelABIVersion {
		return Device{}, false
	}
	nl, err := rdmanl.Open()
	if err != nil {
		return Device{}, false
	}
	defer nl.Close()
	links, err := nl.Devices()
	if err != nil {
		return Device{}, false
	}
	for _, l := range links {
		if l.Name != name {
			continue
		}
		c, err := nl.Chardev(l.Index, sysfs.KindUverbs, 0)
		if err != nil || c.Name == "" || l.NodeType == nil {
			return Device{}, false
		}
		d = Device{Name: name, Node: c.Name, Path: filepath.Join(opts.devDir(), c.Name),
			ABIVersion: int(c.ABI), NodeGUID: l.NodeGUID, NodeType: *l.NodeType, Index: int(l.Index)}
		if root := fsys.Root(); root != "" {
			d.SysfsPath = filepath.Join(root, "class", "infiniband", name)
		}
		if c.DriverID != nil {
			d.DriverID = *c.DriverID
		} else {
			d.DriverID = sysfsDriverID(fsys, d)
		}
		return d, true
	}
	return Device{}, false
}

// sysfsDriverID infers the driver from sysfs when netlink did not say.
func sysfsDriverID(fsys *sysfs.FS, d Device) rdma.DriverID {
	if drv, err := fsys.CADriver(d.Name); err == nil {
		switch drv {
		case "mlx5_core":
			return rdma.DriverMLX5
		case "mlx4_core":
			return rdma.DriverMLX4
		case "efa":
			return rdma.DriverEFA
		}
	}
	switch {
	case strings.HasPrefix(d.Name, "rxe"):
		return rdma.DriverRXE
	case strings.HasPrefix(d.Name, "siw"):
		return rdma.DriverSIW
	}
	return rdma.DriverUnknown
}

// naturalLess orders names with numbers by value: rxe2 before rxe10.
func naturalLess(a, b string) bool {
	pa, na := splitNum(a)
	pb, nb := splitNum(b)
	if pa != pb {
		return a < b
	}
	if na != nb {
		return na < nb
	}
	return a < b
}

func splitNum(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n, err := strconv.Atoi(s[i:])
	if err != nil {
		return s, -1
	}
	return s[:i], n
}
