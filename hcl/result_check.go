package hcl

import (
	"encoding/json"
	"fmt"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// ResultBreak is one template of a node that cannot render with a given
// result of an upstream node (ResultBreaks).
type ResultBreak struct {
	// Field is "prompt", or the input field as RenderError.Field names it
	// ("command[1]", "(input)" for the whole input).
	Field string
	// Err says why: a *RenderError.
	Err error
}

// ResultBreaks reports which templates of a node's stored prompt and input
// (NodeDef.Prompt, NodeDef.Input) refer to node's result and cannot render
// when that result is result (JSON; empty is null), whatever the other
// results, loop and each variables turn out to be: those render as
// unknown values, so only what follows from result itself fails —
// `${input.results.draft}` in a prompt, or `.text` of it, with a null
// result. Templates that do not refer to node are not rendered. The
// error is a *RenderError wrapping ErrInvalidResult when result is not
// JSON.
func ResultBreaks(node string, result json.RawMessage, prompt string, input json.RawMessage) ([]ResultBreak, error) {
	val := cty.NullVal(cty.DynamicPseudoType)
	if len(result) > 0 {
		v, err := jsonToCty(result)
		if err != nil {
			return nil, &RenderError{Node: node, Err: ErrInvalidResult, Detail: err.Error()}
		}
		val = v
	}
	eval := func(expr hclsyntax.Expression) (cty.Value, *RenderError) { return evalWithResult(expr, node, val) }
	var out []ResultBreak
	if mayBeTemplate(prompt) {
		if expr, diags := hclsyntax.ParseTemplate([]byte(prompt), promptFilename, hclv2.InitialPos); !diags.HasErrors() {
			v, rerr := eval(expr)
			if rerr == nil && v.IsKnown() {
				if s, err := convert.Convert(v, cty.String); err != nil || s.IsNull() {
					rerr = &RenderError{Node: node, Err: ErrTemplate,
						Detail: fmt.Sprintf("the prompt renders to %s, not a string", friendlyValue(v))}
				}
			}
			if rerr != nil {
				out = append(out, ResultBreak{Field: "prompt", Err: rerr})
			}
		}
	}
	if len(input) > 0 && mayBeTemplate(string(input)) {
		v, err := jsonToCty(input)
		if err != nil {
			return out, nil // not this result's fault; rendering reports it
		}
		// renderValue stops at the first failing field.
		if _, rerr := renderValue(v, "", eval); rerr != nil {
			out = append(out, ResultBreak{Field: rerr.Field, Err: rerr})
		}
	}
	return out, nil
}

// evalWithResult evaluates a stored template in which input.results.<node>
// is val and every other variable is unknown. A template that does not
// refer to node renders to an unknown value without error.
func evalWithResult(expr hclsyntax.Expression, node string, val cty.Value) (cty.Value, *RenderError) {
	vars := expr.Variables()
	names, _ := referencedNodes(vars)
	refers := false
	results := make(map[string]cty.Value, len(names))
	for _, n := range names {
		results[n] = cty.DynamicVal
		if n == node {
			results[n], refers = val, true
		}
	}
	if !refers {
		return cty.DynamicVal, nil
	}
	ctx := newEvalContext(map[string]cty.Value{
		"input": cty.ObjectVal(map[string]cty.Value{"results": cty.ObjectVal(results)}),
		"loop":  cty.DynamicVal,
		"each":  cty.DynamicVal,
	})
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		rerr := &RenderError{Node: node, Err: ErrTemplate, Detail: diagText(diags)}
		for _, t := range vars {
			if n, ok := resultNode(t); ok && n == node {
				rerr.Reference = traversalString(t)
				break
			}
		}
		return cty.NilVal, rerr
	}
	return v, nil
}
