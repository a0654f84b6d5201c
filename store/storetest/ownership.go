package storetest

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/obversa/obversa/store"
)

var ownershipCases = []testCase{
	{"NotOwner", testNotOwner},
	{"LockExclusive", testLockExclusive},
	{"ReleasedOwnerCannotAppend", testReleased},
	{"AdoptHandoff", testAdopt},
}

// testNotOwner: a handle that took no ownership writes nothing.
func testNotOwner(t *testing.T, s *suite) {
	ctx := context.Background()
	b := s.backend(t)
	r, err := b.CreateRun(ctx, "unowned", store.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Append(ctx, 0, ev("a", 1)); !errors.Is(err, store.ErrNotOwner) || store.Code(err) != "NOT_OWNER" {
		t.Fatalf("Append without ownership: %v, want NOT_OWNER", err)
	}
	if _, err := r.PutArtifact(ctx, []byte("x"), "text/plain", "p"); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("PutArtifact without ownership: %v, want NOT_OWNER", err)
	}
	if r.Rev() != 0 {
		t.Fatal("an append without ownership was written")
	}
	if _, found, err := r.Holder(ctx); err != nil || found {
		t.Fatalf("Holder of a run never locked: found %v, %v", found, err)
	}
}

// testLockExclusive: one owner at a time; the refusal names the holder,
// and only the handle that took the ownership writes.
func testLockExclusive(t *testing.T, s *suite) {
	ctx := context.Background()
	b, r := s.owned(t, "excl", store.Policy{})
	other := open(t, b, "excl", store.Policy{})
	own, err := other.Lock(ctx)
	var le *store.LockedError
	if !errors.As(err, &le) || !errors.Is(err, store.ErrProcessLocked) || store.Code(err) != "PROCESS_LOCKED" {
		if own != nil {
			own.Release()
		}
		t.Fatalf("second Lock: %v, want a *LockedError", err)
	}
	if !le.Known || le.Holder.PID != os.Getpid() {
		t.Errorf("refusal names holder %+v (known %v), want this process", le.Holder, le.Known)
	}
	h, found, err := other.Holder(ctx)
	if err != nil || !found || h.PID != os.Getpid() || h.StartedAt.IsZero() {
		t.Errorf("Holder = %+v, %v, %v", h, found, err)
	}
	if _, err := other.Append(ctx, 0, ev("x", 1)); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("Append through a handle without the ownership: %v", err)
	}
	mustAppend(t, r, 0, ev("a", 1))
}

// testReleased: an owner that released the ownership can never append
// again, and another handle can take it.
func testReleased(t *testing.T, s *suite) {
	ctx := context.Background()
	b := s.backend(t)
	r, err := b.CreateRun(ctx, "rel", store.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	own, err := r.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := own.Epoch()
	mustAppend(t, r, 0, ev("a", 1))
	if err := own.Release(); err != nil {
		t.Fatal(err)
	}
	if err := own.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if _, err := r.Append(ctx, 1, ev("b", 2)); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("Append after Release: %v, want NOT_OWNER", err)
	}
	next := open(t, b, "rel", store.Policy{})
	own2, err := next.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock after the owner released: %v", err)
	}
	defer own2.Release()
	if own2.Epoch() < first || (first != 0 && own2.Epoch() == first) {
		t.Errorf("epoch %d after %d: a new owner's epoch must grow (or both be 0)", own2.Epoch(), first)
	}
	if _, err := r.Append(ctx, 1, ev("b", 2)); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("the old owner appended after another took over: %v", err)
	}
	mustAppend(t, next, 1, ev("b", 2))
}

// testAdopt: a child handed the ownership adopts it and appends; the
// parent keeps its own right meanwhile (the ownership is shared, not
// moved).
func testAdopt(t *testing.T, s *suite) {
	if s.adopt == nil {
		reason := s.adoptSkip
		if reason == "" {
			reason = "the backend gave no AdoptFunc (storetest.WithAdopt)"
		}
		t.Skip(reason)
	}
	b := s.backend(t)
	r, own := createOwned(t, b, "adopt", store.Policy{})
	mustAppend(t, r, 0, ev("parent", 1))
	rev, err := s.adopt(t, b, "adopt", own)
	if err != nil || rev != 2 {
		t.Fatalf("child adopting the ownership: rev %d, %v; want rev 2", rev, err)
	}
	evs := readAll(t, r)
	if len(evs) != 2 || evs[1].Type != "storetest:adopted" {
		t.Fatalf("record after the child: %d events", len(evs))
	}
	mustAppend(t, r, 2, ev("parent-again", 1))
}
