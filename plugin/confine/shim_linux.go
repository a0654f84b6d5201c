package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/obversa/obversa/internal/proc"
)

// shimExitCode is the status of a shim that could not confine or execute
// the plugin; its reason is on stderr, which the host quotes.
const shimExitCode = 125

// payloadFD is the descriptor the payload arrives on (the first of
// exec.Cmd.ExtraFiles).
const payloadFD = 3

func init() {
	if len(os.Args) > 1 && os.Args[1] == ShimArg {
		err := shim()
		fmt.Fprintf(os.Stderr, "obversa: confining the plugin: %v\n", err)
		os.Exit(shimExitCode)
	}
}

// shim reads the payload, joins the group, restricts itself and executes
// the plugin; it returns only on failure.
func shim() error {
	f := os.NewFile(payloadFD, "confine-payload")
	if f == nil {
		return errors.New("no payload on descriptor 3")
	}
	var p payload
	err := json.NewDecoder(f).Decode(&p)
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("reading the rules: %w", err)
	}
	if p.Exec == "" || p.Rules == nil {
		return errors.New("the rules name no binary")
	}
	if p.Cgroup != nil {
		if err := p.Cgroup.Join(); err != nil {
			return err
		}
	}
	// The domain, no_new_privs and the exec all belong to this thread.
	runtime.LockOSThread()
	if err := protectMounts(p.Rules.ReadOnly, p.Rules.Rebind); err != nil {
		return err
	}
	if p.ABI > 0 {
		if err := restrict(p.Rules, p.ABI); err != nil {
			return err
		}
	}
	target, err := execTarget(p)
	if err != nil {
		return err
	}
	argv := append([]string{p.Exec}, os.Args[2:]...)
	for i := 0; ; i++ {
		err := syscall.Exec(target, argv, os.Environ())
		// A copy written moments ago may still be open for writing in a
		// child the host forked meanwhile (golang.org/issue/22315).
		if !errors.Is(err, syscall.ETXTBSY) || i == 20 {
			return fmt.Errorf("executing %s: %w", p.Exec, err)
		}
		time.Sleep(time.Duration(i+1) * time.Millisecond)
	}
}

// execTarget returns what the shim executes: the verified file the host
// handed on p.ExecFD, through its /proc/self/fd link (the kernel opens the
// very file, whatever is renamed over p.Exec), or else the path p.Exec.
// The descriptor is closed on exec for a binary, so the plugin does not
// inherit it, and kept open for a "#!" script, whose interpreter the
// kernel hands that name to open: closed, the script would be gone.
func execTarget(p payload) (string, error) {
	if p.ExecFD <= 0 {
		return p.Exec, nil
	}
	var magic [2]byte
	n, err := unix.Pread(p.ExecFD, magic[:], 0)
	if err != nil {
		return "", fmt.Errorf("the binary's descriptor %d: %w", p.ExecFD, err)
	}
	if n < 2 || string(magic[:]) != "#!" {
		if _, err := unix.FcntlInt(uintptr(p.ExecFD), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
			return "", fmt.Errorf("the binary's descriptor %d: %w", p.ExecFD, err)
		}
	}
	return "/proc/self/fd/" + strconv.Itoa(p.ExecFD), nil
}

// Access rights of the rules; the handled set is fixed at ABI 7, so that
// a newer kernel does not restrict what these rules never granted.
const (
	readFile  = ll.AccessFSReadFile | ll.AccessFSExecute | ll.AccessFSIoctlDev
	readDir   = readFile | ll.AccessFSReadDir
	writeFile = readFile | ll.AccessFSWriteFile | ll.AccessFSTruncate
)

// config returns the Landlock configuration of r on a kernel with abi.
func config(r *Rules) landlock.Config {
	cfg := landlock.Config{
		HandledAccessFS: landlock.V7.HandledAccessFS,
		Scoped:          ll.ScopeSignal,
	}
	if !r.Network {
		cfg.HandledAccessNet = landlock.V7.HandledAccessNet
		cfg.Scoped |= ll.ScopeAbstractUnixSocket
	}
	return cfg.BestEffort()
}

// landlockRules turns r into go-landlock rules.
func landlockRules(r *Rules) []landlock.Rule {
	writeDir := landlock.V7.HandledAccessFS
	out := make([]landlock.Rule, 0, len(r.Paths))
	for _, p := range r.Paths {
		var a landlock.AccessFSSet
		switch {
		case p.File && p.Write:
			a = writeFile
		case p.File:
			a = readFile
		case p.Write:
			a = writeDir
		default:
			a = readDir
		}
		rule := landlock.PathAccess(a, p.Path).IgnoreIfMissing()
		if p.Write && !p.File {
			rule = rule.WithRefer()
		}
		out = append(out, rule)
	}
	return out
}

// restrict applies r to the calling (locked) thread.
func restrict(r *Rules, abi int) error {
	fd, flags, err := config(r).NewRulesetFD(landlockRules(r)...)
	if err != nil {
		return fmt.Errorf("building the Landlock ruleset: %w", err)
	}
	if fd < 0 {
		return fmt.Errorf("the kernel offers Landlock ABI %d but the ruleset is empty", abi)
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	if !r.Network && abi >= MinNetworkABI {
		if err := denyMPTCP(); err != nil {
			return err
		}
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("applying the Landlock ruleset: %w", err)
	}
	return nil
}

// shimCommand returns the command that starts the shim for p: the running
// binary itself (/proc/self/exe), with the payload in a sealed memory
// file as descriptor 3 and exe, when given, as descriptor 4 (the binary to
// execute). args follow the plugin's name.
func shimCommand(p payload, exe *os.File, args []string) (*exec.Cmd, error) {
	if exe != nil {
		p.ExecFD = payloadFD + 1
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	fd, err := unix.MemfdCreate("obversa-confine", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd for the confinement rules: %w", err)
	}
	f := os.NewFile(uintptr(fd), "obversa-confine")
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	_, _ = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_GROW|unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL)
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       append([]string{p.Exec, ShimArg}, args...),
		ExtraFiles: []*os.File{f},
	}
	if exe != nil {
		// A copy of its own, since the command's files are closed once it
		// started and exe stays the caller's.
		dup, err := proc.DupFile(exe)
		if err != nil {
			f.Close()
			return nil, err
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, dup)
	}
	return cmd, nil
}
