//go:build unix

package regfile

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestOpenFile: a regular file opens with any flags (and is created);
// a named pipe — read-only, write-only with no reader, read-write — a
// socket and a device are refused at once, naming what they are; a
// directory only by OpenFile.
func TestOpenFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg := filepath.Join(dir, "reg")
	if err := os.WriteFile(reg, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tests := []struct {
		path    string
		flag    int
		dirOK   bool
		notFile string
	}{
		{path: reg, flag: os.O_RDONLY},
		{path: reg, flag: os.O_RDWR | os.O_APPEND},
		{path: filepath.Join(dir, "new"), flag: os.O_WRONLY | os.O_CREATE | os.O_APPEND},
		{path: fifo, flag: os.O_RDONLY, notFile: "a named pipe"},
		{path: fifo, flag: os.O_WRONLY | os.O_APPEND, notFile: "a named pipe"},
		{path: fifo, flag: os.O_RDWR | os.O_CREATE, notFile: "a named pipe"},
		{path: sock, flag: os.O_RDONLY, notFile: "a socket"},
		{path: "/dev/zero", flag: os.O_RDONLY, notFile: "a character device"},
		{path: dir, flag: os.O_RDONLY, notFile: "a directory"},
		{path: dir, flag: os.O_RDONLY, dirOK: true},
	}
	for _, tt := range tests {
		open := OpenFile
		if tt.dirOK {
			open = OpenFileOrDir
		}
		done := make(chan struct{})
		var f *os.File
		var err error
		go func() {
			defer close(done)
			f, err = open(tt.path, tt.flag, 0o644)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("open(%s, %#x) blocks", tt.path, tt.flag)
		}
		var nr *NotRegularError
		var pe *fs.PathError
		switch {
		case tt.notFile != "":
			if !errors.As(err, &nr) || nr.Kind != tt.notFile || !errors.As(err, &pe) || pe.Path != tt.path {
				t.Errorf("open(%s, %#x) = %v, want it is %s, naming the path", tt.path, tt.flag, err, tt.notFile)
			}
		case err != nil:
			t.Errorf("open(%s, %#x) = %v", tt.path, tt.flag, err)
		default:
			f.Close()
		}
	}
}
