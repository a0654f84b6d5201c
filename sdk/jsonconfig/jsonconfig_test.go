package jsonconfig

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/plugin"
)

type inner struct {
	Kind string `json:"kind"`
}

type sample struct {
	Name  string  `json:"name"`
	Count int     `json:"count"`
	Items []inner `json:"items"`
	Inner *inner  `json:"inner"`
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name   string
		raw    string
		usable bool
		diags  []plugin.Diagnostic
	}{
		{"valid", `{"name": "x", "count": 2, "items": [{"kind": "a"}]}`, true, nil},
		{"not an object", `[1]`, false, []plugin.Diagnostic{{Severity: plugin.SeverityError, Summary: "cfg must be an object"}}},
		{"wrong type", `{"items": [{"kind": 3}]}`, false, []plugin.Diagnostic{{Severity: plugin.SeverityError, Summary: "expected a string, got JSON number", Attribute: "items[0].kind"}}},
		{"unknown key", `{"name": "x", "inner": {"knd": "a"}}`, true, []plugin.Diagnostic{{Severity: plugin.SeverityError, Summary: `unknown cfg setting "inner.knd"`, Attribute: "inner.knd"}}},
		{"invalid JSON", `{"name": }`, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v sample
			diags, usable := Decode([]byte(tt.raw), &v, "cfg")
			if usable != tt.usable {
				t.Fatalf("usable = %v, want %v (%v)", usable, tt.usable, diags)
			}
			if tt.name == "invalid JSON" {
				if len(diags) != 1 || !strings.Contains(diags[0].Summary, "not valid JSON") {
					t.Fatalf("diags %v", diags)
				}
				return
			}
			if diff := cmp.Diff(tt.diags, diags); diff != "" {
				t.Fatalf("diagnostics (-want +got):\n%s", diff)
			}
			if HasErrors(diags) != (len(tt.diags) > 0) {
				t.Fatalf("HasErrors disagrees with %v", diags)
			}
		})
	}
}

func TestPathAtOffset(t *testing.T) {
	raw := []byte(`{"a": 1, "b": [true, {"c": "x", "d": [[2], 3]}], "e": {}}`)
	tests := []struct {
		value string // the value whose end offset is asked for
		want  string
	}{
		{`1`, "a"},
		{`true`, "b[0]"},
		{`"x"`, "b[1].c"},
		{`[2]`, "b[1].d[0]"},
		{`3`, "b[1].d[1]"},
		{`{}`, "e"},
	}
	for _, tc := range tests {
		i := strings.Index(string(raw), tc.value)
		if got := PathAtOffset(raw, int64(i+len(tc.value))); got != tc.want {
			t.Errorf("path of %s = %q, want %q", tc.value, got, tc.want)
		}
	}
	if got := PathAtOffset([]byte(`{"a": `), 100); got != "" {
		t.Errorf("truncated JSON gave %q", got)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"items": [{"kind": 1}]}`, `{"x": {"y": [1]}}`, `[`, `{"inner": null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_ = PathAtOffset(raw, int64(len(raw)/2))
		var v sample
		diags, usable := Decode(raw, &v, "cfg")
		if !usable && len(diags) == 0 {
			t.Fatalf("unusable with no diagnostic: %q", raw)
		}
		for _, d := range diags {
			if d.Summary == "" || d.Severity != plugin.SeverityError {
				t.Fatalf("malformed diagnostic %+v", d)
			}
		}
	})
}
