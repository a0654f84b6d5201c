package shim

import (
	"errors"
	"strconv"
)

// Arg is the first argument of a process started as the confining shim;
// no other program is started with it.
const Arg = "__obversa-confine-shim"

// PayloadFD is the descriptor the payload arrives on (the first of the
// host's exec.Cmd.ExtraFiles).
const PayloadFD = 3

// ExitCode is the status of a shim that could not confine or execute the
// plugin; its reason is on stderr, which the host quotes.
const ExitCode = 125

// Payload is what the host hands the shim: the verified binary to execute,
// the Landlock ruleset it built for the plugin (the rules are opened and
// added by the host, the domain is made by the shim) and the rest of the
// confinement the shim applies to itself before it executes the binary.
type Payload struct {
	// Exec is the plugin's argv[0], and the path executed when ExecFD is 0.
	Exec string
	// ExecFD, when > 0, is the descriptor of the verified binary the shim
	// executes (through /proc/self/fd) instead of looking Exec up again.
	ExecFD int
	// RulesetFD, when > 0, is the descriptor of the Landlock ruleset the
	// shim enforces on itself (after no_new_privs); 0 = no Landlock.
	RulesetFD int
	// RestrictFlags are the flags of landlock_restrict_self(2).
	RestrictFlags uint32
	// DenyMPTCP installs the seccomp filter that refuses Multipath TCP
	// sockets, which Landlock's TCP rules do not cover; only with a
	// ruleset (the filter needs no_new_privs).
	DenyMPTCP bool
	// Cgroups are the cgroup directories the shim moves itself into
	// (their cgroup.procs), so the plugin starts in them.
	Cgroups []string
	// ReadOnly are the trees the shim mounts read-only over themselves in
	// its own mount namespace, Rebind the trees inside them it mounts
	// writable again; then it drops CAP_SYS_ADMIN from its bounding set.
	ReadOnly, Rebind []string
}

// ErrPayload is wrapped by Decode for a payload it cannot read and by
// Encode for a value it cannot carry (one holding a NUL byte).
var ErrPayload = errors.New("malformed shim payload")

// Encode returns p as the shim reads it: entries "key=value", each ended
// by a NUL byte (which no path holds); a value holding a NUL byte is an
// error wrapping ErrPayload.
func (p Payload) Encode() ([]byte, error) {
	var b []byte
	nul := false
	put := func(k, v string) {
		nul = nul || indexByte(v, 0) >= 0
		b = append(append(append(append(b, k...), '='), v...), 0)
	}
	put("exec", p.Exec)
	put("exec_fd", strconv.Itoa(p.ExecFD))
	put("ruleset_fd", strconv.Itoa(p.RulesetFD))
	put("restrict_flags", strconv.FormatUint(uint64(p.RestrictFlags), 10))
	put("deny_mptcp", strconv.FormatBool(p.DenyMPTCP))
	for _, d := range p.Cgroups {
		put("cgroup", d)
	}
	for _, d := range p.ReadOnly {
		put("read_only", d)
	}
	for _, d := range p.Rebind {
		put("rebind", d)
	}
	if nul {
		return nil, bad("a value holds a NUL byte")
	}
	return b, nil
}

// Decode reads a payload Encode wrote. Unknown keys, a missing exec,
// entries without "=" or a final NUL, and numbers out of range are errors
// wrapping ErrPayload.
func Decode(b []byte) (Payload, error) {
	var p Payload
	for s := string(b); s != ""; {
		end := indexByte(s, 0)
		if end < 0 {
			return p, bad("the last entry is not ended")
		}
		e := s[:end]
		s = s[end+1:]
		eq := indexByte(e, '=')
		if eq < 0 {
			return p, bad("an entry without \"=\"")
		}
		if err := p.set(e[:eq], e[eq+1:]); err != nil {
			return p, err
		}
	}
	if p.Exec == "" {
		return p, bad("no binary named")
	}
	return p, nil
}

// set applies one entry to p.
func (p *Payload) set(k, v string) error {
	var err error
	switch k {
	case "exec":
		p.Exec = v
	case "exec_fd":
		p.ExecFD, err = fd(v)
	case "ruleset_fd":
		p.RulesetFD, err = fd(v)
	case "restrict_flags":
		var n uint64
		n, err = strconv.ParseUint(v, 10, 32)
		p.RestrictFlags = uint32(n)
	case "deny_mptcp":
		p.DenyMPTCP, err = strconv.ParseBool(v)
	case "cgroup":
		p.Cgroups = append(p.Cgroups, v)
	case "read_only":
		p.ReadOnly = append(p.ReadOnly, v)
	case "rebind":
		p.Rebind = append(p.Rebind, v)
	default:
		return bad("unknown key " + strconv.Quote(k))
	}
	if err != nil {
		return bad(k + ": " + err.Error())
	}
	return nil
}

// fd parses a descriptor number: 0 (none) or one above the standard
// streams and the payload's own.
func fd(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, err
	}
	if n != 0 && (n <= PayloadFD || n > 1<<20) {
		return 0, errors.New("descriptor " + v + " out of range")
	}
	return n, nil
}

// indexByte is strings.IndexByte, which this package does not import
// (see the package comment: strings is initialised late).
func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// payloadError is an ErrPayload that says why.
type payloadError struct{ why string }

func (e *payloadError) Error() string { return ErrPayload.Error() + ": " + e.why }
func (e *payloadError) Unwrap() error { return ErrPayload }

// bad returns an error wrapping ErrPayload that says why.
func bad(why string) error { return &payloadError{why} }
