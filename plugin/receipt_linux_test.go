package plugin_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/obversa/obversa/plugin"
)

// cached is a plugin source and the cache directory CopyBinary placed its
// bytes in, with the hash receipts beside it.
type cached struct {
	src, dir, receipts, digest string
}

// newCached writes a source of content and copies it into a new cache.
func newCached(t *testing.T, content string) cached {
	t.Helper()
	src, digest := entry(t, content)
	root := t.TempDir()
	c := cached{src: src, dir: filepath.Join(root, "sha256"), receipts: filepath.Join(root, "hashed"), digest: digest}
	if _, err := c.copy(); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c cached) copy() (*plugin.Copied, error) { return c.copyAt(nil) }

// copyAt is copy with now as the clock the settle margin is measured
// against (nil = time.Now).
func (c cached) copyAt(now func() time.Time) (*plugin.Copied, error) {
	return plugin.CopyBinary("p", c.src, c.dir, plugin.CopyOptions{Expected: c.digest, Receipts: c.receipts, Now: now})
}

// changedNow returns a clock stopped at the newest change time of paths:
// a copy read by it finds the newest of them written that instant, too
// young to vouch for, however long the machine stalled since.
func changedNow(t *testing.T, paths ...string) func() time.Time {
	t.Helper()
	var newest int64
	for _, p := range paths {
		newest = max(newest, stampOf(t, p).CtimeNS)
	}
	return func() time.Time { return time.Unix(0, newest) }
}

// receipts counts the receipts written.
func (c cached) receiptCount(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir(c.receipts)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// rewriteKeepingTimes writes b over the start of path in place and sets
// its access and modification times back, so that only its change time
// (ctime) tells: size, inode and mtime stay as they were.
func rewriteKeepingTimes(t *testing.T, path string, b []byte) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	mode := st.Mode().Perm()
	if err := os.Chmod(path, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if now, err := os.Stat(path); err != nil || now.Size() != st.Size() || !now.ModTime().Equal(st.ModTime()) {
		t.Fatalf("rewriting %s kept neither its size nor its mtime: %v %v", path, now, err)
	}
}

// TestCopyBinaryReceipts: a source and a cache entry read in full once
// both settled get a hash receipt, and later copies of the unchanged
// pair read neither; a copy of files too young to be stamped leaves
// none. Any change of either file since — in place with size and mtime
// kept, by rename, by a new link — is read again and refused when the
// bytes differ, and a signed source never uses receipts.
func TestCopyBinaryReceipts(t *testing.T) {
	t.Parallel()
	young := newCached(t, "plugin bytes")
	if c, err := young.copyAt(changedNow(t, young.src, filepath.Join(young.dir, young.digest))); err != nil || c.Receipted || young.receiptCount(t) != 0 {
		t.Fatalf("copy of files written now = %+v, %v, %d receipts; want a read and no receipt", c, err, young.receiptCount(t))
	}

	changes := map[string]struct {
		change func(t *testing.T, c cached)
		// refused is the error a copy after the change returns; nil for
		// the same bytes, which are read again and pass.
		refused error
	}{
		"unchanged": {change: func(*testing.T, cached) {}},
		"source rewritten in place, size and mtime kept": {
			change:  func(t *testing.T, c cached) { rewriteKeepingTimes(t, c.src, []byte("PLUGIN")) },
			refused: plugin.ErrDigestMismatch,
		},
		"entry rewritten in place, size and mtime kept": {
			change:  func(t *testing.T, c cached) { rewriteKeepingTimes(t, filepath.Join(c.dir, c.digest), []byte("PLUGIN")) },
			refused: plugin.ErrCacheChanged,
		},
		"source replaced by rename": {
			change: func(t *testing.T, c cached) {
				other, _ := entry(t, "PLUGIN bytes")
				if err := os.Rename(other, c.src); err != nil {
					t.Fatal(err)
				}
			},
			refused: plugin.ErrDigestMismatch,
		},
		"source linked again, same bytes": {
			change: func(t *testing.T, c cached) {
				if err := os.Link(c.src, c.src+".2"); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	pairs := settledPairs(t, changes)
	for name, tc := range changes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := pairs[name]
			first, err := c.copy()
			if err != nil || first.Receipted || first.Stamp == nil || c.receiptCount(t) != 1 {
				t.Fatalf("first copy of settled files = %+v, %v, %d receipts; want a full read, a stamp and one receipt", first, err, c.receiptCount(t))
			}
			tc.change(t, c)
			again, err := c.copy()
			switch {
			case tc.refused != nil:
				if !errors.Is(err, tc.refused) {
					t.Fatalf("copy after the change = %+v, %v; want %v", again, err, tc.refused)
				}
			case err != nil:
				t.Fatalf("copy after the change = %v", err)
			case name == "unchanged":
				if !again.Receipted || again.Stamp == nil || *again.Stamp != *first.Stamp || again.Path != first.Path {
					t.Fatalf("copy of the unchanged pair = %+v; want it receipted with the entry's stamp %+v", again, first.Stamp)
				}
			case again.Receipted:
				t.Fatalf("copy after the change = %+v; want the changed source read again", again)
			}
		})
	}
}

// TestCopyBinaryReceiptSameTick: a source rewritten within the same tick
// of the file system's clock as the read that found it pinned may keep
// its change time; such a read left no receipt, so the rewrite is read and
// refused.
func TestCopyBinaryReceiptSameTick(t *testing.T) {
	t.Parallel()
	c := newCached(t, "plugin bytes")
	time.Sleep(plugin.StampSettle + tick)
	// The entry has settled; the source is new (same bytes, a new inode).
	fresh, _ := entry(t, "plugin bytes")
	if err := os.Rename(fresh, c.src); err != nil {
		t.Fatal(err)
	}
	if got, err := c.copyAt(changedNow(t, c.src)); err != nil || got.Receipted || c.receiptCount(t) != 0 {
		t.Fatalf("copy of a source written now = %+v, %v, %d receipts; want a read and no receipt", got, err, c.receiptCount(t))
	}
	// At once, most likely within the tick of the read: change time,
	// size and mtime may all be as they were.
	rewriteKeepingTimes(t, c.src, []byte("PLUGIN"))
	if _, err := c.copy(); !errors.Is(err, plugin.ErrDigestMismatch) {
		t.Fatalf("copy after a same-tick rewrite = %v; want a digest mismatch", err)
	}
}

// TestCopyBinaryReceiptsNeedThePin: receipts serve only a pinned,
// unsigned source: without Expected the bytes are read (and their digest
// reported), and a receipt for one digest says nothing of another.
func TestCopyBinaryReceiptsNeedThePin(t *testing.T) {
	t.Parallel()
	c := newCached(t, "plugin bytes")
	time.Sleep(plugin.StampSettle + tick)
	if _, err := c.copy(); err != nil || c.receiptCount(t) != 1 {
		t.Fatalf("copy of settled files = %v, %d receipts; want one", err, c.receiptCount(t))
	}
	got, err := plugin.CopyBinary("p", c.src, c.dir, plugin.CopyOptions{Receipts: c.receipts})
	if err != nil || got.Receipted || got.SHA256 != c.digest {
		t.Fatalf("unpinned copy = %+v, %v; want the bytes read and their digest", got, err)
	}
	other := sha256Hex([]byte("other bytes"))
	if _, err := plugin.CopyBinary("p", c.src, c.dir, plugin.CopyOptions{Expected: other, Receipts: c.receipts}); !errors.Is(err, plugin.ErrDigestMismatch) {
		t.Fatalf("copy pinned to another digest = %v; want a digest mismatch", err)
	}
}

// TestCopyBinaryReceiptsOnlyOurs: a receipt vouches only where no other
// user can have made it: one in a directory a group or everyone may
// write, or one owned by another user, is ignored and both files are
// read in full (a forged receipt would otherwise run a cache entry of
// anyone's bytes).
func TestCopyBinaryReceiptsOnlyOurs(t *testing.T) {
	t.Parallel()
	cases := map[string]func(t *testing.T, c cached){
		"directory writable by all": func(t *testing.T, c cached) {
			if err := os.Chmod(c.receipts, 0o777); err != nil {
				t.Fatal(err)
			}
		},
		"directory writable by its group": func(t *testing.T, c cached) {
			if err := os.Chmod(c.receipts, 0o770); err != nil {
				t.Fatal(err)
			}
		},
		"receipt of another user": func(t *testing.T, c cached) {
			if os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root")
			}
			es, err := os.ReadDir(c.receipts)
			if err != nil || len(es) != 1 {
				t.Fatalf("receipts: %v, %v", es, err)
			}
			if err := os.Lchown(filepath.Join(c.receipts, es[0].Name()), 65534, 65534); err != nil {
				t.Fatal(err)
			}
		},
	}
	pairs := settledPairs(t, cases)
	for name, loosen := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := pairs[name]
			if first, err := c.copy(); err != nil || c.receiptCount(t) != 1 {
				t.Fatalf("first copy of settled files = %+v, %v, %d receipts; want one receipt", first, err, c.receiptCount(t))
			}
			if st, err := os.Stat(c.receipts); err != nil || st.Mode().Perm()&0o022 != 0 {
				t.Fatalf("the receipts' directory: %v, %v; want it writable by its user only", st, err)
			}
			if again, err := c.copy(); err != nil || !again.Receipted {
				t.Fatalf("copy of the unchanged pair = %+v, %v; want it receipted", again, err)
			}
			loosen(t, c)
			if again, err := c.copy(); err != nil || again.Receipted {
				t.Fatalf("copy after the receipt became another's to write = %+v, %v; want both files read", again, err)
			}
		})
	}
}

// settledPairs makes a source and cache entry of the same bytes for each
// of cases' names and waits until their stamps have settled, so that a
// first copy of each leaves a receipt.
func settledPairs[T any](t *testing.T, cases map[string]T) map[string]cached {
	t.Helper()
	pairs := map[string]cached{}
	for name := range cases {
		pairs[name] = newCached(t, "plugin bytes")
	}
	time.Sleep(plugin.StampSettle + tick)
	return pairs
}
