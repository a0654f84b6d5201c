// Package runstate is the one fold of a run's record (docs/decisions.md,
// "One replay"). State.Apply takes the record's events in order, once
// each, and keeps what every reader needs: the graph state (host/graph is
// its engine), the preflight fold, the processes that carried the run
// (workers, crashes, cleanups, takeovers, workspace snapshots), each
// position's times and engine calls, each node's usage (unknown stays
// unknown, never zero), approval decisions by request, and the result.
//
// The executor keeps one State for its whole life and folds the events it
// decides before it records them (State.Fold); the watchdog keeps one
// while it supervises; `obversa status`, `resume`, `approve`, `stop` and
// `preflight` fold a fresh one from the record. Nothing else replays the
// record, so there is one reading of every event. A long record folds in
// one streaming pass: State keeps summaries, never events.
//
// A fold can be saved as a fold snapshot beside the record
// (SaveSnapshot, docs/architecture.md "Fold snapshot"): readers that only
// show the run (`status`, `runs`, the run browser) restore it and fold
// only the events after it (LoadWithSnapshot), with the same State as a
// fold of the whole record; `verify` checks it (CheckSnapshot). It is a
// cache: one that does not fit is ignored. Writers fold the whole record.
//
// The package also holds the shapes of what it folds that are not the
// graph's own: the result (Kind, Result, Output), the run: events of the
// watchdog and worker, and the preflight events.
package runstate
