# guest-run.sh, sourced by make bench's guest scripts (mk/bench-vm.sh,
# integration/insncount/guest.sh): POSIX sh, for the guest's busybox.
#
# run PKG BINARY TEST FILTER: one VM test, TEST of package PKG's test
# binary $dir/BINARY (go test -c -tags integration), run in $root/PKG as
# go test would run it, keeping the lines FILTER (grep -E) matches, the
# test's indentation taken off. $root is the repository, $dir the
# binaries' directory.
run() {
	(cd "$root/$1" && "$dir/$2" -test.run "^$3\$" -test.v -test.count=1 2>&1) | grep -E "$4" | sed 's/^        //'
}
