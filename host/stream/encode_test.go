package stream

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/obversa/obversa/plugin"
)

// FuzzAppendLine holds appendLine to json.Marshal's bytes for every line
// it encodes, and to declining the lines it leaves to json.Marshal.
func FuzzAppendLine(f *testing.F) {
	f.Add(int64(1764581492228), "n0", "dag/n0/1", 1, "text", "mock an", "", "", false, int64(0), int64(0), []byte(nil))
	f.Add(int64(0), "<&>", "p\u2028\u2029", 0, "usage", "", "", "", true, int64(12), int64(-3), []byte(nil))
	f.Add(int64(-62135596800001), "\x00\x1f\x7f\"\\", "\xff\xc3", 2, "tool_use", "\b\f\n\r\t", "bash", "t1", false, int64(0), int64(7), []byte(`{"a": 1}`))
	f.Add(int64(253402300800000), "n", "p", -1, "dropped", "", "", "", false, int64(0), int64(99), []byte(nil))
	f.Fuzz(func(t *testing.T, ms int64, node, position string, call int, kind, text, tool, toolID string, usage bool, in, dropped int64, js []byte) {
		l := Line{TS: time.UnixMilli(ms).UTC(), Node: node, Position: position, Call: call, Kind: kind, Text: text,
			Tool: tool, ToolID: toolID, Dropped: dropped}
		if usage {
			l.Usage = &plugin.Usage{Known: in%2 == 0, Input: in, Output: in / 3, CacheRead: in % 5, CacheCreation: -in}
		}
		if js != nil {
			l.JSON = js
		}
		got, ok := appendLine([]byte("x"), l)
		want, err := json.Marshal(l)
		if !ok {
			if l.JSON == nil && l.TS.Year() >= 0 && l.TS.Year() <= 9999 {
				t.Fatalf("appendLine declined %+v", l)
			}
			return
		}
		if err != nil {
			t.Fatalf("json.Marshal failed on a line appendLine encoded: %v", err)
		}
		if !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("appendLine:\n%s\njson.Marshal:\n%s", got[1:], want)
		}
	})
}
