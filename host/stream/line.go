package stream

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/obversa/obversa/plugin"
)

// File names in a run's directory.
const (
	// FileName is the current segment of the stream.
	FileName = "stream.jsonl"
	// OldFileName is the previous segment, kept until the current one is
	// full in its turn.
	OldFileName = FileName + ".1"
)

// Line kinds: the streamed event kinds of the plugin protocol, and two of
// the writer's own.
const (
	KindText       = string(plugin.EventText)
	KindThinking   = string(plugin.EventThinking)
	KindToolUse    = string(plugin.EventToolUse)
	KindToolResult = string(plugin.EventToolResult)
	KindUsage      = string(plugin.EventUsage)
	// KindEnd closes one engine call: nothing more of it follows.
	KindEnd = "end"
	// KindDropped says that Dropped bytes of the position's earlier output
	// were dropped by the cap.
	KindDropped = "dropped"
)

// ErrLine is wrapped by Parse for a line that is not a stream line.
var ErrLine = errors.New("not a stream line")

// Line is one line of stream.jsonl.
type Line struct {
	// TS is when the writer took the event (UTC, ms).
	TS time.Time `json:"ts"`
	// Node and Position name the attempt ("dag/draft/1"); a preflight
	// probe has the lane as its node and "preflight/<probe-id>" as its
	// position.
	Node     string `json:"node"`
	Position string `json:"position"`
	// Call is the engine-call sequence within the position (1, then 2 for
	// a fallback), as graph:engine-attempt-recorded numbers it.
	Call int `json:"call,omitempty"`
	// Kind is one of the Kind constants.
	Kind string `json:"kind"`
	// Text is the delta of a text or thinking event.
	Text string `json:"text,omitempty"`
	// Tool, ToolID and JSON describe tool events.
	Tool   string          `json:"tool,omitempty"`
	ToolID string          `json:"tool_id,omitempty"`
	JSON   json.RawMessage `json:"json,omitempty"`
	// Usage is set for usage events.
	Usage *plugin.Usage `json:"usage,omitempty"`
	// Dropped is, for KindDropped, how many bytes of the position's
	// output the cap dropped.
	Dropped int64 `json:"dropped,omitempty"`
}

// Parse decodes one line (without its newline). Errors wrap ErrLine: not
// JSON, or no kind.
func Parse(b []byte) (Line, error) {
	var l Line
	if err := json.Unmarshal(b, &l); err != nil {
		return Line{}, fmt.Errorf("%w: %v", ErrLine, err)
	}
	if l.Kind == "" {
		return Line{}, fmt.Errorf("%w: no kind", ErrLine)
	}
	return l, nil
}
