package hcl

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// errTemplateSource is returned by templateSource when the source text of a
// template cannot be recovered; it indicates a defect, not a user error.
var errTemplateSource = errors.New("cannot recover the template source text")

// tokenIndex is a lexed source file with its template sequences paired, to
// find the exact source text of an interpolation or directive.
type tokenIndex struct {
	src  []byte
	toks hclsyntax.Tokens
	// closer[i] is the index of the token that closes the sequence opened
	// at toks[i], or -1 when toks[i] opens no sequence.
	closer []int
}

// newTokenIndex lexes the source of one expression, rng within src. Token
// ranges are positions in src. Only template sequences are used, which lex
// the same in the expression alone as in the whole file (a heredoc's closing
// marker, which needs the newline after it, does not).
func newTokenIndex(src []byte, rng hclv2.Range) *tokenIndex {
	toks, _ := hclsyntax.LexExpression(src[rng.Start.Byte:rng.End.Byte], rng.Filename, rng.Start)
	ti := &tokenIndex{src: src, toks: toks, closer: make([]int, len(toks))}
	var stack []int
	for i, t := range toks {
		ti.closer[i] = -1
		switch t.Type {
		case hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			stack = append(stack, i)
		case hclsyntax.TokenTemplateSeqEnd:
			if n := len(stack); n > 0 {
				ti.closer[stack[n-1]] = i
				stack = stack[:n-1]
			}
		}
	}
	return ti
}

// sequence returns the innermost template sequence (interpolation or
// directive) containing byte offset off: its sigil ('$' or '%') and the
// source between its delimiters, strip markers excluded. A sequence starting
// exactly at off contains it only when atStart is true: a directive's range
// starts at its "%{", an interpolated expression's after its "${", and a
// literal's (after heredoc de-indentation) may end up at a "${".
func (ti *tokenIndex) sequence(off int, atStart bool) (sigil byte, inner string, ok bool) {
	best := -1
	for i, c := range ti.closer {
		if c < 0 {
			continue
		}
		start := ti.toks[i].Range.Start.Byte
		if (start < off || (atStart && start == off)) && off < ti.toks[c].Range.End.Byte {
			if best < 0 || ti.toks[i].Range.Start.Byte > ti.toks[best].Range.Start.Byte {
				best = i
			}
		}
	}
	if best < 0 {
		return 0, "", false
	}
	open, end := ti.toks[best], ti.toks[ti.closer[best]]
	return open.Bytes[0], string(ti.src[open.Range.End.Byte:end.Range.Start.Byte]), true
}

// startsWith reports whether the source at r begins with prefix.
func (ti *tokenIndex) startsWith(r hclv2.Range, prefix string) bool {
	if r.Start.Byte < 0 || r.Start.Byte > len(ti.src) {
		return false
	}
	return bytes.HasPrefix(ti.src[r.Start.Byte:], []byte(prefix))
}

// templateWriter accumulates template-mode source. Literal text is held
// back until the next sequence so that a literal ending in the sequence's
// sigil ("$" before "${", "%" before "%{") can be written without turning
// into an escape.
type templateWriter struct {
	b       strings.Builder
	pending strings.Builder
	lits    int // literal runs written
	interps int // interpolation sequences written
	seqs    int // all sequences written
}

func (w *templateWriter) literal(s string) { w.pending.WriteString(s) }

func (w *templateWriter) flush(nextSigil byte) {
	p := w.pending.String()
	w.pending.Reset()
	if p == "" {
		return
	}
	w.lits++
	if last := p[len(p)-1]; nextSigil != 0 && last == nextSigil {
		w.b.WriteString(escapeLiteral(p[:len(p)-1]))
		fmt.Fprintf(&w.b, `${"%c"}`, last)
		w.interps++
		w.seqs++
		return
	}
	w.b.WriteString(escapeLiteral(p))
}

func (w *templateWriter) sequence(sigil byte, inner string) {
	w.flush(sigil)
	w.b.WriteByte(sigil)
	w.b.WriteByte('{')
	w.b.WriteString(inner)
	w.b.WriteByte('}')
	w.seqs++
	if sigil == '$' {
		w.interps++
	}
}

// String returns the template source written so far.
func (w *templateWriter) String() string {
	w.flush(0)
	return w.b.String()
}

// templateSource returns template-mode source text (as read by
// hclsyntax.ParseTemplate) that renders exactly as expr does, for an
// expression that refers to input.results:
//
//   - a quoted string or heredoc template is rewritten part by part: its
//     literal text, already unescaped, stripped ("~") and de-indented
//     ("<<-") by the HCL parser, is re-escaped for template mode, and each
//     interpolation and directive is copied from the source verbatim;
//   - any other expression E becomes "${E}", which, like HCL's own
//     single-interpolation templates, yields E's value unconverted.
func (d *decoder) templateSource(expr hclsyntax.Expression) (string, error) {
	rng := expr.Range()
	if rng.Start.Byte < 0 || rng.End.Byte > len(d.src) || rng.Start.Byte > rng.End.Byte {
		return "", errTemplateSource
	}
	ti := newTokenIndex(d.src, rng)
	quoted := ti.startsWith(rng, `"`) || ti.startsWith(rng, "<<")
	w := &templateWriter{}
	switch e := expr.(type) {
	case *hclsyntax.TemplateWrapExpr:
		if quoted {
			if err := writePart(ti, w, e.Wrapped); err != nil {
				return "", err
			}
			return w.String(), nil
		}
	case *hclsyntax.TemplateExpr:
		if quoted {
			for _, p := range e.Parts {
				if err := writePart(ti, w, p); err != nil {
					return "", err
				}
			}
			out := w.String()
			if w.lits == 0 && w.seqs == 1 && w.interps == 1 {
				// A template that is one interpolation passes its
				// value through unconverted; this one did not (its
				// literals were empty), so keep it a string.
				out += `${""}`
			}
			return out, nil
		}
	}
	return "${" + string(ti.src[rng.Start.Byte:rng.End.Byte]) + "}", nil
}

// writePart writes one part of a template.
func writePart(ti *tokenIndex, w *templateWriter, part hclsyntax.Expression) error {
	switch e := part.(type) {
	case *hclsyntax.LiteralValueExpr:
		if e.Val.Type() == cty.String && !e.Val.IsNull() {
			if _, _, inside := ti.sequence(e.SrcRange.Start.Byte, false); !inside {
				w.literal(e.Val.AsString())
				return nil
			}
		}
	case *hclsyntax.ConditionalExpr:
		if ti.startsWith(e.SrcRange, "%{") {
			_, inner, ok := ti.sequence(e.SrcRange.Start.Byte, true)
			if !ok {
				return errTemplateSource
			}
			w.sequence('%', inner)
			if err := writeTemplate(ti, w, e.TrueResult); err != nil {
				return err
			}
			if !isEmptyTemplate(e.FalseResult) {
				w.sequence('%', " else ")
				if err := writeTemplate(ti, w, e.FalseResult); err != nil {
					return err
				}
			}
			w.sequence('%', " endif ")
			return nil
		}
	case *hclsyntax.TemplateJoinExpr:
		if fe, isFor := e.Tuple.(*hclsyntax.ForExpr); isFor && ti.startsWith(fe.OpenRange, "%{") {
			_, inner, ok := ti.sequence(fe.OpenRange.Start.Byte, true)
			if !ok {
				return errTemplateSource
			}
			w.sequence('%', inner)
			if err := writeTemplate(ti, w, fe.ValExpr); err != nil {
				return err
			}
			w.sequence('%', " endfor ")
			return nil
		}
	}
	sigil, inner, ok := ti.sequence(part.Range().Start.Byte, false)
	if !ok || sigil != '$' {
		return errTemplateSource
	}
	w.sequence('$', inner)
	return nil
}

// writeTemplate writes the body of a directive.
func writeTemplate(ti *tokenIndex, w *templateWriter, e hclsyntax.Expression) error {
	te, ok := e.(*hclsyntax.TemplateExpr)
	if !ok {
		return writePart(ti, w, e)
	}
	for _, p := range te.Parts {
		if err := writePart(ti, w, p); err != nil {
			return err
		}
	}
	return nil
}

// isEmptyTemplate reports whether e is the empty body the HCL parser puts
// in place of a missing else branch.
func isEmptyTemplate(e hclsyntax.Expression) bool {
	te, ok := e.(*hclsyntax.TemplateExpr)
	if !ok || len(te.Parts) != 1 {
		return false
	}
	lit, ok := te.Parts[0].(*hclsyntax.LiteralValueExpr)
	return ok && lit.Val.Type() == cty.String && !lit.Val.IsNull() && lit.Val.AsString() == ""
}

// storedTemplate converts a template expression to its stored source.
func (d *decoder) storedTemplate(expr hclsyntax.Expression, refs []resultRef) (string, []resultRef, bool) {
	src, err := d.templateSource(expr)
	if err != nil {
		d.errorAt(expr.Range(), "Cannot store this template",
			fmt.Sprintf("The template could not be converted for rendering at dispatch time (%v). Rewrite it as a plain quoted string or heredoc and report this as a bug.", err))
		return "", refs, false
	}
	if !d.checkStoredTemplate(src, expr.Range()) {
		return "", refs, false
	}
	return src, refs, true
}

// checkStoredTemplate parses a stored template source to make sure it will
// render at dispatch time; failure is a defect in templateSource.
func (d *decoder) checkStoredTemplate(src string, subject hclv2.Range) bool {
	if _, diags := hclsyntax.ParseTemplate([]byte(src), "<stored>", hclv2.InitialPos); diags.HasErrors() {
		d.errorAt(subject, "Cannot store this template",
			fmt.Sprintf("The template could not be converted for rendering at dispatch time (%s). Rewrite it as a plain quoted string or heredoc and report this as a bug.", diags.Error()))
		return false
	}
	return true
}
