package hcl

import (
	"fmt"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
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
// overflow.
func parseConfig(src []byte, filename string) (*hclv2.File, hclv2.Diagnostics) {
	toks, _ := hclsyntax.LexConfig(src, filename, hclv2.InitialPos)
	if diags := checkNesting(toks); diags.HasErrors() {
		return nil, diags
	}
	file, diags := hclsyntax.ParseConfig(src, filename, hclv2.InitialPos)
	return file, capParseDiagnostics(diags, filename)
}

// MaxParseDiagnostics is how many of the parser's diagnostics of one file
// are reported; the rest are counted in one more. A file that is not HCL
// at all (a binary passed by mistake, CR-only line endings) otherwise
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
	depth, unary := 0, 0
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen, hclsyntax.TokenOQuote,
			hclsyntax.TokenOHeredoc, hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			depth++
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenCQuote,
			hclsyntax.TokenCHeredoc, hclsyntax.TokenTemplateSeqEnd:
			depth--
		}
		if t.Type == hclsyntax.TokenBang || t.Type == hclsyntax.TokenMinus {
			unary++
		} else {
			unary = 0
		}
		if depth > MaxNesting || unary > MaxNesting {
			rng := t.Range
			return hclv2.Diagnostics{{
				Severity: hclv2.DiagError,
				Summary:  "Nesting too deep",
				Detail: fmt.Sprintf("Brackets, braces, parentheses, quotes and template sequences nest more than %d deep here, or more than %d ! or - operators follow each other. Flatten the expression: a run file needs far fewer levels.",
					MaxNesting, MaxNesting),
				Subject: &rng,
			}}
		}
	}
	return nil
}
