package canonjson

import (
	"bytes"
	"encoding/json"
	"testing"
)

type orderInner struct {
	Z string  `json:"z"`
	A float64 `json:"a"`
}

type orderOuter struct {
	Zeta   []orderInner      `json:"zeta"`
	Alpha  map[string]any    `json:"alpha"`
	Mid    *orderInner       `json:"mid,omitempty"`
	Esc    string            `json:"esc"`
	Keys   map[string]string `json:"keys"`
	Number float64           `json:"number"`
}

// TestSortMembersMatchesLibrary: for marshalled Go values the fast path
// returns exactly what the JCS library returns.
func TestSortMembersMatchesLibrary(t *testing.T) {
	t.Parallel()
	values := []any{
		orderOuter{
			Zeta:   []orderInner{{Z: "z", A: 1.5}, {Z: "\n\"é😀", A: 1e21}},
			Alpha:  map[string]any{"b": []any{1, "x", nil, true}, "a": map[string]any{}},
			Mid:    &orderInner{Z: "<&>", A: 1e-7},
			Esc:    "tab\there \u2028 line sep",
			Keys:   map[string]string{"\u20ac": "euro", "\r": "cr", "\ufb33": "dalet", "1": "one", "\U0001F600": "smile", "\u0080": "ctl", "ö": "o"},
			Number: 333333333.3333333,
		},
		orderInner{Z: "only", A: -0.25},
		[]orderInner{{}, {Z: "x"}},
		struct {
			B int `json:"b"`
			A int `json:"a"`
			C struct {
				Y bool `json:"y"`
				X bool `json:"x"`
			} `json:"c"`
		}{},
	}
	for _, v := range values {
		raw, err := marshalAsRecord(v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := canonicalize(raw)
		if err != nil {
			t.Fatal(err)
		}
		got, err := canonicalDataOf(raw, true)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("canonicalDataOf(%s)\n got %s, %v\nwant %s", raw, got, err, want)
		}
	}
}

func TestSortMembersRefuses(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{"b":1, "a":2}`, `{"\u0041":1}`, `{"a":1`, `{"a"1}`, `[1,]`, ``, `{"a":{"b":}}`} {
		if out, ok := sortMembers([]byte(in)); ok && isCanonicalJSON(out) {
			t.Errorf("sortMembers(%s) = %s, accepted", in, out)
		}
	}
	if out, ok := sortMembers([]byte(`{"b":{"d":1,"c":2},"a":[{"f":1,"e":2}]}`)); !ok || string(out) != `{"a":[{"e":2,"f":1}],"b":{"c":2,"d":1}}` {
		t.Errorf("nested reorder: %s, %v", out, ok)
	}
}

// FuzzSortMembers: whenever the fast path produces canonical JSON, the JCS
// library must agree on every byte.
func FuzzSortMembers(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":2}`, `{"z":{"y":[1,{"b":null,"a":"x"}]},"\n":1,"\r":2}`,
		`{"€":1,"😀":2,"דּ":3}`, `[{"b":1,"a":1}]`, `{"a":1,"a":2}`, `{"b":1e+30,"a":0.000001}`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, ok := sortMembers(b)
		if !ok || !isCanonicalJSON(out) {
			return
		}
		want, err := canonicalize(b)
		if err != nil || !bytes.Equal(out, want) {
			t.Fatalf("sortMembers(%q) = %q; library: %q, %v", b, out, want, err)
		}
		var v1, v2 any
		if json.Unmarshal(b, &v1) != nil || json.Unmarshal(out, &v2) != nil {
			t.Fatalf("not JSON: %q / %q", b, out)
		}
	})
}

// FuzzCanonicalData holds the whole data path (fast paths included) to the
// JCS library: whatever it accepts is exactly the library's canonical form,
// and it refuses valid JSON only for a number canonicalisation would change.
func FuzzCanonicalData(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1.0,"x"]}`, `{"z":{"y":2},"a":null}`, `[9007199254740993]`, `{"a":1,"a":2}`,
		` {"k" : "v"} `, `"\u0041"`, `{"\u20ac":1,"\r":2}`, `1E3`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := canonicalData(b)
		lib, lerr := canonicalize(b)
		if err == nil {
			if lerr != nil || !bytes.Equal(out, lib) {
				t.Fatalf("canonicalData(%q) = %q; library %q, %v", b, out, lib, lerr)
			}
			return
		}
		if lerr == nil && json.Valid(b) && checkNumbersExact(b) == nil {
			t.Fatalf("canonicalData(%q) refused (%v) what the library canonicalises exactly", b, err)
		}
	})
}

// marshalAsRecord marshals v as the file record marshals event data:
// encoding/json without HTML escaping, no trailing newline.
func marshalAsRecord(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
