package pgstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/obversa/obversa/store"
)

// Backend is one namespace of the record in PostgreSQL: a store.Backend.
// It holds a connection pool, shared by its Records; the pool closes once
// the Backend and every Record and lease opened through it are closed or
// released. Safe for concurrent use.
type Backend struct {
	cfg  Config
	ns   string
	pool *pgxpool.Pool
	lis  *listener

	mu     sync.Mutex
	refs   int  // the Backend itself, open Records, held leases
	closed bool // Close was called
}

var _ store.Backend = (*Backend)(nil)

// Open connects to the database cfg names, brings its schema up to date
// (versioned migrations, see migrate) and returns the Backend serving
// namespace. Errors: ErrConfig (a bad setting), store.ErrInvalidID (the
// namespace), ErrSchema, and connection errors naming the database without
// its credentials.
func Open(ctx context.Context, cfg Config, namespace string) (*Backend, error) {
	if err := store.ValidID(namespace); err != nil {
		return nil, fmt.Errorf("pgstore: namespace: %w", err)
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.LocalDir == "" {
		return nil, fmt.Errorf("%w: no local directory for the files kept beside the record (logs)", ErrConfig)
	}
	abs, err := filepath.Abs(cfg.LocalDir)
	if err != nil {
		return nil, fmt.Errorf("%w: local directory: %v", ErrConfig, err)
	}
	cfg.LocalDir = abs
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, Redact(cfg.URL), redactErr(err))
	}
	pc.ConnConfig.RuntimeParams["search_path"] = cfg.Schema
	if pc.ConnConfig.RuntimeParams["synchronous_commit"] == "" {
		// An append is acknowledged once durable, whatever the server's or
		// the role's default; a URL that sets it is the user's choice.
		pc.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	}
	if pc.ConnConfig.RuntimeParams["application_name"] == "" {
		pc.ConnConfig.RuntimeParams["application_name"] = "obversa"
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connect to %s: %w", cfg, redactErr(err))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, connectErr(cfg, err)
	}
	ms, err := loadMigrations(migrationFiles)
	if err == nil {
		err = migrate(ctx, pool, cfg.Schema, ms)
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	b := &Backend{cfg: cfg, ns: namespace, pool: pool, refs: 1}
	b.lis = newListener(b)
	return b, nil
}

// OpenURL is ParseURL then Open, with localDir as Config.LocalDir: what a
// command given `--storage postgres://…` calls. Errors: those of ParseURL
// and Open.
func OpenURL(ctx context.Context, url, localDir, namespace string) (*Backend, error) {
	cfg, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	cfg.LocalDir = localDir
	return Open(ctx, cfg, namespace)
}

// IsURL reports whether a storage setting names a PostgreSQL database
// (postgres:// or postgresql://) rather than a directory.
func IsURL(storage string) bool {
	return strings.HasPrefix(storage, "postgres://") || strings.HasPrefix(storage, "postgresql://")
}

// redactErr keeps a driver error's meaning but drops a connection string
// it might quote. pgconn's own errors already mask passwords; this strips
// what remains of the configuration from parse errors.
func redactErr(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return errors.New("the URL cannot be parsed: " + errors.Unwrap(pe).Error())
	}
	return err
}

// Namespace returns the namespace b serves.
func (b *Backend) Namespace() string { return b.ns }

// Config returns b's configuration (its URL carries no password).
func (b *Backend) Config() Config { return b.cfg }

// acquire counts a Record or lease that uses the pool. It fails with
// store.ErrClosed once b is closed.
func (b *Backend) acquire() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return store.ErrClosed
	}
	b.refs++
	return nil
}

// release undoes acquire; the last release closes the pool.
func (b *Backend) release() {
	b.mu.Lock()
	b.refs--
	last := b.refs == 0
	b.mu.Unlock()
	if last {
		b.lis.stop()
		b.pool.Close()
	}
}

// Close closes b. Records and leases opened through it stay usable until
// they are closed or released; the pool closes after the last of them.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.release()
	return nil
}

// runDir is the local directory of run id.
func (b *Backend) runDir(id string) string {
	return filepath.Join(b.cfg.LocalDir, b.ns, "runs", id)
}

// checkLocalDir refuses a new run whose local directory is a file-store
// run's (ErrLocalDirInUse): both backends lay runs out as
// <directory>/<namespace>/runs/<run-id>/.
func (b *Backend) checkLocalDir(id string) error {
	dir := b.runDir(id)
	if _, err := os.Lstat(filepath.Join(dir, "events.jsonl")); err == nil {
		return fmt.Errorf("%w: %s: %s is the directory of a run of the file store with the id %q (its events.jsonl), where this run's logs, stream and fold snapshot would be written; choose another run id (--run-id)",
			ErrLocalDirInUse, b.label(id), dir, id)
	}
	return nil
}

// CreateRun creates an empty run (its row) and returns it open for
// writing; ownership is taken with Lock. Errors: store.ErrInvalidID,
// store.ErrInvalidPolicy, store.ErrRunExists, ErrLocalDirInUse, database
// errors.
func (b *Backend) CreateRun(ctx context.Context, id string, p store.Policy) (store.Record, error) {
	if err := store.ValidID(id); err != nil {
		return nil, fmt.Errorf("pgstore: run id: %w", err)
	}
	sl, err := store.NewSealer(p)
	if err != nil {
		return nil, err
	}
	if err := b.checkLocalDir(id); err != nil {
		return nil, err
	}
	tag, err := b.pool.Exec(ctx, `INSERT INTO runs (namespace, run_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, b.ns, id)
	if err != nil {
		return nil, dbErr("create", b.label(id), err)
	}
	if tag.RowsAffected() == 0 {
		return nil, fmt.Errorf("%w: %s", store.ErrRunExists, b.label(id))
	}
	return b.newRun(id, sl, false)
}

// OpenRun opens an existing run for writing. There is nothing to recover:
// a batch is one transaction, committed whole or not at all. Errors:
// store.ErrInvalidID, store.ErrInvalidPolicy, store.ErrRunNotFound.
func (b *Backend) OpenRun(ctx context.Context, id string, p store.Policy) (store.Record, error) {
	return b.open(ctx, id, p, false)
}

// OpenRunReadOnly opens an existing run for reading; its writes and
// ownership calls fail with store.ErrReadOnly.
func (b *Backend) OpenRunReadOnly(ctx context.Context, id string) (store.Record, error) {
	return b.open(ctx, id, store.Policy{}, true)
}

func (b *Backend) open(ctx context.Context, id string, p store.Policy, ro bool) (*Run, error) {
	if err := store.ValidID(id); err != nil {
		return nil, fmt.Errorf("pgstore: run id: %w", err)
	}
	sl, err := store.NewSealer(p)
	if err != nil {
		return nil, err
	}
	var rev int64
	err = b.pool.QueryRow(ctx, `SELECT rev FROM runs WHERE namespace = $1 AND run_id = $2`, b.ns, id).Scan(&rev)
	if err != nil {
		return nil, b.rowErr(id, err)
	}
	r, err := b.newRun(id, sl, ro)
	if err != nil {
		return nil, err
	}
	r.rev.Store(rev)
	return r, nil
}

func (b *Backend) newRun(id string, sl *store.Sealer, ro bool) (*Run, error) {
	dir := b.runDir(id)
	if !ro {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("pgstore: local directory of run %s: %w", id, err)
		}
	}
	if err := b.acquire(); err != nil {
		return nil, err
	}
	return &Run{b: b, id: id, dir: dir, sealer: sl, ro: ro, label: b.label(id)}, nil
}

// ListRuns returns the ids of the namespace's runs, sorted bytewise.
func (b *Backend) ListRuns(ctx context.Context) ([]string, error) {
	rows, err := b.pool.Query(ctx, `SELECT run_id FROM runs WHERE namespace = $1 ORDER BY run_id`, b.ns)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list runs: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("pgstore: list runs: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: list runs: %w", err)
	}
	return ids, nil
}

// label names run id in errors.
func (b *Backend) label(id string) string { return b.cfg.label(b.ns, id) }
