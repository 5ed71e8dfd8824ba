# mk/integration.mk: the VM test bed (integration/README.md).
#
# Include it from the top-level Makefile:
#
#	include mk/integration.mk
#
# or run it on its own from anywhere:
#
#	make -f mk/integration.mk integration
#
# Targets:
#   integration          harness tests, then every package's VM tests on each
#                        kernel in INTEGRATION_KERNELS; fails if any fails
#   integration-6.1      the VM tests on one kernel (likewise integration-6.12)
#   integration-harness  host-side tests of vmrun itself (they boot VMs)
#   integration-prepare  download and build everything the VMs need
#   vmrun                build vmrun into $(VMRUN)
#   demo                 boot the VM and show the devices and the project's tools
#
# Variables (all may be set by the includer or on the command line):
#   GO                   the go command (default: go)
#   INTEGRATION_KERNELS  kernels to test on (default: 6.1 6.12)
#   VMRUN_FLAGS          extra vmrun flags, e.g. -v
#   VMRUN_TIMEOUT        limit for one VM run (default: 20m; cmd/purerdma's VM
#                        tests, the MAD loss and rc_pingpong runs among them,
#                        take 2 to 3 minutes under TCG, more on a loaded host)
#   DEMO_KERNEL          kernel for make demo (default: 6.1)
#
# Every target works from the repository root it finds from this file's
# own path, so the includer's current directory does not matter.

INTEGRATION_ROOT := $(patsubst %/mk/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))

# mk/bin/go: the go on PATH when go.mod's go line is met, else the one
# mk/go-bootstrap.sh installs (the top-level Makefile does the same).
export PATH := $(INTEGRATION_ROOT)/mk/bin:$(PATH)

GO                  ?= go
INTEGRATION_KERNELS ?= 6.1 6.12
VMRUN_FLAGS         ?=
VMRUN_TIMEOUT       ?= 20m
DEMO_KERNEL         ?= 6.1
VMRUN               := $(INTEGRATION_ROOT)/integration/.cache/bin/vmrun

# Packages whose test files change with the integration tag: listing test
# files with and without the tag and keeping the lines that differ. Only
# those packages cost a VM boot.
INTEGRATION_PKGS = { $(GO) list -e -tags integration -f '{{.ImportPath}}{{range .TestGoFiles}} {{.}}{{end}}{{range .XTestGoFiles}} {{.}}{{end}}' ./... ./cmd/rdma_exporter/... && \
	$(GO) list -e -f '{{.ImportPath}}{{range .TestGoFiles}} {{.}}{{end}}{{range .XTestGoFiles}} {{.}}{{end}}' ./... ./cmd/rdma_exporter/... ; } | \
	sort | uniq -u | cut -d' ' -f1 | sort -u

.PHONY: integration integration-harness integration-prepare integration-cpeers vmrun demo \
	$(addprefix integration-,$(INTEGRATION_KERNELS))

integration: integration-harness $(addprefix integration-,$(INTEGRATION_KERNELS))

vmrun:
	cd $(INTEGRATION_ROOT) && $(GO) build -o $(VMRUN) ./integration/vmrun

# The project's C test peers (integration/*/build.sh) are built on the host
# against Debian's rdma-core development packages, the same rdma-core 44 the
# guest runs; the VM tests that compare with C need them.
CPEER_DEBS := gcc libibverbs-dev libibumad-dev librdmacm-dev

integration-cpeers:
	@cd $(INTEGRATION_ROOT) && missing=$$(for p in $(CPEER_DEBS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done) && \
	if [ -n "$$missing" ]; then echo "integration-cpeers: installing" $$missing; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing >/dev/null 2>&1 || \
		{ apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing >/dev/null; }; fi && \
	for b in integration/*/build.sh; do [ -f "$$b" ] || continue; sh "$$b" >/dev/null || exit 1; echo "integration-cpeers: built $$(dirname $$b)"; done

integration-prepare: vmrun
	cd $(INTEGRATION_ROOT) && for k in $(INTEGRATION_KERNELS); do $(VMRUN) -prepare -kernel $$k || exit; done

# The README's programs are built into integration/.cache/readme/, where
# the root package's VM test runs them (readme_vm_test.go).
#
# go test runs each package's test binary through vmrun, which boots a VM,
# runs the binary there (in the package's directory, as on the host) and
# exits with its status. Only the VM tests (TestVM*) run in the guest: the
# unit tests ran on the host already, and under TCG they cost a third of a
# package's time. One VM at a time (-p 1): two TCG guests of two vCPUs each
# on a two-core host ran the whole set in 15 minutes on 6.12, one after the
# other in 8.
$(addprefix integration-,$(INTEGRATION_KERNELS)): integration-%: vmrun integration-cpeers
	@cd $(INTEGRATION_ROOT) && $(VMRUN) -prepare -kernel $* && \
	pkgs=$$($(INTEGRATION_PKGS)) && \
	if [ -z "$$pkgs" ]; then echo "integration-$*: no package has integration tests"; exit 0; fi && \
	echo "integration-$*: VM tests on kernel $* in:" $$pkgs && \
	rm -f integration/.cache/reports/*-$*.txt && \
	CGO_ENABLED=0 $(GO) build -o integration/.cache/readme/ ./examples/... && \
	CGO_ENABLED=0 $(GO) test -tags integration -count=1 -timeout 30m -p 1 -run '^TestVM' \
		-exec '$(VMRUN) -kernel $* -timeout $(VMRUN_TIMEOUT) $(VMRUN_FLAGS) --' $$pkgs && \
	{ for r in integration/.cache/reports/*-$*.txt; do if [ -f "$$r" ]; then cat "$$r"; fi; done; }

integration-harness: vmrun
	cd $(INTEGRATION_ROOT) && $(VMRUN) -prepare && \
	VMRUN_HARNESS=1 $(GO) test -count=1 ./integration/vmrun/

demo: vmrun integration-cpeers
	@cd $(INTEGRATION_ROOT) && $(VMRUN) -kernel $(DEMO_KERNEL) $(VMRUN_FLAGS) -- sh integration/demo.sh
