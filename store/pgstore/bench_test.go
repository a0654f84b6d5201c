package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/obversa/obversa/store"
)

// benchData is a typical event payload (the shape of a node-completed
// record, ~250 bytes canonical), as the file backend's benchmarks use.
func benchData(i int) map[string]any {
	return map[string]any{
		"node": fmt.Sprintf("node-%d", i), "position": fmt.Sprintf("dag/node-%d/1", i),
		"attempt_id": fmt.Sprintf("sha256:%064x", i), "retry_safe": true,
		"result": map[string]any{"ok": true, "summary": "finished without findings; 3 files changed"},
		"usage":  map[string]any{"input": 1234, "output": i % 1000, "cache_read": 512},
	}
}

// floor is the cost the database itself puts on a durable write: a bare
// INSERT of one row (of the event's size) committed on its own, on one
// connection, with the server's synchronous_commit — one round trip and
// one WAL flush. Appends are reported as ratios to it, measured in the
// same run, interleaved (the disk's flush time drifts by the hour).
type floor struct {
	conn *pgxpool.Conn
	data string
	n    int
}

func newFloor(b *testing.B, be *Backend) *floor {
	ctx := context.Background()
	conn, err := be.pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(conn.Release)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_floor (id bigint PRIMARY KEY, data text NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	line := store.AppendLine(nil, store.Event{Rev: 1, ID: "x", Type: "graph:node-completed", Data: mustJSON(benchData(1))})
	return &floor{conn: conn, data: string(line)}
}

// insert commits one row and returns how long it took.
func (f *floor) insert(b *testing.B) time.Duration {
	f.n++
	start := time.Now()
	if _, err := f.conn.Exec(context.Background(), `INSERT INTO bench_floor (id, data) VALUES ($1, $2)`, f.n, f.data); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// BenchmarkPGAppend: one single-event conditional Append (the whole
// transaction: lock the run's row, check lease, rev and ids, insert, move
// the head, notify, commit), beside the floor.
func BenchmarkPGAppend(b *testing.B) {
	ctx := context.Background()
	be, _ := newBackend(b)
	r, _ := lockedRun(b, be, "bench")
	fl := newFloor(b, be)
	evs := make([]store.NewEvent, b.N)
	for i := range evs {
		evs[i] = store.NewEvent{Type: "graph:node-completed", Data: benchData(i)}
	}
	var app, flo time.Duration
	rev := int64(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		flo += fl.insert(b)
		start := time.Now()
		var err error
		if rev, err = r.Append(ctx, rev, evs[i]); err != nil {
			b.Fatal(err)
		}
		app += time.Since(start)
	}
	b.StopTimer()
	b.ReportMetric(float64(app.Microseconds())/float64(b.N), "append-us")
	b.ReportMetric(float64(flo.Microseconds())/float64(b.N), "floor-us")
	b.ReportMetric(float64(app)/float64(flo), "x-floor")
}

// BenchmarkPGChain200: a run of 200 events appended one at a time, each
// conditional on the last (what a 200-node chain records), beside 200
// floor inserts.
func BenchmarkPGChain200(b *testing.B) {
	ctx := context.Background()
	be, _ := newBackend(b)
	fl := newFloor(b, be)
	var app, flo time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r, _ := lockedRun(b, be, fmt.Sprintf("chain-%d", i))
		b.StartTimer()
		for j := 0; j < 200; j++ {
			flo += fl.insert(b)
			start := time.Now()
			if _, err := r.Append(ctx, int64(j), store.NewEvent{Type: "graph:node-completed", Data: benchData(j)}); err != nil {
				b.Fatal(err)
			}
			app += time.Since(start)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(app.Microseconds())/1000/float64(b.N), "chain-ms")
	b.ReportMetric(float64(flo.Microseconds())/1000/float64(b.N), "floor-ms")
	b.ReportMetric(float64(app)/float64(flo), "x-floor")
}
