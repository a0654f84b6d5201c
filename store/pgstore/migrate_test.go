package pgstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
)

// TestMigrateConcurrently: processes opening a fresh schema at once apply
// each migration exactly once; reopening applies nothing.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	c := testConfig(t, testURL(t), testSchema(t))
	c.LocalDir = t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := Open(context.Background(), c, "ns")
			if err == nil {
				b.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		must(t, err)
	}
	b := openBackend(t, c, "ns")
	var n, v int
	must(t, b.pool.QueryRow(context.Background(), `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &v))
	ms, err := loadMigrations(migrationFiles)
	must(t, err)
	if n != len(ms) || v != len(ms) {
		t.Fatalf("schema_migrations holds %d rows up to version %d, want %d", n, v, len(ms))
	}
}

// TestMigrateRefuses: a schema at a migration this binary does not know,
// or whose applied migration differs from the embedded one, is refused
// and left alone.
func TestMigrateRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, c := newBackend(t)
	sqlExec(t, b, `UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1`)
	if _, err := Open(ctx, c, "ns"); !errors.Is(err, ErrSchema) {
		t.Fatalf("Open with an edited migration: %v", err)
	}
	sqlExec(t, b, `UPDATE schema_migrations SET checksum = $1 WHERE version = 1`, mustMigrations(t)[0].checksum)
	sqlExec(t, b, `INSERT INTO schema_migrations (version, name, checksum) VALUES (999, 'future', 'x')`)
	if _, err := Open(ctx, c, "ns"); !errors.Is(err, ErrSchema) {
		t.Fatalf("Open of a newer schema: %v", err)
	}
}

func mustMigrations(t *testing.T) []migration {
	ms, err := loadMigrations(migrationFiles)
	must(t, err)
	return ms
}

// TestMigrationUpgrade: a second migration added to the set is applied to
// a schema at the first, in order.
func TestMigrationUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, c := newBackend(t)
	ms := mustMigrations(t)
	fsys := fstest.MapFS{}
	for _, m := range ms {
		fsys["migrations/"+pad(m.version)+"_"+m.name+".sql"] = &fstest.MapFile{Data: []byte(m.sql)}
	}
	fsys["migrations/"+pad(len(ms)+1)+"_extra.sql"] = &fstest.MapFile{Data: []byte(`CREATE TABLE extra (x int)`)}
	more, err := loadMigrations(fsys)
	must(t, err)
	must(t, migrate(ctx, b.pool, c.Schema, more))
	var exists bool
	must(t, b.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, pgx.Identifier{c.Schema, "extra"}.Sanitize()).Scan(&exists))
	if !exists {
		t.Fatal("the added migration was not applied")
	}
	bad := fstest.MapFS{"migrations/0002_x.sql": &fstest.MapFile{}}
	if _, err := loadMigrations(bad); err == nil {
		t.Fatal("migrations starting at 2 were accepted")
	}
}

func pad(v int) string {
	s := "000" + string(rune('0'+v))
	return s[len(s)-4:]
}
