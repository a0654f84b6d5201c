package executor

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/internal/canonjson"
	"github.com/obversa/obversa/plugin"
)

// The events every node records — its dispatch, attempt-started, engine
// call and completion — are written here by hand, straight into the
// form the record keeps: RFC 8785 canonical JSON (members sorted, strings
// escaped as RFC 8785 says, integers plain). That is the bytes
// encoding/json's output became once the store canonicalised it, without
// the reflective walk, and the store's check finds it canonical and takes
// it as it is. TestEventJSONIsCanonical and FuzzEventJSON hold each
// encoder to jcs.Transform(json.Marshal(v)) of the same value, and to the
// members of its type.

// appendData appends the canonical JSON of an event's data for the types
// written by hand; ok is false for any other type, and for a value whose
// embedded JSON (a result, parts) is not valid JSON, which encoding/json
// then reports.
func appendData(b []byte, v any) (_ []byte, ok bool) {
	switch d := v.(type) {
	case graph.AttemptStartedData:
		return appendAttemptStarted(b, d), true
	case graph.DispatchedData:
		return appendDispatched(b, d), true
	case graph.EngineAttemptData:
		return appendEngineAttempt(b, d)
	case graph.CompletedData:
		return appendCompleted(b, d)
	}
	return b, false
}

func appendAttemptStarted(b []byte, d graph.AttemptStartedData) []byte {
	b = append(b, `{"attempt_id":`...)
	b = canonjson.AppendString(b, d.AttemptID)
	b = append(b, `,"node":`...)
	b = canonjson.AppendString(b, d.Node)
	b = append(b, `,"position":`...)
	b = canonjson.AppendString(b, d.Position)
	b = append(b, `,"retry_safe":`...)
	b = strconv.AppendBool(b, d.RetrySafe)
	return append(b, '}')
}

func appendDispatched(b []byte, d graph.DispatchedData) []byte {
	if d.Dispatches == nil {
		return append(b, `{"dispatches":null}`...)
	}
	b = append(b, `{"dispatches":[`...)
	for i, x := range d.Dispatches {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"node":`...)
		b = canonjson.AppendString(b, x.Node)
		b = append(b, `,"position":`...)
		b = canonjson.AppendString(b, x.Position)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func appendEngineAttempt(b []byte, d graph.EngineAttemptData) ([]byte, bool) {
	ok := true
	b = append(b, `{"effective":`...)
	b, ok = appendRaw(b, d.Effective, ok)
	if d.FailureKind != "" {
		b = append(b, `,"failure_kind":`...)
		b = canonjson.AppendString(b, d.FailureKind)
	}
	if d.Message != "" {
		b = append(b, `,"message":`...)
		b = canonjson.AppendString(b, d.Message)
	}
	b = append(b, `,"node":`...)
	b = canonjson.AppendString(b, d.Node)
	b = append(b, `,"outcome":`...)
	b = canonjson.AppendString(b, d.Outcome)
	if len(d.Parts) > 0 {
		b = append(b, `,"parts":`...)
		b, ok = appendRaw(b, d.Parts, ok)
	}
	if d.PartsArtifact != nil {
		b = append(b, `,"parts_artifact":`...)
		b = appendArtifact(b, *d.PartsArtifact)
	}
	b = append(b, `,"position":`...)
	b = canonjson.AppendString(b, d.Position)
	if d.Refused != "" {
		b = append(b, `,"refused":`...)
		b = canonjson.AppendString(b, d.Refused)
	}
	b = append(b, `,"requested":`...)
	b, ok = appendRaw(b, d.Requested, ok)
	b = append(b, `,"sequence":`...)
	b = strconv.AppendInt(b, int64(d.Sequence), 10)
	b = append(b, `,"usage":`...)
	b, ok = appendRaw(b, d.Usage, ok)
	return append(b, '}'), ok
}

func appendCompleted(b []byte, d graph.CompletedData) ([]byte, bool) {
	ok := true
	b = append(b, `{"node":`...)
	b = canonjson.AppendString(b, d.Node)
	b = append(b, `,"position":`...)
	b = canonjson.AppendString(b, d.Position)
	if len(d.Result) > 0 {
		b = append(b, `,"result":`...)
		b, ok = appendRaw(b, d.Result, ok)
	}
	if d.ResultArtifact != nil {
		b = append(b, `,"result_artifact":`...)
		b = appendArtifact(b, *d.ResultArtifact)
	}
	return append(b, '}'), ok
}

// appendArtifact appends r with its members sorted (the struct's order is
// not).
func appendArtifact(b []byte, r graph.ArtifactRef) []byte {
	b = append(b, `{"digest":`...)
	b = canonjson.AppendString(b, r.Digest)
	b = append(b, `,"media_type":`...)
	b = canonjson.AppendString(b, r.MediaType)
	b = append(b, `,"purpose":`...)
	b = canonjson.AppendString(b, r.Purpose)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, r.Size, 10)
	return append(b, '}')
}

// appendRaw appends embedded JSON as encoding/json marshals a
// json.RawMessage: null when empty, else compacted. A value that is not
// JSON leaves ok false. What it appends need not be canonical (a plugin's
// structured result): the store canonicalises what is not. Most values
// are canonical already (the identities, usage and parts the executor
// wrote itself, a text result): those are checked in one pass and copied.
func appendRaw(b []byte, raw json.RawMessage, ok bool) ([]byte, bool) {
	if len(raw) == 0 {
		return append(b, "null"...), ok
	}
	if canonjson.IsCanonical(raw) {
		// Canonical JSON is valid and compact already: json.Compact would
		// copy it unchanged, at several times the cost of the check.
		return append(b, raw...), ok
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return b, false
	}
	return buf.Bytes(), ok
}

// appendIdentity appends t as identityJSON records it: plugin.Identity's
// members sorted, tools null when nil.
func appendIdentity(b []byte, t plugin.Identity) []byte {
	b = append(b, `{"adapter":`...)
	b = canonjson.AppendString(b, t.Adapter)
	b = append(b, `,"model":`...)
	b = canonjson.AppendString(b, t.Model)
	b = append(b, `,"model_family":`...)
	b = canonjson.AppendString(b, t.ModelFamily)
	b = append(b, `,"provider":`...)
	b = canonjson.AppendString(b, t.Provider)
	b = append(b, `,"tools":`...)
	if t.Tools == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, tool := range t.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = canonjson.AppendString(b, tool)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendUsage appends u as usageJSON records it: plugin.Usage's members
// sorted, each count omitted when zero.
func appendUsage(b []byte, u plugin.Usage) []byte {
	b = append(b, '{')
	for _, m := range []struct {
		name string
		n    int64
	}{{`"cache_creation":`, u.CacheCreation}, {`"cache_read":`, u.CacheRead}, {`"input":`, u.Input}} {
		if m.n != 0 {
			b = append(b, m.name...)
			b = strconv.AppendInt(b, m.n, 10)
			b = append(b, ',')
		}
	}
	b = append(b, `"known":`...)
	b = strconv.AppendBool(b, u.Known)
	if u.Output != 0 {
		b = append(b, `,"output":`...)
		b = strconv.AppendInt(b, u.Output, 10)
	}
	return append(b, '}')
}

// appendParts appends parts as partsJSON records them: plugin.Part's
// members sorted, empty ones omitted, null for nil. ok is false when a
// part's JSON is not valid JSON.
func appendParts(b []byte, parts []plugin.Part) ([]byte, bool) {
	if parts == nil {
		return append(b, "null"...), true
	}
	ok := true
	b = append(b, '[')
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		sep := false
		if p.Final {
			b = append(b, `"final":true`...)
			sep = true
		}
		if len(p.JSON) > 0 {
			if sep {
				b = append(b, ',')
			}
			b = append(b, `"json":`...)
			b, ok = appendRaw(b, p.JSON, ok)
			sep = true
		}
		if sep {
			b = append(b, ',')
		}
		b = append(b, `"kind":`...)
		b = canonjson.AppendString(b, string(p.Kind))
		for _, m := range []struct{ name, v string }{{`,"text":`, p.Text}, {`,"tool_id":`, p.ToolID}, {`,"tool_name":`, p.ToolName}} {
			if m.v != "" {
				b = append(b, m.name...)
				b = canonjson.AppendString(b, m.v)
			}
		}
		b = append(b, '}')
	}
	return append(b, ']'), ok
}
