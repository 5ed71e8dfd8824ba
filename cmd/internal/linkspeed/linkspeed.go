// Package linkspeed names an InfiniBand port's link speed as the fabric
// tools print it: PortInfo's LinkSpeedActive (SDR, DDR, QDR) and its
// extended speeds, LinkSpeedExtActive and, shifted left by five,
// LinkSpeedExtActive2 (FDR to XDR). infiniband-diags' ibnetdiscover
// (dump_linkspeed_compat, dump_linkspeedext_compat) and cmd/rdma_exporter's
// fabric mode both print these names; "???" is ibnetdiscover's name for a
// value it does not know.
package linkspeed

// Name is the name of LinkSpeedActive s: "SDR", "DDR", "QDR" or "???".
func Name(s uint64) string {
	switch s {
	case 1:
		return "SDR"
	case 2:
		return "DDR"
	case 4:
		return "QDR"
	}
	return "???"
}

// ExtName is the name of the extended speed e: LinkSpeedExtActive's
// "FDR", "EDR", "HDR", "NDR", or 32, LinkSpeedExtActive2's XDR shifted
// into the same bits as the exporter reads it; "???" for any other.
func ExtName(e uint64) string {
	switch e {
	case 1:
		return "FDR"
	case 2:
		return "EDR"
	case 4:
		return "HDR"
	case 8:
		return "NDR"
	case 32:
		return "XDR"
	}
	return "???"
}
