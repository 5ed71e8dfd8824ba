package verbs

// devices: rdma-core's ibv_devices (libibverbs/examples/device_list.c,
// rdma-core 44) through package uverbs, text for text, plus --json.

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/uverbs"
)

type deviceJSON struct {
	Device     string `json:"device"`
	NodeGUID   string `json:"node_guid"`
	Node       string `json:"uverbs_node"`
	Path       string `json:"path"`
	Driver     string `json:"driver"`
	DriverID   uint32 `json:"driver_id"`
	ABIVersion int    `json:"abi_version"`
	NodeType   string `json:"node_type"`
	Transport  string `json:"transport"`
}

func (env *Env) runDevices(args []string, stdout, stderr io.Writer) error {
	asJSON := false
	for _, a := range args {
		switch a {
		case "--json":
			asJSON = true
		case "-h", "--help":
			fmt.Fprintln(stdout, "Usage: ibv_devices [--json]\n\nLike rdma-core's ibv_devices: each RDMA device with a uverbs node and its node GUID.")
			return nil
		}
		// ibv_devices ignores its arguments.
	}
	devs, err := uverbs.Devices(env.Uverbs)
	if err != nil {
		fmt.Fprintf(stderr, "Failed to get IB devices list: %v\n", err)
		return cli.ExitError{Code: 1}
	}
	if asJSON {
		out := make([]deviceJSON, 0, len(devs))
		for _, d := range devs {
			out = append(out, deviceJSON{
				Device: d.Name, NodeGUID: fmt.Sprintf("%016x", d.NodeGUID), Node: d.Node, Path: d.Path,
				Driver: d.DriverID.String(), DriverID: uint32(d.DriverID), ABIVersion: d.ABIVersion,
				NodeType: d.NodeType.String(), Transport: d.Transport().String(),
			})
		}
		e := json.NewEncoder(stdout)
		e.SetIndent("", "  ")
		return e.Encode(out)
	}
	printDevices(stdout, devs)
	return nil
}

func printDevices(w io.Writer, devs []uverbs.Device) {
	fmt.Fprintf(w, "    %-16s\t   node GUID\n", "device")
	fmt.Fprintf(w, "    %-16s\t----------------\n", "------")
	for _, d := range devs {
		fmt.Fprintf(w, "    %-16s\t%016x\n", d.Name, d.NodeGUID)
	}
}
