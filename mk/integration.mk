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
#                        kernel in INTEGRATION_KERNELS, then the arm64 slice
#                        (integration-arm64); fails if any fails
#   integration-6.1      the VM tests on one kernel (likewise integration-6.12);
#                        the kernels in INTEGRATION_SLICE_KERNELS run a
#                        slice (INTEGRATION_SLICE_ENV): the ping-pong tests
#                        send fewer messages and the perftest interop runs
#                        each tool's two exchanges only
#   integration-full     integration with every kernel's full message counts
#   integration-arm64    the arm64 guest's slice, on ARM64_KERNEL (6.12): the
#                        side-by-side tool checks (devices, devinfo -v,
#                        ibstat, ibstatus), rc_pingpong Go<->C both ways and
#                        rping Go<->C both ways with every byte checked, the
#                        umad round trips, and the rxe data path, plain and
#                        under load; 2 to 3 minutes on 2 cores
#   integration-arm64-all every package's VM tests on the arm64 guest, on each
#                        kernel in ARM64_KERNELS (about 18 minutes a kernel
#                        on 2 loaded cores: not part of make test); tests
#                        that need mock0 or an amd64-only C peer skip,
#                        saying which
#   integration-harness  host-side tests of vmrun itself (they boot VMs)
#   integration-prepare  download and build everything the VMs need
#   vmrun                build vmrun into $(VMRUN)
#   demo                 boot the VM and show the devices and the project's tools
#
# Variables (all may be set by the includer or on the command line):
#   GO                   the go command (default: go)
#   INTEGRATION_KERNELS  kernels to test on (default: 6.1 6.12)
#   VMRUN_FLAGS          extra vmrun flags, e.g. -v
#   INTEGRATION_SLICE_KERNELS  kernels whose VM tests run INTEGRATION_SLICE_ENV's
#                        counts (default: 6.1; empty in integration-full)
#   INTEGRATION_SLICE_ENV  the slice: the ping-pongs (rc, mock0's, UD) 2,000
#                        messages instead of 10,000, rping 200 instead of
#                        1,000, perftest without -a, -D, SRQ, UD and two
#                        QPs (VMRUN_SLICE=1, vmtest.Slice) (make test's
#                        45-minute budget; 6.12 runs the whole)
#   VMRUN_TIMEOUT        limit for one VM run (default: 20m; cmd/purerdma's VM
#                        tests, the MAD loss and rc_pingpong runs among them,
#                        take 2 to 3 minutes under TCG, more on a loaded host)
#   DEMO_KERNEL          kernel for make demo (default: 6.1)
#   ARM64_KERNEL         kernel of the arm64 slice (default: 6.12)
#   ARM64_KERNELS        kernels of integration-arm64-all (default: 6.1 6.12)
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
INTEGRATION_SLICE_KERNELS ?= 6.1
INTEGRATION_SLICE_ENV     ?= -env VMRUN_PP_ITERS=2000 -env VMRUN_RPING_COUNT=200 -env VMRUN_SLICE=1
VMRUN_TIMEOUT       ?= 20m
DEMO_KERNEL         ?= 6.1
ARM64_KERNEL        ?= 6.12
ARM64_KERNELS       ?= 6.1 6.12
VMRUN               := $(INTEGRATION_ROOT)/integration/.cache/bin/vmrun

# Packages whose test files change with the integration tag: listing test
# files with and without the tag and keeping the lines that differ. Only
# those packages cost a VM boot.
INTEGRATION_PKGS = { $(GO) list -e -tags integration -f '{{.ImportPath}}{{range .TestGoFiles}} {{.}}{{end}}{{range .XTestGoFiles}} {{.}}{{end}}' ./... ./cmd/rdma_exporter/... && \
	$(GO) list -e -f '{{.ImportPath}}{{range .TestGoFiles}} {{.}}{{end}}{{range .XTestGoFiles}} {{.}}{{end}}' ./... ./cmd/rdma_exporter/... ; } | \
	sort | uniq -u | cut -d' ' -f1 | sort -u

.PHONY: integration integration-full integration-harness integration-prepare integration-cpeers vmrun demo \
	$(addprefix integration-,$(INTEGRATION_KERNELS)) integration-arm64 integration-arm64-all \
	$(addprefix integration-arm64-,$(ARM64_KERNELS))

integration: integration-harness $(addprefix integration-,$(INTEGRATION_KERNELS)) integration-arm64

integration-full:
	$(MAKE) -f $(firstword $(MAKEFILE_LIST)) integration INTEGRATION_SLICE_KERNELS=

vmrun:
	cd $(INTEGRATION_ROOT) && $(GO) build -o $(VMRUN) ./integration/vmrun

# The project's C test peers (integration/*/build.sh) are built on the host
# against Debian's rdma-core development packages, the same rdma-core 44 the
# guest runs; the VM tests that compare with C need them.
CPEER_DEBS := gcc libibverbs-dev libibumad-dev libibmad-dev librdmacm-dev

integration-cpeers:
	@cd $(INTEGRATION_ROOT) && missing=$$(for p in $(CPEER_DEBS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done) && \
	if [ -n "$$missing" ]; then echo "integration-cpeers: installing" $$missing; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing >/dev/null 2>&1 || \
		{ apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing >/dev/null; }; fi && \
	for b in integration/*/build.sh; do [ -f "$$b" ] || continue; sh "$$b" >/dev/null || exit 1; echo "integration-cpeers: built $$(dirname $$b)"; done

integration-prepare: vmrun
	cd $(INTEGRATION_ROOT) && for k in $(INTEGRATION_KERNELS); do $(VMRUN) -prepare -kernel $$k || exit; done && \
	$(VMRUN) -arch arm64 -prepare -kernel $(ARM64_KERNEL)

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
		-exec '$(VMRUN) -kernel $* -timeout $(VMRUN_TIMEOUT) $(if $(filter $*,$(INTEGRATION_SLICE_KERNELS)),$(INTEGRATION_SLICE_ENV)) $(VMRUN_FLAGS) --' $$pkgs && \
	{ for r in integration/.cache/reports/*-$*.txt; do if [ -f "$$r" ]; then cat "$$r"; fi; done; }

integration-harness: vmrun
	cd $(INTEGRATION_ROOT) && $(VMRUN) -prepare && \
	VMRUN_HARNESS=1 $(GO) test -count=1 ./integration/vmrun/

demo: vmrun integration-cpeers
	@cd $(INTEGRATION_ROOT) && $(VMRUN) -kernel $(DEMO_KERNEL) $(VMRUN_FLAGS) -- sh integration/demo.sh

# The arm64 guest (vmrun -arch arm64): Debian's arm64 kernel and the same
# rdma-core 44 userland built for arm64, under qemu-system-aarch64 -M virt
# (always emulated, TCG), with the tests and the project's commands built
# with GOARCH=arm64. Its C side is rdma-core's own arm64 tools in the image;
# the project's C peers (integration/*/build.sh) and mock0 are amd64 only.
#
# A whole suite on one arm64 kernel takes about 18 minutes on 2 cores at
# load 6 to 9 (6.12: 17.5 minutes besides perf, whose perftest interop
# outran the 20-minute limit and now skips on arm64), too much for make
# test's budget, so make test runs this slice on ARM64_KERNEL
# (integration-arm64) and integration-arm64-all runs everything. The slice
# runs fewer messages than the amd64 runs (ARM64_SLICE_ENV), to fit make
# test's budget on a loaded host; every message is still checked.
# Its whole go test -v output goes to integration/.cache/reports/
# arm64-slice-KERNEL.log; the lines that show what was checked are printed.
ARM64_SLICE_PKGS := ./cmd/purerdma/internal/verbs ./cmd/purerdma/internal/diags ./umad ./uverbs
ARM64_SLICE_RUN  := ^(TestVMDevinfoMatchesRdmaCore|TestVMIbstatMatchesRdmaCore|TestVMRCPingpongGoClientCServer|TestVMRCPingpongCClientGoServer|TestVMRpingGoClientCServer|TestVMRpingCClientGoServer|TestVMRoundTrips|TestVMDataPath|TestVMDataPathLoad)$$
ARM64_SLICE_ENV  := -env VMRUN_PP_ITERS=2000 -env VMRUN_RPING_COUNT=200 -env VMRUN_LOAD_MSGS=20000
ARM64_SLICE_SHOW := ^(=== RUN|--- |ok |FAIL|PASS)|identical|verified|iters in|pings of|round trips|messages each way

integration-arm64: vmrun
	@cd $(INTEGRATION_ROOT) && start=$$(date +%s) && \
	$(VMRUN) -arch arm64 -prepare -kernel $(ARM64_KERNEL) && \
	log=integration/.cache/reports/arm64-slice-$(ARM64_KERNEL).log && mkdir -p integration/.cache/reports && \
	echo "integration-arm64: the arm64 slice on kernel $(ARM64_KERNEL) in:" $(ARM64_SLICE_PKGS) && \
	status=0 && \
	{ CGO_ENABLED=0 GOARCH=arm64 $(GO) test -tags integration -count=1 -timeout 30m -p 1 -v -run '$(ARM64_SLICE_RUN)' \
		-exec '$(VMRUN) -arch arm64 -kernel $(ARM64_KERNEL) -timeout $(VMRUN_TIMEOUT) $(ARM64_SLICE_ENV) $(VMRUN_FLAGS) --' \
		$(ARM64_SLICE_PKGS) > $$log 2>&1 || status=$$?; } && \
	{ grep -E '$(ARM64_SLICE_SHOW)' $$log | cut -c1-160 || true; }; \
	if [ $$status -ne 0 ]; then echo "integration-arm64: FAILED (exit $$status); the end of $$log:"; tail -60 $$log; fi; \
	echo "integration-arm64: arm64 guest, kernel $(ARM64_KERNEL): $$(( $$(date +%s) - start )) s"; \
	exit $$status

integration-arm64-all: $(addprefix integration-arm64-,$(ARM64_KERNELS))

$(addprefix integration-arm64-,$(ARM64_KERNELS)): integration-arm64-%: vmrun
	@cd $(INTEGRATION_ROOT) && start=$$(date +%s) && \
	$(VMRUN) -arch arm64 -prepare -kernel $* && \
	pkgs=$$($(INTEGRATION_PKGS)) && \
	echo "integration-arm64-$*: VM tests on the arm64 guest, kernel $*, in:" $$pkgs && \
	CGO_ENABLED=0 GOARCH=arm64 $(GO) build -o integration/.cache/readme-arm64/ ./examples/... && \
	CGO_ENABLED=0 GOARCH=arm64 $(GO) test -tags integration -count=1 -timeout 45m -p 1 -run '^TestVM' \
		-exec '$(VMRUN) -arch arm64 -kernel $* -timeout $(VMRUN_TIMEOUT) $(VMRUN_FLAGS) --' $$pkgs && \
	echo "integration-arm64-$*: $$(( $$(date +%s) - start )) s"
