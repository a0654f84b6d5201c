package executor

import (
	"encoding/json"

	"github.com/obversa/obversa/plugin"
)

// The record keeps event data in RFC 8785 canonical form, and takes data
// already in it as it is; data with members out of order it sorts first
// (store: canonical data). The plugin types an engine call records are
// marshalled through these mirrors, whose fields are in RFC 8785 member
// order, so that a node's graph:engine-attempt-recorded needs no sorting.
// Each mirror has every JSON member of its plugin type
// (TestCanonicalMirrors).

// canonIdentity is plugin.Identity in member order.
type canonIdentity struct {
	Adapter     string   `json:"adapter"`
	Model       string   `json:"model"`
	ModelFamily string   `json:"model_family"`
	Provider    string   `json:"provider"`
	Tools       []string `json:"tools"`
}

// canonUsage is plugin.Usage in member order.
type canonUsage struct {
	CacheCreation int64 `json:"cache_creation,omitempty"`
	CacheRead     int64 `json:"cache_read,omitempty"`
	Input         int64 `json:"input,omitempty"`
	Known         bool  `json:"known"`
	Output        int64 `json:"output,omitempty"`
}

// canonPart is plugin.Part in member order.
type canonPart struct {
	Final    bool            `json:"final,omitempty"`
	JSON     json.RawMessage `json:"json,omitempty"`
	Kind     plugin.PartKind `json:"kind"`
	Text     string          `json:"text,omitempty"`
	ToolID   string          `json:"tool_id,omitempty"`
	ToolName string          `json:"tool_name,omitempty"`
}

// identityJSON marshals t for the record.
func identityJSON(t plugin.Identity) json.RawMessage {
	return mustJSON(canonIdentity{Adapter: t.Adapter, Model: t.Model, ModelFamily: t.ModelFamily, Provider: t.Provider, Tools: t.Tools})
}

// usageJSON marshals u for the record.
func usageJSON(u plugin.Usage) json.RawMessage {
	return mustJSON(canonUsage{CacheCreation: u.CacheCreation, CacheRead: u.CacheRead, Input: u.Input, Known: u.Known, Output: u.Output})
}

// partsJSON marshals parts for the record.
func partsJSON(parts []plugin.Part) json.RawMessage {
	if parts == nil {
		return mustJSON(parts) // null, as the plugin type marshals
	}
	out := make([]canonPart, len(parts))
	for i, p := range parts {
		out[i] = canonPart{Final: p.Final, JSON: p.JSON, Kind: p.Kind, Text: p.Text, ToolID: p.ToolID, ToolName: p.ToolName}
	}
	return mustJSON(out)
}
