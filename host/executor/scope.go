package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// value is a result a template reads: recorded inline (raw), kept as an
// artifact (art), or an object of such values (fields: a loop's members,
// a for_each node's instances by key).
type value struct {
	raw    json.RawMessage
	art    *graph.ArtifactRef
	fields map[string]value
}

// unitValue is a passed unit's result; ok is false for any other.
func unitValue(n *graph.NodeState) (value, bool) {
	switch {
	case n == nil || n.Status != graph.StatusPassed:
		return value{}, false
	case n.ResultArtifact != nil:
		return value{art: n.ResultArtifact}, true
	}
	return value{raw: n.Result}, true
}

// vertexValue is what input.results.<vertex> holds: a node's result; a
// for_each node's passed instances by key; a loop's last round's passed
// members by id. ok is false when there is nothing to read.
func vertexValue(v *graph.VertexState) (value, bool) {
	switch {
	case v.Unit != nil:
		return unitValue(v.Unit)
	case v.Loop != nil:
		r := v.Loop.Current()
		if r == nil {
			return value{}, false
		}
		out := value{fields: map[string]value{}}
		for _, m := range r.Members {
			if mv, ok := unitValue(m); ok {
				out.fields[m.Def.ID] = mv
			}
		}
		return out, v.Status() == graph.StatusPassed || len(out.fields) > 0
	case v.Expansion == nil || v.Expansion.Code != "":
		return value{}, false
	}
	out := value{fields: map[string]value{}}
	for _, n := range v.Instances {
		if iv, ok := unitValue(n); ok {
			out.fields[n.Key] = iv
		}
	}
	return out, v.Status() == graph.StatusPassed || len(out.fields) > 0
}

// load turns a value into JSON, reading artifacts.
func (x *Executor) load(ctx context.Context, name string, v value) (json.RawMessage, error) {
	switch {
	case v.art != nil:
		data, err := x.o.Run.ReadArtifact(ctx, store.ArtifactRef(*v.art))
		if err != nil && ctx.Err() == nil && isFault(err) {
			// The record cannot give the result back: the run pauses
			// naming the digest (fault.go), the node does not fail.
			return nil, artifactFault([]runstate.ArtifactProblem{{Digest: v.art.Digest, Node: name, Problem: err.Error()}}, err)
		}
		if err != nil {
			return nil, fmt.Errorf("result of %q: %w", name, err)
		}
		return data, nil
	case v.fields != nil:
		obj := make(map[string]json.RawMessage, len(v.fields))
		for k, f := range v.fields {
			raw, err := x.load(ctx, name+"."+k, f)
			if err != nil {
				return nil, err
			}
			obj[k] = raw
		}
		return mustJSON(obj), nil
	case v.raw == nil:
		return json.RawMessage("null"), nil
	}
	return v.raw, nil
}

// scope is what a unit's templates see, before its artifacts are read:
// results by name, and a loop member's or an instance's variables.
type scope struct {
	results map[string]value
	loop    *loopScope
	each    *hcl.EachVars
}

type loopScope struct {
	round    int
	findings string
	previous map[string]value // by member; absent: null
	members  []string
}

// resolve reads what s refers to into an hcl.Scope.
func (x *Executor) resolve(ctx context.Context, s scope) (hcl.Scope, error) {
	out := hcl.Scope{Results: make(map[string]json.RawMessage, len(s.results)), Each: s.each}
	for name, v := range s.results {
		raw, err := x.load(ctx, name, v)
		if err != nil {
			return hcl.Scope{}, err
		}
		out.Results[name] = raw
	}
	if l := s.loop; l != nil {
		out.Loop = &hcl.LoopVars{Round: l.round, Findings: l.findings, Previous: map[string]json.RawMessage{}}
		for _, m := range l.members {
			out.Loop.Previous[m] = nil
			if v, ok := l.previous[m]; ok {
				raw, err := x.load(ctx, "loop.previous."+m, v)
				if err != nil {
					return hcl.Scope{}, err
				}
				out.Loop.Previous[m] = raw
			}
		}
	}
	return out, nil
}

// scopeOf returns what unit n's templates may read (docs/run-file.md,
// "Templates"): the results of its vertex's transitive dependencies (of
// every other vertex for a finalizer), and for a loop member this round's
// results of the members it depends on and the loop's variables, for a
// for_each instance its item.
func (x *Executor) scopeOf(n *graph.NodeState) (scope, error) {
	g := x.rs.Graph()
	v := g.Vertex(n.Vertex)
	s := scope{results: x.upstream(v.Def)}
	switch {
	case n.Loop != "":
		r := n.Round
		for _, id := range memberDeps(v.Def.Loop, n.Def.DependsOn) {
			if mv, ok := unitValue(v.Loop.Member(r, id)); ok {
				s.results[id] = mv
			}
		}
		s.loop = x.loopScope(v, r)
	case n.Instance:
		item, err := x.item(v, n.Key)
		if err != nil {
			return scope{}, err
		}
		s.each = &hcl.EachVars{Key: n.Key, Value: item}
	}
	return s, nil
}

// loopScope returns the loop variables of round r.
func (x *Executor) loopScope(v *graph.VertexState, r int) *loopScope {
	l := &loopScope{round: r, findings: v.Loop.Findings(r), previous: map[string]value{}}
	for _, m := range v.Def.Loop.Members {
		l.members = append(l.members, m.ID)
		if mv, ok := unitValue(v.Loop.Member(r-1, m.ID)); ok {
			l.previous[m.ID] = mv
		}
	}
	return l
}

// upstream returns the results a vertex may read from outside itself
// (upstreamIDs) that there are to read.
func (x *Executor) upstream(d *graph.NodeDef) map[string]value {
	g := x.rs.Graph()
	out := map[string]value{}
	for _, id := range x.upstreamIDs(d) {
		if v, ok := vertexValue(g.Vertex(id)); ok {
			out[id] = v
		}
	}
	return out
}

// upstreamIDs returns the vertices whose results vertex d may read from
// outside itself, each once: its transitive dependencies, or every vertex
// that is not a finalizer for a finalizer. Units inside loops and for_each
// read their vertex's.
func (x *Executor) upstreamIDs(d *graph.NodeDef) []string {
	var out []string
	if d.Kind == graph.KindFinalizer {
		for _, o := range x.def.Nodes {
			if o.Kind != graph.KindFinalizer {
				out = append(out, o.ID)
			}
		}
		return out
	}
	g := x.rs.Graph()
	seen := map[string]bool{}
	var walk func(ids []string)
	walk = func(ids []string) {
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
				walk(g.Vertex(id).Def.DependsOn)
			}
		}
	}
	walk(d.DependsOn)
	return out
}

// memberDeps returns the transitive dependencies of a member among its
// loop's members.
func memberDeps(l *graph.LoopDef, deps []string) []string {
	var out []string
	var walk func(ids []string)
	walk = func(ids []string) {
		for _, id := range ids {
			if !slices.Contains(out, id) {
				out = append(out, id)
				walk(l.Member(id).DependsOn)
			}
		}
	}
	walk(deps)
	return out
}

// item returns each.value of a for_each instance: a static item's value,
// or a dynamic one's from the source rendered again against the same
// recorded results (kept for the worker's life).
func (x *Executor) item(v *graph.VertexState, key string) (json.RawMessage, error) {
	fe := v.Def.ForEach
	if fe.Source == "" {
		for _, it := range fe.Items {
			if it.Key == key {
				return it.Value, nil
			}
		}
		return nil, fmt.Errorf("for_each node %q has no item %q", v.Def.ID, key)
	}
	items, ok := x.items[v.Def.ID]
	if !ok {
		list, err := x.renderItems(v)
		if err != nil {
			return nil, err
		}
		items = map[string]json.RawMessage{}
		for _, it := range list {
			items[it.Key] = it.Value
		}
		x.items[v.Def.ID] = items
	}
	val, ok := items[key]
	if !ok {
		return nil, fmt.Errorf("for_each node %q: its source no longer renders item %q", v.Def.ID, key)
	}
	return val, nil
}

// renderItems renders a dynamic for_each's source against its
// dependencies' results.
func (x *Executor) renderItems(v *graph.VertexState) ([]hcl.ForEachItem, error) {
	sc, err := x.resolve(x.ctx, scope{results: x.upstream(v.Def)})
	if err != nil {
		return nil, err
	}
	return sc.Items(v.Def.ForEach.Source)
}
