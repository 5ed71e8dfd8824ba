package diags

// libibnetdisc's fabric cache (libibnetdisc/ibnetdisc_cache.c,
// ibnd_cache_fabric and ibnd_load_fabric), which ibnetdiscover --cache
// writes and --load-cache and --diff read (iblinkinfo too): a header,
// the nodes, then the ports, little endian. What we write is C's file
// byte for byte, and each reads the other's.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/purerdma/rdma/umad/netdisc"
)

const (
	ndCacheMagic   = 0x8FE7832B
	ndCacheVersion = 1
	ndCacheHeader  = 28
	ndCacheNode    = 15 + 64*3 // before the port keys
	ndCacheKey     = 9
	ndCachePort    = 31 + 64
	ndHashSize     = 137 // libibnetdisc's HTSZ
)

// ndHash is libibnetdisc's HASHGUID modulo HTSZ.
func ndHash(guid uint64) int {
	return int((uint32(guid)*101 ^ uint32(guid>>32)*103) % ndHashSize)
}

// cachePorts lists the ports libibnetdisc's port GUID table holds, in the
// order ibnd_cache_fabric writes them: bucket by bucket, each bucket last
// added first, a port added when its PortInfo first came (the replay's
// order).
func cachePorts(order []*netdisc.Port) []*netdisc.Port {
	var buckets [ndHashSize][]*netdisc.Port
	for _, p := range order {
		h := ndHash(p.GUID)
		buckets[h] = append([]*netdisc.Port{p}, buckets[h]...)
	}
	var out []*netdisc.Port
	for _, b := range buckets {
		out = append(out, b...)
	}
	return out
}

// writeCache is ibnd_cache_fabric: f, its longest route maxHops and its
// ports in table order (cachePorts) to file, replaced if it exists.
func writeCache(file string, f *netdisc.Fabric, maxHops int, ports []*netdisc.Port) error {
	b := marshalCache(f, maxHops, ports)
	if _, err := os.Stat(file); err == nil {
		if err := os.Remove(file); err != nil {
			return cacheError{904, fmt.Sprintf("error removing '%s': %s\n", file, errnoText(err))}
		}
	}
	fd, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return cacheError{918, "open: " + errnoText(err) + "\n"}
	}
	if _, err := fd.Write(b); err != nil {
		fd.Close()
		os.Remove(file)
		return err
	}
	if err := fd.Close(); err != nil {
		os.Remove(file)
		return err
	}
	return nil
}

// marshalCache is the cache file's bytes.
func marshalCache(f *netdisc.Fabric, maxHops int, ports []*netdisc.Port) []byte {
	le := binary.LittleEndian
	var b []byte
	b = le.AppendUint32(b, ndCacheMagic)
	b = le.AppendUint32(b, ndCacheVersion)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint64(b, f.From.GUID)
	b = le.AppendUint32(b, uint32(maxHops))
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		n := f.Nodes[i]
		smaLID, smaLMC := n.SMALID, n.SMALMC
		if n.Type != netdisc.TypeSwitch {
			smaLID, smaLMC = 0, 0 // only port 0's PortInfo sets them
		}
		b = le.AppendUint16(b, smaLID)
		b = append(b, smaLMC)
		enh := byte(0)
		if n.EnhancedPort0 {
			enh = 1
		}
		b = append(b, enh)
		b = append(b, n.SwitchInfo[:]...)
		b = le.AppendUint64(b, n.GUID)
		b = append(b, n.Type, byte(n.NumPorts))
		b = append(b, n.Info[:]...)
		var desc [64]byte
		copy(desc[:], n.Desc)
		b = append(b, desc[:]...)
		cnt := len(b)
		b = append(b, 0)
		for _, p := range n.Ports {
			if p != nil {
				b = le.AppendUint64(b, p.GUID)
				b = append(b, byte(p.Num))
				b[cnt]++
			}
		}
	}
	for _, p := range ports {
		b = le.AppendUint64(b, p.GUID)
		b = append(b, byte(p.Num), 0)
		b = le.AppendUint16(b, p.BaseLID)
		b = append(b, p.LMC)
		b = append(b, p.Info[:]...)
		b = le.AppendUint64(b, p.Node.GUID)
		if r := p.Remote; r != nil {
			b = append(b, 1)
			b = le.AppendUint64(b, r.GUID)
			b = append(b, byte(r.Num))
		} else {
			b = append(b, 0)
			b = le.AppendUint64(b, 0)
			b = append(b, 0)
		}
	}
	le.PutUint32(b[8:], uint32(len(f.Nodes)))
	le.PutUint32(b[12:], uint32(len(ports)))
	return b
}

// errBadCache is a cache file ibnd_load_fabric refuses without a word.
var errBadCache = errors.New("invalid fabric cache file")

// cacheError is a cache file ibnd_load_fabric refuses, with the line its
// IBND_DEBUG prints (under -d) and where (ibnetdisc_cache.c's line).
type cacheError struct {
	line int
	msg  string
}

func (e cacheError) Error() string { return strings.TrimSuffix(e.msg, "\n") }

// errnoText is strerror(3) of err's errno (err's text without one).
func errnoText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return cStrerror(errno)
	}
	return err.Error()
}

// cacheDebugLine is the IBND_DEBUG line of err, "" for none.
func cacheDebugLine(err error) string {
	var ce cacheError
	if errors.As(err, &ce) {
		return fmt.Sprintf("./libibnetdisc/ibnetdisc_cache.c:%d; %s", ce.line, ce.msg)
	}
	return ""
}

var (
	errCacheShort    = cacheError{166, "read: read short\n"}
	errCacheMagic    = cacheError{233, "invalid fabric cache file\n"}
	errCacheVersion  = cacheError{240, "invalid fabric cache version\n"}
	errCachePort     = cacheError{499, "Cache invalid: cannot find port\n"}
	errCacheDupPort  = cacheError{504, "Cache invalid: duplicate port discovered\n"}
	errCacheNode     = cacheError{594, "Cache invalid: cannot find node\n"}
	errCacheRemote   = cacheError{604, "Cache invalid: cannot find remote port\n"}
	errCacheFromNode = cacheError{672, "Cache invalid: cannot find from node\n"}
)

// loadedFabric is a fabric read from a cache, with its header's longest
// route, and its ports in the order libibnetdisc adds them to its table.
type loadedFabric struct {
	f    *netdisc.Fabric
	scan scanReplay
}

// loadCache is ibnd_load_fabric: the fabric file holds. Nodes list in
// creation order (the file's reversed), as Discover lists them; the local
// port's number is not in the file (0).
func loadCache(file string) (*loadedFabric, error) {
	data, err := readFileBounded(file, maxCacheFile)
	if err != nil {
		return nil, cacheError{636, "open: " + errnoText(err) + "\n"}
	}
	return parseCache(data)
}

// parseCache reads a cache file's bytes; what ibnd_load_fabric refuses
// (a bad header, a short file, a port or node a record names that is not
// there, a port stored twice or past its node's ports) is errBadCache.
func parseCache(data []byte) (*loadedFabric, error) {
	le := binary.LittleEndian
	off := 0
	take := func(n int) []byte {
		if off+n > len(data) {
			return nil
		}
		b := data[off : off+n]
		off += n
		return b
	}
	h := take(ndCacheHeader)
	switch {
	case h == nil:
		return nil, errCacheShort
	case le.Uint32(h) != ndCacheMagic:
		return nil, errCacheMagic
	case le.Uint32(h[4:]) != ndCacheVersion:
		return nil, errCacheVersion
	}
	nodeCount, portCount := le.Uint32(h[8:]), le.Uint32(h[12:])
	from := le.Uint64(h[16:])
	lf := &loadedFabric{f: &netdisc.Fabric{}, scan: scanReplay{maxHops: int(le.Uint32(h[24:]))}}
	type key struct {
		guid uint64
		num  uint8
	}
	type nodeRec struct {
		n    *netdisc.Node
		keys []key
	}
	var nodes []nodeRec
	for i := uint32(0); i < nodeCount; i++ {
		b := take(ndCacheNode)
		if b == nil {
			return nil, errCacheShort
		}
		n := &netdisc.Node{SMALID: le.Uint16(b), SMALMC: b[2], EnhancedPort0: b[3] != 0}
		copy(n.SwitchInfo[:], b[4:68])
		n.GUID = le.Uint64(b[68:])
		n.Type, n.NumPorts = b[76], int(b[77])
		copy(n.Info[:], b[78:142])
		n.Desc = cstringBytes(b[142:206])
		n.Ports = make([]*netdisc.Port, n.NumPorts+1)
		cnt := int(b[206])
		kb := take(cnt * ndCacheKey)
		if kb == nil {
			return nil, errCacheShort
		}
		rec := nodeRec{n: n}
		for k := 0; k < cnt; k++ {
			rec.keys = append(rec.keys, key{le.Uint64(kb[k*ndCacheKey:]), kb[k*ndCacheKey+8]})
		}
		nodes = append(nodes, rec)
	}
	type portRec struct {
		p         *netdisc.Port
		node      uint64
		hasRemote bool
		remote    key
		stored    bool
	}
	var ports []*portRec
	for i := uint32(0); i < portCount; i++ {
		b := take(ndCachePort)
		if b == nil {
			return nil, errCacheShort
		}
		p := &netdisc.Port{GUID: le.Uint64(b), Num: int(b[8]), BaseLID: le.Uint16(b[10:]), LMC: b[12], HasInfo: true}
		copy(p.Info[:], b[13:77])
		ports = append(ports, &portRec{p: p, node: le.Uint64(b[77:]), hasRemote: b[85] != 0,
			remote: key{le.Uint64(b[86:]), b[94]}})
	}
	// The hash chains of libibnetdisc find the last stored of equal keys
	// first.
	findPort := func(k key) *portRec {
		for i := len(ports) - 1; i >= 0; i-- {
			if ports[i].p.GUID == k.guid && uint8(ports[i].p.Num) == k.num {
				return ports[i]
			}
		}
		return nil
	}
	findNode := func(guid uint64) *netdisc.Node {
		for i := len(nodes) - 1; i >= 0; i-- {
			if nodes[i].n.GUID == guid {
				return nodes[i].n
			}
		}
		return nil
	}
	if lf.f.From = findNode(from); lf.f.From == nil {
		return nil, errCacheFromNode
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		rec := nodes[i]
		for _, k := range rec.keys {
			pr := findPort(k)
			switch {
			case pr == nil:
				return nil, errCachePort
			case pr.stored:
				return nil, errCacheDupPort
			case pr.p.Num > rec.n.NumPorts:
				return nil, errBadCache // C writes past its ports array
			}
			pr.stored = true
			rec.n.Ports[pr.p.Num] = pr.p
			lf.scan.ports = append(lf.scan.ports, pr.p)
		}
		lf.f.Nodes = append(lf.f.Nodes, rec.n)
	}
	for _, pr := range ports {
		n := findNode(pr.node)
		if n == nil {
			return nil, errCacheNode
		}
		pr.p.Node = n
		if pr.hasRemote {
			r := findPort(pr.remote)
			if r == nil {
				return nil, errCacheRemote
			}
			pr.p.Remote = r.p
		}
	}
	return lf, nil
}

func cstringBytes(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
