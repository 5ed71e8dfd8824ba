package deploycheck

import (
	"os"
	"path/filepath"
	"testing"
)

// The repository's root, from this package's directory.
const root = "../../../.."

const (
	rulesFile     = "deploy/prometheus/rdma.rules.yml"
	rulesTestFile = "deploy/prometheus/rdma.rules.test.yml"
	dashboardFile = "deploy/grafana/rdma-ports.json"
	exporterDoc   = "docs/exporter.md"
)

func path(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }

func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(path(rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
