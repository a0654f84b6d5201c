package watchdog_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/plugin"
)

// TestPinsTrustsAnUnchangedSourceOnly: once a plugin's source and cache
// entry have settled and been read in full, Pins leaves a hash receipt
// and a later run does not read them again; the entry's stamp still
// reaches the worker. A source rewritten in place afterwards — same
// size, same inode, its mtime set back — is read again and refused by
// its digest, as it was before receipts.
func TestPinsTrustsAnUnchangedSourceOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	content := "#!/bin/sh\necho plugin\n"
	src := filepath.Join(dir, "p")
	if err := os.WriteFile(src, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	runFile := filepath.Join(dir, "run.hcl")
	text := fmt.Sprintf("workspace {\n  root = \".\"\n  provider = \"none\"\n}\nplugin \"p\" {\n  type = \"node\"\n  path = %q\n  sha256 = %q\n}\n"+
		"graph \"dag\" {\n  node \"n\" {\n    binding = \"p\"\n    input = {}\n  }\n}\n", src, sha256Hex(content))
	if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	rf, diags := hcl.DecodeFile(runFile)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	storage := t.TempDir()
	receipts := func() int {
		es, _ := os.ReadDir(launch.HashedDir(storage))
		return len(es)
	}
	pins := func() (map[string]watchdog.Pin, error) { return watchdog.Pins(rf, runFile, false, storage) }
	if _, err := pins(); err != nil {
		t.Fatal(err)
	}
	if n := receipts(); n != 0 {
		t.Fatalf("%d receipts for files written moments ago, want none", n)
	}
	time.Sleep(plugin.StampSettle + 50*time.Millisecond)
	read, err := pins()
	if err != nil || read["p"].Stamp == nil || receipts() != 1 {
		t.Fatalf("Pins of settled files = %+v, %v, %d receipts; want the entry's stamp and one receipt", read, err, receipts())
	}
	again, err := pins()
	if err != nil || again["p"].Stamp == nil || *again["p"].Stamp != *read["p"].Stamp {
		t.Fatalf("Pins of the unchanged source = %+v, %v; want the entry's stamp %+v", again, err, read["p"].Stamp)
	}

	st, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(src, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("#!/bin/sh\necho PLUGIN\n"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(src, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	_, err = pins()
	var mismatch *plugin.DigestMismatchError
	if !errors.As(err, &mismatch) || mismatch.Name != "p" {
		t.Fatalf("Pins after rewriting the source in place (size and mtime kept) = %v; want p's digest mismatch", err)
	}
}
