// Package snapshottest checks the fold snapshot's one property on a
// record (docs/architecture.md, "Fold snapshot"): for every revision k, the
// fold of the whole record equals the fold restored from a snapshot taken
// at k with the events after k folded on top — every field, unexported
// ones included. Tests of packages that make real records (the crash
// simulation, the CLI's end-to-end tests) run it on what they recorded.
package snapshottest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"reflect"
	"sync"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// Options compare two folds field by field, unexported fields included
// (the locks guarding them aside), with the graph's links, which it
// builds on first use, built first (what any reader of them sees).
var Options = []cmp.Option{cmp.Exporter(func(reflect.Type) bool { return true }), cmpopts.IgnoreTypes(sync.Mutex{}, sync.Once{}),
	cmp.Transformer("link", func(s *graph.State) *graph.State {
		if s != nil {
			s.Vertex("") // builds the links
		}
		return s
	})}

// Check cuts the record r at cuts revisions k spread evenly over it (at
// every revision when it is shorter, and always at the last), saves a snapshot of the
// fold at k into a temporary directory under scratch ("" for the
// system's), restores it with runstate.LoadWithSnapshot and compares the
// result with the fold of the whole record: their snapshots byte for byte
// at every k, and field by field with go-cmp at every deepEvery-th k and
// the last (a field the snapshot leaves out is compared there; a negative
// deepEvery compares field by field only where the bytes differ). It
// returns the first difference, or an error when a restore did not use
// its snapshot.
func Check(ctx context.Context, r runstate.Reader, scratch string, cuts, deepEvery int) error {
	full, err := runstate.Load(ctx, r)
	if err != nil {
		return err
	}
	want, err := full.EncodeSnapshot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(scratch, "snapshottest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	last := full.Rev()
	stride := max(last/int64(max(cuts, 1)), 1)
	prefix := runstate.New()
	for k := int64(1); k <= last; k++ {
		if k%stride != 0 && k != last {
			continue
		}
		if err := prefix.CatchUp(ctx, upTo{r, k}); err != nil {
			return err
		}
		if err := runstate.SaveSnapshot(dir, prefix); err != nil {
			return fmt.Errorf("save at rev %d: %w", k, err)
		}
		rec := &reads{Reader: r}
		got, err := runstate.LoadWithSnapshot(ctx, rec, dir)
		if err != nil {
			return fmt.Errorf("restore at rev %d: %w", k, err)
		}
		if k > 1 && !rec.from[k] {
			return fmt.Errorf("restore at rev %d did not use the snapshot (reads from %v)", k, rec.from)
		}
		b, err := got.EncodeSnapshot()
		if err != nil {
			return err
		}
		deep := deepEvery >= 0 && (k == last || deepEvery > 0 && k%int64(deepEvery) == 0)
		if !bytes.Equal(b, want) {
			deep = true
		}
		if !deep {
			continue
		}
		if d := cmp.Diff(full, got, Options...); d != "" {
			return fmt.Errorf("fold restored at rev %d differs from the full fold (-full +restored):\n%s", k, d)
		}
		if !bytes.Equal(b, want) {
			return fmt.Errorf("fold restored at rev %d encodes differently from the full fold", k)
		}
	}
	return nil
}

// upTo reads a record up to revision end.
type upTo struct {
	r   runstate.Reader
	end int64
}

// Read passes fn the events from revision from up to u.end, then stops
// without an error; the reader's errors are returned.
func (u upTo) Read(ctx context.Context, from int64, fn func(store.Event) error) error {
	stop := fmt.Errorf("end")
	err := u.r.Read(ctx, from, func(e store.Event) error {
		if e.Rev > u.end {
			return stop
		}
		return fn(e)
	})
	if err == stop {
		return nil
	}
	return err
}

// reads records the revisions reads start from.
type reads struct {
	runstate.Reader
	from map[int64]bool
}

// Read notes from and reads on with the wrapped reader.
func (r *reads) Read(ctx context.Context, from int64, fn func(store.Event) error) error {
	if r.from == nil {
		r.from = map[int64]bool{}
	}
	r.from[from] = true
	return r.Reader.Read(ctx, from, fn)
}
