// Package graph is the DAG form of an Obversa run: the stored Definition, the
// events the executor records, and the State folded from them.
//
// The fold is pure and incremental: State.Apply takes one recorded event at
// a time and State.Next returns the dispatch decision at that prefix of the
// record (the idle nodes whose dependencies are green, in declaration order,
// within global and keyed concurrency) or, when nothing can move, the
// Outcome. Because Next is deterministic, Apply re-derives every recorded
// graph:node-dispatched and refuses one that differs (ErrInvalidEvent): the
// replay check of DESIGN §5.
//
// Rules (DESIGN §5 "DAG form"): a node is green when passed or failed while
// optional; a required node that fails is offered again at a new position
// dag/<node>/<n+1> while n ≤ retry_cap_per_node and stop_on_error is false;
// a required node failing for good under stop_on_error stops new
// dispatches (in-flight work and finalizers still run); finalizers have no
// edges and are offered once every other node has settled, on success and
// failure; they never turn a failed graph green, and a failed finalizer
// fails the graph. The result is complete{nodes} or fail DAG_NODE_FAILED
// naming the failed and blocked required nodes; paused positions with
// nothing else to do make the outcome paused.
package graph
