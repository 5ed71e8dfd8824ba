package cli

import (
	"syscall"
	"testing"
)

func TestStrerror(t *testing.T) {
	for e, want := range map[int]string{0: "Success", 2: "No such file or directory", 19: "No such device", 13: "Permission denied"} {
		if got := Strerror(syscall.Errno(e)); got != want {
			t.Errorf("strerror(%d) = %q, want %q", e, got, want)
		}
	}
}
