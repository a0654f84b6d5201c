package proc

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDupFile: the copy is another descriptor of the same open file,
// closed on exec, and closing it leaves the original open; a closed file
// is an error naming it.
func TestDupFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plugin")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dup, err := DupFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if dup.Fd() == f.Fd() || dup.Name() != f.Name() {
		t.Fatalf("copy: descriptor %d name %q; original %d %q", dup.Fd(), dup.Name(), f.Fd(), f.Name())
	}
	var a, b unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &a); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fstat(int(dup.Fd()), &b); err != nil {
		t.Fatal(err)
	}
	if a.Dev != b.Dev || a.Ino != b.Ino {
		t.Errorf("the copy is file %d:%d, the original %d:%d", b.Dev, b.Ino, a.Dev, a.Ino)
	}
	if flags, err := unix.FcntlInt(dup.Fd(), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("the copy's descriptor flags are %#x (%v), want FD_CLOEXEC", flags, err)
	}
	if err := dup.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Stat(); err != nil {
		t.Errorf("the original after the copy was closed: %v", err)
	}
	closed, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if _, err := DupFile(closed); err == nil {
		t.Error("DupFile of a closed file succeeded")
	}
}
