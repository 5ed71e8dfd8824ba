package sysfs

import "github.com/purerdma/rdma"

type (
	NodeType  = rdma.NodeType
	PortState = rdma.PortState
	PhysState = rdma.PhysState
	GID       = rdma.GID
	GUID      = rdma.GUID
)

const (
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
	PhysSleep                     = rdma.PhysSleep
	PhysPolling                   = rdma.PhysPolling
	PhysDisabled                  = rdma.PhysDisabled
	PhysPortConfigurationTraining = rdma.PhysPortConfigurationTraining
	PhysLinkUp                    = rdma.PhysLinkUp
	PhysLinkErrorRecovery         = rdma.PhysLinkErrorRecovery
	PhysPhyTest                   = rdma.PhysPhyTest
)
