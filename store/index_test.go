package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDamagedCacheRefusesTornTail: beside a validated-prefix cache that
// exists but is not one, a last committed event cut short must not be
// taken for a torn write. Every open — writable, read-only — and Verify
// refuse, naming the cache, and nothing in the run directory changes.
// Moving the cache aside, as the error says, lets the next open recover
// (the cut-short line is then kept in a torn file).
func TestDamagedCacheRefusesTornTail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	good, cache := twelveInThrees(t)

	for name, idx := range map[string][]byte{
		"garbage":           []byte("\x8b\x03\xfe garbage that is not an index at all, 50 bytes.."),
		"empty":             {},
		"checksum mismatch": flip(cache, 30, cache[30]^0xff),
		"cut short":         cache[:len(cache)-9],
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "run")
			os.Mkdir(dir, 0o755)
			path := filepath.Join(dir, eventsFile)
			events := good[:len(good)-40] // the last committed event, cut short
			writeFile(t, path, events)
			writeFile(t, path+cacheSuffix, idx)
			before := dirListing(t, dir)

			_, werr := OpenRunDir(ctx, dir, Policy{})
			_, rerr := OpenRunDirReadOnly(ctx, dir)
			for what, err := range map[string]error{"open": werr, "read-only open": rerr} {
				var ie *IndexError
				if !errors.As(err, &ie) || !errors.Is(err, ErrCorruptEventStream) || ie.Path != path+cacheSuffix || !strings.Contains(err.Error(), "mv "+path+cacheSuffix) {
					t.Fatalf("%s: %v; want an *IndexError naming %s and how to move it aside", what, err, path+cacheSuffix)
				}
			}
			rep, verr := Verify(ctx, dir)
			if !errors.Is(verr, ErrCorruptEventStream) || len(rep.Faults) != 1 || rep.Faults[0].File != eventsFile+cacheSuffix || rep.TornBytes == 0 {
				t.Fatalf("Verify: %v %+v; want one fault in %s and the torn-looking tail counted", verr, rep, eventsFile+cacheSuffix)
			}
			if !bytes.Equal(readBytes(t, path), events) || !bytes.Equal(readBytes(t, path+cacheSuffix), idx) {
				t.Fatal("a refused open changed events.jsonl or the cache")
			}
			if after := dirListing(t, dir); after != before {
				t.Fatalf("the run directory changed:\n%s\nwant\n%s", after, before)
			}

			// The recovery the error names.
			if err := os.Rename(path+cacheSuffix, path+cacheSuffix+".bad"); err != nil {
				t.Fatal(err)
			}
			w, err := OpenRunDir(ctx, dir, Policy{})
			if err != nil {
				t.Fatalf("open with the cache moved aside: %v", err)
			}
			defer w.Close()
			if w.events.Rev() != 9 {
				t.Fatalf("rev %d after recovery, want 9 (the cut-short batch moved aside)", w.events.Rev())
			}
			if torn, _ := filepath.Glob(path + ".torn-*"); len(torn) != 1 {
				t.Fatalf("torn files %v, want one", torn)
			}
		})
	}
}

// dirListing names every file of dir with its size.
func dirListing(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(e.Name() + " " + fi.Mode().String() + " " + strconv.FormatInt(fi.Size(), 10) + "\n")
	}
	return b.String()
}
