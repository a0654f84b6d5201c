package hcl

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/obversa/obversa/internal/regfile"
)

// MaxRunFileBytes is the largest run file or lock file read, in bytes. A
// 33 400-node graph (the largest `make bench-scale` runs) takes about
// 3 MiB; the bound keeps a device such as /dev/zero, or a mistaken path
// to a large file, from being read without end (docs/decisions.md).
const MaxRunFileBytes = 16 << 20

// MaxNesting is how deep brackets, braces, parentheses, quotes, heredocs
// and template sequences may nest in a run file, a lock file or a
// prompt_file, and how many unary operators (! and -) may follow each
// other. The HCL parser recurses once per level, so unbounded nesting
// overflows its stack or takes seconds per kilobyte; real files stay
// under ten.
const MaxNesting = 100

// parseConfig parses run-file or lock-file source after checking its
// nesting (checkNesting), so hostile input gets a diagnostic, not a stack
// overflow. The check lexes the source a window at a time, and a large
// top-level block's body is parsed a piece at a time (parsePieces), so no
// token slice of the whole file is made (docs/decisions.md, "A large run
// file is lexed and parsed in pieces").
func parseConfig(src []byte, filename string) (*hclv2.File, hclv2.Diagnostics) {
	if diags := checkText(src, filename); diags.HasErrors() {
		return nil, diags
	}
	regions, diags := scanSource(src, filename, lexWindowBytes, pieceBodyBytes)
	if diags.HasErrors() {
		return nil, diags
	}
	if file, ok := parsePieces(src, filename, regions, pieceBytes); ok {
		return file, nil
	}
	file, diags := hclsyntax.ParseConfig(src, filename, hclv2.InitialPos)
	return file, capParseDiagnostics(diags, filename)
}

// checkText reports source that is not text, and so not HCL at all: a
// NUL byte or bytes that are not UTF-8 (a binary or an archive passed by
// mistake, a file in another encoding). Its one diagnostic names the file
// and the first such byte by offset, line and column, before anything
// the lexer would make of the bytes (such as a stray carriage return
// reported as CR-only line endings).
func checkText(src []byte, filename string) hclv2.Diagnostics {
	line, col := 1, 1
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		what := ""
		switch {
		case r == utf8.RuneError && n <= 1:
			what = fmt.Sprintf("byte 0x%02x, which is not UTF-8", src[i])
		case r == 0:
			what = "a NUL byte"
		}
		if what != "" {
			start := hclv2.Pos{Line: line, Column: col, Byte: i}
			rng := hclv2.Range{Filename: filename, Start: start, End: hclv2.Pos{Line: line, Column: col + 1, Byte: i + 1}}
			return hclv2.Diagnostics{{
				Severity: hclv2.DiagError,
				Summary:  fmt.Sprintf("%s is not a text file", filename),
				Detail: fmt.Sprintf("%s holds %s at byte offset %d (line %d, column %d): a run file is HCL text in UTF-8. Check that the path names the run file and not a binary or archive, or save it as UTF-8.",
					filename, what, i, line, col),
				Subject: &rng,
			}}
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += n
	}
	return nil
}

// checkLineEnds reports a carriage return not followed by a line feed
// (CR-only line endings, as classic Mac OS and some editors save), which
// HCL reads nowhere as a line end: it is an invalid character, or, after
// a comment's start, more of the comment — a file that starts with one is one comment line,
// and "Missing graph block" would be all it said. Its diagnostic names the
// file and the first such CR, and replaces the parser's, one per CR.
func checkLineEnds(toks hclsyntax.Tokens, filename string) hclv2.Diagnostics {
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenInvalid, hclsyntax.TokenComment, hclsyntax.TokenQuotedNewline:
		default:
			continue
		}
		i := bareCR(t.Bytes)
		if i < 0 {
			continue
		}
		// Columns count characters (runes here), as HCL's positions do.
		pos := t.Range.Start
		line, col := pos.Line, pos.Column
		for _, c := range string(t.Bytes[:i]) {
			if c == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		start := hclv2.Pos{Line: line, Column: col, Byte: pos.Byte + i}
		rng := hclv2.Range{Filename: filename, Start: start, End: hclv2.Pos{Line: line, Column: col + 1, Byte: start.Byte + 1}}
		return hclv2.Diagnostics{{
			Severity: hclv2.DiagError,
			Summary:  fmt.Sprintf("CR-only line endings in %s", filename),
			Detail: fmt.Sprintf("%s ends lines with a carriage return alone (line %d, column %d is the first), which HCL does not read as a line end: after a comment's start the rest of the file stays in the comment, and elsewhere the CR is an invalid character. Save it with LF (or CRLF) line endings, for example: tr '\\r' '\\n' < %s > fixed.hcl",
				filename, line, col, filename),
			Subject: &rng,
		}}
	}
	return nil
}

// bareCR returns the index of the first carriage return in b not
// followed by a line feed, or -1.
func bareCR(b []byte) int {
	for i, c := range b {
		if c == '\r' && (i+1 == len(b) || b[i+1] != '\n') {
			return i
		}
	}
	return -1
}

// MaxParseDiagnostics is how many of the parser's diagnostics of one file
// are reported; the rest are counted in one more. A file that is not HCL
// at all (a binary passed by mistake) otherwise
// gives one "Invalid character" per byte, each quoting its line.
const MaxParseDiagnostics = 50

// capParseDiagnostics keeps the first MaxParseDiagnostics of diags and,
// when there were more, one error standing for the rest (Extra Omitted).
func capParseDiagnostics(diags hclv2.Diagnostics, filename string) hclv2.Diagnostics {
	if len(diags) <= MaxParseDiagnostics {
		return diags
	}
	rest := len(diags) - MaxParseDiagnostics
	return append(diags[:MaxParseDiagnostics:MaxParseDiagnostics], &hclv2.Diagnostic{
		Severity: hclv2.DiagError,
		Summary:  fmt.Sprintf("… and %d more errors in %s", rest, filename),
		Detail: fmt.Sprintf("The parser found %d errors in %s; the first %d are shown. Check that it is a run file (HCL, UTF-8, LF or CRLF line endings).",
			len(diags), filename, MaxParseDiagnostics),
		Extra: Omitted(rest),
	})
}

// parseTemplate parses template source (a prompt_file) after checking its
// nesting, as parseConfig.
func parseTemplate(src []byte, filename string) (hclsyntax.Expression, hclv2.Diagnostics) {
	toks, _ := hclsyntax.LexTemplate(src, filename, hclv2.InitialPos)
	if diags := checkNesting(toks); diags.HasErrors() {
		return nil, diags
	}
	return hclsyntax.ParseTemplate(src, filename, hclv2.InitialPos)
}

// checkNesting reports the first token at which toks nest deeper than
// MaxNesting, or at which more than MaxNesting unary operators follow
// each other. Lexing is linear in the source, so this check is cheap
// where parsing is not.
func checkNesting(toks hclsyntax.Tokens) hclv2.Diagnostics {
	var n nesting
	for _, t := range toks {
		if diags := n.next(t); diags.HasErrors() {
			return diags
		}
	}
	return nil
}

// nesting is checkNesting's state between tokens: how deep the tokens so
// far nest and how many unary operators came last in a row.
type nesting struct{ depth, unary int }

// next takes the next token and reports it if it nests deeper than
// MaxNesting or is one unary operator too many (checkNesting).
func (n *nesting) next(t hclsyntax.Token) hclv2.Diagnostics {
	switch t.Type {
	case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen, hclsyntax.TokenOQuote,
		hclsyntax.TokenOHeredoc, hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
		n.depth++
	case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenCQuote,
		hclsyntax.TokenCHeredoc, hclsyntax.TokenTemplateSeqEnd:
		n.depth--
	}
	if t.Type == hclsyntax.TokenBang || t.Type == hclsyntax.TokenMinus {
		n.unary++
	} else {
		n.unary = 0
	}
	if n.depth <= MaxNesting && n.unary <= MaxNesting {
		return nil
	}
	rng := t.Range
	return hclv2.Diagnostics{{
		Severity: hclv2.DiagError,
		Summary:  "Nesting too deep",
		Detail: fmt.Sprintf("Brackets, braces, parentheses, quotes and template sequences nest more than %d deep here, or more than %d ! or - operators follow each other. Flatten the expression: a run file needs far fewer levels.",
			MaxNesting, MaxNesting),
		Subject: &rng,
	}}
}

// fileTooLarge is the diagnostic of a file regfile.Read refused as past its
// bound (regfile.ErrTooLarge): a Summary "<what> is too large" and a
// Detail naming the file (as shown), its size (of path), the limit in bytes and MiB, and fix,
// how to bring it under. ok is false for any other error, which is
// reported as a read failure instead: a size is never a permissions
// problem.
func fileTooLarge(what, shown, path string, err error, limit int64, fix string) (*hclv2.Diagnostic, bool) {
	if !errors.Is(err, regfile.ErrTooLarge) {
		return nil, false
	}
	size := "more than the limit"
	if info, serr := os.Stat(path); serr == nil {
		size = fmt.Sprintf("%d bytes (%.1f MiB)", info.Size(), float64(info.Size())/(1<<20))
	}
	return &hclv2.Diagnostic{
		Severity: hclv2.DiagError,
		Summary:  what + " is too large",
		Detail: fmt.Sprintf("%s is %s; a %s is at most %d bytes (%g MiB). To fix it, %s.",
			shown, size, strings.ToLower(what), limit, float64(limit)/(1<<20), fix),
	}, true
}
