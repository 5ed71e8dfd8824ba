// Package deploycheck holds the tests of the repository's deploy/
// directory: the Kubernetes manifests (the default DaemonSet runs without
// privilege, the flows variant adds only what flows need), the Prometheus
// rules and their promtool unit tests, and the Grafana dashboard (every
// metric name they use is one the exporter or node_exporter's infiniband
// collector exports). It has no code of its own; docs/exporter.md,
// "Deploying", describes the checks.
package deploycheck
