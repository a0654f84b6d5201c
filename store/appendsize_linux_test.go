package store

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// checkNoHole fails t when the file at path has a hole before its end
// (lseek(SEEK_HOLE) finds one).
func checkNoHole(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	hole, err := f.Seek(0, unix.SEEK_HOLE)
	if err != nil || hole != fi.Size() {
		t.Fatalf("the file of %d bytes has a hole at %d (%v): a fill started past its end", fi.Size(), hole, err)
	}
}
