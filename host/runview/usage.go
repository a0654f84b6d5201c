package runview

import (
	"encoding/json"

	"github.com/obversa/obversa/host/stream"
	"github.com/obversa/obversa/plugin"
)

// Usage is a usage total as views show it: in JSON "unknown" or
// {input, output, cache_read, cache_creation} (tokens), the shape of
// `obversa status --json`.
type Usage struct{ plugin.Usage }

// MarshalJSON writes "unknown" or the counters.
func (u Usage) MarshalJSON() ([]byte, error) {
	if !u.Known {
		return []byte(`"unknown"`), nil
	}
	return json.Marshal(map[string]int64{"input": u.Input, "output": u.Output, "cache_read": u.CacheRead, "cache_creation": u.CacheCreation})
}

// String is the usage for people: "unknown" or "in 120 · out 45".
func (u Usage) String() string { return stream.UsageText(&u.Usage) }
