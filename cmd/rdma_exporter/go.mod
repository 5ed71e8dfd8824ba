module github.com/purerdma/rdma/cmd/rdma_exporter

go 1.24

// Until a release of github.com/purerdma/rdma is tagged, the exporter is
// built from the library in this repository. A separate module keeps the
// Prometheus client out of the build list of programs that import the
// library.
replace github.com/purerdma/rdma => ../..

require (
	github.com/alecthomas/kingpin/v2 v2.4.0
	github.com/prometheus/client_golang v1.23.2
	github.com/prometheus/client_model v0.6.2
	github.com/prometheus/common v0.66.1
	github.com/purerdma/rdma v0.0.0-00010101000000-000000000000
	github.com/vishvananda/netlink v1.3.1
)

require (
	github.com/alecthomas/units v0.0.0-20211218093645-b94a6e3cc137 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/kylelemons/godebug v1.1.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/procfs v0.16.1 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
	github.com/xhit/go-str2duration/v2 v2.1.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/sys v0.35.0 // indirect
	google.golang.org/protobuf v1.36.8 // indirect
)
