package shim

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == Arg {
		err := run()
		_, _ = os.Stderr.WriteString("obversa: confining the plugin: " + err.Error() + "\n")
		os.Exit(ExitCode)
	}
}

// Linux constants the standard library's syscall package lacks; the
// tests compare them with golang.org/x/sys/unix's, which this package
// does not import (see the package comment).
const (
	sysLandlockRestrictSelf = 446 // on every architecture but MIPS (where it fails closed)
	sysCloseRange           = 436 // likewise
	closeRangeCloexec       = 1 << 2
	prSetNoNewPrivs         = 38
	prCapbsetDrop           = 24
	prSetSeccomp            = 22
	seccompModeFilter       = 2
	seccompRetErrno         = 0x00050000
	seccompRetAllow         = 0x7fff0000
	capSysAdmin             = 21
	auditArchX86_64         = 0xc000003e
	auditArchAARCH64        = 0xc00000b7
	// ipprotoMPTCP is IPPROTO_MPTCP: a Multipath TCP socket, which
	// Landlock's TCP rules do not cover (up to ABI 7 at least).
	ipprotoMPTCP = 262
)

// run reads the payload, joins the groups, restricts itself and executes
// the plugin; it returns only on failure.
func run() error {
	p, err := readPayload()
	if err != nil {
		return err
	}
	for _, d := range p.Cgroups {
		if err := join(d); err != nil {
			return err
		}
	}
	// The domain, no_new_privs and the exec all belong to this thread
	// (an init runs on the main thread, locked; this keeps it so).
	runtime.LockOSThread()
	if err := protectMounts(p.ReadOnly, p.Rebind); err != nil {
		return err
	}
	if p.RulesetFD > 0 {
		if err := restrict(p); err != nil {
			return err
		}
	}
	target, err := execTarget(p)
	if err != nil {
		return err
	}
	if err := closeInherited(p); err != nil {
		return err
	}
	argv := append([]string{p.Exec}, os.Args[2:]...)
	for i := 0; ; i++ {
		err := syscall.Exec(target, argv, syscall.Environ())
		// A copy written moments ago may still be open for writing in a
		// child the host forked meanwhile (golang.org/issue/22315).
		if !errors.Is(err, syscall.ETXTBSY) || i == 20 {
			return errors.New("executing " + p.Exec + ": " + err.Error())
		}
		time.Sleep(time.Duration(i+1) * time.Millisecond)
	}
}

// readPayload reads and closes descriptor PayloadFD.
func readPayload() (Payload, error) {
	var b []byte
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Read(PayloadFD, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return Payload{}, errors.New("reading the rules on descriptor 3: " + err.Error())
		}
		if n == 0 {
			break
		}
		b = append(b, buf[:n]...)
	}
	_ = syscall.Close(PayloadFD)
	p, err := Decode(b)
	if err != nil {
		return p, errors.New("reading the rules: " + err.Error())
	}
	return p, nil
}

// join moves this process into the cgroup directory dir.
func join(dir string) error {
	fd, err := syscall.Open(dir+"/cgroup.procs", syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err == nil {
		_, err = syscall.Write(fd, []byte(strconv.Itoa(syscall.Getpid())))
		if cerr := syscall.Close(fd); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return errors.New("joining cgroup " + dir + ": " + err.Error())
	}
	return nil
}

// prctl is prctl(2) with three arguments.
func prctl(op, a, b uintptr) error {
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, op, a, b, 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

// protectMounts, in the shim's own mount namespace, stops mount events
// from flowing back to the host, mounts every read-only tree read-only
// over itself and every rebound tree writable over itself again, then
// drops CAP_SYS_ADMIN from the bounding set, so the plugin — root or not —
// can neither undo the mounts nor enter another mount namespace. Landlock,
// applied next, forbids changing mounts as well.
func protectMounts(readOnly, rebind []string) error {
	if len(readOnly) == 0 {
		return nil
	}
	if err := syscall.Mount("", "/", "", syscall.MS_SLAVE|syscall.MS_REC, ""); err != nil {
		return errors.New("making the plugin's mounts private: " + err.Error())
	}
	for _, p := range readOnly {
		if err := syscall.Mount(p, p, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return errors.New("binding " + p + ": " + err.Error())
		}
		if err := syscall.Mount("", p, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			return errors.New("mounting " + p + " read-only: " + err.Error())
		}
	}
	for _, p := range rebind {
		if err := syscall.Mount(p, p, "", syscall.MS_BIND, ""); err != nil {
			return errors.New("binding " + p + " writable: " + err.Error())
		}
		if err := syscall.Mount("", p, "", syscall.MS_BIND|syscall.MS_REMOUNT, ""); err != nil {
			return errors.New("mounting " + p + " writable: " + err.Error())
		}
	}
	if err := prctl(prCapbsetDrop, capSysAdmin, 0); err != nil {
		return errors.New("dropping CAP_SYS_ADMIN: " + err.Error())
	}
	return nil
}

// restrict sets no_new_privs, installs the Multipath TCP filter when asked
// and enforces p's Landlock ruleset on the calling (locked) thread, then
// closes the ruleset's descriptor.
func restrict(p Payload) error {
	defer syscall.Close(p.RulesetFD)
	if err := prctl(prSetNoNewPrivs, 1, 0); err != nil {
		return errors.New("setting no_new_privs: " + err.Error())
	}
	if p.DenyMPTCP {
		if err := denyMPTCP(); err != nil {
			return err
		}
	}
	if _, _, e := syscall.RawSyscall(sysLandlockRestrictSelf, uintptr(p.RulesetFD), uintptr(p.RestrictFlags), 0); e != 0 {
		return errors.New("applying the Landlock ruleset: " + e.Error())
	}
	return nil
}

// auditArch is the seccomp architecture of this build; 0 where the filter
// is not installed.
func auditArch() uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return auditArchX86_64
	case "arm64":
		return auditArchAARCH64
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
	errno := seccompRetErrno | uint32(syscall.EPROTONOSUPPORT)
	prog := []syscall.SockFilter{
		{Code: syscall.BPF_LD | syscall.BPF_W | syscall.BPF_ABS, K: offArch},
		{Code: syscall.BPF_JMP | syscall.BPF_JEQ | syscall.BPF_K, K: arch, Jt: 0, Jf: 5},
		{Code: syscall.BPF_LD | syscall.BPF_W | syscall.BPF_ABS, K: offNR},
		{Code: syscall.BPF_JMP | syscall.BPF_JEQ | syscall.BPF_K, K: uint32(syscall.SYS_SOCKET), Jt: 0, Jf: 3},
		{Code: syscall.BPF_LD | syscall.BPF_W | syscall.BPF_ABS, K: offArg2},
		{Code: syscall.BPF_JMP | syscall.BPF_JEQ | syscall.BPF_K, K: ipprotoMPTCP, Jt: 0, Jf: 1},
		{Code: syscall.BPF_RET | syscall.BPF_K, K: errno},
		{Code: syscall.BPF_RET | syscall.BPF_K, K: seccompRetAllow},
	}
	fprog := syscall.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := prctl(prSetSeccomp, seccompModeFilter, uintptr(unsafe.Pointer(&fprog))); err != nil {
		return errors.New("installing the seccomp filter against Multipath TCP: " + err.Error())
	}
	return nil
}

// closeInherited marks every descriptor above the standard streams
// close-on-exec but a "#!" script's (execTarget), so the plugin inherits
// none of the host's, the ruleset's or any its starter left open without
// close-on-exec: Landlock does not govern a descriptor opened before the
// domain was made (docs/confinement.md). A kernel without
// CLOSE_RANGE_CLOEXEC (before Linux 5.11) has no Landlock either: there
// the plugin keeps them. Called after execTarget, which marked a binary's
// own descriptor already.
func closeInherited(p Payload) error {
	keep := -1
	if p.ExecFD > 0 {
		flags, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(p.ExecFD), syscall.F_GETFD, 0)
		if e == 0 && flags&syscall.FD_CLOEXEC == 0 {
			keep = p.ExecFD
		}
	}
	ranges := [][2]uint32{{3, ^uint32(0)}}
	if keep > 0 {
		ranges = [][2]uint32{{3, uint32(keep) - 1}, {uint32(keep) + 1, ^uint32(0)}}
	}
	for _, r := range ranges {
		if r[0] > r[1] {
			continue
		}
		_, _, e := syscall.RawSyscall(sysCloseRange, uintptr(r[0]), uintptr(r[1]), closeRangeCloexec)
		old := e == syscall.ENOSYS || e == syscall.EINVAL
		if e != 0 && (p.RulesetFD > 0 || !old) {
			return errors.New("marking inherited descriptors close-on-exec: " + e.Error())
		}
		if e != 0 {
			return nil
		}
	}
	return nil
}

// execTarget returns what the shim executes: the verified file the host
// handed on p.ExecFD, through its /proc/self/fd link (the kernel opens the
// very file, whatever is renamed over p.Exec), or else the path p.Exec.
// The descriptor is closed on exec for a binary, so the plugin does not
// inherit it, and kept open for a "#!" script, whose interpreter the
// kernel hands that name to open: closed, the script would be gone.
func execTarget(p Payload) (string, error) {
	if p.ExecFD <= 0 {
		return p.Exec, nil
	}
	var magic [2]byte
	n, err := syscall.Pread(p.ExecFD, magic[:], 0)
	if err != nil {
		return "", errors.New("the binary's descriptor " + strconv.Itoa(p.ExecFD) + ": " + err.Error())
	}
	if n < 2 || string(magic[:]) != "#!" {
		if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(p.ExecFD), syscall.F_SETFD, syscall.FD_CLOEXEC); e != 0 {
			return "", errors.New("the binary's descriptor " + strconv.Itoa(p.ExecFD) + ": " + e.Error())
		}
	}
	return "/proc/self/fd/" + strconv.Itoa(p.ExecFD), nil
}
