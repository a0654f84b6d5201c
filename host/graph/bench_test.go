package graph

import (
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkFold decides and folds, in process, the whole record of a DAG
// of n nodes with fan-out 32 (node i depends on node (i-1)/32, the shape
// of cmd/obversa's BenchmarkScale), as a worker does: each decision, its
// dispatch, the attempts started, and a result for the oldest position
// in flight, 32 at a time. It reports ns/node: when the cost per node of
// the 10 000-node row is that of the 1 000-node row, the fold is linear
// in the graph's size.
func BenchmarkFold(b *testing.B) {
	for _, n := range []int{1000, 10_000} {
		b.Run(fmt.Sprintf("DAG%d", n), func(b *testing.B) {
			def := &Definition{Name: "g", GlobalConcurrency: 32}
			for i := range n {
				nd := NodeDef{ID: fmt.Sprintf("n%d", i), Kind: KindRequired, Binding: "b", DependsOn: []string{}}
				if i > 0 {
					nd.DependsOn = []string{fmt.Sprintf("n%d", (i-1)/32)}
				}
				def.Nodes = append(def.Nodes, nd)
			}
			b.ResetTimer()
			for range b.N {
				foldDAG(b, def)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/node")
		})
	}
}

func foldDAG(b *testing.B, def *Definition) {
	s, err := New(def)
	if err != nil {
		b.Fatal(err)
	}
	var queue []*NodeState
	for {
		d := s.Decide()
		if d.Outcome != nil {
			if d.Outcome.Kind != OutcomeComplete {
				b.Fatalf("outcome %+v", d.Outcome)
			}
			return
		}
		if len(d.Dispatches) > 0 {
			if err := s.ApplyData(DispatchedData{Dispatches: d.Dispatches}); err != nil {
				b.Fatal(err)
			}
			for _, x := range d.Dispatches {
				if err := s.ApplyData(AttemptStartedData{Node: x.Node, Position: x.Position}); err != nil {
					b.Fatal(err)
				}
				queue = append(queue, s.AtPosition(x.Position))
			}
		}
		n := queue[0]
		queue = queue[1:]
		if err := s.ApplyData(CompletedData{Node: n.Def.ID, Position: n.Position, Result: json.RawMessage(`"ok"`)}); err != nil {
			b.Fatal(err)
		}
	}
}
