// Package vmproto is the contract between the vmrun host program and the
// init it puts into the guest: the job description the host writes, the
// names of the virtio devices that connect the two, and the control
// messages the guest sends back.
//
// The host shares a per-run directory into the guest over 9p (tag [JobTag]);
// it holds [JobFile], a JSON [Job]. The guest's init writes the command's
// standard output and standard error to the virtio-serial ports
// [PortStdout] and [PortStderr], and reports progress and the exit status
// as text lines on [PortControl] (see [Ready], [Exit] and [Error]).
package vmproto

import (
	"fmt"
	"strconv"
	"strings"
)

const (
	// JobTag is the 9p mount tag of the per-run job directory.
	JobTag = "vmrun.job"
	// JobMount is where the guest mounts the job directory.
	JobMount = "/run/vmrun/job"
	// JobFile is the name of the job description inside the job directory.
	JobFile = "job.json"

	// PortStdout, PortStderr and PortControl name the virtio-serial ports.
	PortStdout  = "vmrun.stdout"
	PortStderr  = "vmrun.stderr"
	PortControl = "vmrun.ctl"

	// ModulesFile lists, one a line and in load order, the kernel modules
	// the init loads (paths relative to /lib/modules/RELEASE).
	ModulesFile = "/etc/vmrun/modules"
	// ReleaseFile holds the kernel release the image was built for.
	ReleaseFile = "/etc/vmrun/release"
	// MockModule is the test-only kernel module of integration/mockrdma,
	// built for the image's kernel. The init loads it after the rxe
	// devices are up, bound to MockNetDev, unless the job says not to.
	MockModule = "/lib/vmrun/mockrdma.ko"
	// MockDev is the device the module registers; MockNetDev its netdev.
	MockDev    = "mock0"
	MockNetDev = "veth1"
	// MockDebugfs is the module's debugfs directory for MockDev: its
	// "requests" file is the device's record of the driver calls it
	// received (write to clear), "flows" lists the live flows.
	MockDebugfs = "/sys/kernel/debug/mockrdma/mock0"

	// EnvGuest is set to "1" in the environment of every command run in the
	// guest; EnvKernel holds the -kernel label (e.g. "6.1"); EnvRepo holds
	// the repository root, mounted at the same path as on the host.
	EnvGuest  = "VMRUN_GUEST"
	EnvKernel = "VMRUN_KERNEL"
	EnvRepo   = "VMRUN_REPO"

	// GuestUID and GuestGID are the ids of the unprivileged user that
	// Job.User names.
	GuestUID = 1000
	GuestGID = 1000
)

// Soft-RoCE topology the init creates: a veth pair, one rxe device on each
// end. The MAC addresses are fixed, so the node GUIDs and GID 0 (derived
// from them) are the same on every boot, which golden tests rely on.
var (
	NetDevs  = [2]string{"veth0", "veth1"}
	RDMADevs = [2]string{"rxe0", "rxe1"}
	Addrs    = [2]string{"10.77.0.1", "10.77.0.2"}
	MACs     = [2]string{"52:54:00:12:34:01", "52:54:00:12:34:02"}
)

// Share is a host directory exported to the guest over 9p.
type Share struct {
	Tag      string // 9p mount tag
	Path     string // mount point in the guest (the host path for the repository)
	ReadOnly bool
}

// Job is what the guest runs.
type Job struct {
	Kernel string   // -kernel label, exported as EnvKernel
	Repo   string   // repository root, exported as EnvRepo
	Args   []string // command and arguments; empty with Shell
	Dir    string   // working directory in the guest
	Env    []string // extra NAME=VALUE entries
	User   string   // run as this unprivileged user when not empty
	Shell  bool     // interactive shell on the serial console
	Path   []string // directories put first on PATH
	Shares []Share  // mounted before the command runs
	NoMock bool     // do not load MockModule
	// MockParams are extra module parameters for MockModule
	// ("dyn_uar=0 steal=0"); netdev= is always MockNetDev.
	MockParams string
	Term       string // TERM for the shell
	Rows       uint16 // terminal size for the shell, 0 if unknown
	Cols       uint16
}

// Control messages, one a line on PortControl.
const (
	msgReady = "ready"
	msgExit  = "exit"
	msgError = "error"
)

// Ready says the devices are up and the command is about to start; uptime
// is the guest's /proc/uptime in seconds.
func Ready(uptime float64) string { return fmt.Sprintf("%s %.2f\n", msgReady, uptime) }

// Exit reports the command's exit status.
func Exit(code int) string { return fmt.Sprintf("%s %d\n", msgExit, code) }

// Error reports that the guest could not set up or start the command.
func Error(err error) string {
	return msgError + " " + strings.ReplaceAll(err.Error(), "\n", "; ") + "\n"
}

// Message is a parsed control line.
type Message struct {
	Kind   string  // "ready", "exit" or "error"
	Uptime float64 // for ready
	Code   int     // for exit
	Text   string  // for error
}

// Parse reads one control line (without its newline).
func Parse(line string) (Message, error) {
	kind, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	m := Message{Kind: kind}
	var err error
	switch kind {
	case msgReady:
		m.Uptime, err = strconv.ParseFloat(rest, 64)
	case msgExit:
		m.Code, err = strconv.Atoi(rest)
	case msgError:
		m.Text = rest
	default:
		err = fmt.Errorf("unknown control message %q", line)
	}
	return m, err
}
