package onep

import (
	"os"
	"runtime"
	"testing"
)

func TestOneP(t *testing.T) {
	if v := os.Getenv("GOMAXPROCS"); v != "" {
		t.Skipf("GOMAXPROCS=%s is set: the package leaves it", v)
	}
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("GOMAXPROCS(0) = %d, want 1", n)
	}
}
