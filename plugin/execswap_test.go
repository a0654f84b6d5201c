//go:build failpoints && linux

package plugin_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/internal/failpoint"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/plugin/confine"
	"github.com/obversa/obversa/plugin/pluginhost"
)

// TestSwapBeforeExecIsNotExecuted: a file renamed over a plugin's cache
// entry after the entry was opened and verified and before the launch
// executes it (the failpoint BeforeExec, where the host would exec a
// path) is not what runs: the verified file starts and answers, and the
// swapped file never runs — unconfined and confined, for a binary and
// for a "#!" script, whose interpreter gets the verified file's
// descriptor, kept open across the exec.
func TestSwapBeforeExecIsNotExecuted(t *testing.T) {
	t.Parallel()
	for _, confined := range []bool{false, true} {
		for _, script := range []bool{false, true} {
			name := map[bool]string{false: "unconfined", true: "confined"}[confined] + map[bool]string{false: " binary", true: " script"}[script]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				swapBeforeExec(t, confined, script)
			})
		}
	}
}

func swapBeforeExec(t *testing.T, confined, script bool) {
	dir := t.TempDir()
	own := t.TempDir() // the plugin may write and execute here
	bin := filepath.Join(own, "plugin-bin")
	copyFileTo(t, testBin, bin)
	content, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if script {
		content = []byte("#!/bin/sh\nexec '" + bin + "' \"$@\"\n")
	}
	sum := sha256.Sum256(content)
	digest := hex.EncodeToString(sum[:])
	path := filepath.Join(dir, digest)
	if err := os.WriteFile(path, content, 0o555); err != nil {
		t.Fatal(err)
	}
	f, _, err := plugin.OpenCached(path, digest, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	marker := filepath.Join(own, "swapped-ran")
	swapped := filepath.Join(dir, "swapped")
	if err := os.WriteFile(swapped, []byte("#!/bin/sh\ntouch '"+marker+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	hits := 0
	ctx := failpoint.WithHandler(context.Background(), func(point, key string) {
		if point == failpoint.BeforeExec && key == "fake" {
			hits++
			if err := os.Rename(swapped, path); err != nil {
				t.Error(err)
			}
		}
	})
	cfg := plugin.LaunchConfig{Name: "fake", Type: plugin.TypeEngine, Path: path, SHA256: digest, Verified: true, File: f,
		Env: []string{modeEnv + "=both"}, Logger: hclog.NewNullLogger()}
	if confined {
		prep, err := confine.Prepare(confine.Spec{Own: []string{own}, Network: true}, confine.Detect(), false)
		if err != nil {
			t.Fatal(err)
		}
		defer prep.Release()
		cfg.Confine = prep
	}
	c, err := pluginhost.Launch(ctx, cfg)
	if hits != 1 {
		t.Fatalf("the failpoint %s fired %d times, want once", failpoint.BeforeExec, hits)
	}
	if err != nil {
		t.Fatalf("Launch = %v, want the verified file to start", err)
	}
	defer c.Close()
	if got := finalText(t, c, "client-cert"); got != "ECDSA P-256" {
		t.Errorf("the plugin answered %q", got)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file renamed over the entry ran (stat: %v)", err)
	}
}
