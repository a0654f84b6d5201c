package runstate

import (
	"encoding/json"
	"testing"

	"github.com/obversa/obversa/plugin"
)

// FuzzDecodeUsage holds decodeUsage to decode (encoding/json) on any
// input: the same usage, and an error exactly when decode fails.
func FuzzDecodeUsage(f *testing.F) {
	for _, u := range []plugin.Usage{{}, {Known: true}, {Known: true, Input: 1, Output: 5},
		{Known: true, Input: -3, Output: 9223372036854775807, CacheRead: 2, CacheCreation: 7}} {
		b, _ := json.Marshal(u)
		f.Add(b)
	}
	for _, s := range []string{`null`, `{"known":true,"output":5,"input":1}`, `{ "known": true }`, `{"known":true,"input":1e2}`,
		`{"known":true,"input":01}`, `{"known":true,"input":1.0}`, `{"known":true,"input":99999999999999999999}`,
		`{"known":true,"input":-0}`, `{"known":true}x`, `{"known":tru}`, `{"known":true,"input":1,"input":2}`, `{"Known":true}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var got, want plugin.Usage
		gotErr := decodeUsage(raw, &got)
		wantErr := decode(raw, &want)
		if (gotErr != nil) != (wantErr != nil) || got != want {
			t.Fatalf("decodeUsage(%q) = %+v, %v; decode gives %+v, %v", raw, got, gotErr, want, wantErr)
		}
	})
}

// TestUsageFastTakesTheExecutorsForm checks that the usage the executor
// writes (json.Marshal of plugin.Usage) is read without encoding/json.
func TestUsageFastTakesTheExecutorsForm(t *testing.T) {
	for _, u := range []plugin.Usage{{}, {Known: true, Input: 1, Output: 5}, {Known: true, Input: 3, CacheCreation: -1}} {
		b, _ := json.Marshal(u)
		if got, ok := usageFast(b); !ok || got != u {
			t.Errorf("usageFast(%s) = %+v, %v; want %+v, true", b, got, ok, u)
		}
	}
}
