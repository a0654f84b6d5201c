package plugin

import (
	"fmt"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// usageToProto encodes u; unknown usage is sent as unknown, never as zero
// counts. Negative counts are not representable and arrive as values the
// host rejects.
func usageToProto(u Usage) *pb.Usage {
	if !u.Known {
		return &pb.Usage{State: &pb.Usage_Unknown_{Unknown: &pb.Usage_Unknown{}}}
	}
	return &pb.Usage{State: &pb.Usage_Reported_{Reported: &pb.Usage_Reported{
		Input:         uint64(u.Input),
		Output:        uint64(u.Output),
		CacheRead:     uint64(u.CacheRead),
		CacheCreation: uint64(u.CacheCreation),
	}}}
}

// MaxUsageCount is the largest token count a usage report may carry:
// 2^53 − 1, the largest integer the record holds exactly (its JSON is
// I-JSON, RFC 7493 §2.2). A larger count is a protocol violation, refused
// like any invalid message, rather than a value that could not be
// recorded.
const MaxUsageCount = 1<<53 - 1

// usageFields names the counts of a reported Usage, in their wire order,
// as the protocol's Usage message names its fields.
var usageFields = [...]string{"input", "output", "cache_read", "cache_creation"}

// usageRangeError is the error for a count c of field above
// MaxUsageCount. A count of 2^63 or more is, in every plugin seen, a
// negative number sent as unsigned (a Go int64 converted to uint64): the
// error says so and gives the signed value, which is what the plugin's
// author wrote, instead of only the wrapped one.
func usageRangeError(field string, c uint64) error {
	if c >= 1<<63 {
		return fmt.Errorf("usage count %s is %d, which is %d read as a signed 64-bit number: a negative count, sent as unsigned; counts are 0 to 2^53 − 1 (%d)",
			field, c, int64(c), uint64(MaxUsageCount))
	}
	return fmt.Errorf("usage count %s is %d, out of range: counts are 0 to 2^53 − 1 (%d)", field, c, uint64(MaxUsageCount))
}

// usageFromProto decodes m; a missing Usage or one with no state set is
// unknown. A count above MaxUsageCount is an error.
func usageFromProto(m *pb.Usage) (Usage, error) {
	r := m.GetReported()
	if r == nil {
		return Usage{}, nil
	}
	counts := []uint64{r.GetInput(), r.GetOutput(), r.GetCacheRead(), r.GetCacheCreation()}
	for i, c := range counts {
		if c > MaxUsageCount {
			return Usage{}, usageRangeError(usageFields[i], c)
		}
	}
	return Usage{
		Known:         true,
		Input:         int64(counts[0]),
		Output:        int64(counts[1]),
		CacheRead:     int64(counts[2]),
		CacheCreation: int64(counts[3]),
	}, nil
}
