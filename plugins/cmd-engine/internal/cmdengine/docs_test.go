package cmdengine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/obversa/obversa/plugin"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// TestDocsExamples decodes every cmd-engine config block (engine and node)
// and node input in docs/engines.md, so the reference never shows a
// configuration that is refused.
func TestDocsExamples(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "engines.md"))
	if err != nil {
		t.Fatal(err)
	}
	value := func(e hclsyntax.Expression) json.RawMessage {
		v, diags := e.Value(nil)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		raw, err := ctyjson.Marshal(v, v.Type())
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	counts := map[string]int{}
	var walk func(blocks hclsyntax.Blocks)
	walk = func(blocks hclsyntax.Blocks) {
		for _, b := range blocks {
			attrs := b.Body.Attributes
			switch {
			case b.Type == "plugin" && attrs["path"] != nil && attrs["config"] != nil:
				if string(value(attrs["path"].Expr)) != `"bin/cmd-engine"` {
					continue
				}
				var d []plugin.Diagnostic
				typ := string(value(attrs["type"].Expr))
				if typ == `"node"` {
					_, d = decodeNodeConfig(value(attrs["config"].Expr))
				} else {
					_, d = decodeEngineConfig(value(attrs["config"].Expr))
				}
				if len(d) > 0 {
					t.Errorf("plugin %v: %+v", b.Labels, d)
				}
				counts[typ]++
			case b.Type == "node" && attrs["binding"] != nil && attrs["input"] != nil:
				if _, _, err := decodeNodeInput(value(attrs["input"].Expr)); err != nil {
					t.Errorf("node %v input: %v", b.Labels, err)
				}
				counts["input"]++
			}
			walk(b.Body.Blocks)
		}
	}
	for _, m := range regexp.MustCompile("(?s)```hcl\n(.*?)```").FindAllSubmatch(doc, -1) {
		f, diags := hclsyntax.ParseConfig(m[1], "engines.md", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("example does not parse: %v\n%s", diags, m[1])
		}
		walk(f.Body.(*hclsyntax.Body).Blocks)
	}
	if counts[`"engine"`] < 4 || counts[`"node"`] < 1 || counts["input"] < 1 {
		t.Errorf("examples found: %v", counts)
	}
}
