package rdma_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadme checks that the README's Go programs are the files under
// internal/readme, which `go build ./...` and `go vet ./...` compile: the
// quick start, the counters example and the connection manager's cannot
// drift from the API.
func TestReadme(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, part := range strings.Split(string(b), "```go\n")[1:] {
		blocks = append(blocks, part[:strings.Index(part, "```")])
	}
	for i, f := range []string{"internal/readme/quickstart/main.go", "internal/readme/flowcount/main.go", "internal/readme/cmsend/main.go"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(blocks) || blocks[i] != string(src) {
			t.Errorf("README's Go block %d is not %s", i+1, f)
		}
	}
}
