//go:build unix

package regfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"testing"
	"unsafe"
)

// TestMap: Map refuses what Read refuses and maps a regular file's bytes
// as Read reads them; an empty file is an empty slice.
func TestMap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1000)
	file, empty := filepath.Join(dir, "file"), filepath.Join(dir, "empty")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	b, unmap, err := Map(file, int64(len(data)))
	if err != nil || !bytes.Equal(b, data) {
		t.Fatalf("Map(%s) = %d bytes, %v; want the file's %d", file, len(b), err, len(data))
	}
	unmap()
	if b, unmap, err := Map(empty, 5); err != nil || b == nil || len(b) != 0 {
		t.Fatalf("Map(empty) = %q, %v; want an empty slice", b, err)
	} else {
		unmap()
	}
	if _, _, err := Map(file, int64(len(data))-1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Map past the bound = %v, want ErrTooLarge", err)
	}
	for path, kind := range map[string]string{fifo: "a named pipe", "/dev/zero": "a character device", dir: "a directory"} {
		var nr *NotRegularError
		if _, _, err := Map(path, 5); !errors.As(err, &nr) || nr.Kind != kind {
			t.Errorf("Map(%s) = %v, want it is %s", path, err, kind)
		}
	}
}

// TestMapOfACutFileFaults: a mapped file cut shorter faults where its
// bytes are gone, and under debug.SetPanicOnFault that fault is a panic
// naming an address among the mapped bytes, which a reader recovers from
// (runstate's restore of a fold snapshot does).
func TestMapOfACutFileFaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	page := os.Getpagesize()
	if err := os.WriteFile(path, make([]byte, 3*page), 0o644); err != nil {
		t.Fatal(err)
	}
	b, unmap, err := Map(path, int64(3*page))
	if err != nil {
		t.Fatal(err)
	}
	defer unmap()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	var addr uintptr
	func() {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if f, ok := recover().(interface{ Addr() uintptr }); ok {
				addr = f.Addr()
			}
		}()
		mapSink = b[2*page]
	}()
	start := uintptr(unsafe.Pointer(&b[0]))
	if addr < start || addr >= start+uintptr(len(b)) {
		t.Fatalf("a read of a cut file's mapped bytes gave no fault at an address among them (got %#x, bytes at %#x)", addr, start)
	}
}

// mapSink keeps the read of TestMapOfACutFileFaults.
var mapSink byte
