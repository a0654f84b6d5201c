package confine

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/plugin/confine/internal/shim"
)

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

// rulesetFD builds the Landlock ruleset of r on a kernel with abi and
// returns its descriptor (close-on-exec) and the flags the shim enforces
// it with; the shim, not the host, makes the domain from it
// (docs/decisions.md, "The host builds the ruleset, the shim enforces it").
func rulesetFD(r *Rules, abi int) (*os.File, uint32, error) {
	fd, flags, err := config(r).NewRulesetFD(landlockRules(r)...)
	if err != nil {
		return nil, 0, fmt.Errorf("building the Landlock ruleset: %w", err)
	}
	if fd < 0 {
		return nil, 0, fmt.Errorf("the kernel offers Landlock ABI %d but the ruleset is empty", abi)
	}
	return os.NewFile(uintptr(fd), "landlock-ruleset"), flags, nil
}

// shimCommand returns the command that starts the shim for p: the running
// binary itself (/proc/self/exe), with the shim's payload in a sealed
// memory file as descriptor 3, then exe, when given (the binary to
// execute), and the Landlock ruleset, when the kernel has Landlock. args
// follow the plugin's name. The caller closes cmd.ExtraFiles once the
// command started.
func shimCommand(p payload, exe *os.File, args []string) (cmd *exec.Cmd, err error) {
	sp := shim.Payload{Exec: p.Exec, ReadOnly: p.Rules.ReadOnly, Rebind: p.Rules.Rebind}
	if p.Cgroup != nil {
		sp.Cgroups = p.Cgroup.Dirs()
	}
	var extra []*os.File
	defer func() {
		if err != nil {
			for _, f := range extra {
				f.Close()
			}
		}
	}()
	if exe != nil {
		// A copy of its own, since the command's files are closed once it
		// started and exe stays the caller's.
		dup, err := proc.DupFile(exe)
		if err != nil {
			return nil, err
		}
		extra = append(extra, dup)
		sp.ExecFD = shim.PayloadFD + len(extra)
	}
	if p.ABI > 0 {
		rs, flags, err := rulesetFD(p.Rules, p.ABI)
		if err != nil {
			return nil, err
		}
		extra = append(extra, rs)
		sp.RulesetFD, sp.RestrictFlags = shim.PayloadFD+len(extra), flags
		sp.DenyMPTCP = !p.Rules.Network && p.ABI >= MinNetworkABI
	}
	f, err := payloadFile(sp)
	if err != nil {
		return nil, err
	}
	return &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       append([]string{p.Exec, ShimArg}, args...),
		ExtraFiles: append([]*os.File{f}, extra...),
	}, nil
}

// payloadFile returns sp encoded in a sealed memory file, at its start.
func payloadFile(sp shim.Payload) (*os.File, error) {
	b, err := sp.Encode()
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
	return f, nil
}
