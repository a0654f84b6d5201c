package store_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/store"
	"github.com/obversa/obversa/store/simfs"
	"github.com/obversa/obversa/store/storetest"
)

// TestConformance runs the backend conformance suite on the file backend,
// on the operating system's file system (Adopt through a child process)
// and on the simulated one.
func TestConformance(t *testing.T) {
	t.Run("os", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Backend {
			st, err := store.Open(t.TempDir(), "conformance")
			if err != nil {
				t.Fatal(err)
			}
			return st
		}, storetest.WithAdopt(adoptInChild), storetest.WithDamage(func(t *testing.T, b store.Backend, id string, ref store.ArtifactRef) {
			damageBlob(t, store.OS(), b, id, ref)
		}), storetest.WithEventEdit(func(t *testing.T, b store.Backend, id string, rev int64, from, to string) {
			editEventLine(t, store.OS(), b, id, rev, from, to)
		}))
	})
	t.Run("simfs", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Backend {
			st, err := store.Open("/storage", "conformance", store.WithFS(simfs.New()))
			if err != nil {
				t.Fatal(err)
			}
			return st
		}, storetest.SkipAdopt("a simulated file system has no descriptor a child process can inherit"),
			storetest.WithDamage(func(t *testing.T, b store.Backend, id string, ref store.ArtifactRef) {
				damageBlob(t, b.(*store.Store).FS(), b, id, ref)
			}), storetest.WithEventEdit(func(t *testing.T, b store.Backend, id string, rev int64, from, to string) {
				editEventLine(t, b.(*store.Store).FS(), b, id, rev, from, to)
			}))
	})
}

// adoptInChild re-runs the test binary as a helper (helper_test.go,
// role "adopt") handed own, which adopts it and appends one event.
func adoptInChild(t *testing.T, b store.Backend, id string, own store.Ownership) (int64, error) {
	t.Helper()
	env, files := own.Handoff()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "STORE_TEST_HELPER=adopt", "STORE_DIR="+b.(*store.Store).RunDir(id),
		"STORE_EVENT_TYPE=storetest:adopted"), env...)
	cmd.ExtraFiles = files
	cmd.Stdin = strings.NewReader("\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("helper: %v: %s", err, out.String())
	}
	var rev int64
	var rest string
	if _, err := fmt.Sscanf(out.String(), "ok %d %s", &rev, &rest); err != nil {
		return 0, fmt.Errorf("helper said %q", out.String())
	}
	return rev, nil
}

// damageBlob overwrites a stored artifact's bytes (same size).
func damageBlob(t *testing.T, fsys store.FS, b store.Backend, id string, ref store.ArtifactRef) {
	t.Helper()
	path := filepath.Join(b.(*store.Store).RunDir(id), "artifacts", "sha256", strings.TrimPrefix(ref.Digest, "sha256:"))
	f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(bytes.Repeat([]byte("X"), int(ref.Size))); err != nil {
		t.Fatal(err)
	}
}

// editEventLine replaces from by to in line rev of the run's events.jsonl
// (same length), after the line's "data" member starts, and writes the
// file back.
func editEventLine(t *testing.T, fsys store.FS, b store.Backend, id string, rev int64, from, to string) {
	t.Helper()
	path := filepath.Join(b.(*store.Store).RunDir(id), "events.jsonl")
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, err = buf.ReadFrom(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	b2 := buf.Bytes()
	off := 0
	for i := int64(1); i < rev; i++ {
		off += bytes.IndexByte(b2[off:], '\n') + 1
	}
	line := b2[off : off+bytes.IndexByte(b2[off:], '\n')]
	data := bytes.Index(line, []byte(`,"data":`))
	k := -1
	if data >= 0 {
		k = bytes.Index(line[data:], []byte(from))
	}
	if k < 0 || len(from) != len(to) {
		t.Fatalf("line %d has no %q in its data to replace", rev, from)
	}
	copy(line[data+k:], to)
	f, err = fsys.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b2); err != nil {
		t.Fatal(err)
	}
}
