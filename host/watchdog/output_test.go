package watchdog

import (
	"bytes"
	"testing"
)

func TestLimitWriter(t *testing.T) {
	var buf bytes.Buffer
	w := &limitWriter{w: &buf, limit: 10, over: make(chan struct{})}
	for _, s := range []string{"12345", "6789", "abc", "def"} {
		if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	select {
	case <-w.over:
	default:
		t.Fatal("over not closed past the limit")
	}
	if buf.String() != "123456789" {
		t.Errorf("passed through %q, want what fit the limit", buf.String())
	}
}
