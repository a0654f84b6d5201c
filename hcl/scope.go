package hcl

import (
	"encoding/json"
	"fmt"
	"sort"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// Scope is what a stored template sees when it renders: the results of
// the nodes it may read, and — inside a loop's member or its until — the
// loop's variables, or — in a for_each instance — its item
// (docs/run-file.md, "Templates").
type Scope struct {
	// Results are node results by id, as JSON; a loop's entry is an
	// object of its members' results, a for_each node's an object by key.
	Results map[string]json.RawMessage
	// Loop is set inside a loop: loop.round, loop.findings,
	// loop.previous.
	Loop *LoopVars
	// Each is set in a for_each instance: each.key, each.value.
	Each *EachVars
}

// LoopVars are a loop member's template variables.
type LoopVars struct {
	// Round is loop.round, 1-based.
	Round int
	// Findings is loop.findings: the last failed review's findings as
	// text, "" before any.
	Findings string
	// Previous is loop.previous: each member's result in the previous
	// round by member id, as JSON; a member without one (round 1, or a
	// member that did not run) must be present with a nil value (null).
	Previous map[string]json.RawMessage
}

// EachVars are a for_each instance's template variables.
type EachVars struct {
	// Key is each.key.
	Key string
	// Value is each.value as JSON (for a list of strings, the key as a
	// JSON string).
	Value json.RawMessage
}

// variables adds loop and each to a template's variables.
func (sc Scope) variables(vars map[string]cty.Value) *RenderError {
	if l := sc.Loop; l != nil {
		prev := make(map[string]cty.Value, len(l.Previous))
		for id, raw := range l.Previous {
			v := cty.NullVal(cty.DynamicPseudoType)
			if len(raw) > 0 && string(raw) != "null" {
				var err error
				if v, err = jsonToCty(raw); err != nil {
					return &RenderError{Node: id, Err: ErrInvalidResult, Detail: "loop.previous: " + err.Error()}
				}
			}
			prev[id] = v
		}
		vars["loop"] = cty.ObjectVal(map[string]cty.Value{
			"round":    cty.NumberIntVal(int64(l.Round)),
			"findings": cty.StringVal(l.Findings),
			"previous": cty.ObjectVal(prev),
		})
	}
	if e := sc.Each; e != nil {
		v := cty.StringVal(e.Key)
		if len(e.Value) > 0 {
			var err error
			if v, err = jsonToCty(e.Value); err != nil {
				return &RenderError{Err: ErrInvalidResult, Detail: "each.value: " + err.Error()}
			}
		}
		vars["each"] = cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(e.Key), "value": v})
	}
	return nil
}

// value renders stored template source src to a value.
func (sc Scope) value(src string) (cty.Value, *RenderError) {
	expr, diags := hclsyntax.ParseTemplate([]byte(src), promptFilename, hclv2.InitialPos)
	if diags.HasErrors() {
		return cty.NilVal, &RenderError{Err: ErrTemplate, Detail: diagText(diags)}
	}
	return evalTemplate(expr, sc)
}

// Condition renders a loop's stored until condition (Loop.Until) and
// returns its value. Errors are *RenderError: as RenderPrompt's, or
// wrapping ErrTemplate when the value is not a bool (a string "true" or
// "false" converts, as in HCL).
func (sc Scope) Condition(src string) (bool, error) {
	v, rerr := sc.value(src)
	if rerr != nil {
		return false, rerr
	}
	b, err := convertBool(v)
	if err != nil {
		return false, &RenderError{Err: ErrTemplate, Detail: fmt.Sprintf("the until condition rendered to %s, not a bool", friendlyValue(v))}
	}
	return b, nil
}

func convertBool(v cty.Value) (bool, error) {
	if v.IsNull() || !v.IsKnown() {
		return false, fmt.Errorf("not a bool")
	}
	if v.Type() == cty.String {
		switch v.AsString() {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return false, fmt.Errorf("not a bool")
	}
	if v.Type() != cty.Bool {
		return false, fmt.Errorf("not a bool")
	}
	return v.True(), nil
}

// Items renders a dynamic for_each's stored source (ForEach.Source) and
// returns its items: a list (or set) of strings gives one item per string,
// its key and value alike, in order; an object or map one per entry, in
// key order, each.value being the entry. Errors are *RenderError: as
// RenderPrompt's, or wrapping ErrForEachItems for any other value, a null
// or non-string element, or a string listed twice.
func (sc Scope) Items(src string) ([]ForEachItem, error) {
	v, rerr := sc.value(src)
	if rerr != nil {
		return nil, rerr
	}
	items, err := forEachItems(v)
	if err != nil {
		return nil, &RenderError{Err: ErrForEachItems, Detail: err.Error()}
	}
	return items, nil
}

// forEachItems reads a for_each value (static or rendered).
func forEachItems(v cty.Value) ([]ForEachItem, error) {
	if v.IsNull() || !v.IsWhollyKnown() {
		return nil, fmt.Errorf("for_each is %s; it must be a list of strings or an object", friendlyValue(v))
	}
	ty := v.Type()
	switch {
	case ty.IsListType() || ty.IsTupleType() || ty.IsSetType():
		items := make([]ForEachItem, 0, v.LengthInt())
		seen := map[string]int{}
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			_, e := it.Element()
			if e.IsNull() || e.Type() != cty.String {
				return nil, fmt.Errorf("element %d of for_each is %s; the elements of a list must be strings (the instances' keys)", i, friendlyValue(e))
			}
			k := e.AsString()
			if j, dup := seen[k]; dup {
				return nil, fmt.Errorf("elements %d and %d of for_each are both %q; keys must be unique", j, i, k)
			}
			seen[k] = i
			b, _ := json.Marshal(k)
			items = append(items, ForEachItem{Key: k, Value: b})
		}
		return items, nil
	case ty.IsObjectType() || ty.IsMapType():
		keys := make([]string, 0, v.LengthInt())
		vals := map[string]cty.Value{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			keys = append(keys, k.AsString())
			vals[k.AsString()] = e
		}
		sort.Strings(keys)
		items := make([]ForEachItem, 0, len(keys))
		for _, k := range keys {
			e := vals[k]
			b, err := ctyjson.Marshal(e, e.Type())
			if err != nil {
				return nil, fmt.Errorf("the value of %q cannot be written as JSON: %v", k, err)
			}
			items = append(items, ForEachItem{Key: k, Value: b})
		}
		return items, nil
	}
	return nil, fmt.Errorf("for_each is %s; it must be a list of strings or an object", friendlyValue(v))
}
