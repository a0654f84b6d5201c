package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// gcSettings reads the collector's percent and memory limit without
// changing them.
func gcSettings() (percent, limit int64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()), int64(s[1].Value.Uint64())
}

// TestCollectAtExit: a one-shot status stops the collector up to its
// heap bound, unless the user set GOGC or GOMEMLIMIT, and the first
// collection hands the process back to the default pacing.
func TestCollectAtExit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		if v, ok := os.LookupEnv(env); ok {
			t.Skipf("%s=%s is set for this test process", env, v)
		}
	}
	t.Setenv("GOGC", "150")
	collectAtExit()
	if p, _ := gcSettings(); p != 100 {
		t.Errorf("with GOGC set, the collector's percent became %d", p)
	}
	os.Unsetenv("GOGC")
	collectAtExit()
	// The collector's percent reads as 0 while it is off (-1).
	if p, l := gcSettings(); p > 0 || l != oneShotHeap {
		t.Fatalf("the collector's percent is %d and its limit %d; want off and %d", p, l, oneShotHeap)
	}
	runtime.GC()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		p, l := gcSettings()
		if p == 100 && l == math.MaxInt64 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a collection the collector's percent is %d and its limit %d; want the default pacing (100, none)", p, l)
		}
	}
}
