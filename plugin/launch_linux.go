package plugin

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// setProcAttr makes the kernel SIGKILL the plugin when the thread that
// started it dies, so a crashed host leaves no plugin behind. Go keeps that
// thread alive unless it is a locked thread whose goroutine exits, which the
// launch path never does. The plugin leads its own process group, so a
// signal meant for the host's group does not reach it, and killGroup can
// stop whatever it started before its handshake.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// execFD returns the name by which a child executes f once f is its
// descriptor n: its /proc/self/fd link, which the kernel resolves to the
// open file itself, so a file renamed over f's path after it was verified
// is not what runs. "" for a nil f.
func execFD(f *os.File, n int) string {
	if f == nil {
		return ""
	}
	return "/proc/self/fd/" + strconv.Itoa(n)
}

// setUnshare starts the process in the namespaces flags names (after
// setProcAttr).
func setUnshare(cmd *exec.Cmd, flags uintptr) {
	cmd.SysProcAttr.Unshareflags = flags
}

// killGroup SIGKILLs the plugin's process group (a no-op before start).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 0 {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// pfExiting is the kernel's PF_EXITING task flag: the process is in exit.
const pfExiting = 0x4

// exiting reports whether pid is a zombie or already exiting: field 9 of
// /proc/<pid>/stat (flags) carries PF_EXITING from the start of the exit,
// before the process closes its files.
func exiting(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 7 {
		return false
	}
	if f[0] == "Z" || f[0] == "X" {
		return true
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	return err == nil && flags&pfExiting != 0
}

// unread returns how many bytes pipe f holds that no one has read yet
// (FIONREAD, which Linux names TIOCINQ); 0 when it cannot tell.
func unread(f *os.File) int {
	sc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = sc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
	return n
}
