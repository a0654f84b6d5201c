package hcl

import (
	"fmt"
	"strings"
	"testing"
)

// chainFile generates a run file with n nodes, each depending on and
// referring to the previous one.
func chainFile(n int) []byte {
	var b strings.Builder
	b.WriteString(prelude)
	b.WriteString("graph \"dag\" {\n  node \"n0\" {\n    lane   = \"writer\"\n    prompt = \"start\"\n  }\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  node \"n%d\" {\n    lane       = \"writer\"\n    depends_on = [\"n%d\"]\n    prompt     = \"Continue: ${input.results.n%d}\"\n  }\n", i, i-1, i-1)
	}
	b.WriteString("}\n")
	return []byte(b.String())
}

func BenchmarkDecodeChain1000(b *testing.B) {
	src := chainFile(1000)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, diags := Decode(src, "/proj/run.hcl"); diags.HasErrors() {
			b.Fatal(diags)
		}
	}
}

func BenchmarkRenderPrompt(b *testing.B) {
	src := "Summarise: ${input.results.draft} (${input.results.count.stdout} bytes)"
	for b.Loop() {
		if _, err := RenderPrompt(src, renderResults); err != nil {
			b.Fatal(err)
		}
	}
}
