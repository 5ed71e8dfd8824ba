package linkspeed

import "testing"

func TestNames(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{Name(1), "SDR"}, {Name(2), "DDR"}, {Name(4), "QDR"}, {Name(0), "???"}, {Name(3), "???"}, {Name(8), "???"},
		{ExtName(1), "FDR"}, {ExtName(2), "EDR"}, {ExtName(4), "HDR"}, {ExtName(8), "NDR"}, {ExtName(32), "XDR"},
		{ExtName(0), "???"}, {ExtName(16), "???"}, {ExtName(3), "???"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
