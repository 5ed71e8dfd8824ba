package abi

// The kernel ABI files ztypes_linux.go, zconsts_linux.go and
// zlayout_linux_test.go are generated from the Linux UAPI headers by
// internal/genabi, which downloads the pinned headers into .cache/ at the
// repository root on first use. See internal/genabi/README.md.
//go:generate go run ./internal/genabi
