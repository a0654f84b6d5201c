package workspace

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Sentinel errors (docs/architecture.md#the-watchdog, docs/cli.md#output-and-exit-status). Every error the package returns wraps
// at most one of them; match with errors.Is and turn into a stable code with
// Code.
var (
	// ErrDrift is returned by Verify when the workspace no longer matches
	// the snapshot. The concrete error is a *DriftError listing the changes.
	ErrDrift = errors.New("WORKSPACE_DRIFT")

	// ErrLeaseHeld is returned by AcquireLease when another open file
	// description — another process, or another Lease in this process —
	// holds the workspace lease. The concrete error is a *LeaseError naming
	// the holder.
	ErrLeaseHeld = errors.New("WORKSPACE_LEASE")

	// ErrInvalidSnapshot is returned by Decode, Encode and Verify for a
	// snapshot that breaks the rules in the package documentation: unknown
	// or missing fields, unsorted or repeated paths, malformed hashes or
	// modes, a digest that does not match the manifest.
	ErrInvalidSnapshot = errors.New("WORKSPACE_ANCHOR_INVALID")

	// ErrProvider is returned by Take (and so Verify) when the provider is
	// unknown or cannot snapshot the root: the root is not inside a git
	// work tree, git is not installed or fails, or a file name is not valid
	// UTF-8. The message says what to change. It has no stable code: it is
	// a diagnostic for the run file's author.
	ErrProvider = errors.New("workspace provider unavailable")
)

// codes maps sentinels to the stable codes of docs/cli.md#output-and-exit-status, in match order.
var codes = []struct {
	err  error
	code string
}{
	{ErrDrift, "WORKSPACE_DRIFT"},
	{ErrLeaseHeld, "WORKSPACE_LEASE"},
	{ErrInvalidSnapshot, "WORKSPACE_ANCHOR_INVALID"},
}

// Code returns the stable code of err (docs/cli.md#output-and-exit-status): "WORKSPACE_DRIFT",
// "WORKSPACE_LEASE" or "WORKSPACE_ANCHOR_INVALID" when err wraps ErrDrift,
// ErrLeaseHeld or ErrInvalidSnapshot, and "" for nil and anything else
// (ErrProvider, I/O errors, context errors).
func Code(err error) string {
	if err == nil {
		return ""
	}
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return ""
}

// maxNamedChanges is how many changes DriftError.Error lists by path.
const maxNamedChanges = 10

// DriftError is the error of Verify when the workspace changed since the
// snapshot. It matches ErrDrift.
type DriftError struct {
	Root    string   // the workspace root
	Changes []Change // as returned by Compare; never empty
}

// Error names the first ten changes and the total count.
func (e *DriftError) Error() string {
	var b strings.Builder
	n := len(e.Changes)
	noun := "changes"
	if n == 1 {
		noun = "change"
	}
	fmt.Fprintf(&b, "WORKSPACE_DRIFT: workspace %s has %d %s since its snapshot: ", e.Root, n, noun)
	for i, c := range e.Changes[:min(n, maxNamedChanges)] {
		if i > 0 {
			b.WriteString(", ")
		}
		if c.Kind == KindHead {
			fmt.Fprintf(&b, "HEAD moved from %s to %s", commitOrNone(c.Want), commitOrNone(c.Got))
			continue
		}
		b.WriteString(c.Kind)
		b.WriteByte(' ')
		b.WriteString(quoteIfNeeded(c.Path))
	}
	if n > maxNamedChanges {
		fmt.Fprintf(&b, ", and %d more", n-maxNamedChanges)
	}
	return b.String()
}

// Is reports whether target is ErrDrift.
func (e *DriftError) Is(target error) bool { return target == ErrDrift }

// LeaseError is the error of AcquireLease when the lease is held elsewhere.
// It matches ErrLeaseHeld. The holder fields come from the lease file and
// are empty when it has no record yet (the holder is between locking and
// writing it).
type LeaseError struct {
	Path   string    // the lease file
	Holder string    // the holder named by whoever took the lease, e.g. a run id
	PID    int       // the holder's process id
	Host   string    // the holder's host name
	Since  time.Time // when the holder took the lease
}

// Error names the lease file and the holder.
func (e *LeaseError) Error() string {
	if e.Holder == "" {
		return fmt.Sprintf("WORKSPACE_LEASE: workspace lease %s is held by another process (no holder recorded yet)", e.Path)
	}
	return fmt.Sprintf("WORKSPACE_LEASE: workspace lease %s is held by %q (pid %d on host %q, since %s)",
		e.Path, e.Holder, e.PID, e.Host, e.Since.UTC().Format(time.RFC3339))
}

// Is reports whether target is ErrLeaseHeld.
func (e *LeaseError) Is(target error) bool { return target == ErrLeaseHeld }

// invalidf returns an error wrapping ErrInvalidSnapshot.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidSnapshot}, args...)...)
}

func commitOrNone(id string) string {
	if id == "" {
		return "(no commit)"
	}
	return id
}

// quoteIfNeeded quotes a path that would be ambiguous in a comma-separated
// message: one with spaces, commas, quotes or unprintable runes.
func quoteIfNeeded(p string) string {
	for _, r := range p {
		if r == ' ' || r == ',' || r == '"' || !unicode.IsPrint(r) {
			return strconv.Quote(p)
		}
	}
	return p
}
