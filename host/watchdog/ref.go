package watchdog

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"

	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/internal/regfile"
	"github.com/obversa/obversa/internal/shellquote"
	"github.com/obversa/obversa/store"
)

// Ref is one stored run as the watchdog, its worker, its keeper and the
// operator commands find it (docs/cli.md, "RUN"): how to open its record,
// the owner marker its processes carry on this host, who owns it, and how
// to name it to a child process and to a person. DirRef is a run
// directory of the file backend; the CLI implements Ref for a run kept in
// PostgreSQL. A Ref may hold a connection to its backend, which its maker
// closes.
type Ref interface {
	// Open opens the run for writing under p (the record policy of its
	// plan; the zero Policy to read the plan first). Errors are the
	// backend's: store.ErrRunNotFound, store.ErrCorruptEventStream, …
	Open(ctx context.Context, p store.Policy) (store.Record, error)
	// OpenReadOnly opens the run for reading only.
	OpenReadOnly(ctx context.Context) (store.Record, error)
	// Marker returns the owner marker ("sha256:<hex>") that every process
	// the run starts on this host carries (launch.OwnerEnv): the same for
	// every process that handles the run here, different for every other
	// run (docs/decisions.md, "Owner markers").
	Marker(ctx context.Context) (string, error)
	// Owner reports who owns the run now, as this host can tell (run is
	// the caller's handle on it).
	Owner(ctx context.Context, run store.Record) (Owner, error)
	// Args are the arguments that name the run to `obversa worker` and
	// `obversa keeper`.
	Args() []string
	// String names the run on this host: a run directory (a path, as
	// JSON and log lines show it), or a run id with the flags that say
	// where it is kept.
	String() string
	// Shell names the run as a person types it after an obversa command
	// in a POSIX shell: String with each word quoted where the shell
	// would split or expand it (internal/shellquote). Every copy-paste
	// command printed for a person uses it (docs/cli.md, "Copy-paste
	// commands").
	Shell() string
}

// Owner is who owns a run, as seen from this host.
type Owner struct {
	// Holder is the process that last took the run's ownership; zero when
	// Found is false.
	Holder store.Holder
	// Found is false when the run was never owned.
	Found bool
	// Live is true while an owner holds the run: for the file backend, its
	// lock holder's process still runs; for a lease, the lease is held and
	// has not expired (and its holder, when it ran on this host and boot,
	// still runs).
	Live bool
	// Here is true when the holder runs on this host and boot, so that its
	// pid can be signalled.
	Here bool
	// Epoch is the fencing epoch of the ownership (a lease's); 0 for the
	// file backend's lock.
	Epoch int64
	// Detail describes the ownership for messages (a lease's epoch and
	// expiry); empty for the file backend.
	Detail string
	// Note says what was set aside to tell the owner: a holder record
	// that cannot be parsed while nothing holds the lock (stale), or a
	// lock that is not a regular file. Empty otherwise.
	Note string
}

// DirRef is a run directory of the file backend, as `obversa run` prints
// it: <storage>/<namespace>/runs/<run-id>/.
type DirRef string

var _ Ref = DirRef("")

// Open opens the run directory for writing (store.OpenRunDir).
func (d DirRef) Open(ctx context.Context, p store.Policy) (store.Record, error) {
	return store.OpenRunDir(ctx, string(d), p)
}

// OpenReadOnly opens the run directory for reading only.
func (d DirRef) OpenReadOnly(ctx context.Context) (store.Record, error) {
	return store.OpenRunDirReadOnly(ctx, string(d))
}

// snapshotDir is the directory, where the run's fold snapshot is.
func (d DirRef) snapshotDir() string { return string(d) }

// Marker is OwnerMarker of the directory.
func (d DirRef) Marker(context.Context) (string, error) { return OwnerMarker(string(d)), nil }

// Owner reads the run lock's holder record; the holder is live while its
// process runs (store.HolderAlive: this host's pid, start time and boot).
// A record that cannot be parsed while no process holds the lock is stale:
// no owner, with Note saying so (docs/decisions.md); while a process holds
// the lock it is an error (*store.HolderRecordError). A lock that is not a
// regular file (a directory, a named pipe) can be held by no process: no
// owner either, with Note saying how to make it a file again.
func (d DirRef) Owner(ctx context.Context, run store.Record) (Owner, error) {
	h, found, err := run.Holder(ctx)
	var hre *store.HolderRecordError
	if errors.As(err, &hre) && !hre.Held {
		return Owner{Note: hre.Error()}, nil
	}
	if lockNotAFile(err) {
		// No process can hold a lock that is not a file (every writer
		// refuses it), so the run has no owner; readers go on, as those
		// that never read the lock (events, show) do.
		return Owner{Note: err.Error()}, nil
	}
	if err != nil || !found {
		return Owner{}, err
	}
	me := store.CurrentHolder()
	here := h.Host == me.Host && h.BootID == me.BootID
	return Owner{Holder: h, Found: true, Live: store.HolderAlive(h), Here: here}, nil
}

// Args is --run-dir and the directory.
func (d DirRef) Args() []string { return []string{"--run-dir", string(d)} }

// String is the directory.
func (d DirRef) String() string { return string(d) }

// Shell is the directory quoted for a POSIX shell.
func (d DirRef) Shell() string { return shellquote.Quote(string(d)) }

// OwnerMarker returns the owner marker of the file backend's run at
// runDir, "sha256:<hex>", derived from the run directory so that any later
// watchdog on this host finds the same one.
func OwnerMarker(runDir string) string {
	abs, err := filepath.Abs(runDir)
	if err != nil {
		abs = runDir
	}
	d, _ := plan.Digest(map[string]string{"run_dir": abs})
	return d
}

// errNoFirstEvent is RecordMarker's refusal of a run with no events.
var errNoFirstEvent = errors.New("the run has no events yet")

// RecordMarker returns the owner marker of a run kept in a shared
// backend, where a local path cannot tell runs apart (two databases, or
// two schemas, may each hold namespace/run-id): "sha256:<hex>" of the
// backend's identity (say "postgres schema obversa"), the namespace, the
// run id, the digest of the run's first event — which no other run
// shares — and host, the host name this process records as an owner
// (store.HostName), so that two hosts simulated on one machine
// (OBVERSA_HOST) do not stop each other's processes. It reads the first
// event through run; a run with no event yet has no marker.
func RecordMarker(ctx context.Context, backend, namespace string, run store.Record, host string) (string, error) {
	var first string
	stop := errors.New("stop")
	err := run.Read(ctx, 1, func(e store.Event) error {
		first = e.Digest
		return stop
	})
	if err != nil && !errors.Is(err, stop) {
		return "", err
	}
	if first == "" {
		return "", fmt.Errorf("owner marker of run %s: %w", run.ID(), errNoFirstEvent)
	}
	return plan.Digest(map[string]string{"backend": backend, "namespace": namespace, "run": run.ID(), "first_event": first, "host": host})
}

// lockNotAFile reports whether err is the refusal of a run lock that is
// not a regular file (a directory: EISDIR; a named pipe, a socket, a
// device: *regfile.NotRegularError).
func lockNotAFile(err error) bool {
	var nr *regfile.NotRegularError
	return errors.Is(err, syscall.EISDIR) || errors.As(err, &nr)
}
