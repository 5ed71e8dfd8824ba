module github.com/purerdma/rdma/cmd/rdma_exporter

go 1.24.0

// Until a release of github.com/purerdma/rdma is tagged, the exporter is
// built from the library in this repository. A separate module keeps the
// Prometheus client out of the build list of programs that import the
// library.
replace github.com/purerdma/rdma => ../..

require (
	github.com/alecthomas/kingpin/v2 v2.4.0
	github.com/coreos/go-systemd/v22 v22.6.0
	github.com/mdlayher/vsock v1.2.1
	github.com/prometheus/client_golang v1.23.2
	github.com/prometheus/client_model v0.6.2
	github.com/prometheus/common v0.67.4
	github.com/prometheus/exporter-toolkit v0.15.1
	github.com/purerdma/rdma v0.0.0-00010101000000-000000000000
	github.com/vishvananda/netlink v1.3.1
	go.yaml.in/yaml/v2 v2.4.3
	golang.org/x/crypto v0.46.0
)

require (
	github.com/alecthomas/units v0.0.0-20240927000941-0f3dac36c52b // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jpillora/backoff v1.0.0 // indirect
	github.com/kylelemons/godebug v1.1.0 // indirect
	github.com/mdlayher/socket v0.4.1 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/mwitkow/go-conntrack v0.0.0-20190716064945-2f068394615f // indirect
	github.com/prometheus/procfs v0.16.1 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
	github.com/xhit/go-str2duration/v2 v2.1.0 // indirect
	golang.org/x/net v0.47.0 // indirect
	golang.org/x/oauth2 v0.32.0 // indirect
	golang.org/x/sync v0.19.0 // indirect
	golang.org/x/sys v0.39.0 // indirect
	golang.org/x/text v0.32.0 // indirect
	golang.org/x/time v0.14.0 // indirect
	google.golang.org/protobuf v1.36.10 // indirect
)
