package shellquote

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// words are arguments a shell would split, expand or glob unquoted.
var words = []string{
	"", "plain", "/tmp/sp ace/it's $x/.obversa/default/runs/s2", "a'b''c'", `"dq" \back\`,
	"$(touch pwned)", "`id`", "dag/fan[a%20b]/1", "*", "~root", "=ls", "a\nb", "tab\there",
	"semi;colon&amp|pipe>out<in", "!bang", "{a,b}", "#hash", "ünïcødé ✓", "--flag=x y",
}

// TestShellReadsBackEachWord runs sh with the quoted words and checks that
// it sees each word exactly, as one argument.
func TestShellReadsBackEachWord(t *testing.T) {
	for _, shell := range []string{"sh", "bash"} {
		path, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("%s not installed", shell)
			continue
		}
		dir := t.TempDir()
		script := `for a in "$@"; do printf '%s\0' "$a"; done`
		cmd := exec.Command(path, "-c", "set -- "+Join(words...)+"\n"+script)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", shell, err)
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if len(got) != len(words) {
			t.Fatalf("%s saw %d words, want %d: %q", shell, len(got), len(words), got)
		}
		for i := range words {
			if got[i] != words[i] {
				t.Errorf("%s read %q back as %q (quoted %s)", shell, words[i], got[i], Quote(words[i]))
			}
		}
	}
}

// TestControlCharactersReadBackInEveryShell: a word holding ESC or DEL
// (a directory so named) is written without the byte itself, which a
// terminal would show as an escape, and sh (dash here), bash and zsh
// read it back as the word.
func TestControlCharactersReadBackInEveryShell(t *testing.T) {
	words := []string{"runs/\x1b[31mred", "a'b\\c\x7f", "\x01x y\x1b", "\x1b\x1b%s\x1f'", "%d\x7f\\n"}
	ran := 0
	for _, shell := range []string{"sh", "dash", "bash", "zsh"} {
		path, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("%s not installed", shell)
			continue
		}
		ran++
		for _, w := range words {
			q := Quote(w)
			if strings.ContainsAny(q, "\x1b\x7f\x01\x1f") {
				t.Errorf("Quote(%q) = %q holds the control character", w, q)
			}
			out, err := exec.Command(path, "-c", "printf '%s' "+q).Output()
			if err != nil || string(out) != w {
				t.Errorf("%s read %q back as %q (quoted %s): %v", shell, w, out, q, err)
			}
		}
	}
	if ran == 0 {
		t.Skip("no shell installed")
	}
}

func TestPlainWordsStayAsTheyAre(t *testing.T) {
	for _, s := range []string{"runs/s2", "dag/draft/1", "postgres://u@h:5432/db", "a-b_c.d", "x=1"} {
		if got := Quote(s); got != s {
			t.Errorf("Quote(%q) = %q, want it as it is", s, got)
		}
	}
	for _, s := range []string{"postgres://h/db?sslmode=disable", "=x", "a b"} {
		if got := Quote(s); got == s {
			t.Errorf("Quote(%q) left it unquoted", s)
		}
	}
}

// FuzzQuote checks that a quoted word is read back as one word by a
// POSIX shell's rules: single-quoted runs and \' between them.
func FuzzQuote(f *testing.F) {
	for _, w := range words {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := Quote(s)
		if q == s {
			if !plain(s) {
				t.Fatalf("%q left unquoted", s)
			}
			return
		}
		if got, ok := unquote(q); !ok || got != s {
			t.Fatalf("Quote(%q) = %q reads back as %q (ok %v)", s, q, got, ok)
		}
	})
}

// unquote reads a word made of '…' runs, \' escapes and "$(printf
// '\ooo…')" runs of octal escapes, as sh does.
func unquote(q string) (string, bool) {
	var b strings.Builder
	const open, shut = `"$(printf '`, `')"`
	for q != "" {
		switch {
		case strings.HasPrefix(q, open):
			body, rest, ok := strings.Cut(q[len(open):], shut)
			if !ok || body == "" {
				return "", false
			}
			for body != "" {
				if len(body) < 4 || body[0] != '\\' {
					return "", false
				}
				n, err := strconv.ParseUint(body[1:4], 8, 8)
				if err != nil {
					return "", false
				}
				b.WriteByte(byte(n))
				body = body[4:]
			}
			q = rest
		case strings.HasPrefix(q, `\'`):
			b.WriteByte('\'')
			q = q[2:]
		case q[0] == '\'':
			end := strings.IndexByte(q[1:], '\'')
			if end < 0 {
				return "", false
			}
			b.WriteString(q[1 : 1+end])
			q = q[2+end:]
		default:
			return "", false
		}
	}
	return b.String(), true
}
