package verbs

import (
	"github.com/purerdma/rdma/uverbs"
)

// devinfoJSON is devinfo --json for one device: the fields ibv_devinfo -v
// prints, under its names, with GUIDs and GIDs as ibv_devinfo spells them.
type devinfoJSON struct {
	HCAID          string            `json:"hca_id"`
	Transport      string            `json:"transport"`
	TransportType  int               `json:"transport_type"`
	Driver         string            `json:"driver"`
	UverbsNode     string            `json:"uverbs_node"`
	FWVer          string            `json:"fw_ver"`
	NodeGUID       string            `json:"node_guid"`
	SysImageGUID   string            `json:"sys_image_guid"`
	VendorID       uint32            `json:"vendor_id"`
	VendorPartID   uint32            `json:"vendor_part_id"`
	HWVer          uint32            `json:"hw_ver"`
	BoardID        string            `json:"board_id,omitempty"`
	PhysPortCnt    uint8             `json:"phys_port_cnt"`
	NumCompVectors int               `json:"num_comp_vectors"`
	Attr           uverbs.DeviceAttr `json:"attributes"`
	Ports          []portJSON        `json:"ports"`
}

type portJSON struct {
	Port      uint8           `json:"port"`
	State     string          `json:"state"`
	StateNum  uint8           `json:"state_num"`
	MaxMTU    int             `json:"max_mtu"`
	ActiveMTU int             `json:"active_mtu"`
	SMLID     uint16          `json:"sm_lid"`
	LID       uint16          `json:"port_lid"`
	LMC       uint8           `json:"port_lmc"`
	LinkLayer string          `json:"link_layer"`
	PhysState string          `json:"phys_state"`
	Width     string          `json:"active_width"`
	Speed     string          `json:"active_speed"`
	Attr      uverbs.PortAttr `json:"attributes"`
	GIDs      []gidJSON       `json:"gids,omitempty"`
}

type gidJSON struct {
	Index   int    `json:"index"`
	GID     string `json:"gid"`
	Type    string `json:"type"`
	Ifindex uint32 `json:"netdev_ifindex"`
}

func (h *devinfoHCA) json() devinfoJSON {
	tr := h.Dev.Transport()
	j := devinfoJSON{
		HCAID: h.Dev.Name, Transport: tr.String(), TransportType: int(tr), Driver: h.Dev.DriverID.String(), UverbsNode: h.Dev.Node,
		FWVer: h.Attr.FWVer, NodeGUID: h.Attr.NodeGUID.String(), SysImageGUID: h.Attr.SysImageGUID.String(),
		VendorID: h.Attr.VendorID, VendorPartID: h.Attr.VendorPartID, HWVer: h.Attr.HWVer, BoardID: h.BoardID,
		PhysPortCnt: h.Attr.PhysPortCnt, NumCompVectors: h.NumCompVectors, Attr: h.Attr, Ports: []portJSON{},
	}
	for _, p := range h.Ports {
		a := p.Attr
		pj := portJSON{
			Port: p.Num, State: portStateStr(a.State), StateNum: uint8(a.State), MaxMTU: a.MaxMTU.Bytes(), ActiveMTU: a.ActiveMTU.Bytes(),
			SMLID: a.SMLID, LID: a.LID, LMC: a.LMC, LinkLayer: a.LinkLayer.String(), PhysState: physStateStr(a.PhysState),
			Width: widthStr(a.ActiveWidth) + "X", Speed: speedStr(a.ActiveSpeed), Attr: a,
		}
		for _, g := range p.GIDs {
			s := g.GID.Hex()
			if g.Type == uverbs.GIDTypeRoCEv2 {
				s = g.GID.String()
			}
			pj.GIDs = append(pj.GIDs, gidJSON{Index: g.Index, GID: s, Type: g.Type.String(), Ifindex: g.NetdevIfindex})
		}
		j.Ports = append(j.Ports, pj)
	}
	return j
}
