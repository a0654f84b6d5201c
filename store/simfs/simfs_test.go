package simfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/obversa/obversa/store"
)

// create makes a file with content, synced and its entry durable when
// durable is set.
func create(t *testing.T, f *FS, name string, content string, durable bool) store.File {
	t.Helper()
	h, err := f.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if durable {
		if err := h.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := f.SyncDir("/"); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// content reads a whole file; "" and false when it does not exist.
func content(t *testing.T, f *FS, name string) (string, bool) {
	t.Helper()
	h, err := f.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	b, err := io.ReadAll(h)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func TestCrashKeepsOnlyDurable(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, f *FS)
		file  string
		want  string
		found bool
	}{
		{"synced file with a durable entry", func(t *testing.T, f *FS) { create(t, f, "/a", "abc", true) }, "/a", "abc", true},
		{"unsynced write after a sync", func(t *testing.T, f *FS) {
			h := create(t, f, "/a", "abc", true)
			h.Write([]byte("def"))
		}, "/a", "abc", true},
		{"datasync makes the write durable", func(t *testing.T, f *FS) {
			h := create(t, f, "/a", "abc", true)
			h.Write([]byte("def"))
			h.Datasync()
		}, "/a", "abcdef", true},
		{"synced file whose entry never was", func(t *testing.T, f *FS) {
			h, _ := f.OpenFile("/a", os.O_RDWR|os.O_CREATE, 0o644)
			h.Write([]byte("abc"))
			h.Sync()
		}, "/a", "", false},
		{"truncate is volatile", func(t *testing.T, f *FS) {
			h := create(t, f, "/a", "abcdef", true)
			h.Truncate(2)
		}, "/a", "abcdef", true},
		{"rename is volatile until the directory is synced", func(t *testing.T, f *FS) {
			create(t, f, "/a", "abc", true)
			f.Rename("/a", "/b")
		}, "/a", "abc", true},
		{"a synced rename", func(t *testing.T, f *FS) {
			create(t, f, "/a", "abc", true)
			f.Rename("/a", "/b")
			f.SyncDir("/")
		}, "/b", "abc", true},
		{"a link without a directory sync", func(t *testing.T, f *FS) {
			create(t, f, "/a", "abc", true)
			f.Link("/a", "/b")
		}, "/b", "", false},
		{"remove is volatile", func(t *testing.T, f *FS) {
			create(t, f, "/a", "abc", true)
			f.Remove("/a")
		}, "/a", "abc", true},
		{"a file in a directory whose entry is volatile", func(t *testing.T, f *FS) {
			f.Mkdir("/d", 0o755)
			h, _ := f.OpenFile("/d/a", os.O_RDWR|os.O_CREATE, 0o644)
			h.Write([]byte("abc"))
			h.Sync()
			f.SyncDir("/d")
		}, "/d/a", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New()
			tt.setup(t, f)
			f.Crash()
			got, found := content(t, f, tt.file)
			if got != tt.want || found != tt.found {
				t.Fatalf("after Crash %s = %q (exists %v), want %q (exists %v)", tt.file, got, found, tt.want, tt.found)
			}
		})
	}
}

func TestCrashFailsOpenHandles(t *testing.T) {
	f := New()
	h := create(t, f, "/a", "abc", true)
	if err := h.Lock(true, false); err != nil {
		t.Fatal(err)
	}
	f.Crash()
	if _, err := h.Write([]byte("x")); !errors.Is(err, ErrCrashed) {
		t.Fatalf("write through a handle from before the crash: %v", err)
	}
	if _, err := h.ReadAt(make([]byte, 1), 0); !errors.Is(err, ErrCrashed) {
		t.Fatalf("read through a handle from before the crash: %v", err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("closing a crashed handle: %v", err)
	}
	h2, err := f.OpenFile("/a", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := h2.Lock(true, false); err != nil {
		t.Fatalf("the lock survived the crash: %v", err)
	}
}

func TestCrashTorn(t *testing.T) {
	// Three appends after the last sync: whatever survives is the durable
	// bytes plus a prefix of what followed — the last write kept possibly
	// cut short, or grown into the file with its sector not written (NULs
	// past the old end) — and some seed keeps each outcome.
	full := "base|one|two|three|"
	kept := func(got string) bool {
		if len(got) < len("base|") || len(got) > len(full) || got[:len("base|")] != "base|" {
			return false
		}
		for i := len("base|"); i < len(got); i++ {
			if got[i] != full[i] && got[i] != 0 {
				return false
			}
		}
		return true
	}
	seen := map[string]bool{}
	for seed := uint64(0); seed < 64; seed++ {
		f := New()
		h := create(t, f, "/a", "base|", true)
		h.Write([]byte("one|"))
		h.Write([]byte("two|"))
		h.Write([]byte("three|"))
		f.CrashTorn(seed)
		got, found := content(t, f, "/a")
		if !found || !kept(got) {
			t.Fatalf("seed %d: %q is not the durable bytes plus a prefix of the writes", seed, got)
		}
		seen[got] = true
		// What a torn crash kept is durable now.
		f.Crash()
		if again, _ := content(t, f, "/a"); again != got {
			t.Fatalf("seed %d: a second crash changed %q to %q", seed, got, again)
		}
	}
	for _, want := range []string{"base|", "base|one|", "base|one|two|three|", "base|one|two|\x00\x00\x00\x00\x00\x00"} {
		if !seen[want] {
			t.Errorf("no seed kept %q (kept %v)", want, seen)
		}
	}
	torn := false
	for s := range seen {
		if !bytes.HasSuffix([]byte(s), []byte("|")) && !strings.Contains(s, "\x00") {
			torn = true
		}
	}
	if !torn {
		t.Errorf("no seed tore a write (kept %v)", seen)
	}
}

func TestInject(t *testing.T) {
	f2 := New()
	if err := f2.Mkdir("/run", 0o755); err != nil {
		t.Fatal(err)
	}
	h, err := f2.OpenFile("/run/events.jsonl", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	remove := f2.Inject(Fault{Op: OpWrite, Path: "events.jsonl", After: 1, Err: syscall.ENOSPC})
	if _, err := h.Write([]byte("first|")); err != nil {
		t.Fatalf("first write: %v", err)
	}
	if n, err := h.Write([]byte("second|")); !errors.Is(err, syscall.ENOSPC) || n != 0 {
		t.Fatalf("second write = %d, %v; want ENOSPC", n, err)
	}
	var pe *fs.PathError
	if _, err := h.Write([]byte("third|")); err != nil {
		t.Fatalf("the fault fired twice: %v", err)
	}
	remove()
	f2.Inject(Fault{Op: OpWrite, Err: syscall.EIO, Short: true, Times: -1})
	n, err := h.Write([]byte("abcd"))
	if !errors.As(err, &pe) || pe.Path != "/run/events.jsonl" || !errors.Is(err, syscall.EIO) || n != 2 {
		t.Fatalf("short write = %d, %v", n, err)
	}
	if _, err := h.Write([]byte("x")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("a fault with Times -1 stopped: %v", err)
	}
	if got, _ := content(t, f2, "/run/events.jsonl"); got != "first|third|ab" {
		t.Fatalf("content %q", got)
	}
	f2.Inject(Fault{Op: OpDatasync, Path: "other", Err: syscall.EIO})
	if err := h.Datasync(); err != nil {
		t.Fatalf("a fault for another path fired: %v", err)
	}
	if f2.Count(OpWrite) != 5 {
		t.Fatalf("counted %d writes, want 5", f2.Count(OpWrite))
	}
}

func TestHook(t *testing.T) {
	f := New()
	var ops []string
	f.SetHook(func(op Op, p string) error {
		ops = append(ops, string(op)+" "+p)
		if op == OpDatasync {
			f.Crash()
			return ErrCrashed
		}
		return nil
	})
	h, err := f.OpenFile("/a", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	h.Write([]byte("x"))
	if err := h.Datasync(); !errors.Is(err, ErrCrashed) {
		t.Fatalf("datasync the hook crashed: %v", err)
	}
	f.SetHook(nil)
	want := []string{"open /a", "write /a", "datasync /a"}
	if len(ops) != len(want) {
		t.Fatalf("hook saw %v, want %v", ops, want)
	}
	for i := range want {
		if ops[i] != want[i] {
			t.Fatalf("hook saw %v, want %v", ops, want)
		}
	}
	if _, found := content(t, f, "/a"); found {
		t.Fatal("the file survived a crash before its entry was synced")
	}
}

func TestLocks(t *testing.T) {
	f := New()
	a := create(t, f, "/l", "", true)
	b, err := f.OpenFile("/l", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Lock(true, false); err != nil {
		t.Fatal(err)
	}
	if err := a.Lock(true, false); err != nil {
		t.Fatalf("asking again for a held lock: %v", err)
	}
	if err := b.Lock(false, false); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("shared lock beside an exclusive one: %v", err)
	}
	if err := a.Lock(false, false); err != nil { // convert to shared
		t.Fatal(err)
	}
	if err := b.Lock(false, false); err != nil {
		t.Fatalf("two shared locks: %v", err)
	}
	if err := b.Lock(true, false); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("exclusive beside another shared lock: %v", err)
	}
	got := make(chan error, 1)
	go func() { got <- b.Lock(true, true) }()
	select {
	case err := <-got:
		t.Fatalf("a waiting lock returned %v while the other holder held on", err)
	case <-time.After(20 * time.Millisecond):
	}
	if err := a.Close(); err != nil { // releases a's lock
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiting lock: %v", err)
	}
	c, _ := f.OpenFile("/l", os.O_RDWR, 0)
	if err := c.Lock(false, false); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("shared beside the converted exclusive lock: %v", err)
	}
	b.Unlock()
	if err := c.Lock(true, false); err != nil {
		t.Fatalf("after Unlock: %v", err)
	}
}

// TestWriterLockApartFromLock: the writer mark is a second lock with
// flock's semantics that neither blocks nor is blocked by Lock, and
// WriterUnlock and Close release it.
func TestWriterLockApartFromLock(t *testing.T) {
	f := New()
	a := create(t, f, "/w", "", true)
	b, err := f.OpenFile("/w", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Lock(true, false); err != nil {
		t.Fatal(err)
	}
	if err := a.WriterLock(false, false); err != nil {
		t.Fatalf("writer mark beside the same file's flock: %v", err)
	}
	if err := b.WriterLock(false, false); err != nil {
		t.Fatalf("a second shared writer mark beside another file's exclusive flock: %v", err)
	}
	if err := a.WriterLock(true, false); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("exclusive writer mark beside another shared one: %v", err)
	}
	if err := b.WriterUnlock(); err != nil {
		t.Fatal(err)
	}
	if err := a.WriterLock(true, false); err != nil {
		t.Fatalf("exclusive writer mark once the other file gave its up: %v", err)
	}
	if err := a.WriterUnlock(); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(false, false); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("WriterUnlock released the file's flock too: %v", err)
	}
	if err := b.WriterLock(false, false); err != nil {
		t.Fatal(err)
	}
	if err := a.WriterLock(true, false); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("exclusive writer mark beside another shared one: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.WriterLock(true, false); err != nil {
		t.Fatalf("exclusive writer mark once the other file closed: %v", err)
	}
	if err := a.Lock(false, false); err != nil {
		t.Fatalf("converting the flock while holding the writer mark: %v", err)
	}
}

func TestNamespace(t *testing.T) {
	f := New()
	if err := f.Mkdir("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.Mkdir("/d", 0o755); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Mkdir twice: %v", err)
	}
	for _, n := range []string{"/d/c", "/d/a", "/d/b"} {
		h, err := f.OpenFile(n, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
	}
	if _, err := f.OpenFile("/d/a", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("O_EXCL on an existing file: %v", err)
	}
	if _, err := f.OpenFile("/nope/a", os.O_RDONLY, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing parent: %v", err)
	}
	if err := f.Link("/d/a", "/d/b"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Link over an existing name: %v", err)
	}
	if err := f.Remove("/d"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("Remove of a non-empty directory: %v", err)
	}
	ents, err := f.ReadDir("/d")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 3 || names[0] != "a" || names[2] != "c" {
		t.Fatalf("ReadDir = %v, want sorted a b c", names)
	}
	fi, err := f.Stat("/d")
	if err != nil || !fi.IsDir() {
		t.Fatalf("Stat of a directory: %v %v", fi, err)
	}
	h, _ := f.OpenFile("/d/a", os.O_RDWR, 0)
	h.Write([]byte("12345"))
	if fi, _ := h.Stat(); fi.Size() != 5 || fi.IsDir() {
		t.Fatalf("Stat of a file: size %d", fi.Size())
	}
	if _, err := f.OpenFile("/d", os.O_RDWR, 0); !errors.Is(err, syscall.EISDIR) {
		t.Fatalf("opening a directory for writing: %v", err)
	}
}
