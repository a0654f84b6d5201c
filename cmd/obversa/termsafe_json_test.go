package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTermWriterJSON: --json output is escaped with --raw too — DEL and
// the C1 controls as JSON \u escapes, a byte that is not UTF-8 as \ufffd
// — so it stays valid JSON with the same values; text output with --raw
// passes unchanged.
func TestTermWriterJSON(t *testing.T) {
	t.Parallel()
	raw, asJSON := true, true
	var out bytes.Buffer
	w := &termWriter{w: &out, raw: &raw, asJSON: &asJSON}
	in := "{\"text\":\"csi \u009b31m del \x7f bad \xff\"}\n"
	// Byte by byte, so the split-rune path is covered too.
	for i := range len(in) {
		if _, err := w.Write([]byte(in[i : i+1])); err != nil {
			t.Fatal(err)
		}
	}
	w.flush()
	if want := `{"text":"csi \u009b31m del \u007f bad \ufffd"}` + "\n"; out.String() != want {
		t.Errorf("--raw --json wrote %q, want %q", out.String(), want)
	}
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back["text"] != "csi \u009b31m del \x7f bad \ufffd" {
		t.Errorf("%s reads back as %q, %v", out.String(), back, err)
	}
	asJSON = false
	out.Reset()
	if _, err := w.Write([]byte(in)); err != nil || out.String() != in {
		t.Errorf("--raw text wrote %q, %v; want it unchanged", out.String(), err)
	}
}

// c1RunFile runs a command whose output holds a C1 control sequence
// (U+009B, CSI, as UTF-8), DEL and an ESC.
const c1RunFile = `
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
}
graph "dag" {
  node "c1" {
    binding = "shell"
    input   = { command = ["printf", "\\302\\23331mred \\177 \\033[2J end"] }
  }
}
`

// TestRawJSONIsEscaped: with --raw and --json together, every command's
// stdout holds no control character but line feeds — no C1 (a terminal
// may act on U+009B as on ESC [), no DEL — each line is valid JSON, and
// the record reads back with the exact text.
func TestRawJSONIsEscaped(t *testing.T) {
	t.Parallel()
	runFile := writeRunFile(t, c1RunFile)
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	if r := obversa(t, dir, "run", "--run-id", "c1", runFile); r.code != 0 {
		t.Fatalf("run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	const produced = "\u009b31mred \x7f \x1b[2J end"
	for _, args := range [][]string{
		{"events", "--json", "c1"},
		{"status", "--json", "c1"},
		{"show", "--json", "c1"},
		{"show", "--json", "c1", "c1"},
	} {
		for _, raw := range []bool{false, true} {
			if raw {
				args = append([]string{"--raw"}, args...)
			}
			r := obversa(t, dir, args...)
			if r.code != 0 {
				t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
			}
			if i := strings.IndexFunc(r.stdout, func(c rune) bool { return c != '\n' && escaped(c) }); i >= 0 {
				t.Errorf("%v: stdout holds control character %U at %d: %q", args, []rune(r.stdout[i:])[0], i, r.stdout)
			}
			if !utf8.ValidString(r.stdout) || !strings.Contains(r.stdout, `\u009b31mred \u007f \u001b[2J end`) {
				t.Errorf("%v: stdout does not hold the escaped output: %q", args, r.stdout)
			}
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				if !json.Valid([]byte(line)) {
					t.Errorf("%v: line is not JSON: %q", args, line)
				}
			}
		}
	}
	r := obversa(t, dir, "--raw", "show", "--json", "c1", "c1")
	var node struct {
		Stdout string `json:"stdout"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &node); err != nil || node.Stdout != produced {
		t.Errorf("--raw show --json reads back as %q, %v; want %q\n%s", node.Stdout, err, produced, r.stdout)
	}
	// Text output with --raw keeps the bytes as produced.
	if r := obversa(t, dir, "--raw", "show", "c1", "c1"); !strings.Contains(r.stdout, produced) {
		t.Errorf("--raw show changed the run's output: %q", r.stdout)
	}
}

// FuzzTermWriterJSON: whatever string a --json object carries, and
// wherever the output is split between writes, what --raw --json prints
// is valid JSON holding no control character but the final line feed,
// and it decodes to the string encoding/json would decode it to.
func FuzzTermWriterJSON(f *testing.F) {
	f.Add("plain", 0)
	f.Add("csi \u009b31m del \x7f esc \x1b[2J", 7)
	f.Add("bad \xff\xfe utf-8 \xe2\x9c", 3)
	f.Add("✓ 日本 \u2028 \u0085", 5)
	f.Fuzz(func(t *testing.T, s string, split int) {
		js, err := json.Marshal(map[string]string{"text": s})
		if err != nil {
			t.Skip()
		}
		var want map[string]string
		if err := json.Unmarshal(js, &want); err != nil {
			t.Fatal(err)
		}
		raw, asJSON := true, true
		var out bytes.Buffer
		w := &termWriter{w: &out, raw: &raw, asJSON: &asJSON}
		line := append(js, '\n')
		if split < 0 {
			split = -split
		}
		split %= len(line) + 1
		for _, part := range [][]byte{line[:split], line[split:]} {
			if _, err := w.Write(part); err != nil {
				t.Fatal(err)
			}
		}
		w.flush()
		got := strings.TrimSuffix(out.String(), "\n")
		if i := strings.IndexFunc(got, escaped); i >= 0 || strings.Contains(got, "\n") {
			t.Fatalf("output holds a control character at %d: %q", i, got)
		}
		var back map[string]string
		if err := json.Unmarshal([]byte(got), &back); err != nil || back["text"] != want["text"] {
			t.Fatalf("output %q reads back as %q, %v; want %q", got, back, err, want["text"])
		}
	})
}
