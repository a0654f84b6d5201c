package hcl

import (
	"encoding/json"
	"fmt"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// ResultBreak is one template of a node or loop that cannot render with
// a given result of another unit (ResultBreaks).
type ResultBreak struct {
	// Field is "prompt", "for_each", "until", or the input field as
	// RenderError.Field names it ("command[1]", "(input)" for the whole
	// input).
	Field string
	// Err says why: a *RenderError.
	Err error
}

// ResultRead says where the templates ResultBreaks checks find the result
// in question (docs/run-file.md, "Templates"):
//   - a node's result: input.results.<Vertex> (Key "");
//   - a for_each instance's result, or a loop member's read from outside
//     its loop: input.results.<Vertex>.<Key>, the vertex's result being an
//     object with a field per instance or member (Keys, Key among them);
//   - a loop member's result in its loop's next round: loop.previous.<Key>
//     with loop.round = PreviousRound, loop.previous having a field per
//     member (Keys); Vertex is then "".
//
// Fields other than Key, and every other variable, are unknown when the
// templates are checked.
type ResultRead struct {
	// Node names the unit whose result it is in errors (RenderError.Node).
	Node string
	// Vertex is the id templates name after input.results.
	Vertex string
	// Key is the result's field of the vertex's object, or of
	// loop.previous; "" when input.results.<Vertex> is the result.
	Key string
	// Keys are every field of that object (the instances' keys or the
	// loop's member ids).
	Keys []string
	// PreviousRound is loop.round of the round that reads the result as
	// loop.previous.<Key>; 0 when it is read through input.results.
	PreviousRound int
}

// Templates are the stored templates of one vertex or loop member that
// ResultBreaks checks; any may be empty.
type Templates struct {
	// Prompt and Input are a node's (NodeDef.Prompt, NodeDef.Input).
	Prompt string
	Input  json.RawMessage
	// ForEach is a dynamic for_each's source (ForEachDef.Source).
	ForEach string
	// Until is a loop's until condition (LoopDef.Until).
	Until string
}

// ResultBreaks reports which of t's templates read the result in question
// where read says and cannot render when that result is result (JSON;
// empty is null), whatever the other results, loop and each variables
// turn out to be: those render as unknown values, so only what follows
// from result itself fails — `${input.results.draft}` in a prompt, or
// `.text` of it, with a null result; a for_each source that renders to
// null or to something that is not its items; an until that renders to
// something that is not a bool. Templates that do not read the result
// are not rendered. The error is a *RenderError wrapping ErrInvalidResult
// when result is not JSON.
func ResultBreaks(read ResultRead, result json.RawMessage, t Templates) ([]ResultBreak, error) {
	val := cty.NullVal(cty.DynamicPseudoType)
	if len(result) > 0 {
		v, err := jsonToCty(result)
		if err != nil {
			return nil, &RenderError{Node: read.Node, Err: ErrInvalidResult, Detail: err.Error()}
		}
		val = v
	}
	c := resultCheck{read: read, val: val}
	var out []ResultBreak
	for _, tmpl := range []struct {
		field, src string
		check      func(cty.Value) string
	}{
		{"prompt", t.Prompt, promptProblem},
		{"for_each", t.ForEach, forEachProblem},
		{"until", t.Until, untilProblem},
	} {
		if !mayBeTemplate(tmpl.src) {
			continue
		}
		expr, diags := hclsyntax.ParseTemplate([]byte(tmpl.src), promptFilename, hclv2.InitialPos)
		if diags.HasErrors() {
			continue // not this result's fault; rendering reports it
		}
		if rerr := c.valueBreaks(expr, tmpl.check); rerr != nil {
			out = append(out, ResultBreak{Field: tmpl.field, Err: rerr})
		}
	}
	if len(t.Input) > 0 && mayBeTemplate(string(t.Input)) {
		v, err := jsonToCty(t.Input)
		if err != nil {
			return out, nil // not this result's fault; rendering reports it
		}
		// renderValue stops at the first failing field.
		if _, rerr := renderValue(v, "", c.evalOwn); rerr != nil {
			out = append(out, ResultBreak{Field: rerr.Field, Err: rerr})
		}
	}
	return out, nil
}

// promptProblem, forEachProblem and untilProblem say why a known value
// cannot be a prompt, a for_each's items or an until condition; "" when
// it can.
func promptProblem(v cty.Value) string {
	if s, err := convert.Convert(v, cty.String); err != nil || s.IsNull() {
		return fmt.Sprintf("the prompt renders to %s, not a string", friendlyValue(v))
	}
	return ""
}

func forEachProblem(v cty.Value) string {
	if !v.IsNull() && !v.IsWhollyKnown() {
		return "" // its items depend on what is not known yet
	}
	if _, err := forEachItems(v); err != nil {
		return err.Error()
	}
	return ""
}

func untilProblem(v cty.Value) string {
	if _, err := convertBool(v); err != nil {
		return fmt.Sprintf("the until condition renders to %s, not a bool", friendlyValue(v))
	}
	return ""
}

// resultCheck evaluates templates with one result known (val, where read
// says) and everything else unknown.
type resultCheck struct {
	read ResultRead
	val  cty.Value
}

// object is the result's enclosing object: val at Key, the other Keys
// unknown.
func (c resultCheck) object(val cty.Value) cty.Value {
	fields := make(map[string]cty.Value, len(c.read.Keys)+1)
	for _, k := range c.read.Keys {
		fields[k] = cty.DynamicVal
	}
	fields[c.read.Key] = val
	return cty.ObjectVal(fields)
}

// reads reports whether traversal t may reach the result: through
// input.results.<Vertex>, or through loop (loop.previous.<Key>, or the
// whole loop or loop.previous object).
func (c resultCheck) reads(t hclv2.Traversal) bool {
	if c.read.PreviousRound > 0 {
		if t.RootName() != "loop" {
			return false
		}
		if len(t) < 2 {
			return true
		}
		if name, ok := stepName(t[1]); !ok || name != "previous" {
			return false
		}
		if len(t) < 3 {
			return true
		}
		name, ok := stepName(t[2])
		return !ok || name == c.read.Key
	}
	n, ok := resultNode(t)
	return ok && n == c.read.Vertex
}

// valueBreaks evaluates expr and checks its value with problem; it
// returns the failure, if any, that the result itself causes.
func (c resultCheck) valueBreaks(expr hclsyntax.Expression, problem func(cty.Value) string) *RenderError {
	check := func(val cty.Value) *RenderError {
		v, rerr := c.eval(expr, val)
		if rerr == nil && v.IsKnown() {
			if detail := problem(v); detail != "" {
				rerr = &RenderError{Node: c.read.Node, Err: ErrTemplate, Detail: detail, Reference: traversalString(c.ref(expr))}
			}
		}
		return rerr
	}
	rerr := check(c.val)
	if rerr != nil && check(cty.DynamicVal) != nil {
		return nil // it fails whatever the result is: not this result's doing
	}
	return rerr
}

// evalOwn evaluates expr with the result in question; a failure that
// happens whatever the result is is not reported.
func (c resultCheck) evalOwn(expr hclsyntax.Expression) (cty.Value, *RenderError) {
	v, rerr := c.eval(expr, c.val)
	if rerr != nil {
		if _, again := c.eval(expr, cty.DynamicVal); again != nil {
			return cty.DynamicVal, nil
		}
	}
	return v, rerr
}

// ref returns the first reference of expr that may reach the result, or
// nil.
func (c resultCheck) ref(expr hclsyntax.Expression) hclv2.Traversal {
	for _, t := range expr.Variables() {
		if c.reads(t) {
			return t
		}
	}
	return nil
}

// eval evaluates expr with the result in question being val and every
// other variable unknown. A template that does not read the result
// renders to an unknown value without error.
func (c resultCheck) eval(expr hclsyntax.Expression, val cty.Value) (cty.Value, *RenderError) {
	ref := c.ref(expr)
	if ref == nil {
		return cty.DynamicVal, nil
	}
	variables := map[string]cty.Value{"input": cty.DynamicVal, "loop": cty.DynamicVal, "each": cty.DynamicVal}
	switch {
	case c.read.PreviousRound > 0:
		variables["loop"] = cty.ObjectVal(map[string]cty.Value{
			"round":    cty.NumberIntVal(int64(c.read.PreviousRound)),
			"findings": cty.UnknownVal(cty.String),
			"previous": c.object(val),
		})
	default:
		names, _ := referencedNodes(expr.Variables())
		results := make(map[string]cty.Value, len(names))
		for _, n := range names {
			results[n] = cty.DynamicVal
		}
		results[c.read.Vertex] = val
		if c.read.Key != "" {
			results[c.read.Vertex] = c.object(val)
		}
		variables["input"] = cty.ObjectVal(map[string]cty.Value{"results": cty.ObjectVal(results)})
	}
	v, diags := expr.Value(newEvalContext(variables))
	if diags.HasErrors() {
		return cty.NilVal, &RenderError{Node: c.read.Node, Err: ErrTemplate, Detail: diagText(diags), Reference: traversalString(ref)}
	}
	return v, nil
}
