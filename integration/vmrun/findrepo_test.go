package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFindRepo: a package of a nested module (the exporter's, with a
// go.mod of its own) finds the library's root, as the library's packages
// do.
func TestFindRepo(t *testing.T) {
	root := t.TempDir()
	nested := filepath.Join(root, "cmd", "rdma_exporter", "internal", "exporter")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	for dir, mod := range map[string]string{
		root: "module " + repoModule + "\n\ngo 1.24\n",
		filepath.Join(root, "cmd", "rdma_exporter"): "module " + repoModule + "/cmd/rdma_exporter\n\ngo 1.24\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{root, filepath.Join(root, "uverbs"), nested} {
		got, err := findRepo(dir)
		if err != nil || got != root {
			t.Errorf("findRepo(%s) = %q, %v; want %s", dir, got, err, root)
		}
	}
}
