package store

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestDataKeepsExactNumbers(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	data := json.RawMessage(`{"a":9007199254740992,"b":0.1,"c":1.0,"d":1E2,"e":-0,"f":"12345678901234567890","g":0e99999999999,"h":1.5e300}`)
	mustAppend(t, r.events, 0, NewEvent{Type: "t", Data: data})
	got := string(readAll(t, r.events)[0].Data)
	want := `{"a":9007199254740992,"b":0.1,"c":1,"d":100,"e":0,"f":"12345678901234567890","g":0,"h":1.5e+300}`
	if got != want {
		t.Fatalf("stored data %s, want %s", got, want)
	}
}

func TestEventMarshalJSONIsTheStoredLine(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	mustAppend(t, r.events, 0, NewEvent{Type: "t", Data: map[string]any{"k": "v"}}, NewEvent{Type: "u"})
	lines := strings.SplitAfter(string(readEvents(t, eventsPath(r))), "\n")
	for i, e := range readAll(t, r.events) {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if string(b)+"\n" != lines[i] {
			t.Errorf("rev %d: MarshalJSON\n%s\nstored\n%s", e.Rev, b, lines[i])
		}
		var back Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		diff(t, "round trip", e, back, cmpopts.EquateComparable(time.Time{}), cmp.Comparer(func(a, b json.RawMessage) bool { return string(a) == string(b) }))
	}
}

// panicker is event data whose marshalling panics.
type panicker struct{}

func (panicker) MarshalJSON() ([]byte, error) { panic("marshal panics") }

// TestPanickingMarshaler: a panic while preparing an event goes on to the
// caller before the stream is locked; the stream stays usable.
func TestPanickingMarshaler(t *testing.T) {
	t.Parallel()
	s := newTestRun(t, Policy{}).events
	func() {
		defer func() {
			if p := recover(); p != "marshal panics" {
				t.Fatalf("recovered %v, want the marshaller's panic", p)
			}
		}()
		s.Append(context.Background(), 0, NewEvent{Type: "t", Data: panicker{}})
	}()
	mustAppend(t, s, 0, NewEvent{Type: "t"})
}
