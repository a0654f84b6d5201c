package hcl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHomePaths decodes "~", "~/…" and "~user" in every path setting of a
// run file, with HOME set to a real directory: the first two are the home
// directory, the last is refused naming the file, the setting and the fix.
func TestHomePaths(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "p.md"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	workspace := func(p string) string { return "workspace {\n  root = \"" + p + "\"\n}\n" + prelude + minimalGraph }
	storage := func(p string) string { return "storage {\n  directory = \"" + p + "\"\n}\n" + prelude + minimalGraph }
	plugin := func(p string) string {
		return strings.Replace(prelude, `"bin/mock-engine"`, `"`+p+`"`, 1) + minimalGraph
	}
	confine := func(p string) string {
		return strings.Replace(prelude, `path = "bin/mock-engine"`, `path = "bin/mock-engine"`+"\n  confine { write = [\""+p+"\"] }", 1) + minimalGraph
	}
	prompt := func(p string) string {
		return prelude + strings.Replace(minimalGraph, `prompt = "a"`, `prompt_file = "`+p+`"`, 1)
	}
	root := func(rf *RunFile) string { return rf.Workspace.Root }
	dir := func(rf *RunFile) string { return rf.Storage.Directory }
	path := func(rf *RunFile) string { return rf.Plugins[0].Path + " written " + rf.Plugins[0].WrittenPath }
	write := func(rf *RunFile) string { return strings.Join(rf.Plugins[0].Confine.Write, ",") }
	promptFile := func(rf *RunFile) string { return rf.Graph.Nodes[0].PromptFile + " " + rf.Graph.Nodes[0].Prompt }
	tests := []struct {
		name  string
		src   string
		get   func(*RunFile) string
		want  string // a leading "~" stands for the home directory; "": refused
		field string // set: the path is refused, naming this setting
	}{
		{name: "workspace root ~", src: workspace("~"), get: root, want: "~"},
		{name: "workspace root ~/x", src: workspace("~/x"), get: root, want: "~/x"},
		{name: "workspace root ~/x/", src: workspace("~/x/"), get: root, want: "~/x"},
		{name: "workspace root ~user", src: workspace("~bob/x"), field: "workspace.root"},
		{name: "storage ~", src: storage("~"), get: dir, want: "~"},
		{name: "storage ~/runs", src: storage("~/runs"), get: dir, want: "~/runs"},
		{name: "storage ~user", src: storage("~bob"), field: "storage.directory"},
		{name: "plugin path ~/bin", src: plugin("~/bin/eng"), get: path, want: "~/bin/eng written ~/bin/eng"},
		{name: "plugin path ~user", src: plugin("~bob/bin/eng"), field: `plugin "mock"'s path`},
		{name: "confine write ~/cache", src: confine("~/cache"), get: write, want: "~/cache"},
		{name: "confine write ~user", src: confine("~bob/cache"), field: "confine.write"},
		{name: "prompt_file ~/p.md", src: prompt("~/p.md"), get: promptFile, want: "~/p.md hello"},
		{name: "prompt_file ~user", src: prompt("~bob/p.md"), field: "prompt_file"},
		{name: "~ after the start is a name", src: storage("x/~"), get: dir, want: "/proj/x/~"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const file = "/proj/run.hcl"
			rf, diags := Decode([]byte(tt.src), file)
			if tt.want == "" {
				if len(diags) != 1 || !strings.HasPrefix(diags[0].Summary, "Unsupported path") {
					t.Fatalf("want one Unsupported path, got:\n%s", diagsString(t, diags, file, tt.src))
				}
				d := diags[0]
				for _, want := range []string{" in " + tt.field, tt.field + " in " + file, `~bob`, "in full"} {
					if !strings.Contains(d.Summary+" "+d.Detail, want) {
						t.Errorf("diagnostic does not say %q:\n%s", want, diagsString(t, diags, file, tt.src))
					}
				}
				return
			}
			if diags.HasErrors() {
				t.Fatalf("unexpected errors:\n%s", diagsString(t, diags, file, tt.src))
			}
			want := tt.want
			if strings.HasPrefix(want, "~") {
				want = home + want[1:]
			}
			if got := tt.get(rf); got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

// TestHomeUnknown refuses "~" when the home directory is unknown (HOME
// unset), naming the setting and the fix.
func TestHomeUnknown(t *testing.T) {
	t.Setenv("HOME", "")
	src := "storage {\n  directory = \"~/runs\"\n}\n" + prelude + minimalGraph
	_, diags := Decode([]byte(src), "/proj/run.hcl")
	if len(diags) != 1 || diags[0].Summary != `Cannot expand "~/runs" in storage.directory` ||
		!strings.Contains(diags[0].Detail, "storage.directory in /proj/run.hcl") || !strings.Contains(diags[0].Detail, "Set HOME") {
		t.Fatalf("got:\n%s", diagsString(t, diags, "/proj/run.hcl", src))
	}
}
