package rdma_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadme checks the README against examples/, which `go build ./...`
// and `go vet ./...` compile: its Go block is the quick start's file, so
// the first program cannot drift from the API, and every program under
// examples/ is linked from the README by a path that exists.
func TestReadme(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	var blocks []string
	for _, part := range strings.Split(readme, "```go\n")[1:] {
		blocks = append(blocks, part[:strings.Index(part, "```")])
	}
	shown := []string{"examples/quickstart/main.go"}
	if len(blocks) != len(shown) {
		t.Errorf("README has %d Go blocks, want %d (%v)", len(blocks), len(shown), shown)
	}
	for i, f := range shown {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(blocks) || blocks[i] != string(src) {
			t.Errorf("README's Go block %d is not %s", i+1, f)
		}
	}

	linked := map[string]bool{}
	for _, m := range regexp.MustCompile(`\]\((examples/[^)]+)\)`).FindAllStringSubmatch(readme, -1) {
		if _, err := os.Stat(m[1]); err != nil {
			t.Errorf("README links %s: %v", m[1], err)
		}
		linked[m[1]] = true
	}
	progs, err := filepath.Glob("examples/*/main.go")
	if err != nil || len(progs) == 0 {
		t.Fatalf("no programs under examples/: %v", err)
	}
	for _, p := range progs {
		if !linked[p] {
			t.Errorf("README does not link %s", p)
		}
	}
}
