package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/obversa/obversa/plugin"
)

func TestLogsAndReadiness(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects.log")
	calls := filepath.Join(dir, "calls.log")
	ready := filepath.Join(dir, "ready")
	cfg, _ := json.Marshal(Config{EffectsFile: effects, CallsLog: calls, ReadyFile: ready})
	e := configured(t, string(cfg))
	ctx := context.Background()
	preflight := plugin.RunRequest{Purpose: plugin.PurposePreflight, Prompt: "ping", Target: target}

	if _, err := e.Admit(ctx, plugin.AdmitRequest{Target: target}); err != nil {
		t.Fatal(err)
	}
	_, err := e.Run(ctx, preflight, nil)
	var f *plugin.Failure
	if !errors.As(err, &f) || f.Kind != plugin.FailureTransient || f.Message != "not ready" {
		t.Fatalf("preflight without ready file = %v, want transient not ready", err)
	}
	if err := os.WriteFile(ready, []byte("not yet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(ctx, preflight, nil); err == nil {
		t.Fatal("preflight with content \"not yet\" succeeded")
	}
	if err := os.WriteFile(ready, []byte(" ready\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(ctx, preflight, nil); err != nil {
		t.Fatalf("preflight when ready: %v", err)
	}
	if _, err := e.Run(ctx, plugin.RunRequest{NodeID: "draft", Position: "dag/draft/1", AttemptID: "sha256:aa", Target: target}, nil); err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	wantEffects := "- - - preflight\n- - - preflight\n- - - preflight\ndraft dag/draft/1 sha256:aa ordinary\n"
	if diff := cmp.Diff(wantEffects, read(effects)); diff != "" {
		t.Errorf("effects file (-want +got):\n%s", diff)
	}
	wantCalls := "static\nlive:not-ready\nlive:not-ready\nlive:ready\nordinary\n"
	if diff := cmp.Diff(wantCalls, read(calls)); diff != "" {
		t.Errorf("calls log (-want +got):\n%s", diff)
	}
}

func TestLogWriteFailure(t *testing.T) {
	t.Parallel()
	cfg, _ := json.Marshal(Config{EffectsFile: filepath.Join(t.TempDir(), "missing", "effects.log")})
	e := configured(t, string(cfg))
	_, _, err := run(t, e, plugin.RunRequest{Prompt: "p"})
	var f *plugin.Failure
	if !errors.As(err, &f) || f.Kind != plugin.FailureUnknown {
		t.Fatalf("Run = %v, want unknown failure", err)
	}
}
