package validate

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDefinitionLargerThanABatch: a run file whose definition (here one
// prompt of 5 000 bytes) is larger than storage.max_batch_bytes is refused
// by validate at that node, naming the setting, as run would refuse to
// record it; the same file with room for it is valid.
func TestDefinitionLargerThanABatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(batch int) string {
		src := `workspace {
  root     = "."
  provider = "none"
}
storage {
  max_event_payload_bytes = 1024
  max_batch_bytes         = ` + strconv.Itoa(batch) + `
}
plugin "shell" {
  type   = "node"
  path   = "/bin/sh"
  sha256 = "` + strings.Repeat("a", 64) + `"
}
graph "dag" {
  node "small" {
    binding = "shell"
  }
  node "big" {
    binding = "shell"
    input   = { text = "` + strings.Repeat("x", 5000) + `" }
  }
}
`
		path := filepath.Join(dir, "run.hcl")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	_, diags := File(context.Background(), write(4096), Options{})
	var found bool
	for _, d := range diags {
		if d.Summary == "Run definition too large to record" {
			found = true
			if d.Subject == nil || d.Subject.Start.Line != 18 || !strings.Contains(d.Detail, "max_batch_bytes = 4096") {
				t.Fatalf("diagnostic at %v: %s", d.Subject, d.Detail)
			}
			// The byte offset is the line's, so that the source shown
			// under the message is the node's line.
			src, _ := os.ReadFile(filepath.Join(dir, "run.hcl"))
			if !strings.HasPrefix(string(src[d.Subject.Start.Byte:]), `  node "big" {`) {
				t.Errorf("diagnostic's byte offset %d is not the start of the node's line", d.Subject.Start.Byte)
			}
		}
	}
	if !found {
		t.Errorf("no diagnostic of the definition's size: %v", diags)
	}
	_, diags = File(context.Background(), write(65536), Options{})
	for _, d := range diags {
		if d.Summary == "Run definition too large to record" {
			t.Errorf("a definition within max_batch_bytes is refused: %s", d.Detail)
		}
	}
	// At the boundary: the size validate names, envelope included, is
	// the least max_batch_bytes it passes.
	size := definitionSize(t, write)
	for _, tt := range []struct {
		batch   int
		refused bool
	}{{size - 1, true}, {size, false}} {
		_, diags := File(context.Background(), write(tt.batch), Options{})
		refused := false
		for _, d := range diags {
			refused = refused || d.Summary == "Run definition too large to record"
		}
		if refused != tt.refused {
			t.Errorf("max_batch_bytes = %d (the definition's line is %d bytes): refused %v, want %v", tt.batch, size, refused, tt.refused)
		}
	}
}

// definitionSize returns the size validate reports for the run file
// write makes, read from its refusal under a small max_batch_bytes.
func definitionSize(t *testing.T, write func(batch int) string) int {
	t.Helper()
	_, diags := File(context.Background(), write(4096), Options{})
	for _, d := range diags {
		if d.Summary != "Run definition too large to record" {
			continue
		}
		_, rest, _ := strings.Cut(d.Detail, ") are ")
		n, err := strconv.Atoi(strings.Fields(rest)[0])
		if err != nil {
			t.Fatalf("no size in %q", d.Detail)
		}
		return n
	}
	t.Fatal("no refusal under max_batch_bytes = 4096")
	return 0
}
