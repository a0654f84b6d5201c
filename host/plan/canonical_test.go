package plan

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/obversa/obversa/host/graph"
)

// canonCases are texts canonicalJSON takes or leaves to jcs.Transform.
var canonCases = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1`, `-1`, `123456789012345`, `1234567890123456`, `12345678901234567890`,
	`1e21`, `1E+2`, `0.1`, `-0.000001`, `1e-7`, `2.50`, `1.0`, `9007199254740993`, `1e400`, `01`, `1.`, `-`, `.5`,
	`true`, `false`, `null`, `nul`, `truex`, `[true,false,null]`,
	`{"b":1,"a":2,"c":{"z":[1,{"y":0,"x":1}],"a":"b"}}`,
	`{"a":1,"a":2}`, `{"\u0061":1,"a":2}`, `{"a":1,}`, `[1,]`, `[1 ,2]`, ` {}`, `{} `,
	`"\u003chtml\u003e \u0026 \u2028\u2029 \ufffd"`, `"tab\tnew\nline\u0001\u001f\u007f"`, `"\/\b\f\r\"\\"`,
	`"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`, `"\ud83d\u0041"`, `"\uZZZZ"`, `"\x"`,
	"\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"", "\"bad \xff\"", "\"\xed\xa0\x80\"", "\"raw\ttab\"",
	`{"é":1,"e":2,"😀":3,"":4,"z":5}`, `{"\ud83d\ude00":1,"\uffff":2}`,
	`[[[[[[[[[[1]]]]]]]]]]`, `{"a":`, `[`, `"abc`, `{"a" :1}`,
}

// TestCanonicalJSONAsJCS holds canonicalJSON to jcs.Transform's answer:
// the same bytes when it takes a text, and jcs deciding the rest.
func TestCanonicalJSONAsJCS(t *testing.T) {
	for _, in := range canonCases {
		checkCanonical(t, []byte(in))
	}
	deep := strings.Repeat("[", canonMaxDepth+1) + strings.Repeat("]", canonMaxDepth+1)
	if _, ok := canonicalJSON([]byte(deep)); ok {
		t.Fatal("nesting past canonMaxDepth was taken")
	}
	checkCanonical(t, []byte(deep))
}

// TestCanonicalTakesMarshalledPlans makes sure the one-pass rewrite is
// the path a definition and a plan take, not the fallback.
func TestCanonicalTakesMarshalledPlans(t *testing.T) {
	def := bigDefinition(50)
	p := &Plan{RunID: "r", Namespace: "default", Plugins: []PluginPlan{{Name: "mock", Type: "engine", SHA256: strings.Repeat("ab", 32),
		Env: map[string]string{"Z": "1", "A": "\u00e9"}}}, Lanes: []LanePlan{}}
	for _, v := range []any{def, p, map[string]any{"html": "<a&b>", "sep": "\u2028", "n": 1.5e300, "i": int64(1) << 60}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := canonicalJSON(b)
		if !ok {
			t.Fatalf("%T: canonicalJSON did not take encoding/json's text", v)
		}
		want, err := jcs.Transform(b)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("%T:\n got %s\nwant %s", v, got, want)
		}
	}
}

func checkCanonical(t *testing.T, in []byte) {
	t.Helper()
	want, werr := jcs.Transform(in)
	got, ok := canonicalJSON(in)
	switch {
	case ok && werr != nil:
		t.Fatalf("%q: canonicalJSON took %q, jcs refused: %v", in, got, werr)
	case ok && string(got) != string(want):
		t.Fatalf("%q:\n got %q\nwant %q", in, got, want)
	}
}

// FuzzCanonicalJSON: whatever canonicalJSON takes, jcs.Transform takes
// and writes the same way.
func FuzzCanonicalJSON(f *testing.F) {
	for _, c := range canonCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkCanonical(t, in)
	})
}

// BenchmarkDigestDefinition digests a 1 000-node definition as the
// record's start carries it (Canonical, then SHA-256).
func BenchmarkDigestDefinition(b *testing.B) {
	def := bigDefinition(1000)
	for b.Loop() {
		if _, err := Digest(def); err != nil {
			b.Fatal(err)
		}
	}
}

// bigDefinition is a fan-out-32 tree of n engine nodes whose prompts hold
// text encoding/json escapes and text it does not.
func bigDefinition(n int) *graph.Definition {
	def := &graph.Definition{Name: "dag", GlobalConcurrency: 32, KeyedConcurrency: []graph.KeyLimit{}}
	for i := range n {
		nd := graph.NodeDef{ID: fmt.Sprintf("n%d", i), Kind: graph.KindRequired, Lane: "w",
			Prompt: fmt.Sprintf("Step %d <é & 😀>\n\t\"quoted\" ${input.results.n%d}", i, max(i-1, 0)), DependsOn: []string{}}
		if i > 0 {
			nd.DependsOn = []string{fmt.Sprintf("n%d", (i-1)/32)}
		}
		def.Nodes = append(def.Nodes, nd)
	}
	return def
}
