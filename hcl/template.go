package hcl

import (
	"fmt"
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
