package hcl

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// templateFunctions is the fixed set of functions a template (and a
// constant attribute) may call. It is part of the run-file contract: a
// stored definition must render the same way in every process, so the set
// only ever grows. Never modified after initialisation.
var templateFunctions = map[string]function.Function{
	"can":        tryfunc.CanFunc,
	"chomp":      stdlib.ChompFunc,
	"format":     stdlib.FormatFunc,
	"indent":     stdlib.IndentFunc,
	"join":       stdlib.JoinFunc,
	"jsondecode": stdlib.JSONDecodeFunc,
	"jsonencode": stdlib.JSONEncodeFunc,
	"length":     lengthFunc,
	"lower":      stdlib.LowerFunc,
	"replace":    stdlib.ReplaceFunc,
	"split":      stdlib.SplitFunc,
	"trimspace":  stdlib.TrimSpaceFunc,
	"try":        tryfunc.TryFunc,
	"upper":      stdlib.UpperFunc,
}

// lengthFunc is length as Terraform users know it: the number of elements
// of a list, tuple, set or map, of attributes of an object (a for_each
// node's results by key, a loop's by member), or of characters (grapheme
// clusters) of a string.
var lengthFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowDynamicType: true, AllowUnknown: true, AllowMarked: true}},
	Type: func(args []cty.Value) (cty.Type, error) {
		if ty := args[0].Type(); ty == cty.String || ty.IsObjectType() {
			return cty.Number, nil
		}
		return stdlib.LengthFunc.ReturnType([]cty.Type{args[0].Type()})
	},
	RefineResult: func(b *cty.RefinementBuilder) *cty.RefinementBuilder { return b.NotNull() },
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		switch ty := args[0].Type(); {
		case ty == cty.String:
			return stdlib.StrlenFunc.Call(args)
		case ty.IsObjectType():
			return cty.NumberIntVal(int64(len(ty.AttributeTypes()))), nil
		}
		return stdlib.LengthFunc.Call(args)
	},
})

// TemplateFunctions returns the names of the functions templates may call,
// sorted. See the package documentation for what each does.
func TemplateFunctions() []string {
	names := make([]string, 0, len(templateFunctions))
	for n := range templateFunctions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// newEvalContext returns a fresh evaluation context with the template
// functions and the given variables (nil for none).
func newEvalContext(vars map[string]cty.Value) *hclv2.EvalContext {
	return &hclv2.EvalContext{Variables: vars, Functions: templateFunctions}
}

// escapeLiteral escapes text so that, as template-mode source (what
// hclsyntax.ParseTemplate reads), it renders to itself: "${" and "%{" start
// sequences there, and "$${" and "%%{" are their escapes.
func escapeLiteral(s string) string {
	if !strings.Contains(s, "${") && !strings.Contains(s, "%{") {
		return s
	}
	s = strings.ReplaceAll(s, "${", "$${")
	return strings.ReplaceAll(s, "%{", "%%{")
}

// mayBeTemplate reports whether s contains a template sequence, escaped or
// not. A string without one renders to itself.
func mayBeTemplate(s string) bool {
	return strings.Contains(s, "${") || strings.Contains(s, "%{")
}

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

// resultRef is a reference to input.results.<node> in a template.
type resultRef struct {
	Node  string
	Text  string
	Range hclv2.Range
	// Deeper is set when the reference goes into the result
	// (input.results.<node>.<attr> or [index]); Attr is then that first
	// step's name ("" for a number index) and Deepest is set when the
	// reference goes further still.
	Deeper  bool
	Attr    string
	Deepest bool
}

// resultNode returns the node a traversal names when it has the shape
// input.results.<node>… (or the index forms of the last two steps).
func resultNode(t hclv2.Traversal) (string, bool) {
	if len(t) < 3 || t.RootName() != "input" {
		return "", false
	}
	if name, ok := stepName(t[1]); !ok || name != "results" {
		return "", false
	}
	return stepName(t[2])
}

// stepName returns the name an attribute step or string index step uses.
func stepName(s hclv2.Traverser) (string, bool) {
	switch s := s.(type) {
	case hclv2.TraverseAttr:
		return s.Name, true
	case hclv2.TraverseIndex:
		if s.Key.Type() == cty.String && s.Key.IsKnown() && !s.Key.IsNull() {
			return s.Key.AsString(), true
		}
	}
	return "", false
}

// tmplScope is what a template may refer to besides input.results: the
// loop's variables inside a loop's members and until, the item inside a
// for_each node.
type tmplScope struct {
	// loop is the id of the loop the template is in, "" outside loops;
	// members are its members' ids.
	loop    string
	members []string
	each    bool
}

// Template variables besides input (docs/run-file.md, "Templates").
var (
	loopAttrs = []string{"round", "findings", "previous"}
	eachAttrs = []string{"key", "value"}
)

// templateRefs checks every variable reference of a template expression
// (what: "prompt", "input", "for_each" or "until") against the decoder's
// scope and returns the references to results; ok is false when a
// reference of any other shape was diagnosed.
func (d *decoder) templateRefs(vars []hclv2.Traversal, what string) (refs []resultRef, ok bool) {
	ok = true
	for _, t := range vars {
		switch t.RootName() {
		case "loop":
			ok = d.loopRef(t, what) && ok
			continue
		case "each":
			ok = d.eachRef(t, what) && ok
			continue
		}
		node, isResult := resultNode(t)
		if !isResult {
			d.errorAt(t.SourceRange(), fmt.Sprintf("Invalid reference %s in %s", traversalString(t), what),
				fmt.Sprintf("A node's %s may only refer to the results of other nodes, as input.results.<node> followed by any attributes, for example ${input.results.draft} or ${input.results[\"my-node\"].stdout}; inside a loop also to loop.round, loop.findings and loop.previous.<member>, and in a for_each node to each.key and each.value.", what))
			ok = false
			continue
		}
		r := resultRef{Node: node, Text: traversalString(t), Range: t.SourceRange(), Deeper: len(t) > 3}
		if len(t) > 3 {
			r.Attr, _ = stepName(t[3])
			r.Deepest = len(t) > 4
		}
		refs = append(refs, r)
	}
	return refs, ok
}

// loopRef checks a reference to loop.*: only inside a loop, only to its
// attributes, and loop.previous only to its members.
func (d *decoder) loopRef(t hclv2.Traversal, what string) bool {
	text := traversalString(t)
	if d.scope.loop == "" {
		d.errorAt(t.SourceRange(), fmt.Sprintf("Reference to %s outside a loop", text),
			fmt.Sprintf("loop.round, loop.findings and loop.previous.<member> exist only in the prompt, input and until of a loop's members. Move this node into a loop \"<name>\" { … } block, or remove %s from its %s.", text, what))
		return false
	}
	if len(t) < 2 {
		d.errorAt(t.SourceRange(), "Incomplete reference to loop",
			"Refer to one of the loop's variables: loop.round (1-based), loop.findings (the last failed review's findings as text) or loop.previous.<member> (that member's result in the previous round).")
		return false
	}
	attr, _ := stepName(t[1])
	if !slices.Contains(loopAttrs, attr) {
		d.errorAt(t.SourceRange(), fmt.Sprintf("Unknown loop variable %q", attr),
			fmt.Sprintf("A loop's members may use loop.round, loop.findings and loop.previous.<member>.%s", didYouMean(attr, loopAttrs)))
		return false
	}
	if attr == "previous" && len(t) > 2 {
		m, _ := stepName(t[2])
		if !slices.Contains(d.scope.members, m) {
			d.errorAt(t.SourceRange(), fmt.Sprintf("Loop %q has no member %q", d.scope.loop, m),
				fmt.Sprintf("loop.previous.<member> is a member's result in the previous round (null in round 1).%s", didYouMean(m, d.scope.members)))
			return false
		}
	}
	return true
}

// eachRef checks a reference to each.*: only in a for_each node, only to
// each.key and each.value.
func (d *decoder) eachRef(t hclv2.Traversal, what string) bool {
	text := traversalString(t)
	if !d.scope.each {
		d.errorAt(t.SourceRange(), fmt.Sprintf("Reference to %s outside for_each", text),
			fmt.Sprintf("each.key and each.value exist only in the prompt and input of a node with for_each (not in the for_each itself). Add for_each to this node, or remove %s from its %s.", text, what))
		return false
	}
	attr := ""
	if len(t) > 1 {
		attr, _ = stepName(t[1])
	}
	if !slices.Contains(eachAttrs, attr) {
		d.errorAt(t.SourceRange(), fmt.Sprintf("Unknown for_each variable %s", text),
			fmt.Sprintf("A for_each node's instances may use each.key (the item's key) and each.value (its value).%s", didYouMean(attr, eachAttrs)))
		return false
	}
	return true
}

// checkTemplate diagnoses calls to functions outside the template function
// set and evaluates expr with unknown results, which catches wrong
// argument counts and types that do not depend on the results.
func (d *decoder) checkTemplate(expr hclsyntax.Expression) bool {
	before := len(d.diags)
	_ = hclsyntax.VisitAll(expr, func(n hclsyntax.Node) hclv2.Diagnostics {
		call, ok := n.(*hclsyntax.FunctionCallExpr)
		if !ok {
			return nil
		}
		if _, known := templateFunctions[call.Name]; !known {
			d.errorAt(call.NameRange, fmt.Sprintf("Call to unknown function %q", call.Name),
				fmt.Sprintf("Templates can call only these functions: %s.%s", strings.Join(TemplateFunctions(), ", "), suggestOnly(call.Name, TemplateFunctions())))
		}
		return nil
	})
	if len(d.diags) > before {
		return false
	}
	vars := map[string]cty.Value{"input": cty.DynamicVal}
	if d.scope.loop != "" {
		vars["loop"] = cty.DynamicVal
	}
	if d.scope.each {
		vars["each"] = cty.DynamicVal
	}
	ctx := newEvalContext(vars)
	_, diags := expr.Value(ctx)
	d.diags = append(d.diags, diags...)
	return !diags.HasErrors()
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
