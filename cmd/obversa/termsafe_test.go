package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestTermText: control characters but line feed and tab, and bytes that
// are not UTF-8, are shown as escapes; everything else passes unchanged,
// and escaped JSON is still the same JSON.
func TestTermText(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain text\twith tab\nand line", "plain text\twith tab\nand line"},
		{"héllo ✓ 日本", "héllo ✓ 日本"},
		{"\x1b]52;c;cHduZWQ=\x07", `\u001b]52;c;cHduZWQ=\u0007`},
		{"\x1b[2J\x1b]0;PWNED\x07", `\u001b[2J\u001b]0;PWNED\u0007`},
		{"over\rwrite", `over\u000dwrite`},
		{"c1 \u009b31m del \x7f", `c1 \u009b31m del \u007f`},
		{"bad \xff\x9b byte", `bad \xff\x9b byte`},
	}
	for _, tt := range tests {
		if got := termText(tt.in); got != tt.want {
			t.Errorf("termText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	js, err := json.Marshal(map[string]string{"text": "a\u009bb\x1bc"})
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(termText(string(js))), &back); err != nil || back["text"] != "a\u009bb\x1bc" {
		t.Errorf("escaped JSON %s reads back as %q, %v", termText(string(js)), back, err)
	}
}

// TestTermWriterSplitRunes: a UTF-8 sequence split across writes is
// written whole, not escaped as two bad bytes.
func TestTermWriterSplitRunes(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := &termWriter{w: &out}
	in := []byte("✓\x1b\u009b日")
	for i := range in {
		if n, err := w.Write(in[i : i+1]); n != 1 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if want := `✓\u001b\u009b日`; out.String() != want {
		t.Errorf("wrote %q, want %q", out.String(), want)
	}
}

// escapeRunFile runs one command whose output writes the clipboard (OSC
// 52), clears the screen and retitles the window.
const escapeRunFile = `
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
}
graph "dag" {
  node "effect" {
    binding = "shell"
    input   = { command = ["printf", "\\033]52;c;cHduZWQ=\\007\\033[2J\\033]0;PWNED\\007visible"] }
  }
}
`

// TestRunOutputIsEscapedOnATerminal: a command's escape sequences reach a
// real terminal as text from show, never as sequences, while
// the same output printed to a pipe is kept as the command wrote it.
func TestRunOutputIsEscapedOnATerminal(t *testing.T) {
	t.Parallel()
	runFile := writeRunFile(t, escapeRunFile)
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	if r := obversa(t, dir, "run", "--run-id", "esc", runFile); r.code != 0 {
		t.Fatalf("run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if r := obversa(t, dir, "show", "esc", "effect"); !strings.Contains(r.stdout, "\x1b]52;c;") {
		t.Errorf("show to a pipe changed the command's output: %q", r.stdout)
	}
	for _, args := range [][]string{{"show", "esc", "effect"}, {"show", "esc"}} {
		term := onTerminal(t, dir, nil, args...)
		if code := term.wait(t); code != 0 {
			t.Fatalf("%v: exit %d:\n%s", args, code, term.screen())
		}
		s := term.screen()
		if !strings.Contains(s, `\u001b]52;c;cHduZWQ=`) || !strings.Contains(s, "PWNED") {
			t.Errorf("%v: the escape sequences are not shown as text:\n%s", args, s)
		}
	}
}
