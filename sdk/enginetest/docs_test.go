package enginetest

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// TestDocsExamples decodes every mock-engine config block in
// docs/engines.md, so the reference never shows a config that is refused.
func TestDocsExamples(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "engines.md"))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, m := range regexp.MustCompile("(?s)```hcl\n(.*?)```").FindAllSubmatch(doc, -1) {
		f, diags := hclsyntax.ParseConfig(m[1], "engines.md", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("example does not parse: %v\n%s", diags, m[1])
		}
		for _, b := range f.Body.(*hclsyntax.Body).Blocks {
			path, ok := b.Body.Attributes["path"]
			cfg, hasCfg := b.Body.Attributes["config"]
			if b.Type != "plugin" || !ok || !hasCfg {
				continue
			}
			if p, _ := path.Expr.Value(nil); p.AsString() != "bin/mock-engine" {
				continue
			}
			v, diags := cfg.Expr.Value(nil)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			raw, err := ctyjson.Marshal(v, v.Type())
			if err != nil {
				t.Fatal(err)
			}
			if _, d := DecodeConfig(raw); len(d) > 0 {
				t.Errorf("plugin %v: %+v", b.Labels, d)
			}
			found++
		}
	}
	if found == 0 {
		t.Error("no mock-engine example found in docs/engines.md")
	}
}
