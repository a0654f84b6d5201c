package executor

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/obversa/obversa/host/graph"
)

// TestNewEventIsCanonicalText checks that text with '<', '>' and '&'
// reaches the store as RFC 8785 writes it (unescaped), so an event whose
// members are in order needs no canonicalising pass.
func TestNewEventIsCanonicalText(t *testing.T) {
	e := newEvent(graph.EventNodeCompleted, graph.CompletedData{Node: "n", Position: "dag/n/1", Result: mustJSON("<b> & </b>")})
	data := []byte(e.Data.(json.RawMessage))
	want, err := jcs.Transform(data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, want) {
		t.Fatalf("event data %s, its canonical form %s", data, want)
	}
}
