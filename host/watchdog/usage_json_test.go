package watchdog

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/obversa/obversa/plugin"
)

// TestUsageCountersJSON: a known usage total encodes as the map of
// counters status reported before UsageCounters.
func TestUsageCountersJSON(t *testing.T) {
	for _, u := range []plugin.Usage{
		{Known: true},
		{Known: true, Input: 1, Output: 5},
		{Known: true, Input: 12, Output: 345, CacheRead: 6789, CacheCreation: 10},
		{Known: true, Input: math.MaxInt64, Output: math.MinInt64, CacheRead: -1, CacheCreation: 1 << 40},
	} {
		v := usageValue(u)
		got, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(map[string]int64{"input": u.Input, "output": u.Output,
			"cache_read": u.CacheRead, "cache_creation": u.CacheCreation})
		if string(got) != string(want) {
			t.Errorf("%+v: json.Marshal gives %s, want %s", u, got, want)
		}
		if _, ok := v.(UsageCounters); !ok {
			t.Fatalf("%+v: usageValue gives %T, want UsageCounters", u, v)
		}
	}
	if v := usageValue(plugin.Usage{}); v != "unknown" {
		t.Errorf("unknown usage gives %v", v)
	}
}
