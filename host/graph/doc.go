// Package graph is the DAG form of an Obversa run: the stored Definition, the
// events the executor records, and the State folded from them.
//
// The fold is pure and incremental: State.Apply takes one recorded event at
// a time and State.Decide returns the decision at that prefix of the record
// (docs/run-file.md describes the rules; docs/decisions.md the record).
// Because Decide is deterministic, Apply re-derives every recorded
// graph:node-dispatched, graph:loop-started, graph:loop-round-started,
// graph:loop-finished and static graph:node-expanded and refuses one that
// differs (ErrInvalidEvent), and accepts a graph:loop-condition,
// graph:loop-reviewed or dynamic graph:node-expanded only where the graph
// asked for it: the replay check. Decide reads an index the State keeps
// as events are applied (index.go), so a decision costs what can move at
// that prefix, not the graph's size, and folding a record is linear in it.
//
// Vertices and units. A vertex is what depends_on names: a node, a
// for_each node or a loop. A unit (NodeState) is what takes positions: a
// node, one instance of a for_each node (dag/<node>[<key>]/<n>, the key
// escaped by EscapeKey), or one loop member in one round
// (dag/<loop>/<round>/<member>/<n>). Concurrency, retries and the crash
// table apply per unit.
//
// DAG rules: a vertex is green when passed or failed while optional; a
// required unit that fails is offered again at a new position while n ≤
// retry_cap_per_node and stop_on_error is false; a required vertex failing
// for good under stop_on_error stops new dispatches (in-flight work and
// finalizers still run); finalizers have no edges and start once every
// other vertex has settled, on success and failure; they never turn a
// failed graph green, and a failed finalizer fails the graph. The result is
// complete{nodes} or fail DAG_NODE_FAILED naming the failed and blocked
// required vertices; paused positions with nothing else to do make the
// outcome paused.
//
// for_each: the instances are decided once the node's dependencies have
// passed (graph:node-expanded), from the definition's items or — asked of
// the executor — from an upstream result; the node passes when every
// instance passed and fails once every instance settled and one failed.
//
// Loops: a started loop runs rounds; in each, the members run by their
// depends_on, the until condition (if any) is asked for once every member
// but the review passed — unmet, the round ends — then the review member
// runs and its verdict is asked for (Verdict). A passing review ends the
// loop passed; a failed one starts the next round, or ends the loop
// LOOP_EXHAUSTED after max_rounds; a member failing for good ends it
// failed with the member's code.
package graph
