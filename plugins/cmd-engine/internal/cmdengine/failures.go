package cmdengine

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk/command"
)

// TailBytes is how much of stderr (or stdout, when stderr is empty) a
// failure message quotes.
const TailBytes = 512

// Exit codes shells and wrappers use for a missing or non-executable
// program (POSIX 2.8.2).
const (
	exitNotExecutable = 126
	exitNotFound      = 127
)

// callFailure describes a failed call for classification.
type callFailure struct {
	exitCode       int
	stdout, stderr []byte
	message        string // default message
}

// classify picks the first rule matching f, or the default: exit 126 or
// 127 is missing_cli, anything else unknown.
func classify(rules []failureRule, f callFailure) *plugin.Failure {
	for _, r := range rules {
		if r.exitCode != nil && *r.exitCode != f.exitCode {
			continue
		}
		if r.stderr != nil && !r.stderr.Match(f.stderr) {
			continue
		}
		if r.stdout != nil && !r.stdout.Match(f.stdout) {
			continue
		}
		out := &plugin.Failure{Kind: r.kind, Message: f.message}
		if r.message != "" {
			out.Message = r.message
		}
		if r.retryAfter != nil {
			out.RetryAfter = captureRetryAfter(r, f)
		}
		return out
	}
	kind := plugin.FailureUnknown
	if f.exitCode == exitNotFound || f.exitCode == exitNotExecutable {
		kind = plugin.FailureMissingCLI
	}
	return &plugin.Failure{Kind: kind, Message: f.message}
}

// captureRetryAfter searches stderr, then stdout, with the rule's capture
// expression and parses the first group, or the whole match: a Go
// duration, else a number of seconds. 0 when nothing parses.
func captureRetryAfter(r failureRule, f callFailure) time.Duration {
	for _, src := range [][]byte{f.stderr, f.stdout, []byte(f.message)} {
		m := r.retryAfter.FindSubmatch(src)
		if m == nil {
			continue
		}
		s := string(m[0])
		if len(m) > 1 {
			s = string(m[1])
		}
		if d, err := time.ParseDuration(strings.TrimSpace(s)); err == nil && d >= 0 {
			return d
		}
		if secs, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && secs >= 0 && secs < 1e9 {
			return time.Duration(secs * float64(time.Second))
		}
	}
	return 0
}

// tail returns the last TailBytes of b as trimmed valid UTF-8.
func tail(b []byte) string {
	if len(b) > TailBytes {
		b = b[len(b)-TailBytes:]
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
}

// spawnFailure maps a start failure: a program that is missing or not
// executable is missing_cli, anything else unknown.
func spawnFailure(argv0 string, err error) *plugin.Failure {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return &plugin.Failure{Kind: plugin.FailureMissingCLI, Message: fmt.Sprintf("%s: %v", argv0, err)}
	}
	return &plugin.Failure{Kind: plugin.FailureUnknown, Message: fmt.Sprintf("%s: %v", argv0, err)}
}

// stopFailure maps the ways command.Run stops a command to failures; nil
// when the command ran to its end.
func stopFailure(argv0 string, res *command.Result, err error, timeout time.Duration) *plugin.Failure {
	// Survivors of the teardown are worth knowing about whatever stopped
	// the command.
	extra := ""
	if err != nil {
		extra = " (" + err.Error() + ")"
	}
	switch {
	case res.Aborted:
		return &plugin.Failure{Kind: plugin.FailureAborted, Message: argv0 + ": cancelled" + extra}
	case res.TimedOut:
		return &plugin.Failure{Kind: plugin.FailureTimeout, Message: fmt.Sprintf("%s: timed out after %v%s", argv0, timeout, extra)}
	case err != nil:
		// Output or memory cap, or survivors after teardown; the stable
		// code leads the message.
		return &plugin.Failure{Kind: plugin.FailureUnknown, Message: fmt.Sprintf("%s: %v", argv0, err)}
	}
	return nil
}

// exitMessage is the default message of a non-zero exit.
func exitMessage(argv0 string, res *command.Result) string {
	msg := fmt.Sprintf("%s exited with code %d", argv0, res.ExitCode)
	if res.Signal != "" {
		msg = fmt.Sprintf("%s ended by signal %s", argv0, res.Signal)
	}
	// The end of stderr says why; a command that reports only on stdout
	// (go test does) is quoted from there.
	t := tail(res.Stderr)
	if t == "" {
		t = tail(res.Stdout)
	}
	if t != "" {
		msg += ": " + t
	}
	return msg
}
