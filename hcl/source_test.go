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

// TestNestingBounded: nesting past MaxNesting, in any of its forms, is one
// "Nesting too deep" diagnostic at the token where it passes the bound
// (the parser would overflow its stack at 100 000 brackets); nesting at
// the bound is left to the parser.
func TestNestingBounded(t *testing.T) {
	t.Parallel()
	deep := 20_000
	tests := []struct {
		name, src string
		tooDeep   bool
	}{
		{"brackets", "a = " + strings.Repeat("[", deep) + strings.Repeat("]", deep) + "\n", true},
		{"braces", "a = " + strings.Repeat("{x=", deep) + "1" + strings.Repeat("}", deep) + "\n", true},
		{"parentheses", "a = " + strings.Repeat("(", deep) + "1" + strings.Repeat(")", deep) + "\n", true},
		{"blocks", strings.Repeat("b {\n", deep) + strings.Repeat("}\n", deep), true},
		{"template sequences", `a = "` + strings.Repeat(`${"`, deep) + strings.Repeat(`"}`, deep) + "\"\n", true},
		{"negations", "a = " + strings.Repeat("!", deep) + "true\n", true},
		{"minus signs", "a = " + strings.Repeat("-", deep) + "1\n", true},
		{"brackets at the bound", "a = " + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting) + "\n", false},
		{"negations at the bound", "a = " + strings.Repeat("!", MaxNesting) + "true\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, decode := range []func([]byte, string) hclv2.Diagnostics{
				func(b []byte, f string) hclv2.Diagnostics { _, d := Decode(b, f); return d },
				func(b []byte, f string) hclv2.Diagnostics { _, d := DecodeLock(b, f); return d },
			} {
				diags := decode([]byte(tt.src), "run.hcl")
				got := hasSummary(diags, "Nesting too deep")
				if got != tt.tooDeep {
					t.Fatalf("nesting diagnosed = %v, want %v: %v", got, tt.tooDeep, diags)
				}
				if got && (len(diags) != 1 || diags[0].Subject == nil || diags[0].Subject.Filename != "run.hcl") {
					t.Fatalf("want one diagnostic with a subject in run.hcl, got %v", diags)
				}
			}
		})
	}
}

// TestRunFileRead: DecodeFile and DecodeLockFile read only a regular file
// of at most MaxRunFileBytes, and say so at once for a named pipe, a
// device, a directory or a file past the bound; a prompt_file's template
// nesting is bounded too.
func TestRunFileRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	big := filepath.Join(dir, "big.hcl")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxRunFileBytes+1); err != nil {
		t.Fatal(err)
	}
	deepPrompt := filepath.Join(dir, "deep.md")
	if err := os.WriteFile(deepPrompt, []byte(strings.Repeat("${(", 5000)+"1"+strings.Repeat(")}", 5000)), 0o644); err != nil {
		t.Fatal(err)
	}
	promptRun := filepath.Join(dir, "prompt.hcl")
	if err := os.WriteFile(promptRun, []byte(`graph "dag" {
  node "a" {
    lane        = "writer"
    prompt_file = "deep.md"
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "big.md"), MaxPromptFileBytes+1); err != nil {
		t.Fatal(err)
	}
	bigPromptRun := filepath.Join(dir, "bigprompt.hcl")
	if err := os.WriteFile(bigPromptRun, []byte(`graph "dag" {
  node "a" {
    lane        = "writer"
    prompt_file = "big.md"
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	runFile := func(p string) hclv2.Diagnostics { _, d := DecodeFile(p); return d }
	lockFile := func(p string) hclv2.Diagnostics { _, d := DecodeLockFile(p); return d }
	tests := []struct {
		name, path, summary, mentions string
		decode                        func(string) hclv2.Diagnostics
	}{
		{"run file is a named pipe", fifo, "Cannot read run file", "a named pipe", runFile},
		{"run file is a device", "/dev/zero", "Cannot read run file", "a character device", runFile},
		{"run file is a directory", dir, "Cannot read run file", "a directory", runFile},
		{"run file is too large", big, "Run file is too large", "is 16777217 bytes (16.0 MiB); a run file is at most 16777216 bytes (16 MiB)", runFile},
		{"lock file is a named pipe", fifo, "Cannot read lock file", "a named pipe", lockFile},
		{"lock file is a device", "/dev/zero", "Cannot read lock file", "a character device", lockFile},
		{"lock file is a directory", dir, "Cannot read lock file", "a directory", lockFile},
		{"lock file is too large", big, "Lock file is too large", "is 16777217 bytes (16.0 MiB); a lock file is at most 16777216 bytes (16 MiB)", lockFile},
		{"prompt_file is too large", bigPromptRun, "Prompt file is too large", "big.md is 1048577 bytes (1.0 MiB); a prompt file is at most 1048576 bytes (1 MiB)", runFile},
		{"prompt_file nests too deep", promptRun, "Nesting too deep", "Flatten the expression", runFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			done := make(chan hclv2.Diagnostics, 1)
			go func() { done <- tt.decode(tt.path) }()
			select {
			case diags := <-done:
				if !hasSummary(diags, tt.summary) {
					t.Fatalf("want %q, got %v", tt.summary, diags)
				}
				if !strings.Contains(diags.Error(), tt.mentions) {
					t.Fatalf("want the message to mention %q, got %v", tt.mentions, diags)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("reading did not return: it blocked or read without end")
			}
		})
	}
}

// hasSummary reports whether diags has an error with the summary.
func hasSummary(diags hclv2.Diagnostics, summary string) bool {
	for _, d := range diags {
		if d.Severity == hclv2.DiagError && d.Summary == summary {
			return true
		}
	}
	return false
}

// TestCROnlyLineEndings: a run file or lock file whose lines end in a
// carriage return alone gets one diagnostic naming the file and the first
// such CR, whether HCL would have read it as a comment line or as invalid
// characters (HCL reads a CR alone nowhere, heredocs included); CRLF files
// are left alone.
func TestCROnlyLineEndings(t *testing.T) {
	t.Parallel()
	lf := "# a comment\ngraph \"dag\" {\n  node \"a\" {\n    lane = \"writer\"\n  }\n}\n"
	tests := []struct {
		name, src string
		line, col int // of the first bare CR; 0: no diagnostic
	}{
		{"starts with a comment", strings.ReplaceAll(lf, "\n", "\r"), 1, 12},
		{"starts with code", strings.ReplaceAll(lf[12:], "\n", "\r"), 1, 14},
		{"one line of many", strings.Replace(lf, "{\n  node", "{\r  node", 1), 2, 14},
		{"inside a quoted string", "a = \"x\ry\"\n", 1, 7},
		{"CRLF", strings.ReplaceAll(lf, "\n", "\r\n"), 0, 0},
		{"inside a heredoc", "a = <<EOT\nx\ry\nEOT\n", 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, decode := range []func([]byte, string) hclv2.Diagnostics{
				func(b []byte, f string) hclv2.Diagnostics { _, d := Decode(b, f); return d },
				func(b []byte, f string) hclv2.Diagnostics { _, d := DecodeLock(b, f); return d },
			} {
				diags := decode([]byte(tt.src), "mac.hcl")
				got := hasSummary(diags, "CR-only line endings in mac.hcl")
				if got != (tt.line > 0) {
					t.Fatalf("CR-only diagnosed = %v, want %v: %v", got, tt.line > 0, diags)
				}
				if !got {
					continue
				}
				d := diags[0]
				if len(diags) != 1 || d.Subject == nil || d.Subject.Filename != "mac.hcl" ||
					d.Subject.Start.Line != tt.line || d.Subject.Start.Column != tt.col || tt.src[d.Subject.Start.Byte] != '\r' {
					t.Fatalf("want one diagnostic at mac.hcl:%d,%d on the CR, got %d: %#v", tt.line, tt.col, len(diags), d.Subject)
				}
				if !strings.Contains(d.Detail, "LF") {
					t.Fatalf("the detail does not say how to fix it: %s", d.Detail)
				}
			}
		})
	}
}
