// Package integration holds the project's real-kernel test bed: vmrun
// (./vmrun) boots Debian's stock 6.1 or 6.12 kernel under qemu with two
// Soft-RoCE devices, rxe0 and rxe1, and runs commands or test binaries in
// the guest; vmtest (./vmtest) has helpers for the tests that run there.
//
// The tests in this package (build tag "integration") check the test bed
// itself from inside the guest: the devices, their character devices and
// ABI versions, traffic between rxe0 and rxe1. See README.md for how it
// works and how to add a VM test.
package integration
