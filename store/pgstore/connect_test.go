package pgstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/obversa/obversa/store"
)

// TestConnectRefusedSaidOnce: a database that cannot be reached is a
// storage problem (store.ErrUnavailable) naming the database without a
// password, giving the reason once and what to check — not the driver's
// text, which repeats the reason for every attempt.
func TestConnectRefusedSaidOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url, want string
	}{
		{"postgres://x@127.0.0.1:1/db", "postgres://x@127.0.0.1:1/db"},
		{"postgres://x@127.0.0.1:1/other?sslmode=disable", "postgres://x@127.0.0.1:1/other"},
	} {
		_, err := OpenURL(context.Background(), tc.url, t.TempDir(), "ns")
		if err == nil {
			t.Fatalf("%s: opened", tc.url)
		}
		msg := err.Error()
		if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(msg, tc.want) ||
			strings.Count(msg, "connection refused") != 1 || strings.Contains(msg, "\n") ||
			!strings.Contains(msg, "is the PostgreSQL server running") {
			t.Errorf("%s: %v; want one reason, naming %s, with what to check", tc.url, err, tc.want)
		}
	}
}
