package vm

import (
	"fmt"
	"sort"
	"strings"
)

// Package is a Debian package pinned to one version.
type Package struct {
	Name    string
	Version string
}

func (p Package) String() string { return p.Name + "=" + p.Version }

// The pinned packages. This is the one place to change when Debian drops a
// version from its archive: look the new one up with
//
//	apt-cache policy linux-image-amd64 linux-image-6.12-amd64
//	apt-cache depends linux-image-amd64 linux-image-6.12-amd64
//	apt-cache policy PACKAGE
//
// and, for the arm64 guest, the same with :arm64 after the names
// (linux-image-arm64:arm64, PACKAGE:arm64),
//
// and bump the entries (the guest image is rebuilt by itself).
var (
	// kernels maps the -kernel label to the kernel package. Both come from
	// bookworm-security: 6.1 is what linux-image-amd64 depends on, 6.12 what
	// linux-image-6.12-amd64 depends on.
	kernels = map[string]Package{
		"6.1":  {"linux-image-6.1.0-56-amd64", "6.1.192-2"},
		"6.12": {"linux-image-6.12.117+deb12-amd64", "6.12.117-1~deb12u1"},
	}

	// kernelsArm64 are the same two kernels built for arm64 (vmrun -arch
	// arm64): what linux-image-arm64 and linux-image-6.12-arm64 depend
	// on (apt-cache policy NAME:arm64 after dpkg --add-architecture
	// arm64 and apt-get update). The userland below is pinned to the same
	// versions for both architectures.
	kernelsArm64 = map[string]Package{
		"6.1":  {"linux-image-6.1.0-56-arm64", "6.1.192-2"},
		"6.12": {"linux-image-6.12.117+deb12-arm64", "6.12.117-1~deb12u1"},
	}

	// kernelHeaders are what the test-only module integration/mockrdma is
	// built against, per -kernel label: the headers of exactly the kernel
	// package above, their -common tree and the kbuild tools. They are
	// downloaded and unpacked, never installed (the 6.12 headers depend on
	// the 6.12 image package).
	kernelHeaders = map[string][]Package{
		"6.1": {
			{"linux-headers-6.1.0-56-amd64", "6.1.192-2"},
			{"linux-headers-6.1.0-56-common", "6.1.192-2"},
			{"linux-kbuild-6.1", "6.1.192-3"}, // the archive replaced -2
		},
		"6.12": {
			{"linux-headers-6.12.117+deb12-amd64", "6.12.117-1~deb12u1"},
			{"linux-headers-6.12.117+deb12-common", "6.12.117-1~deb12u1"},
			{"linux-kbuild-6.12.117+deb12", "6.12.117-1~deb12u1"},
		},
	}

	// extras are unpacked on the host under the cache, not put into the
	// image: tests run them from the repository share (vmtest.Extra).
	// Prometheus and node_exporter check the exporter (cmd/rdma_exporter/internal/exporter).
	extras = []Package{
		{"prometheus", "2.42.0+ds-5+deb12u1"},
		{"prometheus-node-exporter", "1.5.0-1+b6"},
	}

	// userland holds the guest's busybox, rdma-core's tools and libraries
	// with the rxe provider, iproute2 (ip, rdma, tc), strace, and the shared
	// libraries they need.
	userland = []Package{
		{"busybox-static", "1:1.35.0-4+deb12u1+b1"},
		{"libc6", "2.36-9+deb12u14"},
		{"rdma-core", "44.0-2"},
		{"ibverbs-providers", "44.0-2"},
		{"ibverbs-utils", "44.0-2"},
		{"infiniband-diags", "44.0-2"},
		{"libibverbs1", "44.0-2"},
		{"libibumad3", "44.0-2"},
		{"libibmad5", "44.0-2"},
		{"libibnetdisc5", "44.0-2"},
		{"librdmacm1", "44.0-2"},           // the connection manager's C library
		{"rdmacm-utils", "44.0-2"},         // rping, ucmatose, udaddy: rdmacm's C peers
		{"libgcc-s1", "12.2.0-14+deb12u1"}, // glibc's pthread_exit loads libgcc_s (rping's threads)
		{"libnl-3-200", "3.7.0-0.2+b1"},
		{"libnl-route-3-200", "3.7.0-0.2+b1"},
		{"iproute2", "6.1.0-3"},
		{"libxtables12", "1.8.9-2"}, // tc's, for the netem fault injection
		{"libmnl0", "1.0.4-3"},
		{"libbsd0", "0.11.7-2"},
		{"libmd0", "1.0.4-2"},
		{"libcap2", "1:2.66-4+deb12u3+b1"},
		{"libbpf1", "1:1.1.2-0+deb12u1"},
		{"libelf1", "0.188-2.1"},
		{"zlib1g", "1:1.2.13.dfsg-1"},
		{"strace", "6.1-0.1"},
		{"libunwind8", "1.6.2-3"},
		{"liblzma5", "5.4.1-1+deb12u2"},
		{"perftest", "4.5+0.17-1"}, // ib_{send,write,read,atomic}_{bw,lat}: the perftest tools' C peers
		{"libpci3", "1:3.9.0-4"},   // perftest's
		{"libudev1", "252.39-1~deb12u2"},
	}
)

// DefaultKernel is the -kernel label used when none is given.
const DefaultKernel = "6.1"

// KernelLabels lists the -kernel labels vmrun knows, oldest first.
func KernelLabels() []string {
	labels := make([]string, 0, len(kernels))
	for l := range kernels {
		labels = append(labels, l)
	}
	sort.Slice(labels, func(i, j int) bool { return versionLess(labels[i], labels[j]) })
	return labels
}

// KernelPackage returns the kernel package for a -kernel label.
func KernelPackage(label string) (Package, error) {
	p, ok := kernels[label]
	if !ok {
		return Package{}, fmt.Errorf("unknown kernel %q; use one of %s", label, strings.Join(KernelLabels(), ", "))
	}
	return p, nil
}

// versionLess compares dotted numbers such as "6.1" and "6.12".
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		var x, y int
		fmt.Sscan(as[i], &x)
		fmt.Sscan(bs[i], &y)
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}
