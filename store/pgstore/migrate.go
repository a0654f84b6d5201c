package pgstore

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationFiles holds the schema's versioned migrations,
// migrations/NNNN_name.sql, applied in order.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one versioned schema change.
type migration struct {
	version  int
	name     string
	sql      string
	checksum string // hex SHA-256 of sql
}

// ErrSchema marks a database schema this binary cannot work with: newer
// than it knows, or with an applied migration that differs from its own.
var ErrSchema = errors.New("pgstore: database schema mismatch")

// loadMigrations reads the embedded migrations, in version order.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("pgstore: migration file %s is not named NNNN_name.sql", n)
		}
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		ms = append(ms, migration{version: v, name: name, sql: string(b), checksum: hex.EncodeToString(sum[:])})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("pgstore: migrations are not numbered 1, 2, 3, …: %d is version %d", i+1, m.version)
		}
	}
	return ms, nil
}

// migrateLockKey is the advisory lock key that serialises the migration of
// schema across processes.
func migrateLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("obversa.pgstore.migrate." + schema))
	return int64(h.Sum64())
}

// migrate brings schema up to the embedded migrations: it creates the
// schema and its migrations table when missing and applies each missing
// migration in its own transaction, recording it in schema_migrations
// (version, name, checksum). It holds a session advisory lock while it
// works, so that processes starting at once apply each migration exactly
// once. A database that has a migration this binary does not know, or an
// applied migration whose checksum differs from the embedded one, fails
// with ErrSchema and is left alone.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, ms []migration) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	key := migrateLockKey(schema)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		return fmt.Errorf("pgstore: migrate: take the migration lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", key)

	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	ident := pgx.Identifier{schema}.Sanitize()
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
			return fmt.Errorf("pgstore: migrate: create schema %s: %w", schema, err)
		}
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+ident+`.schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		checksum   text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	applied := map[int]string{}
	rows, err := conn.Query(ctx, "SELECT version, checksum FROM "+ident+".schema_migrations")
	if err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	for rows.Next() {
		var v int
		var sum string
		if err := rows.Scan(&v, &sum); err != nil {
			return fmt.Errorf("pgstore: migrate: %w", err)
		}
		applied[v] = sum
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	for v, sum := range applied {
		if v > len(ms) {
			return fmt.Errorf("%w: schema %s is at migration %d, newer than this obversa knows (%d); use a newer obversa", ErrSchema, schema, v, len(ms))
		}
		if m := ms[v-1]; m.checksum != sum {
			return fmt.Errorf("%w: schema %s: migration %d (%s) was applied with checksum %s, this obversa has %s; the schema was changed by another build or by hand",
				ErrSchema, schema, v, m.name, sum, m.checksum)
		}
	}
	for _, m := range ms {
		if _, ok := applied[m.version]; ok {
			continue
		}
		if err := applyMigration(ctx, conn.Conn(), ident, m); err != nil {
			return err
		}
	}
	return nil
}

// applyMigration runs one migration and records it, in one transaction.
func applyMigration(ctx context.Context, conn *pgx.Conn, ident string, m migration) error {
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+ident); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO "+ident+".schema_migrations (version, name, checksum) VALUES ($1, $2, $3)", m.version, m.name, m.checksum)
		return err
	})
	if err != nil {
		return fmt.Errorf("pgstore: migrate: apply migration %d (%s): %w", m.version, m.name, err)
	}
	return nil
}
