package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"syscall"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/host/workspace"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// How commands print (docs/cli.md "Scripting with --json"): a command
// with a --json flag prints its result as one JSON object per line on
// stdout; when it ends without a result — refused, or failed before it had
// one — it prints one refusal object instead, with the same exit status
// the human form has. Without --json, the human form goes to stdout and
// problems to stderr, each printed once.

// Refusal codes of the CLI that no package sentinel carries.
const (
	// CodeUsage: the command line itself is wrong (unknown flag, missing
	// argument, an argument that names nothing).
	CodeUsage = "USAGE"
	// CodeRunFileInvalid: the run file or its lock file has errors; the
	// refusal carries them as diagnostics.
	CodeRunFileInvalid = "RUN_FILE_INVALID"
	// CodeApprovalDecided: approve named a position whose approval is
	// already decided; the message names the decision and who made it.
	// A refusal (exit 2): nothing was recorded.
	CodeApprovalDecided = "APPROVAL_DECIDED"
	// CodeError: anything without a more specific code.
	CodeError = "ERROR"
)

// refusalCodes gives the stable code of a refusal by the sentinel its
// error wraps, first match wins. Codes of the run outcomes (docs/decisions.md, the codes table) keep their
// names; the others name the problem in the same style.
var refusalCodes = []struct {
	err  error
	code string
}{
	{watchdog.ErrUnpinned, "PLUGIN_UNPINNED"},
	{watchdog.ErrLockFileNotWritten, "LOCK_FILE_NOT_WRITTEN"},
	{watchdog.ErrPinConflict, "PLUGIN_PIN_CONFLICT"},
	{watchdog.ErrPluginMissing, "PLUGIN_MISSING"},
	{plugin.ErrPluginMissing, "PLUGIN_MISSING"},
	{plugin.ErrDigestMismatch, "PLUGIN_DIGEST_MISMATCH"},
	{plugin.ErrUntrusted, plugin.CodeUntrusted},
	{launch.ErrPluginChanged, watchdog.CodePluginChanged},
	{launch.ErrConfig, "PLUGIN_CONFIG"},
	{launch.ErrType, "PLUGIN_TYPE"},
	{launch.ErrTrustedKey, "TRUSTED_KEY"},
	{launch.ErrSidecar, "PLUGIN_NOT_A_BINARY"},
	{launch.ErrInstall, "PLUGIN_INSTALL"},
	{plugin.ErrHandshake, "PLUGIN_HANDSHAKE"},
	{plugin.ErrNotServing, "PLUGIN_NOT_SERVING"},
	{launch.ErrStart, runstate.CodePluginStartFailed},
	{watchdog.ErrRunNotPaused, "RUN_NOT_PAUSED"},
	{watchdog.ErrResumePosition, "RESUME_POSITION"},
	{watchdog.ErrResultNeeded, "RECONCILE_RESULT_NEEDED"},
	{watchdog.ErrResumeEventMismatch, "RESUME_EVENT_MISMATCH"},
	{watchdog.ErrAlreadyDecided, CodeApprovalDecided},
	{watchdog.ErrNotAnswered, "APPROVAL_NOT_ANSWERED"},
	{watchdog.ErrSurvivors, watchdog.CodeTeardownIncomplete},
	{watchdog.ErrAnchorMissing, watchdog.CodeWorkspaceAnchorMissing},
	{watchdog.ErrAnchorInvalid, watchdog.CodeWorkspaceAnchorInvalid},
	{store.ErrProcessLocked, "PROCESS_LOCKED"},
	{store.ErrRunExists, "RUN_EXISTS"},
	{store.ErrRunNotFound, "RUN_NOT_FOUND"},
	{store.ErrInvalidID, "INVALID_ID"},
	{store.ErrStorageFull, runstate.CodeStorageFull},
	{syscall.ENOSPC, runstate.CodeStorageFull},
	{syscall.EDQUOT, runstate.CodeStorageFull},
	{store.ErrKnownSecret, "KNOWN_SECRET"},
	{store.ErrStorageLimitExceeded, "STORAGE_LIMIT_EXCEEDED"},
	{store.ErrCorruptEventStream, "CORRUPT_EVENT_STREAM"},
	{store.ErrRevisionConflict, "REVISION_CONFLICT"},
}

// exitError carries an exit status through cobra, with what to print: the
// diagnostics (printed with source snippets), then err.
type exitError struct {
	code int
	err  error
	// diags are run-file or lock-file diagnostics; when they hold an
	// error they are the whole message and err may be nil.
	diags hclv2.Diagnostics
	// reason is the refusal code; "" derives it from err and code.
	reason string
}

// Error is the wrapped error's message.
func (e *exitError) Error() string {
	if e.err == nil {
		if m := diagnosticsMessage(e.diags); m != "" {
			return m
		}
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

// Unwrap returns the wrapped error, for errors.Is and errors.As.
func (e *exitError) Unwrap() error { return e.err }

// silent reports whether there is nothing to print: the command already
// printed its result and only sets the exit status.
func (e *exitError) silent() bool { return e.err == nil && len(e.diags) == 0 }

func usageErr(err error) error  { return &exitError{code: exitUsage, err: err} }
func failedErr(err error) error { return &exitError{code: exitFailed, err: err} }

// writeErr is failedErr for a command that writes a stored run (resume,
// approve, stop, preflight interrupt): a storage problem that stopped it
// before it recorded anything — a record on a read-only file system, one
// it may not write — is a refusal (exit 2, RUN_STORAGE), as a full device
// is: nothing was done (docs/cli.md, the exit statuses).
func writeErr(err error) error {
	var se *store.StorageError
	if errors.Is(err, watchdog.ErrNothingRecorded) && (errors.As(err, &se) || errors.Is(err, store.ErrReadOnly)) {
		return usageErr(err)
	}
	return failedErr(err)
}

// diagsErr refuses with diagnostics (exit 2, RUN_FILE_INVALID).
func diagsErr(diags hclv2.Diagnostics) error {
	return &exitError{code: exitUsage, diags: diags, reason: CodeRunFileInvalid}
}

// refusalObject is what --json prints for a command that ends without its
// result.
type refusalObject struct {
	Code        string               `json:"code"`
	Message     string               `json:"message"`
	Diagnostics []hcl.JSONDiagnostic `json:"diagnostics"`
}

// refusalCode is the stable code of a failed command's error.
func refusalCode(err error, exit int) string {
	var ee *exitError
	if errors.As(err, &ee) && ee.reason != "" {
		return ee.reason
	}
	for _, c := range refusalCodes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	if c := workspace.Code(err); c != "" {
		return c
	}
	// Any other failure to read or write the run's files (a full device
	// matched STORAGE_FULL above), a record opened read-only for want of
	// write permission included.
	var se *store.StorageError
	if errors.As(err, &se) || errors.Is(err, store.ErrReadOnly) {
		return runstate.CodeRunStorage
	}
	if exit == exitUsage {
		return CodeUsage
	}
	return CodeError
}

// printFailure prints a failed command's problem — as a refusal object on
// stdout when asJSON, else as text on stderr — and returns the exit
// status. Cobra's own errors (unknown command or flag, wrong argument
// count) are usage errors.
func printFailure(stdout, stderr io.Writer, err error, asJSON bool) int {
	exit := exitUsage
	var diags hclv2.Diagnostics
	var ee *exitError
	if errors.As(err, &ee) {
		exit, diags = ee.code, ee.diags
		if ee.silent() {
			return exit
		}
	}
	if asJSON {
		writeJSON(stdout, refusalObject{Code: refusalCode(err, exit), Message: err.Error(), Diagnostics: hcl.DiagnosticsJSON(diags)})
		return exit
	}
	if len(diags) > 0 {
		_ = hcl.WriteDiagnostics(stderr, termDiags(diags), nil, 100)
	}
	if ee == nil || ee.err != nil {
		fmt.Fprintln(stderr, "Error:", termText(err.Error()))
	}
	return exit
}

// diagnosticsMessage is a one-line message for diagnostics: the first
// error at its place, and how many there are.
func diagnosticsMessage(diags hclv2.Diagnostics) string {
	errs := diags.Errs()
	if len(errs) == 0 {
		return ""
	}
	var first *hclv2.Diagnostic
	errors.As(errs[0], &first)
	msg := first.Summary
	if r := first.Subject; r != nil {
		msg = fmt.Sprintf("%s:%d:%d: %s", r.Filename, r.Start.Line, r.Start.Column, msg)
	}
	if len(errs) > 1 {
		msg = fmt.Sprintf("%s (and %d more errors)", msg, len(errs)-1)
	}
	return msg
}

// writeJSON prints v as one line of JSON.
func writeJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Every value printed is built from JSON-safe types.
		panic(fmt.Sprintf("obversa: encoding output: %v", err))
	}
	fmt.Fprintln(w, string(b))
}

// wantsJSON reports whether the command that ran asked for --json. When
// flag parsing failed before --json was read, or the command line named
// no command that takes --json (`obversa --bogus --json`), the raw
// arguments before any "--" decide: whoever wrote --json reads JSON.
func wantsJSON(cmd *cobra.Command, args []string) bool {
	if jsonFlag(cmd) {
		return true
	}
	if i := slices.Index(args, "--"); i >= 0 {
		args = args[:i]
	}
	return slices.Contains(args, "--json") || slices.Contains(args, "--json=true")
}

// jsonFlag reports whether cmd has a --json flag and it is set.
func jsonFlag(cmd *cobra.Command) bool {
	if cmd == nil {
		return false
	}
	f := cmd.Flags().Lookup("json")
	return f != nil && f.Value.String() == "true"
}

// printWarnings writes warning diagnostics to w for a person (errors are
// a refusal's business).
func printWarnings(w io.Writer, diags hclv2.Diagnostics) {
	var warns hclv2.Diagnostics
	for _, d := range diags {
		if d.Severity == hclv2.DiagWarning {
			warns = append(warns, d)
		}
	}
	if len(warns) > 0 {
		_ = hcl.WriteDiagnostics(w, termDiags(warns), nil, 100)
	}
}

// termDiags is diags with each summary and detail as termText shows it.
// A diagnostic or refusal is the host's message, not what a run produced:
// it is escaped with --raw too, since plugins supply much of its text
// (docs/decisions.md, "A plugin's diagnostics are capped").
func termDiags(diags hclv2.Diagnostics) hclv2.Diagnostics {
	out := make(hclv2.Diagnostics, len(diags))
	for i, d := range diags {
		c := *d
		c.Summary, c.Detail = termText(d.Summary), termText(d.Detail)
		out[i] = &c
	}
	return out
}
