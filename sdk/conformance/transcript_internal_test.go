package conformance

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/obversa/obversa/plugin"
)

// TestDescribePartCutsOnRunes: a part quoted in a report is cut on a rune
// boundary and marked "…", so a plugin's multibyte text is never quoted as
// broken \x escapes.
func TestDescribePartCutsOnRunes(t *testing.T) {
	t.Parallel()
	for _, p := range []plugin.Part{
		{Kind: "text", Text: strings.Repeat("日", 40)},
		{Kind: "json", JSON: []byte(`"` + strings.Repeat("é", 60) + `"`)},
	} {
		got := describePart(p)
		if strings.Contains(got, `\x`) || !utf8.ValidString(got) || !strings.Contains(got, "…") {
			t.Errorf("describePart(%s part) = %s, want it cut on a rune boundary and marked with …", p.Kind, got)
		}
	}
}
