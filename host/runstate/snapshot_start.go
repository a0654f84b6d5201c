package runstate

import (
	"encoding/json"
	"fmt"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
)

// The run's start (graph:run-started) in a fold snapshot. A reader that
// took it from the record's first event would decode the whole definition
// as JSON, which for a graph of tens of thousands of nodes costs more than
// the rest of the restore; the snapshot keeps it instead. The definition
// is a gob mirror (defSnap) that says which lists were empty and which
// absent, because gob decodes both as nil and a definition must come back
// exactly as recorded (docs/architecture.md, "Fold snapshot"); the rest of
// the event, the plan included, is small and kept as JSON.

// startSnap is the run's start: the event without its definition, as
// JSON, and the definition.
type startSnap struct {
	Head []byte
	Def  defSnap
}

type defSnap struct {
	Name              string
	GlobalConcurrency int
	Keyed             []graph.KeyLimit
	KeyedSet          bool // Keyed is not nil
	StopOnError       bool
	RetryCapPerNode   int
	Nodes             []nodeSnap
	NodesSet          bool
}

type nodeSnap struct {
	ID, Kind, Lane, Binding, Prompt string
	Input                           []byte
	InputSet                        bool
	DependsOn                       []string
	DependsOnSet                    bool
	RetrySafe                       bool
	TimeoutMS                       int64
	Key                             string
	Approval                        bool
	ForEach                         forEachSnap
	ForEachSet                      bool
	Loop                            *loopSnap
}

type forEachSnap struct {
	Items    []itemSnap
	ItemsSet bool
	Source   string
	MaxItems int
}

type itemSnap struct {
	Key      string
	Value    []byte
	ValueSet bool
}

type loopSnap struct {
	MaxRounds  int
	Review     string
	Until      string
	Members    []nodeSnap
	MembersSet bool
}

// snapStart returns the mirror of rs.
func snapStart(rs *plan.RunStarted) (startSnap, error) {
	head := *rs
	head.Definition = nil
	b, err := json.Marshal(&head)
	if err != nil {
		return startSnap{}, err
	}
	d := rs.Definition
	return startSnap{Head: b, Def: defSnap{Name: d.Name, GlobalConcurrency: d.GlobalConcurrency,
		Keyed: d.KeyedConcurrency, KeyedSet: d.KeyedConcurrency != nil, StopOnError: d.StopOnError,
		RetryCapPerNode: d.RetryCapPerNode, Nodes: snapNodes(d.Nodes), NodesSet: d.Nodes != nil}}, nil
}

func snapNodes(ns []graph.NodeDef) []nodeSnap {
	out := make([]nodeSnap, len(ns))
	for i := range ns {
		n := &ns[i]
		o := &out[i]
		*o = nodeSnap{ID: n.ID, Kind: n.Kind, Lane: n.Lane, Binding: n.Binding, Prompt: n.Prompt,
			Input: n.Input, InputSet: n.Input != nil, DependsOn: n.DependsOn, DependsOnSet: n.DependsOn != nil,
			RetrySafe: n.RetrySafe, TimeoutMS: n.TimeoutMS, Key: n.Key, Approval: n.Approval}
		if f := n.ForEach; f != nil {
			o.ForEachSet = true
			o.ForEach = forEachSnap{ItemsSet: f.Items != nil, Source: f.Source, MaxItems: f.MaxItems}
			for _, it := range f.Items {
				o.ForEach.Items = append(o.ForEach.Items, itemSnap{Key: it.Key, Value: it.Value, ValueSet: it.Value != nil})
			}
		}
		if l := n.Loop; l != nil {
			o.Loop = &loopSnap{MaxRounds: l.MaxRounds, Review: l.Review, Until: l.Until,
				Members: snapNodes(l.Members), MembersSet: l.Members != nil}
		}
	}
	return out
}

// restore returns the start the mirror holds. Errors wrap
// ErrSnapshotInvalid.
func (ss *startSnap) restore() (*plan.RunStarted, error) {
	var rs plan.RunStarted
	if err := json.Unmarshal(ss.Head, &rs); err != nil {
		return nil, fmt.Errorf("%w: start: %v", ErrSnapshotInvalid, err)
	}
	if rs.Plan == nil || rs.Definition != nil {
		return nil, fmt.Errorf("%w: start: no plan, or a definition in the wrong place", ErrSnapshotInvalid)
	}
	d := &ss.Def
	def := &graph.Definition{Name: d.Name, GlobalConcurrency: d.GlobalConcurrency, KeyedConcurrency: d.Keyed,
		StopOnError: d.StopOnError, RetryCapPerNode: d.RetryCapPerNode}
	if d.KeyedSet && def.KeyedConcurrency == nil {
		def.KeyedConcurrency = []graph.KeyLimit{}
	}
	if d.NodesSet {
		def.Nodes = restoreNodes(d.Nodes)
	}
	rs.Definition = def
	return &rs, nil
}

func restoreNodes(ns []nodeSnap) []graph.NodeDef {
	out := make([]graph.NodeDef, len(ns))
	for i := range ns {
		n := &ns[i]
		o := &out[i]
		*o = graph.NodeDef{ID: n.ID, Kind: n.Kind, Lane: n.Lane, Binding: n.Binding, Prompt: n.Prompt,
			Input: orEmpty(n.Input, n.InputSet), DependsOn: n.DependsOn, RetrySafe: n.RetrySafe,
			TimeoutMS: n.TimeoutMS, Key: n.Key, Approval: n.Approval}
		if n.DependsOnSet && o.DependsOn == nil {
			o.DependsOn = []string{}
		}
		if n.ForEachSet {
			f := &graph.ForEachDef{Source: n.ForEach.Source, MaxItems: n.ForEach.MaxItems}
			if n.ForEach.ItemsSet {
				f.Items = make([]graph.ForEachItem, len(n.ForEach.Items))
				for j, it := range n.ForEach.Items {
					f.Items[j] = graph.ForEachItem{Key: it.Key, Value: orEmpty(it.Value, it.ValueSet)}
				}
			}
			o.ForEach = f
		}
		if l := n.Loop; l != nil {
			o.Loop = &graph.LoopDef{MaxRounds: l.MaxRounds, Review: l.Review, Until: l.Until}
			if l.MembersSet {
				o.Loop.Members = restoreNodes(l.Members)
			}
		}
	}
	return out
}

// orEmpty returns b, or an empty message for a nil b that was set.
func orEmpty(b []byte, set bool) json.RawMessage {
	if b == nil && set {
		return json.RawMessage{}
	}
	return b
}
