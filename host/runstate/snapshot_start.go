package runstate

import (
	"encoding/json"
	"fmt"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/snapcodec"
)

// The run's start (graph:run-started) in a fold snapshot. A reader that
// took it from the record's first event would decode the whole definition
// as JSON, which for a graph of tens of thousands of nodes costs more than
// the rest of the restore; the snapshot keeps it instead. The definition
// is written field by field, with a flag for each list that says whether
// it was empty or absent and for each pointer whether it was set, because
// a definition must come back exactly as recorded (docs/architecture.md,
// "Fold snapshot"); the rest of the event, the plan included, is small
// and kept as JSON. TestSnapshotStartMirrorsEveryField fails when a field
// of the definition's types is not written here.

// encodeStart writes rs: the event without its definition, as JSON, and
// the definition. Errors: the JSON encoder's.
func encodeStart(w *snapcodec.Writer, rs *plan.RunStarted) error {
	head := *rs
	head.Definition = nil
	b, err := json.Marshal(&head)
	if err != nil {
		return err
	}
	w.Bytes(b)
	d := rs.Definition
	w.Str(d.Name)
	w.Int(int64(d.GlobalConcurrency))
	w.Bool(d.KeyedConcurrency != nil)
	w.Uint(uint64(len(d.KeyedConcurrency)))
	for _, k := range d.KeyedConcurrency {
		w.Str(k.Key)
		w.Int(int64(k.Limit))
	}
	w.Bool(d.StopOnError)
	w.Int(int64(d.RetryCapPerNode))
	w.Bool(d.Nodes != nil)
	encodeNodes(w, d.Nodes)
	return nil
}

func encodeNodes(w *snapcodec.Writer, ns []graph.NodeDef) {
	w.Uint(uint64(len(ns)))
	for i := range ns {
		n := &ns[i]
		w.Str(n.ID)
		w.Str(n.Kind)
		w.Str(n.Lane)
		w.Str(n.Binding)
		w.Str(n.Prompt)
		w.Bytes(n.Input)
		w.Bool(n.DependsOn != nil)
		w.Uint(uint64(len(n.DependsOn)))
		for _, d := range n.DependsOn {
			w.Str(d)
		}
		w.Bool(n.RetrySafe)
		w.Int(n.TimeoutMS)
		w.Str(n.Key)
		w.Bool(n.Approval)
		w.Bool(n.ForEach != nil)
		if f := n.ForEach; f != nil {
			w.Bool(f.Items != nil)
			w.Uint(uint64(len(f.Items)))
			for _, it := range f.Items {
				w.Str(it.Key)
				w.Bytes(it.Value)
			}
			w.Str(f.Source)
			w.Int(int64(f.MaxItems))
		}
		w.Bool(n.Loop != nil)
		if l := n.Loop; l != nil {
			w.Int(int64(l.MaxRounds))
			w.Str(l.Review)
			w.Str(l.Until)
			w.Bool(l.Members != nil)
			encodeNodes(w, l.Members)
		}
	}
}

// decodeStart reads a start written by encodeStart. Errors wrap
// ErrSnapshotInvalid.
func decodeStart(r *snapcodec.Reader) (*plan.RunStarted, error) {
	var rs plan.RunStarted
	if err := json.Unmarshal(r.Bytes(), &rs); err != nil {
		return nil, fmt.Errorf("%w: start: %w", ErrSnapshotInvalid, err)
	}
	if rs.Plan == nil || rs.Definition != nil {
		return nil, fmt.Errorf("%w: start: no plan, or a definition in the wrong place", ErrSnapshotInvalid)
	}
	def := &graph.Definition{Name: r.Str(), GlobalConcurrency: int(r.Int())}
	if keyedSet, n := r.Bool(), r.Len(); keyedSet {
		def.KeyedConcurrency = make([]graph.KeyLimit, n)
		for i := range n {
			def.KeyedConcurrency[i] = graph.KeyLimit{Key: r.Str(), Limit: int(r.Int())}
		}
	}
	def.StopOnError, def.RetryCapPerNode = r.Bool(), int(r.Int())
	nodesSet := r.Bool()
	if nodes := decodeNodes(r, 0); nodesSet {
		def.Nodes = orEmptyList(nodes)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%w: start: %w", ErrSnapshotInvalid, err)
	}
	rs.Definition = def
	return &rs, nil
}

// maxLoopDepth bounds how deep loops nest in a snapshot's definition, so
// that damaged input cannot recurse without end; validation allows far
// fewer levels.
const maxLoopDepth = 64

// decodeNodes reads a list written by encodeNodes: nil when it is empty
// (the caller knows whether it was set). The nodes' dependency lists
// share one allocation, each capped at its end.
func decodeNodes(r *snapcodec.Reader, depth int) []graph.NodeDef {
	n := r.Len()
	if n == 0 {
		return nil
	}
	out := make([]graph.NodeDef, n)
	var deps []string
	for i := range out {
		o := &out[i]
		o.ID, o.Kind, o.Lane, o.Binding, o.Prompt, o.Input = r.Str(), r.Str(), r.Str(), r.Str(), r.Str(), r.Bytes()
		depsSet, nd := r.Bool(), r.Len()
		switch {
		case depsSet && nd == 0:
			o.DependsOn = []string{}
		case depsSet:
			if len(deps) < nd {
				deps = make([]string, max(nd, 4096))
			}
			o.DependsOn, deps = deps[:nd:nd], deps[nd:]
			for j := range o.DependsOn {
				o.DependsOn[j] = r.Str()
			}
		}
		o.RetrySafe, o.TimeoutMS, o.Key, o.Approval = r.Bool(), r.Int(), r.Str(), r.Bool()
		if r.Bool() {
			f := &graph.ForEachDef{}
			if itemsSet, ni := r.Bool(), r.Len(); itemsSet {
				f.Items = make([]graph.ForEachItem, ni)
				for j := range f.Items {
					f.Items[j] = graph.ForEachItem{Key: r.Str(), Value: r.Bytes()}
				}
			}
			f.Source, f.MaxItems = r.Str(), int(r.Int())
			o.ForEach = f
		}
		if r.Bool() {
			if depth >= maxLoopDepth {
				r.Fail("loops nested deeper than %d", maxLoopDepth)
				return nil
			}
			l := &graph.LoopDef{MaxRounds: int(r.Int()), Review: r.Str(), Until: r.Str()}
			if membersSet, members := r.Bool(), decodeNodes(r, depth+1); membersSet {
				l.Members = orEmptyList(members)
			}
			o.Loop = l
		}
		if r.Err() != nil {
			return nil
		}
	}
	return out
}

// orEmptyList returns ns, or an empty list for nil: for a list that was
// set.
func orEmptyList(ns []graph.NodeDef) []graph.NodeDef {
	if ns == nil {
		return []graph.NodeDef{}
	}
	return ns
}
