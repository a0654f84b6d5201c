package hcl

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"time"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// decoder carries the state of one Decode or DecodeLock call. It is never
// shared between calls.
type decoder struct {
	filename string
	dir      string
	src      []byte
	// adapterRefs are the lane targets that must name an engine plugin.
	adapterRefs []adapterRef
	// launched are the lanes with the targets calls go to, for checkProviders.
	launched []laneTargets
	// memorySet says, per decoded plugin block in order, whether its
	// confine block sets memory (else limits.plugin_memory applies).
	memorySet []bool
	diags     hclv2.Diagnostics
	// scope is what the templates being decoded may refer to.
	scope tmplScope
	// storageDirAt and rootAt are where storage.directory and
	// workspace.root are written, when they are, for checks of the two
	// together.
	storageDirAt, rootAt *hclv2.Range
}

// errorAt records an error diagnostic.
func (d *decoder) errorAt(subject hclv2.Range, summary, detail string) {
	d.diags = append(d.diags, &hclv2.Diagnostic{
		Severity: hclv2.DiagError,
		Summary:  summary,
		Detail:   detail,
		Subject:  subject.Ptr(),
	})
}

// warnAt records a warning diagnostic.
func (d *decoder) warnAt(subject hclv2.Range, summary, detail string) {
	d.diags = append(d.diags, &hclv2.Diagnostic{
		Severity: hclv2.DiagWarning,
		Summary:  summary,
		Detail:   detail,
		Subject:  subject.Ptr(),
	})
}

// static evaluates an attribute whose value must be a constant. It returns
// ok == false when evaluation failed (a diagnostic is recorded) or when the
// value is null, which every attribute treats as "not set".
func (d *decoder) static(a *hclv2.Attribute) (cty.Value, bool) {
	v, ok := d.evaluate(a)
	if !ok || !d.exactNumbers(a.Expr, a.Name, v) {
		return cty.NilVal, false
	}
	return v, true
}

// evaluate is static without the check that the record keeps the value's
// numbers exactly, for callers that check a number's range first.
func (d *decoder) evaluate(a *hclv2.Attribute) (cty.Value, bool) {
	if vars := a.Expr.Variables(); len(vars) > 0 {
		d.errorAt(vars[0].SourceRange(), "References are not allowed here",
			fmt.Sprintf("The value of %s must be a constant, but it refers to %s. References to results (input.results.<node>) are only allowed in a node's prompt and input; write a literal value here.", a.Name, traversalString(vars[0])))
		return cty.NilVal, false
	}
	v, diags := a.Expr.Value(newEvalContext(nil))
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() || v.IsNull() {
		return cty.NilVal, false
	}
	if !v.IsWhollyKnown() {
		d.errorAt(a.Expr.Range(), "Value not known at decode time",
			fmt.Sprintf("The value of %s must be a constant that is known when the run file is read.", a.Name))
		return cty.NilVal, false
	}
	return v, true
}

// maxRecordedInt is the largest whole number the run's record keeps
// exactly: its numbers are IEEE 754 doubles (RFC 8785).
const maxRecordedInt = 1<<53 - 1

// typeError records that an attribute has the wrong type.
func (d *decoder) typeError(a *hclv2.Attribute, got cty.Type, want string) {
	d.errorAt(a.Expr.Range(), "Incorrect attribute value type",
		fmt.Sprintf("The value of %s must be %s; got %s.", a.Name, want, got.FriendlyName()))
}

// str decodes a string attribute. want describes the expected value for
// the fix text, e.g. `a path, for example path = "bin/engine"`.
func (d *decoder) str(a *hclv2.Attribute, want string) (string, bool) {
	v, ok := d.static(a)
	if !ok {
		return "", false
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil || s.IsNull() {
		d.typeError(a, v.Type(), want)
		return "", false
	}
	return s.AsString(), true
}

// nonEmptyStr decodes a string attribute that must not be empty.
func (d *decoder) nonEmptyStr(a *hclv2.Attribute, want string) (string, bool) {
	s, ok := d.str(a, want)
	if !ok {
		return "", false
	}
	if s == "" {
		d.errorAt(a.Expr.Range(), "Empty value", fmt.Sprintf("The value of %s must not be empty; set it to %s.", a.Name, want))
		return "", false
	}
	return s, true
}

// enum decodes a string attribute restricted to allowed values.
func (d *decoder) enum(a *hclv2.Attribute, allowed ...string) (string, bool) {
	s, ok := d.str(a, "one of "+quoteList(allowed))
	if !ok {
		return "", false
	}
	for _, x := range allowed {
		if s == x {
			return s, true
		}
	}
	d.errorAt(a.Expr.Range(), fmt.Sprintf("Invalid %s %q", a.Name, s),
		fmt.Sprintf("The value of %s must be one of %s.%s", a.Name, quoteList(allowed), suggestOnly(s, allowed)))
	return "", false
}

// suggestOnly returns ` Did you mean "x"?` when a candidate is close, else "".
func suggestOnly(given string, candidates []string) string {
	if s := suggest(given, candidates); s != "" {
		return fmt.Sprintf(" Did you mean %q?", s)
	}
	return ""
}

// boolean decodes a bool attribute.
func (d *decoder) boolean(a *hclv2.Attribute) (bool, bool) {
	v, ok := d.static(a)
	if !ok {
		return false, false
	}
	b, err := convert.Convert(v, cty.Bool)
	if err != nil || b.IsNull() {
		d.typeError(a, v.Type(), "true or false")
		return false, false
	}
	return b.True(), true
}

// integer decodes a whole-number attribute from min to maxRecordedInt.
func (d *decoder) integer(a *hclv2.Attribute, min int64, example string) (int64, bool) {
	return d.integerIn(a, min, maxRecordedInt, example)
}

// integerIn decodes a whole-number attribute from min to max. The value is
// checked against that range first, however it is written (99999999999999999999,
// 1e20 * 1, -1e20): a value outside it is too large or too small, naming
// the range, before it is checked to be a whole number the record keeps
// exactly.
func (d *decoder) integerIn(a *hclv2.Attribute, min, max int64, example string) (int64, bool) {
	v, ok := d.evaluate(a)
	if !ok {
		return 0, false
	}
	n, err := convert.Convert(v, cty.Number)
	if err != nil || n.IsNull() {
		d.typeError(a, v.Type(), "a whole number, for example "+example)
		return 0, false
	}
	f := n.AsBigFloat()
	if !d.inRange(a, f, min, max, example) || !d.exactNumbers(a.Expr, a.Name, n) {
		return 0, false
	}
	i, ok := wholeNumber(f)
	if !ok {
		d.errorAt(a.Expr.Range(), "Invalid number",
			fmt.Sprintf("The value of %s must be a whole number, for example %s; got %s.", a.Name, example, f.Text('g', 20)))
		return 0, false
	}
	return i, true
}

// inRange records that a's value f is too large or too small, naming the
// range min to max, and returns false when f is outside it.
func (d *decoder) inRange(a *hclv2.Attribute, f *big.Float, min, max int64, example string) bool {
	var what string
	switch {
	case f.Cmp(new(big.Float).SetInt64(max)) > 0:
		what = "too large"
	case f.Cmp(new(big.Float).SetInt64(min)) < 0:
		what = "too small"
	default:
		return true
	}
	d.errorAt(a.Expr.Range(), fmt.Sprintf("%s is %s", a.Name, what),
		fmt.Sprintf("The value of %s must be a whole number from %d to %d; got %s. Set it to a value such as %s.", a.Name, min, max, cutNumber(numberText(f)), example))
	return false
}

// intAttr is integer narrowed to int: from min to math.MaxInt32.
func (d *decoder) intAttr(a *hclv2.Attribute, min int64, example string) (int, bool) {
	return d.intIn(a, min, math.MaxInt32, example)
}

// intIn is integerIn narrowed to int; max is at most math.MaxInt32.
func (d *decoder) intIn(a *hclv2.Attribute, min, max int64, example string) (int, bool) {
	i, ok := d.integerIn(a, min, max, example)
	return int(i), ok
}

// wholeNumber converts f to an int64 when it is a whole number in range.
func wholeNumber(f *big.Float) (int64, bool) {
	if f.IsInf() || !f.IsInt() {
		return 0, false
	}
	i, acc := f.Int64()
	return i, acc == big.Exact
}

// durationSyntax matches what time.ParseDuration reads, whatever its
// size: a string it matches that does not parse has overflowed.
var durationSyntax = regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)

// durationPolicy says which durations an attribute accepts.
type durationPolicy int

const (
	positiveDuration    durationPolicy = iota // > 0
	nonNegativeDuration                       // >= 0
)

// duration decodes a Go duration string ("30m", "5s").
func (d *decoder) duration(a *hclv2.Attribute, policy durationPolicy, example string) (time.Duration, bool) {
	s, ok := d.str(a, fmt.Sprintf("a duration string, for example %s = %q", a.Name, example))
	if !ok {
		return 0, false
	}
	dur, err := time.ParseDuration(s)
	if err != nil && durationSyntax.MatchString(s) {
		// Well formed, but beyond what a time.Duration holds.
		d.errorAt(a.Expr.Range(), fmt.Sprintf("Duration %q is too long", s),
			fmt.Sprintf("The value of %s must be at most %s (about 292 years); use a value such as %q.", a.Name, time.Duration(math.MaxInt64), example))
		return 0, false
	}
	if err != nil {
		d.errorAt(a.Expr.Range(), fmt.Sprintf("Invalid duration %q", s),
			fmt.Sprintf("The value of %s must be a Go duration string: a number with a unit suffix (ns, us, ms, s, m, h), optionally chained, for example %q or \"1h30m\".", a.Name, example))
		return 0, false
	}
	switch {
	case dur < 0:
		d.errorAt(a.Expr.Range(), fmt.Sprintf("Negative duration %q", s),
			fmt.Sprintf("The value of %s must not be negative; use a value such as %q.", a.Name, example))
		return 0, false
	case dur == 0 && policy == positiveDuration:
		d.errorAt(a.Expr.Range(), fmt.Sprintf("Zero duration %q", s),
			fmt.Sprintf("The value of %s must be greater than zero; use a value such as %q, or remove the attribute to use the default.", a.Name, example))
		return 0, false
	}
	return dur, true
}

// strList decodes a list of strings, returning each element's range (the
// whole expression's range when the list is not written as a literal).
func (d *decoder) strList(a *hclv2.Attribute, want string) ([]string, []hclv2.Range, bool) {
	v, ok := d.static(a)
	if !ok {
		return nil, nil, false
	}
	l, err := convert.Convert(v, cty.List(cty.String))
	if err != nil || l.IsNull() {
		d.typeError(a, v.Type(), want)
		return nil, nil, false
	}
	var elems []hclsyntax.Expression
	if tc, isTuple := a.Expr.(*hclsyntax.TupleConsExpr); isTuple {
		elems = tc.Exprs
	}
	out := make([]string, 0, l.LengthInt())
	ranges := make([]hclv2.Range, 0, l.LengthInt())
	for i, e := range l.AsValueSlice() {
		rng := a.Expr.Range()
		if len(elems) == l.LengthInt() {
			rng = elems[i].Range()
		}
		if e.IsNull() {
			d.errorAt(rng, "Null list element", fmt.Sprintf("The elements of %s must be strings; remove the null.", a.Name))
			return nil, nil, false
		}
		out = append(out, e.AsString())
		ranges = append(ranges, rng)
	}
	return out, ranges, true
}

// strMap decodes an object or map whose values are strings.
func (d *decoder) strMap(a *hclv2.Attribute, want string) (map[string]string, bool) {
	v, ok := d.static(a)
	if !ok {
		return nil, false
	}
	m, err := convert.Convert(v, cty.Map(cty.String))
	if err != nil || m.IsNull() {
		d.typeError(a, v.Type(), want)
		return nil, false
	}
	out := make(map[string]string, m.LengthInt())
	for it := m.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if e.IsNull() {
			d.errorAt(a.Expr.Range(), "Null map value", fmt.Sprintf("The value for %q in %s must be a string; remove the null.", k.AsString(), a.Name))
			return nil, false
		}
		out[k.AsString()] = e.AsString()
	}
	return out, true
}

// objectItem is one `key = value` item of an object constructor.
type objectItem struct {
	Key      string
	KeyRange hclv2.Range
	Value    hclsyntax.Expression
}

// objectItems returns the items of an object constructor in source order,
// recording diagnostics for non-constant and duplicate keys. ok is false
// when expr is not an object constructor (no diagnostic is recorded; the
// caller explains what it wanted).
func (d *decoder) objectItems(expr hclv2.Expression, what string) ([]objectItem, bool) {
	oc, isObj := expr.(*hclsyntax.ObjectConsExpr)
	if !isObj {
		return nil, false
	}
	seen := map[string]hclv2.Range{}
	items := make([]objectItem, 0, len(oc.Items))
	for _, it := range oc.Items {
		key := hclv2.ExprAsKeyword(it.KeyExpr)
		if key == "" {
			if len(it.KeyExpr.Variables()) > 0 {
				d.errorAt(it.KeyExpr.Range(), "Invalid object key", fmt.Sprintf("Keys in %s must be constant names or strings, not references.", what))
				continue
			}
			kv, diags := it.KeyExpr.Value(nil)
			d.diags = append(d.diags, diags...)
			if diags.HasErrors() {
				continue
			}
			ks, err := convert.Convert(kv, cty.String)
			if err != nil || ks.IsNull() || !ks.IsKnown() {
				d.errorAt(it.KeyExpr.Range(), "Invalid object key", fmt.Sprintf("Keys in %s must be strings.", what))
				continue
			}
			key = ks.AsString()
		}
		if prev, dup := seen[key]; dup {
			d.errorAt(it.KeyExpr.Range(), fmt.Sprintf("Duplicate key %q", key),
				fmt.Sprintf("The key %q is already set in %s at %s; remove one of them.", key, what, prev.String()))
			continue
		}
		seen[key] = it.KeyExpr.Range()
		items = append(items, objectItem{Key: key, KeyRange: it.KeyExpr.Range(), Value: it.ValueExpr})
	}
	return items, true
}
