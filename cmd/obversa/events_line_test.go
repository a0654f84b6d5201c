package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/store"
)

// TestEventLineIsTheTableForm: eventLine prints what fmt's "%5d  %s
// %-32s %s\n" printed before it: short and long revisions, a type of
// more than 32 bytes and one of non-ASCII runes, data cut at 120 bytes
// (in the middle of a rune too) and a loop event shown readably.
func TestEventLineIsTheTableForm(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.FixedZone("x", 3600))
	long := strings.Repeat("é", 100)
	cases := []store.Event{
		{Rev: 1, TS: ts, Type: "graph:run-started", Data: json.RawMessage(`{"a":1}`)},
		{Rev: 123456, TS: ts, Type: "a-type-name-longer-than-thirty-two-bytes", Data: json.RawMessage(`{}`)},
		{Rev: 42, TS: ts, Type: "grâph:ünicode", Data: json.RawMessage(`"` + long + `"`)},
		{Rev: 7, TS: ts, Type: "graph:loop-round-started", Data: json.RawMessage(`{"loop":"l","round":2}`)},
		{Rev: 8, TS: ts, Type: "x", Data: json.RawMessage(strings.Repeat("a", 120))},
		{Rev: 9, TS: ts, Type: "x", Data: json.RawMessage(strings.Repeat("a", 121))},
	}
	for _, e := range cases {
		text, ok := readable(e.Type, e.Data)
		if !ok {
			text = string(e.Data)
			if len(text) > 120 {
				text = text[:119] + "…"
			}
		}
		want := fmt.Sprintf("%5d  %s  %-32s %s\n", e.Rev, e.TS.UTC().Format("15:04:05.000"), e.Type, text)
		if got := string(eventLine([]byte("old"), e)); got != "old"+want {
			t.Errorf("event %d:\n got %q\nwant %q", e.Rev, got, "old"+want)
		}
	}
}
