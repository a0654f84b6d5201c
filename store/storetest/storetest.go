// Package storetest is the conformance suite every storage backend of
// package store passes: the record's semantics (docs in package store)
// checked through the Backend, Record and Ownership interfaces alone, so
// that the file backend and a database backend are held to the same
// rules. Cases that need something only the backend can do — start a
// child process that adopts the ownership, damage stored bytes — take a
// hook (Option); without it they are skipped with the reason the backend
// gives.
//
// Backend-specific behaviour (the file backend's torn tails, its
// validated-prefix cache) is tested beside each backend, not here.
package storetest

import (
	"context"
	"testing"

	"github.com/obversa/obversa/store"
)

// NewBackend returns a fresh, empty backend for one subtest. The suite
// closes it when the subtest ends.
type NewBackend func(t *testing.T) store.Backend

// Option adds a backend-specific hook to Run.
type Option func(*suite)

// AdoptFunc hands own (taken through the run id of b) to a child process,
// which opens the run, adopts the ownership (Record.Adopt) and appends one
// event of type "storetest:adopted" at the revision it reads. It returns
// the child's result: the revision of its append, or its error.
type AdoptFunc func(t *testing.T, b store.Backend, id string, own store.Ownership) (int64, error)

// WithAdopt gives the suite a way to test Adopt through Handoff.
func WithAdopt(f AdoptFunc) Option { return func(s *suite) { s.adopt = f } }

// SkipAdopt says why the backend cannot test Adopt (the adopt cases are
// skipped with reason).
func SkipAdopt(reason string) Option { return func(s *suite) { s.adoptSkip = reason } }

// DamageFunc changes the stored bytes of artifact ref of run id (same
// size, other content), so that the suite can check reads re-hash them.
type DamageFunc func(t *testing.T, b store.Backend, id string, ref store.ArtifactRef)

// WithDamage gives the suite a way to damage a stored artifact.
func WithDamage(f DamageFunc) Option { return func(s *suite) { s.damage = f } }

// EditEventFunc edits the stored event rev of run id behind the record's
// back, as a person with access to the storage could: in the event's data
// it replaces the text from by to (same length), leaving every other byte
// — its digest included — as it was.
type EditEventFunc func(t *testing.T, b store.Backend, id string, rev int64, from, to string)

// WithEventEdit gives the suite a way to edit a stored event, so that it
// can check that Verify and reads find the edit.
func WithEventEdit(f EditEventFunc) Option { return func(s *suite) { s.editEvent = f } }

type suite struct {
	newBackend NewBackend
	adopt      AdoptFunc
	adoptSkip  string
	damage     DamageFunc
	editEvent  EditEventFunc
}

// Run runs every conformance case against backends made by newBackend,
// each case in its own subtest with its own backend.
func Run(t *testing.T, newBackend NewBackend, opts ...Option) {
	s := &suite{newBackend: newBackend}
	for _, o := range opts {
		o(s)
	}
	for _, c := range s.cases() {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, s)
		})
	}
}

// testCase is one conformance case.
type testCase struct {
	name string
	run  func(t *testing.T, s *suite)
}

func (s *suite) cases() []testCase {
	var all []testCase
	all = append(all, recordCases...)
	all = append(all, ownershipCases...)
	all = append(all, artifactCases...)
	all = append(all, policyCases...)
	return all
}

// backend returns a fresh backend closed at the end of t.
func (s *suite) backend(t *testing.T) store.Backend {
	t.Helper()
	b := s.newBackend(t)
	t.Cleanup(func() { b.Close() })
	return b
}

// owned creates run id in a fresh backend under policy p and takes its
// ownership; both are released at the end of t.
func (s *suite) owned(t *testing.T, id string, p store.Policy) (store.Backend, store.Record) {
	t.Helper()
	b := s.backend(t)
	return b, create(t, b, id, p)
}

// create creates run id in b and takes its ownership.
func create(t *testing.T, b store.Backend, id string, p store.Policy) store.Record {
	t.Helper()
	r, _ := createOwned(t, b, id, p)
	return r
}

// createOwned is create that also returns the ownership.
func createOwned(t *testing.T, b store.Backend, id string, p store.Policy) (store.Record, store.Ownership) {
	t.Helper()
	ctx := context.Background()
	r, err := b.CreateRun(ctx, id, p)
	if err != nil {
		t.Fatalf("CreateRun(%q): %v", id, err)
	}
	t.Cleanup(func() { r.Close() })
	own, err := r.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock of a new run: %v", err)
	}
	t.Cleanup(func() { own.Release() })
	return r, own
}

// open opens run id of b (closed at the end of t).
func open(t *testing.T, b store.Backend, id string, p store.Policy) store.Record {
	t.Helper()
	r, err := b.OpenRun(context.Background(), id, p)
	if err != nil {
		t.Fatalf("OpenRun(%q): %v", id, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// mustAppend appends and fails t on error.
func mustAppend(t *testing.T, r store.Record, expected int64, evs ...store.NewEvent) int64 {
	t.Helper()
	rev, err := r.Append(context.Background(), expected, evs...)
	if err != nil {
		t.Fatalf("Append(%d): %v", expected, err)
	}
	return rev
}

// readAll returns every event of r.
func readAll(t *testing.T, r store.Record) []store.Event {
	t.Helper()
	var out []store.Event
	if err := r.Read(context.Background(), 1, func(e store.Event) error {
		out = append(out, e)
		return nil
	}); err != nil {
		t.Fatalf("Read: %v", err)
	}
	return out
}

// ev is an event of type "t" with id and data.
func ev(id string, data any) store.NewEvent { return store.NewEvent{ID: id, Type: "t", Data: data} }
