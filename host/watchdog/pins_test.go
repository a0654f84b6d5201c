package watchdog_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/plugin"
)

// TestPinsReadsSideBySide: Pins reads every plugin's source (side by
// side) and pins each to its own digest; when several plugins are
// refused, the first in the run file is the one reported.
func TestPinsReadsSideBySide(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	digests := map[string]string{}
	var blocks strings.Builder
	for _, name := range []string{"a", "b", "c"} {
		content := "#!/bin/sh\necho " + name + "\n"
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		digests[name] = sha256Hex(content)
		fmt.Fprintf(&blocks, "plugin %q {\n  type = \"node\"\n  path = %q\n  sha256 = SHA_%s\n}\n", name, path, name)
	}
	decode := func(t *testing.T, sha map[string]string) *hcl.RunFile {
		t.Helper()
		text := "workspace {\n  root = \".\"\n  provider = \"none\"\n}\n" + blocks.String() +
			"graph \"dag\" {\n  node \"n\" {\n    binding = \"a\"\n    input = {}\n  }\n}\n"
		for name, d := range sha {
			text = strings.ReplaceAll(text, "SHA_"+name, fmt.Sprintf("%q", d))
		}
		runFile := filepath.Join(t.TempDir(), "run.hcl")
		if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		rf, diags := hcl.DecodeFile(runFile)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		return rf
	}

	rf := decode(t, digests)
	pins, err := watchdog.Pins(rf, rf.Filename, false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range digests {
		if pins[name].SHA256 != d {
			t.Errorf("plugin %s pinned to %q, want %s", name, pins[name].SHA256, d)
		}
	}

	wrong := strings.Repeat("0", 64)
	rf = decode(t, map[string]string{"a": digests["a"], "b": wrong, "c": wrong})
	_, err = watchdog.Pins(rf, rf.Filename, false, t.TempDir())
	var mismatch *plugin.DigestMismatchError
	if !errors.As(err, &mismatch) || mismatch.Name != "b" {
		t.Errorf("Pins = %v, want plugin b's digest mismatch first", err)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
