package logfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const secret = "sk-live-0123456789abcdef"

// htmlSecret is written by encoding/json (as hclog does) as htmlSafe.
const htmlSecret, htmlSafe = "tok<en>&x", `tok\u003cen\u003e\u0026x`

// write writes chunks through a new Writer and returns what is on disk:
// the current file, and the rotated one if any.
func write(t testing.TB, o Options, chunks ...string) (cur, old string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.log")
	w, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if _, err := w.Write([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ob, _ := os.ReadFile(path + ".1")
	return string(b), string(ob)
}

func TestRedaction(t *testing.T) {
	t.Parallel()
	half := len(secret) / 2
	big := strings.Repeat("z", maxPending+100)
	tests := []struct {
		name   string
		chunks []string
		want   string
	}{
		{"whole line", []string{"token " + secret + " used\n"}, "token [REDACTED] used\n"},
		{"split across writes", []string{"token " + secret[:half], secret[half:] + " used\n"}, "token [REDACTED] used\n"},
		{"JSON-escaped in a log line", []string{`{"k":"` + htmlSafe + `"}` + "\n"}, "{\"k\":\"[REDACTED]\"}\n"},
		{"no newline at close", []string{"last " + secret}, "last [REDACTED]"},
		{"long unfinished line", []string{big + secret[:half], secret[half:] + "\n"}, big + "[REDACTED]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, _ := write(t, Options{Secrets: []string{secret, htmlSecret}}, tt.chunks...)
			if strings.Contains(got, secret) || got != tt.want {
				t.Errorf("file = %.200q, want %.200q", got, tt.want)
			}
		})
	}
}

func TestCapRotates(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("a", 99) + "\n" // 100 bytes
	var chunks []string
	for range 25 {
		chunks = append(chunks, line)
	}
	cur, old := write(t, Options{MaxBytes: 1000}, chunks...)
	if len(cur) != 500 || len(old) != 1000 {
		t.Errorf("current %d bytes, rotated %d bytes; want 500 and 1000", len(cur), len(old))
	}
	// A line longer than the cap is cut and marked.
	cur, _ = write(t, Options{MaxBytes: 1000}, strings.Repeat("b", 5000)+"\n")
	if len(cur) > 1000 || !strings.Contains(cur, "[cut: 4500 bytes more]") {
		t.Errorf("long line written as %d bytes: %.80q…", len(cur), cur[len(cur)-40:])
	}
}

// FuzzNoSecretReachesTheFile writes text holding a secret in two pieces
// cut anywhere: the file never holds the secret.
func FuzzNoSecretReachesTheFile(f *testing.F) {
	f.Add("before ", " after\n", 3)
	f.Add("", "", 0)
	f.Add(strings.Repeat("x", maxPending), "\n", 10)
	f.Fuzz(func(t *testing.T, pre, post string, cut int) {
		text := pre + secret + post
		cut = min(max(cut, 0), len(text))
		got, old := write(t, Options{Secrets: []string{secret}}, text[:cut], text[cut:])
		if strings.Contains(got+old, secret) {
			t.Fatalf("secret reached the file: %q", got)
		}
		if !bytes.Contains([]byte(got), []byte("[REDACTED]")) {
			t.Fatalf("no marker in %q", got)
		}
	})
}
