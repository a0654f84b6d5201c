package hcl

import (
	"encoding/json"
	"strings"
	"testing"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// equivalenceResults are the results templates are evaluated against when
// checking that stored template source renders like the original.
var equivalenceResults = map[string]json.RawMessage{
	"a":    json.RawMessage(`"alpha"`),
	"b":    json.RawMessage(`{"stdout":"  out\n","code":0,"list":["x","y"],"ok":true}`),
	"num":  json.RawMessage(`42`),
	"null": json.RawMessage(`null`),
}

// evalOriginal evaluates an attribute expression the way HCL would.
func evalOriginal(t *testing.T, expr hclsyntax.Expression) (cty.Value, bool) {
	t.Helper()
	vals := map[string]cty.Value{}
	for n, raw := range equivalenceResults {
		v, err := jsonToCty(raw)
		if err != nil {
			t.Fatal(err)
		}
		vals[n] = v
	}
	ctx := newEvalContext(map[string]cty.Value{
		"input": cty.ObjectVal(map[string]cty.Value{"results": cty.ObjectVal(vals)}),
	})
	v, diags := expr.Value(ctx)
	return v, !diags.HasErrors()
}

// checkEquivalent converts the expression of attribute x in src to stored
// template source and checks it renders exactly like the original. It
// returns false when src is not a usable case (does not parse).
func checkEquivalent(t *testing.T, src string) bool {
	t.Helper()
	file, diags := hclsyntax.ParseConfig([]byte(src), "eq.hcl", hclv2.InitialPos)
	if diags.HasErrors() {
		return false
	}
	attr := file.Body.(*hclsyntax.Body).Attributes["x"]
	if attr == nil {
		return false
	}
	d := &decoder{filename: "eq.hcl", src: []byte(src)}
	stored, err := d.templateSource(attr.Expr)
	if err != nil {
		t.Fatalf("templateSource(%q): %v", src, err)
	}
	want, wantOK := evalOriginal(t, attr.Expr)
	expr, pdiags := hclsyntax.ParseTemplate([]byte(stored), promptFilename, hclv2.InitialPos)
	if pdiags.HasErrors() {
		t.Fatalf("stored source %q of %q does not parse: %v", stored, src, pdiags)
	}
	got, rerr := evalTemplate(expr, Scope{Results: equivalenceResults})
	gotOK := rerr == nil
	if wantOK != gotOK {
		t.Fatalf("source %q stored as %q: original ok=%v, stored ok=%v (%v)", src, stored, wantOK, gotOK, rerr)
	}
	if wantOK && !got.RawEquals(want) {
		t.Fatalf("source %q stored as %q renders %#v, original %#v", src, stored, got, want)
	}
	return true
}

func TestTemplateSourceEquivalence(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		src  string
	}{
		{"plain interpolation", `x = "Summarise: ${input.results.a}"`},
		{"passthrough keeps type", `x = "${input.results.b}"`},
		{"number passthrough", `x = "${input.results.num}"`},
		{"backslash escapes", `x = "a\n\tb\"c\\d ${input.results.a}\u00e9"`},
		{"escaped sequences", `x = "$${not} %%{ not } ${input.results.a}"`},
		{"dollar before interpolation", `x = "\u0024${input.results.a}"`},
		{"percent before directive", `x = "\u0025%{ if true }y%{ endif }${input.results.a}"`},
		{"strip markers", `x = "a   ${~ input.results.a ~}   b"`},
		{"strip makes passthrough-like", `x = "   ${~ input.results.num}"`},
		{"if directive", `x = "%{ if input.results.b.ok }yes%{ else }no%{ endif } ${input.results.a}"`},
		{"if without else", `x = "%{ if input.results.b.ok ~} yes %{~ endif }"`},
		{"for directive", `x = "%{ for i, v in input.results.b.list }${i}=${v};%{ endfor }"`},
		{"nested string", `x = "${upper("q${input.results.a}\n")}"`},
		{"function and index", `x = "${join(",", input.results.b.list)} ${input.results["a"]}"`},
		{"conditional interpolation", `x = "${input.results.b.ok ? "y" : "n"}"`},
		{"object in interpolation", `x = "${jsonencode({k = input.results.a})}"`},
		{"heredoc", "x = <<EOT\nline ${input.results.a}\n  $${lit} \\n\nEOT\n"},
		{"flush heredoc", "x = <<-EOT\n    one ${input.results.a}\n      two\n    %{ if true ~}\n    three\n    %{~ endif }\n    EOT\n"},
		{"flush heredoc interpolation first", "x = <<-EOT\n    ${input.results.a}\n  two\n    EOT\n"},
		{"bare traversal", `x = input.results.b.stdout`},
		{"bare function", `x = jsonencode(input.results.b)`},
		{"parenthesised", `x = (input.results.a)`},
		{"missing attribute errors", `x = "${input.results.b.nope}"`},
		{"null interpolation errors", `x = "${input.results.null}"`},
		{"try", `x = "${try(input.results.b.nope, "fallback")}"`},
		{"empty", `x = ""`},
		{"unicode", `x = "héllo ${input.results.a} 世界"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if !checkEquivalent(t, tc.src) {
				t.Fatalf("case does not parse: %q", tc.src)
			}
		})
	}
}

func TestEscapeLiteral(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "${x}", "%{ if }", "$${", "%%{", "$", "%", "a$", "$$${x}", "\\n"} {
		expr, diags := hclsyntax.ParseTemplate([]byte(escapeLiteral(s)), "t", hclv2.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("escapeLiteral(%q) = %q does not parse: %v", s, escapeLiteral(s), diags)
		}
		v, diags := expr.Value(nil)
		if diags.HasErrors() || v.AsString() != s {
			t.Errorf("escapeLiteral(%q) = %q renders %#v, %v", s, escapeLiteral(s), v, diags)
		}
	}
}

// FuzzTemplateSource checks that stored template source renders exactly
// like the HCL expression it came from, for quoted strings and heredocs.
func FuzzTemplateSource(f *testing.F) {
	for _, s := range []string{
		`Summarise: ${input.results.a}`, `${input.results.b}`, `a\n${input.results.a}`,
		`$${x} %%{y} ${input.results.num}`, `\u0024${input.results.a}`, `a ${~input.results.a~} b`,
		`%{ if input.results.b.ok }y%{ else }n%{ endif }`, `%{for v in input.results.b.list}${v}%{endfor}`,
		`${"q${input.results.a}"}`, "  x\n    ${input.results.a}\n  y",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if strings.Contains(body, "EOT") {
			return
		}
		checkEquivalent(t, `x = "`+body+`"`+"\n")
		checkEquivalent(t, "x = <<EOT\n"+body+"\nEOT\n")
		checkEquivalent(t, "x = <<-EOT\n"+body+"\n  EOT\n")
	})
}
