package verbs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli/clitest"
	"github.com/purerdma/rdma/cmd/purerdma/internal/diags"
	"github.com/purerdma/rdma/counters"
)

// diagsRun runs one of the diags tools (ibstat, ibstatus) on the sysfs
// tree at root.
func diagsRun(root string, args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := clitest.Main(diags.Tools(&diags.Env{SysfsRoot: root}), append([]string{"purerdma"}, args...), &out, &errb)
	return out.String(), errb.String(), err
}

// leaves returns every string and number of a decoded JSON value, but
// for the members named in skip (values the text does not print).
func leaves(v any, out *[]string, skip ...string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			skipped := false
			for _, s := range skip {
				skipped = skipped || s == k
			}
			if !skipped {
				leaves(e, out, skip...)
			}
		}
	case []any:
		for _, e := range x {
			leaves(e, out, skip...)
		}
	case string:
		if x != "" {
			*out = append(*out, x)
		}
	case json.Number:
		*out = append(*out, x.String())
	}
}

// Every table tool's --json holds the values its text shows: each string
// and number of the JSON appears in the text of the same run.
func TestJSONHoldsTheTextsValues(t *testing.T) {
	root := "../../../../sysfs/testdata/rxe-6.1"
	env := withCountersOptions(&counters.Options{Sysfs: sysfsAt(t, "../../../../sysfs/testdata/mlx5-eth"), NoNetlink: true, DriverID: abi.RDMA_DRIVER_MLX5})
	for _, tc := range []struct {
		name       string
		text, json func() (string, error)
	}{
		{"ibstat", func() (string, error) { o, _, err := diagsRun(root, "ibstat"); return o, err },
			func() (string, error) { o, _, err := diagsRun(root, "ibstat", "--json"); return o, err }},
		{"ibstat -p", func() (string, error) { o, _, err := diagsRun(root, "ibstat", "-p"); return o, err },
			func() (string, error) { o, _, err := diagsRun(root, "ibstat", "-p", "--json"); return o, err }},
		{"ibstatus", func() (string, error) { o, _, err := diagsRun(root, "ibstatus"); return o, err },
			func() (string, error) { o, _, err := diagsRun(root, "ibstatus", "--json"); return o, err }},
		{"counters", func() (string, error) { o, e, _ := env.runTool("counters", "-d", "mlx5_0"); return o + e, nil },
			func() (string, error) {
				o, e, _ := env.runTool("counters", "-d", "mlx5_0", "--json")
				return o + e, nil
			}},
	} {
		text, err := tc.text()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		js, err := tc.json()
		if err != nil {
			t.Fatalf("%s --json: %v", tc.name, err)
		}
		var v any
		dec := json.NewDecoder(strings.NewReader(js))
		dec.UseNumber() // numbers as the JSON spells them, as the text does
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s --json: %v\n%s", tc.name, err, js)
		}
		var vals []string
		leaves(v, &vals)
		if len(vals) == 0 {
			t.Errorf("%s --json holds nothing", tc.name)
		}
		for _, s := range vals {
			if !strings.Contains(text, s) {
				t.Errorf("%s: %q is in the JSON, not in the text", tc.name, s)
			}
		}
	}
}

// devinfo -v's JSON holds the values its text shows (the rxe0 of Linux
// 6.1); numbers the text prints in hex count as shown.
func TestDevinfoJSONHoldsTheTextsValues(t *testing.T) {
	h := rxeHCA("rxe0", 0xacade8fffe375f42, [4]byte{10, 77, 0, 1})
	var text strings.Builder
	devinfoPrint(&text, h, true)
	b, err := json.Marshal(h.json())
	if err != nil {
		t.Fatal(err)
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	var vals []string
	leaves(v, &vals, "driver") // ibv_devinfo does not print the driver
	for _, s := range vals {
		if strings.Contains(text.String(), s) {
			continue
		}
		// Numbers the text prints in hex (masks, sizes, GUIDs with
		// colons every four digits).
		if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			hex := fmt.Sprintf("%x", n)
			colons := ""
			for i := 0; i < 16; i += 4 {
				if i > 0 {
					colons += ":"
				}
				colons += fmt.Sprintf("%016x", n)[i : i+4]
			}
			if strings.Contains(text.String(), "0x"+hex) || strings.Contains(text.String(), colons) ||
				strings.Contains(text.String(), fmt.Sprintf("0x%08x", n)) || strings.Contains(text.String(), fmt.Sprintf("0x%04x", n)) {
				continue
			}
		}
		t.Errorf("%q is in the JSON, not in the text", s)
	}
}
