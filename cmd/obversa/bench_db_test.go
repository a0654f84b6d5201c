package main

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// readBackDB finds a finished run in the database storage names as the
// CLI does and returns what recordSpan does, and how long opening and
// folding its whole record took, as a restarted worker does.
func readBackDB(b *testing.B, storage, id string) (first time.Time, span time.Duration, events int, fold time.Duration) {
	b.Helper()
	ctx := b.Context()
	g := &globals{storageFlag: storage, namespace: defaultNamespace}
	ref, err := g.findRun(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	defer ref.Close()
	start := time.Now()
	run, err := ref.OpenReadOnly(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer run.Close()
	st, err := runstate.Load(ctx, run)
	if err != nil {
		b.Fatal(err)
	}
	if st.Finished() == nil {
		b.Fatal("the folded record has no result")
	}
	fold = time.Since(start)
	var last time.Time
	err = run.Read(ctx, 1, func(e store.Event) error {
		events++
		if e.Type == "graph:node-dispatched" && first.IsZero() {
			first = e.TS
		}
		if e.Type == "graph:run-finished" {
			last = e.TS
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return first, last.Sub(first), events, fold
}

// pgCommit measures a bare INSERT of one 512-byte row committed on its
// own, on one connection to db's database, the floor a durable append to
// PostgreSQL pays (one round trip, one WAL flush); it returns ms per op.
func pgCommit(b *testing.B, db pgDB, ops int) float64 {
	b.Helper()
	ctx := b.Context()
	c := db.connect(b, ctx)
	defer c.Close(ctx)
	table := pgx.Identifier{db.schema, "bench_floor"}.Sanitize()
	if _, err := c.Exec(ctx, "CREATE TABLE "+table+" (id bigint PRIMARY KEY, data text NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	line := strings.Repeat("x", 512)
	start := time.Now()
	for i := 0; i < ops; i++ {
		if _, err := c.Exec(ctx, "INSERT INTO "+table+" (id, data) VALUES ($1, $2)", i, line); err != nil {
			b.Fatal(err)
		}
	}
	return float64(time.Since(start).Microseconds()) / 1000 / float64(ops)
}
