package durable

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestWriteFileReplacesWhole: while one goroutine replaces a file again
// and again, a reader never sees it empty or half written (os.WriteFile's
// truncate-then-write shows both); the mode of an existing file is kept,
// a symbolic link is kept and its target replaced, and no temporary file
// is left.
func TestWriteFileReplacesWhole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "obversa.lock.hcl")
	a, b := bytes.Repeat([]byte("a"), 64<<10), bytes.Repeat([]byte("b"), 64<<10)
	if err := WriteFile(path, a, 0o640); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			data := a
			if i%2 == 0 {
				data = b
			}
			if err := WriteFile(path, data, 0o644); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; i < 300; i++ {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
			t.Fatalf("read %d bytes that are neither version", len(got))
		}
	}
	close(stop)
	wg.Wait()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode after replacing: %v, %v; want 0640 kept", fi.Mode(), err)
	}
	link := filepath.Join(dir, "link.hcl")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v, %v", fi, err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new" {
		t.Errorf("target holds %q, want new", got)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), nil, 0o644); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
}
