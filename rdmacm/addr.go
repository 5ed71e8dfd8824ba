package rdmacm

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
)

// The socket address families the connection manager takes
// (include/linux/socket.h): AF_INET and AF_INET6 for IP addresses, AF_IB
// (struct sockaddr_ib, include/rdma/ib.h) for InfiniBand GIDs and service
// IDs, which the kernel answers in queries of IDs in the IB port space.
const (
	afInet  = syscall.AF_INET
	afInet6 = syscall.AF_INET6
	afIB    = 27
)

// The sizes of the socket addresses the kernel copies (ucma.c checks them
// with rdma_addr_size): struct sockaddr_in, sockaddr_in6, sockaddr_ib.
const (
	sizeofSockaddrIn  = 16
	sizeofSockaddrIn6 = 28
	sizeofSockaddrIB  = 48
)

// putSockaddr encodes ap into b (at least 28 bytes, zeroed by the caller)
// as a sockaddr_in or sockaddr_in6 and returns its size. An IPv6 address's
// zone is its scope id: a number, or an interface name looked up once.
func putSockaddr(b []byte, ap netip.AddrPort) (int, error) {
	a := ap.Addr()
	switch {
	case !a.IsValid():
		return 0, fmt.Errorf("no address: %w", syscall.EINVAL)
	case a.Is4():
		binary.LittleEndian.PutUint16(b[0:], afInet) // sa_family_t is host order
		binary.BigEndian.PutUint16(b[2:], ap.Port())
		a4 := a.As4()
		copy(b[4:8], a4[:])
		return sizeofSockaddrIn, nil
	default:
		scope, err := scopeID(a.Zone())
		if err != nil {
			return 0, err
		}
		binary.LittleEndian.PutUint16(b[0:], afInet6)
		binary.BigEndian.PutUint16(b[2:], ap.Port())
		a16 := a.As16()
		copy(b[8:24], a16[:])
		binary.LittleEndian.PutUint32(b[24:], scope)
		return sizeofSockaddrIn6, nil
	}
}

// scopeID turns an IPv6 zone into the scope id of sockaddr_in6: "" is 0, a
// number is itself, anything else is an interface name.
func scopeID(zone string) (uint32, error) {
	if zone == "" {
		return 0, nil
	}
	if n, err := strconv.ParseUint(zone, 10, 32); err == nil {
		return uint32(n), nil
	}
	ifi, err := net.InterfaceByName(zone)
	if err != nil {
		return 0, fmt.Errorf("IPv6 zone %q: %v: %w", zone, err, syscall.ENODEV)
	}
	return uint32(ifi.Index), nil
}

// sockaddr decodes a socket address the kernel wrote (sockaddr_in,
// sockaddr_in6 or sockaddr_ib). An AF_IB address becomes its GID as an
// IPv6 address and the low 16 bits of its service id as the port (the
// RDMA_PS_IB service ids librdmacm builds end in the port). An IPv6 scope
// id becomes a numeric zone. Anything else, or a short buffer, is the zero
// AddrPort.
func sockaddr(b []byte) netip.AddrPort {
	if len(b) < 2 {
		return netip.AddrPort{}
	}
	switch binary.LittleEndian.Uint16(b) {
	case afInet:
		if len(b) < sizeofSockaddrIn {
			return netip.AddrPort{}
		}
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:]))
	case afInet6:
		if len(b) < sizeofSockaddrIn6 {
			return netip.AddrPort{}
		}
		a := netip.AddrFrom16([16]byte(b[8:24]))
		if s := binary.LittleEndian.Uint32(b[24:]); s != 0 {
			a = a.WithZone(strconv.FormatUint(uint64(s), 10))
		}
		return netip.AddrPortFrom(a, binary.BigEndian.Uint16(b[2:]))
	case afIB:
		if len(b) < sizeofSockaddrIB {
			return netip.AddrPort{}
		}
		a := netip.AddrFrom16([16]byte(b[8:24]))
		sid := binary.BigEndian.Uint64(b[24:])
		return netip.AddrPortFrom(a, uint16(sid))
	}
	return netip.AddrPort{}
}
