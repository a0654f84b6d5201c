package hcl

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	hclv2 "github.com/hashicorp/hcl/v2"
)

// TestNoBlockingReads: a named pipe (with no writer) or a device as a
// plugin path or a prompt_file is diagnosed at once, never opened for a
// read that blocks.
func TestNoBlockingReads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o755); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	tests := []struct {
		name, plugin, promptFile, summary, mentions string
	}{
		{name: "plugin is a named pipe", plugin: fifo, summary: "Plugin path is not a regular file", mentions: "a named pipe"},
		{name: "plugin is a device", plugin: "/dev/zero", summary: "Plugin path is not a regular file", mentions: "a character device"},
		{name: "prompt_file is a named pipe", plugin: "/bin/sh", promptFile: fifo, summary: "Cannot read prompt file", mentions: "a named pipe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			prompt := `prompt = "a"`
			if tt.promptFile != "" {
				prompt = `prompt_file = "` + tt.promptFile + `"`
			}
			src := `plugin "mock" {
  type   = "engine"
  path   = "` + tt.plugin + `"
  sha256 = "` + strings.Repeat("0", 64) + `"
}
lane "writer" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  node "a" {
    lane = "writer"
    ` + prompt + `
  }
}
`
			done := make(chan hclv2.Diagnostics, 1)
			go func() {
				rf, diags := Decode([]byte(src), filepath.Join(dir, "run.hcl"))
				if rf != nil {
					diags = append(diags, CheckPluginFiles(rf)...)
				}
				done <- diags
			}()
			select {
			case diags := <-done:
				if len(diags) != 1 || diags[0].Summary != tt.summary || !strings.Contains(diags[0].Detail, tt.mentions) {
					t.Fatalf("want one %q mentioning %q, got:\n%s", tt.summary, tt.mentions, diagsString(t, diags, "", ""))
				}
			case <-time.After(10 * time.Second):
				t.Fatal("decoding or checking blocked on a named pipe or a device")
			}
		})
	}
}

// TestCheckPluginFilesAccepts: an executable regular file, reached
// directly or through a symlink, passes.
func TestCheckPluginFilesAccepts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "engine")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("engine", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	rf := &RunFile{Dir: dir, Plugins: []Plugin{{Name: "a", Path: bin}, {Name: "b", Path: filepath.Join(dir, "link")}}}
	if diags := CheckPluginFiles(rf); len(diags) > 0 {
		t.Fatalf("unexpected diagnostics: %v", diags)
	}
}
