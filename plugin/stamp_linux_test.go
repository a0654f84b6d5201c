package plugin_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/plugin/confine"
	"github.com/obversa/obversa/plugin/pluginhost"
)

// tick outlasts the file system clock's granularity (one kernel tick), so
// that a change made after it gets a change time of its own.
const tick = 50 * time.Millisecond

// entry writes a read-only file of content in a new directory and returns
// its path and digest.
func entry(t *testing.T, content string) (path, digest string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "entry")
	if err := os.WriteFile(path, []byte(content), 0o555); err != nil {
		t.Fatal(err)
	}
	return path, sha256Hex([]byte(content))
}

func stampOf(t *testing.T, path string) plugin.FileStamp {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := plugin.StampOf(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOpenCachedHashes: without a stamp the entry is hashed; other bytes
// are a *DigestMismatchError, and a file written moments ago gets no stamp
// (plugin.StampSettle).
func TestOpenCachedHashes(t *testing.T) {
	t.Parallel()
	path, digest := entry(t, "pinned bytes")
	f, stamp, err := plugin.OpenCached(path, digest, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if stamp != nil {
		t.Errorf("a file written now got the stamp %+v, want none until it settled", stamp)
	}
	_, _, err = plugin.OpenCached(path, sha256Hex([]byte("other")), nil)
	var mismatch *plugin.DigestMismatchError
	if !errors.As(err, &mismatch) || mismatch.Actual != digest {
		t.Errorf("OpenCached(other digest) = %v, want a DigestMismatchError naming %s", err, digest)
	}
	if _, _, err := plugin.OpenCached(path+".missing", digest, nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenCached(missing) = %v, want ErrNotExist", err)
	}
}

// TestOpenCachedTrustsASettledStamp: a file older than StampSettle gets a
// stamp once hashed, and while it shows that stamp it is not read again —
// which a wrong digest shows, since only a read could notice it.
func TestOpenCachedTrustsASettledStamp(t *testing.T) {
	t.Parallel()
	old, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Skip(err)
	}
	b, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	if st := stampOf(t, old); time.Since(time.Unix(0, st.CtimeNS)) < 2*plugin.StampSettle {
		t.Skipf("%s changed moments ago", old)
	}
	f, stamp, err := plugin.OpenCached(old, sha256Hex(b), nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if stamp == nil || *stamp != stampOf(t, old) {
		t.Fatalf("OpenCached(%s) vouched with %+v, want the file's settled stamp", old, stamp)
	}
	f, again, err := plugin.OpenCached(old, sha256Hex([]byte("not read")), stamp)
	if err != nil || again != stamp {
		t.Fatalf("OpenCached with its stamp = %v, %v; want the file, unread", again, err)
	}
	f.Close()
}

// TestOpenCachedSeesChanges: an entry changed since its stamp was taken —
// rewritten in place, replaced by rename, its mode changed — is hashed
// again: other bytes are refused, the same bytes pass.
func TestOpenCachedSeesChanges(t *testing.T) {
	t.Parallel()
	for name, change := range map[string]func(t *testing.T, path string) (same bool){
		"rewritten in place": func(t *testing.T, path string) bool {
			if err := os.Chmod(path, 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte("PINNED"), 0); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o555); err != nil {
				t.Fatal(err)
			}
			return false
		},
		"replaced by rename": func(t *testing.T, path string) bool {
			other, _ := entry(t, "PINNED bytes")
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
			return false
		},
		"same bytes, new inode": func(t *testing.T, path string) bool {
			other, _ := entry(t, "pinned bytes")
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
			return true
		},
		"mode changed and back": func(t *testing.T, path string) bool {
			for _, m := range []os.FileMode{0o755, 0o555} {
				if err := os.Chmod(path, m); err != nil {
					t.Fatal(err)
				}
			}
			return true
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path, digest := entry(t, "pinned bytes")
			stamp := stampOf(t, path)
			time.Sleep(tick)
			same := change(t, path)
			f, _, err := plugin.OpenCached(path, digest, &stamp)
			if same {
				if err != nil {
					t.Fatalf("OpenCached = %v, want the same bytes to pass", err)
				}
				f.Close()
				// Passing proves nothing of the stamp: a wrong digest must be
				// noticed, which only a read of the changed entry can do.
				if _, _, err := plugin.OpenCached(path, sha256Hex([]byte("other")), &stamp); !errors.Is(err, plugin.ErrDigestMismatch) {
					t.Fatalf("OpenCached(other digest) with the old stamp = %v, want the changed entry read and refused", err)
				}
				return
			}
			if !errors.Is(err, plugin.ErrDigestMismatch) {
				t.Fatalf("OpenCached = %v, want a digest mismatch", err)
			}
		})
	}
}

// TestCopyBinaryStampsASettledEntry: comparing a source with an existing
// cache entry that settled yields the entry's stamp; a new entry and one
// that is too young yield none. The clock is the entry's own change time
// (young: the read begins at it) and StampSettle past it (settled), so no
// stall of the machine moves the entry across the margin.
func TestCopyBinaryStampsASettledEntry(t *testing.T) {
	t.Parallel()
	src, digest := entry(t, "plugin bytes")
	dir := t.TempDir()
	first, err := plugin.CopyBinary("p", src, dir, plugin.CopyOptions{Expected: digest})
	if err != nil {
		t.Fatal(err)
	}
	ctime := time.Unix(0, stampOf(t, first.Path).CtimeNS)
	at := func(d time.Duration) func() time.Time { return func() time.Time { return ctime.Add(d) } }
	again, err := plugin.CopyBinary("p", src, dir, plugin.CopyOptions{Expected: digest, Now: at(0)})
	if err != nil {
		t.Fatal(err)
	}
	edge, err := plugin.CopyBinary("p", src, dir, plugin.CopyOptions{Expected: digest, Now: at(plugin.StampSettle)})
	if err != nil {
		t.Fatal(err)
	}
	if first.Stamp != nil || again.Stamp != nil || edge.Stamp != nil {
		t.Errorf("stamps %+v, %+v, %+v for a new entry, a young one and one exactly StampSettle old; want none", first.Stamp, again.Stamp, edge.Stamp)
	}
	settled, err := plugin.CopyBinary("p", src, dir, plugin.CopyOptions{Expected: digest, Now: at(plugin.StampSettle + time.Nanosecond)})
	if err != nil {
		t.Fatal(err)
	}
	if settled.Stamp == nil || *settled.Stamp != stampOf(t, settled.Path) {
		t.Errorf("stamp %+v, want the settled entry's", settled.Stamp)
	}
}

// TestConfinedLaunchExecutesTheVerifiedFile: a file renamed over a cache
// entry after it was opened and verified is not what a confined launch
// executes — the shim executes the open file.
func TestConfinedLaunchExecutesTheVerifiedFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, testBinSHA)
	copyFileTo(t, testBin, path)
	f, _, err := plugin.OpenCached(path, testBinSHA, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	own := t.TempDir() // the plugin may write here: the marker too
	marker := filepath.Join(own, "swapped-ran")
	swapped := filepath.Join(dir, "swapped")
	if err := os.WriteFile(swapped, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(swapped, path); err != nil {
		t.Fatal(err)
	}
	prep, err := confine.Prepare(confine.Spec{Own: []string{own}, Network: true}, confine.Detect(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Release()
	c, err := pluginhost.Launch(context.Background(), plugin.LaunchConfig{
		Name: "fake", Type: plugin.TypeEngine, Path: path, SHA256: testBinSHA, Verified: true, File: f,
		Env: []string{modeEnv + "=both"}, Confine: prep, Logger: hclog.NewNullLogger(),
	})
	if err != nil {
		t.Fatalf("Launch = %v, want the verified binary to start", err)
	}
	defer c.Close()
	if got := finalText(t, c, "client-cert"); got != "ECDSA P-256" {
		t.Errorf("the plugin answered %q", got)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file renamed over the entry ran (stat: %v)", err)
	}
}

func copyFileTo(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o555)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
