package store_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/obversa/obversa/store"
	"github.com/obversa/obversa/store/simfs"
)

// simRun creates run "r" on a fresh simulated file system, owned, with one
// committed event.
func simRun(t *testing.T) (*simfs.FS, *store.Store, store.Record) {
	t.Helper()
	fsys, st, r := simRunEmpty(t)
	if _, err := r.Append(context.Background(), 0, store.NewEvent{ID: "first", Type: "t"}); err != nil {
		t.Fatal(err)
	}
	return fsys, st, r
}

// simRunEmpty creates run "r" on a fresh simulated file system, owned,
// with no event.
func simRunEmpty(t *testing.T) (*simfs.FS, *store.Store, store.Record) {
	t.Helper()
	ctx := context.Background()
	fsys := simfs.New()
	st, err := store.Open("/storage", "ns", store.WithFS(fsys))
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.CreateRun(ctx, "r", store.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	own, err := r.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { own.Release() })
	return fsys, st, r
}

// fileContent reads a file of fsys, an events.jsonl up to its zero tail.
func fileContent(t *testing.T, fsys store.FS, path string) string {
	t.Helper()
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	b := make([]byte, fi.Size())
	f.ReadAt(b, 0)
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i] // the zero tail past the committed end
	}
	return string(b)
}

// TestAppendStorageErrors: a write of the event stream that fails is
// undone and reported with its code and path, and the same handle appends
// once the fault is gone; a failed fdatasync (or undo) poisons the handle.
func TestAppendStorageErrors(t *testing.T) {
	tests := []struct {
		name     string
		faults   []simfs.Fault
		code     string
		poisoned bool
	}{
		{"ENOSPC on write", []simfs.Fault{{Op: simfs.OpWrite, Path: "events.jsonl", Err: syscall.ENOSPC}}, "STORAGE_FULL", false},
		{"ENOSPC after a short write", []simfs.Fault{{Op: simfs.OpWrite, Path: "events.jsonl", Err: syscall.ENOSPC, Short: true}}, "STORAGE_FULL", false},
		{"EDQUOT on write", []simfs.Fault{{Op: simfs.OpWrite, Path: "events.jsonl", Err: syscall.EDQUOT}}, "STORAGE_FULL", false},
		{"EIO on write", []simfs.Fault{{Op: simfs.OpWrite, Path: "events.jsonl", Err: syscall.EIO}}, "RUN_STORAGE", false},
		{"EIO on fdatasync", []simfs.Fault{{Op: simfs.OpDatasync, Path: "events.jsonl", Err: syscall.EIO}}, "RUN_STORAGE", true},
		{"ENOSPC on fdatasync", []simfs.Fault{{Op: simfs.OpDatasync, Path: "events.jsonl", Err: syscall.ENOSPC}}, "STORAGE_FULL", true},
		{"write and its undo fail", []simfs.Fault{
			{Op: simfs.OpWrite, Path: "events.jsonl", Err: syscall.ENOSPC, Short: true},
			{Op: simfs.OpTruncate, Path: "events.jsonl", Err: syscall.EIO},
		}, "STORAGE_FULL", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			fsys, st, r := simRun(t)
			path := st.RunDir("r") + "/events.jsonl"
			before := fileContent(t, fsys, path)
			var removes []func()
			for _, f := range tt.faults {
				removes = append(removes, fsys.Inject(f))
			}
			_, err := r.Append(ctx, 1, store.NewEvent{ID: "second", Type: "t", Data: strings.Repeat("x", 100)})
			if store.Code(err) != tt.code || !strings.Contains(err.Error(), path) {
				t.Fatalf("Append: %v; want code %s naming %s", err, tt.code, path)
			}
			if got := errors.Is(err, store.ErrStoreFailed); got != tt.poisoned {
				t.Fatalf("poisoned = %v, want %v (%v)", got, tt.poisoned, err)
			}
			var se *store.StorageError
			if !errors.As(err, &se) || se.Path != path {
				t.Fatalf("no *StorageError naming the path in %v", err)
			}
			for _, rm := range removes {
				rm()
			}
			if tt.poisoned {
				if _, err := r.Append(ctx, 1, store.NewEvent{ID: "third", Type: "t"}); !errors.Is(err, store.ErrStoreFailed) {
					t.Fatalf("Append through a poisoned handle: %v", err)
				}
				return
			}
			if got := fileContent(t, fsys, path); got != before {
				t.Fatalf("the failed write was not undone: %q", got)
			}
			fsys.Crash()
			if got := fileContent(t, fsys, path); got != before {
				t.Fatalf("after a power loss the failed write came back: %q", got)
			}
			// The power loss ended the handle; a new one, like the space
			// freed, appends where the record stands.
			r2, err := st.OpenRun(ctx, "r", store.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			defer r2.Close()
			own, err := r2.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer own.Release()
			if rev, err := r2.Append(ctx, 1, store.NewEvent{ID: "second", Type: "t"}); err != nil || rev != 2 {
				t.Fatalf("append after the fault: %d, %v", rev, err)
			}
		})
	}
}

// TestAppendAfterSpaceFreed: the handle whose write hit ENOSPC appends
// again, at the same revision, once the fault is gone.
func TestAppendAfterSpaceFreed(t *testing.T) {
	ctx := context.Background()
	fsys, _, r := simRun(t)
	remove := fsys.Inject(simfs.Fault{Op: simfs.OpWrite, Path: "events.jsonl", Err: syscall.ENOSPC, Short: true, Times: -1})
	for range 3 {
		if _, err := r.Append(ctx, 1, store.NewEvent{ID: "second", Type: "t"}); !errors.Is(err, store.ErrStorageFull) {
			t.Fatalf("Append on a full disk: %v", err)
		}
	}
	remove()
	if rev, err := r.Append(ctx, 1, store.NewEvent{ID: "second", Type: "t"}); err != nil || rev != 2 {
		t.Fatalf("Append once space is freed: %d, %v", rev, err)
	}
}

// TestOtherStorageErrors: every other write of the store — run creation,
// the lock's holder record, artifacts, torn-tail recovery — reports a full
// device as STORAGE_FULL naming the path.
func TestOtherStorageErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("create run", func(t *testing.T) {
		fsys := simfs.New()
		st, _ := store.Open("/storage", "ns", store.WithFS(fsys))
		fsys.Inject(simfs.Fault{Op: simfs.OpMkdir, Path: "r", Err: syscall.ENOSPC})
		_, err := st.CreateRun(ctx, "r", store.Policy{})
		if store.Code(err) != "STORAGE_FULL" || !strings.Contains(err.Error(), st.RunDir("r")) {
			t.Fatalf("CreateRun: %v", err)
		}
	})
	t.Run("holder record", func(t *testing.T) {
		fsys := simfs.New()
		st, _ := store.Open("/storage", "ns", store.WithFS(fsys))
		r, err := st.CreateRun(ctx, "r", store.Policy{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		fsys.Inject(simfs.Fault{Op: simfs.OpWrite, Path: "lock", Err: syscall.ENOSPC})
		if _, err := r.Lock(ctx); store.Code(err) != "STORAGE_FULL" || !strings.Contains(err.Error(), st.RunDir("r")+"/lock") {
			t.Fatalf("Lock: %v", err)
		}
		own, err := r.Lock(ctx)
		if err != nil {
			t.Fatalf("Lock once space is freed: %v", err)
		}
		own.Release()
	})
	for _, op := range []simfs.Op{simfs.OpWrite, simfs.OpDatasync, simfs.OpLink, simfs.OpSyncDir} {
		t.Run("artifact "+string(op), func(t *testing.T) {
			fsys, st, r := simRun(t)
			path := st.RunDir("r") + "/artifacts"
			where := "" // the first such operation of PutArtifact
			if op == simfs.OpSyncDir {
				where = "artifacts/sha256" // the blob directory, after the link
			}
			fsys.Inject(simfs.Fault{Op: op, Path: where, Err: syscall.ENOSPC})
			_, err := r.PutArtifact(ctx, []byte("bytes"), "text/plain", "t")
			if store.Code(err) != "STORAGE_FULL" || !strings.Contains(err.Error(), path) {
				t.Fatalf("PutArtifact: %v; want STORAGE_FULL naming a path under %s", err, path)
			}
			ref, err := r.PutArtifact(ctx, []byte("bytes"), "text/plain", "t")
			if err != nil {
				t.Fatalf("PutArtifact once space is freed: %v", err)
			}
			if got, err := r.ReadArtifact(ctx, ref); err != nil || string(got) != "bytes" {
				t.Fatalf("ReadArtifact: %q, %v", got, err)
			}
		})
	}
	t.Run("torn-tail recovery", func(t *testing.T) {
		fsys, st, r := simRun(t)
		path := st.RunDir("r") + "/events.jsonl"
		r.Close()
		f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(`{"batch_end":2,"da`))
		f.Close()
		before := fileContent(t, fsys, path)
		remove := fsys.Inject(simfs.Fault{Op: simfs.OpWrite, Path: "", Err: syscall.ENOSPC})
		_, err = st.OpenRun(ctx, "r", store.Policy{})
		if store.Code(err) != "STORAGE_FULL" || !strings.Contains(err.Error(), path+".torn-") {
			t.Fatalf("OpenRun recovering a torn tail on a full disk: %v", err)
		}
		if got := fileContent(t, fsys, path); got != before {
			t.Fatal("a failed recovery changed events.jsonl")
		}
		remove()
		r2, err := st.OpenRun(ctx, "r", store.Policy{})
		if err != nil {
			t.Fatalf("OpenRun once space is freed: %v", err)
		}
		defer r2.Close()
		if r2.Rev() != 1 {
			t.Fatalf("rev %d after recovery", r2.Rev())
		}
	})
}
