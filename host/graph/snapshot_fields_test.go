package graph

import (
	"reflect"
	"slices"
	"testing"
)

// snapshotFields are, per type of the graph state, the fields the fold
// snapshot writes (snapshot.go) or a restore sets up from the definition
// (shape), or one builds from the definition when first needed (links):
// every field of each type.
var snapshotFields = map[reflect.Type][]string{
	reflect.TypeFor[State](): {"def", "vertices", "linkOnce", "links", "units", "byPos", "inflight", "dispatched", "keyed", "keyLimit",
		"stopped", "idx"},
	reflect.TypeFor[decisionIndex](): {"stepping", "dispatching", "paused", "open", "openActive"},
	reflect.TypeFor[VertexState]():   {"Def", "Unit", "Expansion", "Instances", "Loop", "failure", "passed", "failed", "ix"},
	reflect.TypeFor[vertexIndex](): {"idx", "pending", "blocked", "byDep", "green", "hard", "active", "open",
		"openActive", "idle"},
	reflect.TypeFor[NodeState](): {"Def", "Vertex", "Instance", "Key", "Loop", "Round", "Status", "Attempts", "Position",
		"RetrySafe", "AttemptStarted", "Result", "ResultArtifact", "Failure", "Pause", "Approved", "Decision", "VerdictFailure",
		"v", "idx"},
	reflect.TypeFor[LoopState]():  {"Started", "Rounds", "Finished"},
	reflect.TypeFor[RoundState](): {"Round", "Members", "Condition", "Review"},
	reflect.TypeFor[bitSet]():     {"words", "summary"},
	reflect.TypeFor[links]():      {"index", "from", "deps"},
}

// TestSnapshotNamesEveryField: the fold snapshot writes the graph state
// field by field, so a field added to one of its types would be dropped
// by a restore unseen (until a record that sets it meets
// snapshottest.Check). This fails until the new field is written and read
// in snapshot.go (or set up in shape) and named above.
func TestSnapshotNamesEveryField(t *testing.T) {
	for typ, want := range snapshotFields {
		var got []string
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Name)
		}
		slices.Sort(got)
		w := slices.Sorted(slices.Values(want))
		if !slices.Equal(got, w) {
			t.Errorf("%s has fields %v; the snapshot handles %v: write it in host/graph/snapshot_encode.go and read it in host/graph/snapshot.go, then name it here", typ, got, w)
		}
	}
}
