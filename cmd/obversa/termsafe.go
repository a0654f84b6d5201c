package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/obversa/obversa/internal/bidi"
)

// What a command prints of text the run produced (engine text, command
// output, plugin messages, run-file source in diagnostics) is escaped,
// on a terminal and on a pipe or file alike: an escape sequence in it
// could otherwise write the clipboard (OSC 52), clear the screen or
// retitle the window, a bidirectional override reorder the rest of the
// line, and a pipe often ends at a terminal (less -R, tee, a CI log
// page). Line feeds and tabs pass; every other control character, the
// bidirectional controls, and each byte that is not UTF-8, is shown as an escape:
// \u001b, \x9b. The \u form is also a valid JSON string escape, so
// --json output stays JSON with the same values. --raw writes the bytes
// as the run produced them (docs/decisions.md, "What the run produced is
// escaped") — in text output only: --json output is escaped with --raw
// too, since encoding/json lets DEL and the C1 controls (U+0080-U+009F,
// CSI among them) through as they are, and a byte that is not UTF-8 is
// written as \ufffd there, as encoding/json writes it, so every line
// stays JSON (docs/decisions.md, "--json output is always escaped").

// termText is s as a terminal may be shown it.
func termText(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	escapeTo(&b, s, false)
	return b.String()
}

// needsEscape reports whether s holds anything termText changes.
func needsEscape(s string) bool {
	return !plainText(s) && (strings.ContainsFunc(s, escaped) || !utf8.ValidString(s))
}

// plainText reports whether s is printable ASCII, line feeds and tabs
// only, which termText leaves as it is: a byte loop, several times faster
// than decoding runes, for the text nearly all output is (`status` of a
// run of 33 400 nodes prints 3 MB). false says only that the rune check
// must look.
func plainText[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x7f || c < 0x20 && c != '\n' && c != '\t' {
			return false
		}
	}
	return true
}

// escaped reports whether the rune r is shown as an escape: the C0 and C1
// control characters and DEL, but for line feed and tab, and the
// bidirectional controls (bidi.IsControl: the embeddings and overrides
// U+202A-U+202E, the isolates U+2066-U+2069 and the marks U+200E, U+200F
// and U+061C; a terminal reorders what follows one, so run text holding
// U+202E could show "invoice\u202eexe.pdf" as "invoicefdp.exe" in a line
// of ours). The web UI and host/diagram's labels escape the same ones.
func escaped(r rune) bool {
	return r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f || bidi.IsControl(r)
}

// escapeTo writes s to b with what escaped and invalid UTF-8 escaped:
// a byte that is not UTF-8 as \xff, or as \ufffd when asJSON (JSON has
// no escape for a byte).
func escapeTo(b *strings.Builder, s string, asJSON bool) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1 && asJSON:
			b.WriteString(`\ufffd`)
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(b, `\x%02x`, s[i])
		case escaped(r):
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
}

// termWriter escapes what is written through it as termText does; a UTF-8
// sequence split across writes is held until it is whole. While *raw is
// true (--raw) it passes every write through unchanged, unless *asJSON is
// true too (the command prints --json): JSON is always escaped, with a
// byte that is not UTF-8 written as \ufffd.
type termWriter struct {
	w       io.Writer
	raw     *bool
	asJSON  *bool
	pending []byte
}

// passThrough reports whether writes go through unchanged: --raw text.
func (t *termWriter) passThrough() bool {
	return t.raw != nil && *t.raw && !t.json()
}

// json reports whether what is written is --json output.
func (t *termWriter) json() bool {
	return t.asJSON != nil && *t.asJSON
}

// Write writes p escaped; it reports len(p) once the escaped form is
// written, or the underlying writer's error.
func (t *termWriter) Write(p []byte) (int, error) {
	if t.passThrough() && len(t.pending) == 0 {
		return t.w.Write(p)
	}
	buf := p
	if len(t.pending) > 0 {
		buf = append(t.pending, p...)
		t.pending = nil
	}
	// Hold back an incomplete UTF-8 sequence at the end.
	cut := len(buf)
	for k := 1; k <= utf8.UTFMax-1 && k <= len(buf); k++ {
		c := buf[len(buf)-k]
		if c < 0x80 {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(buf[len(buf)-k:]) {
				cut = len(buf) - k
			}
			break
		}
	}
	if cut < len(buf) {
		t.pending = append([]byte(nil), buf[cut:]...)
	}
	var err error
	if !plainText(buf[:cut]) && (bytes.ContainsFunc(buf[:cut], escaped) || !utf8.Valid(buf[:cut])) {
		var b strings.Builder
		escapeTo(&b, string(buf[:cut]), t.json())
		_, err = io.WriteString(t.w, b.String())
	} else {
		_, err = t.w.Write(buf[:cut])
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// flush writes what Write held back, an incomplete UTF-8 sequence at the
// end of the output, escaped (as raw bytes with --raw).
func (t *termWriter) flush() {
	p := t.pending
	t.pending = nil
	if len(p) == 0 {
		return
	}
	if t.passThrough() {
		_, _ = t.w.Write(p)
		return
	}
	var b strings.Builder
	escapeTo(&b, string(p), t.json())
	_, _ = io.WriteString(t.w, b.String())
}

// escaping returns f behind a termWriter, which escapes unless *raw and
// not *asJSON (asJSON may be nil: never JSON).
func escaping(f *os.File, raw, asJSON *bool) *termWriter {
	return &termWriter{w: f, raw: raw, asJSON: asJSON}
}
