package graph

import (
	"encoding/json"
	"fmt"
	"time"
)

// Node kinds (DESIGN §5 "DAG form").
const (
	KindRequired  = "required"
	KindOptional  = "optional"
	KindFinalizer = "finalizer"
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
	RetryCapPerNode int       `json:"retry_cap_per_node"`
	Nodes           []NodeDef `json:"nodes"`
}

// KeyLimit caps the in-flight nodes that share a key.
type KeyLimit struct {
	Key   string `json:"key"`
	Limit int    `json:"limit"`
}

// NodeDef is one node of the definition. Exactly one of Lane and Binding is
// set.
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
}

// Timeout returns the per-attempt timeout; 0 means none.
func (n *NodeDef) Timeout() time.Duration { return time.Duration(n.TimeoutMS) * time.Millisecond }

// Validate checks the structural rules the executor relies on: unique ids,
// known dependencies, no cycles, finalizers without edges, known keys. The
// run-file decoder reports the same problems with source ranges; this check
// guards definitions read back from a record.
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
	idx := map[string]int{}
	for i, n := range d.Nodes {
		if _, dup := idx[n.ID]; dup {
			return fmt.Errorf("%w: node %q declared twice", ErrInvalidDefinition, n.ID)
		}
		idx[n.ID] = i
		switch n.Kind {
		case KindRequired, KindOptional:
		case KindFinalizer:
			if len(n.DependsOn) > 0 {
				return fmt.Errorf("%w: finalizer %q has depends_on", ErrInvalidDefinition, n.ID)
			}
		default:
			return fmt.Errorf("%w: node %q has kind %q", ErrInvalidDefinition, n.ID, n.Kind)
		}
		if (n.Lane == "") == (n.Binding == "") {
			return fmt.Errorf("%w: node %q needs exactly one of lane and binding", ErrInvalidDefinition, n.ID)
		}
		if n.Key != "" && !keys[n.Key] {
			return fmt.Errorf("%w: node %q key %q has no keyed_concurrency limit", ErrInvalidDefinition, n.ID, n.Key)
		}
	}
	for _, n := range d.Nodes {
		for _, dep := range n.DependsOn {
			j, ok := idx[dep]
			if !ok {
				return fmt.Errorf("%w: node %q depends on unknown node %q", ErrInvalidDefinition, n.ID, dep)
			}
			if d.Nodes[j].Kind == KindFinalizer {
				return fmt.Errorf("%w: node %q depends on finalizer %q", ErrInvalidDefinition, n.ID, dep)
			}
		}
	}
	// Cycle check: Kahn's algorithm over the dependency edges.
	indeg := make([]int, len(d.Nodes))
	users := make([][]int, len(d.Nodes))
	for i, n := range d.Nodes {
		for _, dep := range n.DependsOn {
			indeg[i]++
			users[idx[dep]] = append(users[idx[dep]], i)
		}
	}
	queue := []int{}
	for i, v := range indeg {
		if v == 0 {
			queue = append(queue, i)
		}
	}
	seen := 0
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		seen++
		for _, u := range users[i] {
			indeg[u]--
			if indeg[u] == 0 {
				queue = append(queue, u)
			}
		}
	}
	if seen != len(d.Nodes) {
		return fmt.Errorf("%w: depends_on has a cycle", ErrInvalidDefinition)
	}
	return nil
}

// Position names the n-th occurrence (1-based) of a node: "dag/<node>/<n>".
func Position(node string, n int) string {
	return fmt.Sprintf("dag/%s/%d", node, n)
}
