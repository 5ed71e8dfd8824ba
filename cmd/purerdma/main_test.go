package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestDispatch(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run([]string{"purerdma", "version"}, &out, &errb); err != nil || !strings.HasPrefix(out.String(), "purerdma ") {
		t.Fatalf("subcommand: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := run([]string{"/usr/local/bin/version"}, &out, &errb); err != nil || !strings.HasPrefix(out.String(), "purerdma ") {
		t.Fatalf("symlink: %q, %v", out.String(), err)
	}
	var ee exitError
	if err := run([]string{"purerdma", "no-such-tool"}, &out, &errb); !errors.As(err, &ee) || ee.code != 2 {
		t.Fatalf("unknown tool: %v", err)
	}
	if err := run([]string{"purerdma"}, &out, &errb); !errors.As(err, &ee) {
		t.Fatalf("no tool: %v", err)
	}
	out.Reset()
	if err := run([]string{"purerdma", "help"}, &out, &errb); err != nil || !strings.Contains(out.String(), "version") {
		t.Fatalf("help: %q, %v", out.String(), err)
	}
}
