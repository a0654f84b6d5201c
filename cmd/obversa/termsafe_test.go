package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
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
		{"invoice\u202eexe.pdf", `invoice\u202eexe.pdf`},
		{"\u2066a\u2069 \u200f\u061c", `\u2066a\u2069 \u200f\u061c`},
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

// escapeRunFile runs one command, and one engine call, whose output
// writes the clipboard (OSC 52), clears the screen and retitles the
// window.
const escapeRunFile = `
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
}
plugin "mock" {
  type   = "engine"
  path   = "BIN/mock-engine"
  config = { default = { text = "said \u001b]52;c;cHduZWQ=\u0007\u001b[2Jloud" } }
}
lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  node "effect" {
    binding = "shell"
    input   = { command = ["printf", "\\033]52;c;cHduZWQ=\\007\\033[2J\\033]0;PWNED\\007visible"] }
  }
  node "talk" {
    lane   = "w"
    prompt = "p"
  }
}
`

// TestRunOutputIsEscaped: a command's and an engine's escape sequences
// reach a real terminal as text from show, never as sequences, and reach
// a pipe as text too from every command that prints them — show, logs,
// events, status --json — unless --raw asks for the bytes as written;
// JSON printed escaped reads back as the same values.
func TestRunOutputIsEscaped(t *testing.T) {
	t.Parallel()
	runFile := writeRunFile(t, escapeRunFile)
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	if r := obversa(t, dir, "run", "--run-id", "esc", runFile); r.code != 0 {
		t.Fatalf("run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	tests := []struct {
		args []string
		want string // the escaped text the output must hold
	}{
		{[]string{"show", "esc", "effect"}, `\u001b]52;c;cHduZWQ=`},
		{[]string{"show", "esc", "talk"}, `said \u001b]52;c;`},
		{[]string{"show", "esc"}, `\u001b]52;c;`},
		{[]string{"logs", "esc"}, `said \u001b]52;c;`},
		{[]string{"logs", "--json", "esc"}, `said \u001b]52;`},
		{[]string{"events", "esc"}, `\u001b]52;c;`},
		{[]string{"events", "--json", "esc"}, `\u001b]52;c;`},
		{[]string{"status", "--json", "esc"}, `\u001b]52;c;`},
	}
	for _, tt := range tests {
		r := obversa(t, dir, tt.args...)
		if r.code != 0 || strings.ContainsAny(r.stdout+r.stderr, "\x1b\x07") || !strings.Contains(r.stdout, tt.want) {
			t.Errorf("%v to a pipe: exit %d, want %q and no control character:\n%q%q", tt.args, r.code, tt.want, r.stdout, r.stderr)
		}
		if tt.args[1] == "--json" {
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				if !json.Valid([]byte(line)) {
					t.Errorf("%v: line is not JSON: %s", tt.args, line)
				}
			}
		}
		raw := obversa(t, dir, append([]string{"--raw"}, tt.args...)...)
		if raw.code != 0 || !strings.Contains(raw.stdout, "\x1b]52;") && !strings.Contains(raw.stdout, `\u001b]52;`) {
			t.Errorf("--raw %v: exit %d: %q%q", tt.args, raw.code, raw.stdout, raw.stderr)
		}
	}
	for _, args := range [][]string{{"show", "esc", "effect"}, {"show", "esc", "talk"}, {"logs", "esc"}} {
		if r := obversa(t, dir, append([]string{"--raw"}, args...)...); !strings.Contains(r.stdout, "\x1b]52;c;cHduZWQ=\x07") {
			t.Errorf("--raw %v changed the run's output: %q", args, r.stdout)
		}
	}
	var ev struct {
		Data struct {
			Result struct {
				Stdout string `json:"stdout"`
			} `json:"result"`
		} `json:"data"`
	}
	for _, line := range strings.Split(obversa(t, dir, "events", "--json", "esc").stdout, "\n") {
		if strings.Contains(line, `"graph:node-completed"`) && strings.Contains(line, "PWNED") {
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if want := "\x1b]52;c;cHduZWQ=\x07\x1b[2J\x1b]0;PWNED\x07visible"; ev.Data.Result.Stdout != want {
		t.Errorf("events --json to a pipe reads back as %q, want %q", ev.Data.Result.Stdout, want)
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

// TestPlainTextAgreesWithRuneCheck: the byte loop passes exactly the
// bytes the rune check leaves alone as ASCII (printable, line feed, tab),
// and passes nothing the rune check would escape, byte by byte and in
// every two-byte sequence (which covers the starts of multi-byte runes).
func TestPlainTextAgreesWithRuneCheck(t *testing.T) {
	t.Parallel()
	runeCheck := func(b []byte) bool { return !bytes.ContainsFunc(b, escaped) && utf8.Valid(b) }
	for c := range 256 {
		b := []byte{byte(c)}
		want := c < 0x80 && runeCheck(b)
		if got := plainText(b); got != want {
			t.Errorf("plainText(%q) = %v, want %v", b, got, want)
		}
		if got := plainText(string(b)); got != want {
			t.Errorf("plainText(string %q) = %v, want %v", b, got, want)
		}
		for d := range 256 {
			if b := []byte{byte(c), byte(d)}; plainText(b) && !runeCheck(b) {
				t.Errorf("plainText(%q) passes what the rune check escapes", b)
			}
		}
	}
}
