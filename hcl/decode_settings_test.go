package hcl

import (
	"path/filepath"
	"testing"
)

// TestStepsBack: a path that goes into a directory and back out with ".."
// is found, naming the directory; ".." at the start of a relative path is
// not stepping back.
func TestStepsBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path, named string
	}{
		{"/root/../etc", "root"},
		{"runs/../x", "runs"},
		{"../shared/runs/..", "runs"},
		{"./a/./../b", "a"},
		{"a/b/../../..", "b"},
		{"/root/..", "root"},
		{"..", ""},
		{"../../runs", ""},
		{"/../etc", ""},
		{".obversa", ""},
		{"/var/lib/obversa", ""},
		{"..x/y..", ""},
		{"", ""},
	} {
		named, back := StepsBack(tc.path)
		if named != tc.named || back != (tc.named != "") {
			t.Errorf("StepsBack(%q) = %q, %v; want %q, %v", tc.path, named, back, tc.named, tc.named != "")
		}
	}
	// A storage directory that steps back is refused; one that climbs
	// from the run file's directory first is kept, resolved against it.
	dir := t.TempDir()
	path := filepath.Join(dir, "proj", "run.hcl")
	rf, diags := Decode([]byte("storage {\n  directory = \"../runs\"\n}\n"+prelude+minimalGraph), path)
	if diags.HasErrors() || rf.Storage.Directory != filepath.Join(dir, "runs") {
		t.Errorf("directory = \"../runs\": %v, %q", diags, rf.Storage.Directory)
	}
	_, diags = Decode([]byte("storage {\n  directory = \"runs/../../etc\"\n}\n"+prelude+minimalGraph), path)
	if !diags.HasErrors() || diags[0].Summary != `Storage directory steps back out with ".."` {
		t.Errorf("directory = \"runs/../../etc\": %v", diags)
	}
}
