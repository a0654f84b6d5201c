package hcl

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	hclv2 "github.com/hashicorp/hcl/v2"
)

// WriteDiagnostics writes diagnostics for a person to read, each once: a
// first line "file:line:col: severity: summary" (or "severity: summary"
// for a diagnostic without a source range), then the source snippet and
// the detail, wrapped at width columns (0 disables wrapping), without
// colour.
//
// The snippet text comes from sources (file name → content, as named in
// the diagnostics' ranges) when it holds the file, and otherwise from
// reading the named file again; a file that cannot be read is shown
// without a snippet. The error is the writer's.
func WriteDiagnostics(w io.Writer, diags hclv2.Diagnostics, sources map[string][]byte, width uint) error {
	files := map[string]*hclv2.File{}
	cuts := map[string][]lineCut{}
	for _, dg := range diags {
		for _, r := range []*hclv2.Range{dg.Subject, dg.Context} {
			if r == nil || r.Filename == "" {
				continue
			}
			if _, done := files[r.Filename]; done {
				continue
			}
			src, ok := sources[r.Filename]
			if !ok {
				b, err := os.ReadFile(r.Filename)
				if err != nil {
					continue
				}
				src = b
			}
			shown, cut := cutLongLines(src)
			files[r.Filename], cuts[r.Filename] = &hclv2.File{Bytes: shown}, cut
		}
	}
	var buf bytes.Buffer
	tw := hclv2.NewDiagnosticTextWriter(&buf, files, width, false)
	for _, dg := range diags {
		buf.Reset()
		if err := tw.WriteDiagnostic(shownAt(dg, cuts)); err != nil {
			return err
		}
		// HCL's writer starts with "Error: summary"; a file:line:col line,
		// as compilers print it, takes its place so editors and people can
		// jump to the place and the summary is printed once.
		body := buf.Bytes()
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			body = body[i:]
		}
		if _, err := fmt.Fprintf(w, "%s%s", diagnosticHead(dg), body); err != nil {
			return err
		}
	}
	return nil
}

// diagnosticHead is the first line of a written diagnostic, without its
// newline: "file:line:col: error: summary", or "error: summary" when the
// diagnostic has no source range.
func diagnosticHead(dg *hclv2.Diagnostic) string {
	sev := "error"
	if dg.Severity == hclv2.DiagWarning {
		sev = "warning"
	}
	if r := dg.Subject; r != nil && r.Filename != "" {
		return fmt.Sprintf("%s:%d:%d: %s: %s", r.Filename, r.Start.Line, r.Start.Column, sev, dg.Summary)
	}
	return fmt.Sprintf("%s: %s", sev, dg.Summary)
}

// JSONDiagnostic is the machine-readable form of a diagnostic, the shape
// Terraform's `validate -json` uses: severity "error" or "warning", the
// summary and detail, and the source range when there is one.
type JSONDiagnostic struct {
	Severity string     `json:"severity"`
	Summary  string     `json:"summary"`
	Detail   string     `json:"detail,omitempty"`
	Range    *JSONRange `json:"range,omitempty"`
	// Omitted is, on the diagnostic that stands for those left out of a
	// capped list (a plugin's), how many were left out.
	Omitted int `json:"omitted,omitempty"`
}

// Omitted is a diagnostic's Extra when it stands for that many diagnostics
// left out of a capped list; DiagnosticsJSON shows it as "omitted".
type Omitted int

// JSONRange is a source range: the file as named to the decoder and the
// start and end positions (end exclusive).
type JSONRange struct {
	Filename string  `json:"filename"`
	Start    JSONPos `json:"start"`
	End      JSONPos `json:"end"`
}

// JSONPos is a position in a file: 1-based line and column (columns count
// characters), and the 0-based byte offset.
type JSONPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// DiagnosticsJSON converts diagnostics to their JSON form, in order. It
// never returns nil, so an empty list encodes as [].
func DiagnosticsJSON(diags hclv2.Diagnostics) []JSONDiagnostic {
	out := make([]JSONDiagnostic, 0, len(diags))
	for _, dg := range diags {
		j := JSONDiagnostic{Severity: "error", Summary: dg.Summary, Detail: dg.Detail}
		if n, ok := dg.Extra.(Omitted); ok {
			j.Omitted = int(n)
		}
		if dg.Severity == hclv2.DiagWarning {
			j.Severity = "warning"
		}
		if r := dg.Subject; r != nil && r.Filename != "" {
			j.Range = &JSONRange{Filename: r.Filename,
				Start: JSONPos{Line: r.Start.Line, Column: r.Start.Column, Byte: r.Start.Byte},
				End:   JSONPos{Line: r.End.Line, Column: r.End.Column, Byte: r.End.Byte}}
		}
		out = append(out, j)
	}
	return out
}

// maxShownLineBytes is how much of a source line a written diagnostic
// shows.
const maxShownLineBytes = 512

// lineCut is one line cutLongLines shortened: bytes [at, end) of the
// source became "…".
type lineCut struct{ at, end int }

// cutLongLines returns src with every line longer than maxShownLineBytes
// cut at a rune boundary and marked "…", line numbers unchanged, so that a
// diagnostic on a huge line (a minified or binary file) does not quote
// all of it, and the cuts made (none when no line is that long, and src
// is returned as it is).
func cutLongLines(src []byte) ([]byte, []lineCut) {
	long := false
	for rest := src; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			i = len(rest)
		}
		if i > maxShownLineBytes {
			long = true
			break
		}
		rest = rest[min(i+1, len(rest)):]
	}
	if !long {
		return src, nil
	}
	var out []byte
	var cuts []lineCut
	for off, rest := 0, src; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		line := rest
		if i >= 0 {
			line = rest[:i]
		}
		if len(line) > maxShownLineBytes {
			n := maxShownLineBytes
			for n > 0 && !utf8.RuneStart(line[n]) {
				n--
			}
			cuts = append(cuts, lineCut{at: off + n, end: off + len(line)})
			line = append(line[:n:n], cutMark...)
		}
		out = append(out, line...)
		if i < 0 {
			break
		}
		out = append(out, '\n')
		rest, off = rest[i+1:], off+i+1
	}
	return out, cuts
}

// cutMark marks where cutLongLines cut a line.
const cutMark = "…"

// shownAt returns dg with its ranges' byte offsets moved to the text
// cutLongLines made of their file (HCL's writer finds a snippet's lines
// by byte offset; lines and columns stay those of the file): past a cut
// line by what the cut removed, and a place in the cut part of a line to
// the cut mark. dg itself when no file it names was cut.
func shownAt(dg *hclv2.Diagnostic, cuts map[string][]lineCut) *hclv2.Diagnostic {
	moved := func(r *hclv2.Range) *hclv2.Range {
		if r == nil || len(cuts[r.Filename]) == 0 {
			return r
		}
		m := *r
		m.Start.Byte = shownByte(r.Start.Byte, cuts[r.Filename], false)
		m.End.Byte = shownByte(r.End.Byte, cuts[r.Filename], true)
		return &m
	}
	subject, context := moved(dg.Subject), moved(dg.Context)
	if subject == dg.Subject && context == dg.Context {
		return dg
	}
	c := *dg
	c.Subject, c.Context = subject, context
	return &c
}

// shownByte is byte offset off of a source in the text cuts made of it;
// an offset in a cut part is the cut mark's start, or its end when end.
func shownByte(off int, cuts []lineCut, end bool) int {
	shift := 0
	for _, c := range cuts {
		switch {
		case off >= c.end:
			shift += c.end - c.at - len(cutMark)
		case off > c.at:
			if end {
				return c.at - shift + len(cutMark)
			}
			return c.at - shift
		default:
			return off - shift
		}
	}
	return off - shift
}
