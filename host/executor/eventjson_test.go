package executor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/internal/canonjson"
	"github.com/obversa/obversa/plugin"
)

// recordForm is what the store keeps of event data b: b itself when it
// is canonical, else its canonical form; ok is false when b is not JSON.
func recordForm(b []byte) (form []byte, canonical, ok bool) {
	c, err := jcs.Transform(b)
	if err != nil {
		return nil, false, false
	}
	return c, bytes.Equal(c, b), true
}

// checkEncoded holds appendData's encoding of v to encoding/json's: the
// record gets the same bytes from both, and when every JSON value v
// embeds is canonical, appendData's is already canonical (the store takes
// it as it is).
func checkEncoded(t *testing.T, v any, embedsCanonical bool) {
	t.Helper()
	want, werr := json.Marshal(v)
	got, ok := appendData(nil, v)
	if werr != nil {
		if ok {
			t.Fatalf("%T %+v: encoding/json fails (%v), appendData wrote %s", v, v, werr, got)
		}
		return
	}
	if !ok {
		t.Fatalf("%T %+v: appendData refused what encoding/json marshals to %s", v, v, want)
	}
	wantForm, _, wok := recordForm(want)
	gotForm, canonical, gok := recordForm(got)
	if !wok {
		return // encoding/json wrote what the store refuses too (a number out of range)
	}
	if !gok || !bytes.Equal(gotForm, wantForm) {
		t.Fatalf("%T %+v:\nthe record would get %s\nwas           %s\n(appendData wrote %s)", v, v, gotForm, wantForm, got)
	}
	if embedsCanonical && !canonical {
		t.Fatalf("%T %+v: appendData wrote %s, not canonical (%s)", v, v, got, gotForm)
	}
}

// TestEventJSONIsCanonical checks the hand-written event encoders against
// encoding/json and the canonicaliser on values with every member set and
// on strings that need escaping.
func TestEventJSONIsCanonical(t *testing.T) {
	strs := []string{"", "n1", "dag/n1/1", `q"uote\back`, "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f", "<b>&amp;</b>",
		"é ü 日本 🙂", "\u2028\u2029", "bad \xff utf8 \xc3", "\ufffd", "sha256:" + string(bytes.Repeat([]byte("ab"), 32))}
	art := &graph.ArtifactRef{Digest: "sha256:00", Size: 1 << 40, MediaType: "application/json", Purpose: "node-result"}
	for _, s := range strs {
		checkEncoded(t, graph.AttemptStartedData{AttemptID: s, Node: s, Position: s, RetrySafe: s == ""}, true)
		checkEncoded(t, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: s, Position: "p"}, {Node: "n", Position: s}}}, true)
		checkEncoded(t, graph.EngineAttemptData{Effective: identityJSON(plugin.Identity{Adapter: s, Tools: []string{s}}), FailureKind: s, Message: s,
			Node: s, Outcome: "failed", Parts: partsJSON([]plugin.Part{{Kind: plugin.PartText, Text: s, Final: true}}), PartsArtifact: art,
			Position: s, Refused: s, Requested: identityJSON(plugin.Identity{Model: s}), Sequence: len(s), Usage: usageJSON(plugin.Usage{Known: true, Input: int64(len(s))})}, true)
		checkEncoded(t, graph.CompletedData{Node: s, Position: s, Result: canonjson.AppendString(nil, s)}, true)
	}
	checkEncoded(t, graph.DispatchedData{}, true)
	checkEncoded(t, graph.DispatchedData{Dispatches: []graph.Dispatch{}}, true)
	checkEncoded(t, graph.EngineAttemptData{}, true)
	checkEncoded(t, graph.CompletedData{Node: "n", ResultArtifact: art}, true)
	for _, raw := range []string{`{"b":1,"a":[1.0,2e3,"x"]}`, " { \"a\" : null } ", `"\u00e9\u2028"`, `{"a":1`, `nul`, `1e400`} {
		checkEncoded(t, graph.CompletedData{Node: "n", Position: "p", Result: json.RawMessage(raw)}, false)
		checkEncoded(t, graph.EngineAttemptData{Parts: json.RawMessage(raw), Usage: json.RawMessage(raw)}, false)
	}
	for _, v := range []any{graph.AttemptStartedData{}, graph.DispatchedData{}, graph.EngineAttemptData{}, graph.CompletedData{}} {
		full := filled(reflect.TypeOf(v), 0).Interface()
		checkEncoded(t, full, true)
	}
}

// TestPluginJSONIsCanonical checks identityJSON, usageJSON and partsJSON
// against encoding/json and the canonicaliser, on values with every
// member set (a member added to the plugin types fails it).
func TestPluginJSONIsCanonical(t *testing.T) {
	for _, tt := range []struct {
		v    any
		ours json.RawMessage
	}{
		{plugin.Identity{}, identityJSON(plugin.Identity{})},
		{plugin.Usage{}, usageJSON(plugin.Usage{})},
		{[]plugin.Part{{}}, partsJSON([]plugin.Part{{}})},
		{[]plugin.Part{}, partsJSON([]plugin.Part{})},
	} {
		checkForm(t, tt.v, tt.ours)
	}
	id := filled(reflect.TypeOf(plugin.Identity{}), 0).Interface().(plugin.Identity)
	u := filled(reflect.TypeOf(plugin.Usage{}), 0).Interface().(plugin.Usage)
	parts := filled(reflect.TypeOf([]plugin.Part{}), 0).Interface().([]plugin.Part)
	checkForm(t, id, identityJSON(id))
	checkForm(t, u, usageJSON(u))
	checkForm(t, parts, partsJSON(parts))
}

// checkForm checks that ours is the canonical form of encoding/json's v.
func checkForm(t *testing.T, v any, ours []byte) {
	t.Helper()
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want, err = jcs.Transform(want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ours, want) {
		t.Errorf("%T: ours %s, canonical encoding/json %s", v, ours, want)
	}
}

// filled returns a value of type typ with every member set to something
// other than its zero value (strings name their member, slices hold one
// element, json.RawMessage is a small object), so that a member an
// encoder leaves out shows.
func filled(typ reflect.Type, depth int) reflect.Value {
	v := reflect.New(typ).Elem()
	switch {
	case typ == reflect.TypeOf(json.RawMessage(nil)):
		v.SetBytes([]byte(`{"k":[1,"v"]}`))
	case typ.Kind() == reflect.String:
		v.SetString(fmt.Sprintf("s%d", depth))
	case typ.Kind() == reflect.Bool:
		v.SetBool(true)
	case typ.Kind() >= reflect.Int && typ.Kind() <= reflect.Int64:
		v.SetInt(int64(depth) + 7)
	case typ.Kind() == reflect.Pointer:
		v.Set(filled(typ.Elem(), depth+1).Addr())
	case typ.Kind() == reflect.Slice:
		v.Set(reflect.Append(v, filled(typ.Elem(), depth+1)))
	case typ.Kind() == reflect.Struct:
		for i := range typ.NumField() {
			v.Field(i).Set(filled(typ.Field(i).Type, depth+i+1))
		}
	default:
		panic(fmt.Sprintf("filled: %s", typ))
	}
	return v
}

// FuzzEventJSON holds the hand-written event encoders to encoding/json
// and the canonicaliser on any strings, counts and embedded JSON.
func FuzzEventJSON(f *testing.F) {
	f.Add("n1", "dag/n1/1", "mock answer", int64(1), true, []byte(`{"a":1}`))
	f.Add("\u2028<&>", "\xff\xfe", "\x00\x1f\"\\", int64(-5), false, []byte(` [1.0, "\u00e9"] `))
	f.Add("", "", "", int64(0), false, []byte(``))
	f.Fuzz(func(t *testing.T, a, b, c string, n int64, flag bool, raw []byte) {
		n %= 1 << 53 // I-JSON: the record holds no larger integer exactly
		_, rawCanonical, rawOK := recordForm(raw)
		embeds := len(raw) == 0 || rawOK && rawCanonical
		checkEncoded(t, graph.AttemptStartedData{AttemptID: a, Node: b, Position: c, RetrySafe: flag}, true)
		checkEncoded(t, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: a, Position: b}, {Node: c, Position: a}}}, true)
		id := plugin.Identity{Adapter: a, Provider: b, ModelFamily: c, Model: a + b, Tools: []string{c}}
		if flag {
			id.Tools = nil
		}
		u := plugin.Usage{Known: flag, Input: n, Output: -n, CacheRead: n / 3, CacheCreation: n % 7}
		parts := []plugin.Part{{Kind: plugin.PartKind(a), Text: b, ToolID: c, ToolName: a, Final: flag}}
		if json.Valid(raw) {
			// A part whose JSON is not JSON never reaches the record: the
			// plugin client refuses it.
			parts = append(parts, plugin.Part{Kind: plugin.PartStructured, JSON: raw})
		}
		var art *graph.ArtifactRef
		if flag {
			art = &graph.ArtifactRef{Digest: a, Size: n, MediaType: b, Purpose: c}
		}
		checkEncoded(t, graph.EngineAttemptData{Effective: identityJSON(id), FailureKind: b, Message: c, Node: a, Outcome: b,
			Parts: partsJSON(parts), PartsArtifact: art, Position: c, Refused: a, Requested: identityJSON(id), Sequence: int(n), Usage: usageJSON(u)}, embeds)
		checkEncoded(t, graph.CompletedData{Node: a, Position: b, Result: raw, ResultArtifact: art}, embeds)
		checkEncoded(t, graph.CompletedData{Node: a, Position: b, Result: canonjson.AppendString(nil, c)}, true)
		checkForm(t, id, identityJSON(id))
		checkForm(t, u, usageJSON(u))
		if embeds {
			checkForm(t, parts, partsJSON(parts))
		}
	})
}
