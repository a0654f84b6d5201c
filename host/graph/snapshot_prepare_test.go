package graph

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/obversa/obversa/host/snapcodec"
)

// TestPrepareRestore: a restore whose shape was prepared ahead — inline
// for a small definition, on a goroutine of its own for a large one (run
// with -race) — is the State the snapshot holds, byte for byte when
// encoded again; a Shaping serves one Restore.
func TestPrepareRestore(t *testing.T) {
	for _, n := range []int{3, prepareOnGoroutine + 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			def := &Definition{Name: "dag", GlobalConcurrency: 2}
			for i := range n {
				d := NodeDef{ID: fmt.Sprintf("n%d", i), Kind: KindRequired, Lane: "w", Prompt: "p"}
				if i > 0 {
					d.DependsOn = []string{fmt.Sprintf("n%d", (i-1)/4)}
				}
				def.Nodes = append(def.Nodes, d)
			}
			s, err := New(def)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.ApplyData(DispatchedData{Dispatches: []Dispatch{{Node: "n0", Position: "dag/n0/1"}}}); err != nil {
				t.Fatal(err)
			}
			encode := func(s *State) []byte {
				w := snapcodec.NewWriter(0)
				if err := s.EncodeSnapshot(w); err != nil {
					t.Fatal(err)
				}
				b, err := w.Finish()
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			want := encode(s)
			reader := func() *snapcodec.Reader {
				r, err := snapcodec.NewReader(want)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			p := Prepare(def)
			got, err := p.Restore(reader())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(encode(got), want) {
				t.Fatal("the restored State encodes differently")
			}
			if got.Node("n0").Status != StatusDispatched || got.Vertex(fmt.Sprintf("n%d", n-1)) == nil {
				t.Fatal("the restored State lost the dispatch or a vertex")
			}
			if _, err := p.Restore(reader()); !errors.Is(err, ErrSnapshot) {
				t.Errorf("second Restore of one Shaping: %v, want ErrSnapshot", err)
			}
		})
	}
}
