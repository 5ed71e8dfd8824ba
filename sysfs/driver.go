package sysfs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/purerdma/rdma/internal/errs"
)

// Root returns the directory the FS reads the tree from: [DefaultRoot] for
// the zero FS and a nil *FS, the root given to [New], and "" for an FS made
// by [NewFS] (its tree has no directory). Paths that other packages show
// or read outside this package (uverbs' Device.SysfsPath) start with it.
func (f *FS) Root() string { return f.osRoot0() }

// IsHost reports whether the FS reads the running system's sysfs
// ([DefaultRoot]): then RDMA netlink describes the same devices, and
// callers may ask it what sysfs does not say.
func (f *FS) IsHost() bool { return f.osRoot0() == DefaultRoot }

// CADriver returns the name of the kernel driver bound to the device the
// CA sits on: the last element of the link
// class/infiniband/NAME/device/driver ("mlx5_core", "mlx4_core", "efa"),
// as rdma-core's providers match PCI devices. The error matches
// os.ErrNotExist when there is no such link (software devices such as
// rxe and siw have no device/driver) or no such CA.
func (f *FS) CADriver(name string) (string, error) {
	const op = "read driver"
	if !validName(name) {
		return "", errs.New(op, name, f.noSuchDevice(classInfiniBand, name))
	}
	rel := classInfiniBand + "/" + name + "/device/driver"
	var link string
	var err error
	if root := f.osRoot0(); root != "" {
		link, err = os.Readlink(root + "/" + rel)
	} else if rl, ok := f.fsys.(interface {
		ReadLink(name string) (string, error)
	}); ok {
		link, err = rl.ReadLink(rel) // fs.ReadLinkFS (Go 1.25), which fstest.MapFS implements
	} else {
		err = &fs.PathError{Op: "readlink", Path: rel, Err: fs.ErrNotExist}
	}
	if err != nil {
		return "", errs.New(op, name, f.fixPathErr(err, rel))
	}
	return path.Base(link), nil
}

// CAAttrs reads the attributes of the device name that [FS.ReadCAs] reads
// with parts 0 (node type, GUIDs, firmware version, HCA type, hardware
// revision) and not its ports (Ports is nil): what device discovery
// (uverbs.Devices) needs of each device. The error matches os.ErrNotExist
// when there is no such device.
func (f *FS) CAAttrs(name string) (*CA, error) {
	if !validName(name) {
		return nil, errs.New("read CA", name, f.noSuchDevice(classInfiniBand, name))
	}
	cd, err := f.openDir(classInfiniBand + "/" + name)
	if err != nil {
		return nil, errs.New("read CA", name, err)
	}
	defer cd.close()
	ca, err := f.readCAAttrs(&cd, name, 0)
	if err != nil {
		return nil, errs.New("read CA", name, err)
	}
	return ca, nil
}

// CAAttr reads the attribute file attr of the device name
// (class/infiniband/NAME/ATTR: "fw_ver", "board_id", "hca_type", …), its
// trailing newline removed: one file, where [FS.CAAttrs] reads them all
// and fails on any. The error matches os.ErrNotExist when the device or
// the file does not exist.
func (f *FS) CAAttr(name, attr string) (string, error) {
	if !validName(name) {
		return "", errs.New("read CA", name, f.noSuchDevice(classInfiniBand, name))
	}
	if !validName(attr) {
		return "", errs.New("read CA", name, &fs.PathError{Op: "open", Path: f.display(classInfiniBand + "/" + name + "/" + attr), Err: syscall.ENOENT})
	}
	s, err := f.readString(classInfiniBand + "/" + name + "/" + attr)
	if err != nil {
		return "", errs.New("read CA", name, err)
	}
	return strings.TrimSuffix(s, "\n"), nil
}

// OpenCAHwCounters opens the device-wide hw_counters/ directory of the
// device name, which only some drivers provide (hfi1; see [CA.HwCounters]),
// for repeated reading with [HwCounterSet.ReadAll]. The error matches
// [ErrNotSupported] when the directory does not exist and os.ErrNotExist
// when there is no such device.
func (f *FS) OpenCAHwCounters(name string) (*HwCounterSet, error) {
	if !validName(name) {
		return nil, errs.New("read hw counters", name, f.noSuchDevice(classInfiniBand, name))
	}
	dir := classInfiniBand + "/" + name
	s, err := f.openHwCounters(dir, name)
	if errors.Is(err, ErrNotSupported) {
		if ok, serr := f.exists(dir); serr == nil && !ok {
			return nil, errs.New("read hw counters", name, &fs.PathError{Op: "open", Path: f.display(dir), Err: syscall.ENOENT})
		}
	}
	return s, err
}
