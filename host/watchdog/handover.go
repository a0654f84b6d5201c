package watchdog

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/internal/hostenv"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// workerEnv is the worker's environment: the host's Allowed variables
// only (docs/decisions.md, "The host's environment"), the run's owner
// marker and the ownership handoff. What else the worker needs from the
// host's environment comes through sendEnv.
//
// The Go runtime's collector settings the operator gave the watchdog,
// GOGC and GOMEMLIMIT, reach the worker too: they carry no secret, and
// they override the worker's own collection policy (docs/decisions.md,
// "The worker collects garbage late").
func workerEnv(marker string, handoff []string) []string {
	env := hostenv.Minimal(withoutOwner(os.Environ()))
	for _, name := range gcEnv {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return append(append(env, launch.OwnerEnv+"="+marker), handoff...)
}

// gcEnv are the variables of the Go runtime's garbage collector a worker
// takes from its watchdog.
var gcEnv = []string{"GOGC", "GOMEMLIMIT"}

// handedEnv returns the host variables a worker of plan p needs and does
// not get in its environment: each plugin's pass_env, the known secrets
// (storage.known_secrets_from_env), by name, and libpq's variables (PG*:
// PGPASSFILE, PGPASSWORD, PGSSLMODE, …), so that a worker connects to a
// run's database as its watchdog did; unset ones are left out.
func handedEnv(p *plan.Plan) map[string]string {
	out := map[string]string{}
	add := func(name string) {
		if v, ok := os.LookupEnv(name); ok && !hostenv.Allowed(name) {
			out[name] = v
		}
	}
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "PG") {
			add(name)
		}
	}
	for _, pl := range p.Plugins {
		for _, name := range pl.PassEnv {
			add(name)
		}
	}
	for _, name := range p.Storage.KnownSecretsFromEnv {
		add(name)
	}
	return out
}

// sendEnv writes handedEnv(p) to the worker's stdin as one JSON line. The
// values never appear in the worker's /proc/<pid>/environ.
func sendEnv(w io.Writer, p *plan.Plan) error {
	b, err := json.Marshal(handedEnv(p))
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// receiveEnv reads the line sendEnv wrote and sets each variable in this
// process's environment as Go keeps it (os.Setenv), which the kernel's
// view of the process does not show. It returns the rest of the stream.
// A stream that ends before that line, or whose first line is not a JSON
// object, did not come from a watchdog: ErrNotFromWatchdog.
func receiveEnv(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return br, fmt.Errorf("%w (stdin ended before the environment the watchdog hands over: %v)", ErrNotFromWatchdog, err)
	}
	var vars map[string]string
	if err := json.Unmarshal(line, &vars); err != nil {
		return br, fmt.Errorf("%w (the first line on stdin is not the environment the watchdog hands over, a JSON object: %v)", ErrNotFromWatchdog, err)
	}
	for k, v := range vars {
		if err := os.Setenv(k, v); err != nil {
			return br, fmt.Errorf("setting %s: %w", k, err)
		}
	}
	return br, nil
}

// VerifiedEnv names the worker's variable that carries the stamps of the
// plugin cache entries its watchdog verified (SuperviseOptions.Verified),
// as a JSON object from digest to plugin.FileStamp. Stamps are no secret:
// they say which file held which bytes, not what the bytes are.
const VerifiedEnv = "OBVERSA_VERIFIED_CACHE"

// encodeStamps is the value of VerifiedEnv for stamps.
func encodeStamps(stamps map[string]plugin.FileStamp) string {
	b, _ := json.Marshal(stamps)
	return string(b)
}

// decodeStamps reads a value of VerifiedEnv: empty gives nil; anything
// but a JSON object from 64-hex-digit digests to stamps is an error
// naming the variable.
func decodeStamps(v string) (map[string]plugin.FileStamp, error) {
	if v == "" {
		return nil, nil
	}
	var stamps map[string]plugin.FileStamp
	if err := json.Unmarshal([]byte(v), &stamps); err != nil {
		return nil, fmt.Errorf("%s: %w", VerifiedEnv, err)
	}
	for digest := range stamps {
		if _, err := hex.DecodeString(digest); err != nil || len(digest) != 64 || strings.ToLower(digest) != digest {
			return nil, fmt.Errorf("%s: %q is not a sha256 digest (64 lower-case hex digits)", VerifiedEnv, digest)
		}
	}
	return stamps, nil
}

// withoutOwner returns env without the variables only this process may
// hand a child: its owner marker, its lock's descriptor, and the stamps
// of the plugin cache entries it verified (VerifiedEnv), and the sign of
// a hand-over on stdin (HandoffEnv). One inherited
// from the shell would otherwise reach a worker whose watchdog verified
// no settled entry, which would execute entries by stamps no watchdog
// took.
func withoutOwner(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name != launch.OwnerEnv && name != store.LockFDEnv && name != VerifiedEnv && name != HandoffEnv {
			out = append(out, kv)
		}
	}
	return out
}
