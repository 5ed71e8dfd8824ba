#!/bin/sh
# bench-insn.sh VMRUN KERNEL...: make bench's instruction counts. Builds the
# qemu TCG plugin integration/insncount/insnmark.c and the programs the
# guest runs, boots each kernel once with qemu loading the plugin (a
# qemu-system-x86_64 wrapper first on PATH: vmrun finds qemu there), runs
# integration/insncount/guest.sh in the guest and prints the tables of
# integration/insncount/report: per operation, per tool, per rc_pingpong
# iteration, per counters read with four readers at once, Go against C. The samples and tables stay in
# integration/.cache/insncount/ (samples-K.txt, report-K.txt).
#
# INSN_ARGS="N REPS PPREPS [OP]" are guest.sh's (40 5 3; OP samples goops's
# operation OP alone, for a profile; OP perop runs the per-operation rows
# alone; OP tool-ARGS runs purerdma ARGS (commas for spaces) once, for a
# profile of a tool; OP run-PROG,ARGS runs PROG the same way, a program
# in integration/.cache/insncount (minigo) or a guest's C tool; OP pp-c
# or pp-go runs one rc_pingpong client of N iterations). INSN_PROF=1
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
CGO_ENABLED=0 $GO build -o "$out/goops" ./integration/insncount/goops
CGO_ENABLED=0 $GO build -o "$out/minigo" ./integration/insncount/minigo
CGO_ENABLED=0 $GO build -o "$out/purerdma" ./cmd/purerdma
$GO build -o "$out/report" ./integration/insncount/report
qemu=$(command -v qemu-system-x86_64 || true)
if [ -z "$qemu" ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends qemu-system-x86 >/dev/null
	qemu=$(command -v qemu-system-x86_64)
fi
mkdir -p "$out/wrap"
cat >"$out/wrap/qemu-system-x86_64" <<WRAP
#!/bin/sh
exec "$qemu" -plugin "\$INSNMARK_PLUGIN" "\$@"
WRAP
chmod +x "$out/wrap/qemu-system-x86_64"
for k in "$@"; do
	rm -f "$out/samples-$k.txt" "$out/prof-$k.txt" "$out/kprof-$k.txt" "$out/kallsyms.txt"
	plugin="$out/libinsnmark.so,out=$out/samples-$k.txt"
	[ "${INSN_PROF:-}" = 1 ] && plugin="$plugin,prof=$out/prof-$k.txt,kprof=$out/kprof-$k.txt,gprof=1"
	echo "==== instruction counts, Linux $k (qemu TCG with the insnmark plugin)"
	PATH="$out/wrap:$PATH" INSNMARK_PLUGIN="$plugin" "$vmrun" -kernel "$k" -timeout 40m -- \
		sh integration/insncount/guest.sh integration/.cache/insncount ${INSN_ARGS:-} || echo "bench-insn: the guest run failed ($?)"
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
