package cmdengine

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/obversa/obversa/plugin"
)

// lookup follows a dot-separated path through decoded JSON: object keys,
// and decimal indexes into arrays. The empty path finds nothing.
func lookup(v any, path string) (any, bool) {
	if path == "" {
		return nil, false
	}
	for part := range strings.SplitSeq(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[part]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func lookupString(v any, path string) (string, bool) {
	x, ok := lookup(v, path)
	s, isStr := x.(string)
	return s, ok && isStr
}

func lookupInt(v any, path string) (int64, bool) {
	x, ok := lookup(v, path)
	if !ok {
		return 0, false
	}
	n, isNum := x.(json.Number)
	if !isNum {
		return 0, false
	}
	if i, err := n.Int64(); err == nil && i >= 0 {
		return i, true
	}
	if f, err := n.Float64(); err == nil && f >= 0 && f < 1<<62 && f == float64(int64(f)) {
		return int64(f), true
	}
	return 0, false
}

// decodeJSON decodes one JSON value keeping numbers exact.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// answer is what a CLI's output says.
type answer struct {
	parts        []plugin.Part // non-final parts, in order
	text         *string
	structured   json.RawMessage
	usage        plugin.Usage
	model        string
	stopReason   string
	isError      bool
	errorMessage string
	sawResult    bool
	textBlocks   []string // jsonl: texts of streamed text blocks
}

// applyResult reads the fields of a JSON object (output "json") or result
// line (output "jsonl") into a.
func (a *answer) applyResult(v any, f *Fields) {
	a.sawResult = true
	if s, ok := lookupString(v, f.Text); ok {
		a.text = &s
	}
	if x, ok := lookup(v, f.Structured); ok && x != nil {
		if b, err := json.Marshal(x); err == nil {
			a.structured = b
		}
	}
	if x, ok := lookup(v, f.IsError); ok {
		a.isError = x == true
	}
	if s, ok := lookupString(v, f.ErrorMessage); ok {
		a.errorMessage = s
	}
	if s, ok := lookupString(v, f.Model); ok && s != "" {
		a.model = s
	}
	if s, ok := lookupString(v, f.StopReason); ok {
		a.stopReason = s
	}
	in, okIn := lookupInt(v, f.UsageInput)
	out, okOut := lookupInt(v, f.UsageOutput)
	if okIn || okOut {
		a.usage = plugin.Usage{Known: true, Input: in, Output: out}
		a.usage.CacheRead, _ = lookupInt(v, f.UsageCacheRead)
		a.usage.CacheCreation, _ = lookupInt(v, f.UsageCacheCreation)
	}
}

// parseJSONOutput reads output "json": the whole of stdout, or failing
// that its last line that is a JSON object (CLIs sometimes print notices
// first). It reports false when there is no JSON object.
func parseJSONOutput(stdout []byte, f *Fields) (*answer, bool) {
	v, err := decodeJSON(stdout)
	if _, isObj := v.(map[string]any); err != nil || !isObj {
		v = nil
		lines := bytes.Split(bytes.TrimSpace(stdout), []byte("\n"))
		for i := len(lines) - 1; i >= 0 && v == nil; i-- {
			if l := bytes.TrimSpace(lines[i]); len(l) > 0 && l[0] == '{' {
				if x, err := decodeJSON(l); err == nil {
					v = x
				}
			}
		}
		if v == nil {
			return nil, false
		}
	}
	a := &answer{}
	a.applyResult(v, f)
	return a, true
}

// lineStream parses output "jsonl" as it arrives: every complete line is
// decoded; lines that are not JSON are skipped. Content blocks become
// events and parts, the result line fills the answer. It is an io.Writer
// for command.Request.StdoutTee, written by one goroutine.
type lineStream struct {
	fields  *Fields
	redact  *redactor
	emit    plugin.Emitter
	stop    func() // cancels the command when emitting fails
	partial []byte
	a       answer
	emitErr error
}

// Write consumes a chunk of stdout.
func (s *lineStream) Write(b []byte) (int, error) {
	s.partial = append(s.partial, b...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		s.line(s.partial[:i])
		s.partial = s.partial[i+1:]
	}
	return len(b), nil
}

// finish parses a last line without a newline. Call after the command
// ended.
func (s *lineStream) finish() *answer {
	if len(bytes.TrimSpace(s.partial)) > 0 {
		s.line(s.partial)
		s.partial = nil
	}
	return &s.a
}

func (s *lineStream) line(b []byte) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return
	}
	v, err := decodeJSON(b)
	if err != nil {
		return
	}
	f := s.fields
	if m, ok := lookupString(v, f.Model); ok && m != "" {
		s.a.model = m
	}
	if typ, _ := lookupString(v, f.Type); typ == f.ResultType {
		model := s.a.model
		s.a.applyResult(v, f)
		if s.a.model == "" {
			s.a.model = model
		}
		return
	}
	if delta, ok := lookupString(v, f.TextDelta); ok && delta != "" {
		s.send(plugin.RunEvent{Kind: plugin.EventText, Text: s.redact.str(delta)})
	}
	blocks, _ := lookup(v, f.Content)
	list, _ := blocks.([]any)
	for _, blk := range list {
		s.block(blk)
	}
}

// block turns one content block (Anthropic Messages shape: type text,
// thinking, tool_use or tool_result) into a part and an event.
func (s *lineStream) block(blk any) {
	typ, _ := lookupString(blk, "type")
	var ev plugin.RunEvent
	var part plugin.Part
	switch typ {
	case "text":
		t, _ := lookupString(blk, "text")
		t = s.redact.str(t)
		s.a.textBlocks = append(s.a.textBlocks, t)
		ev = plugin.RunEvent{Kind: plugin.EventText, Text: t}
		part = plugin.Part{Kind: plugin.PartText, Text: t}
	case "thinking":
		t, _ := lookupString(blk, "thinking")
		t = s.redact.str(t)
		ev = plugin.RunEvent{Kind: plugin.EventThinking, Text: t}
		part = plugin.Part{Kind: plugin.PartThinking, Text: t}
	case "tool_use":
		name, _ := lookupString(blk, "name")
		id, _ := lookupString(blk, "id")
		in, _ := lookup(blk, "input")
		js := s.redact.json(marshal(in))
		ev = plugin.RunEvent{Kind: plugin.EventToolUse, ToolName: name, ToolID: id, ToolJSON: js}
		part = plugin.Part{Kind: plugin.PartToolUse, ToolName: name, ToolID: id, JSON: js}
	case "tool_result":
		id, _ := lookupString(blk, "tool_use_id")
		content, _ := lookup(blk, "content")
		js := s.redact.json(marshal(content))
		ev = plugin.RunEvent{Kind: plugin.EventToolResult, ToolID: id, ToolJSON: js}
		part = plugin.Part{Kind: plugin.PartToolResult, ToolID: id, JSON: js}
	default:
		return
	}
	s.a.parts = append(s.a.parts, part)
	if ev.Kind == plugin.EventText && s.fields.TextDelta != "" {
		return // already streamed fragment by fragment
	}
	s.send(ev)
}

// send emits ev; the first emitter error stops the command.
func (s *lineStream) send(ev plugin.RunEvent) {
	if s.emitErr == nil && s.emit != nil {
		if err := s.emit(ev); err != nil {
			s.emitErr = err
			s.stop()
		}
	}
}

// marshal encodes v, null when it cannot.
func marshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}
