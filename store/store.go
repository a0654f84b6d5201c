package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// runsDir is the directory under <root>/<namespace> holding run directories.
const runsDir = "runs"

// Store is the file backend: one namespace of a storage directory, runs
// living in <root>/<namespace>/runs/<run-id>/ (layout in doc.go). A Store
// holds no open files; it is safe for concurrent use.
type Store struct {
	root      string
	namespace string
	runs      string
	fsys      FS
}

// Open returns the Store for namespace under root, on the operating
// system's file system unless WithFS says otherwise. It creates nothing:
// directories are made (and fsynced) by the first CreateRun. The namespace
// must satisfy ValidID (ErrInvalidID).
func Open(root, namespace string, opts ...Option) (*Store, error) {
	if root == "" {
		return nil, errors.New("store: empty storage root")
	}
	if err := ValidID(namespace); err != nil {
		return nil, fmt.Errorf("store: namespace: %w", err)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("store: storage root: %w", err)
	}
	s := &Store{root: abs, namespace: namespace, runs: filepath.Join(abs, namespace, runsDir), fsys: OS()}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Compile-time checks that the file backend meets the contract.
var (
	_ Backend   = (*Store)(nil)
	_ Record    = (*Run)(nil)
	_ Ownership = (*runLock)(nil)
)

// Namespace returns the namespace this Store serves.
func (s *Store) Namespace() string { return s.namespace }

// Close does nothing: a Store holds no open files. Open Records stay
// usable.
func (s *Store) Close() error { return nil }

// FS returns the file system the Store keeps its runs on.
func (s *Store) FS() FS { return s.fsys }

// RunDir returns <root>/<namespace>/runs/<id>. It does not check id.
func (s *Store) RunDir(id string) string { return filepath.Join(s.runs, id) }

// CreateRun creates the run directory and its empty event stream, fsyncing
// every directory it adds an entry to, and returns the open run (a *Run).
// Errors: ErrInvalidID, ErrInvalidPolicy, ErrRunExists, a *StorageError.
func (s *Store) CreateRun(ctx context.Context, id string, p Policy) (Record, error) {
	if err := ValidID(id); err != nil {
		return nil, fmt.Errorf("store: run id: %w", err)
	}
	pol, err := compilePolicy(p)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := mkdirAllSync(s.fsys, s.runs); err != nil {
		return nil, err
	}
	dir := s.RunDir(id)
	if err := s.fsys.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%w: %s", ErrRunExists, dir)
		}
		return nil, storageErr("mkdir", dir, err)
	}
	if err := syncDir(s.fsys, s.runs); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, eventsFile)
	f, err := s.fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		return nil, storageErr("create", path, err)
	}
	if err := syncDir(s.fsys, dir); err != nil {
		return nil, err
	}
	return openRun(ctx, s.fsys, dir, pol, false)
}

// OpenRun opens an existing run, recovering its event stream (see doc.go):
// a torn last batch is moved aside and cut off; damage anywhere else
// returns a *CorruptError (ErrCorruptEventStream) and changes nothing.
// The returned Record is a *Run. Errors: ErrInvalidID, ErrInvalidPolicy,
// ErrRunNotFound, ErrCorruptEventStream, a *StorageError.
func (s *Store) OpenRun(ctx context.Context, id string, p Policy) (Record, error) {
	if err := ValidID(id); err != nil {
		return nil, fmt.Errorf("store: run id: %w", err)
	}
	return openRunDir(ctx, s.fsys, s.RunDir(id), p, false)
}

// OpenRunReadOnly opens an existing run for reading only, like
// OpenRunDirReadOnly. The returned Record is a *Run.
func (s *Store) OpenRunReadOnly(ctx context.Context, id string) (Record, error) {
	if err := ValidID(id); err != nil {
		return nil, fmt.Errorf("store: run id: %w", err)
	}
	return openRunDir(ctx, s.fsys, s.RunDir(id), Policy{}, true)
}

// Verify re-checks the run id like the package function Verify.
func (s *Store) Verify(ctx context.Context, id string) (Report, error) {
	if err := ValidID(id); err != nil {
		return Report{}, fmt.Errorf("store: run id: %w", err)
	}
	return verifyDir(ctx, s.fsys, s.RunDir(id))
}

// ListRuns returns the ids of the namespace's runs, sorted. A namespace
// with no runs yet (no directory) has none.
func (s *Store) ListRuns(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ents, err := s.fsys.ReadDir(s.runs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, storageErr("read", s.runs, err)
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() && ValidID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// OpenRunDir opens the run in directory dir (its id is the directory's
// name) on the operating system's file system, like Store.OpenRun.
func OpenRunDir(ctx context.Context, dir string, p Policy) (*Run, error) {
	return openRunDir(ctx, OS(), dir, p, false)
}

// OpenRunDirReadOnly opens an existing run directory for reading only, as
// status, events and verify do: it creates nothing, never cuts a torn
// tail (the events before it are read; the next writable open recovers
// it), and writes no cache. Writes through the returned run fail with
// ErrReadOnly. ErrRunNotFound when dir holds no events.jsonl;
// ErrCorruptEventStream as OpenRunDir.
func OpenRunDirReadOnly(ctx context.Context, dir string) (*Run, error) {
	return openRunDir(ctx, OS(), dir, Policy{}, true)
}

func openRunDir(ctx context.Context, fsys FS, dir string, p Policy, readOnly bool) (*Run, error) {
	pol, err := compilePolicy(p)
	if err != nil {
		return nil, err
	}
	fi, err := fsys.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()) {
		return nil, fmt.Errorf("%w: %s", ErrRunNotFound, dir)
	}
	if err != nil {
		return nil, storageErr("stat", dir, err)
	}
	return openRun(ctx, fsys, dir, pol, readOnly)
}

func openRun(ctx context.Context, fsys FS, dir string, pol *policy, readOnly bool) (*Run, error) {
	ev, err := openStream(ctx, fsys, dir, pol, readOnly)
	if err != nil {
		return nil, err
	}
	return &Run{id: filepath.Base(dir), dir: dir, fsys: fsys, pol: pol, events: ev, arts: newArtifactStore(fsys, dir, pol)}, nil
}

// Run is an open run directory, the file backend's Record. It is safe for
// concurrent use.
type Run struct {
	id     string
	dir    string
	fsys   FS
	pol    *policy
	events *stream
	arts   *artifactStore

	mu     sync.Mutex
	closed bool
	owner  *runLock // the ownership writes go under; nil when none is held
}

// ID returns the run id (the directory's name).
func (r *Run) ID() string { return r.id }

// Dir returns the run directory.
func (r *Run) Dir() string { return r.dir }

// Close closes the event stream (saving its validated-prefix cache if this
// handle appended). Later calls on the run return ErrClosed. Ownership
// taken through the run is not released by Close.
func (r *Run) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	return r.events.close()
}

func (r *Run) usable() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	return nil
}
