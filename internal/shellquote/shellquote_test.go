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

// TestControlCharactersReadBackInBash: a word holding ESC or DEL (a
// directory so named) is written $'...', which a terminal shows as it is
// and bash reads back as the word.
func TestControlCharactersReadBackInBash(t *testing.T) {
	path, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	words := []string{"runs/\x1b[31mred", "a'b\\c\x7f", "\x01x y\x1b"}
	for _, w := range words {
		q := Quote(w)
		if strings.ContainsAny(q, "\x1b\x7f\x01") {
			t.Errorf("Quote(%q) = %q holds the control character", w, q)
		}
		out, err := exec.Command(path, "-c", "printf '%s' "+q).Output()
		if err != nil || string(out) != w {
			t.Errorf("bash read %q back as %q (quoted %s): %v", w, out, q, err)
		}
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

// unquote reads a word made of '…' runs and \' escapes, as sh does, or
// one $'…' word with \xHH, \\ and \' escapes, as bash does.
func unquote(q string) (string, bool) {
	var b strings.Builder
	if body, ok := strings.CutPrefix(q, "$'"); ok {
		for body != "'" {
			switch {
			case strings.HasPrefix(body, `\x`) && len(body) >= 4:
				n, err := strconv.ParseUint(body[2:4], 16, 8)
				if err != nil {
					return "", false
				}
				b.WriteByte(byte(n))
				body = body[4:]
			case strings.HasPrefix(body, `\\`) || strings.HasPrefix(body, `\'`):
				b.WriteByte(body[1])
				body = body[2:]
			case body == "" || body[0] == '\\' || body[0] == '\'':
				return "", false
			default:
				b.WriteByte(body[0])
				body = body[1:]
			}
		}
		return b.String(), true
	}
	for q != "" {
		switch {
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
