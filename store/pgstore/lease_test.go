package pgstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/store"
)

// TestLeaseFencing: while a lease is held another Lock is refused naming
// the holder; a forced takeover (of the epoch the person confirmed) moves
// the epoch on; the old owner's next write is refused with an error naming
// the new owner and epoch, and its lease reports itself lost.
func TestLeaseFencing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, _ := newBackend(t)
	r1, l1 := lockedRun(t, b, "r")
	if l1.Epoch() != 1 {
		t.Fatalf("first epoch %d, want 1", l1.Epoch())
	}
	if _, err := r1.Append(ctx, 0, ev("a", 1)); err != nil {
		t.Fatal(err)
	}
	rec2, err := b.OpenRun(ctx, "r", store.Policy{})
	must(t, err)
	defer rec2.Close()
	r2 := rec2.(*Run)
	var le *store.LockedError
	if _, err := r2.Lock(ctx); !errors.As(err, &le) || le.Holder.PID != l1.Holder().PID || !strings.Contains(err.Error(), "epoch 1") {
		t.Fatalf("second Lock: %v, want PROCESS_LOCKED naming the holder and epoch 1", err)
	}
	info, err := r2.Lease(ctx)
	must(t, err)
	if info.Epoch != 1 || !info.Held || info.Expired {
		t.Fatalf("Lease() = %+v", info)
	}
	if _, err := r2.ForceLock(ctx, 7); !errors.Is(err, ErrLeaseChanged) || !errors.Is(err, store.ErrProcessLocked) {
		t.Fatalf("ForceLock of an epoch never confirmed: %v", err)
	}
	l2, err := r2.ForceLock(ctx, info.Epoch)
	must(t, err)
	defer l2.Release()
	if l2.Epoch() != 2 {
		t.Fatalf("takeover epoch %d, want 2", l2.Epoch())
	}
	_, err = r1.Append(ctx, 1, ev("b", 2))
	var fe *FencedError
	if !errors.As(err, &fe) || !errors.Is(err, store.ErrNotOwner) || store.Code(err) != "NOT_OWNER" ||
		fe.Epoch != 1 || fe.Current.Epoch != 2 || !strings.Contains(err.Error(), "epoch 2") {
		t.Fatalf("stale owner's append: %v, want a FencedError naming epoch 2", err)
	}
	select {
	case <-l1.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the stale lease does not report itself lost")
	}
	if _, err := r1.Append(ctx, 1, ev("b", 2)); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("append after the loss: %v", err)
	}
	if _, err := r2.Append(ctx, 1, ev("b", 2)); err != nil {
		t.Fatalf("new owner's append: %v", err)
	}
	// Only the new owner's events carry its epoch.
	rows, err := b.pool.Query(ctx, `SELECT rev, epoch FROM events WHERE namespace = 'ns' AND run_id = 'r' ORDER BY rev`)
	must(t, err)
	var got []int64
	for rows.Next() {
		var rev, epoch int64
		must(t, rows.Scan(&rev, &epoch))
		got = append(got, epoch)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("epochs of the events %v, want [1 2]", got)
	}
}

// TestLeaseRenewalAndRelease: a renewed lease outlives its TTL; a
// released one is taken again at once with a new epoch.
func TestLeaseRenewalAndRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, c := newBackend(t)
	r, l := lockedRun(t, b, "r")
	time.Sleep(c.LeaseTTL + c.RenewEvery)
	info, err := r.Lease(ctx)
	must(t, err)
	if info.Expired || !info.Held || info.Epoch != 1 {
		t.Fatalf("after a TTL with renewals the lease is %+v", info)
	}
	if _, err := r.Append(ctx, 0, ev("a", 1)); err != nil {
		t.Fatal(err)
	}
	must(t, l.Release())
	must(t, l.Release())
	own, err := r.Lock(ctx)
	must(t, err)
	defer own.Release()
	if own.Epoch() != 2 {
		t.Fatalf("epoch after release and relock %d, want 2", own.Epoch())
	}
	h, found, err := r.Holder(ctx)
	if err != nil || !found || h.PID != own.Holder().PID || h.Host != store.HostName() {
		t.Fatalf("Holder = %+v, %v, %v", h, found, err)
	}
}

// TestHandoffAdopt: a child adopting the handed-over lease writes under
// it; another run's handoff is refused; once the parent releases the
// lease, the child's writes are refused (fenced) too.
func TestHandoffAdopt(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t)
	r, l := lockedRun(t, b, "r")
	env, files := l.Handoff()
	if len(env) != 1 || len(files) != 0 || !strings.HasPrefix(env[0], LeaseEnv+"=") {
		t.Fatalf("Handoff = %v, %v", env, files)
	}
	val := strings.TrimPrefix(env[0], LeaseEnv+"=")
	other, _ := lockedRun(t, b, "other")
	t.Setenv(LeaseEnv, val)
	if _, err := other.Adopt(ctx); !errors.Is(err, store.ErrNotOwner) || !strings.Contains(err.Error(), "is for run ns/r") {
		t.Fatalf("adopting another run's lease: %v", err)
	}
	child, err := b.OpenRun(ctx, "r", store.Policy{})
	must(t, err)
	defer child.Close()
	own, err := child.Adopt(ctx)
	must(t, err)
	if own.Epoch() != l.Epoch() || own.Holder() != l.Holder() {
		t.Fatalf("adopted %d/%+v, want %d/%+v", own.Epoch(), own.Holder(), l.Epoch(), l.Holder())
	}
	if _, err := child.Append(ctx, 0, ev("a", 1)); err != nil {
		t.Fatal(err)
	}
	must(t, own.Release()) // the child's share only
	if _, err := r.Append(ctx, 1, ev("b", 1)); err != nil {
		t.Fatalf("parent after the child released its share: %v", err)
	}
	t.Setenv(LeaseEnv, val)
	_, err = child.Adopt(ctx)
	must(t, err)
	must(t, l.Release())
	if _, err := child.Append(ctx, 2, ev("c", 1)); !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "released") {
		t.Fatalf("child append after the parent released: %v", err)
	}
	t.Setenv(LeaseEnv, "")
	if _, err := child.Adopt(ctx); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("Adopt with nothing handed over: %v", err)
	}
}

// TestAdoptInChild: a child process given the lease through its
// environment adopts it and appends under it; the parent's next append
// follows the child's.
func TestAdoptInChild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, _ := newBackend(t)
	r, l := lockedRun(t, b, "r")
	if _, err := r.Append(ctx, 0, ev("a", 1)); err != nil {
		t.Fatal(err)
	}
	rev, err := adoptInChild(t, b, "r", l)
	if err != nil || rev != 2 {
		t.Fatalf("child: rev %d, %v; want 2", rev, err)
	}
	if _, err := r.Append(ctx, 2, ev("c", 1)); err != nil {
		t.Fatalf("parent after the child: %v", err)
	}
	var types []string
	must(t, r.Read(ctx, 1, func(e store.Event) error { types = append(types, e.Type); return nil }))
	if len(types) != 3 || types[1] != "storetest:adopted" {
		t.Fatalf("events %v", types)
	}
}

// FuzzParseHandoff: parseHandoff never panics, and what it accepts prints
// back to the same value.
func FuzzParseHandoff(f *testing.F) {
	f.Add("obversa/ns/run-1/3/6f1c2e0a-3b9d-4c55-9a53-1f0e6f1b2c3d")
	f.Add("obversa/ns/run-1/0/x")
	f.Add("a//b/1/")
	f.Add("")
	f.Fuzz(func(t *testing.T, v string) {
		h, err := parseHandoff(v)
		if err != nil {
			if !strings.Contains(err.Error(), LeaseEnv) {
				t.Fatalf("error %q does not name %s", err, LeaseEnv)
			}
			return
		}
		if h.String() != v {
			t.Fatalf("parseHandoff(%q) prints back as %q", v, h.String())
		}
	})
}

// TestRenewalFindsTakeover: an owner that writes nothing learns from its
// own renewals that the run was taken over; its next write is refused
// naming the new owner, as when the write finds the takeover first.
func TestRenewalFindsTakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, c := newBackend(t)
	r1, l1 := lockedRun(t, b, "r")
	rec2, err := b.OpenRun(ctx, "r", store.Policy{})
	must(t, err)
	defer rec2.Close()
	l2, err := rec2.(*Run).ForceLock(ctx, l1.Epoch())
	must(t, err)
	defer l2.Release()
	select {
	case <-l1.Lost():
	case <-time.After(5 * c.RenewEvery):
		t.Fatal("the taken-over lease's renewals did not find it lost")
	}
	if h := l2.Holder(); h.PID != l1.Holder().PID || l2.Epoch() != 2 {
		t.Fatalf("takeover lease %d/%+v", l2.Epoch(), h)
	}
	_, err = r1.Append(ctx, 0, ev("late", nil))
	var fe *FencedError
	if !errors.As(err, &fe) || fe.Epoch != 1 || fe.Current.Epoch != 2 || !strings.Contains(err.Error(), "at epoch 2") {
		t.Fatalf("a late append after the renewal found the takeover: %v; want a *FencedError naming epoch 2", err)
	}
}

// TestFenceHandedLease: the owner fences the lease it handed to a child:
// the child's next write is refused naming the new epoch, the owner's
// writes go on under it, its renewals do not take the move for a loss,
// and after a takeover Fence fails and the lease is lost.
func TestFenceHandedLease(t *testing.T) {
	ctx := context.Background()
	b, c := newBackend(t)
	r1, l1 := lockedRun(t, b, "r")
	env, _ := l1.Handoff()
	k, v, _ := strings.Cut(env[0], "=")
	t.Setenv(k, v)
	rec2, err := b.OpenRun(ctx, "r", store.Policy{})
	must(t, err)
	defer rec2.Close()
	l2, err := rec2.Adopt(ctx)
	must(t, err)
	defer l2.Release()
	if _, err := rec2.Append(ctx, 0, ev("child", nil)); err != nil {
		t.Fatalf("the child's append before the fence: %v", err)
	}
	must(t, l1.Fence(ctx))
	if l1.Epoch() != 2 {
		t.Fatalf("epoch after the fence %d, want 2", l1.Epoch())
	}
	var fe *FencedError
	if _, err := rec2.Append(ctx, 1, ev("late", nil)); !errors.As(err, &fe) || fe.Current.Epoch != 2 {
		t.Fatalf("the fenced child's append: %v; want a *FencedError naming epoch 2", err)
	}
	if _, err := r1.Append(ctx, 1, ev("owner", nil)); err != nil {
		t.Fatalf("the owner's append after the fence: %v", err)
	}
	time.Sleep(3 * c.RenewEvery)
	select {
	case <-l1.Lost():
		t.Fatal("the owner's renewals took the fence for a loss")
	default:
	}
	if err := l2.(*Lease).Fence(ctx); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("an adopted lease fenced: %v", err)
	}
	rec3, err := b.OpenRun(ctx, "r", store.Policy{})
	must(t, err)
	defer rec3.Close()
	l3, err := rec3.(*Run).ForceLock(ctx, 2)
	must(t, err)
	defer l3.Release()
	if err := l1.Fence(ctx); !errors.As(err, &fe) || fe.Current.Epoch != 3 {
		t.Fatalf("fence after a takeover: %v; want a *FencedError naming epoch 3", err)
	}
	select {
	case <-l1.Lost():
	default:
		t.Fatal("a failed fence left the lease not lost")
	}
}
