package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
)

// Sentinel errors, one per stable code. Every error the package returns
// wraps at most one of them (ErrStoreFailed also carries the
// *StorageError of its cause); match with errors.Is and turn into a code
// with Code.
var (
	// ErrRevisionConflict is returned by Append when expectedRev is not the
	// stream's last committed revision. The concrete error is a
	// *ConflictError carrying the current revision.
	ErrRevisionConflict = errors.New("REVISION_CONFLICT")

	// ErrCorruptEventStream is returned when events.jsonl is damaged
	// anywhere but in a torn last batch: a malformed line, a broken hash
	// chain, a gap or repeat in rev, a duplicate event id, a last batch the
	// validated-prefix cache recorded as committed, committed events
	// missing from the end. The concrete error is a
	// *CorruptError naming the line and revision. Nothing on disk is changed
	// when it is returned.
	ErrCorruptEventStream = errors.New("CORRUPT_EVENT_STREAM")

	// ErrArtifactIntegrity is returned when a stored artifact does not hash
	// to its reference's digest or size, or the reference is malformed.
	ErrArtifactIntegrity = errors.New("ARTIFACT_INTEGRITY")

	// ErrArtifactNotFound is returned when a reference names an artifact
	// that is not stored in the run.
	ErrArtifactNotFound = errors.New("ARTIFACT_NOT_FOUND")

	// ErrStorageLimitExceeded is returned when an event, a batch, an
	// artifact or the run's artifact total would exceed the Policy. The
	// concrete error is a *LimitError.
	ErrStorageLimitExceeded = errors.New("STORAGE_LIMIT_EXCEEDED")

	// ErrKnownSecret is returned when an event or a structured artifact
	// contains a value listed in Policy.KnownSecrets. The message names
	// where, never the value.
	ErrKnownSecret = errors.New("KNOWN_SECRET")

	// ErrProcessLocked is returned by Lock when another open file
	// description holds the run lock. The concrete error is a *LockedError.
	ErrProcessLocked = errors.New("PROCESS_LOCKED")

	// ErrRunExists is returned by CreateRun when the run directory
	// already exists.
	ErrRunExists = errors.New("RUN_EXISTS")

	// ErrRunNotFound is returned when a run directory does not exist.
	ErrRunNotFound = errors.New("RUN_NOT_FOUND")

	// ErrInvalidID is returned by ValidID (and everything that takes a run
	// id or namespace) for a name outside [A-Za-z0-9][A-Za-z0-9._-]{0,127}.
	ErrInvalidID = errors.New("INVALID_ID")

	// ErrInvalidEvent is returned by Append for an event the record
	// cannot hold: a malformed id or type, data that is not JSON or not
	// exactly representable in RFC 8785 canonical form, an id already used
	// in the stream, an empty batch.
	ErrInvalidEvent = errors.New("INVALID_EVENT")

	// ErrNotCanonical is matched, beside ErrInvalidEvent (whose code it
	// keeps), by Append's refusal of event data that has no exact RFC
	// 8785 canonical form (a *CanonicalError): data that is not JSON, a
	// number no IEEE 754 double holds exactly (an integer beyond 2^53,
	// 1e400), a duplicate member name or a lone surrogate (I-JSON, RFC
	// 7493). Such data comes from a value a writer was given, not from how
	// it writes: an engine's structured answer, a binding's output.
	ErrNotCanonical = errors.New("data has no exact RFC 8785 canonical form")

	// ErrInvalidArtifact is returned by PutArtifact for a media type
	// that is not RFC 6838 or a malformed purpose.
	ErrInvalidArtifact = errors.New("INVALID_ARTIFACT")

	// ErrInvalidPolicy is returned when a Policy has a negative limit.
	ErrInvalidPolicy = errors.New("INVALID_POLICY")

	// ErrStoreFailed is returned when fdatasync (or the truncation that
	// undoes a failed write) failed. The handle is poisoned: every later
	// write through it returns ErrStoreFailed, because after a failed fsync
	// the kernel may report later ones as successful without the data being
	// durable. Whether the batch that hit the failure is on disk is unknown;
	// reopen the run to find out. The error also carries the *StorageError
	// of the failure, so its code is STORAGE_FULL when the device was full
	// and RUN_STORAGE otherwise.
	ErrStoreFailed = errors.New("store failed")

	// ErrStorageFull is matched by a *StorageError whose cause is a full
	// device or an exhausted quota (ENOSPC, EDQUOT) on any write of the
	// store: event stream, artifact, directory, lock file. A failed event
	// write is undone, so once space is freed the same handle (if not
	// poisoned) or a reopened one appends again.
	ErrStorageFull = errors.New("STORAGE_FULL")

	// ErrUnavailable is matched by a *StorageError whose store could not
	// be reached or could not serve the operation: a database that is
	// down, restarting, unreachable over the network or out of resources
	// (store/pgstore). Its code is RUN_STORAGE: the run pauses, and once
	// the store is back `obversa resume` carries it on
	// (docs/storage-postgres.md, "When the database is down").
	ErrUnavailable = errors.New("storage unavailable")

	// ErrClosed is returned by any operation on a closed Run.
	// Its code is RUN_STORAGE.
	ErrClosed = errors.New("store closed")

	// ErrNotOwner is returned by a write (Append, PutArtifact) through a
	// handle that does not hold the run's ownership: it took no Lock and
	// adopted none, or released it. Only the owner writes a run's record
	// (docs/decisions.md, one writer). Adopt returns it when no ownership
	// was handed to the process.
	ErrNotOwner = errors.New("NOT_OWNER")

	// ErrReadOnly is returned by a write through a handle opened
	// read-only (OpenRunReadOnly, or a run directory without write
	// permission). Its code is RUN_STORAGE.
	ErrReadOnly = errors.New("store opened read-only")
)

// codes maps each sentinel to its stable code, in the order Code tests them.
var codes = []struct {
	err  error
	code string
}{
	{ErrRevisionConflict, "REVISION_CONFLICT"},
	{ErrCorruptEventStream, "CORRUPT_EVENT_STREAM"},
	{ErrArtifactIntegrity, "ARTIFACT_INTEGRITY"},
	{ErrArtifactNotFound, "ARTIFACT_NOT_FOUND"},
	{ErrStorageLimitExceeded, "STORAGE_LIMIT_EXCEEDED"},
	{ErrKnownSecret, "KNOWN_SECRET"},
	{ErrProcessLocked, "PROCESS_LOCKED"},
	{ErrNotOwner, "NOT_OWNER"},
	{ErrStorageFull, "STORAGE_FULL"},
	{ErrRunExists, "RUN_EXISTS"},
	{ErrRunNotFound, "RUN_NOT_FOUND"},
	{ErrInvalidID, "INVALID_ID"},
	{ErrInvalidEvent, "INVALID_EVENT"},
	{ErrInvalidArtifact, "INVALID_ARTIFACT"},
	{ErrInvalidPolicy, "INVALID_POLICY"},
}

// Code returns the stable code of err: "" for nil, the code of the first
// sentinel err wraps, and "RUN_STORAGE" for anything else — an I/O failure
// (a *StorageError not caused by a full device), ErrStoreFailed,
// ErrClosed. Context errors also come out as
// RUN_STORAGE; callers that care test errors.Is(err, context.Canceled) first.
func Code(err error) string {
	if err == nil {
		return ""
	}
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return "RUN_STORAGE"
}

// ConflictError is the error of a conditional Append whose expectedRev is
// stale. It matches ErrRevisionConflict.
type ConflictError struct {
	Expected int64 // the caller's expectedRev
	Current  int64 // the stream's last committed rev when the batch was checked
}

// Error describes the conflict.
func (e *ConflictError) Error() string { return "REVISION_CONFLICT: " + e.problem() }

func (e *ConflictError) problem() string {
	return fmt.Sprintf("expected rev %d, stream is at rev %d", e.Expected, e.Current)
}

// Is reports whether target is ErrRevisionConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrRevisionConflict }

// LimitError is the error of an operation that would exceed a Policy limit.
// It matches ErrStorageLimitExceeded.
type LimitError struct {
	Limit string // the run file name of the limit, e.g. "max_event_payload_bytes"
	Max   int64  // the limit, bytes
	Size  int64  // the size that was refused, bytes (for the per-run total: the total it would reach)
	What  string // what was refused, e.g. `event 2 of 3 (type "graph:node-completed")`
}

// Error names the limit, the refused size and what was refused.
func (e *LimitError) Error() string { return "STORAGE_LIMIT_EXCEEDED: " + e.problem() }

func (e *LimitError) problem() string {
	return fmt.Sprintf("%s is %d bytes, more than %s = %d; it is a setting of the run file's storage block, which can raise it", e.What, e.Size, e.Limit, e.Max)
}

// Is reports whether target is ErrStorageLimitExceeded.
func (e *LimitError) Is(target error) bool { return target == ErrStorageLimitExceeded }

// SecretError is returned when an event or an artifact contains a known
// secret (ErrKnownSecret). Problem names what holds it and the variable
// the secret came from, never its value.
type SecretError struct {
	Problem string // e.g. `event 1 of 2 (type "t"): field data.k contains the known secret API_KEY (value withheld)`
}

// Error is the code and the problem.
func (e *SecretError) Error() string { return "KNOWN_SECRET: " + e.problem() }

func (e *SecretError) problem() string { return e.Problem }

// Is reports whether target is ErrKnownSecret.
func (e *SecretError) Is(target error) bool { return target == ErrKnownSecret }

// secretErrorf is a *SecretError whose problem is formatted.
func secretErrorf(format string, args ...any) error {
	return &SecretError{Problem: fmt.Sprintf(format, args...)}
}

// CanonicalError is returned when an event's data has no exact RFC 8785
// canonical form. It matches ErrInvalidEvent (code INVALID_EVENT) and
// ErrNotCanonical. Problem names the event and what is wrong, never the
// data.
type CanonicalError struct {
	Problem string // e.g. `event 1 of 4 (type "t"): a number cannot be represented exactly …`
}

// Error is the code and the problem.
func (e *CanonicalError) Error() string { return "INVALID_EVENT: " + e.problem() }

func (e *CanonicalError) problem() string { return e.Problem }

// Is reports whether target is ErrInvalidEvent or ErrNotCanonical.
func (e *CanonicalError) Is(target error) bool {
	return target == ErrInvalidEvent || target == ErrNotCanonical
}

// Problem returns what the store's typed error in err's chain says after
// its code — a *ConflictError's revisions, a *CorruptError's line and
// problem, a *LimitError's sizes, a *SecretError's field, a
// *CanonicalError's event — for a caller
// that records the code beside it; err's whole text when it holds none.
func Problem(err error) string {
	var p interface{ problem() string }
	if errors.As(err, &p) {
		return p.problem()
	}
	return err.Error()
}

// LockedError is returned by Lock when the lock is held elsewhere. It
// matches ErrProcessLocked and names the holder recorded in the lock file.
type LockedError struct {
	Dir    string // run directory
	Holder Holder // the recorded holder; zero when Known is false
	Known  bool   // whether a holder record could be read
	// Unreadable says why a holder record that exists could not be
	// parsed ("" when there is none, or it was read).
	Unreadable string
}

// Error names the holder.
func (e *LockedError) Error() string {
	if !e.Known && e.Unreadable != "" {
		return fmt.Sprintf("PROCESS_LOCKED: run %s is locked by another process, whose holder record in %s cannot be read (%s): "+
			"find the process with `fuser -v %[2]s` and end it, or wait for it to finish", e.Dir, filepath.Join(e.Dir, lockFile), e.Unreadable)
	}
	if !e.Known {
		return fmt.Sprintf("PROCESS_LOCKED: run %s is locked by another process, which has not yet recorded who it is", e.Dir)
	}
	h := e.Holder
	return fmt.Sprintf("PROCESS_LOCKED: run %s is locked by pid %d on host %q (boot %s, since %s)",
		e.Dir, h.PID, h.Host, h.BootID, h.StartedAt.UTC().Format(tsLayout))
}

// Is reports whether target is ErrProcessLocked.
func (e *LockedError) Is(target error) bool { return target == ErrProcessLocked }

// StorageError is an I/O failure of the store, naming the operation and
// the path. It matches ErrStorageFull when the device or quota was full
// (ENOSPC, EDQUOT); its code is RUN_STORAGE otherwise. Unwrap gives the
// cause (a *fs.PathError or a syscall.Errno).
type StorageError struct {
	Op   string // the failed operation: "write", "fdatasync", "create", "link", …
	Path string // the file or directory
	Err  error
}

// Error names the code, the operation, the path and the cause.
func (e *StorageError) Error() string {
	code := "RUN_STORAGE"
	if e.full() {
		code = "STORAGE_FULL"
	}
	cause := e.Err
	var pe *fs.PathError
	if errors.As(cause, &pe) && pe.Path == e.Path {
		cause = pe.Err // the path is named once
	}
	return fmt.Sprintf("%s: %s %s: %v", code, e.Op, e.Path, cause)
}

// Unwrap returns the cause.
func (e *StorageError) Unwrap() error { return e.Err }

// Is reports whether target is ErrStorageFull and the device was full.
func (e *StorageError) Is(target error) bool { return target == ErrStorageFull && e.full() }

func (e *StorageError) full() bool {
	return errors.Is(e.Err, syscall.ENOSPC) || errors.Is(e.Err, syscall.EDQUOT)
}

// storageErr wraps an I/O error of op on path as a *StorageError (nil for
// nil; an error that already is one, or a context error, is returned as
// is).
func storageErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var se *StorageError
	if errors.As(err, &se) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &StorageError{Op: op, Path: path, Err: err}
}
