package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestRead: a regular file within the bound is read whole; a named pipe,
// a device, a directory or a file past the bound is refused at once,
// saying what it is.
func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path    string
		max     int64
		want    string
		notFile string
		tooBig  bool
	}{
		{path: small, max: 5, want: "12345"},
		{path: small, max: 4, tooBig: true},
		{path: fifo, max: 5, notFile: "a named pipe"},
		{path: "/dev/zero", max: 5, notFile: "a character device"},
		{path: dir, max: 5, notFile: "a directory"},
	}
	for _, tt := range tests {
		b, err := Read(tt.path, tt.max)
		var nr *NotRegularError
		switch {
		case tt.notFile != "":
			if !errors.As(err, &nr) || nr.Kind != tt.notFile {
				t.Errorf("Read(%s) = %v, want it is %s", tt.path, err, tt.notFile)
			}
		case tt.tooBig:
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("Read(%s, %d) = %v, want ErrTooLarge", tt.path, tt.max, err)
			}
		case err != nil || string(b) != tt.want:
			t.Errorf("Read(%s) = %q, %v; want %q", tt.path, b, err, tt.want)
		}
	}
}
