package hcl

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// MaxRenderedBytes bounds a rendered prompt, and a rendered node input, in
// bytes: 16 MiB. Either travels to its plugin in one gRPC message, bounded
// at 64 MiB (plugin.MaxMessageBytes) with the rest of the request; a text
// past the bound fails its node with ErrTooLarge before any plugin or
// policy is asked, naming its size (docs/decisions.md, "A rendered prompt
// is bounded at 16 MiB").
const MaxRenderedBytes = 16 << 20

// tooLarge is the ErrTooLarge of a rendered what of n bytes.
func tooLarge(what string, n int) *RenderError {
	return &RenderError{Err: ErrTooLarge, Detail: fmt.Sprintf("the %s rendered to %d bytes (%.1f MiB), more than the %d MiB a rendered %[1]s may hold; "+
		"pass less of the results it interpolates (a part of a result, or a file the plugin reads)", what, n, float64(n)/(1<<20), MaxRenderedBytes>>20)}
}

// promptFilename names a stored template in render diagnostics.
const promptFilename = "<template>"

// RenderPrompt renders a stored prompt template (Node.Prompt, template-mode
// source as read by hclsyntax.ParseTemplate) against the recorded results of
// other nodes. The template sees one variable,
//
//	input = { results = { <node> = <result> … } }
//
// where each result is results[node] decoded from JSON (objects become
// objects, arrays tuples, and so on), and may call TemplateFunctions. The
// rendered value must convert to a string.
//
// Errors are *RenderError wrapping ErrMissingResult (a referenced node has
// no entry in results), ErrMissingAttribute (a traversal into a result
// fails), ErrInvalidResult (a referenced result is not JSON) or ErrTemplate
// (anything else: a parse error, a wrong type, a non-string result), or
// ErrTooLarge (more than MaxRenderedBytes). References inside try() or
// can() that fail are not errors.
func RenderPrompt(src string, results map[string]json.RawMessage) (string, error) {
	return Scope{Results: results}.Prompt(src)
}

// Prompt renders a stored prompt as RenderPrompt does, with the scope's
// loop and each variables besides the results.
func (sc Scope) Prompt(src string) (string, error) {
	if !mayBeTemplate(src) {
		if len(src) > MaxRenderedBytes {
			return "", tooLarge("prompt", len(src))
		}
		return src, nil
	}
	expr, diags := hclsyntax.ParseTemplate([]byte(src), promptFilename, hclv2.InitialPos)
	if diags.HasErrors() {
		return "", &RenderError{Err: ErrTemplate, Detail: diagText(diags)}
	}
	v, rerr := evalTemplate(expr, sc)
	if rerr != nil {
		return "", rerr
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil || s.IsNull() {
		return "", &RenderError{Err: ErrTemplate,
			Detail: fmt.Sprintf("the prompt rendered to %s, not a string; interpolate a string attribute or wrap the value in jsonencode()", friendlyValue(v))}
	}
	if n := len(s.AsString()); n > MaxRenderedBytes {
		return "", tooLarge("prompt", n)
	}
	return s.AsString(), nil
}

// ReadsResults reports whether rendering prompt (RenderPrompt) or input
// (RenderInput) may read other nodes' results: false when neither holds a
// template, in which case both render to themselves whatever the results,
// and the caller need not gather them.
func ReadsResults(prompt string, input json.RawMessage) bool {
	return mayBeTemplate(prompt) || mayBeTemplate(string(input)) || strings.Contains(string(input), `\u`)
}

// RenderInput renders a stored node input (Node.Input) against the recorded
// results of other nodes and returns the JSON to dispatch. Every string in
// the input is a template (see the package documentation): strings without
// "${" or "%{" are returned unchanged, and a string that is exactly one
// interpolation such as "${input.results.fetch}" is replaced by the value
// itself, whatever its type. Object keys are not templates.
//
// An empty input renders to itself. Errors are *RenderError, as for
// RenderPrompt, with Field naming the failing string's place in the input,
// or wrapping ErrInvalidInput when input is not JSON.
func RenderInput(input json.RawMessage, results map[string]json.RawMessage) (json.RawMessage, error) {
	return Scope{Results: results}.Input(input)
}

// Input renders a stored node input as RenderInput does, with the scope's
// loop and each variables besides the results.
func (sc Scope) Input(input json.RawMessage) (json.RawMessage, error) {
	if len(input) == 0 {
		return input, nil
	}
	if !mayBeTemplate(string(input)) && !strings.Contains(string(input), `\u`) {
		if !json.Valid(input) {
			return nil, &RenderError{Err: ErrInvalidInput, Detail: "the stored input does not parse as JSON"}
		}
		if len(input) > MaxRenderedBytes {
			return nil, tooLarge("input", len(input))
		}
		return input, nil
	}
	v, err := jsonToCty(input)
	if err != nil {
		return nil, &RenderError{Err: ErrInvalidInput, Detail: err.Error()}
	}
	out, rerr := renderValue(v, "", func(expr hclsyntax.Expression) (cty.Value, *RenderError) { return evalTemplate(expr, sc) })
	if rerr != nil {
		return nil, rerr
	}
	b, err := ctyjson.Marshal(out, out.Type())
	if err != nil {
		return nil, &RenderError{Err: ErrTemplate, Detail: "the rendered input cannot be written as JSON: " + err.Error()}
	}
	if len(b) > MaxRenderedBytes {
		return nil, tooLarge("input", len(b))
	}
	return b, nil
}

// renderValue renders every string in v with eval; path is v's place in
// the input.
func renderValue(v cty.Value, path string, eval func(hclsyntax.Expression) (cty.Value, *RenderError)) (cty.Value, *RenderError) {
	if v.IsNull() || !v.IsKnown() {
		return v, nil
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		s := v.AsString()
		if !mayBeTemplate(s) {
			return v, nil
		}
		expr, diags := hclsyntax.ParseTemplate([]byte(s), promptFilename, hclv2.InitialPos)
		if diags.HasErrors() {
			return cty.NilVal, &RenderError{Err: ErrTemplate, Field: fieldOrRoot(path), Detail: diagText(diags)}
		}
		out, rerr := eval(expr)
		if rerr != nil {
			rerr.Field = fieldOrRoot(path)
			return cty.NilVal, rerr
		}
		return out, nil
	case ty.IsObjectType():
		if v.LengthInt() == 0 {
			return v, nil
		}
		attrs := make(map[string]cty.Value, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			r, rerr := renderValue(e, joinField(path, k.AsString()), eval)
			if rerr != nil {
				return cty.NilVal, rerr
			}
			attrs[k.AsString()] = r
		}
		return cty.ObjectVal(attrs), nil
	case ty.IsTupleType():
		if v.LengthInt() == 0 {
			return v, nil
		}
		elems := make([]cty.Value, 0, v.LengthInt())
		for i, e := range v.AsValueSlice() {
			r, rerr := renderValue(e, path+"["+strconv.Itoa(i)+"]", eval)
			if rerr != nil {
				return cty.NilVal, rerr
			}
			elems = append(elems, r)
		}
		return cty.TupleVal(elems), nil
	}
	return v, nil
}

// joinField appends an object key to a field path.
func joinField(path, key string) string {
	if hclsyntax.ValidIdentifier(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

func fieldOrRoot(path string) string {
	if path == "" {
		return "(input)"
	}
	return path
}

// evalTemplate evaluates a parsed template with the referenced results and
// the scope's loop and each variables.
func evalTemplate(expr hclsyntax.Expression, sc Scope) (cty.Value, *RenderError) {
	results := sc.Results
	vars := expr.Variables()
	names, all := referencedNodes(vars)
	if all {
		names = names[:0]
		for n := range results {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	resultVals := make(map[string]cty.Value, len(names))
	for _, n := range names {
		raw, ok := results[n]
		if !ok {
			continue
		}
		v, err := jsonToCty(raw)
		if err != nil {
			return cty.NilVal, &RenderError{Node: n, Err: ErrInvalidResult, Detail: err.Error()}
		}
		resultVals[n] = v
	}
	variables := map[string]cty.Value{
		"input": cty.ObjectVal(map[string]cty.Value{"results": cty.ObjectVal(resultVals)}),
	}
	if err := sc.variables(variables); err != nil {
		return cty.NilVal, err
	}
	ctx := newEvalContext(variables)
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		return cty.NilVal, explainRenderFailure(diags, vars, results, ctx)
	}
	if !v.IsWhollyKnown() {
		return cty.NilVal, &RenderError{Err: ErrTemplate, Detail: "the template rendered to an unknown value"}
	}
	return v, nil
}

// referencedNodes returns the nodes a template's references name, sorted
// and unique. all is true when some reference does not name its node
// statically, so that every result must be provided.
func referencedNodes(vars []hclv2.Traversal) (names []string, all bool) {
	seen := map[string]bool{}
	for _, t := range vars {
		if t.RootName() != "input" {
			continue
		}
		n, ok := resultNode(t)
		if !ok {
			all = true
			continue
		}
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, all
}

// explainRenderFailure turns evaluation diagnostics into a RenderError,
// naming the reference that failed when the failure is a reference that
// does not resolve (rather than, say, a value of the wrong type).
func explainRenderFailure(diags hclv2.Diagnostics, vars []hclv2.Traversal, results map[string]json.RawMessage, ctx *hclv2.EvalContext) *RenderError {
	for _, dg := range diags {
		if dg.Severity != hclv2.DiagError || dg.Subject == nil {
			continue
		}
		for _, t := range vars {
			if !t.SourceRange().Overlaps(*dg.Subject) {
				continue
			}
			node, ok := resultNode(t)
			if !ok {
				continue
			}
			if _, present := results[node]; !present {
				return &RenderError{Node: node, Reference: traversalString(t), Err: ErrMissingResult,
					Detail: fmt.Sprintf("no result was recorded for node %q", node)}
			}
			if traversalFails(t, ctx) {
				return &RenderError{Node: node, Reference: traversalString(t), Err: ErrMissingAttribute, Detail: diagSentence(dg)}
			}
		}
	}
	return &RenderError{Err: ErrTemplate, Detail: diagText(diags)}
}

// traversalFails reports whether a traversal does not resolve in ctx.
func traversalFails(t hclv2.Traversal, ctx *hclv2.EvalContext) bool {
	for _, step := range t {
		if _, splat := step.(hclv2.TraverseSplat); splat {
			return false // not resolvable step by step; leave it to the caller
		}
	}
	_, diags := t.TraverseAbs(ctx)
	return diags.HasErrors()
}

// jsonToCty decodes JSON into the cty value it implies.
func jsonToCty(raw json.RawMessage) (cty.Value, error) {
	ty, err := ctyjson.ImpliedType(raw)
	if err != nil {
		return cty.NilVal, err
	}
	return ctyjson.Unmarshal(raw, ty)
}

// diagSentence renders one diagnostic as "summary: detail".
func diagSentence(dg *hclv2.Diagnostic) string {
	s := dg.Summary
	if dg.Detail != "" {
		s += ": " + dg.Detail
	}
	if dg.Subject != nil && dg.Subject.Filename == promptFilename {
		s = fmt.Sprintf("%s (at line %d, column %d)", s, dg.Subject.Start.Line, dg.Subject.Start.Column)
	}
	return s
}

// diagText renders the error diagnostics on one line.
func diagText(diags hclv2.Diagnostics) string {
	var parts []string
	for _, dg := range diags {
		if dg.Severity == hclv2.DiagError {
			parts = append(parts, diagSentence(dg))
		}
	}
	return strings.Join(parts, "; ")
}

// friendlyValue describes a value's type for an error message.
func friendlyValue(v cty.Value) string {
	if v.IsNull() {
		return "null"
	}
	return v.Type().FriendlyName()
}
