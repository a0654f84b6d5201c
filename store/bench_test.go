package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/obversa/obversa/internal/canonjson"
)

// benchEvent is a typical event payload, the shape of a node-completed
// record (~250 bytes canonical). It is a Go struct, as host code would
// append it, so every append pays marshalling and canonicalisation.
type benchEvent struct {
	Node      string     `json:"node"`
	Position  string     `json:"position"`
	AttemptID string     `json:"attempt_id"`
	RetrySafe bool       `json:"retry_safe"`
	Result    benchRes   `json:"result"`
	Usage     benchUsage `json:"usage"`
}

type benchRes struct {
	OK      bool   `json:"ok"`
	Summary string `json:"summary"`
}

type benchUsage struct {
	Input         int `json:"input"`
	Output        int `json:"output"`
	CacheRead     int `json:"cache_read"`
	CacheCreation int `json:"cache_creation"`
}

func benchData(i int) benchEvent {
	return benchEvent{
		Node:      fmt.Sprintf("node-%d", i),
		Position:  fmt.Sprintf("dag/node-%d/1", i),
		AttemptID: fmt.Sprintf("sha256:%064x", i),
		RetrySafe: true,
		Result:    benchRes{OK: true, Summary: "finished without findings; 3 files changed"},
		Usage:     benchUsage{Input: 1234, Output: i % 1000, CacheRead: 512},
	}
}

// buildStream creates a run with n events appended in batches of batch.
func buildStream(tb testing.TB, dir string, n, batch int) string {
	tb.Helper()
	ctx := context.Background()
	s, err := Open(dir, "bench")
	if err != nil {
		tb.Fatal(err)
	}
	rec, err := s.CreateRun(ctx, "r", Policy{})
	r, _ := rec.(*Run)
	if err != nil {
		tb.Fatal(err)
	}
	evs := make([]NewEvent, 0, batch)
	rev := int64(0)
	for i := 0; i < n; {
		evs = evs[:0]
		for j := 0; j < batch && i < n; j++ {
			evs = append(evs, NewEvent{Type: "graph:node-completed", Data: benchData(i)})
			i++
		}
		if rev, err = r.events.Append(ctx, rev, evs...); err != nil {
			tb.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		tb.Fatal(err)
	}
	return r.Dir()
}

// peakHeap runs fn while sampling the bytes of heap objects (live and not
// yet collected) every millisecond, and returns the largest sample.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	read := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > peak.Load() {
			peak.Store(v)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				read()
			}
		}
	}()
	fn()
	read()
	close(done)
	wg.Wait()
	return peak.Load()
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)]
}

// BenchmarkAppendDurable measures one single-event conditional Append at a
// time (each a write and an fdatasync), interleaved with a raw write +
// fdatasync of the same line bytes to another file in the same directory,
// so both see the same disk. Reports p50/p99 of both and their ratio.
func BenchmarkAppendDurable(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	s, _ := Open(dir, "bench")
	rec, err := s.CreateRun(ctx, "r", Policy{})
	r, _ := rec.(*Run)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	raw, err := os.OpenFile(filepath.Join(dir, "raw"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	line, _ := encodeLine(nil, 12345, 12345, "0b7e2c4e-8a53-4e0c-9f5e-2b8d6f1a9c3d", "graph:node-completed",
		time.Now(), mustCanon(b, benchData(1)), digestString([32]byte{1}))
	var app, rw []time.Duration
	rev := int64(0)
	i := 0
	for b.Loop() {
		t0 := time.Now()
		rev, err = r.events.Append(ctx, rev, NewEvent{Type: "graph:node-completed", Data: benchData(i)})
		t1 := time.Now()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := raw.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := (osFile{raw}).Datasync(); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		app = append(app, t1.Sub(t0))
		rw = append(rw, t2.Sub(t1))
		i++
	}
	ap50, ap99 := percentile(app, .5), percentile(app, .99)
	rp50, rp99 := percentile(rw, .5), percentile(rw, .99)
	b.ReportMetric(float64(ap50.Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(ap99.Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(rp50.Nanoseconds()), "raw-p50-ns")
	b.ReportMetric(float64(rp99.Nanoseconds()), "raw-p99-ns")
	b.ReportMetric(float64(ap50)/float64(rp50), "ratio-p50")
	b.ReportMetric(float64(ap99)/float64(rp99), "ratio-p99")
}

func mustCanon(tb testing.TB, v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := canonjson.Data(raw, false)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// BenchmarkPrepare measures what every Append does before it takes the
// stream's mutex: marshal a Go struct, canonicalise it (RFC 8785: the
// struct's fields sorted), check it for known secrets (none configured)
// and give it an id.
func BenchmarkPrepare(b *testing.B) {
	r := newTestRun(b, Policy{})
	s := r.events
	i := 0
	for b.Loop() {
		if _, err := s.prepare([]NewEvent{{Type: "graph:node-completed", Data: benchData(i)}}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkOpenVerify100k measures, on a 100 000-event stream (~45 MB):
// open with full validation (no cache: what the first open after a crash
// without a cache costs), and Verify (full re-check, read-only). Reports
// the peak bytes of heap objects during one extra run.
func BenchmarkOpenVerify100k(b *testing.B) {
	dir := buildStream(b, b.TempDir(), 100_000, 1000)
	ctx := context.Background()
	b.Run("open", func(b *testing.B) {
		open := func() {
			os.Remove(filepath.Join(dir, eventsFile+cacheSuffix))
			r, err := OpenRunDir(ctx, dir, Policy{})
			if err != nil {
				b.Fatal(err)
			}
			if r.events.Rev() != 100_000 {
				b.Fatalf("rev %d", r.events.Rev())
			}
			r.events.mu <- struct{}{}
			r.events.appended = false // keep Close from writing a cache
			r.events.unlock()
			r.Close()
		}
		for b.Loop() {
			open()
		}
		b.StopTimer()
		b.ReportMetric(float64(peakHeap(open))/(1<<20), "peak-heap-MiB")
		os.Remove(filepath.Join(dir, eventsFile+cacheSuffix))
	})
	b.Run("verify", func(b *testing.B) {
		verify := func() {
			rep, err := Verify(ctx, dir)
			if err != nil || rep.Events != 100_000 {
				b.Fatalf("verify: %v %+v", err, rep)
			}
		}
		for b.Loop() {
			verify()
		}
		b.StopTimer()
		b.ReportMetric(float64(peakHeap(verify))/(1<<20), "peak-heap-MiB")
	})
}

// BenchmarkReopenAfterAppend measures opening a 100 000-event stream whose
// validated-prefix cache is 10 events behind: each iteration appends 10
// events through a long-lived writer (not timed), then opens and closes a
// fresh handle (timed).
func BenchmarkReopenAfterAppend(b *testing.B) {
	dir := buildStream(b, b.TempDir(), 100_000, 1000)
	ctx := context.Background()
	w, err := OpenRunDir(ctx, dir, Policy{}) // writes the cache: full validation happened
	if err != nil {
		b.Fatal(err)
	}
	w.events.mu <- struct{}{}
	w.events.saveCache()
	w.events.unlock()
	defer w.Close()
	i := 0
	for b.Loop() {
		b.StopTimer()
		// Append 10 events, then put the cache back to "10 behind".
		w.events.mu <- struct{}{}
		w.events.saveCache()
		w.events.unlock()
		evs := make([]NewEvent, 10)
		for j := range evs {
			evs[j] = NewEvent{Type: "graph:node-completed", Data: benchData(i)}
			i++
		}
		if _, err := w.events.Append(ctx, w.events.Rev(), evs...); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		r, err := OpenRunDir(ctx, dir, Policy{})
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
	b.StopTimer()
	b.ReportMetric(float64(peakHeap(func() {
		r, err := OpenRunDir(ctx, dir, Policy{})
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}))/(1<<20), "peak-heap-MiB")
}

// BenchmarkCacheWrite measures writing the validated-prefix cache of a
// 100 000-event stream (~0.8 MB), as writeCache does it (temporary file,
// fsync, rename), against a floor: the same bytes written to a temporary
// file and renamed without the fsync.
func BenchmarkCacheWrite(b *testing.B) {
	dir := buildStream(b, b.TempDir(), 100_000, 1000)
	r, err := OpenRunDir(context.Background(), dir, Policy{})
	if err != nil {
		b.Fatal(err)
	}
	data := encodeCache(r.events.st)
	r.Close()
	path := filepath.Join(dir, eventsFile)
	b.Run("floor-no-fsync", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			tmp := path + cacheSuffix + ".floor"
			if err := os.WriteFile(tmp, data, 0o644); err != nil {
				b.Fatal(err)
			}
			if err := os.Rename(tmp, path+cacheSuffix); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fsync", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if err := writeCache(OS(), path, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
