#!/bin/sh
# bench-insn.sh VMRUN KERNEL...: make bench's instruction counts. Builds the
# qemu TCG plugin integration/insncount/insnmark.c and the programs the
# guest runs, boots each kernel three times (a qemu-system-x86_64
# wrapper first on PATH: vmrun finds qemu there), the first two with qemu
# loading the plugin (the tool rows in the second, under -icount), the
# third under -icount alone (the counters read rate, below), runs
# integration/insncount/guest.sh in the guest and prints the tables of
# integration/insncount/report: per operation, per tool, per rc_pingpong
# iteration, per counters read with four readers at once, Go against C.
# The samples and tables stay in integration/.cache/insncount/
# (samples-K.txt, report-K.txt; the read rate in rate-K.txt).
#
# INSN_ARGS="N REPS PPREPS [OP]" are guest.sh's (40 41 5; OP samples goops's
# operation OP alone, for a profile; OP perop runs the per-operation rows
# alone; OP tool-ARGS runs purerdma ARGS (commas for spaces) once, for a
# profile of a tool; OP run-PROG,ARGS runs PROG the same way, a program
# in integration/.cache/insncount (minigo) or a guest's C tool; OP pp-c
# or pp-go runs one rc_pingpong client of N iterations; OP rate runs
# counters' read rate alone); with OP, one boot, under -icount for tool-,
# run- and rate. INSN_PROF=1
# also writes profiles of the windows (prof-K.txt, kprof-K.txt; the
# global ones on CPU 1 too) and lists the Go program's functions (goops's;
# purerdma's for pp-go and tool-, PROG's for run-) by user-space
# instructions, and the kernel's by kernel instructions.
set -eu
vmrun=$1
shift
GO=${GO:-go}
out=$(pwd)/integration/.cache/insncount
sh integration/insncount/build.sh >/dev/null
# The Go programs are built without Go 1.26's randomized heap base, as the
# tool boot runs every program without ASLR (norandmaps, below): with it,
# the runtime reserves its heap at a random address each run, and the page
# allocator's first searches cost 0 to 80 k user instructions more, at
# random (runtime.(*pageAlloc).find), which moved the minimal Go program's
# user count by 8 k to 100 k from run to run (docs/performance.md).
exp=${GOEXPERIMENT:+$GOEXPERIMENT,}norandomizedheapbase64
GOEXPERIMENT=$exp $GO env GOEXPERIMENT >/dev/null 2>&1 || exp=${GOEXPERIMENT:-} # before Go 1.26
GOEXPERIMENT=$exp CGO_ENABLED=0 $GO build -o "$out/goops" ./integration/insncount/goops
GOEXPERIMENT=$exp CGO_ENABLED=0 $GO build -o "$out/minigo" ./integration/insncount/minigo
GOEXPERIMENT=$exp CGO_ENABLED=0 $GO build -o "$out/purerdma" ./cmd/purerdma
CGO_ENABLED=0 $GO test -c -tags integration -o "$out/counters.test" ./counters
$GO build -o "$out/report" ./integration/insncount/report
qemu=$(command -v qemu-system-x86_64 || true)
if [ -z "$qemu" ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends qemu-system-x86 >/dev/null
	qemu=$(command -v qemu-system-x86_64)
fi
# The tool rows run in a boot of their own under -icount shift=0: the
# guest's clock advances 1 ns per instruction executed, not with the
# host's clock. Under plain TCG the guest runs 10-50 times slower per
# instruction than hardware while its clock keeps the host's time, so a
# timer of the guest fires after fewer of its instructions the slower the
# emulator goes (a busy host, a cold translation cache): the Go runtime's
# sysmon, which polls every 20 us while a program runs, woke 50 to 500
# times in one tool's run and made the Go rows move by 0.2 from one boot
# to the next. Tied to the instructions, its wake-ups come every 20,000 of
# them, whatever the host does (docs/performance.md). The other rows keep
# plain TCG: under -icount the vCPUs run in turns on one host thread, so a
# thread that spins waiting for the other CPU (the runtime's spinning Ms,
# perftest's busy poll) spins for its whole turn, which two CPUs at once
# never do. Debian 12's qemu 7.2 hangs Linux 6.1's boot-time bring-up of
# the second CPU under -icount ("x86: Booting SMP configuration"), while
# bringing it online later works: an -icount boot has maxcpus=1, whatever
# the kernel, and guest.sh brings the other CPUs online first.
# INSN_ICOUNT= (empty) runs the tool rows without -icount too.
#
# A third boot, under -icount with every CPU and no isolation, runs
# counters' TestVMReadRate (libmlx5's threads against goroutines reading
# one object on mock0, as make bench's plain TCG run does): there a
# second of the guest's clock is 10^9 instructions over both CPUs, so the
# reads a second are the inverse of all the instructions a read costs,
# the threads' scheduling and the runtime's sysmon included, and repeat
# from boot to boot. Under plain TCG a read's system call lasts tens of
# us of the guest's clock, long enough for sysmon to hand the
# goroutine's P off; under -icount it lasts what its instructions do.
#
# The tool boot also keeps CPU 1, where the tools run, to them:
# norandmaps lays every run's mappings out alike (with ASLR, ld.so puts a
# C tool's libraries at a random page, and how many 64 KiB fault-around
# windows and page tables a run touches moved /bin/true by 10 % and
# pqroce by 2 %, run to run), isolcpus=1 keeps the scheduler's load
# balancing and unbound kworkers off it, rcu_nocbs=1 runs its RCU
# callbacks (the frees of earlier runs) on CPU 0's kthreads, and
# irqaffinity=0 sends the devices' interrupts to CPU 0. With them,
# /bin/true's runs are within 1.4 % of each other (10 % without), and
# pqroce's within 0.9 %; the C tools' user counts repeat to the
# instruction.
icount=${INSN_ICOUNT-shift=0}
tooliso="norandmaps isolcpus=1 rcu_nocbs=1 irqaffinity=0"
mkdir -p "$out/wrap"
cat >"$out/wrap/qemu-system-x86_64" <<WRAP
#!/bin/sh
# vmrun's qemu, with the plugin \$INSNMARK_PLUGIN (none when empty),
# -icount \$INSNMARK_ICOUNT and \$INSNMARK_APPEND on the kernel's
# command line
for a in "\$@"; do
	case "\$a" in console=*) a="\$a\${INSNMARK_APPEND:+ \$INSNMARK_APPEND}" ;; esac
	set -- "\$@" "\$a"
	shift
done
exec "$qemu" \${INSNMARK_ICOUNT:+-icount \$INSNMARK_ICOUNT} \${INSNMARK_PLUGIN:+-plugin "\$INSNMARK_PLUGIN"} "\$@"
WRAP
chmod +x "$out/wrap/qemu-system-x86_64"
# boot KIND ARGS...: guest.sh ARGS in a boot of kernel $k, the samples to
# $plugin; for KIND tools with CPU 1 kept to the tools and, under
# -icount, one CPU at boot; for KIND rate without the plugin, which would
# count nothing there (the rate is in the guest's time) but cost the host
# its callback on every instruction
boot() {
	ic= app= pl=$plugin
	case $1 in
	tools)
		app=$tooliso
		[ -n "$icount" ] && ic=$icount app="maxcpus=1 $tooliso"
		;;
	rate)
		pl=
		[ -n "$icount" ] && ic=$icount app="maxcpus=1"
		;;
	esac
	shift
	echo "==== instruction counts, Linux $k (qemu TCG${pl:+ with the insnmark plugin}${ic:+, -icount $ic})"
	PATH="$out/wrap:$PATH" INSNMARK_PLUGIN="$pl" INSNMARK_ICOUNT="$ic" INSNMARK_APPEND="$app" "$vmrun" -kernel "$k" -timeout 40m -- \
		sh integration/insncount/guest.sh integration/.cache/insncount "$@" || echo "bench-insn: the guest run failed ($?)"
}
for k in "$@"; do
	rm -f "$out/samples-$k.txt" "$out/prof-$k.txt" "$out/kprof-$k.txt" "$out/kallsyms.txt"
	plugin="$out/libinsnmark.so,out=$out/samples-$k.txt"
	[ "${INSN_PROF:-}" = 1 ] && plugin="$plugin,prof=$out/prof-$k.txt,kprof=$out/kprof-$k.txt,gprof=1"
	# shellcheck disable=SC2086 # INSN_ARGS is words
	set -- ${INSN_ARGS:-}
	case "${4:-}" in
	"")
		# the plugin appends both boots' samples to one file
		boot other "${1:-40}" "${2:-41}" "${3:-5}" notools
		boot tools "${1:-40}" "${2:-41}" "${3:-5}" tools
		boot rate "${1:-40}" "${2:-41}" "${3:-5}" rate | tee "$out/rate-$k.txt"
		;;
	tool-* | run-* | tools) boot tools "$@" ;;
	rate) boot rate "$@" | tee "$out/rate-$k.txt" ;;
	*) boot other "$@" ;;
	esac
	[ "${4:-}" = rate ] && continue
	"$out/report" "$out/samples-$k.txt" | tee "$out/report-$k.txt"
	if [ "${INSN_PROF:-}" = 1 ]; then
		bin=$out/goops
		case "${INSN_ARGS:-}" in
		*pp-go* | *tool-*) bin=$out/purerdma ;;
		*run-*)
			# a program of $out; a guest's C tool's functions go unnamed
			bin=${INSN_ARGS##*run-}
			bin=$out/${bin%%,*}
			;;
		esac
		if [ -x "$bin" ]; then
			echo "== user space, by function of $bin"
			"$out/report" -prof "$out/prof-$k.txt" -bin "$bin"
		fi
		if [ -s "$out/kallsyms.txt" ]; then
			echo "== kernel, by function"
			"$out/report" -prof "$out/kprof-$k.txt" -kallsyms "$out/kallsyms.txt"
		fi
	fi
done
