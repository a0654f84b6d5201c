package confine

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ipprotoMPTCP is IPPROTO_MPTCP: a Multipath TCP socket, which Landlock's
// TCP rules do not cover (up to ABI 7 at least).
const ipprotoMPTCP = 262

// auditArch is the seccomp architecture of this build; 0 where the filter
// is not installed.
func auditArch() uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64
	}
	return 0
}

// denyMPTCP installs a seccomp filter on the calling thread under which
// socket(…, …, IPPROTO_MPTCP) fails with EPROTONOSUPPORT, so a plugin
// without network cannot reach TCP through Multipath TCP, which Landlock
// does not see; programs that try MPTCP first fall back to TCP, which
// Landlock denies. Needs no_new_privs. On architectures other than amd64
// and arm64 it does nothing.
func denyMPTCP() error {
	arch := auditArch()
	if arch == 0 {
		return nil
	}
	const (
		offNR   = 0
		offArch = 4
		offArg2 = 16 + 2*8 // low 32 bits of args[2], little-endian
	)
	errno := unix.SECCOMP_RET_ERRNO | uint32(unix.EPROTONOSUPPORT)
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offArch},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: arch, Jt: 0, Jf: 5},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offNR},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: uint32(unix.SYS_SOCKET), Jt: 0, Jf: 3},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offArg2},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: ipprotoMPTCP, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: errno},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("installing the seccomp filter against Multipath TCP: %w", err)
	}
	return nil
}
