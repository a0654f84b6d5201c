package store

import (
	"testing"

	"github.com/obversa/obversa/internal/canonjson"
)

// BenchmarkCanonicalEngineCall puts the data of a chain node's
// graph:engine-attempt-recorded and graph:node-attempt-started in
// canonical form, as an append does, once with their members in Go struct
// order (each object sorted by the store) and once in canonical member
// order (taken as it is), as the executor now marshals them.
func BenchmarkCanonicalEngineCall(b *testing.B) {
	for _, bc := range []struct {
		name        string
		call, start string
	}{
		{"struct-order",
			`{"node":"n4","position":"dag/n4/1","sequence":1,"requested":{"adapter":"mock","provider":"local","model_family":"scripted","model":"m1","tools":[]},"effective":{"adapter":"mock","provider":"local","model_family":"scripted","model":"m1","tools":null},"usage":{"known":true,"input":1,"output":6},"outcome":"completed","parts":[{"kind":"text","text":"mock answer to: \"p4\"","final":true}]}`,
			`{"node":"n5","position":"dag/n5/1","attempt_id":"sha256:799945ce0ee3d8c88421689cd911c255a6c975958fb99952f5165a2367ef9072","retry_safe":false}`},
		{"member-order",
			`{"effective":{"adapter":"mock","model":"m1","model_family":"scripted","provider":"local","tools":null},"node":"n4","outcome":"completed","parts":[{"final":true,"kind":"text","text":"mock answer to: \"p4\""}],"position":"dag/n4/1","requested":{"adapter":"mock","model":"m1","model_family":"scripted","provider":"local","tools":[]},"sequence":1,"usage":{"input":1,"known":true,"output":6}}`,
			`{"attempt_id":"sha256:799945ce0ee3d8c88421689cd911c255a6c975958fb99952f5165a2367ef9072","node":"n5","position":"dag/n5/1","retry_safe":false}`},
	} {
		call, start := []byte(bc.call), []byte(bc.start)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := canonjson.Data(call, true); err != nil {
					b.Fatal(err)
				}
				if _, err := canonjson.Data(start, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
