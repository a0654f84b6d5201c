package plugin

import (
	"encoding/json"
	"math"
	"time"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// Conversions between the Go types of this package and the generated wire
// types, one file per message family (convert_*.go); this file holds the
// helpers they share. Functions named ...FromProto validate what a peer
// sent; the ones that can fail return errors that callers wrap with
// ErrProtocol (host side) or turn into InvalidArgument (plugin side).

func invert[K, V comparable](m map[K]V) map[V]K {
	out := make(map[V]K, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

// durationToMs converts d to whole milliseconds, rounding a positive
// sub-millisecond duration up to 1 so that it never reads as "none".
func durationToMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	ms := d.Milliseconds()
	if ms == 0 {
		return 1
	}
	return ms
}

// deadlineMs converts a call's remaining time d to whole milliseconds,
// rounded up: an Attempts call's deadline is its timeout_ms counted from
// when it arrives, and rounded down it could pass in the plugin before
// the host's own, so that the plugin's answer to its deadline (a timeout
// or aborted failure it reports itself, a definite outcome) would arrive
// in place of the node's timeout, which cuts the call off
// (docs/writing-plugins.md, "The attempt stream").
func deadlineMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// msToDuration converts milliseconds to a duration; non-positive values are
// 0 and values beyond the range of time.Duration saturate.
func msToDuration(ms int64) time.Duration {
	if ms <= 0 {
		return 0
	}
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms) * time.Millisecond
}

// rawJSON returns b as a json.RawMessage, nil when empty.
func rawJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

func identityToProto(id Identity) *pb.Identity {
	return &pb.Identity{
		Adapter:     wireText(id.Adapter),
		Provider:    wireText(id.Provider),
		ModelFamily: wireText(id.ModelFamily),
		Model:       wireText(id.Model),
		Tools:       wireTexts(id.Tools),
	}
}

func identityFromProto(m *pb.Identity) Identity {
	return Identity{
		Adapter:     m.GetAdapter(),
		Provider:    m.GetProvider(),
		ModelFamily: m.GetModelFamily(),
		Model:       m.GetModel(),
		Tools:       append([]string(nil), m.GetTools()...),
	}
}
