package uverbs

import "github.com/purerdma/rdma"

type (
	NodeType  = rdma.NodeType
	PortState = rdma.PortState
	LinkLayer = rdma.LinkLayer
	GID       = rdma.GID
)

const (
	NodeUnknown     = rdma.NodeUnknown
	NodeCA          = rdma.NodeCA
	NodeSwitch      = rdma.NodeSwitch
	NodeRouter      = rdma.NodeRouter
	NodeRNIC        = rdma.NodeRNIC
	NodeUSNIC       = rdma.NodeUSNIC
	NodeUSNICUDP    = rdma.NodeUSNICUDP
	NodeUnspecified = rdma.NodeUnspecified
	PortNOP         = rdma.PortNOP
	PortDown        = rdma.PortDown
	PortInit        = rdma.PortInit
	PortArmed       = rdma.PortArmed
	PortActive      = rdma.PortActive
	PortActiveDefer = rdma.PortActiveDefer
	LinkLayerUnspecified = rdma.LinkLayerUnspecified
	LinkLayerInfiniBand  = rdma.LinkLayerInfiniBand
	LinkLayerEthernet    = rdma.LinkLayerEthernet
)
