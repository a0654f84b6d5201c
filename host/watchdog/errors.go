package watchdog

import (
	"errors"
	"fmt"
	"strings"

	hclv2 "github.com/hashicorp/hcl/v2"

	"github.com/obversa/obversa/host/runstate"
)

// Run outcome codes of docs/cli.md#output-and-exit-status that the watchdog records.
const (
	CodeStopped = runstate.CodeStopped
	// CodeOperatorPause pauses a run an operator asked to pause (`obversa
	// stop --pause`): resumable, unlike STOPPED.
	CodeOperatorPause      = "OPERATOR_PAUSE"
	CodeTimeout            = "TIMEOUT"
	CodeOutputLimit        = "OUTPUT_LIMIT"
	CodeTeardownIncomplete = "TEARDOWN_INCOMPLETE"
	CodeRestartExhausted   = "RESTART_EXHAUSTED"
	CodeRunStorage         = "RUN_STORAGE"
	CodePluginChanged      = "PLUGIN_CHANGED"
)

var (
	// ErrNothingRecorded marks the error of a command that writes a
	// stored run (Resume, Approve, StopIdle, InterruptPreflight) when it
	// could not open or fold the run's record: it stopped before writing
	// anything, and the message ends "nothing was recorded".
	ErrNothingRecorded = errors.New("nothing was recorded")
	// ErrLockFileNotWritten is returned by WriteLockFile (and Prepare with
	// TrustOnFirstUse) when the lock file cannot be written; it was left
	// as it was.
	ErrLockFileNotWritten = errors.New("cannot write the lock file")
	// ErrUnpinned is returned by Prepare when a plugin has neither a
	// `sha256` in the run file nor an entry in obversa.lock.hcl.
	ErrUnpinned = errors.New("plugin is not pinned")
	// ErrPinConflict is returned by Prepare when the run file's sha256 and
	// the lock file disagree.
	ErrPinConflict = errors.New("plugin pins disagree")
	// ErrPluginMissing is returned by Prepare when a plugin binary does not
	// exist.
	ErrPluginMissing = errors.New("plugin binary not found")
	// ErrNotRegular is returned by Prepare and Pins when a plugin path
	// names a device, named pipe, socket or directory rather than a
	// binary; nothing is read from it.
	ErrNotRegular = errors.New("plugin path is not a regular file")
	// ErrStorageNotText is returned by Prepare for a storage directory
	// (--storage) that is not UTF-8 text: the plan records it as JSON
	// text, which would hold another path (U+FFFD for each byte that is
	// not UTF-8).
	ErrStorageNotText = errors.New("the storage directory is not UTF-8 text")
	// ErrNotFromWatchdog is returned by Work and Keep when their stdin
	// does not carry the watchdog's first line (the host variables,
	// docs/architecture.md): the worker or keeper was started by hand,
	// not by `obversa run` or `obversa resume`.
	ErrNotFromWatchdog = errors.New("obversa worker and obversa keeper are started by the watchdog (obversa run, obversa resume), not by hand; to carry a run on, use obversa resume RUN")
)

// DiagnosticsError carries the run file's diagnostics; the CLI prints them
// with source snippets.
type DiagnosticsError struct {
	Diags hclv2.Diagnostics
}

// Error lists the diagnostics one per line.
func (e *DiagnosticsError) Error() string {
	var b strings.Builder
	for i, d := range e.Diags {
		if i > 0 {
			b.WriteString("\n")
		}
		if d.Subject != nil {
			fmt.Fprintf(&b, "%s:%d,%d: ", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
		}
		b.WriteString(d.Summary)
		if d.Detail != "" {
			b.WriteString("; " + d.Detail)
		}
	}
	return b.String()
}
