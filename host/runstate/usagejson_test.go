package runstate

import (
	"encoding/json"
	"testing"

	"github.com/gowebpki/jcs"

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
	for _, s := range []string{`null`, `{"known":true,"output":5,"input":1}`, `{"input":1,"known":true,"output":5}`,
		`{"cache_creation":7,"cache_read":2,"input":-3,"known":true,"output":9}`, `{"cache_read":2,"known":false}`,
		`{"input":1,"known":true,"output":5,"output":6}`, `{"input":1,"input":2,"known":true}`, `{"input":1,"known":true,}`,
		`{"input":1"known":true}`, `{"known":true,"output":}`, `{ "known": true }`, `{"known":true,"input":1e2}`,
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

// TestUsageFastTakesTheRecordsForm checks that the usage as the record
// keeps it — RFC 8785 canonical form, which the executor writes and the
// store keeps every event's data in — is read without encoding/json.
func TestUsageFastTakesTheRecordsForm(t *testing.T) {
	for _, u := range []plugin.Usage{{}, {Known: true}, {Known: true, Input: 1, Output: 5}, {Known: true, Input: 3, CacheCreation: -1},
		{Known: false, Input: -3, Output: 1 << 53, CacheRead: 2, CacheCreation: 7}} {
		b, err := json.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		if b, err = jcs.Transform(b); err != nil {
			t.Fatal(err)
		}
		if got, ok := usageFast(b); !ok || got != u {
			t.Errorf("usageFast(%s) = %+v, %v; want %+v, true", b, got, ok, u)
		}
	}
}
