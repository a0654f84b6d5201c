package stream

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestLinesCutToolJSONOnRunes: a tool's input or result longer than one
// shown line is cut on a rune boundary and marked "…", so a terminal
// never gets half of a multibyte character.
func TestLinesCutToolJSONOnRunes(t *testing.T) {
	t.Parallel()
	raw, _ := json.Marshal(map[string]string{"q": strings.Repeat("日本", 100)})
	for _, kind := range []string{KindToolUse, KindToolResult} {
		var a Lines
		out := a.Add(Line{Node: "draft", Position: "dag/draft/1", Kind: kind, Tool: "search", JSON: raw})
		if len(out) != 1 {
			t.Fatalf("%s: %d lines shown, want 1", kind, len(out))
		}
		text := out[0].Text
		if !utf8.ValidString(text) || !strings.HasSuffix(text, "…") {
			t.Errorf("%s: shown %q, want valid UTF-8 cut and marked with …", kind, text)
		}
		if len(text) > len("tool result search ")+maxShown+len("…") {
			t.Errorf("%s: shown %d bytes, over the bound", kind, len(text))
		}
	}
}
