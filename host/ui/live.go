package ui

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// A live run page holds one RunView and keeps it current from two
// server-sent events (docs/ui.md, "Live updates"; docs/decisions.md,
// "Live pages get the folded changes"):
//
//   - "run", a Snapshot: the whole view, at version V of a follower's
//     epoch;
//   - "change", a Change: what differs between version Base and version
//     V of the same epoch, which the page applies to the view it holds.
//
// Both are made by the server from the one fold of the record
// (host/runstate through host/runview): the page folds nothing. A page
// that gets a change it cannot apply (another epoch, another base)
// reconnects and starts from a snapshot.

// Snapshot is the "run" server-sent event: the whole RunView, and the
// version a following Change applies to.
type Snapshot struct {
	// Epoch names the follower that made the view: a page holds views of
	// one epoch only. A new follower (the server restarted, or the last
	// page had left) has a new epoch, and so does the fold of another
	// obversa (runstate.FoldVersion is part of it).
	Epoch string `json:"epoch"`
	// V is the view's version in its epoch, counted from 1.
	V int64 `json:"v"`
	RunView
}

// Change is the "change" server-sent event: what differs between the
// view at version Base and the view at version V = Base+1 of Epoch.
type Change struct {
	Epoch string `json:"epoch"`
	Base  int64  `json:"base"`
	V     int64  `json:"v"`
	// Set holds each top-level field of the RunView that changed (by its
	// JSON name: run, result, waiting, live, can_resume, read_only,
	// commands), whole.
	Set map[string]json.RawMessage `json:"set,omitempty"`
	// Nodes patches RunView.Nodes, element by element.
	Nodes *ListPatch `json:"nodes,omitempty"`
	// Graph patches RunView.Graph as its lines (split at "\n").
	Graph *ListPatch `json:"graph,omitempty"`
}

// ListPatch changes a list into another: the new list has Len elements,
// each the old list's element at the same index except those in Set (by
// decimal index), which hold the new one. Every index at or past the old
// length is in Set.
type ListPatch struct {
	Len int                        `json:"len"`
	Set map[string]json.RawMessage `json:"set,omitempty"`
}

// liveView is what a follower last sent of a run's view, in parts, to
// tell what changed (the caller holds the follower's lock).
type liveView struct {
	epoch string
	v     int64
	red   *store.Redactor
	// cur is the view at version v; fields are its top-level fields'
	// JSON, nodes its nodes' and lines its graph's lines, unredacted.
	cur    RunView
	fields map[string][]byte
	nodes  [][]byte
	lines  []string
	// snap caches the Snapshot at version v (nil until asked for).
	snap []byte
}

// newEpoch names a new follower: the fold's version and 64 random bits.
func newEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return runstate.FoldVersion + "-" + hex.EncodeToString(b[:])
}

// newLiveView starts version 1 of a new epoch at view v.
func newLiveView(v RunView, red *store.Redactor) *liveView {
	v = withNodeList(v)
	l := &liveView{epoch: newEpoch(), red: red}
	l.cur, l.fields, l.nodes, l.lines = v, viewFields(v), nodesJSON(v.Nodes), graphLines(v.Graph)
	l.v = 1
	return l
}

// withNodeList is v with its nodes a list even when there are none: a page
// patches a list, never null.
func withNodeList(v RunView) RunView {
	if v.Nodes == nil {
		v.Nodes = []NodeView{}
	}
	return v
}

// viewFields is the JSON of each top-level field of v a Change sets.
func viewFields(v RunView) map[string][]byte {
	m := make(map[string][]byte, 8)
	for name, x := range map[string]any{"run": v.Run, "result": v.Result, "waiting": v.Waiting, "live": v.Live,
		"can_resume": v.CanResume, "read_only": v.ReadOnly, "commands": v.Commands, "graph_nodes": v.GraphNodes} {
		m[name] = marshal(x)
	}
	return m
}

func nodesJSON(ns []NodeView) [][]byte {
	out := make([][]byte, len(ns))
	for i, n := range ns {
		out[i] = marshal(n)
	}
	return out
}

// graphLines splits a Mermaid source into the lines a Change patches;
// strings.Join(lines, "\n") gives it back.
func graphLines(g string) []string { return strings.Split(g, "\n") }

func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return b
}

// snapshot is the "run" message's data at the current version, redacted.
func (l *liveView) snapshot() []byte {
	if l.snap == nil {
		l.snap = l.red.Redact(marshal(Snapshot{Epoch: l.epoch, V: l.v, RunView: l.cur}))
	}
	return l.snap
}

// update makes v the current view and returns the "change" message's
// data that turns the previous one into it, redacted; nil when nothing
// changed (the version stays).
func (l *liveView) update(v RunView) []byte {
	v = withNodeList(v)
	c := Change{Epoch: l.epoch, Base: l.v, V: l.v + 1}
	fields := viewFields(v)
	for name, b := range fields {
		if !bytes.Equal(b, l.fields[name]) {
			if c.Set == nil {
				c.Set = map[string]json.RawMessage{}
			}
			c.Set[name] = b
		}
	}
	nodes := nodesJSON(v.Nodes)
	c.Nodes = patch(l.nodes, nodes, bytes.Equal, func(b []byte) []byte { return b })
	lines := graphLines(v.Graph)
	c.Graph = patch(l.lines, lines, func(a, b string) bool { return a == b }, func(s string) []byte { return marshal(s) })
	if c.Set == nil && c.Nodes == nil && c.Graph == nil {
		l.cur = v // the same JSON: nothing a page shows changed
		return nil
	}
	l.cur, l.fields, l.nodes, l.lines, l.v, l.snap = v, fields, nodes, lines, l.v+1, nil
	return l.red.Redact(marshal(c))
}

// patch is the ListPatch from old to new; nil when they are equal.
func patch[T any](old, new []T, eq func(a, b T) bool, enc func(T) []byte) *ListPatch {
	var p *ListPatch
	for i, x := range new {
		if i < len(old) && eq(old[i], x) {
			continue
		}
		if p == nil {
			p = &ListPatch{Set: map[string]json.RawMessage{}}
		}
		p.Set[strconv.Itoa(i)] = enc(x)
	}
	if p == nil && len(old) == len(new) {
		return nil
	}
	if p == nil {
		p = &ListPatch{}
	}
	p.Len = len(new)
	return p
}
