package hcl

import (
	"encoding/json"
	"fmt"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// input decodes a node input to JSON. Strings in it are stored as
// template-mode source: constant strings escaped, templates converted.
func (d *decoder) input(a *hclv2.Attribute) (json.RawMessage, []resultRef, bool) {
	v, refs, ok := d.inputValue(a.Expr.(hclsyntax.Expression), "input")
	if !ok || v.IsNull() {
		return nil, refs, ok
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		d.errorAt(a.Expr.Range(), "Invalid input", fmt.Sprintf("input must be a value that can be written as JSON (%v).", err))
		return nil, refs, false
	}
	return b, refs, true
}

// inputValue decodes one value of an input; field is its path.
func (d *decoder) inputValue(expr hclsyntax.Expression, field string) (cty.Value, []resultRef, bool) {
	switch e := expr.(type) {
	case *hclsyntax.ObjectConsExpr:
		items, _ := d.objectItems(e, field)
		attrs := make(map[string]cty.Value, len(items))
		var refs []resultRef
		ok := len(items) == len(e.Items)
		for _, it := range items {
			v, r, k := d.inputValue(it.Value, joinField(field, it.Key))
			refs = append(refs, r...)
			ok = ok && k
			attrs[it.Key] = v
		}
		if !ok {
			return cty.NilVal, refs, false
		}
		return cty.ObjectVal(attrs), refs, true
	case *hclsyntax.TupleConsExpr:
		elems := make([]cty.Value, 0, len(e.Exprs))
		var refs []resultRef
		ok := true
		for i, x := range e.Exprs {
			v, r, k := d.inputValue(x, fmt.Sprintf("%s[%d]", field, i))
			refs = append(refs, r...)
			ok = ok && k
			elems = append(elems, v)
		}
		if !ok {
			return cty.NilVal, refs, false
		}
		return cty.TupleVal(elems), refs, true
	}
	vars := expr.Variables()
	if len(vars) == 0 {
		v, diags := expr.Value(newEvalContext(nil))
		d.diags = append(d.diags, diags...)
		if diags.HasErrors() {
			return cty.NilVal, nil, false
		}
		if !v.IsWhollyKnown() {
			d.errorAt(expr.Range(), "Value not known at decode time", fmt.Sprintf("%s must be a constant or a template referring to input.results.", field))
			return cty.NilVal, nil, false
		}
		if !d.exactNumbers(expr, field, v) {
			return cty.NilVal, nil, false
		}
		return escapeValue(v), nil, true
	}
	refs, refsOK := d.templateRefs(vars, "input")
	if !refsOK || !d.checkTemplate(expr) {
		return cty.NilVal, refs, false
	}
	src, refs, ok := d.storedTemplate(expr, refs)
	if !ok {
		return cty.NilVal, refs, false
	}
	return cty.StringVal(src), refs, true
}

// escapeValue escapes every string in a constant input value so that
// RenderInput renders it to itself.
func escapeValue(v cty.Value) cty.Value {
	out, err := cty.Transform(v, func(_ cty.Path, v cty.Value) (cty.Value, error) {
		if v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
			return cty.StringVal(escapeLiteral(v.AsString())), nil
		}
		return v, nil
	})
	if err != nil {
		return v
	}
	return out
}
