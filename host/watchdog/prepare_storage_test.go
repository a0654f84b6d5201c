package watchdog_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/host/watchdog"
)

// TestPrepareStorageNotUTF8: a --storage directory whose name is not
// UTF-8 is refused with ErrStorageNotText before anything is read or
// recorded: the plan records it as JSON text, where the bad bytes would
// become U+FFFD, a directory that does not exist. A long name is echoed
// cut.
func TestPrepareStorageNotUTF8(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runFile := filepath.Join(dir, "run.hcl")
	text := "plugin \"shell\" {\n  type = \"node\"\n  path = \"/bin/true\"\n}\ngraph \"dag\" {\n  node \"n\" {\n    binding = \"shell\"\n    input   = {}\n  }\n}\n"
	if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := watchdog.Prepare(context.Background(), runFile, watchdog.PrepareOptions{Storage: filepath.Join(dir, "s\xff")})
	if !errors.Is(err, watchdog.ErrStorageNotText) || !strings.Contains(err.Error(), "is not UTF-8 text") || !strings.Contains(err.Error(), `s\xff`) {
		t.Errorf("Prepare with a non-UTF-8 --storage: %v; want ErrStorageNotText naming it", err)
	}
	long := filepath.Join(dir, strings.Repeat("d", 5000)+"\xff")
	_, err = watchdog.Prepare(context.Background(), runFile, watchdog.PrepareOptions{Storage: long})
	if !errors.Is(err, watchdog.ErrStorageNotText) || len(err.Error()) > 600 || !strings.Contains(err.Error(), "bytes in all)") {
		t.Errorf("Prepare with a long non-UTF-8 --storage: %d bytes of error (%.200q), want ErrStorageNotText echoing it cut", len(err.Error()), err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "s\xff")); serr == nil {
		t.Error("the storage directory was created")
	}
}

// TestPrepareCacheCopyNamesWhatChoseStorage: a storage directory that
// cannot hold the plugin cache is refused naming what chose it: the run
// file's storage.directory, or --storage when the flag did.
func TestPrepareCacheCopyNamesWhatChoseStorage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, block, flag, want, not string
	}{
		{name: "run_file", block: "storage {\n  directory = \"/proc/obversa-none\"\n}\n", want: "check `storage.directory` in ", not: "--storage"},
		{name: "flag", flag: "/proc/obversa-none", want: "check --storage", not: "storage.directory"},
		{name: "flag_over_run_file", block: "storage {\n  directory = \"/proc/obversa-other\"\n}\n", flag: "/proc/obversa-none", want: "check --storage", not: "storage.directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			runFile := filepath.Join(dir, "run.hcl")
			text := tc.block + "plugin \"shell\" {\n  type = \"node\"\n  path = \"/bin/true\"\n}\ngraph \"dag\" {\n  node \"n\" {\n    binding = \"shell\"\n    input   = {}\n  }\n}\n"
			if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := watchdog.Prepare(context.Background(), runFile, watchdog.PrepareOptions{Storage: tc.flag, TrustOnFirstUse: true})
			var ce *watchdog.CacheCopyError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.not) {
				t.Errorf("Prepare: %v; want a *CacheCopyError saying %q", err, tc.want)
			}
		})
	}
}
