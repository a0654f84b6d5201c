package watchdog_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/host/watchdog"
)

// TestPrepareStorageNotUTF8: a --storage directory whose name is not
// UTF-8 is refused before anything is read or recorded: the plan records
// it as JSON text, where the bad bytes would become U+FFFD, a directory
// that does not exist.
func TestPrepareStorageNotUTF8(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runFile := filepath.Join(dir, "run.hcl")
	text := "plugin \"shell\" {\n  type = \"node\"\n  path = \"/bin/true\"\n}\ngraph \"dag\" {\n  node \"n\" {\n    binding = \"shell\"\n    input   = {}\n  }\n}\n"
	if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := watchdog.Prepare(context.Background(), runFile, watchdog.PrepareOptions{Storage: filepath.Join(dir, "s\xff")})
	if err == nil || !strings.Contains(err.Error(), "is not UTF-8 text") {
		t.Errorf("Prepare with a non-UTF-8 --storage: %v; want it refused as not UTF-8", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "s\xff")); serr == nil {
		t.Error("the storage directory was created")
	}
}
