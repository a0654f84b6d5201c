package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestCollectAtExit: a one-shot status stops the collector up to its
// heap bound, unless the user set GOGC or GOMEMLIMIT.
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
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set, the collector's percent became %d", got)
	}
	os.Unsetenv("GOGC")
	collectAtExit()
	if got := debug.SetGCPercent(100); got != -1 {
		t.Errorf("the collector's percent is %d, want off (-1)", got)
	}
	if got := debug.SetMemoryLimit(-1); got != oneShotHeap {
		t.Errorf("the memory limit is %d, want %d", got, oneShotHeap)
	}
}
