//go:build integration

// Package failing has one VM test that always fails; vmrun's harness test
// runs it through go test -exec to prove that a failing guest test fails
// the run.
package failing

import (
	"os"
	"testing"
)

func TestFailsInGuest(t *testing.T) {
	if os.Getenv("VMRUN_GUEST") != "1" {
		t.Fatal("not in the vmrun guest")
	}
	t.Fatal("this test fails on purpose, in the guest")
}
