# purerdma — build, test and demo. Everything a fresh Debian machine needs is
# installed by these targets (as root, from Debian's archive and the Go module
# proxy). CONTRIBUTING.md names the two entry points: `make demo` and `make test`.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
# mk/bin comes first: its go (and gofmt) runs the go on PATH when it is as
# new as go.mod's go line, and otherwise the toolchain mk/go-bootstrap.sh
# installs under .cache/go from the Go module proxy, checked against the
# checksum database (CONTRIBUTING.md, "Go, bootstrapped").
export PATH := $(CURDIR)/mk/bin:$(HOME)/go/bin:$(PATH)

GO        ?= go
# Every package of the repository: the library's module and the exporter's
# (cmd/rdma_exporter, a module of its own so that importing the library
# does not bring the Prometheus client into a program's build list; go.work
# joins the two).
PKGS      := ./... ./cmd/rdma_exporter/...
CACHE     := $(CURDIR)/.cache
BIN       := $(CACHE)/bin
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(BIN)/staticcheck
QEMU_ARM64 := /usr/bin/qemu-aarch64-static
# FUZZTIME is an execution count, not a duration: with a duration, Go's fuzz
# coordinator (go1.26 and older) can report "context deadline exceeded" as a
# failure when the deadline fires while a worker is mid-call, with no failing
# input (golang/go#75804, fixed in go1.27). A count has no deadline to race.
# 20000 executions take 2 to 4 s per target on two cores, half of it the
# start (100000 took 5 to 13 s: the 63 targets were 8 of make test's 45
# minutes); FUZZTIME=1000000x or more searches deeper.
FUZZTIME  ?= 20000x
# The commits after this one have subjects of at most 72 characters.
SUBJECTS_SINCE := 36af321

.PHONY: all build test unit bench bench-insn bench-tools bench-exporter perftest-matrix generate generate-check lint api cross test-arm64 test-arm64-all fuzz-smoke deps-apt test-bootstrap clean

all: build

## build: the library and commands, cgo-free, for this machine.
build:
	CGO_ENABLED=0 $(GO) build $(PKGS)

## generate: regenerate abi/ from the Linux 6.12 UAPI headers (downloads them).
generate:
	$(GO) generate ./abi

## generate-check: regenerating abi/ must change nothing.
generate-check: generate
	@if ! git diff --quiet -- abi || [ -n "$$(git status --porcelain -- abi)" ]; then \
		echo "abi/ differs from what 'make generate' produces:"; git status --short -- abi; git diff --stat -- abi; exit 1; \
	fi
	@echo "generate-check: abi/ is up to date"

$(STATICCHECK):
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## lint: go vet and staticcheck, for amd64 and arm64; gofmt; no cgo; the
## exported API as api/purerdma.txt records it; the layering of
## docs/architecture.md (TestLayering: which package may import which, and
## only internal/sys imports golang.org/x/sys/unix); commit subjects of at
## most 72 characters since SUBJECTS_SINCE (the commits before it kept
## their long subjects: history is not rewritten).
lint: $(STATICCHECK)
	$(GO) vet $(PKGS)
	GOARCH=arm64 $(GO) vet $(PKGS)
	$(STATICCHECK) $(PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	@! git grep -l '^import "C"' -- '*.go' | xargs -r grep -L 'go:build ignore' | grep . || { echo "cgo outside generator inputs"; exit 1; }
	$(GO) run ./api/internal/apicheck -check api/purerdma.txt
	$(GO) test -count=1 -run '^TestLayering$$' .
	@git rev-parse -q --verify $(SUBJECTS_SINCE)^{commit} >/dev/null || { echo "lint: commit $(SUBJECTS_SINCE) not in this clone's history: subject lengths not checked"; exit 0; }; \
	long=$$(git log --format=%s $(SUBJECTS_SINCE)..HEAD | awk 'length > 72'); \
	if [ -n "$$long" ]; then echo "commit subjects over 72 characters (details go in the body):"; echo "$$long"; exit 1; fi

## api: rewrite api/purerdma.txt, the file of the exported API, after a
## change to the public surface that is meant.
api:
	$(GO) run ./api/internal/apicheck -w api/purerdma.txt

## cross: cgo-free builds for linux/amd64 and linux/arm64.
cross:
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build $(PKGS)
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(PKGS)

# node_exporter, the release the exporter's names are kept in step with
# (cmd/rdma_exporter/internal/exporter, TestNodeExporterParity), built
# from the Go module proxy (go install does not stamp the version, as the
# release's promu does: -X sets it, which the test checks).
NODE_EXPORTER_VERSION := v1.12.1
NODE_EXPORTER := $(BIN)/node_exporter-$(NODE_EXPORTER_VERSION)
$(NODE_EXPORTER):
	mkdir -p $(BIN)/ne-$(NODE_EXPORTER_VERSION)
	CGO_ENABLED=0 GOBIN=$(BIN)/ne-$(NODE_EXPORTER_VERSION) $(GO) install \
		-ldflags "-X github.com/prometheus/common/version.Version=$(NODE_EXPORTER_VERSION:v%=%)" \
		github.com/prometheus/node_exporter@$(NODE_EXPORTER_VERSION)
	mv $(BIN)/ne-$(NODE_EXPORTER_VERSION)/node_exporter $@

## unit: unit tests on this machine, with the race detector (the
## fabric tests on ibsim among them: deps-apt installs the test bed). The
## exporter's parity test runs the current node_exporter release against
## ours on the same sysfs trees (NODE_EXPORTER).
unit: deps-apt $(NODE_EXPORTER)
	NODE_EXPORTER=$(NODE_EXPORTER) $(GO) test -race -count=1 $(PKGS)

## bench: on this host, the data path's cost and allocations per PostSend,
## PostRecv and Poll and per PD, CQ and QP create+destroy on the fake,
## discovery on synthetic trees of 1 to 1,024 devices, the tools against
## rdma-core's on synthetic sysfs trees (bench-tools) and the 1,052-node
## fabric scan on ibsim (our ibnetdiscover against infiniband-diags', same
## output, the Go/C time ratio logged); then one VM boot per kernel
## (mk/bench-vm.sh): the tools against rdma-core's on the VM's devices
## (ibstat, ibstatus, devices, devinfo [-v], link, perfquery, counters), Go
## against C per uverbs operation (bare ioctl, QueryPort, PD, CQ, QP
## create+destroy), per MAD exchange and per connection set up and torn
## down through the RDMA CM (rdmacm against librdmacm's) in interleaved
## chunks, reads of one counters object by 1 and 4 threads on mock0 (Go
## against libmlx5), rc_pingpong's message rate, Go client against C
## client, and rping's ping rate, a Go pair against a C pair (the VM tests
## that measure take their full rounds: vmtest.Rounds); last bench-insn.
## Logged, never a failure (except an allocation count).
bench: bench-tools bench-exporter vmrun integration-cpeers deps-apt
	$(GO) test -run '^$$' -bench 'PostSend|PostRecv|Poll|Create(PD|CQ|QP)Fake' -benchmem ./uverbs/
	$(GO) test -run '^$$' -bench Discovery -benchmem ./sysfs/
	$(GO) test -count=1 -run '^$$' -bench '^BenchmarkFabricScan1k$$' -benchtime 5x ./cmd/purerdma/internal/diags/ | grep -E 'scan|Benchmark|differ|^(ok|FAIL)'
	for p in uverbs umad rdmacm counters cmd/purerdma/internal/verbs; do \
		CGO_ENABLED=0 $(GO) test -c -tags integration -o $(CACHE)/bench/$$(basename $$p).test ./$$p || exit; \
	done
	@for k in $(INTEGRATION_KERNELS); do \
		$(VMRUN) -kernel $$k -timeout $(VMRUN_TIMEOUT) -- sh mk/bench-vm.sh .cache/bench || true; \
	done
	$(MAKE) bench-insn

## bench-insn: instructions per operation, per tool and per rc_pingpong
## iteration, Go against C, user space and kernel apart: three VM boots per
## kernel, the first two with qemu loading the project's TCG plugin, the
## tool rows in the second, under -icount, and in the third, also under
## -icount, the counters read rate of one and four readers, libmlx5
## against Go, in a guest clock that follows the instructions
## (integration/insncount, mk/bench-insn.sh). Deterministic: a rerun gives
## the per-operation user counts to the instruction, the tool rows
## within 0.3 % and the read rates within 0.5 %
## (docs/performance.md).
bench-insn: vmrun integration-cpeers
	GO=$(GO) mk/bench-insn.sh $(VMRUN) $(INTEGRATION_KERNELS)

## perftest-matrix: the perftest tools' whole interop matrix on both
## kernels: make test runs -a (every size) for two of the eight tools
## only (TestVMPerftestInterop, docs/perftest.md); this runs it for all.
perftest-matrix: vmrun integration-cpeers
	@for k in $(INTEGRATION_KERNELS); do \
		$(VMRUN) -prepare -kernel $$k && \
		CGO_ENABLED=0 $(GO) test -tags integration -count=1 -timeout 60m -p 1 -run '^TestVMPerftestInterop$$' \
			-exec "$(VMRUN) -kernel $$k -timeout 50m -env PURERDMA_PERFTEST_ALL=1 --" ./cmd/purerdma/internal/perf/ || exit; \
	done

## exporter-fabric-compare: the exporter's fabric mode side by side with
## treydock/infiniband_exporter (INFINIBAND_EXPORTER, the path of its
## binary: it is not served by the Go module proxy, so make test cannot
## build it) on a 304-node simulated fabric: the same series, help, types
## and values, the scrape times and the MADs each sends (strace)
## (docs/exporter.md, "Fabric mode").
.PHONY: exporter-fabric-compare
exporter-fabric-compare: deps-apt
	@test -n "$(INFINIBAND_EXPORTER)" || { echo "exporter-fabric-compare: set INFINIBAND_EXPORTER to the infiniband_exporter binary"; exit 2; }
	INFINIBAND_EXPORTER="$(abspath $(INFINIBAND_EXPORTER))" $(GO) test -count=1 -v -timeout 30m \
		-run '^TestFabricCompareInfinibandExporter$$' ./cmd/rdma_exporter/internal/exporter/ | \
		grep -Ev '^=== (RUN|PAUSE|CONT)'

## bench-tools: ibstat (plain, -s, -p) and ibstatus against infiniband-diags'
## on synthetic sysfs trees of BENCH_CAS devices bound over /sys/class in a
## private mount namespace (root): same output, wall ms min/median of
## interleaved runs, system calls per run (strace). Logged, never a failure.
BENCH_CAS ?= 1 16 256
bench-tools: deps-apt
	CGO_ENABLED=0 $(GO) build -o $(CACHE)/bench/purerdma ./cmd/purerdma
	CGO_ENABLED=0 $(GO) build -o $(CACHE)/bench/synthtree ./internal/testmodel/sysfstest/synthtree
	mk/bench-tools.sh $(CACHE)/bench/purerdma $(CACHE)/bench/synthtree $(BENCH_CAS)

## bench-exporter: CPU per scrape and descriptors held, rdma_exporter
## against node_exporter (NODE_EXPORTER_VERSION) on synthetic trees of 64
## and 1,024 mlx5-like devices (mk/bench-exporter.sh). Logged, never a
## failure.
bench-exporter: $(NODE_EXPORTER)
	CGO_ENABLED=0 $(GO) build -o $(CACHE)/bench/rdma_exporter ./cmd/rdma_exporter
	CGO_ENABLED=0 $(GO) build -o $(CACHE)/bench/synthtree ./internal/testmodel/sysfstest/synthtree
	mk/bench-exporter.sh $(CACHE)/bench/rdma_exporter $(NODE_EXPORTER) $(CACHE)/bench/synthtree

# The simulated InfiniBand fabric of the fabric tests (docs/ibsim.md):
# ibsim, libumad2sim to attach OpenSM and the C tools to it, OpenSM, and
# infiniband-diags, the tools ours are compared with.
IBSIM_PKGS := ibsim-utils libumad2sim0 opensm infiniband-diags

# Debian packages the targets need; installed once. promtool, which the
# deploy checks run on deploy/prometheus/ (cmd/rdma_exporter/internal/
# deploycheck), is in Debian 12 only in the Prometheus server's package,
# prometheus (2.42): installed without its recommends (no node exporter),
# but on a host with systemd its service is enabled and started (`systemctl
# disable --now prometheus` if it is not wanted; the tests use promtool
# alone).
deps-apt:
	@missing=""; \
	command -v gcc >/dev/null || missing="$$missing gcc"; \
	[ -x $(QEMU_ARM64) ] || missing="$$missing qemu-user-static"; \
	command -v strace >/dev/null || missing="$$missing strace"; \
	command -v promtool >/dev/null || missing="$$missing prometheus"; \
	for p in $(IBSIM_PKGS); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y --no-install-recommends $$missing >/dev/null 2>&1 || \
		{ apt-get update >/dev/null && apt-get install -y --no-install-recommends $$missing >/dev/null; }; \
	fi

## test-arm64: the unit tests built for linux/arm64 and run under
## qemu-user, with -short: the malformed-sysfs corpus runs every fourth
## tree, the exporter's descriptor test 64 devices and not 1,024, and the
## tests that build binaries with the go command skip, saying so (under
## qemu-user these were about 4 of make test's minutes, now 1.5; amd64
## runs them whole).
## test-arm64-all runs them all.
test-arm64: deps-apt
	@echo "== arm64 unit tests under qemu-user ($(QEMU_ARM64)) =="
	CGO_ENABLED=0 GOARCH=arm64 $(GO) test -count=1 -exec $(QEMU_ARM64) -v -run '^TestArch$$' ./internal/sys | grep -E 'arch|^ok|FAIL'
	CGO_ENABLED=0 GOARCH=arm64 $(GO) test -short -count=1 -exec $(QEMU_ARM64) $(PKGS)

## test-arm64-all: test-arm64 without -short.
test-arm64-all: deps-apt
	CGO_ENABLED=0 GOARCH=arm64 $(GO) test -count=1 -exec $(QEMU_ARM64) $(PKGS)

## fuzz-smoke: every fuzz target for $(FUZZTIME) (a hang fails after 5m).
fuzz-smoke:
	@for pkg in $$($(GO) list $(PKGS)); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== fuzz $$pkg $$f ($(FUZZTIME))"; \
			out=$$($(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -timeout 5m $$pkg 2>&1) || { echo "$$out"; exit 1; }; \
			echo "$$out" | tail -1; \
		done; \
	done

## test-bootstrap: `make build` in a copy of the tree whose PATH has no Go:
## the Makefile installs Go from the module proxy (the download is kept in
## .cache/go/dl and checked again each time).
test-bootstrap:
	PURERDMA_BOOTSTRAP_TEST=1 $(GO) test -count=1 -v -run '^TestMakeBuildWithoutGo$$' ./mk/

## test: everything — generate check, lint, unit tests on amd64 and arm64
## (qemu-user), fuzz smoke, the VM tests on both kernels (on 6.1 with fewer
## ping-pong messages; integration-full runs both at full counts), and a
## slice of them on an arm64 guest (integration-arm64, about 2 to 3
## minutes; the whole arm64 suite is integration-arm64-all, about 18
## minutes a kernel).
test: deps-apt generate-check lint cross unit test-arm64 fuzz-smoke test-bootstrap integration
	@echo "make test: all passed"

clean:
	rm -rf $(CACHE) integration/.cache

# The Soft-RoCE VM: `integration` (VM tests on Linux 6.1 and 6.12) and
# `demo`.
include mk/integration.mk
