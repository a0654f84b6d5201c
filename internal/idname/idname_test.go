package idname

import (
	"regexp"
	"strings"
	"testing"
)

var idGrammar = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// TestSuggest: a name the grammar refuses becomes a sensible id: accents
// dropped, a few letters written out, a run of refused characters one
// '-', no separator leading, trailing or doubled.
func TestSuggest(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"dräft✓", "draft"},
		{"Ünïcödé nöde", "Unicode-node"},
		{"straße", "strasse"},
		{"Ærø Øst", "AEro-Ost"},
		{"my engine", "my-engine"},
		{"writer 1", "writer-1"},
		{"-draft", "draft"},
		{"a  ✓✓  b", "a-b"},
		{"a--✓--b", "a-b"},
		{"a_✓.b", "a_b"},
		{"plan!", "plan"},
		{"✓", "name"},
		{"", "name"},
		{"日本語", "name"},
		{"日本 node", "node"},
		{"ｆｕｌｌ", "full"},
		{"ﬁle", "file"},
		{"ok-name", "ok-name"},
		{strings.Repeat("é", 200), strings.Repeat("e", 128)},
		{strings.Repeat("a", 127) + " b", strings.Repeat("a", 127)},
	} {
		got := Suggest(tc.in, "name")
		if got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !idGrammar.MatchString(got) {
			t.Errorf("Suggest(%q) = %q, which is not an id", tc.in, got)
		}
	}
}

// FuzzSuggest: whatever the name, the suggestion is an id with no
// separator at its end and none doubled, and a valid id without doubled
// or trailing separators is kept as it is.
func FuzzSuggest(f *testing.F) {
	for _, s := range []string{"dräft✓", "a--b", "", "日本", "-x-"} {
		f.Add(s)
	}
	doubled := regexp.MustCompile(`[._-][._-]`)
	f.Fuzz(func(t *testing.T, s string) {
		got := Suggest(s, "name")
		if !idGrammar.MatchString(got) || doubled.MatchString(got) || strings.ContainsAny(got[len(got)-1:], "._-") {
			t.Fatalf("Suggest(%q) = %q", s, got)
		}
		if idGrammar.MatchString(s) && !doubled.MatchString(s) && !strings.ContainsAny(s[len(s)-1:], "._-") && got != s {
			t.Fatalf("Suggest(%q) = %q, want the id unchanged", s, got)
		}
	})
}
