package canonjson

import (
	"bytes"
	"testing"
)

// canonicalByLibrary is the reference answer: jcs.Transform accepts b and
// returns it unchanged.
func canonicalByLibrary(b []byte) bool {
	out, err := canonicalize(b)
	return err == nil && bytes.Equal(out, b)
}

func TestIsCanonicalJSON(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{`null`, true}, {`true`, true}, {`false`, true}, {`0`, true}, {`-1`, true},
		{`123456789012345`, true}, {`1e+30`, true}, {`1e-7`, true}, {`0.000001`, true}, {`4.5`, true},
		{`333333333.3333333`, true}, {`9007199254740992`, true},
		{`-0`, false}, {`1E30`, false}, {`1.0`, false}, {`01`, false}, {`+1`, false}, {`.5`, false}, {`1.`, false},
		{`1e400`, false}, {`9007199254740993`, false}, {`0x10`, false},
		{`""`, true}, {`"a\"b\\c\nd\u001f"`, true}, {`"€\u007f"`, false}, {"\"\u007f\"", true}, {`"\/"`, false},
		{`"\u0041"`, false}, {`"\u000a"`, false}, {`"\u001F"`, false}, {"\"\x01\"", false}, {`"\ud83d\ude00"`, false},
		{"\"\xff\"", false}, {"\"\xed\xa0\x80\"", false}, {"\"\xef\xbf\xbd\"", true},
		{`[]`, true}, {`[1,2]`, true}, {`[1, 2]`, false}, {`[1,]`, false}, {`{}`, true},
		{`{"a":1,"b":2}`, true}, {`{"b":1,"a":2}`, false}, {`{"a":1,"a":2}`, false}, {`{"a" :1}`, false},
		{`{"a":1}x`, false}, {` 1`, false}, {`1 `, false}, {``, false}, {`tru`, false}, {`truex`, false},
		// UTF-16 order: U+20AC (€) sorts after U+1F600 (surrogates D83D…)? No: D83D < 20AC is false; 20AC < D83D.
		{"{\"\u20ac\":1,\"\U0001F600\":2}", true}, {"{\"\U0001F600\":2,\"\u20ac\":1}", false},
		// U+FB33 sorts after U+1F600 in UTF-16 (FB33 > D83D), unlike in UTF-8.
		{"{\"\U0001F600\":1,\"\ufb33\":2}", true}, {"{\"\ufb33\":2,\"\U0001F600\":1}", false},
		{`{"\n":1,"\r":2}`, true}, {`{"\r":1,"\n":2}`, false}, {`{"":1,"a":2}`, true},
	}
	for _, tt := range tests {
		if got := isCanonicalJSON([]byte(tt.in)); got != tt.want {
			t.Errorf("isCanonicalJSON(%q) = %v, want %v", tt.in, got, tt.want)
		}
		if lib := canonicalByLibrary([]byte(tt.in)); lib != tt.want {
			t.Errorf("library says %q canonical = %v, table says %v", tt.in, lib, tt.want)
		}
	}
}

func TestIsCanonicalJSONNesting(t *testing.T) {
	for _, depth := range []int{maxCanonDepth, maxCanonDepth + 1} {
		in := bytes.Repeat([]byte("["), depth)
		in = append(in, bytes.Repeat([]byte("]"), depth)...)
		if got, want := isCanonicalJSON(in), canonicalByLibrary(in); got != want {
			t.Errorf("depth %d: checker %v, library %v", depth, got, want)
		}
	}
}

// FuzzCanonicalCheck holds the fast checker to the JCS library's answer.
func FuzzCanonicalCheck(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x\n"],"b":null}`, `{"\u0080":1,"ö":2}`, `[1e+30,-0,0.1]`, `"\u001f"`,
		`{"b":1,"a":2}`, `[[[]]]`, `{"":{"":""}}`, "\"\xef\xbf\xbd\"", `1e-7`, `true`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := isCanonicalJSON(b), canonicalByLibrary(b); got != want {
			t.Fatalf("isCanonicalJSON(%q) = %v, library says %v", b, got, want)
		}
	})
}
