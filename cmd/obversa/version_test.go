package main

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVersionOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		bi    *debug.BuildInfo
		want  versionInfo
		human string
	}{
		{name: "release from a clean checkout",
			bi: &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
				{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "f57a4f82af31145fc3eaafbe166539b0f20367ad"},
				{Key: "vcs.time", Value: "2026-12-01T00:07:56Z"}, {Key: "vcs.modified", Value: "false"}}},
			want:  versionInfo{Version: "v0.3.0", Commit: "f57a4f82af31145fc3eaafbe166539b0f20367ad", CommitTime: "2026-12-01T00:07:56Z", Go: "go1.26.0", Protocol: 1},
			human: "obversa v0.3.0\ncommit:   f57a4f82af31145fc3eaafbe166539b0f20367ad (2026-12-01T00:07:56Z)\ngo:       go1.26.0\nprotocol: 1\n"},
		{name: "uncommitted changes",
			bi: &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			want:  versionInfo{Version: "(devel)", Commit: "abc", Modified: true, Go: "go1.26.0", Protocol: 1},
			human: "obversa (devel)\ncommit:   abc, with uncommitted changes\ngo:       go1.26.0\nprotocol: 1\n"},
		{name: "no version control information",
			bi:    &debug.BuildInfo{GoVersion: "go1.26.0"},
			want:  versionInfo{Version: "(devel)", Go: "go1.26.0", Protocol: 1},
			human: "obversa (devel)\ncommit:   unknown (built without version control information)\ngo:       go1.26.0\nprotocol: 1\n"},
		{name: "no build information", want: versionInfo{Version: "(devel)", Protocol: 1},
			human: "obversa (devel)\ncommit:   unknown (built without version control information)\ngo:       \nprotocol: 1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := versionOf(tt.bi, tt.bi != nil)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.human, got.String()); diff != "" {
				t.Errorf("human form (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVersionCommand: `obversa --version` prints what `obversa version`
// prints, and --json names the toolchain and the protocol.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := obversa(t, dir, "version"), obversa(t, dir, "--version")
	if a.code != 0 || b.code != 0 || a.stdout != b.stdout {
		t.Fatalf("version: exit %d %q; --version: exit %d %q", a.code, a.stdout, b.code, b.stdout)
	}
	v := oneObject(t, obversa(t, dir, "version", "--json"))
	if v["go"] != runtime.Version() || v["protocol"] != float64(1) {
		t.Errorf("version --json: %v", v)
	}
}
