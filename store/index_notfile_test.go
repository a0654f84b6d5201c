package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCacheNotAFile: an events.jsonl.idx that is a directory or a named
// pipe is refused by every open as a *StorageError naming it once and
// saying how to move it aside; once moved, the next open rebuilds it.
func TestCacheNotAFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	good, _ := twelveInThrees(t)
	for _, kind := range []string{"directory", "named pipe"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "run")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, eventsFile)
			writeFile(t, path, good)
			idx := path + cacheSuffix
			var err error
			if kind == "directory" {
				err = os.Mkdir(idx, 0o755)
			} else {
				err = syscall.Mkfifo(idx, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			_, werr := OpenRunDir(ctx, dir, Policy{})
			_, rerr := OpenRunDirReadOnly(ctx, dir)
			for what, err := range map[string]error{"open": werr, "read-only open": rerr} {
				var se *StorageError
				if !errors.As(err, &se) || !strings.Contains(err.Error(), "mv "+idx+" "+idx+".bad") || strings.Count(err.Error(), idx) != 3 {
					t.Errorf("%s of a run whose index is a %s = %v; want a StorageError naming it and saying to move it aside", what, kind, err)
				}
			}
			if err := os.Rename(idx, idx+".bad"); err != nil {
				t.Fatal(err)
			}
			w, err := OpenRunDir(ctx, dir, Policy{})
			if err != nil {
				t.Fatalf("open with the index moved aside: %v", err)
			}
			w.Close()
		})
	}
}
