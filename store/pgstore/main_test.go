package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/obversa/obversa/store"
)

// Environment of the PostgreSQL tests.
const (
	// testURLEnv holds the URL of a database the tests may create schemas
	// in (scripts/pg-test-cluster.sh start prints one).
	testURLEnv = "OBVERSA_TEST_POSTGRES"
	// requireEnv=1 (set by .ci/run) turns the skip without testURLEnv into
	// a failure.
	requireEnv = "OBVERSA_REQUIRE_POSTGRES"
	// helperEnv makes the test binary act as a helper process (helper_test.go).
	helperEnv = "PGSTORE_HELPER"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(runHelper(role))
	}
	os.Exit(m.Run())
}

// testURL returns the test database's URL, skipping the test when there
// is none (failing under OBVERSA_REQUIRE_POSTGRES=1).
func testURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(testURLEnv)
	if u == "" {
		msg := "PostgreSQL tests need " + testURLEnv + ": run scripts/pg-test-cluster.sh start, then eval \"$(scripts/pg-test-cluster.sh env)\""
		if os.Getenv(requireEnv) == "1" {
			tb.Fatal(msg + " (" + requireEnv + "=1 makes this a failure)")
		}
		tb.Skip(msg)
	}
	return u
}

// testSchema returns a fresh schema name for one test, dropped (with all
// it holds) when the test ends, so that tests run in parallel.
func testSchema(tb testing.TB) string {
	tb.Helper()
	u := testURL(tb)
	var b [6]byte
	rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := testConfig(tb, u, schema)
		conn, err := pgx.Connect(ctx, c.URL)
		if err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// testConfig is the Config of url with schema and a short lease (2 s TTL,
// renewed every 500 ms).
func testConfig(tb testing.TB, url, schema string) Config {
	tb.Helper()
	c, err := ParseURL(url)
	if err != nil {
		tb.Fatal(err)
	}
	c.Schema = schema
	c.LocalDir = os.TempDir()
	c.LeaseTTL = 2 * time.Second
	c.RenewEvery = 500 * time.Millisecond
	return c
}

// newBackend opens a Backend on a fresh schema, closed at the end of the
// test, and returns it with its Config.
func newBackend(tb testing.TB) (*Backend, Config) {
	tb.Helper()
	c := testConfig(tb, testURL(tb), testSchema(tb))
	c.LocalDir = tb.TempDir()
	return openBackend(tb, c, "ns"), c
}

// openBackend opens c's namespace ns, closed at the end of the test.
func openBackend(tb testing.TB, c Config, ns string) *Backend {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := Open(ctx, c, ns)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close() })
	return b
}

// lockedRun creates run id and takes its lease.
func lockedRun(tb testing.TB, b *Backend, id string) (*Run, *Lease) {
	tb.Helper()
	ctx := context.Background()
	rec, err := b.CreateRun(ctx, id, store.Policy{})
	if err != nil {
		tb.Fatal(err)
	}
	r := rec.(*Run)
	tb.Cleanup(func() { r.Close() })
	own, err := r.Lock(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	l := own.(*Lease)
	tb.Cleanup(func() { l.Release() })
	return r, l
}

// sqlExec runs statements on the backend's schema, for tests that damage
// or inspect the tables directly.
func sqlExec(tb testing.TB, b *Backend, sql string, args ...any) {
	tb.Helper()
	if _, err := b.pool.Exec(context.Background(), sql, args...); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
}

func ev(id string, data any) store.NewEvent {
	return store.NewEvent{ID: id, Type: "test:event", Data: data}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
