package hcl

import (
	"fmt"
	"strings"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// traversalString renders a traversal as it is usually written.
func traversalString(t hclv2.Traversal) string {
	var b strings.Builder
	for _, step := range t {
		switch s := step.(type) {
		case hclv2.TraverseRoot:
			b.WriteString(s.Name)
		case hclv2.TraverseAttr:
			b.WriteString("." + s.Name)
		case hclv2.TraverseIndex:
			switch {
			case s.Key.Type() == cty.String && s.Key.IsKnown() && !s.Key.IsNull():
				fmt.Fprintf(&b, "[%q]", s.Key.AsString())
			case s.Key.Type() == cty.Number && s.Key.IsKnown() && !s.Key.IsNull():
				fmt.Fprintf(&b, "[%s]", s.Key.AsBigFloat().Text('f', -1))
			default:
				b.WriteString("[…]")
			}
		case hclv2.TraverseSplat:
			b.WriteString("[*]")
		}
	}
	return b.String()
}
