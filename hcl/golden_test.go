package hcl

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	hclv2 "github.com/hashicorp/hcl/v2"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// wantLine reads the "# want: <summary>" first line of a bad test file.
func wantLine(t *testing.T, src []byte) string {
	t.Helper()
	first, _, _ := bytes.Cut(src, []byte("\n"))
	want, ok := bytes.CutPrefix(first, []byte("# want: "))
	if !ok {
		t.Fatal(`first line must be "# want: <expected diagnostic summary>"`)
	}
	return string(want)
}

// checkDiagnosticQuality asserts what every configuration error and
// warning must carry: a source range, a summary saying what is wrong and a
// detail saying how to fix it.
func checkDiagnosticQuality(t *testing.T, diags hclv2.Diagnostics) {
	t.Helper()
	for _, dg := range diags {
		if dg.Subject == nil || dg.Subject.Filename == "" || dg.Subject.Start.Line == 0 {
			t.Errorf("diagnostic %q has no source range", dg.Summary)
		}
		if dg.Summary == "" || dg.Detail == "" {
			t.Errorf("diagnostic %q lacks a summary or a detail: %q", dg.Summary, dg.Detail)
		}
	}
}

// compareGolden compares got with the golden file, or rewrites it under
// -update.
func compareGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", golden, diff)
	}
}

// checkFile runs the checks that follow a successful Decode, as `obversa
// validate` does: the plugin files, and the pins against the lock file
// beside the run file.
func checkFile(t *testing.T, rf *RunFile, path string) hclv2.Diagnostics {
	t.Helper()
	lf, diags := DecodeLockFile(LockFilePath(path))
	if diags.HasErrors() {
		t.Fatalf("lock file: %v", diags)
	}
	return append(CheckPluginFiles(rf), CheckPins(rf, lf, path)...)
}

// TestDecodeBad decodes each testdata/bad/*.hcl (one per validation rule),
// runs the checks on those that decode, checks the error its first line
// announces is reported, and compares the rendered diagnostics with the
// .golden file beside it.
func TestDecodeBad(t *testing.T) {
	t.Parallel()
	goldenDir(t, "testdata/bad", 60, hclv2.DiagError)
}

// TestDecodeWarn decodes each testdata/warn/*.hcl (one per warning rule):
// the file is valid, the warning its first line announces is reported,
// and the rendered diagnostics match the .golden file beside it.
func TestDecodeWarn(t *testing.T) {
	t.Parallel()
	goldenDir(t, "testdata/warn", 1, hclv2.DiagWarning)
}

// goldenDir runs the golden test of every run file in dir (at least min):
// decode, the checks when it decoded, the announced diagnostic of
// severity sev, the quality of every diagnostic, the golden output. A
// warning file must be valid.
func goldenDir(t *testing.T, dir string, min int, sev hclv2.DiagnosticSeverity) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < min {
		t.Fatalf("found %d files in %s, want one per rule", len(files), dir)
	}
	for _, path := range files {
		if filepath.Base(path) == LockFileName {
			continue // the lock file of the run files beside it
		}
		t.Run(strings.TrimSuffix(filepath.Base(path), ".hcl"), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := wantLine(t, src)
			rf, diags := Decode(src, path)
			if rf != nil {
				diags = append(diags, checkFile(t, rf, path)...)
			}
			switch {
			case sev == hclv2.DiagError && !diags.HasErrors():
				t.Fatalf("Decode and the checks passed; want an error %q", want)
			case sev == hclv2.DiagWarning && diags.HasErrors():
				t.Fatalf("Decode or the checks failed:\n%s", diagsString(t, diags, path, string(src)))
			}
			found := false
			for _, dg := range diags {
				if dg.Severity == sev && strings.Contains(dg.Summary, want) {
					found = true
				}
			}
			if !found {
				t.Errorf("no diagnostic of severity %v with summary %q in:\n%s", sev, want, diagsString(t, diags, path, string(src)))
			}
			checkDiagnosticQuality(t, diags)
			var out bytes.Buffer
			if err := WriteDiagnostics(&out, diags, map[string][]byte{path: src}, 100); err != nil {
				t.Fatal(err)
			}
			compareGolden(t, strings.TrimSuffix(path, ".hcl")+".golden", out.Bytes())
		})
	}
}
