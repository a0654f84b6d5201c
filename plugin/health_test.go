package plugin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/obversa/obversa/plugin"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode    string
		timeout time.Duration
		want    error
	}{
		{"both", time.Second, nil},
		{"not-serving", time.Second, plugin.ErrNotServing},
		{"hang-health", 300 * time.Millisecond, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			c := launch(t, tt.mode, plugin.TypeEngine)
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			start := time.Now()
			err := c.Health(ctx)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("Health = %v, want %v", err, tt.want)
			}
			if took := time.Since(start); took > tt.timeout+2*time.Second {
				t.Errorf("Health took %s with a %s deadline", took, tt.timeout)
			}
		})
	}
}
