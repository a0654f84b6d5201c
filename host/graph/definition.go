package graph

import (
	"encoding/json"
	"fmt"
	"time"
)

// Node kinds (docs/run-file.md, "What each part means at run time").
const (
	KindRequired  = "required"
	KindOptional  = "optional"
	KindFinalizer = "finalizer"
)

// Limits of the forms inside the DAG (docs/run-file.md, "Loops" and
// "for_each").
const (
	// MaxRoundsLimit is the largest max_rounds a loop may set.
	MaxRoundsLimit = 100
	// DefaultMaxItems is a for_each node's max_items when it sets none.
	DefaultMaxItems = 1000
)

// Definition is the stored graph definition: the DAG form of a run file's
// `graph "dag"` block. It is recorded in `graph:run-started` as canonical
// JSON and every later process works from the recorded copy.
type Definition struct {
	Name              string     `json:"name"`
	GlobalConcurrency int        `json:"global_concurrency"`
	KeyedConcurrency  []KeyLimit `json:"keyed_concurrency"`
	StopOnError       bool       `json:"stop_on_error"`
	// RetryCapPerNode is how many times a failed required node is offered
	// again at a new position.
	RetryCapPerNode int `json:"retry_cap_per_node"`
	// Nodes are the vertices of the DAG in declaration order: nodes,
	// for_each nodes and loops.
	Nodes []NodeDef `json:"nodes"`
}

// KeyLimit caps the in-flight nodes that share a key.
type KeyLimit struct {
	Key   string `json:"key"`
	Limit int    `json:"limit"`
}

// NodeDef is one vertex of the definition: a node (exactly one of Lane and
// Binding is set), a for_each node (a node with ForEach set: one instance
// per item), or a loop (Loop set; no lane, binding, prompt or input).
type NodeDef struct {
	ID        string          `json:"id"`
	Kind      string          `json:"kind"`
	Lane      string          `json:"lane,omitempty"`
	Binding   string          `json:"binding,omitempty"`
	Prompt    string          `json:"prompt,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	DependsOn []string        `json:"depends_on"`
	RetrySafe bool            `json:"retry_safe"`
	// TimeoutMS is the per-attempt timeout in milliseconds; 0 means none.
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
	Key       string `json:"key,omitempty"`
	// Approval makes the node's first offer wait for `obversa approve`.
	Approval bool `json:"approval,omitempty"`
	// ForEach makes the node one instance per item; nil for a plain node.
	ForEach *ForEachDef `json:"for_each,omitempty"`
	// Loop makes the vertex a loop of member nodes; nil for a node.
	Loop *LoopDef `json:"loop,omitempty"`
}

// ForEachDef is a for_each node's items: static (Items, from the run
// file) or dynamic (Source, evaluated against upstream results when the
// node is ready). Exactly one of Items and Source is set, except that a
// static for_each over an empty collection has neither.
type ForEachDef struct {
	// Items are the instances of a static for_each in order: a list's
	// strings (key and value alike) or a map's entries in key order.
	Items []ForEachItem `json:"items,omitempty"`
	// Source is the template source of a dynamic for_each (a single
	// interpolation over input.results), rendered to a JSON array of
	// strings or an object when the node's dependencies have passed.
	Source string `json:"source,omitempty"`
	// MaxItems bounds the instances: more is a failure of the node
	// (CodeForEachLimit).
	MaxItems int `json:"max_items"`
}

// ForEachItem is one instance of a for_each: its key (a string, unique in
// the node) and its value (each.value in templates).
type ForEachItem struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// LoopDef is a loop's body: member nodes run once per round until the
// review member passes (docs/run-file.md, "Loops").
type LoopDef struct {
	// MaxRounds is 1..MaxRoundsLimit; a loop whose last round's review
	// fails ends LOOP_EXHAUSTED.
	MaxRounds int `json:"max_rounds"`
	// Review is the member whose verdict ends or repeats a round. It runs
	// after every other member of its round.
	Review string `json:"review"`
	// Until is the template source of an optional condition, checked once
	// the other members of a round have passed: false skips the review
	// and repeats the round. "" for none.
	Until string `json:"until,omitempty"`
	// Members are the loop's nodes in declaration order; their
	// depends_on names members only, their kind is required.
	Members []NodeDef `json:"members"`
}

// Timeout returns the per-attempt timeout; 0 means none.
func (n *NodeDef) Timeout() time.Duration { return time.Duration(n.TimeoutMS) * time.Millisecond }

// Member returns the loop member with the given id, or nil.
func (l *LoopDef) Member(id string) *NodeDef {
	for i := range l.Members {
		if l.Members[i].ID == id {
			return &l.Members[i]
		}
	}
	return nil
}

// Validate checks the structural rules the executor relies on: unique ids
// (members included), known dependencies, no cycles, finalizers without
// edges, known keys, and the shape of loops and for_each nodes. The
// run-file decoder reports the same problems with source ranges; this
// check guards definitions read back from a record.
func (d *Definition) Validate() error {
	if d.GlobalConcurrency < 1 {
		return fmt.Errorf("%w: global_concurrency %d is below 1", ErrInvalidDefinition, d.GlobalConcurrency)
	}
	keys := map[string]bool{}
	for _, k := range d.KeyedConcurrency {
		if k.Limit < 1 {
			return fmt.Errorf("%w: keyed_concurrency %q limit %d is below 1", ErrInvalidDefinition, k.Key, k.Limit)
		}
		keys[k.Key] = true
	}
	ids := map[string]bool{}
	kinds := map[string]string{}
	for _, n := range d.Nodes {
		if ids[n.ID] {
			return fmt.Errorf("%w: node %q declared twice", ErrInvalidDefinition, n.ID)
		}
		ids[n.ID] = true
		kinds[n.ID] = n.Kind
		switch n.Kind {
		case KindRequired, KindOptional:
		case KindFinalizer:
			if len(n.DependsOn) > 0 {
				return fmt.Errorf("%w: finalizer %q has depends_on", ErrInvalidDefinition, n.ID)
			}
		default:
			return fmt.Errorf("%w: node %q has kind %q", ErrInvalidDefinition, n.ID, n.Kind)
		}
		if err := n.validateBody(keys, ids); err != nil {
			return err
		}
	}
	deps := map[string][]string{}
	var order []string
	for _, n := range d.Nodes {
		for _, dep := range n.DependsOn {
			k, ok := kinds[dep]
			if !ok {
				return fmt.Errorf("%w: node %q depends on unknown node %q", ErrInvalidDefinition, n.ID, dep)
			}
			if k == KindFinalizer {
				return fmt.Errorf("%w: node %q depends on finalizer %q", ErrInvalidDefinition, n.ID, dep)
			}
		}
		deps[n.ID], order = n.DependsOn, append(order, n.ID)
	}
	if !acyclic(order, deps) {
		return fmt.Errorf("%w: depends_on has a cycle", ErrInvalidDefinition)
	}
	return nil
}

// validateBody checks what a vertex holds: a node's lane or binding and
// key, a for_each's items, a loop's members. ids collects every id seen,
// members included, to keep them unique across the graph.
func (n *NodeDef) validateBody(keys, ids map[string]bool) error {
	if n.Loop != nil {
		if n.Lane != "" || n.Binding != "" || n.Prompt != "" || len(n.Input) > 0 || n.ForEach != nil || n.Key != "" || n.Approval {
			return fmt.Errorf("%w: loop %q has node attributes", ErrInvalidDefinition, n.ID)
		}
		return n.Loop.validate(n.ID, keys, ids)
	}
	if (n.Lane == "") == (n.Binding == "") {
		return fmt.Errorf("%w: node %q needs exactly one of lane and binding", ErrInvalidDefinition, n.ID)
	}
	if n.Key != "" && !keys[n.Key] {
		return fmt.Errorf("%w: node %q key %q has no keyed_concurrency limit", ErrInvalidDefinition, n.ID, n.Key)
	}
	if n.ForEach != nil {
		return n.ForEach.validate(n.ID)
	}
	return nil
}

func (f *ForEachDef) validate(id string) error {
	if f.MaxItems < 1 {
		return fmt.Errorf("%w: for_each node %q max_items %d is below 1", ErrInvalidDefinition, id, f.MaxItems)
	}
	if f.Source != "" && len(f.Items) > 0 {
		return fmt.Errorf("%w: for_each node %q has both items and a source", ErrInvalidDefinition, id)
	}
	if len(f.Items) > f.MaxItems {
		return fmt.Errorf("%w: for_each node %q has %d items, more than max_items %d", ErrInvalidDefinition, id, len(f.Items), f.MaxItems)
	}
	keys := make([]string, len(f.Items))
	for i, it := range f.Items {
		keys[i] = it.Key
	}
	if dup := duplicateKey(keys); dup != nil {
		return fmt.Errorf("%w: for_each node %q has the key %q twice", ErrInvalidDefinition, id, *dup)
	}
	return nil
}

// duplicateKey returns the first key that appears twice, or nil.
func duplicateKey(keys []string) *string {
	seen := make(map[string]bool, len(keys))
	for i, k := range keys {
		if seen[k] {
			return &keys[i]
		}
		seen[k] = true
	}
	return nil
}

func (l *LoopDef) validate(id string, keys, ids map[string]bool) error {
	if l.MaxRounds < 1 || l.MaxRounds > MaxRoundsLimit {
		return fmt.Errorf("%w: loop %q max_rounds %d is not within 1..%d", ErrInvalidDefinition, id, l.MaxRounds, MaxRoundsLimit)
	}
	if len(l.Members) == 0 {
		return fmt.Errorf("%w: loop %q has no members", ErrInvalidDefinition, id)
	}
	if l.Member(l.Review) == nil {
		return fmt.Errorf("%w: loop %q review %q is not a member", ErrInvalidDefinition, id, l.Review)
	}
	members := map[string]bool{}
	deps := map[string][]string{}
	var order []string
	for i := range l.Members {
		m := &l.Members[i]
		if ids[m.ID] {
			return fmt.Errorf("%w: loop %q member %q declared twice in the graph", ErrInvalidDefinition, id, m.ID)
		}
		ids[m.ID], members[m.ID] = true, true
		if m.Kind != KindRequired || m.Loop != nil || m.ForEach != nil {
			return fmt.Errorf("%w: loop %q member %q must be a required node", ErrInvalidDefinition, id, m.ID)
		}
		if err := m.validateBody(keys, ids); err != nil {
			return err
		}
		deps[m.ID], order = m.DependsOn, append(order, m.ID)
	}
	for _, m := range l.Members {
		for _, dep := range m.DependsOn {
			if !members[dep] {
				return fmt.Errorf("%w: loop %q member %q depends on %q, which is not a member", ErrInvalidDefinition, id, m.ID, dep)
			}
		}
	}
	if !acyclic(order, deps) {
		return fmt.Errorf("%w: loop %q members' depends_on has a cycle", ErrInvalidDefinition, id)
	}
	return nil
}

// acyclic reports whether the dependency edges deps among ids have no
// cycle (Kahn's algorithm); every dependency must be one of ids.
func acyclic(ids []string, deps map[string][]string) bool {
	indeg := make(map[string]int, len(ids))
	users := make(map[string][]string, len(ids))
	for _, id := range ids {
		for _, dep := range deps[id] {
			indeg[id]++
			users[dep] = append(users[dep], id)
		}
	}
	var queue []string
	for _, id := range ids {
		if indeg[id] == 0 {
			queue = append(queue, id)
		}
	}
	seen := 0
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		seen++
		for _, u := range users[id] {
			indeg[u]--
			if indeg[u] == 0 {
				queue = append(queue, u)
			}
		}
	}
	return seen == len(ids)
}
