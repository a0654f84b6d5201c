package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/sdk"
	"github.com/obversa/obversa/sdk/enginetest"
)

// floodSecret is the known secret the flooding plugin prints.
const floodSecret = "sk-flood-5f3a9c0e1d2b4a67"

// stderrFlood is a mock engine that first writes 10 MB to stderr, a known
// secret on every 1000th line.
func stderrFlood() int {
	line := strings.Repeat("x", 99)
	var b bytes.Buffer
	for i := range 100_000 {
		if i%1000 == 0 {
			fmt.Fprintf(&b, "token %s\n", os.Getenv("FLOOD_SECRET"))
			continue
		}
		b.WriteString(line + "\n")
	}
	_, _ = os.Stderr.Write(b.Bytes())
	if err := sdk.ServeEngine(enginetest.New()); err != nil {
		return 1
	}
	return 0
}

// TestLogsAreCappedAndRedacted: a plugin that writes 10 MB to stderr with
// a known secret in it leaves, under the storage directory, no file larger
// than max_log_bytes and no trace of the secret.
func TestLogsAreCappedAndRedacted(t *testing.T) {
	t.Parallel()
	runFile := writeRunFile(t, `
storage {
  known_secrets_from_env = ["FLOOD_SECRET"]
  max_log_bytes          = 1048576
}
plugin "mock" {
  type     = "engine"
  path     = "SELF"
  env      = { OBVERSA_TEST_HELPER = "stderr-flood" }
  pass_env = ["FLOOD_SECRET"]
}
lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  node "a" {
    lane   = "w"
    prompt = "hello"
  }
}
`)
	dir := filepath.Dir(runFile)
	env := []string{"FLOOD_SECRET=" + floodSecret}
	if r := obversaEnv(t, dir, env, "run", "--lock", runFile); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	var logs []string
	err := filepath.WalkDir(filepath.Join(dir, ".obversa"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(path, string(filepath.Separator)+"plugins"+string(filepath.Separator)) {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if strings.Contains(d.Name(), ".log") {
			logs = append(logs, fmt.Sprintf("%s (%d bytes)", d.Name(), info.Size()))
			if info.Size() > 1<<20 {
				t.Errorf("%s holds %d bytes, over max_log_bytes", path, info.Size())
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(floodSecret)) {
			t.Errorf("%s holds the known secret", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) < 2 {
		t.Errorf("logs %v: want plugins.log rotated (plugins.log and plugins.log.1)", logs)
	}
	t.Logf("logs: %v", logs)

}
