//go:build failpoints

package failpoint

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestArmed: a point reports itself armed only when a Hit of it would
// act, so that the executor's crash points, which commit before they hit,
// leave a tagged binary's record as a release build writes it.
func TestArmed(t *testing.T) {
	dir := t.TempDir()
	fired := filepath.Join(dir, "fired")
	if err := os.WriteFile(fired, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pending := filepath.Join(dir, "pending")
	handler := WithHandler(context.Background(), func(string, string) {})
	tests := []struct {
		name string
		ctx  context.Context
		a    *arm
		want bool
	}{
		{"nothing armed", context.Background(), nil, false},
		{"another point", context.Background(), &arm{AfterStart, "n", "-"}, false},
		{"another key", context.Background(), &arm{AfterDispatch, "m", "-"}, false},
		{"fires every time", context.Background(), &arm{AfterDispatch, "n", "-"}, true},
		{"not fired yet", context.Background(), &arm{AfterDispatch, "n", pending}, true},
		{"fired in an earlier process", context.Background(), &arm{AfterDispatch, "n", fired}, false},
		{"a handler decides", handler, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := armedFor(tt.ctx, tt.a, AfterDispatch, "n"); got != tt.want {
				t.Errorf("armedFor(%+v) = %v, want %v", tt.a, got, tt.want)
			}
		})
	}
}
