package rdma_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadme checks that the README's Go programs are the files under
// examples, which `go build ./...` and `go vet ./...` compile: the
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
	for i, f := range []string{"examples/quickstart/main.go", "examples/flowcount/main.go", "examples/cmsend/main.go"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(blocks) || blocks[i] != string(src) {
			t.Errorf("README's Go block %d is not %s", i+1, f)
		}
	}
}
