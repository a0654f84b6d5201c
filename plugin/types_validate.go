package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Validate reports whether u is consistent: reported counts are never
// negative nor above MaxUsageCount, and unknown usage carries no counts (unknown is never zero,
// docs/writing-plugins.md).
func (u Usage) Validate() error {
	if !u.Known {
		if u.Input != 0 || u.Output != 0 || u.CacheRead != 0 || u.CacheCreation != 0 {
			return errors.New("unknown usage carries token counts")
		}
		return nil
	}
	if u.Input < 0 || u.Output < 0 || u.CacheRead < 0 || u.CacheCreation < 0 {
		return fmt.Errorf("reported usage has a negative count: %+v", u)
	}
	if u.Input > MaxUsageCount || u.Output > MaxUsageCount || u.CacheRead > MaxUsageCount || u.CacheCreation > MaxUsageCount {
		return fmt.Errorf("reported usage has a count above 2^53 − 1 (MaxUsageCount): %+v", u)
	}
	return nil
}

// Valid reports whether k is one of the streamed event kinds.
func (k EventKind) Valid() bool {
	switch k {
	case EventText, EventThinking, EventToolUse, EventToolResult, EventUsage:
		return true
	}
	return false
}

// Validate reports whether e is a well-formed event: a known kind, tool JSON
// that is valid JSON when present, and consistent usage.
func (e RunEvent) Validate() error {
	if !e.Kind.Valid() {
		return fmt.Errorf("unknown event kind %q", e.Kind)
	}
	if len(e.ToolJSON) > 0 && !json.Valid(e.ToolJSON) {
		return fmt.Errorf("%s event: tool JSON is not valid JSON", e.Kind)
	}
	if err := e.Usage.Validate(); err != nil {
		return fmt.Errorf("%s event: %w", e.Kind, err)
	}
	return nil
}

// Valid reports whether k is one of the result part kinds.
func (k PartKind) Valid() bool {
	switch k {
	case PartText, PartThinking, PartToolUse, PartToolResult, PartStructured:
		return true
	}
	return false
}

// Validate reports whether r is a well-formed terminal result (docs/writing-plugins.md):
// every part has a known kind and valid JSON where JSON is present, a
// structured part carries JSON, exactly one part is final and it is a text
// or structured part, and usage is consistent. The host rejects a result
// that fails this check as a protocol violation.
func (r *RunResult) Validate() error {
	finals := 0
	for i, p := range r.Parts {
		if !p.Kind.Valid() {
			return fmt.Errorf("part %d: unknown kind %q", i, p.Kind)
		}
		if len(p.JSON) > 0 && !json.Valid(p.JSON) {
			return fmt.Errorf("part %d (%s): JSON is not valid", i, p.Kind)
		}
		if p.Kind == PartStructured && len(p.JSON) == 0 {
			return fmt.Errorf("part %d: structured part has no JSON", i)
		}
		if !p.Final {
			continue
		}
		finals++
		if p.Kind != PartText && p.Kind != PartStructured {
			return fmt.Errorf("part %d: final part is %s, want text or structured", i, p.Kind)
		}
	}
	if finals != 1 {
		return fmt.Errorf("result has %d final parts, want exactly 1", finals)
	}
	if err := r.Usage.Validate(); err != nil {
		return fmt.Errorf("result usage: %w", err)
	}
	return nil
}
