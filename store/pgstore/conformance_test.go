package pgstore

import (
	"context"
	"testing"

	"github.com/obversa/obversa/store"
	"github.com/obversa/obversa/store/storetest"
)

// TestConformance runs the backend conformance suite on PostgreSQL: each
// case on a fresh schema, Adopt through a child process given the lease
// in its environment, damage by rewriting a stored blob or an event's data.
func TestConformance(t *testing.T) {
	url := testURL(t)
	storetest.Run(t, func(t *testing.T) store.Backend {
		c := testConfig(t, url, testSchema(t))
		c.LocalDir = t.TempDir()
		b, err := Open(context.Background(), c, "conformance")
		if err != nil {
			t.Fatal(err)
		}
		return b
	}, storetest.WithAdopt(adoptInChild), storetest.WithDamage(func(t *testing.T, b store.Backend, id string, ref store.ArtifactRef) {
		sqlExec(t, b.(*Backend), `UPDATE artifacts SET data = convert_to(repeat('X', $3), 'UTF8')
			WHERE run_id = $1 AND digest = $2`, id, ref.Digest, int(ref.Size))
	}), storetest.WithEventEdit(func(t *testing.T, b store.Backend, id string, rev int64, from, to string) {
		sqlExec(t, b.(*Backend), `UPDATE events SET data = replace(data, $3, $4) WHERE run_id = $1 AND rev = $2`, id, rev, from, to)
	}))
}
