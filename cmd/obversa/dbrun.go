package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/internal/shellquote"
	"github.com/obversa/obversa/store"
	"github.com/obversa/obversa/store/pgstore"
)

// dbRun is a run kept in PostgreSQL (store/pgstore), named by the storage
// URL, namespace and run id. Its backend is opened on first use (a worker
// learns libpq's variables from its watchdog before it connects) with the
// run's local directory: the storage directory of its plan, where its
// logs and plugin cache are, as for a run in the file backend. Safe for
// concurrent use.
type dbRun struct {
	url, namespace, id string

	mu     sync.Mutex
	b      *pgstore.Backend
	shared bool // b belongs to the caller: Close leaves it open
	marker string
}

var _ runRef = (*dbRun)(nil)

// newDBRun names run id of namespace in the database url; nothing is
// opened yet.
func newDBRun(url, namespace, id string) *dbRun {
	return &dbRun{url: url, namespace: namespace, id: id}
}

// open connects once: it reads the run's plan through a backend whose
// local directory is never written (a read-only handle creates nothing),
// then opens the backend the run's handles use, under the plan's storage
// directory. Errors: store.ErrRunNotFound, the plan's, the connection's.
func (r *dbRun) open(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.b != nil {
		return nil
	}
	probe, err := pgstore.OpenURL(ctx, r.url, os.TempDir(), r.namespace)
	if err != nil {
		return err
	}
	defer probe.Close()
	run, err := probe.OpenRunReadOnly(ctx, r.id)
	if err != nil {
		return err
	}
	rs, err := runstate.ReadStart(ctx, run)
	run.Close()
	if err != nil {
		return fmt.Errorf("run %s: %w", r.id, err)
	}
	b, err := pgstore.OpenURL(ctx, r.url, rs.Plan.Storage.Directory, r.namespace)
	if err != nil {
		return err
	}
	r.b = b
	return nil
}

// backend returns the open backend.
func (r *dbRun) backend(ctx context.Context) (*pgstore.Backend, error) {
	if err := r.open(ctx); err != nil {
		return nil, err
	}
	return r.b, nil
}

// Open opens the run for writing under p.
func (r *dbRun) Open(ctx context.Context, p store.Policy) (store.Record, error) {
	b, err := r.backend(ctx)
	if err != nil {
		return nil, err
	}
	return b.OpenRun(ctx, r.id, p)
}

// OpenReadOnly opens the run for reading.
func (r *dbRun) OpenReadOnly(ctx context.Context) (store.Record, error) {
	b, err := r.backend(ctx)
	if err != nil {
		return nil, err
	}
	return b.OpenRunReadOnly(ctx, r.id)
}

// Verify re-checks the run's record (pgstore.Backend.Verify).
func (r *dbRun) Verify(ctx context.Context) (store.Report, error) {
	b, err := r.backend(ctx)
	if err != nil {
		return store.Report{}, err
	}
	return b.Verify(ctx, r.id)
}

// Marker is watchdog.RecordMarker of the run under this process's host
// name, read once.
func (r *dbRun) Marker(ctx context.Context) (string, error) {
	r.mu.Lock()
	m := r.marker
	r.mu.Unlock()
	if m != "" {
		return m, nil
	}
	b, err := r.backend(ctx)
	if err != nil {
		return "", err
	}
	run, err := b.OpenRunReadOnly(ctx, r.id)
	if err != nil {
		return "", err
	}
	defer run.Close()
	m, err = watchdog.RecordMarker(ctx, "postgres schema "+b.Config().Schema, r.namespace, run, store.HostName())
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	r.marker = m
	r.mu.Unlock()
	return m, nil
}

// Owner reads the run's lease (docs/storage-postgres.md): live while it
// is held and unexpired by the database's clock — and, when its holder ran
// on this host and boot, while that process runs (the rule Lock applies).
// Another host's holder is judged by its lease alone.
func (r *dbRun) Owner(ctx context.Context, run store.Record) (watchdog.Owner, error) {
	pr, ok := run.(*pgstore.Run)
	if !ok {
		return watchdog.Owner{}, fmt.Errorf("run %s: not a PostgreSQL run handle (%T)", r.id, run)
	}
	l, err := pr.Lease(ctx)
	if err != nil {
		return watchdog.Owner{}, err
	}
	if l.ID == "" {
		return watchdog.Owner{}, nil
	}
	me := store.CurrentHolder()
	here := l.Holder.Host == me.Host && l.Holder.BootID != "" && l.Holder.BootID == me.BootID
	live := l.Held && !l.Expired && !(here && !store.HolderAlive(l.Holder))
	return watchdog.Owner{Holder: l.Holder, Found: true, Live: live, Here: here, Epoch: l.Epoch, Detail: l.String()}, nil
}

// Args names the run to a child: the storage URL (it carries no
// password), the namespace and the run id.
func (r *dbRun) Args() []string {
	return []string{"--storage", r.url, "--namespace", r.namespace, "--run-id", r.id}
}

// Shell is String: it is already quoted for a POSIX shell.
func (r *dbRun) Shell() string { return r.String() }

// String is how a person names the run on this host: its id, after
// --storage and --namespace unless OBVERSA_STORAGE_URL and the default
// namespace already say so, each quoted for a POSIX shell.
func (r *dbRun) String() string {
	var b strings.Builder
	if os.Getenv(storageURLEnv) != r.url {
		b.WriteString("--storage " + shellquote.Quote(r.url) + " ")
	}
	if r.namespace != defaultNamespace {
		b.WriteString("--namespace " + shellquote.Quote(r.namespace) + " ")
	}
	b.WriteString(shellquote.Quote(r.id))
	return b.String()
}

// LocalDir is <the plan's storage directory>/<namespace>/runs/<run-id>
// on this host.
func (r *dbRun) LocalDir(ctx context.Context) (string, error) {
	b, err := r.backend(ctx)
	if err != nil {
		return "", err
	}
	return filepath.Join(b.Config().LocalDir, r.namespace, "runs", r.id), nil
}

// Close closes the backend, if it was opened.
func (r *dbRun) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.b == nil || r.shared {
		return nil
	}
	err := r.b.Close()
	r.b = nil
	return err
}
