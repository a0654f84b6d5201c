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

// usageFromProto decodes m; a missing Usage or one with no state set is
// unknown. A count above MaxUsageCount is an error.
func usageFromProto(m *pb.Usage) (Usage, error) {
	r := m.GetReported()
	if r == nil {
		return Usage{}, nil
	}
	counts := []uint64{r.GetInput(), r.GetOutput(), r.GetCacheRead(), r.GetCacheCreation()}
	for _, c := range counts {
		if c > MaxUsageCount {
			return Usage{}, fmt.Errorf("usage count %d out of range (at most 2^53 − 1, %d)", c, uint64(MaxUsageCount))
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
