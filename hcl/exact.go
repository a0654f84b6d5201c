package hcl

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// exactNumbers records an error at rng, and returns false, when the
// constant value v of field holds a number the run's record cannot keep
// exactly. The definition and plan a run records hold config, input and
// for_each values as JSON in RFC 8785 canonical form, whose numbers are
// IEEE 754 doubles (I-JSON, RFC 7493 §2.2): an integer beyond 2^53 or
// 1e400 would change, so the record refuses it and the run would be
// refused only when it starts, without saying where. validate reports it
// here, at its attribute, with the place in the value.
//
// The advice fits how the value is written: a number written out can be
// written as a string instead; one the expression computes (1e20 * 3 + 1)
// cannot, so the expression itself must change.
func (d *decoder) exactNumbers(expr hclv2.Expression, field string, v cty.Value) bool {
	path, lit, ok := inexactNumber(v)
	if ok {
		return true
	}
	fix := fmt.Sprintf("Write it as a string, for example %q, or as a number of at most 15 significant digits within ±1.8e308.", cutNumber(lit))
	expr = partAt(expr, path)
	if computes(expr) {
		fix = fmt.Sprintf("The expression computes it, so it cannot be written as a string there: make it compute a number of at most 15 significant digits within ±1.8e308, or write the value it should have in its place, as a string (for example %q).", cutNumber(lit))
	}
	d.errorAt(expr.Range(), "Number cannot be recorded exactly",
		fmt.Sprintf("%s%s is %s, which no IEEE 754 double holds exactly: the run's record keeps numbers as doubles (RFC 8785), so it would change. %s",
			field, pathString(path), cutNumber(lit), fix))
	return false
}

// partAt returns the part of expr written out at path in its value: the
// item of an object or the element of a tuple the path steps into, as far
// as expr writes them out; where it computes instead, that expression.
// The advice then fits the part that holds the number, not its siblings.
func partAt(expr hclv2.Expression, path cty.Path) hclv2.Expression {
	for _, step := range path {
		var key cty.Value
		switch s := step.(type) {
		case cty.GetAttrStep:
			key = cty.StringVal(s.Name)
		case cty.IndexStep:
			key = s.Key
		default:
			return expr
		}
		next := childAt(expr, key)
		if next == nil {
			return expr
		}
		expr = next
	}
	return expr
}

// childAt returns the item of object or tuple constructor expr at key, or
// nil when expr is neither or the key is not written out.
func childAt(expr hclv2.Expression, key cty.Value) hclv2.Expression {
	switch x := expr.(type) {
	case *hclsyntax.ObjectConsExpr:
		if key.Type() != cty.String {
			return nil
		}
		for _, item := range x.Items {
			name := hclv2.ExprAsKeyword(item.KeyExpr)
			if name == "" {
				k, diags := item.KeyExpr.Value(nil)
				if diags.HasErrors() || !k.IsKnown() || k.IsNull() || k.Type() != cty.String {
					continue
				}
				name = k.AsString()
			}
			if name == key.AsString() {
				return item.ValueExpr
			}
		}
	case *hclsyntax.TupleConsExpr:
		if key.Type() != cty.Number {
			return nil
		}
		i, acc := key.AsBigFloat().Int64()
		if acc == 0 && i >= 0 && i < int64(len(x.Exprs)) {
			return x.Exprs[i]
		}
	}
	return nil
}

// computes reports whether expr computes a value rather than writing it
// out: anything but literals, a negated literal, and objects and tuples
// of them.
func computes(expr hclv2.Expression) bool {
	e, ok := expr.(hclsyntax.Node)
	if !ok {
		return true
	}
	computed := false
	_ = hclsyntax.VisitAll(e, func(n hclsyntax.Node) hclv2.Diagnostics {
		switch x := n.(type) {
		case *hclsyntax.LiteralValueExpr, *hclsyntax.ObjectConsExpr, *hclsyntax.TupleConsExpr, *hclsyntax.ObjectConsKeyExpr,
			*hclsyntax.TemplateExpr, *hclsyntax.TemplateWrapExpr, *hclsyntax.ScopeTraversalExpr:
			// A bare key of an object is a traversal; a template is a
			// string, never the number.
		case *hclsyntax.UnaryOpExpr:
			if _, lit := x.Val.(*hclsyntax.LiteralValueExpr); !lit {
				computed = true
			}
		default:
			computed = true
		}
		return nil
	})
	return computed
}

// inexactNumber returns the path and literal of the first number in v
// that does not survive a round trip through a float64's shortest form
// with its decimal value unchanged; ok is true when there is none.
func inexactNumber(v cty.Value) (path cty.Path, lit string, ok bool) {
	ok = true
	_ = cty.Walk(v, func(p cty.Path, x cty.Value) (bool, error) {
		if !ok || x.IsNull() || !x.IsKnown() || x.Type() != cty.Number {
			return ok, nil
		}
		bf := x.AsBigFloat()
		if !exactDouble(bf) {
			path, lit, ok = p.Copy(), numberText(bf), false
		}
		return ok, nil
	})
	return path, lit, ok
}

// exactDouble reports whether f has the value of the float64 nearest it,
// compared at f's own precision, as the decimals a JSON writer prints: 0.1
// is exact (its shortest double prints "0.1"), 2^53 + 1 and 1e400 are
// not.
func exactDouble(f *big.Float) bool {
	if f.IsInf() {
		return false
	}
	g, _ := f.Float64()
	if g == 0 && f.Sign() != 0 || math.IsInf(g, 0) {
		return false // underflow to zero, or overflow
	}
	back, _, err := big.ParseFloat(strconv.FormatFloat(g, 'g', -1, 64), 10, max(f.Prec(), 64), big.ToNearestEven)
	return err == nil && back.Cmp(f) == 0
}

// pathString writes a path inside a value as attribute steps: .key (or
// ["key"] for a key that is not an identifier) and [N].
func pathString(p cty.Path) string {
	var b strings.Builder
	for _, st := range p {
		switch s := st.(type) {
		case cty.GetAttrStep:
			writeKey(&b, s.Name)
		case cty.IndexStep:
			switch s.Key.Type() {
			case cty.String:
				writeKey(&b, s.Key.AsString())
			case cty.Number:
				b.WriteString("[" + s.Key.AsBigFloat().Text('f', -1) + "]")
			}
		}
	}
	return b.String()
}

func writeKey(b *strings.Builder, k string) {
	if hclsyntax.ValidIdentifier(k) {
		b.WriteString("." + k)
		return
	}
	fmt.Fprintf(b, "[%q]", k)
}

// numberText writes f as a JSON writer would (every digit of an
// integer), or in exponent form when that is long.
func numberText(f *big.Float) string {
	if s := f.Text('f', -1); len(s) <= 40 {
		return s
	}
	return f.Text('g', 20)
}

// cutNumber bounds a number's text quoted in a diagnostic (1e400 written
// out has 401 digits).
func cutNumber(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:20] + "…" + s[len(s)-8:]
}
